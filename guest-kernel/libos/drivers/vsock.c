/* SPDX-License-Identifier: MIT */
/*
 * virtio-vsock driver (virtio 1.2, 5.10): the three queues, the packets and
 * the stream protocol under the AF_VSOCK sockets of sock_vsock.c.
 *
 * Receive: 64 KiB buffers (the host sends at most 64 KiB a packet) stay
 * posted; a packet's bytes are copied into its connection's receive buffer
 * (vsock.h) and the buffer goes straight back, so a slow reader holds no
 * device buffer. Its credit (VSOCK_BUF_ALLOC) bounds what the host may send.
 * Transmit: data is copied from the program into one of a few 64 KiB slots
 * and sent with a separate header; control packets (REQUEST, SHUTDOWN,
 * RST ...) are owed by their socket (vs->pending) and go out as soon as a
 * descriptor is free, so code that cannot wait (the interrupt handler,
 * timers, close) never has to.
 *
 * The device is brought up at the first socket(AF_VSOCK): a VM that never
 * uses vsock pays nothing at boot. Everything runs on the library OS's
 * one thread of control, so nothing here needs a lock.
 */
#include "bootinfo.h"
#include "mm.h"
#include "printk.h"
#include "socket.h"
#include "virtio.h"
#include "vsock.h"

#define VIRTIO_ID_VSOCK       19
#define VIRTIO_VSOCK_F_STREAM 1ULL /* bit 0 */
#define QUEUE_SIZE            64
#define RX_BUFS               16
#define RX_BUF_PAGES          16 /* 64 KiB: header and up to 65492 bytes */
#define TX_SLOTS              16
#define TX_SLOT_PAGES         16 /* 64 KiB of payload */
#define EV_BUFS               4
#define HDR_STRIDE            64
#define RST_RING              64
#define HASH_SIZE             64
#define EPHEMERAL_FIRST       49152U
#define EVENT_TRANSPORT_RESET 0

#define RXQ (&q[0])
#define TXQ (&q[1])
#define EVQ (&q[2])

uint64_t vsock_local_cid;
struct waitq vsock_tx_wq;

static const struct bootinfo *boot;
static bool up, failed;
static struct vio_dev dev;
static struct vio_queue q[3];
static uint64_t rx_pa[QUEUE_SIZE]; /* by descriptor: the buffer posted there */
static uint64_t ev_page;           /* EV_BUFS 8-byte event buffers */
static uint64_t hdr_pa;            /* one header per transmit descriptor */
static uint64_t slot_pa[TX_SLOTS]; /* transmit payload slots */
static int8_t slot_of[QUEUE_SIZE]; /* by chain head: its slot, or -1 */
static uint32_t slots_free;        /* bitmap */
static bool tx_added;              /* buffers added since the last kick */

/* RSTs owed to tuples with no socket (ours, theirs). */
static struct {
	uint32_t lport, pport;
	uint16_t type;
} rst_ring[RST_RING];
static unsigned rst_head, rst_len;

/* Sockets owing control packets, oldest first. */
static struct vsock_sk *owed_head, *owed_tail;
static struct vsock_sk *conn_hash[HASH_SIZE]; /* by (lport, pport) */
static struct vsock_sk *bound_list;           /* sockets holding a local port */
static uint32_t next_ephemeral = EPHEMERAL_FIRST;

static void vsock_irq(void);

/* ---------------------------------------------------------------- tables */

static unsigned hash_of(uint32_t lport, uint32_t pport)
{
	return (lport * 2654435761u ^ pport) % HASH_SIZE;
}

void vsock_hash(struct vsock_sk *vs)
{
	unsigned h = hash_of(vs->lport, vs->pport);

	if (vs->hashed)
		return;
	vs->hash_next = conn_hash[h];
	conn_hash[h] = vs;
	vs->hashed = true;
}

void vsock_unhash(struct vsock_sk *vs)
{
	if (!vs->hashed)
		return;
	for (struct vsock_sk **pp = &conn_hash[hash_of(vs->lport, vs->pport)]; *pp;
	     pp = &(*pp)->hash_next) {
		if (*pp == vs) {
			*pp = vs->hash_next;
			break;
		}
	}
	vs->hashed = false;
}

static struct vsock_sk *conn_find(uint32_t lport, uint32_t pport)
{
	for (struct vsock_sk *vs = conn_hash[hash_of(lport, pport)]; vs; vs = vs->hash_next)
		if (vs->lport == lport && vs->pport == pport)
			return vs;
	return NULL;
}

struct vsock_sk *vsock_find_bound(uint32_t port)
{
	for (struct vsock_sk *vs = bound_list; vs; vs = vs->bound_next)
		if (vs->lport == port)
			return vs;
	return NULL;
}

void vsock_bind_port(struct vsock_sk *vs, uint32_t port)
{
	vs->lport = port;
	vs->bound = true;
	vs->bound_next = bound_list;
	bound_list = vs;
}

void vsock_unbind(struct vsock_sk *vs)
{
	if (!vs->bound)
		return;
	for (struct vsock_sk **pp = &bound_list; *pp; pp = &(*pp)->bound_next) {
		if (*pp == vs) {
			*pp = vs->bound_next;
			break;
		}
	}
	vs->bound = false;
}

uint32_t vsock_ephemeral_port(void)
{
	for (unsigned tries = 0; tries < 65536; tries++) {
		uint32_t p = next_ephemeral++;

		if (next_ephemeral == 0 || next_ephemeral == VSOCK_PORT_ANY)
			next_ephemeral = EPHEMERAL_FIRST;
		if (!vsock_find_bound(p))
			return p;
	}
	return 0;
}

static void owed_remove(struct vsock_sk *vs)
{
	struct vsock_sk *prev = NULL;

	if (!vs->on_owed)
		return;
	for (struct vsock_sk *o = owed_head; o; prev = o, o = o->owed_next) {
		if (o != vs)
			continue;
		if (prev)
			prev->owed_next = o->owed_next;
		else
			owed_head = o->owed_next;
		if (owed_tail == o)
			owed_tail = prev;
		break;
	}
	vs->on_owed = false;
}

void vsock_free(struct vsock_sk *vs)
{
	ktimer_del(&vs->timer);
	vsock_unhash(vs);
	vsock_unbind(vs);
	owed_remove(vs);
	vsock_rx_free(vs);
	kfree(vs);
}

/* ---------------------------------------------------------------- transmit */

static struct vsock_hdr *hdr_of(unsigned desc)
{
	return (struct vsock_hdr *)((char *)phys_to_virt(hdr_pa) + desc * HDR_STRIDE);
}

static void tx_reclaim(void)
{
	bool freed = false;
	uint32_t id, len;

	while (vio_get_used(TXQ, &id, &len)) {
		if (slot_of[id] >= 0) {
			slots_free |= 1U << slot_of[id];
			slot_of[id] = -1;
		}
		freed = true;
	}
	if (freed)
		wake_all(&vsock_tx_wq);
}

static bool data_room(void)
{
	return TXQ->nr_free >= 2 && slots_free;
}

bool vsock_tx_room(void)
{
	tx_reclaim();
	if (data_room())
		return true;
	/* Arm first, then look again: a buffer used in between still wakes us. */
	vio_want_irq(TXQ, true);
	tx_reclaim();
	return data_room();
}

void vsock_tx_flush(void)
{
	if (tx_added) {
		tx_added = false;
		vio_kick(TXQ);
	}
}

static void hdr_fill(struct vsock_hdr *h, struct vsock_sk *vs, uint16_t op, uint32_t len)
{
	*h = (struct vsock_hdr){
	    .src_cid = vsock_local_cid,
	    .dst_cid = VSOCK_HOST_CID,
	    .src_port = vs->lport,
	    .dst_port = vs->pport,
	    .len = len,
	    .type = VSOCK_TYPE_STREAM,
	    .op = op,
	    .flags = op == VSOCK_OP_SHUTDOWN ? vs->local_shut : 0,
	    .buf_alloc = VSOCK_BUF_ALLOC,
	    .fwd_cnt = vs->fwd_cnt,
	};
	/* Every packet carries our credit: no separate update is owed. */
	vs->fwd_told = vs->fwd_cnt;
	vs->pending &= ~VSK_P_CREDIT_UPDATE;
}

/* A header-only packet in the next descriptor (the caller checked room). */
static void tx_control(const struct vsock_hdr *h)
{
	unsigned head = TXQ->free_head;
	uint64_t pa = hdr_pa + head * HDR_STRIDE;
	uint32_t len = sizeof(*h);

	*hdr_of(head) = *h;
	slot_of[head] = -1;
	vio_add(TXQ, &pa, &len, 1, 0);
	tx_added = true;
}

static uint16_t next_control(struct vsock_sk *vs)
{
	static const struct {
		unsigned int bit;
		uint16_t op;
	} order[] = {
	    {VSK_P_RST, VSOCK_OP_RST},
	    {VSK_P_RESPONSE, VSOCK_OP_RESPONSE},
	    {VSK_P_REQUEST, VSOCK_OP_REQUEST},
	    {VSK_P_SHUTDOWN, VSOCK_OP_SHUTDOWN},
	    {VSK_P_CREDIT_UPDATE, VSOCK_OP_CREDIT_UPDATE},
	    {VSK_P_CREDIT_REQUEST, VSOCK_OP_CREDIT_REQUEST},
	};

	for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
		if (vs->pending & order[i].bit) {
			vs->pending &= ~order[i].bit;
			return order[i].op;
		}
	}
	return 0;
}

/* Send what is owed while descriptors last. */
static void tx_pump(void)
{
	struct vsock_hdr h;

	tx_reclaim();
	while (TXQ->nr_free && (rst_len || owed_head)) {
		if (rst_len) {
			h = (struct vsock_hdr){
			    .src_cid = vsock_local_cid,
			    .dst_cid = VSOCK_HOST_CID,
			    .src_port = rst_ring[rst_head].lport,
			    .dst_port = rst_ring[rst_head].pport,
			    .type = rst_ring[rst_head].type,
			    .op = VSOCK_OP_RST,
			};
			rst_head = (rst_head + 1) % RST_RING;
			rst_len--;
			tx_control(&h);
			continue;
		}
		struct vsock_sk *vs = owed_head;
		uint16_t op = next_control(vs);

		if (op) {
			hdr_fill(&h, vs, op, 0);
			tx_control(&h);
		}
		if (op == VSOCK_OP_RST)
			vs->pending = 0; /* nothing may follow an RST */
		if (!vs->pending) {
			owed_remove(vs);
			if (op == VSOCK_OP_RST && vs->state == VSK_DEAD)
				vsock_free(vs);
		}
	}
	/* Interrupts for used transmit buffers only while someone needs them. */
	vio_want_irq(TXQ, rst_len || owed_head || (vsock_tx_wq.head && !data_room()));
}

void vsock_owe(struct vsock_sk *vs, unsigned int what)
{
	vs->pending |= what;
	if (!vs->on_owed) {
		vs->on_owed = true;
		vs->owed_next = NULL;
		if (owed_tail)
			owed_tail->owed_next = vs;
		else
			owed_head = vs;
		owed_tail = vs;
	}
	tx_pump();
}

static void owe_rst(uint32_t lport, uint32_t pport, uint16_t type)
{
	/* With the ring full the RST is dropped: the host times out instead. */
	if (rst_len == RST_RING)
		return;
	rst_ring[(rst_head + rst_len) % RST_RING].lport = lport;
	rst_ring[(rst_head + rst_len) % RST_RING].pport = pport;
	rst_ring[(rst_head + rst_len) % RST_RING].type = type;
	rst_len++;
	tx_pump();
}

void vsock_owe_rst(uint32_t lport, uint32_t pport)
{
	owe_rst(lport, pport, VSOCK_TYPE_STREAM);
}

uint32_t vsock_credit(const struct vsock_sk *vs)
{
	uint32_t in_flight = vs->tx_cnt - vs->peer_fwd_cnt;

	return in_flight >= vs->peer_buf_alloc ? 0 : vs->peer_buf_alloc - in_flight;
}

long vsock_send_data(struct vsock_sk *vs, struct sock_iter *it, size_t n)
{
	size_t sent = 0;

	/* A RESPONSE or REQUEST still owed must go first. */
	if (vs->pending & ~(VSK_P_CREDIT_UPDATE | VSK_P_CREDIT_REQUEST)) {
		tx_pump();
		if (vs->pending & ~(VSK_P_CREDIT_UPDATE | VSK_P_CREDIT_REQUEST))
			return 0;
	}
	tx_reclaim();
	while (sent < n && data_room()) {
		uint32_t len =
		    (uint32_t)MIN(MIN(n - sent, (size_t)VSOCK_MAX_PAYLOAD), vsock_credit(vs));
		unsigned head = TXQ->free_head, slot = (unsigned)__builtin_ctz(slots_free);
		uint64_t addr[2] = {hdr_pa + head * HDR_STRIDE, slot_pa[slot]};
		uint32_t lens[2] = {sizeof(struct vsock_hdr), len};

		if (!len)
			break;
		if (sock_iter_from(it, phys_to_virt(slot_pa[slot]), len))
			return sent ? (long)sent : -EFAULT;
		hdr_fill(hdr_of(head), vs, VSOCK_OP_RW, len);
		slots_free &= ~(1U << slot);
		slot_of[head] = (int8_t)slot;
		vio_add(TXQ, addr, lens, 2, 0);
		tx_added = true;
		vs->tx_cnt += len;
		sent += len;
	}
	if (!vs->pending)
		owed_remove(vs);
	return (long)sent;
}

void vsock_consumed(struct vsock_sk *vs, uint32_t n)
{
	vs->fwd_cnt += n;
	/* Tell the host only when the space it knows of runs low (under half
	 * the window): a CREDIT_UPDATE is a kick, and the host may send half a
	 * window more without waiting for one. */
	if (vs->state == VSK_CONNECTED && !(vs->local_shut & VSOCK_SHUT_RCV) &&
	    vs->fwd_cnt - vs->fwd_told >= VSOCK_CREDIT_MIN &&
	    vs->rx_cnt - vs->fwd_told > VSOCK_BUF_ALLOC / 2)
		vsock_owe(vs, VSK_P_CREDIT_UPDATE);
	/* The host closed both ways and everything is read: answer with the
	 * RST that frees its side. */
	if (vs->state == VSK_CONNECTED && vs->peer_shut == VSOCK_SHUT_BOTH && !vs->rx.len) {
		vs->state = VSK_DONE;
		vsock_unhash(vs);
		vsock_owe(vs, VSK_P_RST);
	}
}

/* ---------------------------------------------------------------- receive */

/* A stream is over: readers see end of file, writers EPIPE. Nothing owed
 * is sent any more (callers may owe an RST afterwards). */
static void conn_done(struct vsock_sk *vs, int err)
{
	vs->state = VSK_DONE;
	vs->peer_shut = VSOCK_SHUT_BOTH;
	if (err)
		vs->err = err;
	vs->pending = 0;
	owed_remove(vs);
	ktimer_del(&vs->timer);
	vsock_unhash(vs);
	vsock_sk_wake(vs);
}

/* A REQUEST from the host for a port nobody is connected on. */
static void incoming(const struct vsock_hdr *h)
{
	struct vsock_sk *l = vsock_find_bound(h->dst_port), *vs;

	if (!l || l->state != VSK_LISTEN || l->nr_acc > l->backlog || !(vs = vsock_sk_alloc())) {
		owe_rst(h->dst_port, h->src_port, h->type);
		return;
	}
	vs->state = VSK_CONNECTED;
	vs->was_connected = true;
	vs->lcid = vsock_local_cid;
	vs->lport = h->dst_port;
	vs->pport = h->src_port;
	vs->peer_buf_alloc = h->buf_alloc;
	vs->peer_fwd_cnt = h->fwd_cnt;
	vsock_hash(vs);
	vsock_sk_incoming(l, vs);
	vsock_owe(vs, VSK_P_RESPONSE);
}

static void recv_data(struct vsock_sk *vs, const struct vsock_hdr *h, const char *data)
{
	if (h->len > VSOCK_BUF_ALLOC - (vs->rx_cnt - vs->fwd_cnt)) {
		kprintf("vsock: port %u: the host sent %u bytes beyond its credit; reset\n",
		        vs->lport, h->len);
		conn_done(vs, ECONNRESET);
		vsock_owe(vs, VSK_P_RST);
		return;
	}
	vs->rx_cnt += h->len;
	if ((vs->local_shut & VSOCK_SHUT_RCV) || (vs->peer_shut & VSOCK_SHUT_SEND)) {
		vsock_consumed(vs, h->len); /* nobody will read it */
		return;
	}
	if (vsock_rx_append(&vs->rx, data, h->len)) {
		conn_done(vs, ENOBUFS);
		vsock_owe(vs, VSK_P_RST);
		return;
	}
	vsock_sk_wake(vs);
}

static void recv_connected(struct vsock_sk *vs, const struct vsock_hdr *h, const char *data)
{
	switch (h->op) {
	case VSOCK_OP_RW:
		recv_data(vs, h, data);
		break;
	case VSOCK_OP_SHUTDOWN:
		vs->peer_shut |= h->flags & VSOCK_SHUT_BOTH;
		vsock_sk_wake(vs);
		if (vs->peer_shut == VSOCK_SHUT_BOTH && !vs->rx.len)
			vsock_consumed(vs, 0);
		break;
	case VSOCK_OP_CREDIT_UPDATE:
		vsock_sk_wake(vs);
		break;
	case VSOCK_OP_CREDIT_REQUEST:
		vsock_owe(vs, VSK_P_CREDIT_UPDATE);
		break;
	case VSOCK_OP_RST:
		conn_done(vs, 0);
		break;
	default:
		conn_done(vs, EPROTO);
		vsock_owe(vs, VSK_P_RST);
	}
}

static void recv_packet(const struct vsock_hdr *h, const char *data)
{
	struct vsock_sk *vs;

	if (h->dst_cid != vsock_local_cid || h->src_cid != VSOCK_HOST_CID)
		return;
	if (h->type != VSOCK_TYPE_STREAM) {
		if (h->op != VSOCK_OP_RST)
			owe_rst(h->dst_port, h->src_port, h->type);
		return;
	}
	vs = conn_find(h->dst_port, h->src_port);
	if (!vs) {
		if (h->op == VSOCK_OP_REQUEST)
			incoming(h);
		else if (h->op != VSOCK_OP_RST)
			owe_rst(h->dst_port, h->src_port, h->type);
		return;
	}
	if (vs->peer_buf_alloc != h->buf_alloc || vs->peer_fwd_cnt != h->fwd_cnt)
		vs->credit_asked = false;
	vs->peer_buf_alloc = h->buf_alloc;
	vs->peer_fwd_cnt = h->fwd_cnt;
	switch (vs->state) {
	case VSK_CONNECTING:
		ktimer_del(&vs->timer);
		if (h->op == VSOCK_OP_RESPONSE) {
			vs->state = VSK_CONNECTED;
			vs->was_connected = true;
			vsock_sk_wake(vs);
		} else {
			/* Refused (RST) or nonsense: Linux reports ECONNRESET. */
			if (h->op != VSOCK_OP_RST)
				owe_rst(vs->lport, vs->pport, VSOCK_TYPE_STREAM);
			conn_done(vs, h->op == VSOCK_OP_RST ? ECONNRESET : EPROTO);
		}
		break;
	case VSK_CONNECTED:
		recv_connected(vs, h, data);
		break;
	case VSK_CLOSING:
		if (h->op == VSOCK_OP_RST) {
			vsock_free(vs);
		} else if (h->op == VSOCK_OP_SHUTDOWN) {
			vs->peer_shut |= h->flags & VSOCK_SHUT_BOTH;
			if (vs->peer_shut == VSOCK_SHUT_BOTH) {
				vs->state = VSK_DEAD;
				vsock_owe(vs, VSK_P_RST);
			}
		} else if (h->op == VSOCK_OP_RW) {
			vs->rx_cnt += h->len;
			vs->fwd_cnt += h->len;
		}
		break;
	default: /* DEAD: our RST is on its way */
		break;
	}
}

static void repost_rx(unsigned id)
{
	uint64_t pa = rx_pa[id];
	uint32_t len = RX_BUF_PAGES * PAGE_SIZE;
	unsigned slot = RXQ->free_head;

	rx_pa[slot] = pa;
	vio_add(RXQ, &pa, &len, 0, 1);
}

static bool rx_collect(void)
{
	bool any = false;
	uint32_t id, len;

	while (vio_get_used(RXQ, &id, &len)) {
		const struct vsock_hdr *h = phys_to_virt(rx_pa[id]);

		if (len >= sizeof(*h) && len <= RX_BUF_PAGES * PAGE_SIZE &&
		    h->len <= len - sizeof(*h)) {
			struct vsock_hdr copy = *h;

			recv_packet(&copy, (const char *)(h + 1));
		}
		repost_rx(id);
		any = true;
	}
	return any;
}

/* TRANSPORT_RESET (after a snapshot restore, say): every connection is
 * gone, and our CID may have changed. Listening sockets stay. */
static void transport_reset(void)
{
	vsock_local_cid = vio_config_read(&dev, 0) | (uint64_t)vio_config_read(&dev, 4) << 32;
	for (unsigned i = 0; i < HASH_SIZE; i++) {
		while (conn_hash[i]) {
			struct vsock_sk *vs = conn_hash[i];

			vsock_unhash(vs);
			owed_remove(vs);
			vs->pending = 0;
			if (!vs->sock && !vs->listener) { /* closing */
				vsock_free(vs);
				continue;
			}
			vsock_rx_free(vs);
			conn_done(vs, ECONNRESET);
		}
	}
	rst_len = 0;
}

static void ev_collect(void)
{
	uint32_t id, len;
	bool any = false;

	while (vio_get_used(EVQ, &id, &len)) {
		uint64_t pa = ev_page + id * 8;
		uint32_t blen = 8;

		if (len >= 4 && *(uint32_t *)phys_to_virt(pa) == EVENT_TRANSPORT_RESET)
			transport_reset();
		vio_add(EVQ, &pa, &blen, 0, 1);
		any = true;
	}
	if (any)
		vio_kick(EVQ);
}

static void vsock_irq(void)
{
	if (rx_collect())
		vio_kick(RXQ);
	ev_collect();
	tx_pump();
	vsock_tx_flush();
}

/* ---------------------------------------------------------------- setup */

void vsock_init(const struct bootinfo *bi)
{
	boot = bi;
}

static int alloc_buffers(void)
{
	if (!(ev_page = pmem_alloc(true)) ||
	    !(hdr_pa = pmem_alloc_contig(ALIGN_UP(QUEUE_SIZE * HDR_STRIDE, PAGE_SIZE) / PAGE_SIZE,
	                                 1, true)))
		return -ENOMEM;
	for (unsigned i = 0; i < TX_SLOTS; i++) {
		if (!(slot_pa[i] = pmem_alloc_contig(TX_SLOT_PAGES, 1, false)))
			return -ENOMEM;
		slots_free |= 1U << i;
	}
	for (unsigned i = 0; i < MIN((unsigned)RXQ->size, (unsigned)RX_BUFS); i++) {
		uint64_t pa = pmem_alloc_contig(RX_BUF_PAGES, 1, false);
		uint32_t len = RX_BUF_PAGES * PAGE_SIZE;

		if (!pa)
			return -ENOMEM;
		rx_pa[RXQ->free_head] = pa;
		vio_add(RXQ, &pa, &len, 0, 1);
	}
	for (unsigned i = 0; i < MIN((unsigned)EVQ->size, (unsigned)EV_BUFS); i++) {
		uint64_t pa = ev_page + EVQ->free_head * 8;
		uint32_t len = 8;

		vio_add(EVQ, &pa, &len, 0, 1);
	}
	return 0;
}

int vsock_dev_up(void)
{
	if (up)
		return 0;
	if (failed || !boot)
		return -ENODEV;
	failed = true; /* until it works: a half-set-up device is not retried */
	if (vio_probe(boot, VIRTIO_ID_VSOCK, VIRTIO_VSOCK_F_STREAM, 3, QUEUE_SIZE, &dev, q))
		return -ENODEV;
	for (unsigned i = 0; i < QUEUE_SIZE; i++)
		slot_of[i] = -1;
	if (TXQ->size < 2 || alloc_buffers()) {
		kprintf("vsock: out of memory for the device's buffers\n");
		return -ENOMEM;
	}
	vsock_local_cid = vio_config_read(&dev, 0) | (uint64_t)vio_config_read(&dev, 4) << 32;
	vio_want_irq(RXQ, true);
	vio_want_irq(EVQ, true);
	vio_want_irq(TXQ, false);
	irq_register(dev.irq_bit, vsock_irq);
	vio_kick(RXQ);
	vio_kick(EVQ);
	failed = false;
	up = true;
	return 0;
}

/* Serve the device now, not only at the next interrupt poll: an interrupt
 * that arrived while the library OS ran is seen only then. */
void vsock_dev_poll(void)
{
	if (up && (vio_has_used(RXQ) || vio_has_used(EVQ) || vio_has_used(TXQ)))
		vsock_irq();
}
