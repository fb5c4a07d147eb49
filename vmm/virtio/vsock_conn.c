/* SPDX-License-Identifier: MIT */
/*
 * virtio-vsock connections: one stream between a guest port and a unix
 * socket on the host, with the spec's credit-based flow control (5.10.6.3).
 *
 * Host to guest, bytes are read from the socket straight into a posted
 * receive buffer, and only while the guest has advertised free space for
 * them: nothing is queued on the host. Guest to host, bytes are written to
 * the socket at once; what it does not take waits in a ring no larger than
 * the window we advertise (c->win), which is all the guest may send ahead of
 * our fwd_cnt. A guest that sends more is broken and gets an RST. The
 * window is VSOCK_BUF_ALLOC, and VSOCK_BUF_BIG for at most VSOCK_BIG_CONNS
 * connections that stream to the host: fewer credit round trips (each is
 * an interrupt in the guest and a kick here) where they count, and what a
 * guest can make the VMM hold stays near VSOCK_MAX_CONNS * VSOCK_BUF_ALLOC.
 *
 * Everything here runs on the main loop with the device lock held.
 */
#include <ctype.h>
#include <errno.h>
#include <ev.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kiln/trace.h>

#include "vsock.h"

static uint32_t peer_free(const struct vsock_conn *c)
{
	uint32_t in_flight = c->tx_cnt - c->peer_fwd_cnt;

	/* A fwd_cnt ahead of what we sent is a lie; grant nothing on it. */
	return in_flight >= c->peer_buf_alloc ? 0 : c->peer_buf_alloc - in_flight;
}

static bool can_send_data(const struct vsock_conn *c)
{
	return c->state == VSOCK_ESTABLISHED && c->fd >= 0 && !(c->local_shut & VSOCK_SHUT_SEND) &&
	       !(c->peer_shut & VSOCK_SHUT_RCV) && peer_free(c) > 0;
}

/* Watch the socket only when its input has somewhere to go, and queue c on
 * the rx list when it owes the guest a packet. */
static void update(struct vsock_conn *c)
{
	struct vsock *v = c->v;

	if (c->state == VSOCK_HELLO)
		return;
	if (can_send_data(c) && !c->readable && !c->host_eof)
		ev_io_start(v->loop, &c->rd);
	else
		ev_io_stop(v->loop, &c->rd);
	if (!c->on_rxq && (c->pending || (c->readable && can_send_data(c)))) {
		TAILQ_INSERT_TAIL(&v->rxq, c, rxq_link);
		c->on_rxq = true;
	}
}

static void start_timer(struct vsock_conn *c, double secs)
{
	ev_timer_stop(c->v->loop, &c->timer);
	ev_timer_set(&c->timer, secs, 0);
	ev_timer_start(c->v->loop, &c->timer);
}

static void close_fd(struct vsock_conn *c)
{
	ev_io_stop(c->v->loop, &c->rd);
	ev_io_stop(c->v->loop, &c->wr);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->readable = false;
	free(c->buf);
	c->buf = NULL;
	c->buf_head = c->buf_len = 0;
}

void vsock_conn_free(struct vsock_conn *c)
{
	struct vsock *v = c->v;

	close_fd(c);
	ev_timer_stop(v->loop, &c->timer);
	if (c->hashed)
		LIST_REMOVE(c, hash_link);
	if (c->big)
		v->nr_big--;
	if (c->on_rxq)
		TAILQ_REMOVE(&v->rxq, c, rxq_link);
	TAILQ_REMOVE(&v->all, c, all_link);
	v->nr_conns--;
	free(c);
}

void vsock_conn_free_all(struct vsock *v)
{
	struct vsock_conn *c;

	while ((c = TAILQ_FIRST(&v->all)))
		vsock_conn_free(c);
}

/* The guest driver forgot every connection. Host clients it never heard of
 * (no REQUEST delivered yet) wait for the next driver: a driver resets the
 * device when it starts, and a client may well have connected before. */
void vsock_conn_reset_all(struct vsock *v)
{
	struct vsock_conn *c, *next;

	for (c = TAILQ_FIRST(&v->all); c; c = next) {
		next = TAILQ_NEXT(c, all_link);
		if (c->state != VSOCK_HELLO && !(c->state == VSOCK_CONNECTING && !c->request_sent))
			vsock_conn_free(c);
	}
}

/* Abort: the guest gets an RST, then c is freed. A connection the guest
 * never heard of is freed at once (the only case in which c is gone on
 * return). */
static void conn_reset(struct vsock_conn *c)
{
	if (c->state == VSOCK_HELLO || (c->state == VSOCK_CONNECTING && !c->request_sent)) {
		vsock_conn_free(c);
		return;
	}
	close_fd(c);
	ev_timer_stop(c->v->loop, &c->timer);
	c->state = VSOCK_DEAD;
	c->pending = VSOCK_P_RST;
	update(c);
}

/* Nothing more will flow either way: tell the guest with a full SHUTDOWN
 * and wait for its RST (5.10.6.4), for a while. */
static void conn_close(struct vsock_conn *c)
{
	if (c->peer_shut == VSOCK_SHUT_BOTH) {
		conn_reset(c);
		return;
	}
	close_fd(c);
	c->state = VSOCK_CLOSING;
	c->local_shut = VSOCK_SHUT_BOTH;
	c->pending = VSOCK_P_SHUTDOWN;
	start_timer(c, VSOCK_CLOSE_TIMEOUT);
	update(c);
}

static void check_done(struct vsock_conn *c)
{
	bool out_done = (c->peer_shut & VSOCK_SHUT_SEND) && !c->buf_len;
	bool in_done = (c->local_shut & VSOCK_SHUT_SEND) || (c->peer_shut & VSOCK_SHUT_RCV);

	if (c->state != VSOCK_ESTABLISHED || !out_done || !in_done)
		return;
	/* The guest asked for a full shutdown: the answer is an RST. */
	if (c->peer_shut == VSOCK_SHUT_BOTH)
		conn_reset(c);
	else
		conn_close(c);
}

/* An update only when the space the guest knows of runs low (under half
 * the window): each is a packet and an interrupt, and the guest may send
 * half a window more without waiting for one. */
static void credit_check(struct vsock_conn *c)
{
	struct vsock *v = c->v;

	if (c->state != VSOCK_ESTABLISHED)
		return;
	/* A stream to the host: a big window, told at once. The ring is
	 * sized by the window, so it grows only while there is none. */
	if (!c->big && !c->buf && c->rx_cnt >= VSOCK_BUF_BIG && v->nr_big < VSOCK_BIG_CONNS) {
		c->big = true;
		c->win = VSOCK_BUF_BIG;
		v->nr_big++;
		c->pending |= VSOCK_P_CREDIT_UPDATE;
		return;
	}
	if (c->fwd_cnt - c->fwd_told >= VSOCK_CREDIT_MIN && c->rx_cnt - c->fwd_told > c->win / 2)
		c->pending |= VSOCK_P_CREDIT_UPDATE;
}

/* Bytes written, 0 if the socket is full, -1 if the host end is gone. */
static ssize_t send_iov(int fd, struct iovec *iov, unsigned n)
{
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = n};
	ssize_t w;

	do
		w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (w < 0 && errno == EINTR);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return w;
}

void vsock_conn_flush(struct vsock_conn *c)
{
	struct iovec iov[2];
	uint32_t first;
	ssize_t w;

	while (c->buf_len && c->fd >= 0) {
		first = c->win - c->buf_head;
		if (first > c->buf_len)
			first = c->buf_len;
		iov[0].iov_base = c->buf + c->buf_head;
		iov[0].iov_len = first;
		iov[1].iov_base = c->buf;
		iov[1].iov_len = c->buf_len - first;
		w = send_iov(c->fd, iov, iov[1].iov_len ? 2 : 1);
		if (w < 0) {
			conn_reset(c);
			return;
		}
		if (!w)
			return;
		c->buf_head = (uint32_t)((c->buf_head + (uint64_t)w) % c->win);
		c->buf_len -= (uint32_t)w;
		c->fwd_cnt += (uint32_t)w;
	}
	ev_io_stop(c->v->loop, &c->wr);
	free(c->buf);
	c->buf = NULL;
	c->buf_head = 0;
	/* The guest's end of file follows its last byte. */
	if (c->fd >= 0 && (c->peer_shut & VSOCK_SHUT_SEND))
		shutdown(c->fd, SHUT_WR);
}

static void guest_data(struct vsock_conn *c, const struct vsock_pkt *p, const struct iovec *iov,
                       unsigned n, size_t off)
{
	struct iovec slice[VIRTQ_MAX_SIZE];
	uint32_t len = p->len, tail, first;
	ssize_t w = 0;

	if (c->peer_shut & VSOCK_SHUT_SEND) {
		vsock_log(c->v, "port %u: data after the guest's SHUTDOWN; reset", c->lport);
		conn_reset(c);
		return;
	}
	if (len > c->win - (c->rx_cnt - c->fwd_cnt)) {
		vsock_log(c->v, "port %u: guest sent %u bytes beyond its credit; reset", c->lport,
		          len - (c->win - (c->rx_cnt - c->fwd_cnt)));
		conn_reset(c);
		return;
	}
	c->rx_cnt += len;
	c->v->rx_bytes += len;
	if (!c->buf_len && len) {
		w = send_iov(c->fd, slice, virtq_iov_slice(iov, n, off, len, slice));
		if (w < 0) {
			conn_reset(c);
			return;
		}
		c->fwd_cnt += (uint32_t)w;
		kiln_trace(c->v->dev->vm->cfg.trace_fd, KILN_TRACE_VMM_FORWARD);
	}
	if (w < len) {
		if (!c->buf && !(c->buf = malloc(c->win))) {
			conn_reset(c);
			return;
		}
		len -= (uint32_t)w;
		off += (size_t)w;
		tail = (c->buf_head + c->buf_len) % c->win;
		first = c->win - tail < len ? c->win - tail : len;
		virtq_iov_read(iov, n, off, c->buf + tail, first);
		virtq_iov_read(iov, n, off + first, c->buf, len - first);
		c->buf_len += len;
		ev_io_start(c->v->loop, &c->wr);
	}
	credit_check(c);
}

static void guest_shutdown(struct vsock_conn *c, uint32_t flags)
{
	uint8_t fresh = (uint8_t)(flags & VSOCK_SHUT_BOTH & ~c->peer_shut);

	c->peer_shut |= fresh;
	/* A full shutdown with nothing left to write closes the socket at
	 * once (check_done: an RST to the guest), which tells the client both
	 * (EOF, and EPIPE on its writes) without the two calls below. */
	if (c->peer_shut == VSOCK_SHUT_BOTH && !c->buf_len) {
		c->readable = false;
		check_done(c);
		return;
	}
	/* On a unix socket SHUT_RD makes the client's writes fail (EPIPE). */
	if (fresh & VSOCK_SHUT_RCV) {
		shutdown(c->fd, SHUT_RD);
		c->readable = false;
	}
	if ((fresh & VSOCK_SHUT_SEND) && !c->buf_len)
		shutdown(c->fd, SHUT_WR);
	check_done(c);
}

static void established_recv(struct vsock_conn *c, const struct vsock_pkt *p,
                             const struct iovec *iov, unsigned n, size_t off)
{
	switch (p->op) {
	case VSOCK_OP_RW:
		guest_data(c, p, iov, n, off);
		break;
	case VSOCK_OP_SHUTDOWN:
		guest_shutdown(c, p->flags);
		break;
	case VSOCK_OP_CREDIT_UPDATE:
		break;
	case VSOCK_OP_CREDIT_REQUEST:
		c->pending |= VSOCK_P_CREDIT_UPDATE;
		break;
	default:
		vsock_log(c->v, "port %u: unexpected op %u on an open connection; reset", c->lport,
		          p->op);
		conn_reset(c);
		return;
	}
	update(c);
}

/* The guest accepted our REQUEST: tell the client and start relaying. */
static void host_connected(struct vsock_conn *c)
{
	char ok[24];
	int len = snprintf(ok, sizeof(ok), "OK %u\n", c->lport);

	if (send(c->fd, ok, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) != len) {
		conn_reset(c);
		return;
	}
	ev_timer_stop(c->v->loop, &c->timer);
	c->state = VSOCK_ESTABLISHED;
	update(c);
}

static unsigned hash_of(uint32_t lport, uint32_t pport)
{
	return (lport * 2654435761u ^ pport) % VSOCK_HASH_SIZE;
}

struct vsock_conn *vsock_conn_find(struct vsock *v, uint32_t lport, uint32_t pport)
{
	struct vsock_conn *c;

	for (c = LIST_FIRST(&v->hash[hash_of(lport, pport)]); c; c = LIST_NEXT(c, hash_link))
		if (c->lport == lport && c->pport == pport)
			return c;
	return NULL;
}

static void conn_hash(struct vsock_conn *c, uint32_t lport, uint32_t pport)
{
	c->lport = lport;
	c->pport = pport;
	LIST_INSERT_HEAD(&c->v->hash[hash_of(lport, pport)], c, hash_link);
	c->hashed = true;
}

static void rd_cb(struct ev_loop *loop, ev_io *w, int revents);
static void wr_cb(struct ev_loop *loop, ev_io *w, int revents);
static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

static struct vsock_conn *conn_new(struct vsock *v, int fd, enum vsock_conn_state state)
{
	struct vsock_conn *c;

	if (v->nr_conns >= VSOCK_MAX_CONNS || !(c = calloc(1, sizeof(*c))))
		return NULL;
	c->v = v;
	c->fd = fd;
	c->state = state;
	c->win = VSOCK_BUF_ALLOC;
	ev_io_init(&c->rd, rd_cb, fd, EV_READ);
	ev_io_init(&c->wr, wr_cb, fd, EV_WRITE);
	ev_init(&c->timer, timer_cb);
	c->rd.data = c->wr.data = c->timer.data = c;
	TAILQ_INSERT_TAIL(&v->all, c, all_link);
	v->nr_conns++;
	return c;
}

/* A guest REQUEST to host port P: connect to "<path>_P". A unix-socket
 * connect never blocks: it completes, or fails (EAGAIN: backlog full). */
static void guest_connect(struct vsock *v, const struct vsock_pkt *p)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct vsock_conn *c;
	int fd = -1;

	if (v->nr_conns >= VSOCK_MAX_CONNS)
		goto refuse;
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", v->path, p->dst_port) >=
	    sizeof(sa.sun_path))
		goto refuse;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto refuse;
	c = conn_new(v, fd, VSOCK_ESTABLISHED);
	if (!c)
		goto refuse;
	conn_hash(c, p->dst_port, p->src_port);
	c->peer_buf_alloc = p->buf_alloc;
	c->peer_fwd_cnt = p->fwd_cnt;
	c->pending = VSOCK_P_RESPONSE;
	update(c);
	return;
refuse:
	if (fd >= 0)
		close(fd);
	vsock_queue_rst(v, p->dst_port, p->src_port, p->type);
}

void vsock_conn_recv(struct vsock *v, const struct vsock_pkt *p, const struct iovec *iov,
                     unsigned n, size_t off)
{
	struct vsock_conn *c = vsock_conn_find(v, p->dst_port, p->src_port);

	if (!c) {
		if (p->op == VSOCK_OP_REQUEST)
			guest_connect(v, p);
		else if (p->op != VSOCK_OP_RST)
			vsock_queue_rst(v, p->dst_port, p->src_port, p->type);
		return;
	}
	if (p->op == VSOCK_OP_RST) {
		vsock_conn_free(c);
		return;
	}
	if (c->state == VSOCK_CLOSING) {
		c->peer_shut |= p->op == VSOCK_OP_SHUTDOWN ? p->flags & VSOCK_SHUT_BOTH : 0;
		if (c->peer_shut == VSOCK_SHUT_BOTH)
			conn_reset(c);
		return;
	}
	if (c->state == VSOCK_DEAD)
		return; /* our RST is on its way */
	if (c->peer_buf_alloc != p->buf_alloc || c->peer_fwd_cnt != p->fwd_cnt)
		c->credit_asked = false;
	c->peer_buf_alloc = p->buf_alloc;
	c->peer_fwd_cnt = p->fwd_cnt;
	if (c->state == VSOCK_ESTABLISHED)
		established_recv(c, p, iov, n, off);
	else if (p->op == VSOCK_OP_RESPONSE && c->request_sent)
		host_connected(c);
	else
		conn_reset(c);
}

/* The next control packet owed, by priority; 0 if none. */
static uint16_t next_control(struct vsock_conn *c)
{
	static const struct {
		unsigned bit;
		uint16_t op;
	} order[] = {
	    {VSOCK_P_RST, VSOCK_OP_RST},
	    {VSOCK_P_RESPONSE, VSOCK_OP_RESPONSE},
	    {VSOCK_P_REQUEST, VSOCK_OP_REQUEST},
	    {VSOCK_P_SHUTDOWN, VSOCK_OP_SHUTDOWN},
	    {VSOCK_P_CREDIT_UPDATE, VSOCK_OP_CREDIT_UPDATE},
	    {VSOCK_P_CREDIT_REQUEST, VSOCK_OP_CREDIT_REQUEST},
	};
	unsigned i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (c->pending & order[i].bit) {
			c->pending &= ~order[i].bit;
			return order[i].op;
		}
	}
	return 0;
}

/* The host end reached end of file. A client that only shut its writing
 * side still reads: that is a half close. One that closed (POLLHUP on a
 * unix socket) ends both directions. */
static void host_eof(struct vsock_conn *c)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};

	c->host_eof = true;
	c->readable = false;
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP)) {
		conn_close(c);
		return;
	}
	c->local_shut |= VSOCK_SHUT_SEND;
	c->pending |= VSOCK_P_SHUTDOWN;
	check_done(c);
}

/* Read host data into the payload area of a receive buffer. Returns the
 * bytes read; 0 if there were none (c waits for its watcher); -1 if c
 * changed state instead (end of file or error) and now owes a control
 * packet. */
static ssize_t read_data(struct vsock_conn *c, const struct iovec *iov, unsigned n, size_t room)
{
	struct iovec slice[VIRTQ_MAX_SIZE];
	size_t max = room - VSOCK_HDR_SIZE;
	ssize_t r;

	if (max > VSOCK_MAX_PKT)
		max = VSOCK_MAX_PKT;
	if (max > peer_free(c))
		max = peer_free(c);
	r = readv(c->fd, slice, (int)virtq_iov_slice(iov, n, VSOCK_HDR_SIZE, max, slice));
	if (r > 0)
		return r;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		c->readable = false;
		return 0;
	}
	if (r == 0)
		host_eof(c);
	else
		conn_reset(c);
	return -1;
}

/* Nobody waits for this packet: a RESPONSE to a guest that sent bytes
 * behind its REQUEST (it waits for the host's answer to them, which
 * follows), or the RST that ends a connection the guest shut both ways
 * (it only frees the guest's side). Their interrupt may wait for the next
 * packet's (at most VSOCK_LAZY_IRQ): on a connect that is one interrupt,
 * and one wake of the guest, less per packet. */
static bool lazy(const struct vsock_conn *c, uint16_t op)
{
	return (op == VSOCK_OP_RESPONSE && c->rx_cnt) ||
	       (op == VSOCK_OP_RST && c->peer_shut == VSOCK_SHUT_BOTH);
}

int vsock_conn_emit(struct vsock_conn *c, const struct iovec *iov, unsigned n, size_t room)
{
	struct vsock *v = c->v;
	struct vsock_hdr_le h;
	uint16_t op = 0;
	ssize_t len = 0;
	int tries;

	for (tries = 0; tries < 2 && !op; tries++) {
		op = next_control(c);
		if (op || !c->readable || !can_send_data(c))
			break;
		if (room <= VSOCK_HDR_SIZE) {
			update(c);
			return -1;
		}
		len = read_data(c, iov, n, room);
		if (len > 0)
			op = VSOCK_OP_RW;
		else if (len == 0)
			break;
		else
			len = 0;
	}
	if (!op) {
		update(c);
		return 0;
	}
	h = (struct vsock_hdr_le){
	    .src_cid = htole64(VSOCK_HOST_CID),
	    .dst_cid = htole64(v->guest_cid),
	    .src_port = htole32(c->lport),
	    .dst_port = htole32(c->pport),
	    .len = htole32((uint32_t)len),
	    .type = htole16(VSOCK_TYPE_STREAM),
	    .op = htole16(op),
	    .flags = htole32(op == VSOCK_OP_SHUTDOWN ? c->local_shut : 0),
	    .buf_alloc = htole32(c->win),
	    .fwd_cnt = htole32(c->fwd_cnt),
	};
	virtq_iov_write(iov, n, 0, &h, sizeof(h));
	if (!lazy(c, op))
		v->rx_urgent = true;
	if (op == VSOCK_OP_RST) {
		vsock_conn_free(c);
		return VSOCK_HDR_SIZE;
	}
	/* Every packet carries our credit: no separate update is owed. */
	c->fwd_told = c->fwd_cnt;
	c->pending &= ~VSOCK_P_CREDIT_UPDATE;
	if (op == VSOCK_OP_REQUEST)
		c->request_sent = true;
	if (op == VSOCK_OP_RW) {
		c->tx_cnt += (uint32_t)len;
		v->tx_bytes += (uint64_t)len;
		/* Out of credit: ask, in case the guest only answers. */
		if (!peer_free(c) && !c->credit_asked) {
			c->credit_asked = true;
			c->pending |= VSOCK_P_CREDIT_REQUEST;
		}
	}
	update(c);
	return VSOCK_HDR_SIZE + (int)len;
}

/* "CONNECT <port>\n": the port in *port, or false. */
static bool parse_connect(const char *line, uint32_t *port)
{
	unsigned long long val = 0;
	const char *s = line + 8;

	if (strncmp(line, "CONNECT ", 8) || !*s)
		return false;
	for (; isdigit((unsigned char)*s) && s - line < 8 + 10; s++)
		val = val * 10 + (unsigned)(*s - '0');
	if (*s || val > UINT32_MAX)
		return false;
	*port = (uint32_t)val;
	return true;
}

static uint32_t alloc_port(struct vsock *v, uint32_t pport)
{
	unsigned i;
	uint32_t p = VSOCK_PORT_BASE;

	/* At most VSOCK_MAX_CONNS ports are taken, so this finds one. */
	for (i = 0; i <= VSOCK_MAX_CONNS; i++) {
		p = v->next_port;
		v->next_port = v->next_port == UINT32_MAX ? VSOCK_PORT_BASE : v->next_port + 1;
		if (!vsock_conn_find(v, p, pport))
			break;
	}
	return p;
}

/* Read the client's CONNECT line without consuming a byte past it: what
 * follows is stream data for the guest. */
static void hello_read(struct vsock_conn *c)
{
	char *p = c->line + c->line_len, *nl;
	size_t room = sizeof(c->line) - 1 - c->line_len;
	ssize_t n = recv(c->fd, p, room, MSG_PEEK);
	uint32_t port;
	size_t take;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		vsock_conn_free(c);
		return;
	}
	nl = memchr(p, '\n', (size_t)n);
	take = nl ? (size_t)(nl - p) + 1 : (size_t)n;
	if (recv(c->fd, p, take, 0) != (ssize_t)take) {
		vsock_conn_free(c);
		return;
	}
	c->line_len += (unsigned)take;
	if (!nl) {
		if (c->line_len == sizeof(c->line) - 1) {
			vsock_log(c->v, "host client sent no CONNECT line; closed");
			vsock_conn_free(c);
		}
		return;
	}
	*nl = 0;
	if (!parse_connect(c->line, &port)) {
		vsock_log(c->v, "host client sent a bad CONNECT line; closed");
		vsock_conn_free(c);
		return;
	}
	ev_io_stop(c->v->loop, &c->rd);
	ev_timer_stop(c->v->loop, &c->timer);
	conn_hash(c, alloc_port(c->v, port), port);
	c->state = VSOCK_CONNECTING;
	c->pending = VSOCK_P_REQUEST;
	c->deadline = ev_now(c->v->loop) + c->v->connect_s;
	start_timer(c, VSOCK_CONNECT_CHECK);
	update(c);
}

/* A host-initiated connect waits for the guest's RESPONSE for as long as
 * its client does, up to v->connect_s: on a loaded host a guest may not run
 * for seconds, and only the client knows how long it can wait. */
static void connect_check(struct vsock_conn *c)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
	ev_tstamp left = c->deadline - ev_now(c->v->loop);

	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP)) {
		conn_reset(c); /* the client gave up */
		return;
	}
	if (left <= 0) {
		if (c->request_sent)
			vsock_log(c->v,
			          "the guest did not answer a connection to its port %u within "
			          "%.0f s; reset",
			          c->pport, c->v->connect_s);
		else
			vsock_log(c->v,
			          "the guest's driver took no connection to port %u within %.0f s; "
			          "closed",
			          c->pport, c->v->connect_s);
		conn_reset(c);
		return;
	}
	start_timer(c, left < VSOCK_CONNECT_CHECK ? left : VSOCK_CONNECT_CHECK);
}

bool vsock_conn_accept(struct vsock *v, int fd)
{
	struct vsock_conn *c = conn_new(v, fd, VSOCK_HELLO);

	if (!c)
		return false;
	ev_io_start(v->loop, &c->rd);
	start_timer(c, VSOCK_HELLO_TIMEOUT);
	return true;
}

static void rd_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct vsock_conn *c = w->data;
	struct vsock *v = c->v;

	pthread_mutex_lock(&v->dev->lock);
	if (!vsock_sync_reset(v)) {
		if (c->state == VSOCK_HELLO) {
			hello_read(c);
		} else {
			kiln_trace(v->dev->vm->cfg.trace_fd, KILN_TRACE_VMM_READ);
			/* Read when a receive buffer is at hand (vsock_rx_pump). */
			c->readable = true;
			update(c);
		}
		vsock_rx_pump(v);
	}
	pthread_mutex_unlock(&v->dev->lock);
}

static void wr_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct vsock_conn *c = w->data;
	struct vsock *v = c->v;

	pthread_mutex_lock(&v->dev->lock);
	if (!vsock_sync_reset(v)) {
		vsock_conn_flush(c);
		credit_check(c);
		check_done(c);
		update(c);
		vsock_rx_pump(v);
	}
	pthread_mutex_unlock(&v->dev->lock);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct vsock_conn *c = w->data;
	struct vsock *v = c->v;

	pthread_mutex_lock(&v->dev->lock);
	if (!vsock_sync_reset(v)) {
		if (c->state == VSOCK_HELLO)
			vsock_conn_free(c);
		else if (c->state == VSOCK_CONNECTING)
			connect_check(c);
		else
			conn_reset(c);
		vsock_rx_pump(v);
	}
	pthread_mutex_unlock(&v->dev->lock);
}
