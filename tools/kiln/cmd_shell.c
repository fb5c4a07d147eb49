/* SPDX-License-Identifier: MIT */
/* kiln shell: a terminal in a sandbox over the pty WebSocket. On a tty the
 * terminal goes to raw mode (restored on every way out) and window size
 * changes are sent as resize messages. Without an ID a fresh sandbox is
 * created for the session and deleted after it. The same session serves
 * kiln attach (cmd_attach.c) on the attach WebSocket. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "http/buf.h"
#include "http/ws.h"
#include "kiln.h"
#include "util.h"

struct shell {
	int fd;
	struct ws ws;
	int exit_code; /* -1 until the exit message */
	bool closed;
	char *detached; /* kilnd's message: the sandbox paused, the command goes on */
	bool oom;       /* the exit message says: killed for memory */
};

static struct termios saved_tio;
static bool raw_on;
static int sig_pipe[2] = {-1, -1};

static void restore_tty(void)
{
	if (raw_on) {
		tcsetattr(0, TCSAFLUSH, &saved_tio);
		raw_on = false;
	}
}

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;

	if (write(sig_pipe[1], &b, 1) < 0)
		errno = saved;
	errno = saved;
}

static int ws_out(void *ctx, const void *p, size_t n)
{
	struct shell *s = ctx;

	return kc_send_all(s->fd, p, n);
}

static int ws_msg(void *ctx, int opcode, uint8_t *p, size_t n, bool fin)
{
	struct shell *s = ctx;
	json_t *j;
	const char *type;
	int rc = 0;

	if (opcode == WS_BINARY)
		return n ? write_all(1, p, n) : 0;
	j = json_loadb((const char *)p, n, 0, NULL);
	type = json_string_value(json_object_get(j, "type"));
	if (type && !strcmp(type, "exit")) {
		int sig = (int)json_integer_value(json_object_get(j, "signal"));

		s->exit_code = sig ? 128 + sig
		                   : (int)json_integer_value(json_object_get(j, "exitCode")) & 0xff;
		s->oom = json_is_true(json_object_get(j, "oom"));
	} else if (type && !strcmp(type, "stderr")) {
		/* an exec process's stderr, when attached (kiln attach) */
		const char *b64 = json_string_value(json_object_get(j, "data"));
		struct buf data = {0};

		if (b64 && !b64_decode(&data, b64, strlen(b64)))
			rc = write_all(2, buf_head(&data), buf_avail(&data));
		buf_free(&data);
	} else if (type && !strcmp(type, "detached")) {
		const char *msg = json_string_value(json_object_get(j, "message"));

		free(s->detached);
		s->detached = strdup(msg ? msg : "the sandbox was paused: the command goes on");
	}
	json_decref(j);
	return rc;
}

static void ws_closed(void *ctx, uint16_t code)
{
	struct shell *s = ctx;

	s->closed = true;
}

static const struct ws_ops shell_ws_ops = {
    .on_message = ws_msg,
    .on_close = ws_closed,
    .write = ws_out,
};

static void send_resize(struct shell *s)
{
	struct winsize wz;
	char msg[96];

	if (ioctl(0, TIOCGWINSZ, &wz) || !wz.ws_col || !wz.ws_row)
		return;
	snprintf(msg, sizeof(msg), "{\"resize\":{\"cols\":%u,\"rows\":%u}}", wz.ws_col, wz.ws_row);
	ws_send(&s->ws, WS_TEXT, msg, strlen(msg));
}

/* The pty WebSocket's path, sized to our terminal. */
static void pty_path(char *path, size_t n, const char *id)
{
	struct winsize wz = {.ws_col = 80, .ws_row = 24};

	if (isatty(0))
		ioctl(0, TIOCGWINSZ, &wz);
	snprintf(path, n, "/sandboxes/%.64s/pty?cols=%u&rows=%u", id, wz.ws_col ? wz.ws_col : 80,
	         wz.ws_row ? wz.ws_row : 24);
}

#define DETACH_KEY 0x1d /* Ctrl-], as telnet's escape: kiln attach leaves */

/* How the session ended, as kiln's exit status. */
static int session_status(struct shell *s, const struct term_opts *o, bool left)
{
	int rc = s->exit_code;

	if (s->detached) {
		fprintf(stderr, "kiln: %s\n", s->detached);
		rc = KILN_EXIT_FAIL;
	} else if (rc >= 0 && s->oom) {
		fprintf(stderr, "kiln: the command was killed: the sandbox ran out of memory "
		                "(give it more with kiln create --mem MB)\n");
	} else if (rc < 0 && left && o->attach) {
		fprintf(stderr, "kiln: left process %s; it goes on (kiln attach %s %s)\n", o->pid,
		        o->id, o->pid);
		rc = KILN_EXIT_FAIL;
	} else if (rc < 0) {
		fprintf(stderr, "kiln: the terminal session ended without an exit status\n");
		rc = KILN_EXIT_FAIL;
	}
	free(s->detached);
	return rc;
}

int term_session(struct kc *k, const struct term_opts *o)
{
	struct shell s = {.exit_code = -1};
	struct sigaction sa = {.sa_handler = on_signal};
	bool tty = o->raw && isatty(0), in_open = o->input, left = false;
	uint8_t buf[65536];

	if (kc_connect(k) < 0)
		return KILN_EXIT_FAIL;
	s.fd = k->fd;
	k->fd = -1; /* this connection becomes the WebSocket */
	ws_init(&s.ws, true, &shell_ws_ops, &s);
	s.ws.max_frame = 16u << 20;
	if (kc_ws_handshake(k, s.fd, &s.ws, o->path, o->what)) {
		close(s.fd);
		return KILN_EXIT_FAIL;
	}
	if (tty && o->attach)
		send_resize(&s); /* the terminal may differ from the one it began on */
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
		sigemptyset(&sa.sa_mask);
		sigaction(SIGWINCH, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		/* raw mode makes ^C a byte for the remote shell; without a tty
		 * it ends the session (and deletes a sandbox made for it) */
		sigaction(SIGINT, &sa, NULL);
	}
	if (tty && !tcgetattr(0, &saved_tio)) {
		struct termios raw = saved_tio;

		atexit(restore_tty);
		cfmakeraw(&raw);
		raw_on = !tcsetattr(0, TCSAFLUSH, &raw);
	}
	while (!s.closed) {
		struct pollfd pf[3] = {
		    {.fd = s.fd, .events = POLLIN},
		    {.fd = in_open ? 0 : -1, .events = POLLIN},
		    {.fd = sig_pipe[0], .events = POLLIN},
		};

		if (poll(pf, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[2].revents) {
			unsigned char sig;

			while (read(sig_pipe[0], &sig, 1) == 1) {
				if (sig == SIGWINCH)
					send_resize(&s);
				else {
					left = true;
					goto out; /* leave, restoring the tty */
				}
			}
		}
		if (pf[1].revents) {
			ssize_t n = read(0, buf, sizeof(buf));

			if (n > 0 && tty && o->attach && memchr(buf, DETACH_KEY, (size_t)n)) {
				left = true;
				goto out;
			} else if (n > 0) {
				ws_send(&s.ws, WS_BINARY, buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				/* End of input: tell the terminal, wait for the exit. */
				in_open = false;
				ws_send(&s.ws, WS_TEXT, "{\"eof\":true}", 12);
			}
		}
		if (pf[0].revents) {
			ssize_t n = recv(s.fd, buf, sizeof(buf), 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || ws_feed(&s.ws, buf, (size_t)n))
				break;
		}
	}
out:
	restore_tty();
	close(s.fd);
	ws_free(&s.ws);
	return session_status(&s, o, left);
}

int cmd_shell(struct kc *k, int argc, char **argv)
{
	struct create_opts co;
	const char *id = NULL;
	char *made = NULL;
	int rc;

	create_opts_init(&co);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf(
			    "usage: kiln shell [options] [ID]\n\n"
			    "Open a terminal (/bin/sh) in sandbox ID; without ID in a new sandbox\n"
			    "that is deleted afterwards. Exits with the shell's status.\n\n"
			    "Options for a new sandbox:\n%s",
			    create_opts_help());
			return 0;
		}
		rc = create_opt(&co, argc, argv, &i);
		if (rc < 0)
			return 2;
		if (rc)
			continue;
		if (id) {
			fprintf(stderr, "kiln shell: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
		id = argv[i];
	}
	if (!id) {
		made = sandbox_create(k, &co, true);
		if (!made)
			return KILN_EXIT_FAIL;
		id = made;
	}
	{
		char path[160];
		struct term_opts o = {.path = path,
		                      .what = "kilnd refused the terminal",
		                      .id = id,
		                      .raw = true,
		                      .input = true};

		pty_path(path, sizeof(path), id);
		rc = term_session(k, &o);
	}
	if (made) {
		sandbox_delete(k, made, false);
		free(made);
	}
	return rc;
}
