/* SPDX-License-Identifier: MIT */
/*
 * AF_VSOCK stream sockets over the virtio-vsock driver (vsock.c), with
 * Linux's behaviour where a program can tell: connect() to a port nobody
 * listens on fails with ECONNRESET, after 2 s without an answer with
 * ETIMEDOUT; a stream the peer reset reads as end of file and writes fail
 * with EPIPE; a transport reset (snapshot restore) fails every connection
 * with ECONNRESET once, and listening sockets carry on.
 *
 * close() sends a full SHUTDOWN and leaves the connection to finish by
 * itself: the host's RST (once it has passed every byte on) frees it, or,
 * after VSOCK_CLOSE_TIMEOUT_NS, our own RST does.
 */
#include <asm/ioctls.h>
#include <asm/socket.h>
#include <linux/poll.h>

#include "errno_k.h"
#include "kpoll.h"
#include "ktime.h"
#include "mm.h"
#include "socket.h"
#include "uaccess.h"
#include "drivers/vsock.h"

/* <linux/vm_sockets.h>, which wants glibc's headers. */
struct sockaddr_vm {
	uint16_t svm_family;
	uint16_t svm_reserved1;
	uint32_t svm_port;
	uint32_t svm_cid;
	uint8_t svm_flags;
	uint8_t svm_zero[3];
};

#define SO_VM_SOCKETS_BUFFER_SIZE         0
#define SO_VM_SOCKETS_BUFFER_MIN_SIZE     1
#define SO_VM_SOCKETS_BUFFER_MAX_SIZE     2
#define SO_VM_SOCKETS_CONNECT_TIMEOUT_OLD 6
#define SO_VM_SOCKETS_CONNECT_TIMEOUT_NEW 8

static const struct sock_ops vsock_ops;

struct vsock_sk *vsock_sk_alloc(void)
{
	struct vsock_sk *vs = kzalloc(sizeof(*vs));

	if (!vs)
		return NULL;
	vs->state = VSK_OPEN;
	vs->lcid = VSOCK_CID_ANY;
	vs->lport = VSOCK_PORT_ANY;
	vs->connect_timeout_ns = VSOCK_CONNECT_TIMEOUT_NS;
	return vs;
}

void vsock_sk_wake(struct vsock_sk *vs)
{
	wake_all(&vs->wq);
	if (vs->notify)
		vs->notify(vs);
}

void vsock_sk_incoming(struct vsock_sk *l, struct vsock_sk *vs)
{
	vs->listener = l;
	vs->acc_next = NULL;
	if (l->acc_tail)
		l->acc_tail->acc_next = vs;
	else
		l->acc_head = vs;
	l->acc_tail = vs;
	l->nr_acc++;
	wake_all(&l->wq);
}

static struct vsock_sk *accept_pop(struct vsock_sk *l)
{
	struct vsock_sk *vs = l->acc_head;

	if (!vs)
		return NULL;
	l->acc_head = vs->acc_next;
	if (!l->acc_head)
		l->acc_tail = NULL;
	l->nr_acc--;
	vs->listener = NULL;
	vs->acc_next = NULL;
	return vs;
}

long vsock_sk_sleep(struct vsock_sk *vs, bool tx, uint64_t deadline)
{
	struct wait_entry a = {0}, b = {0};
	long r;

	vsock_tx_flush();
	waitq_add(&vs->wq, &a);
	if (tx)
		waitq_add(&vsock_tx_wq, &b);
	r = wait_sleep(deadline);
	waitq_del(&a);
	waitq_del(&b);
	vsock_dev_poll();
	return r;
}

/* A sockaddr_vm as Linux checks it: EINVAL for anything else. */
static const struct sockaddr_vm *addr_check(const void *addr, int len)
{
	const struct sockaddr_vm *a = addr;

	if (len < (int)sizeof(*a) || a->svm_family != AF_VSOCK || a->svm_zero[0] ||
	    a->svm_zero[1] || a->svm_zero[2])
		return NULL;
	return a;
}

/* ---------------------------------------------------------------- timers */

static void connect_timeout(struct ktimer *kt)
{
	struct vsock_sk *vs = container_of(kt, struct vsock_sk, timer);

	if (vs->state != VSK_CONNECTING)
		return;
	if (!(vs->pending & VSK_P_REQUEST))
		vsock_owe_rst(vs->lport, vs->pport);
	vs->pending &= ~VSK_P_REQUEST;
	vs->state = VSK_DONE;
	vs->err = ETIMEDOUT;
	vsock_unhash(vs);
	vsock_sk_wake(vs);
	vsock_tx_flush();
}

static void close_timeout(struct ktimer *kt)
{
	struct vsock_sk *vs = container_of(kt, struct vsock_sk, timer);

	if (vs->state != VSK_CLOSING)
		return;
	vs->state = VSK_DEAD;
	vsock_owe(vs, VSK_P_RST); /* frees vs once sent */
	vsock_tx_flush();
}

/* ---------------------------------------------------------------- setup */

static int vs_bind(struct socket *s, const void *addr, int len)
{
	const struct sockaddr_vm *a = addr_check(addr, len);
	struct vsock_sk *vs = s->priv;
	uint32_t port;

	if (!a || vs->bound || vs->state != VSK_OPEN)
		return -EINVAL;
	if (a->svm_cid != VSOCK_CID_ANY && a->svm_cid != vsock_local_cid)
		return -EADDRNOTAVAIL;
	port = a->svm_port;
	if (port == VSOCK_PORT_ANY) {
		port = vsock_ephemeral_port();
		if (!port)
			return -EADDRNOTAVAIL;
	} else if (vsock_find_bound(port)) {
		return -EADDRINUSE;
	}
	vsock_bind_port(vs, port);
	vs->lcid = a->svm_cid;
	return 0;
}

static int vs_listen(struct socket *s, int backlog)
{
	struct vsock_sk *vs = s->priv;

	/* Linux wants a bound socket here: no port of its own choosing. */
	if ((vs->state != VSK_OPEN && vs->state != VSK_LISTEN) || !vs->bound)
		return -EINVAL;
	vs->state = VSK_LISTEN;
	vs->backlog = backlog;
	return 0;
}

static int vs_accept(struct socket *s, struct socket *ns, bool nonblock)
{
	struct vsock_sk *vs = s->priv, *child;
	uint64_t deadline = sock_deadline(s->rcvtimeo_ns);
	long r;

	vsock_dev_poll();
	for (;;) {
		if (vs->state != VSK_LISTEN)
			return -EINVAL;
		if (vs->acc_head)
			break;
		if (nonblock)
			return -EAGAIN;
		r = vsock_sk_sleep(vs, false, deadline);
		if (r == -EINTR)
			return -ERESTARTSYS;
		if (r == -ETIMEDOUT)
			return -EAGAIN;
	}
	child = accept_pop(vs);
	child->sock = ns;
	ns->ops = &vsock_ops;
	ns->priv = child;
	vsock_tx_flush();
	return 0;
}

static int connect_start(struct vsock_sk *vs, uint32_t port)
{
	if (!vs->bound) {
		uint32_t port = vsock_ephemeral_port();

		if (!port)
			return -EADDRNOTAVAIL;
		vsock_bind_port(vs, port);
	}
	vs->lcid = (uint32_t)vsock_local_cid;
	vs->pport = port;
	vs->err = 0;
	vs->peer_shut = vs->local_shut = 0;
	vs->tx_cnt = vs->rx_cnt = vs->fwd_cnt = vs->fwd_told = 0;
	vs->peer_buf_alloc = vs->peer_fwd_cnt = 0;
	vs->credit_asked = false;
	vsock_rx_free(vs);
	vs->state = VSK_CONNECTING;
	vsock_hash(vs);
	ktimer_add(&vs->timer, time_monotonic_ns() + vs->connect_timeout_ns, connect_timeout);
	vsock_owe(vs, VSK_P_REQUEST);
	return 0;
}

int vsock_stream_connect(struct vsock_sk *vs, uint32_t port)
{
	int err = connect_start(vs, port);

	vsock_tx_flush();
	return err;
}

/* kiln's VMM opens the host end of a stream while it handles the REQUEST,
 * before it answers, and takes the packets behind the REQUEST in order: so
 * bytes queued right after it reach the host in the same kick, and a
 * protocol in which the guest speaks first (the egress hello) does not
 * wait a round trip for the RESPONSE. Until the RESPONSE brings the host's
 * real credit, n bytes of it are assumed (the VMM grants far more). */
long vsock_stream_connect_with(struct vsock_sk *vs, uint32_t port, const void *p, size_t n)
{
	struct iovec iov = {.iov_base = (void *)p, .iov_len = n};
	struct sock_iter it;
	int err = connect_start(vs, port);
	long sent = 0;

	if (!err && n <= VSOCK_MAX_PAYLOAD) {
		vs->peer_buf_alloc = (uint32_t)n;
		sock_iter_init(&it, &iov, 1, false);
		sent = vsock_send_data(vs, &it, n);
	}
	vsock_tx_flush();
	return err ? err : sent < 0 ? 0 : sent;
}

/* A blocking connect() interrupted by a signal gives up, as Linux's does. */
static void connect_cancel(struct vsock_sk *vs)
{
	ktimer_del(&vs->timer);
	if (!(vs->pending & VSK_P_REQUEST))
		vsock_owe_rst(vs->lport, vs->pport);
	vs->pending &= ~VSK_P_REQUEST;
	vsock_unhash(vs);
	vs->state = VSK_OPEN;
	vsock_tx_flush();
}

static int vs_connect(struct socket *s, const void *addr, int len, bool nonblock)
{
	const struct sockaddr_vm *a = addr_check(addr, len);
	struct vsock_sk *vs = s->priv;
	int err;
	long r;

	if (!a)
		return -EINVAL;
	vsock_dev_poll();
	switch (vs->state) {
	case VSK_CONNECTED:
		return -EISCONN;
	case VSK_LISTEN:
		return -EINVAL;
	case VSK_CONNECTING:
		if (nonblock)
			return -EALREADY;
		break; /* wait for the one in progress */
	case VSK_DONE:
		if (vs->was_connected)
			return -EISCONN;
		if (vs->err) { /* the last attempt's failure, not yet reported */
			err = vs->err;
			vs->err = 0;
			vs->state = VSK_OPEN;
			return -err;
		}
		vs->state = VSK_OPEN;
		/* fall through */
	default:
		/* The device reaches the host only; there is no loopback. */
		if (a->svm_cid != VSOCK_HOST_CID)
			return -ENETUNREACH;
		err = vsock_stream_connect(vs, a->svm_port);
		if (err)
			return err;
		if (nonblock)
			return -EINPROGRESS;
	}
	while (vs->state == VSK_CONNECTING) {
		r = vsock_sk_sleep(vs, false, 0);
		if (r == -EINTR && vs->state == VSK_CONNECTING) {
			connect_cancel(vs);
			return -ERESTARTSYS;
		}
	}
	if (vs->state == VSK_CONNECTED)
		return 0;
	err = vs->err ? vs->err : ECONNRESET;
	vs->err = 0;
	vs->state = VSK_OPEN; /* may try again */
	return -err;
}

static int vs_getname(struct socket *s, void *addr, bool peer)
{
	struct vsock_sk *vs = s->priv;
	struct sockaddr_vm a = {.svm_family = AF_VSOCK};

	if (peer) {
		if (vs->state != VSK_CONNECTED && !(vs->state == VSK_DONE && vs->was_connected))
			return -ENOTCONN;
		a.svm_cid = VSOCK_HOST_CID;
		a.svm_port = vs->pport;
	} else {
		a.svm_cid = vs->lcid;
		a.svm_port = vs->lport;
	}
	memcpy(addr, &a, sizeof(a));
	return sizeof(a);
}

/* ---------------------------------------------------------------- data */

long vsock_stream_send(struct vsock_sk *vs, struct socket *s, struct sock_iter *it, int flags)
{
	uint64_t deadline = 0;
	bool timed = false;
	size_t done = 0;
	long r = 0, n;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP;
	vsock_dev_poll();
	for (;;) {
		if (vs->err) {
			if (!done) {
				r = -vs->err;
				vs->err = 0;
			}
			break;
		}
		if (vs->state != VSK_CONNECTED) {
			r = vs->was_connected ? -EPIPE : -ENOTCONN;
			break;
		}
		if ((vs->local_shut & VSOCK_SHUT_SEND) || (vs->peer_shut & VSOCK_SHUT_RCV)) {
			r = -EPIPE;
			break;
		}
		if (!it->left)
			break;
		n = vsock_send_data(vs, it, it->left);
		if (n < 0) {
			r = n;
			break;
		}
		done += (size_t)n;
		if (n)
			continue;
		/* Blocked: on credit (ask for it, once) or on transmit room. */
		if (!vsock_credit(vs) && !vs->credit_asked) {
			vs->credit_asked = true;
			vsock_owe(vs, VSK_P_CREDIT_REQUEST);
		}
		if (flags & MSG_DONTWAIT) {
			r = -EAGAIN;
			break;
		}
		if (vsock_credit(vs) && vsock_tx_room())
			continue;
		if (!timed) {
			deadline = sock_deadline(s->sndtimeo_ns);
			timed = true;
		}
		n = vsock_sk_sleep(vs, true, deadline);
		if (n == -EINTR) {
			r = -ERESTARTSYS;
			break;
		}
		if (n == -ETIMEDOUT) {
			r = -EAGAIN;
			break;
		}
	}
	vsock_tx_flush();
	return done ? (long)done : r;
}

static long vs_sendmsg(struct socket *s, struct sock_iter *it, const void *addr, int addrlen,
                       int flags)
{
	struct vsock_sk *vs = s->priv;

	if (addr && !(flags & MSG_OOB)) {
		vsock_dev_poll();
		return vs->state == VSK_CONNECTED ? -EISCONN : -EOPNOTSUPP;
	}
	return vsock_stream_send(vs, s, it, flags);
}

long vsock_stream_recv(struct vsock_sk *vs, struct socket *s, struct sock_iter *it, int flags)
{
	bool peek = flags & MSG_PEEK, waitall = (flags & MSG_WAITALL) && !peek, timed = false;
	uint64_t deadline = 0;
	size_t done = 0;
	long r = 0;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP;
	if (flags & MSG_ERRQUEUE)
		return -EAGAIN; /* nothing is ever queued there */
	vsock_dev_poll();
	if (vs->state == VSK_OPEN || vs->state == VSK_LISTEN || vs->state == VSK_CONNECTING)
		return -ENOTCONN;
	if ((vs->local_shut & VSOCK_SHUT_RCV) || !it->left)
		return 0;
	for (;;) {
		if (vs->rx.len) {
			uint32_t n = (uint32_t)MIN((size_t)vs->rx.len, it->left);

			if (vsock_rx_copy(vs, it, n, peek)) {
				r = -EFAULT;
				break;
			}
			done += n;
			if (!peek)
				vsock_consumed(vs, n);
			if (!waitall || !it->left)
				break;
			continue;
		}
		if (vs->err) {
			if (!done) {
				r = -vs->err;
				vs->err = 0;
			}
			break;
		}
		if (vs->state != VSK_CONNECTED || (vs->peer_shut & VSOCK_SHUT_SEND) ||
		    (vs->local_shut & VSOCK_SHUT_RCV))
			break; /* end of file */
		if (flags & MSG_DONTWAIT) {
			r = -EAGAIN;
			break;
		}
		if (!timed) {
			deadline = sock_deadline(s->rcvtimeo_ns);
			timed = true;
		}
		r = vsock_sk_sleep(vs, false, deadline);
		if (r == -EINTR) {
			r = -ERESTARTSYS;
			break;
		}
		if (r == -ETIMEDOUT) {
			r = -EAGAIN;
			break;
		}
	}
	vsock_tx_flush();
	return done ? (long)done : r;
}

static long vs_recvmsg(struct socket *s, struct sock_iter *it, void *addr, int *addrlen, int flags,
                       int *msg_flags)
{
	return vsock_stream_recv(s->priv, s, it, flags);
}

int vsock_stream_shutdown(struct vsock_sk *vs, int how)
{
	uint8_t mode = (uint8_t)(how + 1), fresh; /* SHUT_RD -> RCV, SHUT_WR -> SEND */

	vsock_dev_poll();
	if (vs->state != VSK_CONNECTED && vs->state != VSK_DONE)
		return -ENOTCONN;
	fresh = mode & ~vs->local_shut;
	vs->local_shut |= mode;
	if (fresh & VSOCK_SHUT_RCV)
		vsock_rx_free(vs);
	if (fresh && vs->state == VSK_CONNECTED)
		vsock_owe(vs, VSK_P_SHUTDOWN);
	vsock_sk_wake(vs);
	vsock_tx_flush();
	return 0;
}

static int vs_shutdown(struct socket *s, int how)
{
	return vsock_stream_shutdown(s->priv, how);
}

/* ---------------------------------------------------------------- poll, options */

unsigned int vsock_stream_poll(struct vsock_sk *vs)
{
	unsigned int mask = 0;
	bool rd_shut, wr_shut;

	vsock_dev_poll();
	if (vs->err)
		mask |= POLLERR;
	rd_shut = (vs->peer_shut & VSOCK_SHUT_SEND) || (vs->local_shut & VSOCK_SHUT_RCV);
	wr_shut = vs->local_shut & VSOCK_SHUT_SEND;
	switch (vs->state) {
	case VSK_LISTEN:
		if (vs->acc_head)
			mask |= POLLIN | POLLRDNORM;
		break;
	case VSK_CONNECTING:
		break;
	case VSK_CONNECTED:
		if (vs->rx.len || rd_shut)
			mask |= POLLIN | POLLRDNORM;
		if (rd_shut)
			mask |= POLLRDHUP;
		if (vs->peer_shut == VSOCK_SHUT_BOTH || vs->local_shut == VSOCK_SHUT_BOTH ||
		    (wr_shut && (vs->peer_shut & VSOCK_SHUT_SEND)))
			mask |= POLLHUP;
		if (!wr_shut &&
		    ((vs->peer_shut & VSOCK_SHUT_RCV) || (vsock_credit(vs) && vsock_tx_room())))
			mask |= POLLOUT | POLLWRNORM;
		break;
	case VSK_DONE:
		mask |= POLLIN | POLLRDNORM | POLLRDHUP | POLLHUP;
		if (!wr_shut)
			mask |= POLLOUT | POLLWRNORM;
		break;
	default:
		mask |= POLLOUT | POLLWRNORM;
	}
	return mask;
}

static unsigned int vs_poll(struct socket *s)
{
	return vsock_stream_poll(s->priv);
}

void vsock_stream_poll_wait(struct vsock_sk *vs, struct poll_table *pt)
{
	poll_add_wait(pt, &vs->wq);
	if (vs->state == VSK_CONNECTED)
		poll_add_wait(pt, &vsock_tx_wq);
}

static void vs_poll_wait(struct socket *s, struct poll_table *pt)
{
	vsock_stream_poll_wait(s->priv, pt);
}

static long vs_ioctl(struct socket *s, unsigned int cmd, unsigned long arg)
{
	struct vsock_sk *vs = s->priv;
	int v;

	switch (cmd) {
	case FIONREAD: /* SIOCINQ */
		if (vs->state == VSK_LISTEN)
			return -EINVAL;
		vsock_dev_poll();
		v = (int)vs->rx.len;
		break;
	case TIOCOUTQ: /* SIOCOUTQ: nothing waits in the guest to be sent */
		v = 0;
		break;
	default:
		return -ENOTTY;
	}
	return copy_to_user((void *)arg, &v, sizeof(v));
}

struct timeval_k {
	int64_t sec, usec;
};

static int vs_getsockopt(struct socket *s, int level, int name, void *val, int *len)
{
	struct vsock_sk *vs = s->priv;
	uint64_t u = VSOCK_BUF_ALLOC;
	struct timeval_k tv;
	int v;

	if (level == SOL_SOCKET && name == SO_ERROR) {
		vsock_dev_poll();
		v = vs->err;
		vs->err = 0;
		*len = MIN(*len, (int)sizeof(v));
		memcpy(val, &v, (size_t)*len);
		return 0;
	}
	if (level != AF_VSOCK)
		return -ENOPROTOOPT;
	switch (name) {
	case SO_VM_SOCKETS_BUFFER_SIZE:
	case SO_VM_SOCKETS_BUFFER_MIN_SIZE:
	case SO_VM_SOCKETS_BUFFER_MAX_SIZE:
		if (*len < (int)sizeof(u))
			return -EINVAL;
		*len = sizeof(u);
		memcpy(val, &u, sizeof(u));
		return 0;
	case SO_VM_SOCKETS_CONNECT_TIMEOUT_OLD:
	case SO_VM_SOCKETS_CONNECT_TIMEOUT_NEW:
		if (*len < (int)sizeof(tv))
			return -EINVAL;
		tv.sec = (int64_t)(vs->connect_timeout_ns / 1000000000ULL);
		tv.usec = (int64_t)(vs->connect_timeout_ns % 1000000000ULL / 1000);
		*len = sizeof(tv);
		memcpy(val, &tv, sizeof(tv));
		return 0;
	}
	return -ENOPROTOOPT;
}

static int vs_setsockopt(struct socket *s, int level, int name, const void *val, int len)
{
	struct vsock_sk *vs = s->priv;
	struct timeval_k tv;

	if (level != AF_VSOCK)
		return -ENOPROTOOPT;
	switch (name) {
	case SO_VM_SOCKETS_BUFFER_SIZE:
	case SO_VM_SOCKETS_BUFFER_MIN_SIZE:
	case SO_VM_SOCKETS_BUFFER_MAX_SIZE:
		/* Accepted; every connection advertises VSOCK_BUF_ALLOC. */
		return len < (int)sizeof(uint64_t) ? -EINVAL : 0;
	case SO_VM_SOCKETS_CONNECT_TIMEOUT_OLD:
	case SO_VM_SOCKETS_CONNECT_TIMEOUT_NEW:
		if (len < (int)sizeof(tv))
			return -EINVAL;
		memcpy(&tv, val, sizeof(tv));
		if (tv.sec < 0 || tv.usec < 0 || tv.usec >= 1000000 || tv.sec > (1LL << 31))
			return -ERANGE;
		vs->connect_timeout_ns =
		    (uint64_t)tv.sec * 1000000000ULL + (uint64_t)tv.usec * 1000;
		if (!vs->connect_timeout_ns)
			vs->connect_timeout_ns = VSOCK_CONNECT_TIMEOUT_NS;
		return 0;
	}
	return -ENOPROTOOPT;
}

/* ---------------------------------------------------------------- close */

/* The file of a connection is gone (or it was never accepted): finish it
 * in the background. vs may be freed on return. */
static void orphan_close(struct vsock_sk *vs)
{
	vs->sock = NULL;
	vs->notify = NULL;
	vsock_rx_free(vs);
	switch (vs->state) {
	case VSK_CONNECTED:
		if (vs->peer_shut == VSOCK_SHUT_BOTH) {
			vs->state = VSK_DEAD;
			vsock_owe(vs, VSK_P_RST);
			return;
		}
		vs->state = VSK_CLOSING;
		ktimer_add(&vs->timer, time_monotonic_ns() + VSOCK_CLOSE_TIMEOUT_NS, close_timeout);
		if (vs->local_shut != VSOCK_SHUT_BOTH) {
			vs->local_shut = VSOCK_SHUT_BOTH;
			vsock_owe(vs, VSK_P_SHUTDOWN);
		}
		return;
	case VSK_CONNECTING:
		if (!(vs->pending & VSK_P_REQUEST))
			vsock_owe_rst(vs->lport, vs->pport);
		vsock_free(vs);
		return;
	case VSK_DONE:
		if (vs->pending & VSK_P_RST) {
			vs->state = VSK_DEAD; /* freed once the RST is out */
			return;
		}
		vsock_free(vs);
		return;
	default: /* OPEN, LISTEN */
		vsock_free(vs);
	}
}

void vsock_stream_close(struct vsock_sk *vs)
{
	vsock_dev_poll();
	orphan_close(vs);
	vsock_tx_flush();
}

static void vs_release(struct socket *s)
{
	struct vsock_sk *vs = s->priv, *child;

	if (!vs)
		return;
	vsock_dev_poll();
	/* Connections never accepted are refused after all, as Linux does. */
	if (vs->state == VSK_LISTEN) {
		while ((child = accept_pop(vs))) {
			if (child->state == VSK_CONNECTED) {
				child->state = VSK_DEAD;
				vsock_owe(child, VSK_P_RST); /* frees it once sent */
			} else {
				orphan_close(child);
			}
		}
	}
	orphan_close(vs);
	vsock_tx_flush();
}

static const struct sock_ops vsock_ops = {
    .bind = vs_bind,
    .connect = vs_connect,
    .listen = vs_listen,
    .accept = vs_accept,
    .getname = vs_getname,
    .shutdown = vs_shutdown,
    .sendmsg = vs_sendmsg,
    .recvmsg = vs_recvmsg,
    .getsockopt = vs_getsockopt,
    .setsockopt = vs_setsockopt,
    .poll = vs_poll,
    .poll_wait = vs_poll_wait,
    .ioctl = vs_ioctl,
    .release = vs_release,
};

static int vs_create(struct socket *s, int protocol)
{
	struct vsock_sk *vs;
	int err;

	if (s->type != SOCK_STREAM)
		return -ESOCKTNOSUPPORT;
	if (protocol && protocol != AF_VSOCK)
		return -EPROTONOSUPPORT;
	err = vsock_dev_up();
	if (err)
		return err == -ENOMEM ? err : -EAFNOSUPPORT;
	vs = vsock_sk_alloc();
	if (!vs)
		return -ENOMEM;
	vs->sock = s;
	s->ops = &vsock_ops;
	s->priv = vs;
	return 0;
}

const struct sock_family vsock_family = {
    .family = AF_VSOCK,
    .init = vsock_init,
    .create = vs_create,
};
