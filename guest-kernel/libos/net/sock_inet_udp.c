/* SPDX-License-Identifier: MIT */
/*
 * UDP to the resolver address (KILN_NET_RESOLVER4/6, port 53), the one
 * UDP destination off the guest: what /etc/resolv.conf names. A socket's
 * first datagram there opens a vsock stream to kilnd (include/kiln/net.h,
 * KILN_NET_F_DATAGRAM) that carries its datagrams as DNS-over-TCP
 * messages; kilnd's answers come back on it and are queued on the socket
 * as datagrams from the resolver address, so recvfrom, poll and epoll see
 * them as they would a real server's. The stream belongs to the socket
 * and closes with it; one that broke (a snapshot restore resets every
 * vsock stream) is opened again by the next datagram.
 *
 * UDP may lose datagrams, and this does where a real network would: when
 * the socket's receive buffer is full. A send waits for room in the
 * stream (briefly: the host drains it), even on a non-blocking socket.
 */
#include <kiln/net.h>

#include "errno_k.h"
#include "mm.h"
#include "sock_inet.h"
#include "drivers/vsock.h"

#define DNS_MSG_MAX 4096 /* a query bigger than EDNS's usual 4096 is not DNS */

struct dns_relay {
	struct vsock_sk *vs;
	struct inet_sk *is;
	struct inet_addr from; /* the resolver address the socket sent to */
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

/* One answer of n bytes, at the front of the stream, to the socket. */
static void deliver(struct dns_relay *r, uint32_t n)
{
	struct inet_sk *is = r->is;
	char sa[SOCK_ADDR_MAX], scrap[256];
	struct sp_addr *from;
	struct iovec iov;
	struct sock_iter it;
	char *msg = kmalloc(n ? n : 1);
	bool room =
	    is->e.rx.bytes + n <= (size_t)(is->sock ? is->sock->rcvbuf : SOCK_BUF_DEFAULT) &&
	    !(is->e.shut & SP_SHUT_RD);

	if (!msg || !room) { /* dropped, as UDP does */
		for (uint32_t k; n; n -= k) {
			k = MIN(n, (uint32_t)sizeof(scrap));
			rx_take(r->vs, scrap, k, false);
		}
		kfree(msg);
		return;
	}
	if (rx_take(r->vs, msg, n, false)) {
		kfree(msg);
		return;
	}
	from = sp_addr_new(sa, inet_addr_out(is->family, &r->from, KILN_NET_DNS_PORT, sa));
	if (from) {
		iov.iov_base = msg;
		iov.iov_len = n;
		sock_iter_init(&it, &iov, 1, false);
		sp_deliver(&is->e, &it, from);
		sp_addr_put(from);
	}
	kfree(msg);
}

/* The stream woke: move every whole answer on it to the socket. */
static void relay_notify(struct vsock_sk *vs)
{
	struct dns_relay *r = vs->owner;
	struct kiln_net_reply rep;
	uint8_t len[2];

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
		if (vs->rx.len < 2 || rx_take(vs, len, 2, true))
			return;
		if (vs->rx.len < 2u + (uint32_t)(len[0] << 8 | len[1]))
			return;
		rx_take(vs, len, 2, false);
		deliver(r, (uint32_t)(len[0] << 8 | len[1]));
	}
}

static void relay_close(struct inet_sk *is)
{
	struct dns_relay *r = is->dns;

	r->vs->notify = NULL;
	vsock_stream_close(r->vs);
	kfree(r);
	is->dns = NULL;
}

static int relay_open(struct inet_sk *is)
{
	struct dns_relay *r;
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
	r->vs->sock = is->sock;
	r->vs->owner = r;
	r->vs->notify = relay_notify;
	err = vsock_stream_connect(r->vs, KILN_NET_PORT);
	if (err) {
		vsock_free(r->vs);
		kfree(r);
		return err;
	}
	is->dns = r;
	return 0;
}

long dns_relay_send(struct socket *s, struct inet_sk *is, struct sock_iter *it,
                    const struct inet_addr *to)
{
	size_t n = it->left, off = 0, total;
	uint64_t deadline;
	struct dns_relay *r;
	struct kiln_net_hello *h;
	char *buf;
	long err;

	if (n > DNS_MSG_MAX || n < 12)
		return (long)n; /* no resolver would answer it */
	if (is->dns && (is->dns->broken || (is->dns->vs->state != VSK_CONNECTING &&
	                                    is->dns->vs->state != VSK_CONNECTED)))
		relay_close(is);
	if (!is->dns && (err = relay_open(is)))
		return err;
	r = is->dns;
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
		relay_close(is);
		return -ECONNREFUSED; /* no kilnd: as a port unreachable would */
	}
	total = (r->hello_sent ? 0 : sizeof(*h)) + 2 + n;
	buf = kmalloc(total);
	if (!buf)
		return -ENOMEM;
	if (!r->hello_sent) {
		h = (struct kiln_net_hello *)buf;
		memset(h, 0, sizeof(*h));
		h->magic = KILN_NET_MAGIC;
		h->version = KILN_NET_VERSION;
		h->port = (uint16_t)(KILN_NET_DNS_PORT << 8);
		h->flags = KILN_NET_F_DATAGRAM;
		h->family = inet_is_v4(to) ? KILN_NET_IPV4 : KILN_NET_IPV6;
		memcpy(h->addr, inet_is_v4(to) ? to->b + 12 : to->b, inet_is_v4(to) ? 4 : 16);
		off = sizeof(*h);
	}
	buf[off] = (char)(n >> 8);
	buf[off + 1] = (char)n;
	err = sock_iter_from(it, buf + off + 2, n);
	/* Room in the transmit queue comes back within microseconds: wait for
	 * it rather than lose a burst of queries. */
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
			r->broken = true; /* half a message: the stream is no good */
		r->hello_sent = true;
		vsock_tx_flush();
	}
	kfree(buf);
	return err ? err : (long)n;
}

void dns_relay_release(struct inet_sk *is)
{
	relay_close(is);
}
