/* SPDX-License-Identifier: MIT */
/* UDP from the guest (KILN_NET_F_UDP streams, include/kiln/net.h): one
 * relay per guest socket. Every datagram the guest frames is judged by the
 * sandbox's policy and the sandbox's rate, then sent from one unconnected
 * host socket per address family; datagrams that come back are passed to
 * the guest only from the destinations this relay sent to (a NAT's rule:
 * nobody else can reach the guest's socket) and only while the policy
 * still allows them. Nothing waits: a datagram that finds a full buffer
 * or a busy host socket is dropped, as on any network, so a relay holds
 * at most two bounded buffers whatever the guest or the far side do. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kiln/net.h>

#include "net/net_int.h"
#include "net/udp_frame.h"
#include "util.h"

#define FRAME_MAX (sizeof(struct kiln_net_dgram) + KILN_NET_DGRAM_MAX)
#define READS_MAX 64 /* host datagrams taken per wake-up, for fairness */

/* A destination the guest sent to: answers from real:port come back as
 * from guest:port. */
struct upeer {
	uint8_t guest[16], real[16];
	uint16_t port;
	ev_tstamp used;
};

struct urelay {
	struct net_sb *ns;
	struct urelay *next, *prev;
	int gfd, hfd[2]; /* the guest's stream; host sockets: IPv4, IPv6 */
	ev_io grd, gwr, hrd[2];
	ev_timer idle;
	ev_tstamp last; /* a datagram either way */
	uint8_t *up, *down;
	size_t up_len, down_off, down_len;
	struct upeer peers[UDP_PEERS_MAX];
	unsigned npeers;
};

static struct ev_loop *loop_of(struct urelay *r)
{
	return r->ns->loop;
}

static void urelay_free(struct urelay *r)
{
	struct ev_loop *loop = loop_of(r);
	struct net_sb *ns = r->ns;

	ev_io_stop(loop, &r->grd);
	ev_io_stop(loop, &r->gwr);
	ev_timer_stop(loop, &r->idle);
	close(r->gfd);
	for (int i = 0; i < 2; i++) {
		ev_io_stop(loop, &r->hrd[i]);
		if (r->hfd[i] >= 0)
			close(r->hfd[i]);
	}
	free(r->up);
	free(r->down);
	if (r->prev)
		r->prev->next = r->next;
	else
		ns->udp = r->next;
	if (r->next)
		r->next->prev = r->prev;
	ns->nudp--;
	free(r);
}

/* ---------------------------------------------------------------- to the guest */

/* Queue a frame for the guest, or drop it if the buffer is full. */
static bool to_guest(struct urelay *r, const uint8_t a[16], uint16_t port, uint8_t status,
                     const uint8_t *p, size_t n)
{
	size_t need = sizeof(struct kiln_net_dgram) + n;

	if (NET_BUF - r->down_len < need)
		return false;
	if (r->down_off + r->down_len + need > NET_BUF) {
		memmove(r->down, r->down + r->down_off, r->down_len);
		r->down_off = 0;
	}
	r->down_len +=
	    udp_frame_put(r->down + r->down_off + r->down_len, a,
	                  net_addr_is_v4(a) ? KILN_NET_IPV4 : KILN_NET_IPV6, port, status, p, n);
	if (!ev_is_active(&r->gwr))
		ev_io_start(loop_of(r), &r->gwr);
	return true;
}

static void on_guest_write(struct ev_loop *loop, ev_io *w, int revents)
{
	struct urelay *r = w->data;

	while (r->down_len) {
		ssize_t n = send(r->gfd, r->down + r->down_off, r->down_len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			urelay_free(r);
			return;
		}
		r->down_off += (size_t)n;
		r->down_len -= (size_t)n;
	}
	r->down_off = 0;
	ev_io_stop(loop, &r->gwr);
}

/* ---------------------------------------------------------------- from the host */

static struct upeer *peer_find(struct urelay *r, const uint8_t real[16], uint16_t port)
{
	for (unsigned i = 0; i < r->npeers; i++)
		if (r->peers[i].port == port && !memcmp(r->peers[i].real, real, 16))
			return &r->peers[i];
	return NULL;
}

/* Remember that the guest sent to guest (real) port; the least recently
 * used destination goes when the table is full. */
static void peer_note(struct urelay *r, const uint8_t guest[16], const uint8_t real[16],
                      uint16_t port, ev_tstamp now)
{
	struct upeer *p = peer_find(r, real, port);

	if (!p && r->npeers < UDP_PEERS_MAX) {
		p = &r->peers[r->npeers++];
	} else if (!p) {
		p = &r->peers[0];
		for (unsigned i = 1; i < r->npeers; i++)
			if (r->peers[i].used < p->used)
				p = &r->peers[i];
	}
	memcpy(p->guest, guest, 16);
	memcpy(p->real, real, 16);
	p->port = port;
	p->used = now;
}

static void on_host_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct urelay *r = w->data;
	struct net_sb *ns = r->ns;
	uint8_t buf[KILN_NET_DGRAM_MAX + 1];
	const uint8_t(*host)[16];
	size_t nhost;
	char why[256];

	net_host_addrs(ns->nc, &host, &nhost);
	for (int k = 0; k < READS_MAX; k++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		uint8_t src[16] = {0};
		uint16_t port;
		struct upeer *p;
		ssize_t n =
		    recvfrom(w->fd, buf, sizeof(buf), MSG_TRUNC, (struct sockaddr *)&ss, &sl);

		if (n < 0)
			return; /* EAGAIN; an ICMP error is the far side's to report */
		if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;

			src[10] = src[11] = 0xff;
			memcpy(src + 12, &sin->sin_addr, 4);
			port = ntohs(sin->sin_port);
		} else {
			const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&ss;

			memcpy(src, &sin6->sin6_addr, 16);
			port = ntohs(sin6->sin6_port);
		}
		p = peer_find(r, src, port);
		/* Only from where the guest sent, while the policy allows it;
		 * too big for the guest's sockets: dropped as well. */
		if (!p || n > KILN_NET_DGRAM_MAX ||
		    net_policy_check(net_sb_policy(ns), &ns->pins, p->guest, port, host, nhost,
		                     now_ms(), why, sizeof(why)) == NV_DENY ||
		    !to_guest(r, p->guest, port, 0, buf, (size_t)n)) {
			ns->udp_dropped++;
			continue;
		}
		r->last = p->used = ev_now(loop);
		ns->udp_dgrams_in++;
		ns->udp_bytes_in += (uint64_t)n;
	}
}

/* ---------------------------------------------------------------- from the guest */

/* May the sandbox send n bytes more now? A token bucket of datagrams and
 * one of bytes, each refilled at its rate up to a second's worth. */
static bool rate_ok(struct net_sb *ns, size_t n)
{
	ev_tstamp now = ev_now(ns->loop), dt = ns->udp_at ? now - ns->udp_at : 1;

	ns->udp_at = now;
	ns->udp_pkts += dt * UDP_RATE_PKTS;
	ns->udp_bytes += dt * UDP_RATE_BYTES;
	if (ns->udp_pkts > UDP_RATE_PKTS)
		ns->udp_pkts = UDP_RATE_PKTS;
	if (ns->udp_bytes > UDP_RATE_BYTES)
		ns->udp_bytes = UDP_RATE_BYTES;
	if (ns->udp_pkts < 1 || ns->udp_bytes < (double)n)
		return false;
	ns->udp_pkts -= 1;
	ns->udp_bytes -= (double)n;
	return true;
}

static int host_socket(struct urelay *r, bool v4)
{
	int i = v4 ? 0 : 1, one = 1;

	if (r->hfd[i] >= 0)
		return r->hfd[i];
	r->hfd[i] = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (r->hfd[i] < 0)
		return -1;
	/* IPv4 goes through the IPv4 socket, never as ::ffff:a.b.c.d. */
	if (!v4)
		setsockopt(r->hfd[i], IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	ev_io_init(&r->hrd[i], on_host_read, r->hfd[i], EV_READ);
	r->hrd[i].data = r;
	ev_io_start(loop_of(r), &r->hrd[i]);
	return r->hfd[i];
}

/* One datagram from the guest: judge it, send it or refuse it. */
static void send_one(struct urelay *r, const struct udp_frame *f)
{
	static const uint8_t lo4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
	static const uint8_t lo6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	struct net_sb *ns = r->ns;
	struct ev_loop *loop = loop_of(r);
	const uint8_t(*host)[16];
	const uint8_t *real = f->addr;
	struct sockaddr_storage ss = {0};
	char why[512], as[48];
	enum net_verdict v;
	socklen_t sl;
	size_t nhost;
	int fd;

	if (!rate_ok(ns, f->len)) {
		ns->udp_dropped++;
		if (ev_now(loop) - ns->udp_rate_logged >= 1) {
			ns->udp_rate_logged = ev_now(loop);
			net_log(
			    ns,
			    "UDP: datagrams dropped: more than %.0f a second or %.0f MiB a second",
			    UDP_RATE_PKTS, (double)UDP_RATE_BYTES / (1 << 20));
		}
		return;
	}
	net_host_addrs(ns->nc, &host, &nhost);
	v = net_policy_check(net_sb_policy(ns), &ns->pins, f->addr, f->port, host, nhost, now_ms(),
	                     why, sizeof(why));
	if (v == NV_RESOLVER) {
		v = NV_DENY; /* the guest's DNS has its own stream */
		snprintf(why, sizeof(why), "DNS to the resolver is not carried as UDP");
	}
	net_addr_str(f->addr, as);
	if (v == NV_DENY) {
		ns->udp_refused++;
		net_log(ns,
		        net_addr_is_v4(f->addr) ? "UDP datagram to %s:%u refused (EACCES): %s"
		                                : "UDP datagram to [%s]:%u refused (EACCES): %s",
		        as, f->port, why);
		to_guest(r, f->addr, f->port, KILN_NET_EACCES, NULL, 0);
		return;
	}
	if (v == NV_HOST) /* the stand-in of its family: the host's loopback of it */
		real = net_addr_is_v4(f->addr) ? lo4 : lo6;
	if (net_addr_is_v4(real)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(f->port);
		memcpy(&sin->sin_addr, real + 12, 4);
		sl = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(f->port);
		memcpy(&sin6->sin6_addr, real, 16);
		sl = sizeof(*sin6);
	}
	fd = host_socket(r, net_addr_is_v4(real));
	r->last = ev_now(loop);
	peer_note(r, f->addr, real, f->port, r->last);
	if (fd < 0 || sendto(fd, f->payload, f->len, 0, (struct sockaddr *)&ss, sl) < 0) {
		/* A busy socket or no route: lost, as UDP may be. */
		log_debug("sandbox %s: UDP to %s:%u: %s", ns->id, as, f->port, strerror(errno));
		ns->udp_dropped++;
		return;
	}
	ns->udp_dgrams_out++;
	ns->udp_bytes_out += f->len;
}

static void on_guest_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct urelay *r = w->data;
	size_t off = 0;
	ssize_t n = recv(r->gfd, r->up + r->up_len, NET_BUF - r->up_len, 0);

	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			urelay_free(r); /* the guest closed its socket */
		return;
	}
	r->up_len += (size_t)n;
	for (;;) {
		struct udp_frame f;
		long k = udp_frame_parse(r->up + off, r->up_len - off, &f);

		if (k < 0) {
			net_log(r->ns, "UDP: a stream with a bad frame closed");
			urelay_free(r);
			return;
		}
		if (!k)
			break;
		send_one(r, &f);
		off += (size_t)k;
	}
	memmove(r->up, r->up + off, r->up_len - off);
	r->up_len -= off;
}

static void on_idle(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct urelay *r = w->data;

	if (ev_now(loop) - r->last >= UDP_IDLE_S) {
		urelay_free(r); /* the guest's next datagram opens another */
		return;
	}
	ev_timer_set(w, UDP_IDLE_S - (ev_now(loop) - r->last) + 0.01, 0);
	ev_timer_start(loop, w);
}

void udp_relay_start(struct net_sb *ns, int gfd)
{
	struct kiln_net_reply rep = {
	    .magic = KILN_NET_MAGIC, .version = KILN_NET_VERSION, .status = KILN_NET_OK};
	struct ev_loop *loop = ns->loop;
	struct urelay *r = NULL;

	if (ns->nudp >= UDP_RELAYS_MAX || !(r = calloc(1, sizeof(*r))) ||
	    !(r->up = malloc(NET_BUF)) || !(r->down = malloc(NET_BUF))) {
		if (r) {
			free(r->up);
			free(r);
		}
		rep.status = KILN_NET_EAGAIN;
		if (send(gfd, &rep, sizeof(rep), MSG_NOSIGNAL) < 0) {
			/* gone already */
		}
		close(gfd);
		ns->udp_refused++;
		net_log(ns,
		        "UDP: socket refused (EAGAIN): the sandbox has %u open, the most it "
		        "may have",
		        UDP_RELAYS_MAX);
		return;
	}
	_Static_assert(FRAME_MAX <= NET_BUF, "a whole frame fits a relay's buffers");
	r->ns = ns;
	r->gfd = gfd;
	r->hfd[0] = r->hfd[1] = -1;
	r->last = ev_now(loop);
	ev_io_init(&r->grd, on_guest_read, gfd, EV_READ);
	ev_io_init(&r->gwr, on_guest_write, gfd, EV_WRITE);
	ev_timer_init(&r->idle, on_idle, UDP_IDLE_S, 0);
	r->grd.data = r->gwr.data = r->idle.data = r;
	r->next = ns->udp;
	if (ns->udp)
		ns->udp->prev = r;
	ns->udp = r;
	ns->nudp++;
	if (send(gfd, &rep, sizeof(rep), MSG_NOSIGNAL) != (ssize_t)sizeof(rep)) {
		urelay_free(r);
		return;
	}
	ev_io_start(loop, &r->grd);
	ev_timer_start(loop, &r->idle);
	on_guest_read(loop, &r->grd, EV_READ); /* the first datagram is likely in */
}

void udp_close_all(struct net_sb *ns)
{
	while (ns->udp)
		urelay_free(ns->udp);
}
