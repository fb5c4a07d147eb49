/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: port streams (KILN_STREAM_PORT) — a TCP connection to a port
 * of the guest's loopback, spliced to the host both ways.
 *
 * The socket is read only while the connection's queue to the host has
 * room, and the host's frames only while the bytes held for the socket are
 * below AGENT_IN_LIMIT: a side that stops reading stops the other one, and
 * the agent holds a bounded amount either way. DONE maps to half-close in
 * both directions (shutdown(SHUT_WR) towards the guest, end of file towards
 * the host); the stream ends when both directions are closed.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kiln/sockpeer.h>

#include "agent.h"

#define READS_PER_WAKE 4 /* socket reads per readiness, then let others run */

enum {
	ROLE_TCP = ROLE_STREAM,
};

enum port_phase {
	PORT_WAIT_CONNECT, /* before the host's CONNECT */
	PORT_CONNECTING,   /* a non-blocking connect() in progress */
	PORT_OPEN,
};

struct port {
	enum port_phase phase;
	int fd;
	uint16_t port;
	uint32_t family;    /* as asked (KILN_PORT_*) */
	int trying;         /* the family being tried: 4 or 6 */
	bool host_done;     /* the host sent DONE */
	bool wr_closed;     /* the socket's writing side is shut (or broken) */
	bool guest_done;    /* read end of file; DONE queued */
	int64_t deadline;   /* of the connect */
	socklen_t peer_len; /* CONNECT's peer trailer (0: none) */
	struct sockaddr_storage peer;
	struct kbuf input; /* the host's bytes, not yet written to the socket */
};

static void port_open(struct conn *c)
{
	struct port *p = calloc(1, sizeof(*p));

	if (!p) {
		conn_nomem(c);
		return;
	}
	p->fd = -1;
	p->deadline = AGENT_NO_DEADLINE;
	c->priv = p;
}

static void port_close_fd(struct port *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

static const char *port_addr(int family)
{
	return family == 6 ? "[::1]" : "127.0.0.1";
}

/* Both directions are closed: the stream is over. */
static void port_check_done(struct conn *c)
{
	struct port *p = c->priv;

	if (p->guest_done && p->wr_closed)
		conn_finish(c);
}

/* Write what the host sent; shut the writing side after the host's DONE. */
static void port_write(struct conn *c)
{
	struct port *p = c->priv;

	while (p->input.len && !p->wr_closed) {
		ssize_t n = write(p->fd, kbuf_head(&p->input), p->input.len);

		if (n > 0) {
			kbuf_consume(&p->input, n);
		} else if (n < 0 && errno == EAGAIN) {
			break;
		} else if (n < 0 && errno != EINTR) {
			/* The peer is not reading any more (EPIPE, ECONNRESET): what
			 * the host sends has nowhere to go. */
			p->wr_closed = true;
			kbuf_free(&p->input);
		}
	}
	kbuf_trim(&p->input, 64u << 10);
	if (!p->input.len && p->host_done && !p->wr_closed) {
		shutdown(p->fd, SHUT_WR);
		p->wr_closed = true;
	}
	port_check_done(c);
}

/* Start a connect to the family being tried; 0, or -errno if it failed at once. */
static int port_dial(struct port *p)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;

	if (p->trying == 6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(p->port);
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(p->port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	}
	port_close_fd(p);
	p->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd < 0)
		return -errno;
	/* Best effort: where the kernel cannot (Linux: ENOPROTOOPT), the
	 * server sees the agent's loopback address, as before the trailer. */
	if (p->peer_len)
		setsockopt(p->fd, KILN_SOL_PEER, KILN_SO_PEER, &p->peer, p->peer_len);
	if (connect(p->fd, (struct sockaddr *)&ss, len) == 0)
		return 0;
	return errno == EINPROGRESS ? 0 : -errno;
}

static void port_connected(struct conn *c)
{
	struct port *p = c->priv;
	struct frame_mark m;

	p->phase = PORT_OPEN;
	p->deadline = AGENT_NO_DEADLINE;
	frame_begin(&c->out, &m, KILN_MSG_CONNECTED);
	put_u32(&c->out, &m, (uint32_t)p->trying);
	if (frame_end(&c->out, &m)) {
		conn_nomem(c);
		return;
	}
	port_write(c); /* DATA (and DONE) that came with the CONNECT */
}

/* The connect to p->trying ended with err (0: it is up). */
static void port_dial_result(struct conn *c, int err)
{
	struct port *p = c->priv;

	/* Refused over IPv4: the server may listen on ::1 only. */
	if (err == -ECONNREFUSED && p->family == KILN_PORT_ANY && p->trying == 4) {
		p->trying = 6;
		err = port_dial(p);
		if (!err)
			return; /* in progress: POLLOUT tells */
	}
	if (!err) {
		port_connected(c);
		return;
	}
	port_close_fd(p);
	if (err == -ECONNREFUSED)
		conn_fail(c, ECONNREFUSED, "nothing listens on port %u in the sandbox (%s)",
		          p->port,
		          p->family == KILN_PORT_ANY ? "127.0.0.1 and [::1] refused the connection"
		                                     : "the connection was refused");
	else
		conn_fail(c, -err, "cannot connect to %s:%u in the sandbox: %s",
		          port_addr(p->trying), p->port, strerror(-err));
}

/* CONNECT's peer trailer into p->peer; false if it failed c. */
static bool port_peer(struct conn *c, struct rd *r)
{
	struct port *p = c->priv;
	char why[160];
	int err = rd_peer(r, &p->peer, &p->peer_len, why, sizeof(why));

	if (err)
		conn_fail(c, err, "%s", why);
	return !err;
}

static void port_connect(struct conn *c, const uint8_t *buf, uint32_t len)
{
	struct port *p = c->priv;
	struct rd r;
	uint32_t port, family;
	int err;

	rd_init(&r, buf, len);
	port = rd_u32(&r);
	family = rd_u32(&r);
	if (!r.why && r.left && !port_peer(c, &r))
		return;
	if (!rd_ok(&r)) {
		conn_fail(c, EPROTO, "bad CONNECT: %s", r.why);
		return;
	}
	if (port < 1 || port > 65535) {
		conn_fail(c, EINVAL, "bad port %u (want 1..65535)", port);
		return;
	}
	if (family != KILN_PORT_ANY && family != KILN_PORT_V4 && family != KILN_PORT_V6) {
		conn_fail(c, EINVAL, "bad address family %u (want 0, 4 or 6)", family);
		return;
	}
	p->port = (uint16_t)port;
	p->family = family;
	p->trying = family == KILN_PORT_V6 ? 6 : 4;
	p->phase = PORT_CONNECTING;
	p->deadline = now_ms() + KILN_PORT_CONNECT_MS;
	err = port_dial(p);
	if (err) {
		port_dial_result(c, err);
		return;
	}
	/* A loopback connect may be complete already: POLLOUT says so at once. */
}

static void port_frame(struct conn *c, uint16_t type, const uint8_t *buf, uint32_t len)
{
	struct port *p = c->priv;

	if ((type == KILN_MSG_CONNECT) != (p->phase == PORT_WAIT_CONNECT)) {
		conn_fail(c, EPROTO,
		          type == KILN_MSG_CONNECT ? "CONNECT twice"
		                                   : "expected CONNECT, got message type %u",
		          type);
		return;
	}
	switch (type) {
	case KILN_MSG_CONNECT:
		port_connect(c, buf, len);
		return;
	case KILN_MSG_DATA:
		if (p->host_done) {
			conn_fail(c, EPROTO, "DATA after DONE");
			return;
		}
		if (!p->wr_closed && kbuf_put(&p->input, buf, len)) {
			conn_nomem(c);
			return;
		}
		if (p->phase == PORT_OPEN)
			port_write(c);
		return;
	case KILN_MSG_DONE:
		if (len || p->host_done) {
			conn_fail(c, EPROTO, len ? "DONE with a payload" : "DONE twice");
			return;
		}
		p->host_done = true;
		if (p->phase == PORT_OPEN)
			port_write(c);
		return;
	default:
		conn_fail(c, EPROTO, "message type %u not valid on a port stream", type);
	}
}

static bool port_want_input(struct conn *c)
{
	struct port *p = c->priv;

	return !p || p->input.len < AGENT_IN_LIMIT;
}

static void port_poll(struct conn *c, struct pollset *ps)
{
	struct port *p = c->priv;
	short ev = 0;

	if (!p || p->fd < 0)
		return;
	if (p->phase == PORT_CONNECTING)
		ev = POLLOUT;
	else if (p->phase == PORT_OPEN) {
		if (!p->guest_done && conn_has_room(c))
			ev |= POLLIN;
		if (p->input.len && !p->wr_closed)
			ev |= POLLOUT;
	}
	/* Not polled while backpressured: a hung-up socket would wake the
	 * loop at once, again and again; its end of file is read later. */
	if (ev)
		pollset_add(ps, p->fd, ev, c, ROLE_TCP);
}

static void port_read(struct conn *c)
{
	struct port *p = c->priv;

	for (int i = 0; i < READS_PER_WAKE && !p->guest_done && conn_has_room(c); i++) {
		ssize_t n = frame_read(&c->out, p->fd, KILN_MSG_DATA, KILN_DATA_CHUNK);

		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0 && errno == ENOMEM) {
			conn_nomem(c);
			return;
		}
		if (n < 0) {
			int err = errno;

			conn_fail(c, err, "the connection to port %u in the sandbox broke: %s",
			          p->port, strerror(err));
			return;
		}
		if (frame_put(&c->out, KILN_MSG_DONE, NULL, 0)) {
			conn_nomem(c);
			return;
		}
		p->guest_done = true;
		port_check_done(c);
		return;
	}
}

static void port_ready(struct conn *c, int role, short revents)
{
	struct port *p = c->priv;

	if (p->phase == PORT_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		port_dial_result(c, -err);
		return;
	}
	if (revents & POLLOUT)
		port_write(c);
	if (c->state != CONN_OPEN)
		return;
	if ((revents & (POLLIN | POLLHUP | POLLERR)) && conn_has_room(c))
		port_read(c);
}

static int64_t port_deadline(struct conn *c)
{
	struct port *p = c->priv;

	return p ? p->deadline : AGENT_NO_DEADLINE;
}

static void port_timeout(struct conn *c, int64_t now)
{
	struct port *p = c->priv;

	port_close_fd(p);
	p->deadline = AGENT_NO_DEADLINE;
	conn_fail(c, ETIMEDOUT, "connecting to %s:%u in the sandbox timed out after %d ms",
	          port_addr(p->trying), p->port, KILN_PORT_CONNECT_MS);
}

static void port_destroy(struct conn *c)
{
	struct port *p = c->priv;

	if (!p)
		return;
	port_close_fd(p);
	kbuf_free(&p->input);
	free(p);
	c->priv = NULL;
}

const struct stream_ops port_ops = {
    .open = port_open,
    .frame = port_frame,
    .want_input = port_want_input,
    .poll = port_poll,
    .ready = port_ready,
    .deadline = port_deadline,
    .timeout = port_timeout,
    .destroy = port_destroy,
};
