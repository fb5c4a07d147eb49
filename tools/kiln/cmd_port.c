/* SPDX-License-Identifier: MIT */
/* kiln port-forward ID PORT [LOCAL]: like kubectl port-forward. Listens on
 * 127.0.0.1:LOCAL; each connection there becomes a TCP connection to PORT
 * inside the sandbox, carried by kilnd's WebSocket GET
 * /sandboxes/ID/tcp/PORT (binary messages, "eof" for a half-close). One
 * child process per connection, so a slow one never holds up the others.
 * Kiln-Peer names each local client to kilnd: the guest's server sees its
 * address and port as its peer (control/net/ports.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http/ws.h"
#include "kiln.h"

#define MAX_FORWARDS 64 /* connections at once; more wait in the backlog */

struct fwd {
	int local, remote;
	struct ws ws;
	bool closed, remote_eof;
};

static int fwd_out(void *ctx, const void *p, size_t n)
{
	struct fwd *f = ctx;

	return kc_send_all(f->remote, p, n);
}

static int fwd_msg(void *ctx, int opcode, uint8_t *p, size_t n, bool fin)
{
	struct fwd *f = ctx;

	if (opcode == WS_BINARY)
		return n ? write_all(f->local, p, n) : 0;
	if (n == 3 && !memcmp(p, "eof", 3)) {
		f->remote_eof = true;
		shutdown(f->local, SHUT_WR);
	}
	return 0;
}

static void fwd_closed(void *ctx, uint16_t code)
{
	struct fwd *f = ctx;

	f->closed = true;
}

static const struct ws_ops fwd_ops = {
    .on_message = fwd_msg,
    .on_close = fwd_closed,
    .write = fwd_out,
};

/* One forwarded connection, in its own process. */
/* "Kiln-Peer: ADDR:PORT\r\n" for the local client from, or "". */
static void peer_header(const struct sockaddr_in *from, char *out, size_t n)
{
	char a[INET_ADDRSTRLEN];

	*out = 0;
	if (from->sin_family == AF_INET && from->sin_port &&
	    inet_ntop(AF_INET, &from->sin_addr, a, sizeof(a)))
		snprintf(out, n, "Kiln-Peer: %s:%u\r\n", a, ntohs(from->sin_port));
}

static int forward(struct kc *k, int local, const struct sockaddr_in *from, const char *id,
                   unsigned port)
{
	struct fwd f = {.local = local};
	bool local_open = true;
	uint8_t buf[65536];
	char path[128], peer[64];

	if (kc_connect(k) < 0)
		return 1;
	f.remote = k->fd;
	k->fd = -1;
	ws_init(&f.ws, true, &fwd_ops, &f);
	f.ws.max_frame = 16u << 20;
	snprintf(path, sizeof(path), "/sandboxes/%.64s/tcp/%u", id, port);
	peer_header(from, peer, sizeof(peer));
	k->ws_headers = peer;
	if (kc_ws_handshake(k, f.remote, &f.ws, path, "kilnd refused the connection"))
		return 1;
	while (!f.closed) {
		struct pollfd pf[2] = {
		    {.fd = f.remote, .events = POLLIN},
		    {.fd = local_open ? local : -1, .events = POLLIN},
		};

		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents) {
			ssize_t n = read(local, buf, sizeof(buf));

			if (n > 0) {
				if (ws_send(&f.ws, WS_BINARY, buf, (size_t)n))
					break;
			} else if (n == 0 || errno != EINTR) {
				local_open = false; /* the local client's half-close */
				if (ws_send(&f.ws, WS_TEXT, "eof", 3))
					break;
			}
		}
		if (pf[0].revents) {
			ssize_t n = recv(f.remote, buf, sizeof(buf), 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || ws_feed(&f.ws, buf, (size_t)n))
				break;
		}
	}
	ws_free(&f.ws);
	close(f.remote);
	return f.closed ? 0 : 1;
}

static int listen_local(unsigned port, unsigned *bound)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	socklen_t len = sizeof(sa);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len)) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	*bound = ntohs(sa.sin_port);
	return fd;
}

static long parse_port(const char *s, long min)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v >= min && v <= 65535 ? v : -1;
}

int cmd_port_forward(struct kc *k, int argc, char **argv)
{
	unsigned bound, running = 0;
	long port, local;
	char path[128];
	json_t *sb = NULL;
	int lfd;

	if (want_help(argc, argv) || argc < 3 || argc > 4) {
		printf("usage: kiln port-forward ID PORT [LOCAL]\n\n"
		       "Forward 127.0.0.1:LOCAL (default: PORT; 0 picks a free one) to TCP port\n"
		       "PORT inside sandbox ID, like kubectl port-forward, until interrupted.\n"
		       "Prints the local address once it listens.\n");
		return want_help(argc, argv) ? 0 : 2;
	}
	port = parse_port(argv[2], 1);
	local = argc > 3 ? parse_port(argv[3], 0) : port;
	if (port < 0 || local < 0) {
		fprintf(stderr,
		        "kiln port-forward: ports are numbers from 1 to 65535 (LOCAL may be "
		        "0), got '%s'\n",
		        port < 0 ? argv[2] : argv[3]);
		return 2;
	}
	snprintf(path, sizeof(path), "/sandboxes/%.64s", argv[1]);
	if (kc_json(k, "GET", path, NULL, &sb) != 200)
		return KILN_EXIT_FAIL;
	json_decref(sb);
	kc_disconnect(k); /* each forward makes its own connection */
	lfd = listen_local((unsigned)local, &bound);
	if (lfd < 0) {
		fprintf(stderr, "kiln port-forward: cannot listen on 127.0.0.1:%ld: %s\n", local,
		        strerror(errno));
		return KILN_EXIT_FAIL;
	}
	printf("Forwarding from 127.0.0.1:%u -> sandbox %s port %ld\n", bound, argv[1], port);
	fflush(stdout);
	for (;;) {
		struct sockaddr_in from = {0};
		socklen_t flen = sizeof(from);
		int c = accept4(lfd, (struct sockaddr *)&from, &flen, SOCK_CLOEXEC);
		pid_t pid;

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "kiln port-forward: accept: %s\n", strerror(errno));
			return KILN_EXIT_FAIL;
		}
		/* Reap the forwards that ended; at the limit, wait for one. */
		while (running && waitpid(-1, NULL, WNOHANG) > 0)
			running--;
		if (running >= MAX_FORWARDS && waitpid(-1, NULL, 0) > 0)
			running--;
		pid = fork();
		if (pid == 0) {
			close(lfd);
			_exit(forward(k, c, &from, argv[1], (unsigned)port));
		}
		close(c);
		if (pid < 0)
			fprintf(stderr, "kiln port-forward: fork: %s\n", strerror(errno));
		else
			running++;
	}
}
