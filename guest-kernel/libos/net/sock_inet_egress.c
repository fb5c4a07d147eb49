/* SPDX-License-Identifier: MIT */
/*
 * TCP to an address off the guest: a vsock stream to kilnd's egress port
 * (include/kiln/net.h). connect() opens the stream with the hello (the
 * destination) right behind its REQUEST, and waits for kilnd's reply, which
 * says whether the host's connection to it worked (or which errno it
 * failed with: EACCES when the sandbox's policy forbids it). After that
 * the socket is the stream: sends, receives, shutdown and poll are
 * AF_VSOCK's, with the socket's options, while addresses and TCP options
 * stay AF_INET's.
 *
 * Nothing runs in the background: each call on the socket (connect, poll,
 * SO_ERROR ...) first catches up with what the stream did, and the
 * stream's wake-ups reach whoever waits on the socket, so a non-blocking
 * connect completes under poll and epoll as on Linux.
 */
#include <asm/socket.h>
#include <linux/poll.h>

#include <kiln/net.h>

#include "errno_k.h"
#include "kpoll.h"
#include "mm.h"
#include "sock_inet.h"
#include "drivers/vsock.h"

enum egress_state {
	EG_CONNECTING, /* the vsock stream is being opened, or the hello sent */
	EG_WAITING,    /* hello sent: kilnd is connecting */
	EG_OPEN,       /* connected to the destination */
	EG_FAILED,     /* over before it was open; is->e.err says why */
};

struct egress {
	struct vsock_sk *vs; /* NULL once failed */
	enum egress_state st;
	struct kiln_net_hello hello;
	uint32_t hello_sent; /* bytes of it */
	bool told;           /* connect() has returned its success */
};

static void fail(struct inet_sk *is, int err)
{
	struct egress *eg = is->eg;

	eg->st = EG_FAILED;
	is->e.err = err;
	if (eg->vs) {
		vsock_stream_close(eg->vs);
		eg->vs = NULL;
	}
}

/* kilnd's answer is one of the errnos of net.h; anything else is nonsense. */
static int reply_errno(uint32_t status)
{
	switch (status) {
	case KILN_NET_EACCES:
	case KILN_NET_ENETUNREACH:
	case KILN_NET_ETIMEDOUT:
	case KILN_NET_ECONNREFUSED:
	case KILN_NET_EHOSTUNREACH:
	case KILN_NET_EAGAIN:
		return (int)status;
	}
	return ECONNREFUSED;
}

static long send_kernel(struct vsock_sk *vs, const void *p, size_t n)
{
	struct iovec iov = {.iov_base = (void *)p, .iov_len = n};
	struct sock_iter it;

	sock_iter_init(&it, &iov, 1, false);
	return vsock_send_data(vs, &it, n);
}

void egress_update(struct inet_sk *is)
{
	struct egress *eg = is->eg;
	struct vsock_sk *vs = eg->vs;
	struct kiln_net_reply r;
	struct iovec iov = {.iov_base = &r, .iov_len = sizeof(r)};
	struct sock_iter it;
	long n;

	if (eg->st == EG_OPEN || eg->st == EG_FAILED)
		return;
	vsock_dev_poll();
	if (eg->st == EG_CONNECTING && vs->state == VSK_CONNECTED) {
		n = send_kernel(vs, (const char *)&eg->hello + eg->hello_sent,
		                sizeof(eg->hello) - eg->hello_sent);
		if (n > 0)
			eg->hello_sent += (uint32_t)n;
		vsock_tx_flush();
		if (eg->hello_sent == sizeof(eg->hello))
			eg->st = EG_WAITING;
	}
	if (eg->st == EG_WAITING && vs->rx.len >= sizeof(r)) {
		sock_iter_init(&it, &iov, 1, false);
		if (vsock_rx_copy(vs, &it, sizeof(r), false)) {
			fail(is, ECONNREFUSED);
			return;
		}
		vsock_consumed(vs, sizeof(r));
		if (r.magic != KILN_NET_MAGIC || r.version != KILN_NET_VERSION)
			fail(is, ECONNREFUSED);
		else if (r.status)
			fail(is, reply_errno(r.status));
		else
			eg->st = EG_OPEN;
		return;
	}
	if (vs->state != VSK_CONNECTING && vs->state != VSK_CONNECTED) {
		/* No kilnd on the port (a VM without egress) is no route; a
		 * stream kilnd ended without an answer, a refusal. */
		int err = vs->was_connected      ? ECONNREFUSED
		          : vs->err == ETIMEDOUT ? ETIMEDOUT
		                                 : ENETUNREACH;

		vs->err = 0;
		fail(is, err);
	} else if (vs->state == VSK_CONNECTED && (vs->peer_shut & VSOCK_SHUT_SEND)) {
		fail(is, ECONNREFUSED); /* kilnd closed without a reply */
	}
}

int egress_start(struct inet_sk *is, const struct inet_addr *d, uint16_t port)
{
	struct egress *eg;
	int err = vsock_dev_up();
	long sent;

	if (err)
		return err == -ENOMEM ? err : -ENETUNREACH;
	eg = kzalloc(sizeof(*eg));
	if (!eg)
		return -ENOMEM;
	eg->vs = vsock_sk_alloc();
	if (!eg->vs) {
		kfree(eg);
		return -ENOMEM;
	}
	eg->vs->sock = is->sock;
	eg->hello.magic = KILN_NET_MAGIC;
	eg->hello.version = KILN_NET_VERSION;
	eg->hello.port = (uint16_t)(port >> 8 | port << 8);
	if (inet_is_v4(d)) {
		eg->hello.family = KILN_NET_IPV4;
		memcpy(eg->hello.addr, d->b + 12, 4);
	} else {
		eg->hello.family = KILN_NET_IPV6;
		memcpy(eg->hello.addr, d->b, 16);
	}
	/* The hello goes with the REQUEST: kilnd has it as soon as it has the
	 * stream, and the one round trip left is its answer. */
	sent = vsock_stream_connect_with(eg->vs, KILN_NET_PORT, &eg->hello, sizeof(eg->hello));
	if (sent < 0) {
		vsock_free(eg->vs);
		kfree(eg);
		return (int)sent;
	}
	eg->hello_sent = (uint32_t)sent;
	if (eg->hello_sent == sizeof(eg->hello))
		eg->st = EG_WAITING;
	is->eg = eg;
	is->paddr = *d;
	is->pport = port;
	is->e.err = 0;
	return 0;
}

int egress_connect(struct socket *s, struct inet_sk *is, bool nonblock)
{
	struct egress *eg = is->eg;
	uint64_t deadline = sock_deadline(s->sndtimeo_ns);
	long r;
	int err;

	for (;;) {
		egress_update(is);
		switch (eg->st) {
		case EG_OPEN:
			if (eg->told)
				return -EISCONN;
			eg->told = true;
			return 0;
		case EG_FAILED:
			/* Reported once (here or by SO_ERROR); then a new try. */
			err = is->e.err;
			is->e.err = 0;
			kfree(eg);
			is->eg = NULL;
			return err ? -err : -ENOTCONN;
		default:
			break;
		}
		if (nonblock)
			return -EALREADY;
		r = vsock_sk_sleep(eg->vs, eg->st == EG_CONNECTING, deadline);
		if (r == -EINTR)
			return -ERESTARTSYS; /* a restarted connect() goes on waiting */
		if (r == -ETIMEDOUT)
			return -EINPROGRESS; /* SO_SNDTIMEO ran out, as Linux says */
	}
}

bool egress_connected(struct inet_sk *is)
{
	egress_update(is);
	return is->eg->st == EG_OPEN;
}

/* Until the connection is open, a send or receive waits for it (or says
 * -EAGAIN): 0 once open, else -errno. */
static long wait_open(struct socket *s, struct inet_sk *is, int flags)
{
	struct egress *eg = is->eg;
	long r;

	for (;;) {
		egress_update(is);
		if (eg->st == EG_OPEN)
			return 0;
		if (eg->st == EG_FAILED) {
			r = is->e.err ? -is->e.err : -ENOTCONN;
			is->e.err = 0;
			return r;
		}
		if (flags & MSG_DONTWAIT)
			return -EAGAIN;
		r = vsock_sk_sleep(eg->vs, eg->st == EG_CONNECTING, 0);
		if (r == -EINTR)
			return -ERESTARTSYS;
	}
}

long egress_send(struct socket *s, struct inet_sk *is, struct sock_iter *it, int flags)
{
	long r = wait_open(s, is, flags);

	return r ? r : vsock_stream_send(is->eg->vs, s, it, flags);
}

long egress_recv(struct socket *s, struct inet_sk *is, struct sock_iter *it, int flags)
{
	long r = wait_open(s, is, flags);

	return r ? r : vsock_stream_recv(is->eg->vs, s, it, flags);
}

int egress_shutdown(struct inet_sk *is, int how)
{
	if (!egress_connected(is))
		return -ENOTCONN;
	return vsock_stream_shutdown(is->eg->vs, how);
}

unsigned int egress_poll(struct inet_sk *is)
{
	struct egress *eg = is->eg;

	egress_update(is);
	switch (eg->st) {
	case EG_OPEN:
		return vsock_stream_poll(eg->vs);
	case EG_FAILED: /* as a refused connection polls on Linux */
		return POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM | POLLHUP | POLLRDHUP |
		       (is->e.err ? POLLERR : 0);
	default:
		return 0;
	}
}

void egress_poll_wait(struct inet_sk *is, struct poll_table *pt)
{
	if (is->eg->vs)
		vsock_stream_poll_wait(is->eg->vs, pt);
}

int egress_inq(struct inet_sk *is)
{
	return egress_connected(is) ? (int)is->eg->vs->rx.len : 0;
}

void egress_release(struct inet_sk *is)
{
	struct egress *eg = is->eg;

	if (eg->vs)
		vsock_stream_close(eg->vs);
	kfree(eg);
	is->eg = NULL;
}
