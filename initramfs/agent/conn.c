/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: one connection — reading and checking frames, the HELLO
 * exchange, dispatch to the stream kind, and the bounded output queue.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"

#define READ_CHUNK     (64u << 10)
#define READS_PER_WAKE 4            /* then let the other connections run */
#define IN_KEEP        (128u << 10) /* free a larger empty input buffer */
#define OUT_KEEP       (160u << 10) /* room for one data frame stays allocated */

static const struct stream_ops *const stream_kinds[KILN_STREAM_MAX] = {
    [KILN_STREAM_EXEC] = &exec_ops, [KILN_STREAM_PTY] = &pty_ops,
    [KILN_STREAM_FILE] = &file_ops, [KILN_STREAM_INFO] = &info_ops,
    [KILN_STREAM_PORT] = &port_ops, [KILN_STREAM_PROCS] = &procs_ops,
};

struct conn *conn_new(int fd)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (c) {
		c->fd = fd;
		c->state = CONN_HELLO;
	}
	return c;
}

void conn_free(struct conn *c)
{
	close(c->fd);
	kbuf_free(&c->in);
	kbuf_free(&c->out);
	free(c);
}

void conn_finish(struct conn *c)
{
	if (c->state == CONN_HELLO || c->state == CONN_OPEN)
		c->state = CONN_CLOSING;
}

void conn_dead(struct conn *c)
{
	if (c->state == CONN_OPEN && c->ops->detach && c->ops->detach(c)) {
		close(c->fd);
		c->fd = -1;
		c->state = CONN_DETACHED;
		c->wblocked = false;
		kbuf_free(&c->in);
		/* What did not reach the host may end inside a frame. */
		kbuf_free(&c->out);
		return;
	}
	c->state = CONN_DEAD;
}

void conn_abort(struct conn *c)
{
	c->state = CONN_DEAD;
}

void conn_trim_kept(struct conn *c, size_t max)
{
	while (c->out.len > max) {
		struct frame_hdr h;

		frame_decode(kbuf_head(&c->out), &h);
		kbuf_consume(&c->out, FRAME_HDR + h.len);
	}
}

void conn_fail(struct conn *c, int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (c->state == CONN_CLOSING || c->state == CONN_DEAD)
		return;
	if (c->state == CONN_DETACHED) {
		conn_abort(c); /* nobody would read the error */
		return;
	}
	c->reuse = false; /* after an ERROR the connection ends */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err == EPROTO)
		agent_log("connection %d: protocol error: %s", c->fd, msg);
	if (frame_error(&c->out, err, "%s", msg))
		conn_dead(c);
	else
		conn_finish(c);
}

void conn_nomem(struct conn *c)
{
	conn_fail(c, ENOMEM, "kiln-agent: out of memory");
}

bool conn_has_room(const struct conn *c)
{
	return c->out.len < AGENT_OUT_LIMIT;
}

static bool conn_wants_frames(struct conn *c)
{
	if (c->state == CONN_HELLO)
		return true;
	if (c->state != CONN_OPEN)
		return false;
	return !c->ops->want_input || c->ops->want_input(c);
}

static void conn_hello(struct conn *c, const struct frame_hdr *h, const uint8_t *p)
{
	struct frame_mark m;
	struct rd r;

	if (h->type != KILN_MSG_HELLO) {
		conn_fail(c, EPROTO, "expected HELLO, got message type %u", h->type);
		return;
	}
	rd_init(&r, p, h->len);
	uint32_t version = rd_u32(&r);
	uint32_t kind = rd_u32(&r);
	if (!rd_ok(&r)) {
		conn_fail(c, EPROTO, "bad HELLO: %s", r.why);
		return;
	}
	if (version != KILN_AGENT_VERSION) {
		conn_fail(c, EPROTONOSUPPORT, "protocol version %u not supported (agent speaks %u)",
		          version, KILN_AGENT_VERSION);
		return;
	}
	if (kind >= KILN_STREAM_MAX || !stream_kinds[kind]) {
		conn_fail(c, EINVAL, "unknown stream kind %u", kind);
		return;
	}
	c->reuse = h->flags & KILN_FRAME_REUSE;
	frame_begin(&c->out, &m, KILN_MSG_HELLO);
	put_u32(&c->out, &m, KILN_AGENT_VERSION);
	put_u32(&c->out, &m,
	        (c->reuse ? KILN_HELLO_REUSE : 0) | KILN_HELLO_USERS | KILN_HELLO_PROCS |
	            KILN_HELLO_PEER);
	if (frame_end(&c->out, &m)) {
		conn_dead(c);
		return;
	}
	c->ops = stream_kinds[kind];
	c->state = CONN_OPEN;
	c->ops->open(c);
}

static void conn_dispatch(struct conn *c, const struct frame_hdr *h, const uint8_t *p)
{
	c->rx_flags = h->flags;
	if (h->type == KILN_MSG_ERROR) {
		/* The host gave up on the stream; nobody reads an answer. */
		conn_abort(c);
	} else if (c->state == CONN_HELLO && c->skip_old && h->type != KILN_MSG_HELLO) {
		/* What the host sent for the stream that ended (unread input) */
	} else if (c->state == CONN_HELLO) {
		c->skip_old = false;
		conn_hello(c, h, p);
	} else if (h->type == KILN_MSG_HELLO) {
		conn_fail(c, EPROTO, "HELLO after the stream started");
	} else {
		c->ops->frame(c, h->type, p, h->len);
	}
}

/* Handle every complete frame in c->in, as long as the stream accepts input. */
void conn_parse(struct conn *c)
{
	while (conn_wants_frames(c) && c->in.len >= FRAME_HDR) {
		struct frame_hdr h;
		const char *why;

		frame_decode(kbuf_head(&c->in), &h);
		why = frame_check(&h);
		if (why) {
			conn_fail(c, EPROTO, "%s (type %u, len %u)", why, h.type, h.len);
			return;
		}
		if (c->in.len - FRAME_HDR < h.len)
			break;
		conn_dispatch(c, &h, kbuf_head(&c->in) + FRAME_HDR);
		kbuf_consume(&c->in, FRAME_HDR + h.len);
	}
	kbuf_trim(&c->in, IN_KEEP);
}

void conn_read(struct conn *c)
{
	for (int i = 0; i < READS_PER_WAKE && conn_wants_frames(c); i++) {
		size_t want = READ_CHUNK;

		if (c->in.len >= FRAME_HDR) {
			struct frame_hdr h;

			frame_decode(kbuf_head(&c->in), &h);
			if (h.len <= KILN_FRAME_MAX && FRAME_HDR + h.len > c->in.len + want)
				want = FRAME_HDR + h.len - c->in.len;
		}
		if (kbuf_reserve(&c->in, want)) {
			conn_nomem(c);
			return;
		}
		ssize_t n = read(c->fd, kbuf_tail(&c->in), want);
		if (n > 0) {
			c->in.len += n;
			conn_parse(c);
		} else if (n == 0) {
			conn_dead(c); /* the host closed the connection */
			return;
		} else if (errno != EINTR) {
			if (errno != EAGAIN)
				conn_dead(c);
			return;
		}
	}
}

/* The last frame is out: let the host read EOF, and wait for it to close. */
void conn_drain(struct conn *c, int64_t now)
{
	if (shutdown(c->fd, SHUT_WR) < 0) {
		conn_dead(c);
		return;
	}
	c->state = CONN_DRAIN;
	c->drain_until = now + AGENT_DRAIN_MS;
	kbuf_free(&c->in);
	kbuf_free(&c->out);
}

void conn_rearm(struct conn *c)
{
	c->state = CONN_HELLO;
	c->ops = NULL; /* destroyed by the loop, if it had a destroy */
	c->priv = NULL;
	c->reuse = false;
	c->skip_old = true;
	kbuf_free(&c->out);
	conn_parse(c); /* the next HELLO may be here already */
}

void conn_discard(struct conn *c)
{
	uint8_t buf[16384];

	for (int i = 0; i < READS_PER_WAKE; i++) {
		ssize_t n = read(c->fd, buf, sizeof(buf));

		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0 && !(n < 0 && errno == EINTR)) {
			conn_dead(c);
			return;
		}
	}
}

void conn_flush(struct conn *c)
{
	if (c->state == CONN_DETACHED)
		return; /* kept for whoever attaches */
	while (c->out.len && c->state != CONN_DEAD) {
		ssize_t n = write(c->fd, kbuf_head(&c->out), c->out.len);

		if (n > 0) {
			kbuf_consume(&c->out, n);
		} else if (n < 0 && errno == EAGAIN) {
			c->wblocked = true;
			return;
		} else if (n == 0 || errno != EINTR) {
			conn_dead(c);
		}
	}
	/* A producer refills right away: keep its buffer while it runs. So
	 * does a stream fed from descriptors of its own (exec, pty, port):
	 * freed and taken again at every drain, a buffer past the allocator's
	 * mmap threshold costs page faults (and the host shadow faults) on
	 * every fill, a few per 4 KiB that pass. */
	if (c->state != CONN_OPEN || (!c->ops->pump && !c->ops->poll))
		kbuf_trim(&c->out, OUT_KEEP);
}

/*
 * The socket is always polled, even with no events wanted, because POLLHUP
 * and POLLERR come regardless: that is how a backpressured stream learns
 * that the host went away.
 */
void conn_poll(struct conn *c, struct pollset *ps)
{
	short ev = 0;

	if (c->state == CONN_DETACHED) {
		if (c->ops->poll)
			c->ops->poll(c, ps);
		return;
	}
	if (conn_wants_frames(c) || c->state == CONN_DRAIN)
		ev |= POLLIN;
	if (c->out.len)
		ev |= POLLOUT;
	pollset_add(ps, c->fd, ev, c, ROLE_SOCK);
	if (c->state == CONN_OPEN && c->ops->poll)
		c->ops->poll(c, ps);
}
