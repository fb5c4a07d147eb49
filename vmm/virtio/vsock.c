/* SPDX-License-Identifier: MIT */
/*
 * virtio-vsock (virtio 1.2, 5.10), host side in Firecracker's hybrid style:
 * the VM's vsock is a unix socket. A host client connects to it and writes
 * "CONNECT <port>\n" to reach guest port <port>, and gets "OK <host port>\n";
 * a guest connection to CID 2 port P is a connection to "<path>_P".
 *
 * This file is the device: config space, the three queues, the listening
 * socket. Each connection's unix-socket side lives in vsock_conn.c.
 *
 * What a guest can make us hold is bounded: at most VSOCK_MAX_CONNS
 * connections, each with at most its advertised window of guest data the
 * host has not read yet (VSOCK_BUF_ALLOC; VSOCK_BUF_BIG for at most
 * VSOCK_BIG_CONNS of them), plus VSOCK_RST_RING owed RSTs. Host
 * data is read straight into posted receive buffers, never queued here.
 */
#include <endian.h>
#include <errno.h>
#include <ev.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <kiln/trace.h>

#include "vsock.h"

#define VIRTIO_VSOCK_F_STREAM 0

#define LOG_LINES_PER_SEC 10

/* Guest misbehaviour can repeat at line rate; keep stderr readable. The
 * budget is the device's, shared with the transport's messages. */
void vsock_log(struct vsock *v, const char *fmt, ...)
{
	struct virtio_dev *dev = v->dev;
	struct timespec now;
	char msg[200];
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((uint64_t)now.tv_sec != dev->log_window) {
		dev->log_window = (uint64_t)now.tv_sec;
		dev->log_count = 0;
	}
	if (dev->log_count >= LOG_LINES_PER_SEC)
		return;
	dev->log_count++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "kiln-vmm: vsock: %s%s\n", msg,
	        dev->log_count == LOG_LINES_PER_SEC ? " (more suppressed)" : "");
}

static bool queue_live(struct virtio_dev *dev, unsigned q)
{
	return dev->vq[q].ready && !dev->vq[q].broken && (dev->status & VIRTIO_STATUS_DRIVER_OK);
}

bool vsock_queue_rst(struct vsock *v, uint32_t lport, uint32_t pport, uint16_t type)
{
	struct vsock_rst *r;

	if (v->rst_len == VSOCK_RST_RING)
		return false;
	r = &v->rst[(v->rst_head + v->rst_len++) % VSOCK_RST_RING];
	r->lport = lport;
	r->pport = pport;
	r->type = type;
	return true;
}

static void emit_rst(struct vsock *v, const struct iovec *iov, unsigned n)
{
	struct vsock_rst *r = &v->rst[v->rst_head];
	struct vsock_hdr_le h = {
	    .src_cid = htole64(VSOCK_HOST_CID),
	    .dst_cid = htole64(v->guest_cid),
	    .src_port = htole32(r->lport),
	    .dst_port = htole32(r->pport),
	    .type = htole16(r->type),
	    .op = htole16(VSOCK_OP_RST),
	};

	virtq_iov_write(iov, n, 0, &h, sizeof(h));
	v->rst_head = (v->rst_head + 1) % VSOCK_RST_RING;
	v->rst_len--;
}

/* Interrupt the guest for what the ring holds, unless all of it is lazy
 * (vsock_conn_emit): then lazy_timer does, if nothing else does first. A
 * packet waiting for a buffer is never lazy: the driver refills only after
 * an interrupt. */
static void rx_signal(struct vsock *v, bool waiting)
{
	struct virtq *q = &v->dev->vq[VSOCK_RXQ];

	if (v->rx_urgent || waiting) {
		v->rx_urgent = false;
		ev_timer_stop(v->loop, &v->lazy_timer);
		virtio_dev_notify(v->dev, VSOCK_RXQ);
	} else if (q->used_idx != q->signalled_used && !ev_is_active(&v->lazy_timer)) {
		ev_timer_set(&v->lazy_timer, v->lazy_s, 0);
		ev_timer_start(v->loop, &v->lazy_timer);
	}
}

static void lazy_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct vsock *v = w->data;

	pthread_mutex_lock(&v->dev->lock);
	vsock_sync_reset(v);
	v->rx_urgent = true;
	rx_signal(v, false);
	pthread_mutex_unlock(&v->dev->lock);
}

void vsock_rx_pump(struct vsock *v)
{
	struct virtio_dev *dev = v->dev;
	struct virtq *q = &dev->vq[VSOCK_RXQ];
	struct virtq_chain chain;
	struct vsock_conn *c;
	bool waiting;
	unsigned n;
	int r, len;

	if (!queue_live(dev, VSOCK_RXQ))
		return;
	for (n = 0; n < q->size; n++) {
		c = TAILQ_FIRST(&v->rxq);
		if (!c && !v->rst_len)
			break;
		r = virtq_pop(&dev->vm->mem, q, &chain);
		if (r < 0)
			virtio_dev_fail(dev, q->error);
		if (r <= 0)
			break;
		if (chain.in_len < VSOCK_HDR_SIZE) {
			vsock_log(v, "receive buffer of %llu bytes cannot hold a header",
			          (unsigned long long)chain.in_len);
			v->rx_urgent = true;
			virtq_push(&dev->vm->mem, q, chain.head, 0);
			continue;
		}
		if (v->rst_len) {
			v->rx_urgent = true;
			emit_rst(v, chain.iov + chain.n_out, chain.n_in);
			virtq_push(&dev->vm->mem, q, chain.head, VSOCK_HDR_SIZE);
			continue;
		}
		TAILQ_REMOVE(&v->rxq, c, rxq_link);
		c->on_rxq = false;
		len = vsock_conn_emit(c, chain.iov + chain.n_out, chain.n_in, chain.in_len);
		if (len > 0) {
			virtq_push(&dev->vm->mem, q, chain.head, (uint32_t)len);
		} else if (len < 0) {
			/* A buffer with no room for payload is of no use to a
			 * stream; hand it back empty (the driver drops it). */
			vsock_log(v, "receive buffer of %llu bytes has no room for data",
			          (unsigned long long)chain.in_len);
			v->rx_urgent = true;
			virtq_push(&dev->vm->mem, q, chain.head, 0);
		} else {
			virtq_unpop(q);
		}
	}
	/* Kicks for new receive buffers only while packets wait for one: the
	 * driver refills after every interrupt, and each kick is an exit (and
	 * a wake-up here) on the way to the reader it is waking. */
	waiting = v->rst_len || !TAILQ_EMPTY(&v->rxq);
	rx_signal(v, waiting);
	if (virtq_want_kicks(&dev->vm->mem, q, waiting) || (waiting && n == q->size))
		virtio_dev_kick(dev, VSOCK_RXQ);
	if (v->tx_stalled && v->rst_len < VSOCK_RST_RING) {
		v->tx_stalled = false;
		virtio_dev_kick(dev, VSOCK_TXQ);
	}
}

static void decode(struct vsock_pkt *p, const struct vsock_hdr_le *h)
{
	p->src_cid = le64toh(h->src_cid);
	p->dst_cid = le64toh(h->dst_cid);
	p->src_port = le32toh(h->src_port);
	p->dst_port = le32toh(h->dst_port);
	p->len = le32toh(h->len);
	p->type = le16toh(h->type);
	p->op = le16toh(h->op);
	p->flags = le32toh(h->flags);
	p->buf_alloc = le32toh(h->buf_alloc);
	p->fwd_cnt = le32toh(h->fwd_cnt);
}

static void tx_packet(struct vsock *v, const struct virtq_chain *chain)
{
	struct vsock_hdr_le h;
	struct vsock_pkt p;

	if (chain->out_len < VSOCK_HDR_SIZE) {
		vsock_log(v, "dropped a %llu-byte packet: shorter than its header",
		          (unsigned long long)chain->out_len);
		return;
	}
	virtq_iov_read(chain->iov, chain->n_out, 0, &h, sizeof(h));
	decode(&p, &h);
	if (p.dst_cid != VSOCK_HOST_CID || p.src_cid != v->guest_cid) {
		vsock_log(v, "dropped a packet from CID %llu to CID %llu (guest is %llu)",
		          (unsigned long long)p.src_cid, (unsigned long long)p.dst_cid,
		          (unsigned long long)v->guest_cid);
		return;
	}
	if (p.len > chain->out_len - VSOCK_HDR_SIZE) {
		vsock_log(v, "dropped a packet whose length %u exceeds its %llu-byte buffers",
		          p.len, (unsigned long long)(chain->out_len - VSOCK_HDR_SIZE));
		return;
	}
	/* 5.10.6.3: unknown types get an RST (but an RST never does). */
	if (p.type != VSOCK_TYPE_STREAM) {
		if (p.op != VSOCK_OP_RST)
			vsock_queue_rst(v, p.dst_port, p.src_port, p.type);
		return;
	}
	vsock_conn_recv(v, &p, chain->iov, chain->n_out, VSOCK_HDR_SIZE);
}

static void vsock_tx(struct vsock *v)
{
	struct virtio_dev *dev = v->dev;
	struct virtq *q = &dev->vq[VSOCK_TXQ];
	struct virtq_chain chain;
	unsigned n;
	int r;

	for (n = 0; n < q->size; n++) {
		/* Any packet may need an RST slot. With none left, the spec's
		 * answer (5.10.6.1) is to stop until the driver drains rx. */
		if (v->rst_len == VSOCK_RST_RING)
			vsock_rx_pump(v);
		if (v->rst_len == VSOCK_RST_RING) {
			v->tx_stalled = true;
			break;
		}
		r = virtq_pop(&dev->vm->mem, q, &chain);
		if (r < 0)
			virtio_dev_fail(dev, q->error);
		if (r <= 0)
			break;
		tx_packet(v, &chain);
		virtq_push(&dev->vm->mem, q, chain.head, 0);
	}
	virtio_dev_notify(dev, VSOCK_TXQ);
	if (n == q->size)
		virtio_dev_kick(dev, VSOCK_TXQ);
	vsock_rx_pump(v);
}

static void event_deliver(struct vsock *v)
{
	struct virtio_dev *dev = v->dev;
	struct virtq *q = &dev->vq[VSOCK_EVQ];
	struct virtq_chain chain;
	uint32_t id = htole32(VSOCK_EVENT_TRANSPORT_RESET);
	unsigned n;
	int r;

	for (n = 0; v->event_pending && queue_live(dev, VSOCK_EVQ) && n < q->size; n++) {
		r = virtq_pop(&dev->vm->mem, q, &chain);
		if (r < 0)
			virtio_dev_fail(dev, q->error);
		if (r <= 0)
			break;
		if (chain.in_len < sizeof(id)) {
			vsock_log(v, "event buffer of %llu bytes is too small",
			          (unsigned long long)chain.in_len);
			virtq_push(&dev->vm->mem, q, chain.head, 0);
			continue;
		}
		virtq_iov_write(chain.iov + chain.n_out, chain.n_in, 0, &id, sizeof(id));
		virtq_push(&dev->vm->mem, q, chain.head, sizeof(id));
		v->event_pending = false;
	}
	virtio_dev_notify(dev, VSOCK_EVQ);
}

static void drop_all(struct vsock *v)
{
	vsock_conn_reset_all(v);
	v->rst_head = v->rst_len = 0;
	v->tx_stalled = false;
}

void vsock_transport_reset(struct vsock *v)
{
	drop_all(v);
	v->event_pending = true;
	event_deliver(v);
}

bool vsock_sync_reset(struct vsock *v)
{
	if (!v->reset_pending)
		return false;
	v->reset_pending = false;
	drop_all(v);
	v->event_pending = false;
	return true;
}

static void vsock_notify(struct virtio_dev *dev, unsigned q)
{
	struct vsock *v = dev->priv;

	vsock_sync_reset(v);
	if (q == VSOCK_TXQ) {
		kiln_trace(dev->vm->cfg.trace_fd, KILN_TRACE_VMM_KICK);
		vsock_tx(v);
		kiln_trace(dev->vm->cfg.trace_fd, KILN_TRACE_VMM_KICKED);
	} else if (q == VSOCK_RXQ)
		vsock_rx_pump(v);
	else
		event_deliver(v);
}

static void vsock_config_read(struct virtio_dev *dev, uint32_t off, void *buf, uint32_t len)
{
	struct vsock *v = dev->priv;
	uint64_t cid = htole64(v->guest_cid);

	memcpy(buf, (uint8_t *)&cid + off, len);
}

/* vCPU thread: connections and watchers belong to the loop. */
static void vsock_reset(struct virtio_dev *dev)
{
	struct vsock *v = dev->priv;

	v->reset_pending = true;
	ev_async_send(v->loop, &v->reset_async);
}

static void reset_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct vsock *v = w->data;

	pthread_mutex_lock(&v->dev->lock);
	vsock_sync_reset(v);
	pthread_mutex_unlock(&v->dev->lock);
}

static void listen_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct vsock *v = w->data;
	int i, fd;

	pthread_mutex_lock(&v->dev->lock);
	vsock_sync_reset(v);
	for (i = 0; i < 16; i++) {
		fd = accept4(v->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0 &&
		    (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
			/* The listener stays readable: back off instead of spinning. */
			fprintf(stderr, "kiln-vmm: vsock: accept: %s; retrying in %.0f s\n",
			        strerror(errno), VSOCK_ACCEPT_RETRY);
			ev_io_stop(loop, &v->listen_watch);
			ev_timer_set(&v->listen_retry, VSOCK_ACCEPT_RETRY, 0);
			ev_timer_start(loop, &v->listen_retry);
			break;
		}
		if (fd < 0)
			break;
		/* At the limit the client sees its connection closed at once. */
		if (!vsock_conn_accept(v, fd))
			close(fd);
	}
	pthread_mutex_unlock(&v->dev->lock);
}

static void listen_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct vsock *v = w->data;

	ev_io_start(loop, &v->listen_watch);
}

/* The VM is stopping: hand the host what the guest already sent, then
 * close every connection. */
static void vsock_drain(struct virtio_dev *dev)
{
	struct vsock *v = dev->priv;
	struct vsock_conn *c;

	vsock_sync_reset(v);
	if (queue_live(dev, VSOCK_TXQ))
		vsock_tx(v);
	for (c = TAILQ_FIRST(&v->all); c; c = TAILQ_NEXT(c, all_link))
		vsock_conn_flush(c);
	vsock_conn_free_all(v);
}

static void close_listener(struct vsock *v)
{
	struct stat st;

	ev_io_stop(v->loop, &v->listen_watch);
	ev_timer_stop(v->loop, &v->listen_retry);
	ev_timer_stop(v->loop, &v->lazy_timer);
	ev_async_stop(v->loop, &v->reset_async);
	if (v->listen_fd >= 0)
		close(v->listen_fd);
	/* Another process may have bound the path since; leave its socket. */
	if (v->path_ino && lstat(v->path, &st) == 0 && st.st_dev == v->path_dev &&
	    st.st_ino == v->path_ino)
		unlink(v->path);
}

static void vsock_destroy(struct virtio_dev *dev)
{
	struct vsock *v = dev->priv;

	vsock_conn_free_all(v);
	close_listener(v);
	free(v);
}

/* A restored VM: the guest's connections had their host side in another
 * process. The device has no state of its own besides the transport's (the
 * CID comes from the command line, and a clone may have another). */
static void vsock_restored(struct virtio_dev *dev)
{
	if (dev->status & VIRTIO_STATUS_DRIVER_OK)
		vsock_transport_reset(dev->priv);
}

static const struct virtio_dev_ops vsock_ops = {
    .name = "vsock",
    .device_id = VIRTIO_ID_VSOCK,
    .features = 1ULL << VIRTIO_VSOCK_F_STREAM,
    .nr_queues = 3,
    .queue_max = VIRTQ_MAX_SIZE,
    .config_size = 8, /* le64 guest_cid */
    .config_read = vsock_config_read,
    .queue_notify = vsock_notify,
    .reset = vsock_reset,
    .drain = vsock_drain,
    .destroy = vsock_destroy,
    .restored = vsock_restored,
};

/* Listen on path, replacing a stale socket but nothing else. */
static int open_listener(struct vsock *v)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd;

	if (lstat(v->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (unlink(v->path) < 0)
			return -errno;
	}
	strcpy(sa.sun_path, v->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, SOMAXCONN) < 0 ||
	    lstat(v->path, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	v->listen_fd = fd;
	v->path_dev = st.st_dev;
	v->path_ino = st.st_ino;
	return 0;
}

bool vsock_bytes(struct vm *vm, uint64_t *rx, uint64_t *tx)
{
	for (int i = 0; i < vm->nr_devs; i++) {
		struct virtio_dev *dev = vm->devs[i];
		struct vsock *v;

		if (dev->ops != &vsock_ops)
			continue;
		v = dev->priv;
		pthread_mutex_lock(&dev->lock);
		*rx = v->rx_bytes;
		*tx = v->tx_bytes;
		pthread_mutex_unlock(&dev->lock);
		return true;
	}
	return false;
}

int vsock_create(struct vm *vm, uint64_t guest_cid, const char *uds_path)
{
	struct vsock *v;
	unsigned i;
	int err;

	/* 5.10.4: CIDs 0, 1, 2 and ~0 are reserved; the upper half is zero. */
	if (guest_cid <= VSOCK_HOST_CID || guest_cid >= 0xffffffffULL)
		return -EINVAL;
	/* Leave room for the "_<port>" of guest-initiated connections. */
	if (!uds_path || !*uds_path || strlen(uds_path) + 11 >= sizeof(v->path))
		return -ENAMETOOLONG;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->loop = vm->loop;
	v->guest_cid = guest_cid;
	v->listen_fd = -1;
	v->next_port = VSOCK_PORT_BASE;
	v->lazy_s = VSOCK_LAZY_IRQ;
	v->connect_s = VSOCK_CONNECT_TIMEOUT;
	strcpy(v->path, uds_path);
	for (i = 0; i < VSOCK_HASH_SIZE; i++)
		LIST_INIT(&v->hash[i]);
	TAILQ_INIT(&v->all);
	TAILQ_INIT(&v->rxq);
	ev_io_init(&v->listen_watch, listen_cb, -1, EV_READ);
	ev_init(&v->listen_retry, listen_retry_cb);
	ev_init(&v->lazy_timer, lazy_cb);
	ev_async_init(&v->reset_async, reset_cb);
	v->listen_watch.data = v->listen_retry.data = v->reset_async.data = v->lazy_timer.data = v;
	err = open_listener(v);
	if (err < 0)
		goto fail;
	v->dev = virtio_mmio_add(vm, &vsock_ops, v);
	if (!v->dev) {
		err = -errno;
		goto fail;
	}
	ev_io_set(&v->listen_watch, v->listen_fd, EV_READ);
	ev_io_start(v->loop, &v->listen_watch);
	ev_async_start(v->loop, &v->reset_async);
	return 0;
fail:
	close_listener(v);
	free(v);
	return err;
}
