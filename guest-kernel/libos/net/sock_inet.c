/* SPDX-License-Identifier: MIT */
/*
 * AF_INET and AF_INET6 without a TCP/IP stack: the only network is the
 * loopback interface, and a connection on it is two sockets paired in
 * memory (sockpair.c), as AF_UNIX stream sockets are. Addresses are kept
 * as IPv6 ones (IPv4 as ::ffff:a.b.c.d) so one table of bound ports per
 * protocol serves both families, with Linux's rules for sharing a port
 * (SO_REUSEADDR, SO_REUSEPORT, IPV6_V6ONLY).
 *
 *   SOCK_STREAM  TCP: connect() finds the listener bound to the
 *                destination and queues the server's end for accept();
 *                a non-blocking connect() says EINPROGRESS, as Linux's
 *                does even over loopback
 *   SOCK_DGRAM   UDP: a datagram goes to the socket bound to its
 *                destination, or is dropped (a connected sender then sees
 *                ECONNREFUSED, as from an ICMP port unreachable)
 *
 * The local addresses are 127.0.0.0/8 and ::1. A TCP connection to an
 * address elsewhere is carried over vsock to kilnd (sock_inet_egress.c),
 * which connects from the host if the sandbox's policy allows; a UDP
 * datagram to an address elsewhere goes to kilnd too (sock_inet_udp.c),
 * which sends it from the host under the same policy. Ephemeral ports
 * come from 32768-60999.
 */
#include <asm/socket.h>

#include <kiln/net.h>

#include "errno_k.h"
#include "mm.h"
#include "sock_inet.h"

#define PORT_FIRST 32768 /* net.ipv4.ip_local_port_range */
#define PORT_LAST  60999
#define UDP_MAX4   65507 /* the largest UDP payload over IPv4 ... */
#define UDP_MAX6   65527 /* ... and IPv6 */

struct sockaddr_in_k {
	uint16_t family;
	uint16_t port; /* network byte order */
	uint8_t addr[4];
	uint8_t zero[8];
};

struct sockaddr_in6_k {
	uint16_t family;
	uint16_t port;
	uint32_t flowinfo;
	uint8_t addr[16];
	uint32_t scope_id;
};

#define SIN6_LEN_MIN 24 /* RFC 2133's sockaddr_in6, without scope_id */

static const struct sock_ops inet_ops;

static struct inet_sk *tcp_bound, *udp_bound;
static unsigned int port_cursor;

/* ---------------------------------------------------------------- addresses */

static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static uint16_t swab16(uint16_t v)
{
	return (uint16_t)((v >> 8) | (v << 8));
}

static bool is_v4(const struct inet_addr *a)
{
	return !memcmp(a->b, v4_prefix, sizeof(v4_prefix));
}

bool inet_is_v4(const struct inet_addr *a)
{
	return is_v4(a);
}

static bool is_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static bool is_any(const struct inet_addr *a)
{
	return is_v4(a) ? is_zero(a->b + 12, 4) : is_zero(a->b, 16);
}

static bool is_loopback(const struct inet_addr *a)
{
	if (is_v4(a))
		return a->b[12] == 127;
	return is_zero(a->b, 15) && a->b[15] == 1;
}

static bool addr_eq(const struct inet_addr *a, const struct inet_addr *b)
{
	return !memcmp(a->b, b->b, 16);
}

static struct inet_addr v4_addr(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	struct inet_addr r;

	memcpy(r.b, v4_prefix, 12);
	r.b[12] = a;
	r.b[13] = b;
	r.b[14] = c;
	r.b[15] = d;
	return r;
}

struct inet_addr inet_guest_addr(const struct inet_addr *d)
{
	static const uint8_t g4[4] = KILN_NET_GUEST4, g6[16] = KILN_NET_GUEST6;
	struct inet_addr r;

	if (is_v4(d))
		return v4_addr(g4[0], g4[1], g4[2], g4[3]);
	memcpy(r.b, g6, 16);
	return r;
}

static struct inet_addr any_of(int family)
{
	struct inet_addr r = {0};

	return family == AF_INET ? v4_addr(0, 0, 0, 0) : r;
}

static struct inet_addr loopback_for(const struct inet_addr *dst)
{
	struct inet_addr r = {0};

	if (is_v4(dst))
		return v4_addr(127, 0, 0, 1);
	r.b[15] = 1;
	return r;
}

/* A sockaddr of the socket's family into a and port; the family checks of
 * Linux's bind and connect. */
static int addr_in(const struct inet_sk *is, const void *addr, int len, bool bind,
                   struct inet_addr *a, uint16_t *port)
{
	uint16_t family = len >= 2 ? *(const uint16_t *)addr : 0;

	if (is->family == AF_INET) {
		const struct sockaddr_in_k *sin = addr;

		if (len < (int)sizeof(*sin))
			return -EINVAL;
		/* Linux lets bind() take AF_UNSPEC with INADDR_ANY, for old programs. */
		if (family != AF_INET && !(bind && family == AF_UNSPEC && is_zero(sin->addr, 4)))
			return -EAFNOSUPPORT;
		*a = v4_addr(sin->addr[0], sin->addr[1], sin->addr[2], sin->addr[3]);
		*port = swab16(sin->port);
		return 0;
	}
	if (len < SIN6_LEN_MIN)
		return -EINVAL;
	if (family != AF_INET6)
		return -EAFNOSUPPORT;
	memcpy(a->b, ((const struct sockaddr_in6_k *)addr)->addr, 16);
	*port = swab16(((const struct sockaddr_in6_k *)addr)->port);
	return 0;
}

int inet_addr_in_any(const void *addr, int len, struct inet_addr *a, uint16_t *port)
{
	uint16_t family = len >= 2 ? *(const uint16_t *)addr : 0;

	if (family == AF_INET && len >= (int)sizeof(struct sockaddr_in_k)) {
		const struct sockaddr_in_k *sin = addr;

		*a = v4_addr(sin->addr[0], sin->addr[1], sin->addr[2], sin->addr[3]);
		*port = swab16(sin->port);
		return 0;
	}
	if (family == AF_INET6 && len >= SIN6_LEN_MIN) {
		memcpy(a->b, ((const struct sockaddr_in6_k *)addr)->addr, 16);
		*port = swab16(((const struct sockaddr_in6_k *)addr)->port);
		return 0;
	}
	return -EINVAL;
}

int inet_addr_out(int family, const struct inet_addr *a, uint16_t port, void *out)
{
	if (family == AF_INET) {
		struct sockaddr_in_k sin = {.family = AF_INET, .port = swab16(port)};

		memcpy(sin.addr, a->b + 12, 4);
		memcpy(out, &sin, sizeof(sin));
		return sizeof(sin);
	} else {
		struct sockaddr_in6_k sin6 = {.family = AF_INET6, .port = swab16(port)};

		memcpy(sin6.addr, a->b, 16);
		memcpy(out, &sin6, sizeof(sin6));
		return sizeof(sin6);
	}
}

/* 0 for a destination on this machine (the unspecified address means
 * loopback, as in Linux), 1 for one elsewhere, or -ENETUNREACH. */
static int dest_check(const struct inet_sk *is, struct inet_addr *d)
{
	if (is_v4(d) && is->family == AF_INET6 && is->v6only)
		return -ENETUNREACH;
	if (is_any(d))
		*d = loopback_for(d);
	return is_loopback(d) ? 0 : 1;
}

/* ---------------------------------------------------------------- ports */

static struct inet_sk **table_of(const struct inet_sk *is)
{
	return is->e.type == SOCK_STREAM ? &tcp_bound : &udp_bound;
}

/* Could a and b (one of them is) receive for the same address? */
static bool overlap(const struct inet_sk *a, const struct inet_addr *aaddr, const struct inet_sk *b)
{
	const struct inet_addr *baddr = &b->laddr;

	if (addr_eq(aaddr, baddr))
		return true;
	/* An IPv6 wildcard covers IPv4 too unless IPV6_V6ONLY. */
	if (!is_v4(aaddr) && is_any(aaddr))
		return !is_v4(baddr) || !a->v6only;
	if (!is_v4(baddr) && is_any(baddr))
		return !is_v4(aaddr) || !b->v6only;
	return is_v4(aaddr) && is_v4(baddr) && (is_any(aaddr) || is_any(baddr));
}

/* May is take addr:port? As Linux: to bind, SO_REUSEADDR on both (TCP:
 * and the other not listening) or SO_REUSEPORT on both; to listen, no
 * other listener there unless SO_REUSEPORT on both. */
static bool port_free(const struct inet_sk *is, const struct inet_addr *addr, uint16_t port,
                      bool listening)
{
	const struct socket *s = is->sock;

	for (const struct inet_sk *b = *table_of(is); b; b = b->bnext) {
		const struct socket *bs = b->sock;

		if (b == is || b->lport != port || !overlap(is, addr, b))
			continue;
		if (s->reuseport && bs && bs->reuseport)
			continue;
		if (listening ? b->e.state != SP_LISTEN
		              : s->reuseaddr && bs && bs->reuseaddr &&
		                    (is->e.type == SOCK_DGRAM || b->e.state != SP_LISTEN))
			continue;
		return false;
	}
	return true;
}

static void table_add(struct inet_sk *is, const struct inet_addr *addr, uint16_t port)
{
	struct inet_sk **t = table_of(is);

	is->laddr = *addr;
	is->lport = port;
	is->bound = true;
	is->bnext = *t;
	*t = is;
}

static void table_del(struct inet_sk *is)
{
	for (struct inet_sk **pp = table_of(is); *pp; pp = &(*pp)->bnext) {
		if (*pp == is) {
			*pp = is->bnext;
			break;
		}
	}
	is->bound = false;
}

/* Bind to addr and a free ephemeral port. */
static int bind_ephemeral(struct inet_sk *is, const struct inet_addr *addr)
{
	unsigned int n = PORT_LAST - PORT_FIRST + 1;

	for (unsigned int i = 0; i < n; i++) {
		uint16_t port = (uint16_t)(PORT_FIRST + port_cursor++ % n);

		if (port_free(is, addr, port, false)) {
			table_add(is, addr, port);
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}

/* The socket that takes what is sent to d:port (type's table; listening
 * sockets only for TCP), the most specific binding first. */
static struct inet_sk *find(struct inet_sk *t, const struct inet_addr *d, uint16_t port)
{
	struct inet_sk *best = NULL;
	int best_score = 0;

	for (struct inet_sk *b = t; b; b = b->bnext) {
		int score = 0;

		if (b->lport != port || (b->e.type == SOCK_STREAM && b->e.state != SP_LISTEN))
			continue;
		if (addr_eq(&b->laddr, d))
			score = 3;
		else if (is_any(&b->laddr) && is_v4(&b->laddr) == is_v4(d))
			score = 2;
		else if (is_any(&b->laddr) && !is_v4(&b->laddr) && !b->v6only)
			score = 1;
		if (score > best_score) {
			best = b;
			best_score = score;
		}
	}
	return best;
}

/* ---------------------------------------------------------------- lifetime */

static void inet_destroy(struct sp_end *e)
{
	kfree(container_of(e, struct inet_sk, e));
}

static struct inet_sk *inet_alloc(int family, int type)
{
	struct inet_sk *is = kzalloc(sizeof(*is));

	if (!is)
		return NULL;
	sp_init(&is->e, type, inet_destroy);
	is->e.tcp = type == SOCK_STREAM;
	is->family = family;
	is->laddr = any_of(family);
	is->paddr = any_of(family);
	return is;
}

static void attach(struct socket *s, struct inet_sk *is)
{
	s->ops = &inet_ops;
	s->priv = is;
	is->sock = s;
}

/* ---------------------------------------------------------------- setup */

static int inet_bind(struct socket *s, const void *addr, int len)
{
	struct inet_sk *is = s->priv;
	struct inet_addr a;
	uint16_t port;
	int err = addr_in(is, addr, len, true, &a, &port);

	if (err)
		return err;
	if (is->bound)
		return -EINVAL;
	if (is_v4(&a) && is->family == AF_INET6 && is->v6only)
		return -EINVAL;
	if (!is_any(&a) && !is_loopback(&a))
		return -EADDRNOTAVAIL;
	if (!port)
		return bind_ephemeral(is, &a) ? -EADDRINUSE : 0;
	if (!port_free(is, &a, port, false))
		return -EADDRINUSE;
	table_add(is, &a, port);
	return 0;
}

static int inet_listen(struct socket *s, int backlog)
{
	struct inet_sk *is = s->priv;
	struct inet_addr any = any_of(is->family);

	if (is->e.type != SOCK_STREAM)
		return -EOPNOTSUPP;
	if (is->e.state == SP_CONNECTED || is->eg)
		return -EINVAL;
	if (!is->bound && bind_ephemeral(is, &any))
		return -EADDRINUSE;
	if (is->e.state != SP_LISTEN && !port_free(is, &is->laddr, is->lport, true))
		return -EADDRINUSE;
	sp_listen(&is->e, backlog);
	listen_announce(is, is_any(&is->laddr));
	return 0;
}

/* Give the source address (and, unbound, a port) for sending to d. */
static int bind_source(struct inet_sk *is, const struct inet_addr *d)
{
	struct inet_addr src = is_loopback(d) ? loopback_for(d) : inet_guest_addr(d);

	if (is->bound) {
		if (is_any(&is->laddr))
			is->laddr = src;
		return 0;
	}
	return bind_ephemeral(is, &src);
}

static int tcp_connect(struct socket *s, struct inet_sk *is, const void *addr, int len,
                       bool nonblock)
{
	struct inet_sk *l, *c;
	struct inet_addr d;
	uint16_t port;
	int err;

	if (is->e.state == SP_CONNECTED) {
		if (is->connect_told)
			return -EISCONN;
		is->connect_told = true; /* the first call after EINPROGRESS */
		return 0;
	}
	if (is->e.state == SP_LISTEN)
		return -EISCONN;
	if (is->eg) {
		err = egress_connect(s, is, nonblock);
		if (err != -ENOTCONN)
			return err;
		/* the last attempt failed and was reported: a new one */
	}
	if (is->e.err) { /* the last non-blocking attempt's failure */
		err = is->e.err;
		is->e.err = 0;
		return -err;
	}
	if (len >= 2 && *(const uint16_t *)addr == AF_UNSPEC)
		return 0;
	err = addr_in(is, addr, len, false, &d, &port);
	if (!err)
		err = dest_check(is, &d);
	if (err < 0)
		return err;
	if (err) { /* elsewhere: through kilnd */
		if (is->bound && !is_any(&is->laddr))
			return -ENETUNREACH; /* a loopback source cannot leave */
		err = bind_source(is, &d);
		if (!err)
			err = egress_start(is, &d, port);
		if (err)
			return err;
		return nonblock ? -EINPROGRESS : egress_connect(s, is, false);
	}
	is->e.shut = 0;
	is->e.reset = false;
	for (;;) {
		l = find(tcp_bound, &d, port);
		if (!l) {
			if (!nonblock)
				return -ECONNREFUSED;
			/* The refusal arrives after the call, as Linux's RST does. */
			is->e.err = ECONNREFUSED;
			is->e.shut = SP_SHUT_BOTH;
			is->e.reset = true;
			return -EINPROGRESS;
		}
		if (nonblock || !sp_acc_full(&l->e))
			break;
		err = sp_connect_wait(&l->e, s, false);
		if (err == -ECONNREFUSED)
			continue; /* the listener is gone: look again */
		if (err)
			return err;
		if (is->e.state != SP_OPEN)
			return -EISCONN;
	}
	err = bind_source(is, &d);
	if (err)
		return err;
	c = inet_alloc(l->family, SOCK_STREAM);
	if (!c)
		return -ENOMEM;
	c->laddr = d;
	c->lport = port;
	c->paddr = is->laddr;
	c->pport = is->lport;
	/* The client the agent forwards (KILN_SO_PEER), if the listener's
	 * family can name it. */
	if (is->as_peer && (l->family == AF_INET6 || is_v4(&is->as_addr))) {
		c->paddr = is->as_addr;
		c->pport = is->as_port;
	}
	c->v6only = l->v6only;
	memcpy(c->opts, l->opts, sizeof(c->opts));
	c->nopts = l->nopts;
	is->paddr = d;
	is->pport = port;
	sp_link(&is->e, &c->e);
	sp_enqueue(&l->e, &c->e);
	is->connect_told = !nonblock;
	return nonblock ? -EINPROGRESS : 0;
}

static int udp_connect(struct inet_sk *is, const void *addr, int len)
{
	struct inet_addr d;
	uint16_t port;
	int err;

	if (len >= 2 && *(const uint16_t *)addr == AF_UNSPEC) {
		is->connected = false;
		is->paddr = any_of(is->family);
		is->pport = 0;
		return 0;
	}
	err = addr_in(is, addr, len, false, &d, &port);
	if (!err)
		err = dest_check(is, &d);
	/* Elsewhere too, as Linux's connect() sends nothing: getaddrinfo()
	 * learns source addresses so to sort its answers; the policy judges
	 * each datagram when it is sent (sock_inet_udp.c). */
	if (err >= 0)
		err = bind_source(is, &d);
	if (err)
		return err;
	is->paddr = d;
	is->pport = port;
	is->connected = true;
	is->e.err = 0;
	return 0;
}

static int inet_connect(struct socket *s, const void *addr, int len, bool nonblock)
{
	struct inet_sk *is = s->priv;

	if (is->e.type == SOCK_DGRAM)
		return udp_connect(is, addr, len);
	return tcp_connect(s, is, addr, len, nonblock);
}

static int inet_accept(struct socket *s, struct socket *ns, bool nonblock)
{
	struct inet_sk *is = s->priv;
	struct sp_end *c;
	int err;

	if (is->e.type != SOCK_STREAM)
		return -EOPNOTSUPP;
	err = sp_accept(&is->e, s, nonblock, &c);
	if (err)
		return err;
	attach(ns, container_of(c, struct inet_sk, e));
	/* The connection inherits the listener's options, as Linux's clone. */
	ns->rcvbuf = s->rcvbuf;
	ns->sndbuf = s->sndbuf;
	ns->keepalive = s->keepalive;
	ns->reuseaddr = s->reuseaddr;
	ns->linger_onoff = s->linger_onoff;
	ns->linger_secs = s->linger_secs;
	return 0;
}

static int inet_getname(struct socket *s, void *addr, bool peer)
{
	struct inet_sk *is = s->priv;

	if (!peer)
		return inet_addr_out(is->family, &is->laddr, is->lport, addr);
	if (is->eg) {
		if (!egress_connected(is))
			return -ENOTCONN;
	} else if (is->e.type == SOCK_DGRAM ? !is->connected
	                                    : is->e.state != SP_CONNECTED || is->e.reset) {
		return -ENOTCONN;
	}
	return inet_addr_out(is->family, &is->paddr, is->pport, addr);
}

/* ---------------------------------------------------------------- data */

static long udp_send(struct socket *s, struct inet_sk *is, struct sock_iter *it, const void *addr,
                     int addrlen, int flags)
{
	size_t max = is->family == AF_INET ? UDP_MAX4 : UDP_MAX6, n = it->left;
	struct inet_sk *r;
	struct sp_addr *from;
	char sa[SOCK_ADDR_MAX];
	struct inet_addr d = is->paddr, src;
	uint16_t port = is->pport;
	long err, remote;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP;
	if (addr) {
		err = addr_in(is, addr, addrlen, false, &d, &port);
		if (err)
			return err;
		if (!port)
			return -EINVAL;
	} else if (!is->connected) {
		return -EDESTADDRREQ;
	}
	if (n > max)
		return -EMSGSIZE;
	if (is->e.err) {
		err = -is->e.err;
		is->e.err = 0;
		return err;
	}
	if (is->e.shut & SP_SHUT_WR)
		return -EPIPE;
	remote = dest_check(is, &d);
	if (remote == 1 && is->bound && is_loopback(&is->laddr))
		remote = -ENETUNREACH; /* a loopback source cannot leave */
	if (remote < 0)
		return remote;
	if (!is->bound) {
		struct inet_addr any = any_of(is->family);

		err = bind_ephemeral(is, &any);
		if (err)
			return err;
	}
	if (remote)
		return udp_relay_send(s, is, it, &d, port);
	src = is_any(&is->laddr) ? loopback_for(&d) : is->laddr;
	r = find(udp_bound, &d, port);
	if (r && r->connected && !(r->pport == is->lport && addr_eq(&r->paddr, &src)))
		r = NULL; /* a connected socket takes only its peer's datagrams */
	if (!r) {
		if (is->connected && !addr)
			is->e.err = ECONNREFUSED; /* ICMP port unreachable */
		return (long)n;
	}
	if (r->e.rx.bytes + n > (size_t)(r->sock ? r->sock->rcvbuf : SOCK_BUF_DEFAULT) ||
	    (r->e.shut & SP_SHUT_RD))
		return (long)n; /* dropped, as UDP does */
	from = sp_addr_new(sa, inet_addr_out(r->family, &src, is->lport, sa));
	if (!from)
		return -ENOMEM;
	err = sp_deliver(&r->e, it, from);
	sp_addr_put(from);
	return err;
}

static long inet_sendmsg(struct socket *s, struct sock_iter *it, const void *addr, int addrlen,
                         int flags)
{
	struct inet_sk *is = s->priv;

	if (is->e.type == SOCK_DGRAM)
		return udp_send(s, is, it, addr, addrlen, flags);
	/* TCP ignores an address; data goes to the connection. */
	if (is->eg)
		return egress_send(s, is, it, flags);
	return sp_send(&is->e, s, it, flags, NULL);
}

static long inet_recvmsg(struct socket *s, struct sock_iter *it, void *addr, int *addrlen,
                         int flags, int *msg_flags)
{
	struct inet_sk *is = s->priv;
	long err;

	if (is->eg)
		return egress_recv(s, is, it, flags);
	if (is->e.type == SOCK_STREAM && is->e.state != SP_CONNECTED) {
		if (is->e.state == SP_LISTEN || !is->e.err)
			return -ENOTCONN;
		err = -is->e.err;
		is->e.err = 0;
		return err;
	}
	return sp_recv(&is->e, s, it, flags, msg_flags, addr, addrlen, false);
}

static int inet_shutdown(struct socket *s, int how)
{
	struct inet_sk *is = s->priv;

	if (is->eg)
		return egress_shutdown(is, how);
	if (is->e.state == SP_LISTEN && how != SHUT_WR) {
		sp_unlisten(&is->e); /* wakes accept(), which fails with EINVAL */
		return 0;
	}
	if (is->e.type == SOCK_STREAM ? is->e.state != SP_CONNECTED : !is->connected) {
		sp_shutdown(&is->e, how); /* Linux sets it anyway, to wake pollers */
		return -ENOTCONN;
	}
	return sp_shutdown(&is->e, how);
}

static unsigned int inet_poll(struct socket *s)
{
	struct inet_sk *is = s->priv;

	if (is->eg)
		return egress_poll(is);
	return sp_poll(&is->e, s);
}

static void inet_poll_wait(struct socket *s, struct poll_table *pt)
{
	struct inet_sk *is = s->priv;

	if (is->eg)
		egress_poll_wait(is, pt);
	sp_poll_wait(&is->e, pt);
}

static void inet_release(struct socket *s)
{
	struct inet_sk *is = s->priv;

	if (!is)
		return;
	listen_release(is);
	is->sock = NULL;
	if (is->eg)
		egress_release(is);
	udp_relay_release(is);
	if (is->bound)
		table_del(is);
	/* SO_LINGER with a zero timeout closes with a reset. */
	sp_release(&is->e, s->linger_onoff && !s->linger_secs);
}

static const struct sock_ops inet_ops = {
    .bind = inet_bind,
    .connect = inet_connect,
    .listen = inet_listen,
    .accept = inet_accept,
    .getname = inet_getname,
    .shutdown = inet_shutdown,
    .sendmsg = inet_sendmsg,
    .recvmsg = inet_recvmsg,
    .getsockopt = inet_getsockopt,
    .setsockopt = inet_setsockopt,
    .poll = inet_poll,
    .poll_wait = inet_poll_wait,
    .ioctl = inet_ioctl,
    .release = inet_release,
};

/* ---------------------------------------------------------------- the families */

static int inet_create(struct socket *s, int protocol)
{
	struct inet_sk *is;

	switch (s->type) {
	case SOCK_STREAM:
		if (protocol && protocol != IPPROTO_TCP)
			return -EPROTONOSUPPORT;
		s->protocol = IPPROTO_TCP;
		break;
	case SOCK_DGRAM:
		if (protocol && protocol != IPPROTO_UDP)
			return -EPROTONOSUPPORT;
		s->protocol = IPPROTO_UDP;
		break;
	default:
		return -ESOCKTNOSUPPORT;
	}
	is = inet_alloc(s->family, s->type);
	if (!is)
		return -ENOMEM;
	attach(s, is);
	return 0;
}

const struct sock_family inet_family = {
    .family = AF_INET,
    .create = inet_create,
};

const struct sock_family inet6_family = {
    .family = AF_INET6,
    .create = inet_create,
};
