/* SPDX-License-Identifier: MIT */
/*
 * UDP off the guest, carried to kilnd over vsock (include/kiln/net.h). A
 * socket has up to two relays, each one vsock stream opened by its first
 * datagram:
 *
 *   dns  to the resolver address (KILN_NET_RESOLVER4/6), port 53, what
 *        /etc/resolv.conf names (KILN_NET_F_DATAGRAM): every datagram is a
 *        DNS-over-TCP message and kilnd answers it itself
 *   udp  to anywhere else (KILN_NET_F_UDP): every datagram is a struct
 *        kiln_net_dgram frame naming its destination, so one stream
 *        serves every destination the socket sends to; kilnd sends it
 *        from the host if the sandbox's policy allows, and frames the
 *        answers with their source
 *
 * Answers are queued on the socket as datagrams from where they came, so
 * recvfrom, recvmsg (MSG_PEEK, MSG_TRUNC), poll and epoll see them as they
 * would a real server's; a connected socket takes only its peer's. A
 * datagram the policy refused comes back as a frame that leaves EACCES
 * pending on the socket, as an ICMP error would: the next send or receive
 * fails with it once (SO_ERROR reads it, poll says POLLERR).
 *
 * The streams belong to the socket and close with it; one that broke (a
 * snapshot restore resets every vsock stream, kilnd closes idle ones) is
 * opened again by the next datagram. UDP may lose datagrams, and this does
 * where a real network would: when the socket's receive buffer is full,
 * and wherever kilnd drops them. A send waits for room in the stream
 * (briefly: the host drains it), even on a non-blocking socket.
 */
#include <kiln/net.h>

#include "errno_k.h"
#include "mm.h"
#include "sched.h"
#include "sock_inet.h"
#include "drivers/vsock.h"

#define DNS_MSG_MAX 4096 /* a query bigger than EDNS's usual 4096 is not DNS */

struct udp_relay {
	struct vsock_sk *vs;
	struct inet_sk *is;
	bool dns;              /* the resolver's stream, else the udp one */
	struct inet_addr from; /* dns: the resolver address the socket sent to */
	bool hello_sent, replied, broken;
};

bool inet_is_resolver(const struct inet_addr *a)
{
	static const uint8_t r4[4] = KILN_NET_RESOLVER4, r6[16] = KILN_NET_RESOLVER6;

	return inet_is_v4(a) ? !memcmp(a->b + 12, r4, 4) : !memcmp(a->b, r6, 16);
}

static int rx_take(struct vsock_sk *vs, void *p, uint32_t n, bool peek)
{
	struct iovec iov = {.iov_base = p, .iov_len = n};
	struct sock_iter it;

	sock_iter_init(&it, &iov, 1, false);
	if (vsock_rx_copy(vs, &it, n, peek))
		return -EFAULT;
	if (!peek)
		vsock_consumed(vs, n);
	return 0;
}

static void rx_skip(struct vsock_sk *vs, uint32_t n)
{
	char scrap[256];

	for (uint32_t k; n; n -= k) {
		k = MIN(n, (uint32_t)sizeof(scrap));
		rx_take(vs, scrap, k, false);
	}
}

/* One datagram of n bytes from from:port, at the front of the stream, to
 * the socket, or dropped. */
static void deliver(struct udp_relay *r, uint32_t n, const struct inet_addr *from, uint16_t port)
{
	struct inet_sk *is = r->is;
	char sa[SOCK_ADDR_MAX];
	struct sp_addr *a;
	struct iovec iov;
	struct sock_iter it;
	char *msg;
	bool take =
	    is->e.rx.bytes + n <= (size_t)(is->sock ? is->sock->rcvbuf : SOCK_BUF_DEFAULT) &&
	    !(is->e.shut & SP_SHUT_RD) && (is->family == AF_INET6 || inet_is_v4(from)) &&
	    (!is->connected || (is->pport == port && !memcmp(is->paddr.b, from->b, 16)));

	if (!take || !(msg = kmalloc(n ? n : 1))) { /* dropped, as UDP does */
		rx_skip(r->vs, n);
		return;
	}
	if (rx_take(r->vs, msg, n, false)) {
		kfree(msg);
		return;
	}
	a = sp_addr_new(sa, inet_addr_out(is->family, from, port, sa));
	if (a) {
		iov.iov_base = msg;
		iov.iov_len = n;
		sock_iter_init(&it, &iov, 1, false);
		sp_deliver(&is->e, &it, a);
		sp_addr_put(a);
	}
	kfree(msg);
}

/* The next frame of a udp stream, if it is all in: false to wait. */
static bool take_frame(struct udp_relay *r)
{
	struct vsock_sk *vs = r->vs;
	struct kiln_net_dgram h;
	struct inet_addr from = {0};
	long n;

	if (vs->rx.len < sizeof(h) || rx_take(vs, &h, sizeof(h), true))
		return false;
	n = kiln_net_dgram_len(&h, 1);
	if (n < 0) {
		r->broken = true; /* not kilnd's frames: nothing more is read */
		return false;
	}
	if (vs->rx.len < sizeof(h) + (uint32_t)n)
		return false;
	rx_take(vs, &h, sizeof(h), false);
	if (h.family == KILN_NET_IPV4) {
		from.b[10] = from.b[11] = 0xff;
		memcpy(from.b + 12, h.addr, 4);
	} else {
		memcpy(from.b, h.addr, 16);
	}
	if (h.status) { /* refused by the policy: as an ICMP error would */
		r->is->e.err = h.status;
		wake_all(&r->is->e.wq);
		return true;
	}
	deliver(r, (uint32_t)n, &from, (uint16_t)(h.port >> 8 | h.port << 8));
	return true;
}

/* The next DNS answer, if it is all in: false to wait. */
static bool take_answer(struct udp_relay *r)
{
	struct vsock_sk *vs = r->vs;
	uint8_t len[2];
	uint32_t n;

	if (vs->rx.len < 2 || rx_take(vs, len, 2, true))
		return false;
	n = (uint32_t)(len[0] << 8 | len[1]);
	if (vs->rx.len < 2 + n)
		return false;
	rx_take(vs, len, 2, false);
	deliver(r, n, &r->from, KILN_NET_DNS_PORT);
	return true;
}

/* The stream woke: move every whole datagram on it to the socket. */
static void relay_notify(struct vsock_sk *vs)
{
	struct udp_relay *r = vs->owner;
	struct kiln_net_reply rep;

	while (!r->broken) {
		if (!r->replied) {
			if (vs->rx.len < sizeof(rep))
				return;
			if (rx_take(vs, &rep, sizeof(rep), false) || rep.magic != KILN_NET_MAGIC ||
			    rep.version != KILN_NET_VERSION || rep.status) {
				r->broken = true;
				return;
			}
			r->replied = true;
			continue;
		}
		if (!(r->dns ? take_answer(r) : take_frame(r)))
			return;
	}
}

static void relay_close(struct udp_relay **slot)
{
	struct udp_relay *r = *slot;

	r->vs->notify = NULL;
	vsock_stream_close(r->vs);
	kfree(r);
	*slot = NULL;
}

static int relay_open(struct inet_sk *is, struct udp_relay **slot, bool dns)
{
	struct udp_relay *r;
	int err = vsock_dev_up();

	if (err)
		return err == -ENOMEM ? err : -ENETUNREACH;
	r = kzalloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->vs = vsock_sk_alloc();
	if (!r->vs) {
		kfree(r);
		return -ENOMEM;
	}
	r->is = is;
	r->dns = dns;
	r->vs->sock = is->sock;
	r->vs->owner = r;
	r->vs->notify = relay_notify;
	err = vsock_stream_connect(r->vs, KILN_NET_PORT);
	if (err) {
		vsock_free(r->vs);
		kfree(r);
		return err;
	}
	*slot = r;
	return 0;
}

/* The bytes in front of a datagram of n bytes to `to`: the hello if the
 * stream has not had it, then the framing. Returns how many. */
static size_t put_head(struct udp_relay *r, char *buf, const struct inet_addr *to, uint16_t port,
                       size_t n)
{
	bool v4 = inet_is_v4(to);
	size_t off = 0;

	if (!r->hello_sent) {
		struct kiln_net_hello *h = (struct kiln_net_hello *)buf;

		memset(h, 0, sizeof(*h));
		h->magic = KILN_NET_MAGIC;
		h->version = KILN_NET_VERSION;
		h->port = (uint16_t)(port >> 8 | port << 8);
		h->flags = r->dns ? KILN_NET_F_DATAGRAM : KILN_NET_F_UDP;
		h->family = v4 ? KILN_NET_IPV4 : KILN_NET_IPV6;
		memcpy(h->addr, v4 ? to->b + 12 : to->b, v4 ? 4 : 16);
		off = sizeof(*h);
	}
	if (r->dns) {
		buf[off] = (char)(n >> 8);
		buf[off + 1] = (char)n;
		return off + 2;
	} else {
		struct kiln_net_dgram *d = (struct kiln_net_dgram *)(buf + off);

		memset(d, 0, sizeof(*d));
		d->len = (uint16_t)n;
		d->family = v4 ? KILN_NET_IPV4 : KILN_NET_IPV6;
		d->port = (uint16_t)(port >> 8 | port << 8);
		memcpy(d->addr, v4 ? to->b + 12 : to->b, v4 ? 4 : 16);
		return off + sizeof(*d);
	}
}

long udp_relay_send(struct socket *s, struct inet_sk *is, struct sock_iter *it,
                    const struct inet_addr *to, uint16_t port)
{
	bool dns = inet_is_resolver(to) && port == KILN_NET_DNS_PORT;
	struct udp_relay **slot = dns ? &is->dns : &is->udp, *r;
	size_t n = it->left, head, total;
	uint64_t deadline;
	char *buf;
	long err;

	if (dns && (n > DNS_MSG_MAX || n < 12))
		return (long)n; /* no resolver would answer it */
	if (n > KILN_NET_DGRAM_MAX)
		return -EMSGSIZE;
	if (!port)
		return -EINVAL; /* connect()ed to port 0: Linux refuses to send too */
	if (*slot && ((*slot)->broken || ((*slot)->vs->state != VSK_CONNECTING &&
	                                  (*slot)->vs->state != VSK_CONNECTED)))
		relay_close(slot);
	if (!*slot && (err = relay_open(is, slot, dns)))
		return err;
	r = *slot;
	if (dns)
		r->from = *to;
	/* The stream is to the host, which answers at once: wait for it even
	 * on a non-blocking socket (SO_SNDTIMEO still counts). */
	deadline = sock_deadline(s->sndtimeo_ns);
	while (r->vs->state == VSK_CONNECTING) {
		err = vsock_sk_sleep(r->vs, false, deadline);
		if (err == -EINTR)
			return -ERESTARTSYS;
		if (err == -ETIMEDOUT)
			return -EAGAIN;
	}
	if (r->vs->state != VSK_CONNECTED) {
		relay_close(slot);
		return -ECONNREFUSED; /* no kilnd: as a port unreachable would */
	}
	buf = kmalloc(sizeof(struct kiln_net_hello) + sizeof(struct kiln_net_dgram) + n);
	if (!buf)
		return -ENOMEM;
	head = put_head(r, buf, to, port, n);
	total = head + n;
	err = sock_iter_from(it, buf + head, n);
	/* Room in the transmit queue comes back within microseconds: wait for
	 * it rather than lose a burst. */
	while (!err && r->vs->state == VSK_CONNECTED &&
	       (vsock_credit(r->vs) < total || !vsock_tx_room())) {
		long w = vsock_sk_sleep(r->vs, true, deadline);

		if (w == -EINTR)
			err = -ERESTARTSYS;
		else if (w == -ETIMEDOUT)
			err = -EAGAIN;
	}
	if (!err && r->vs->state == VSK_CONNECTED) {
		struct iovec iov = {.iov_base = buf, .iov_len = total};
		struct sock_iter kit;

		sock_iter_init(&kit, &iov, 1, false);
		if (vsock_send_data(r->vs, &kit, total) != (long)total)
			r->broken = true; /* half a datagram: the stream is no good */
		r->hello_sent = true;
		vsock_tx_flush();
	}
	kfree(buf);
	return err ? err : (long)n;
}

void udp_relay_release(struct inet_sk *is)
{
	if (is->dns)
		relay_close(&is->dns);
	if (is->udp)
		relay_close(&is->udp);
}
