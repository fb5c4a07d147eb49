/* SPDX-License-Identifier: MIT */
/* One guest connection on the sandbox's egress listener: the hello, the
 * decision, the host's non-blocking connect under a timeout, then bytes
 * both ways. Each direction has one bounded buffer (relay.c: a kernel pipe
 * once the connection is open, spliced); a full buffer stops
 * reading from its source until the destination takes some, so a slow
 * side slows the other instead of growing kilnd. EOF one way becomes a
 * shutdown of the other side's writing (half-close), and the connection
 * ends when both ways have ended or on any error. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kiln/net.h>
#include <kiln/trace.h>

#include "net/net_int.h"
#include "util.h"

enum econn_state { EC_HELLO, EC_CONNECTING, EC_OPEN, EC_DNS };

struct econn {
	struct net_sb *ns;
	struct econn *next, *prev;
	int gfd, rfd; /* the guest's stream (from the VMM), the host's socket */
	ev_io grd, gwr, rrd, rwr;
	ev_timer timer;
	enum econn_state st;
	struct kiln_net_hello hello;
	size_t hello_got;
	struct relay up, down; /* guest -> destination, destination -> guest */
	struct dns_stream *dns;
	char dst[64];      /* "ADDR:PORT" for the log */
	uint8_t addr[16];  /* the guest's destination (IPv4 as ::ffff:a.b.c.d) */
	uint16_t dst_port; /* and port, judged again when the policy changes */
	/* host.kiln.internal: the other loopback, tried if the first refuses
	 * (a server may listen on 127.0.0.1 or on ::1 only). */
	uint8_t alt[16];
	uint16_t port;
	bool has_alt;
};

static struct ev_loop *loop_of(struct econn *ec)
{
	return ec->ns->loop;
}

/* Hop timestamps, with KILN_TRACE (kiln/trace.h). */
static void trace(struct net_sb *ns, enum kiln_trace_point point)
{
	kiln_trace(ns->nc ? ns->nc->trace_fd : -1, point);
}

static void econn_free(struct econn *ec)
{
	struct ev_loop *loop = loop_of(ec);
	struct net_sb *ns = ec->ns;

	ev_io_stop(loop, &ec->grd);
	ev_io_stop(loop, &ec->gwr);
	ev_io_stop(loop, &ec->rrd);
	ev_io_stop(loop, &ec->rwr);
	ev_timer_stop(loop, &ec->timer);
	dns_stream_free(ec->dns);
	if (ec->gfd >= 0)
		close(ec->gfd);
	if (ec->rfd >= 0)
		close(ec->rfd);
	relay_free(&ec->up);
	relay_free(&ec->down);
	if (ec->prev)
		ec->prev->next = ec->next;
	else
		ns->conns = ec->next;
	if (ec->next)
		ec->next->prev = ec->prev;
	ns->nconns--;
	free(ec);
}

/* The answer to the hello: on a fresh stream 8 bytes always fit. */
static int reply(struct econn *ec, uint32_t status)
{
	struct kiln_net_reply r = {
	    .magic = KILN_NET_MAGIC, .version = KILN_NET_VERSION, .status = status};

	ssize_t n = send(ec->gfd, &r, sizeof(r), MSG_NOSIGNAL);

	trace(ec->ns, KILN_TRACE_KILND_REPLY);
	return n == (ssize_t)sizeof(r) ? 0 : -1;
}

static void refuse(struct econn *ec, uint32_t status)
{
	reply(ec, status);
	econn_free(ec);
}

/* The host's connect failed with err: what the guest's connect() says. */
static uint32_t status_of(int err)
{
	switch (err) {
	case ECONNREFUSED:
		return KILN_NET_ECONNREFUSED;
	case ETIMEDOUT:
		return KILN_NET_ETIMEDOUT;
	case EHOSTUNREACH:
		return KILN_NET_EHOSTUNREACH;
	default: /* ENETUNREACH, EADDRNOTAVAIL, EAFNOSUPPORT (no IPv6) ... */
		return KILN_NET_ENETUNREACH;
	}
}

static void watch(struct ev_loop *loop, ev_io *w, bool on)
{
	if (on && !ev_is_active(w))
		ev_io_start(loop, w);
	else if (!on && ev_is_active(w))
		ev_io_stop(loop, w);
}

/* Start and stop the watchers for what can move now. */
static void update(struct econn *ec)
{
	struct ev_loop *loop = loop_of(ec);
	bool open = ec->st == EC_OPEN;

	watch(loop, &ec->grd, ec->st == EC_HELLO || relay_room(&ec->up) > 0);
	watch(loop, &ec->gwr, relay_held(&ec->down) > 0);
	watch(loop, &ec->rrd, open && relay_room(&ec->down) > 0);
	watch(loop, &ec->rwr, ec->st == EC_CONNECTING || (open && relay_held(&ec->up) > 0));
}

/* Over? Then free it: true. */
static bool done(struct econn *ec)
{
	if ((ec->st == EC_OPEN && ec->up.shut && ec->down.shut) ||
	    (ec->st == EC_DNS && ec->up.eof && !ec->down.len)) {
		econn_free(ec);
		return true;
	}
	return false;
}

/* ---------------------------------------------------------------- DNS */

static void dns_out(void *ctx, const uint8_t *frame, size_t n)
{
	struct econn *ec = ctx;
	struct relay *p = &ec->down;

	if (NET_BUF - p->len < n)
		return; /* the guest does not read its answers: dropped */
	if (p->off + p->len + n > NET_BUF) {
		memmove(p->buf, p->buf + p->off, p->len);
		p->off = 0;
	}
	memcpy(p->buf + p->off + p->len, frame, n);
	p->len += n;
	watch(loop_of(ec), &ec->gwr, true);
}

/* Whole messages in the up buffer go to the resolver: false if the
 * stream is no DNS. */
static bool dns_feed(struct econn *ec)
{
	long n = dns_stream_input(ec->dns, ec->up.buf + ec->up.off, ec->up.len);

	if (n < 0)
		return false;
	ec->up.off += (size_t)n;
	ec->up.len -= (size_t)n;
	if (!ec->up.len)
		ec->up.off = 0;
	return true;
}

/* ---------------------------------------------------------------- connecting */

static void connected(struct econn *ec)
{
	ev_timer_stop(loop_of(ec), &ec->timer);
	if (reply(ec, KILN_NET_OK)) {
		econn_free(ec);
		return;
	}
	ec->st = EC_OPEN;
	ec->ns->connections++;
	relay_splice(&ec->up);
	relay_splice(&ec->down);
	if (relay_drain(&ec->up, ec->rfd, ec->down.shut, &ec->ns->bytes_out)) {
		econn_free(ec);
		return;
	}
	if (!done(ec))
		update(ec);
}

static void connect_to(struct econn *ec, const uint8_t a[16], uint16_t port);

static void connect_failed(struct econn *ec, int err)
{
	if (err == ECONNREFUSED && ec->has_alt) {
		ev_io_stop(loop_of(ec), &ec->rwr);
		close(ec->rfd);
		ec->rfd = -1;
		ec->has_alt = false;
		connect_to(ec, ec->alt, ec->port);
		return;
	}
	refuse(ec, status_of(err));
}

/* The host's connect is over (its socket is writable): how did it go? */
static void connect_result(struct econn *ec)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(ec->rfd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		log_debug("sandbox %s: connection to %s: %s", ec->ns->id, ec->dst,
		          strerror(err ? err : errno));
		connect_failed(ec, err ? err : errno);
		return;
	}
	connected(ec);
}

static void connect_to(struct econn *ec, const uint8_t a[16], uint16_t port)
{
	struct sockaddr_storage ss = {0};
	socklen_t len, tlen = sizeof(struct tcp_info);
	struct tcp_info ti;

	if (net_addr_is_v4(a)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, a + 12, 4);
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, a, 16);
		len = sizeof(*sin6);
	}
	ec->rfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ec->rfd < 0 || relay_alloc(&ec->down)) {
		refuse(ec, KILN_NET_ENETUNREACH);
		return;
	}
	ev_io_set(&ec->rwr, ec->rfd, EV_WRITE);
	ev_io_set(&ec->rrd, ec->rfd, EV_READ);
	if (connect(ec->rfd, (struct sockaddr *)&ss, len) == 0) {
		connected(ec);
		return;
	}
	if (errno != EINPROGRESS) {
		connect_failed(ec, errno);
		return;
	}
	ec->st = EC_CONNECTING;
	/* A connect on the host's loopback (host.kiln.internal, the test
	 * servers) is done by the time connect() returns: answer the guest
	 * now, not a turn of the loop later. One call tells: the socket's
	 * TCP state (open, or open and already ended by the server; a failed
	 * connect is closed: SO_ERROR says why). */
	if (getsockopt(ec->rfd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) == 0 &&
	    ti.tcpi_state != TCP_SYN_SENT) {
		if (ti.tcpi_state == TCP_ESTABLISHED || ti.tcpi_state == TCP_CLOSE_WAIT)
			connected(ec);
		else
			connect_result(ec);
		return;
	}
	ev_timer_stop(loop_of(ec), &ec->timer);
	ev_timer_set(&ec->timer, NET_CONNECT_TIMEOUT, 0);
	ev_timer_start(loop_of(ec), &ec->timer);
	update(ec);
}

/* The hello is in: decide. */
static void decide(struct econn *ec)
{
	static const uint8_t lo4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
	static const uint8_t lo6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	static const uint8_t none[16];
	const struct kiln_net_hello *h = &ec->hello;
	struct net_sb *ns = ec->ns;
	const uint8_t(*host)[16];
	uint8_t a[16] = {0};
	uint16_t port = ntohs(h->port);
	char why[512], as[48];
	size_t nhost;
	enum net_verdict v;

	if (h->magic != KILN_NET_MAGIC || h->version != KILN_NET_VERSION || h->reserved ||
	    (h->flags & ~(KILN_NET_F_DATAGRAM | KILN_NET_F_UDP | KILN_NET_F_LISTEN)) ||
	    h->flags == (KILN_NET_F_DATAGRAM | KILN_NET_F_UDP) ||
	    ((h->flags & KILN_NET_F_LISTEN) &&
	     (h->flags != KILN_NET_F_LISTEN || memcmp(h->addr, none, sizeof(none)) ||
	      !ns->listen)) ||
	    !port || (h->family != KILN_NET_IPV4 && h->family != KILN_NET_IPV6)) {
		refuse(ec, KILN_NET_EPROTO);
		return;
	}
	if (h->flags & KILN_NET_F_LISTEN) { /* the owner's inbound ports */
		int gfd = ec->gfd;

		ec->gfd = -1;
		econn_free(ec);
		ns->listen(ns, gfd, h->family == KILN_NET_IPV6 ? 6 : 4, port);
		return;
	}
	if (h->flags & KILN_NET_F_UDP) { /* every datagram is judged by udp.c */
		int gfd = ec->gfd;

		ec->gfd = -1;
		econn_free(ec); /* its watchers stop before the relay's start */
		udp_relay_start(ns, gfd);
		return;
	}
	if (h->family == KILN_NET_IPV4) {
		a[10] = a[11] = 0xff;
		memcpy(a + 12, h->addr, 4);
	} else {
		memcpy(a, h->addr, 16); /* ::ffff:a.b.c.d is IPv4 from here on */
	}
	memcpy(ec->addr, a, sizeof(ec->addr));
	ec->dst_port = port;
	net_addr_str(a, as);
	snprintf(ec->dst, sizeof(ec->dst), net_addr_is_v4(a) ? "%s:%u" : "[%s]:%u", as, port);
	net_host_addrs(ns->nc, &host, &nhost);
	v = net_policy_check(net_sb_policy(ns), &ns->pins, a, port, host, nhost, now_ms(), why,
	                     sizeof(why));
	if (v == NV_DENY) {
		ns->refused++;
		net_log(ns, "connection to %s refused (EACCES): %s", ec->dst, why);
		refuse(ec, KILN_NET_EACCES);
		return;
	}
	if ((h->flags & KILN_NET_F_DATAGRAM) && v != NV_RESOLVER) {
		refuse(ec, KILN_NET_EPROTO);
		return;
	}
	if (v == NV_RESOLVER) {
		ec->dns = dns_stream_new(ns, h->flags & KILN_NET_F_DATAGRAM, dns_out, ec);
		if (!ec->dns || relay_alloc(&ec->down) || reply(ec, KILN_NET_OK)) {
			econn_free(ec);
			return;
		}
		ev_timer_stop(loop_of(ec), &ec->timer);
		ec->st = EC_DNS;
		if (!dns_feed(ec))
			econn_free(ec);
		else
			update(ec);
		return;
	}
	if (v == NV_HOST) {
		memcpy(ec->alt, net_addr_is_v4(a) ? lo6 : lo4, 16);
		ec->port = port;
		ec->has_alt = true;
	}
	connect_to(ec, v == NV_HOST ? (net_addr_is_v4(a) ? lo4 : lo6) : a, port);
}

/* ---------------------------------------------------------------- events */

static void on_guest_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct econn *ec = w->data;
	ssize_t n;

	if (ec->st == EC_HELLO) {
		n = recv(ec->gfd, (char *)&ec->hello + ec->hello_got,
		         sizeof(ec->hello) - ec->hello_got, 0);
		if (n <= 0) {
			if (n == 0 || (errno != EAGAIN && errno != EINTR))
				econn_free(ec);
			return;
		}
		ec->hello_got += (size_t)n;
		if (ec->hello_got == sizeof(ec->hello)) {
			trace(ec->ns, KILN_TRACE_KILND_HELLO);
			decide(ec);
		}
		return;
	}
	if (relay_fill(&ec->up, ec->gfd) ||
	    (ec->st == EC_OPEN &&
	     relay_drain(&ec->up, ec->rfd, ec->down.shut, &ec->ns->bytes_out)) ||
	    (ec->st == EC_DNS && !dns_feed(ec))) {
		econn_free(ec);
		return;
	}
	if (!done(ec))
		update(ec);
}

static void on_guest_write(struct ev_loop *loop, ev_io *w, int revents)
{
	struct econn *ec = w->data;

	if (relay_drain(&ec->down, ec->gfd, ec->up.shut, &ec->ns->bytes_in)) {
		econn_free(ec);
		return;
	}
	if (!done(ec))
		update(ec);
}

static void on_remote_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct econn *ec = w->data;

	if (relay_fill(&ec->down, ec->rfd) ||
	    relay_drain(&ec->down, ec->gfd, ec->up.shut, &ec->ns->bytes_in)) {
		econn_free(ec);
		return;
	}
	if (!done(ec))
		update(ec);
}

static void on_remote_write(struct ev_loop *loop, ev_io *w, int revents)
{
	struct econn *ec = w->data;

	if (ec->st == EC_CONNECTING) {
		connect_result(ec);
		return;
	}
	if (relay_drain(&ec->up, ec->rfd, ec->down.shut, &ec->ns->bytes_out)) {
		econn_free(ec);
		return;
	}
	if (!done(ec))
		update(ec);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct econn *ec = w->data;

	if (ec->st == EC_CONNECTING) {
		log_debug("sandbox %s: connection to %s timed out", ec->ns->id, ec->dst);
		refuse(ec, KILN_NET_ETIMEDOUT);
	} else {
		econn_free(ec); /* no hello in time */
	}
}

void egress_accept(struct net_sb *ns)
{
	struct ev_loop *loop = ns->loop;
	struct econn *ec;
	int fd;

	while ((fd = accept4(ns->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		trace(ns, KILN_TRACE_KILND_ACCEPT);
		if (ns->nconns >= NET_CONNS_MAX || !(ec = calloc(1, sizeof(*ec)))) {
			struct kiln_net_reply r = {KILN_NET_MAGIC, KILN_NET_VERSION, 0,
			                           KILN_NET_EAGAIN};

			if (send(fd, &r, sizeof(r), MSG_NOSIGNAL) < 0) {
				/* gone already */
			}
			close(fd);
			ns->refused++;
			net_log(ns,
			        "connection refused (EAGAIN): the sandbox has %u open, the most "
			        "it may have",
			        NET_CONNS_MAX);
			continue;
		}
		ec->ns = ns;
		ec->gfd = fd;
		ec->rfd = -1;
		relay_init(&ec->up);
		relay_init(&ec->down);
		ev_io_init(&ec->grd, on_guest_read, fd, EV_READ);
		ev_io_init(&ec->gwr, on_guest_write, fd, EV_WRITE);
		ev_io_init(&ec->rrd, on_remote_read, -1, EV_READ);
		ev_io_init(&ec->rwr, on_remote_write, -1, EV_WRITE);
		ev_timer_init(&ec->timer, on_timer, NET_HELLO_TIMEOUT, 0);
		ec->grd.data = ec->gwr.data = ec->rrd.data = ec->rwr.data = ec->timer.data = ec;
		if (relay_alloc(&ec->up)) {
			close(fd);
			free(ec);
			continue;
		}
		ec->next = ns->conns;
		if (ns->conns)
			ns->conns->prev = ec;
		ns->conns = ec;
		ns->nconns++;
		ev_timer_start(loop, &ec->timer);
		ev_io_start(loop, &ec->grd);
		/* The guest sends its hello behind the stream's REQUEST, so it
		 * is usually here already: decide now, not a loop turn later. */
		on_guest_read(loop, &ec->grd, EV_READ);
	}
}

void egress_close_all(struct net_sb *ns)
{
	while (ns->conns)
		econn_free(ns->conns);
}

void egress_recheck(struct net_sb *ns)
{
	const uint8_t(*host)[16];
	struct econn *ec, *next;
	size_t nhost;
	char why[512];

	net_host_addrs(ns->nc, &host, &nhost);
	for (ec = ns->conns; ec; ec = next) {
		next = ec->next;
		if (ec->st != EC_CONNECTING && ec->st != EC_OPEN)
			continue; /* not decided yet, or the resolver's */
		if (net_policy_check(net_sb_policy(ns), &ns->pins, ec->addr, ec->dst_port, host,
		                     nhost, now_ms(), why, sizeof(why)) != NV_DENY)
			continue;
		ns->refused++;
		net_log(ns, "connection to %s closed: the new policy refuses it: %s", ec->dst, why);
		if (ec->st == EC_CONNECTING)
			refuse(ec, KILN_NET_EACCES);
		else
			econn_free(ec);
	}
}
