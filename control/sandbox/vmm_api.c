/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "http/buf.h"
#include "util.h"
#include "vmm_api.h"

#define REPLY_MAX (64u << 10) /* replies are one short line */

struct vmm_call {
	struct ev_loop *loop;
	int fd;
	ev_io io;
	ev_timer timer;
	struct buf out, in;
	vmm_call_fn cb;
	void *ctx;
};

static void call_free(struct vmm_call *c)
{
	ev_io_stop(c->loop, &c->io);
	ev_timer_stop(c->loop, &c->timer);
	if (c->fd >= 0)
		close(c->fd);
	buf_free(&c->out);
	buf_free(&c->in);
	free(c);
}

void vmm_call_cancel(struct vmm_call *c)
{
	if (c)
		call_free(c);
}

static void finish(struct vmm_call *c, json_t *reply, const char *err)
{
	vmm_call_fn cb = c->cb;
	void *ctx = c->ctx;

	call_free(c);
	cb(ctx, reply, err);
}

static void finish_errno(struct vmm_call *c, const char *what, int err)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "the VMM's API socket: %s: %s", what, strerror(err));
	finish(c, NULL, msg);
}

static void got_line(struct vmm_call *c, const char *line, size_t n)
{
	json_error_t jerr;
	json_t *j = json_loadb(line, n, 0, &jerr);
	json_t *ok = json_object_get(j, "ok");
	const char *e = json_string_value(json_object_get(j, "error"));

	if (!json_is_boolean(ok))
		finish(c, NULL, "the VMM's API socket answered something that is not a reply");
	else if (json_is_true(ok))
		finish(c, j, NULL);
	else
		finish(c, j, e ? e : "the VMM refused the request without saying why");
	json_decref(j);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct vmm_call *c = w->data;
	char *nl;

	if (revents & EV_WRITE) {
		ssize_t n = send(c->fd, buf_head(&c->out), buf_avail(&c->out), MSG_NOSIGNAL);

		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			finish_errno(c, "sending", errno);
			return;
		}
		if (n > 0)
			buf_consume(&c->out, (size_t)n);
		if (!buf_avail(&c->out)) {
			ev_io_stop(loop, &c->io);
			ev_io_set(&c->io, c->fd, EV_READ);
			ev_io_start(loop, &c->io);
		}
		return;
	}
	{
		char *p = buf_reserve(&c->in, 4096);
		ssize_t n;

		if (!p) {
			finish(c, NULL, "out of memory");
			return;
		}
		n = recv(c->fd, p, 4096, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			finish_errno(c, "receiving", errno);
			return;
		}
		if (n == 0) {
			finish(c, NULL, "the VMM closed its API connection without a reply");
			return;
		}
		c->in.len += (size_t)n;
	}
	nl = memchr(buf_head(&c->in), '\n', buf_avail(&c->in));
	if (nl)
		got_line(c, buf_head(&c->in), (size_t)(nl - buf_head(&c->in)));
	else if (buf_avail(&c->in) > REPLY_MAX)
		finish(c, NULL, "the VMM's API reply is too long");
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct vmm_call *c = w->data;

	finish(c, NULL, "the VMM did not answer on its API socket in time");
}

struct vmm_call *vmm_call(struct ev_loop *loop, const char *path, json_t *req, double timeout,
                          vmm_call_fn cb, void *ctx)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct vmm_call *c;
	char *line;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(sa.sun_path, path);
	c = calloc(1, sizeof(*c));
	line = json_dumps(req, JSON_COMPACT);
	if (!c || !line || buf_printf(&c->out, "%s\n", line)) {
		free(line);
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	free(line);
	c->loop = loop;
	c->cb = cb;
	c->ctx = ctx;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/* A unix socket connects at once or not at all (EAGAIN: its backlog
	 * is full, which a VMM's API never is for kilnd's one client). */
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = errno;

		call_free(c);
		errno = err;
		return NULL;
	}
	ev_io_init(&c->io, on_io, c->fd, EV_WRITE);
	c->io.data = c;
	ev_io_start(loop, &c->io);
	ev_timer_init(&c->timer, on_timeout, timeout, 0);
	c->timer.data = c;
	ev_timer_start(loop, &c->timer);
	return c;
}
