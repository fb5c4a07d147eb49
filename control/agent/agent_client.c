/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent_client.h"
#include "util.h"

#define READ_CHUNK    (64u << 10)
#define READ_PER_CB   (256u << 10) /* fairness: yield to other watchers */
#define HANDSHAKE_MAX 64

enum { ST_HANDSHAKE, ST_OPEN, ST_DEAD };

struct agent_conn {
	struct ev_loop *loop;
	int fd;
	int state;
	bool paused, above_high, shut_wr, want_shut;
	int busy; /* callbacks on the stack; free is deferred until 0 */
	const struct agent_conn_ops *ops;
	void *ctx;
	ev_io rw, ww;
	ev_timer timer;
	struct buf in, out;
	void (*on_free)(void *arg);
	void *free_arg;
};

static void conn_free(struct agent_conn *c)
{
	if (c->on_free)
		c->on_free(c->free_arg);
	buf_free(&c->in);
	buf_free(&c->out);
	free(c);
}

static void conn_stop(struct agent_conn *c)
{
	ev_io_stop(c->loop, &c->rw);
	ev_io_stop(c->loop, &c->ww);
	ev_timer_stop(c->loop, &c->timer);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = ST_DEAD;
}

void agent_close(struct agent_conn *c)
{
	if (!c)
		return;
	if (c->state != ST_DEAD)
		conn_stop(c);
	if (!c->busy)
		conn_free(c);
}

/* The stream ended on its own: tell the owner once, then free. */
static void conn_fail(struct agent_conn *c, int err)
{
	if (c->state == ST_DEAD)
		return;
	conn_stop(c);
	c->busy++;
	c->ops->on_close(c->ctx, err);
	c->busy--;
}

static void update_watchers(struct agent_conn *c)
{
	if (c->state == ST_DEAD)
		return;
	if (c->paused && c->state == ST_OPEN)
		ev_io_stop(c->loop, &c->rw);
	else
		ev_io_start(c->loop, &c->rw);
	if (c->state == ST_OPEN && (buf_avail(&c->out) || (c->want_shut && !c->shut_wr)))
		ev_io_start(c->loop, &c->ww);
	else
		ev_io_stop(c->loop, &c->ww);
}

/* Send what the socket takes: 0, or -errno if the connection broke. */
static int send_out(struct agent_conn *c)
{
	while (buf_avail(&c->out)) {
		ssize_t n =
		    send(c->fd, buf_head(&c->out), buf_avail(&c->out), MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		buf_consume(&c->out, (size_t)n);
	}
	return 0;
}

static void do_write(struct agent_conn *c)
{
	int err = send_out(c);

	if (err) {
		conn_fail(c, err);
		return;
	}
	if (!buf_avail(&c->out) && c->want_shut && !c->shut_wr) {
		shutdown(c->fd, SHUT_WR);
		c->shut_wr = true;
	}
	if (c->above_high && buf_avail(&c->out) < AGENT_OUT_LOW) {
		c->above_high = false;
		if (c->ops->on_drain) {
			c->busy++;
			c->ops->on_drain(c->ctx);
			c->busy--;
			if (c->state == ST_DEAD)
				return;
		}
	}
	update_watchers(c);
}

/* Returns -1 if the connection died (the caller must stop touching it). */
static int parse_handshake(struct agent_conn *c)
{
	char *nl = memchr(buf_head(&c->in), '\n', buf_avail(&c->in));
	char line[HANDSHAKE_MAX + 1];
	size_t n;

	if (!nl) {
		if (buf_avail(&c->in) >= HANDSHAKE_MAX) {
			conn_fail(c, -EPROTO);
			return -1;
		}
		return 0;
	}
	n = (size_t)(nl - buf_head(&c->in));
	memcpy(line, buf_head(&c->in), n);
	line[n] = 0;
	buf_consume(&c->in, n + 1);
	if (strncmp(line, "OK ", 3) != 0) {
		conn_fail(c, -ECONNREFUSED);
		return -1;
	}
	c->state = ST_OPEN;
	ev_timer_stop(c->loop, &c->timer);
	return 0;
}

static void dispatch_frames(struct agent_conn *c)
{
	while (c->state == ST_OPEN && !c->paused && buf_avail(&c->in) >= AGENT_HDR_LEN) {
		struct kiln_frame f;

		if (agent_hdr_decode(buf_head(&c->in), &f)) {
			log_debug("agent: bad frame header");
			conn_fail(c, -EPROTO);
			return;
		}
		if (buf_avail(&c->in) < AGENT_HDR_LEN + (size_t)f.len)
			return;
		c->busy++;
		c->ops->on_frame(c->ctx, f.type, (const uint8_t *)buf_head(&c->in) + AGENT_HDR_LEN,
		                 f.len);
		c->busy--;
		if (c->state == ST_DEAD)
			return;
		buf_consume(&c->in, AGENT_HDR_LEN + (size_t)f.len);
	}
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent_conn *c = w->data;
	size_t total = 0;

	c->busy++;
	while (c->state != ST_DEAD && total < READ_PER_CB) {
		char *dst;
		ssize_t n;

		if (c->state == ST_OPEN) {
			dispatch_frames(c);
			if (c->state == ST_DEAD || c->paused)
				break;
		}
		/* Never hold more than one maximal frame plus a read chunk. */
		if (buf_avail(&c->in) > KILN_FRAME_MAX + AGENT_HDR_LEN + READ_CHUNK)
			break;
		dst = buf_reserve(&c->in, READ_CHUNK);
		if (!dst) {
			conn_fail(c, -ENOMEM);
			break;
		}
		n = recv(c->fd, dst, READ_CHUNK, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				conn_fail(c, -errno);
			break;
		}
		if (n == 0) {
			/* Before the OK: the guest refused (the VMM waits for its
			 * answer as long as we do). After it, a frame cut in half
			 * is a broken stream, not a clean end. */
			conn_fail(c, c->state == ST_HANDSHAKE ? -ECONNREFUSED
			             : buf_avail(&c->in)      ? -EPIPE
			                                      : 0);
			break;
		}
		c->in.len += (size_t)n;
		total += (size_t)n;
		if (c->state == ST_HANDSHAKE) {
			if (parse_handshake(c) < 0)
				break;
			if (c->state == ST_OPEN)
				do_write(c);
		}
	}
	if (c->state == ST_OPEN)
		dispatch_frames(c);
	c->busy--;
	if (c->state == ST_DEAD) {
		if (!c->busy)
			conn_free(c);
		return;
	}
	update_watchers(c);
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent_conn *c = w->data;

	c->busy++;
	do_write(c);
	c->busy--;
	if (c->state == ST_DEAD && !c->busy)
		conn_free(c);
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent_conn *c = w->data;

	conn_fail(c, -ETIMEDOUT);
	if (!c->busy)
		conn_free(c);
}

struct agent_conn *agent_open(struct ev_loop *loop, const char *uds_path, unsigned port,
                              const struct agent_conn_ops *ops, void *ctx)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct agent_conn *c;
	char line[32];
	int n;

	if (strlen(uds_path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(sa.sun_path, uds_path);
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->loop = loop;
	c->ops = ops;
	c->ctx = ctx;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		goto fail;
	/* connect() on a unix socket completes at once or fails (EAGAIN when
	 * the listener's backlog is full): there is no EINPROGRESS. */
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto fail;
	n = snprintf(line, sizeof(line), "CONNECT %u\n", port);
	if (send(c->fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
		if (errno == 0)
			errno = EIO;
		goto fail;
	}
	c->state = ST_HANDSHAKE;
	ev_io_init(&c->rw, on_read, c->fd, EV_READ);
	ev_io_init(&c->ww, on_write, c->fd, EV_WRITE);
	c->rw.data = c->ww.data = c;
	ev_timer_init(&c->timer, on_timeout, AGENT_CONNECT_TIMEOUT, 0);
	c->timer.data = c;
	ev_timer_start(loop, &c->timer);
	ev_io_start(loop, &c->rw);
	return c;
fail:
	n = errno;
	if (c->fd >= 0)
		close(c->fd);
	free(c);
	errno = n;
	return NULL;
}

struct buf *agent_out(struct agent_conn *c)
{
	return &c->out;
}

size_t agent_pending(const struct agent_conn *c)
{
	return buf_avail(&c->out);
}

void agent_flush(struct agent_conn *c)
{
	if (c->state == ST_DEAD)
		return;
	/* Send what the socket takes now (a request then reaches the VMM a
	 * loop turn and two epoll_ctl calls sooner), unless a drain is awaited
	 * (on_drain comes from do_write). The rest, and any failure, is left
	 * to the loop: a failed write calls on_close, which must not run
	 * inside the owner's own call. */
	if (c->state == ST_OPEN && !c->above_high)
		(void)send_out(c);
	if (buf_avail(&c->out) >= AGENT_OUT_HIGH)
		c->above_high = true;
	update_watchers(c);
}

void agent_shutdown_write(struct agent_conn *c)
{
	c->want_shut = true;
	agent_flush(c);
}

void agent_adopt(struct agent_conn *c, const struct agent_conn_ops *ops, void *ctx)
{
	c->ops = ops;
	c->ctx = ctx;
}

bool agent_unused(struct agent_conn *c)
{
	char byte;

	if (c->state == ST_DEAD || buf_avail(&c->in) || buf_avail(&c->out))
		return false;
	/* Before the OK line arrives there is nothing to tell; after it, the
	 * agent sends nothing before a HELLO: any byte (or EOF) ends it. */
	return c->state == ST_HANDSHAKE ||
	       (recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN);
}

void agent_on_free(struct agent_conn *c, void (*fn)(void *arg), void *arg)
{
	c->on_free = fn;
	c->free_arg = arg;
}

void *agent_on_free_arg(const struct agent_conn *c)
{
	return c->free_arg;
}

bool agent_reusable(const struct agent_conn *c)
{
	return c->state == ST_OPEN && !buf_avail(&c->out) && !c->want_shut;
}

void agent_pause(struct agent_conn *c, bool paused)
{
	if (c->state == ST_DEAD || c->paused == paused)
		return;
	c->paused = paused;
	update_watchers(c);
	/* Frames may already be buffered: deliver them on the next loop turn. */
	if (!paused && buf_avail(&c->in) >= AGENT_HDR_LEN)
		ev_feed_event(c->loop, &c->rw, EV_READ);
}
