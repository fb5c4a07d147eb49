/* SPDX-License-Identifier: MIT */
/*
 * Inbound ports: a TCP port the guest listens on (the wildcard address),
 * reachable at the pod's addresses, as a runc container's is (Services,
 * port-forward). The guest's library OS announces each such listener over
 * the egress listener (KILN_NET_F_LISTEN, include/kiln/net.h; net.c's
 * thread, already in the pod's namespace, runs this too). The shim then
 * listens on the same port and family there, and carries each connection
 * it accepts to the guest's loopback as an agent port stream
 * (control/agent/agent_port.h, over the VM's vsock socket). The listener
 * is closed when the announcement's stream ends: the guest closed its
 * socket, or the VM is gone. Connections already accepted carry on, as on
 * Linux. A listener on the guest's loopback is never announced: private.
 * The guest's server sees each client's own address and port as its peer
 * (CONNECT's peer trailer), as a runc container's server does.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kiln/agent.h>
#include <kiln/net.h>

#include "agent/agent_client.h"
#include "agent/agent_port.h"
#include "http/buf.h"
#include "net/net_int.h"
#include "shim.h"

#define IN_PORTS_MAX 256        /* announced listeners per VM */
#define IN_CONNS_MAX 256        /* connections carried at once */
#define IN_OUT_HIGH  (1u << 20) /* bytes held for a client: pause the guest */
#define IN_OUT_LOW   (256u << 10)

struct inport {
	struct net_in *ni;
	LIST_ENTRY(inport) link;
	int gfd, lfd; /* the announcement's stream, the pod's listener */
	ev_io gw, lw;
	unsigned port;
};

struct inconn {
	struct net_in *ni;
	LIST_ENTRY(inconn) link;
	int fd;
	struct aport *p; /* NULL once the stream ended */
	ev_io rd, wr;
	struct buf out; /* the guest's bytes the client has yet to take */
	bool out_eof;   /* the guest's side half-closed */
};

struct net_in {
	struct net_sb *ns;
	const char *agent; /* the VM's vsock socket */
	LIST_HEAD(, inport) ports;
	LIST_HEAD(, inconn) conns;
	unsigned nports, nconns;
	int64_t agent_flags; /* of the VM's agent's HELLO, -1 until a stream learns them */
};

static void conn_free(struct inconn *c)
{
	struct ev_loop *loop = c->ni->ns->loop;
	struct inport *ip;

	ev_io_stop(loop, &c->rd);
	ev_io_stop(loop, &c->wr);
	aport_close(c->p);
	close(c->fd);
	buf_free(&c->out);
	LIST_REMOVE(c, link);
	c->ni->nconns--;
	LIST_FOREACH(ip, &c->ni->ports, link)
	{
		ev_io_start(loop, &ip->lw); /* if EMFILE stopped it */
	}
	free(c);
}

/* Write what the guest sent; false if c was freed. */
static bool flush_out(struct inconn *c)
{
	struct ev_loop *loop = c->ni->ns->loop;

	while (buf_avail(&c->out)) {
		ssize_t w = send(c->fd, buf_head(&c->out), buf_avail(&c->out), MSG_NOSIGNAL);

		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			conn_free(c);
			return false;
		}
		buf_consume(&c->out, (size_t)w);
	}
	if (c->p && buf_avail(&c->out) < IN_OUT_LOW)
		aport_pause(c->p, false);
	if (buf_avail(&c->out)) {
		ev_io_start(loop, &c->wr);
		return true;
	}
	ev_io_stop(loop, &c->wr);
	if (c->out_eof)
		shutdown(c->fd, SHUT_WR);
	if (!c->p) { /* the stream is over and all of it is out */
		conn_free(c);
		return false;
	}
	return true;
}

static void on_data(void *ctx, const uint8_t *p, size_t n)
{
	struct inconn *c = ctx;

	if (buf_append(&c->out, p, n)) {
		aport_close(c->p);
		c->p = NULL;
		conn_free(c);
		return;
	}
	if (buf_avail(&c->out) > IN_OUT_HIGH)
		aport_pause(c->p, true);
	flush_out(c);
}

static void on_eof(void *ctx)
{
	struct inconn *c = ctx;

	c->out_eof = true;
	flush_out(c);
}

/* The stream is freed after these two return. */
static void on_end(void *ctx)
{
	struct inconn *c = ctx;

	c->p = NULL;
	c->out_eof = true;
	ev_io_stop(c->ni->ns->loop, &c->rd);
	flush_out(c);
}

static void on_error(void *ctx, int status, int err, const char *msg)
{
	struct inconn *c = ctx;
	struct linger rst = {.l_onoff = 1, .l_linger = 0};

	c->p = NULL;
	/* The client sees what a runc container's would: a reset. */
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
	if (err != ECONNREFUSED)
		net_log(c->ni->ns, "inbound connection: %s", msg);
	conn_free(c);
}

static void on_drain(void *ctx)
{
	struct inconn *c = ctx;

	ev_io_start(c->ni->ns->loop, &c->rd);
}

static const struct aport_ops conn_ops = {
    .on_data = on_data,
    .on_eof = on_eof,
    .on_end = on_end,
    .on_error = on_error,
    .on_drain = on_drain,
};

static void on_client_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct inconn *c = w->data;
	uint8_t b[KILN_DATA_CHUNK];
	ssize_t n = recv(c->fd, b, sizeof(b), 0);

	if (n < 0 && errno == EAGAIN)
		return;
	if (n < 0 || (n > 0 && aport_write(c->p, b, (size_t)n))) {
		conn_free(c);
		return;
	}
	if (!n) {
		ev_io_stop(loop, w);
		if (aport_shutdown(c->p))
			conn_free(c);
		return;
	}
	if (aport_busy(c->p))
		ev_io_stop(loop, w); /* until on_drain */
}

static void on_client_write(struct ev_loop *loop, ev_io *w, int revents)
{
	flush_out(w->data);
}

static struct agent_conn *dial_vm(void *arg, const struct agent_conn_ops *ops, void *ctx)
{
	struct net_in *ni = arg;

	return agent_open(ni->ns->loop, ni->agent, KILN_AGENT_PORT, ops, ctx);
}

static void conn_new(struct inport *ip, int fd, const struct sockaddr_storage *peer)
{
	struct net_in *ni = ip->ni;
	struct inconn *c = ni->nconns < IN_CONNS_MAX ? malloc(sizeof(*c)) : NULL;
	struct aport_from from = {
	    .peer = peer, .agent_flags = ni->agent_flags, .learn = &ni->agent_flags};

	if (!c) {
		close(fd);
		return;
	}
	*c = (struct inconn){.ni = ni, .fd = fd};
	ev_io_init(&c->rd, on_client_read, fd, EV_READ);
	ev_io_init(&c->wr, on_client_write, fd, EV_WRITE);
	c->rd.data = c->wr.data = c;
	c->p = aport_open_with(dial_vm, ni, ni->ns->id, ip->port, &from, &conn_ops, c);
	if (!c->p) {
		close(fd);
		free(c);
		return;
	}
	LIST_INSERT_HEAD(&ni->conns, c, link);
	ni->nconns++;
	ev_io_start(ni->ns->loop, &c->rd);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct inport *ip = w->data;

	for (int i = 0; i < 16; i++) {
		struct sockaddr_storage peer = {0};
		socklen_t plen = sizeof(peer);
		int fd =
		    accept4(ip->lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			/* out of descriptors: wait for a connection's end,
			 * not spin on a listener that stays readable */
			if (errno == EMFILE || errno == ENFILE)
				ev_io_stop(loop, w);
			return;
		}
		conn_new(ip, fd, &peer);
	}
}

static void port_free(struct inport *ip)
{
	struct net_in *ni = ip->ni;

	LIST_REMOVE(ip, link);
	ev_io_stop(ni->ns->loop, &ip->gw);
	ev_io_stop(ni->ns->loop, &ip->lw);
	close(ip->gfd);
	if (ip->lfd >= 0)
		close(ip->lfd);
	ni->nports--;
	free(ip);
}

/* The announcement carries nothing after the hello: any byte or its end
 * is the end of the listener. */
static void on_announce(struct ev_loop *loop, ev_io *w, int revents)
{
	struct inport *ip = w->data;
	uint8_t b[64];
	ssize_t n = recv(ip->gfd, b, sizeof(b), 0);

	if (n < 0 && errno == EAGAIN)
		return;
	net_log(ip->ni->ns, "port %u: the guest stopped listening; closed", ip->port);
	port_free(ip);
}

/* The pod's listener: the wildcard of the guest's family (a dual-stack ::
 * as the guest's, IPv6 only if IPv4 already has the port). */
static int pod_listen(int family, unsigned port)
{
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(family == 6 ? AF_INET6 : AF_INET,
	                SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0),
	    one = 1, r;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == 6) {
		r = bind(fd, (struct sockaddr *)&a6, sizeof(a6));
		if (r && errno == EADDRINUSE &&
		    !setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)))
			r = bind(fd, (struct sockaddr *)&a6, sizeof(a6));
	} else {
		r = bind(fd, (struct sockaddr *)&a4, sizeof(a4));
	}
	if (r || listen(fd, SOMAXCONN)) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

void net_in_listen(struct net_sb *ns, int gfd, int family, uint16_t port)
{
	struct kiln_net_reply rep = {.magic = KILN_NET_MAGIC, .version = KILN_NET_VERSION};
	struct net_in *ni = ns->listen_ctx;
	struct inport *ip;
	int lfd;

	if (ni->nports >= IN_PORTS_MAX) {
		net_log(ns, "port %u: more than %u ports listen; not reachable", port,
		        IN_PORTS_MAX);
		close(gfd);
		return;
	}
	lfd = pod_listen(family, port);
	if (lfd < 0) {
		net_log(ns, "port %u: cannot listen on it in the pod's network: %s", port,
		        strerror(-lfd));
		close(gfd);
		return;
	}
	ip = calloc(1, sizeof(*ip));
	if (!ip || send(gfd, &rep, sizeof(rep), MSG_NOSIGNAL) != sizeof(rep)) {
		free(ip);
		close(lfd);
		close(gfd);
		return;
	}
	*ip = (struct inport){.ni = ni, .gfd = gfd, .lfd = lfd, .port = port};
	LIST_INSERT_HEAD(&ni->ports, ip, link);
	ni->nports++;
	ev_io_init(&ip->gw, on_announce, gfd, EV_READ);
	ev_io_init(&ip->lw, on_accept, lfd, EV_READ);
	ip->gw.data = ip->lw.data = ip;
	ev_io_start(ns->loop, &ip->gw);
	ev_io_start(ns->loop, &ip->lw);
	net_log(ns, "port %u: the guest listens; reachable in the pod's network", port);
}

struct net_in *net_in_new(struct net_sb *ns, const char *agent)
{
	struct net_in *ni = malloc(sizeof(*ni));

	if (ni)
		*ni = (struct net_in){.ns = ns, .agent = agent, .agent_flags = -1};
	ns->listen = ni ? net_in_listen : NULL;
	ns->listen_ctx = ni;
	return ni;
}

void net_in_free(struct net_in *ni)
{
	if (!ni)
		return;
	while (!LIST_EMPTY(&ni->ports))
		port_free(LIST_FIRST(&ni->ports));
	while (!LIST_EMPTY(&ni->conns))
		conn_free(LIST_FIRST(&ni->conns));
	ni->ns->listen = NULL;
	free(ni);
}
