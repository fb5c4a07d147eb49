/* SPDX-License-Identifier: MIT */
/*
 * virtio-vsock end to end without KVM. The KVM plumbing is stubbed with
 * eventfds (as in test_mmio.c); the test plays the guest driver by writing
 * descriptors and packets into guest memory, and the host clients with real
 * unix sockets, running the device's libev loop in between.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../vmm/virtio/vsock.h"
#include "virtio_driver.h"

#define CID       3
#define QAREA(q)  (0x10000 + (q)*0x4000)
#define RXBUF(s)  (0x100000 + (s)*0x1000)
#define EVBUF(s)  (0x1f0000 + (s)*0x10)
#define TXBUF(s)  (0x200000 + (s)*0x12000)
#define TXBUF_SZ  0x12000
#define MAX_SLOTS 64
#define LOG_MAX   8192
#define NPORTS    65536
#define MIB       (1024 * 1024)

static struct vsock *vs;
static char dir[64], path[100];

/* ------------------------------------------------------------ the guest driver */

/* Queue sizes; chain slot s uses descriptors 2s and 2s + 1. */
static const unsigned qsize[3] = {128, 64, 8};

struct gq {
	uint16_t avail, used_seen;
	bool busy[MAX_SLOTS];
};
static struct gq gq[3];
static unsigned rx_len, rx_split; /* receive buffer size; first descriptor's (0: one) */
static bool rx_auto;              /* repost receive buffers as they come back */
static unsigned n_empty;          /* receive buffers returned with length 0 */
static unsigned ev_used;

/* What the guest knows about one of its connections, by guest port. */
struct gconn {
	bool used, hold; /* hold: the application does not read (fwd_cnt stays) */
	uint32_t hport;
	uint32_t buf_alloc, fwd_cnt, fwd_told, rx_total;
	uint8_t *sink;
	size_t sink_cap;
	uint32_t peer_buf_alloc, peer_fwd_cnt, tx_cnt;
	unsigned shut, rst, responses, credit_updates, credit_requests;
	bool want_update;
};
static struct gconn *gc;
static uint32_t *active;
static unsigned nactive;

static struct vsock_pkt plog[LOG_MAX]; /* every non-RW packet the guest got */
static bool ptaken[LOG_MAX];
static unsigned nlog, nrw;

static int fds[4096];
static unsigned nfds;
static char lpaths[8][108];
static unsigned nlpaths;

static int track(int fd)
{
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_lt(nfds, sizeof(fds) / sizeof(fds[0]));
	fds[nfds++] = fd;
	return fd;
}

static void xclose(int fd)
{
	unsigned i;

	for (i = 0; i < nfds; i++)
		if (fds[i] == fd)
			fds[i] = -1;
	close(fd);
}

static void set_desc(unsigned q, unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
                     uint16_t next)
{
	uint8_t *d = gp(QAREA(q) + 16 * i, 16);

	addr = htole64(addr);
	len = htole32(len);
	flags = htole16(flags);
	next = htole16(next);
	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

static void post(unsigned q, unsigned slot)
{
	uint16_t *a = gp(QAREA(q) + 0x1000, 6 + 2 * qsize[q]);

	gq[q].busy[slot] = true;
	a[2 + gq[q].avail % qsize[q]] = htole16(2 * slot);
	gq[q].avail++;
	__atomic_store_n(&a[1], htole16(gq[q].avail), __ATOMIC_RELEASE);
}

static uint16_t used_flags(unsigned q)
{
	return le16toh(((uint16_t *)gp(QAREA(q) + 0x2000, 4))[0]);
}

static uint16_t used_idx(unsigned q)
{
	return le16toh(((uint16_t *)gp(QAREA(q) + 0x2000, 4))[1]);
}

/* Take the next used element of q: returns its slot, the length in *len. */
static unsigned used_next(unsigned q, uint32_t *len)
{
	uint32_t e[2];
	unsigned slot;

	memcpy(e, gp(QAREA(q) + 0x2004 + 8 * (gq[q].used_seen % qsize[q]), 8), 8);
	gq[q].used_seen++;
	ck_assert_uint_eq(le32toh(e[0]) % 2, 0);
	slot = le32toh(e[0]) / 2;
	ck_assert(gq[q].busy[slot]);
	gq[q].busy[slot] = false;
	*len = le32toh(e[1]);
	return slot;
}

static int free_slot(unsigned q)
{
	unsigned s;

	for (s = 0; s < qsize[q] / 2; s++)
		if (!gq[q].busy[s])
			return (int)s;
	return -1;
}

static void rx_fill(void)
{
	bool any = false;
	int s;

	while ((s = free_slot(VSOCK_RXQ)) >= 0) {
		if (rx_split && rx_split < rx_len) {
			set_desc(VSOCK_RXQ, 2 * s, RXBUF(s), rx_split, D_WRITE | D_NEXT, 2 * s + 1);
			set_desc(VSOCK_RXQ, 2 * s + 1, RXBUF(s) + rx_split, rx_len - rx_split,
			         D_WRITE, 0);
		} else {
			set_desc(VSOCK_RXQ, 2 * s, RXBUF(s), rx_len, D_WRITE, 0);
		}
		post(VSOCK_RXQ, (unsigned)s);
		any = true;
	}
	if (any)
		wr(QNOTIFY, VSOCK_RXQ);
}

static void ev_fill(void)
{
	int s;

	while ((s = free_slot(VSOCK_EVQ)) >= 0) {
		set_desc(VSOCK_EVQ, 2 * s, EVBUF(s), 8, D_WRITE, 0);
		post(VSOCK_EVQ, (unsigned)s);
	}
	wr(QNOTIFY, VSOCK_EVQ);
}

static void encode(uint8_t *dst, const struct vsock_pkt *p)
{
	struct vsock_hdr_le h = {
	    .src_cid = htole64(p->src_cid),
	    .dst_cid = htole64(p->dst_cid),
	    .src_port = htole32(p->src_port),
	    .dst_port = htole32(p->dst_port),
	    .len = htole32(p->len),
	    .type = htole16(p->type),
	    .op = htole16(p->op),
	    .flags = htole32(p->flags),
	    .buf_alloc = htole32(p->buf_alloc),
	    .fwd_cnt = htole32(p->fwd_cnt),
	};

	memcpy(dst, &h, sizeof(h));
}

static void decode(struct vsock_pkt *p, const uint8_t *src)
{
	struct vsock_hdr_le h;

	memcpy(&h, src, sizeof(h));
	p->src_cid = le64toh(h.src_cid);
	p->dst_cid = le64toh(h.dst_cid);
	p->src_port = le32toh(h.src_port);
	p->dst_port = le32toh(h.dst_port);
	p->len = le32toh(h.len);
	p->type = le16toh(h.type);
	p->op = le16toh(h.op);
	p->flags = le32toh(h.flags);
	p->buf_alloc = le32toh(h.buf_alloc);
	p->fwd_cnt = le32toh(h.fwd_cnt);
}

static void handle(const struct vsock_pkt *p, const uint8_t *data)
{
	struct gconn *g = p->dst_port < NPORTS ? &gc[p->dst_port] : NULL;

	ck_assert_uint_eq(p->src_cid, VSOCK_HOST_CID);
	ck_assert_uint_eq(p->dst_cid, CID);
	if (p->op == VSOCK_OP_RW)
		nrw++;
	else {
		ck_assert_uint_lt(nlog, LOG_MAX);
		plog[nlog++] = *p;
	}
	if (!g || !g->used || g->hport != p->src_port)
		return;
	g->peer_buf_alloc = p->buf_alloc;
	g->peer_fwd_cnt = p->fwd_cnt;
	switch (p->op) {
	case VSOCK_OP_RW:
		/* The device must never exceed the credit we advertised. */
		ck_assert_uint_le(g->rx_total - g->fwd_cnt + p->len, g->buf_alloc);
		ck_assert_uint_le(p->len, VSOCK_MAX_PKT);
		if (g->rx_total + p->len > g->sink_cap) {
			g->sink_cap = 2 * (g->rx_total + p->len);
			g->sink = realloc(g->sink, g->sink_cap);
			ck_assert_ptr_nonnull(g->sink);
		}
		memcpy(g->sink + g->rx_total, data, p->len);
		g->rx_total += p->len;
		if (!g->hold) {
			g->fwd_cnt += p->len;
			if (g->fwd_cnt - g->fwd_told >= g->buf_alloc / 4)
				g->want_update = true;
		}
		break;
	case VSOCK_OP_SHUTDOWN:
		g->shut |= p->flags;
		break;
	case VSOCK_OP_RST:
		g->rst++;
		break;
	case VSOCK_OP_RESPONSE:
		g->responses++;
		break;
	case VSOCK_OP_CREDIT_UPDATE:
		g->credit_updates++;
		break;
	case VSOCK_OP_CREDIT_REQUEST:
		g->credit_requests++;
		g->want_update = true;
		break;
	}
}

static void rx_poll(void)
{
	struct vsock_pkt p;
	uint32_t len;
	unsigned s;

	while (gq[VSOCK_RXQ].used_seen != used_idx(VSOCK_RXQ)) {
		s = used_next(VSOCK_RXQ, &len);
		if (!len) {
			n_empty++;
			continue;
		}
		ck_assert_uint_ge(len, VSOCK_HDR_SIZE);
		ck_assert_uint_le(len, rx_len);
		decode(&p, gp(RXBUF(s), VSOCK_HDR_SIZE));
		ck_assert_uint_eq(len, VSOCK_HDR_SIZE + p.len);
		handle(&p, gp(RXBUF(s) + VSOCK_HDR_SIZE, p.len + 1));
	}
	while (gq[VSOCK_EVQ].used_seen != used_idx(VSOCK_EVQ)) {
		s = used_next(VSOCK_EVQ, &len);
		ck_assert_uint_eq(len, 4);
		ck_assert_uint_eq(*(uint32_t *)gp(EVBUF(s), 4), htole32(0));
		ev_used++;
	}
	if (rx_auto)
		rx_fill();
}

static void tx_reap(void)
{
	uint32_t len;

	while (gq[VSOCK_TXQ].used_seen != used_idx(VSOCK_TXQ))
		used_next(VSOCK_TXQ, &len);
}

static void guest_updates(void);

static void spin(void)
{
	ev_run(vm.loop, EVRUN_NOWAIT);
	rx_poll();
	tx_reap();
	guest_updates();
}

static void run(int n)
{
	while (n-- > 0)
		spin();
}

#define WAIT_FOR(cond)                                            \
	do {                                                      \
		for (int w_ = 0; w_ < 3000 && !(cond); w_++)      \
			spin();                                   \
		ck_assert_msg(cond, "timed out waiting: " #cond); \
	} while (0)

static void wake_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
}

/* Run the loop for real time, for the device's timers. */
static void run_for(double secs)
{
	ev_timer wake;
	double end = ev_time() + secs;

	ev_timer_init(&wake, wake_cb, 0.02, 0.02);
	ev_timer_start(vm.loop, &wake);
	while (ev_time() < end) {
		ev_run(vm.loop, EVRUN_ONCE);
		spin();
	}
	ev_timer_stop(vm.loop, &wake);
}

static unsigned tx_slot(void)
{
	int s, i;

	for (i = 0; i < 3000; i++) {
		tx_reap();
		if ((s = free_slot(VSOCK_TXQ)) >= 0)
			return (unsigned)s;
		spin();
	}
	ck_abort_msg("transmit queue stuck");
	return 0;
}

/* Queue a packet whose header says p, with dlen payload bytes after it, in
 * one descriptor or two (header, payload). */
static void tx_raw(const struct vsock_pkt *p, const void *data, uint32_t dlen, bool split)
{
	unsigned s = tx_slot();
	uint64_t a = TXBUF(s);

	ck_assert_uint_le(VSOCK_HDR_SIZE + dlen, TXBUF_SZ);
	encode(gp(a, VSOCK_HDR_SIZE), p);
	if (dlen)
		memcpy(gp(a + VSOCK_HDR_SIZE, dlen), data, dlen);
	if (split && dlen) {
		set_desc(VSOCK_TXQ, 2 * s, a, VSOCK_HDR_SIZE, D_NEXT, 2 * s + 1);
		set_desc(VSOCK_TXQ, 2 * s + 1, a + VSOCK_HDR_SIZE, dlen, 0, 0);
	} else {
		set_desc(VSOCK_TXQ, 2 * s, a, VSOCK_HDR_SIZE + dlen, 0, 0);
	}
	post(VSOCK_TXQ, s);
	wr(QNOTIFY, VSOCK_TXQ);
}

static struct gconn *gconn_new(uint32_t gport, uint32_t hport, uint32_t buf_alloc)
{
	struct gconn *g = &gc[gport];

	free(g->sink);
	memset(g, 0, sizeof(*g));
	g->used = true;
	g->hport = hport;
	g->buf_alloc = buf_alloc;
	active[nactive++] = gport;
	return g;
}

static void gsend(uint32_t gport, uint16_t op, uint32_t flags, const void *data, uint32_t len)
{
	struct gconn *g = &gc[gport];
	struct vsock_pkt p = {
	    .src_cid = CID,
	    .dst_cid = VSOCK_HOST_CID,
	    .src_port = gport,
	    .dst_port = g->hport,
	    .len = len,
	    .type = VSOCK_TYPE_STREAM,
	    .op = op,
	    .flags = flags,
	    .buf_alloc = g->buf_alloc,
	    .fwd_cnt = g->fwd_cnt,
	};

	ck_assert(g->used);
	if (op == VSOCK_OP_RW)
		g->tx_cnt += len;
	g->fwd_told = g->fwd_cnt;
	tx_raw(&p, data, len, g->tx_cnt & 1);
}

/* A packet to or from a tuple that need not exist. */
static void gsend_to(uint32_t gport, uint32_t hport, uint16_t op, uint16_t type)
{
	struct vsock_pkt p = {
	    .src_cid = CID,
	    .dst_cid = VSOCK_HOST_CID,
	    .src_port = gport,
	    .dst_port = hport,
	    .type = type,
	    .op = op,
	    .buf_alloc = 65536,
	};

	tx_raw(&p, NULL, 0, false);
}

static void guest_updates(void)
{
	unsigned i;

	for (i = 0; i < nactive; i++) {
		struct gconn *g = &gc[active[i]];

		if (g->want_update && !g->rst) {
			g->want_update = false;
			gsend(active[i], VSOCK_OP_CREDIT_UPDATE, 0, NULL, 0);
		}
	}
}

static uint32_t host_free(const struct gconn *g)
{
	return g->peer_buf_alloc - (g->tx_cnt - g->peer_fwd_cnt);
}

/* The first packet not yet taken with this op to guest port gport. */
static struct vsock_pkt *take(uint16_t op, uint32_t gport)
{
	unsigned i;

	for (i = 0; i < nlog; i++) {
		if (!ptaken[i] && plog[i].op == op && plog[i].dst_port == gport) {
			ptaken[i] = true;
			return &plog[i];
		}
	}
	return NULL;
}

static struct vsock_pkt *wait_take(uint16_t op, uint32_t gport)
{
	struct vsock_pkt *p;
	int i;

	for (i = 0; i < 3000; i++) {
		if ((p = take(op, gport)))
			return p;
		spin();
	}
	return NULL;
}

static unsigned count_op(uint16_t op)
{
	unsigned i, n = 0;

	for (i = 0; i < nlog; i++)
		n += plog[i].op == op;
	return n;
}

/* ------------------------------------------------------------ the host side */

static int client(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = track(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));

	strcpy(sa.sun_path, path);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static void send_str(int fd, const char *s)
{
	ck_assert_int_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

/* Read what arrives within a while: >0 bytes, 0 at end of file, -1 if
 * nothing came. */
static ssize_t wait_read(int fd, void *buf, size_t n)
{
	ssize_t r = -1;
	int i;

	for (i = 0; i < 3000; i++) {
		r = read(fd, buf, n);
		if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return r;
		spin();
	}
	return -1;
}

/* Read until end of file, discarding; true if it came. */
static bool wait_eof(int fd)
{
	char buf[4096];
	ssize_t r;

	while ((r = wait_read(fd, buf, sizeof(buf))) > 0)
		;
	return r == 0 || (r < 0 && errno == ECONNRESET);
}

static int listen_at(uint32_t port)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = track(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", path, port);
	ck_assert_uint_lt(nlpaths, 8);
	strcpy(lpaths[nlpaths++], sa.sun_path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 4096), 0);
	return fd;
}

static int accept_one(int lfd)
{
	int i, fd;

	for (i = 0; i < 3000; i++) {
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			return track(fd);
		spin();
	}
	ck_abort_msg("no connection to accept");
	return -1;
}

/* The client's "OK <hport>\n", byte for byte and nothing more. */
static void read_ok(int fd, uint32_t hport)
{
	char line[32], want[32];
	size_t n = 0;
	ssize_t r;

	snprintf(want, sizeof(want), "OK %u\n", hport);
	while (n < strlen(want)) {
		r = wait_read(fd, line + n, strlen(want) - n);
		ck_assert_int_gt(r, 0);
		n += (size_t)r;
	}
	ck_assert_mem_eq(line, want, n);
}

/* A host client connected to guest port gport through CONNECT/OK. */
static int host_open(uint32_t gport, uint32_t buf_alloc, struct gconn **gout)
{
	int fd = client();
	struct vsock_pkt *rq;
	struct gconn *g;
	char line[64];

	snprintf(line, sizeof(line), "CONNECT %u\n", gport);
	send_str(fd, line);
	rq = wait_take(VSOCK_OP_REQUEST, gport);
	ck_assert_ptr_nonnull(rq);
	ck_assert_uint_ge(rq->src_port, VSOCK_PORT_BASE);
	ck_assert_uint_eq(rq->type, VSOCK_TYPE_STREAM);
	ck_assert_uint_eq(rq->buf_alloc, VSOCK_BUF_ALLOC);
	ck_assert_uint_eq(rq->len, 0);
	g = gconn_new(gport, rq->src_port, buf_alloc);
	g->peer_buf_alloc = rq->buf_alloc;
	g->peer_fwd_cnt = rq->fwd_cnt;
	gsend(gport, VSOCK_OP_RESPONSE, 0, NULL, 0);
	read_ok(fd, g->hport);
	if (gout)
		*gout = g;
	return fd;
}

/* A guest connection from gport to host port hport, accepted on lfd. */
static int guest_open(int lfd, uint32_t gport, uint32_t hport, uint32_t buf_alloc,
                      struct gconn **gout)
{
	struct gconn *g = gconn_new(gport, hport, buf_alloc);

	gsend(gport, VSOCK_OP_REQUEST, 0, NULL, 0);
	WAIT_FOR(g->responses == 1 || g->rst);
	ck_assert_uint_eq(g->responses, 1);
	ck_assert_uint_eq(g->peer_buf_alloc, VSOCK_BUF_ALLOC);
	if (gout)
		*gout = g;
	return accept_one(lfd);
}

static struct vsock_conn *hconn(uint32_t gport)
{
	return vsock_conn_find(vs, gc[gport].hport, gport);
}

/* ------------------------------------------------------------ fixtures */

static void drv_init(void)
{
	unsigned q;

	memset(gq, 0, sizeof(gq));
	for (q = 0; q < 3; q++)
		memset(gp(QAREA(q), 0x4000), 0, 0x4000);
	wr(STATUS, 1);
	wr(STATUS, 3);
	wr(DRV_FEAT_SEL, 1);
	wr(DRV_FEAT, 1); /* VIRTIO_F_VERSION_1 */
	wr(DRV_FEAT_SEL, 0);
	wr(DRV_FEAT, 1); /* VIRTIO_VSOCK_F_STREAM */
	wr(STATUS, 0xb);
	ck_assert_uint_eq(rd(STATUS), 0xb);
	for (q = 0; q < 3; q++) {
		wr(QSEL, q);
		wr(QNUM, qsize[q]);
		wr(QDESC, QAREA(q));
		wr(QDRIVER, QAREA(q) + 0x1000);
		wr(QDEVICE, QAREA(q) + 0x2000);
		wr(QREADY, 1);
		ck_assert_uint_eq(rd(QREADY), 1);
	}
	wr(STATUS, 0xf);
	ck_assert_uint_eq(rd(STATUS), 0xf);
}

static void setup_common(void)
{
	memset(&vm, 0, sizeof(vm));
	ck_assert_int_eq(mem_init(&vm.mem, 64 * MIB), 0);
	vm.loop = ev_loop_new(0);
	ck_assert_ptr_nonnull(vm.loop);
	strcpy(dir, "/tmp/kiln-vsock-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/v.sock", dir);
	ck_assert_int_eq(vsock_create(&vm, CID, path), 0);
	dev = vm.devs[0];
	vs = dev->priv;
	gc = calloc(NPORTS, sizeof(*gc));
	active = calloc(NPORTS, sizeof(*active));
	ck_assert(gc && active);
	nactive = nlog = nrw = n_empty = ev_used = 0;
	memset(ptaken, 0, sizeof(ptaken));
	nfds = nlpaths = 0;
	rx_len = 4096;
	rx_split = 0;
	drv_init();
}

static void setup(void)
{
	setup_common();
	rx_auto = true;
	rx_fill();
	ev_fill();
	spin();
}

static void setup_norx(void)
{
	setup_common();
	rx_auto = false;
}

static void teardown(void)
{
	unsigned i;

	virtio_mmio_destroy_all(&vm);
	/* destroy removes the socket it listened on */
	ck_assert_int_eq(access(path, F_OK), -1);
	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (i = 0; i < nlpaths; i++)
		unlink(lpaths[i]);
	for (i = 0; i < NPORTS; i++)
		free(gc[i].sink);
	free(gc);
	free(active);
	ck_assert_int_eq(rmdir(dir), 0);
	ev_loop_destroy(vm.loop);
	mem_destroy(&vm.mem);
}

/* ------------------------------------------------------------ tests */

START_TEST(config_and_features)
{
	uint8_t b[8];
	uint64_t cid;

	ck_assert_uint_eq(rd(DEVICE_ID), 19);
	ck_assert_uint_eq(rd(DEV_FEAT) & 1, 1); /* VIRTIO_VSOCK_F_STREAM */
	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + CONFIG, b, 8, false), 0);
	memcpy(&cid, b, 8);
	ck_assert_uint_eq(le64toh(cid), CID);
	ck_assert_uint_eq(rd(CONFIG), CID);
	ck_assert_uint_eq(rd(CONFIG + 4), 0);
}
END_TEST

START_TEST(create_errors)
{
	char p[160];
	int fd;

	ck_assert_int_eq(vsock_create(&vm, 2, "/tmp/x"), -EINVAL);
	ck_assert_int_eq(vsock_create(&vm, 0xffffffffULL, "/tmp/x"), -EINVAL);
	ck_assert_int_eq(vsock_create(&vm, 1ULL << 32 | 5, "/tmp/x"), -EINVAL);
	memset(p, 'a', sizeof(p) - 1);
	p[sizeof(p) - 1] = 0;
	ck_assert_int_eq(vsock_create(&vm, 5, p), -ENAMETOOLONG);
	/* Not a socket: refused and left alone. */
	snprintf(p, sizeof(p), "%s/file", dir);
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(vsock_create(&vm, 5, p), -EEXIST);
	ck_assert_int_eq(access(p, F_OK), 0);
	unlink(p);
	/* A stale socket (the path our own device holds) is replaced. */
	ck_assert_int_eq(vsock_create(&vm, 5, path), 0);
	ck_assert_int_eq(vm.nr_devs, 2);
	virtio_mmio_destroy_all(&vm);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

static void fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 17;
		seed ^= seed << 5;
		p[i] = (uint8_t)seed;
	}
}

START_TEST(host_connect_transfer)
{
	const size_t total = 4 * MIB;
	uint8_t *pat = malloc(total), *got = malloc(total);
	struct vsock_conn *c;
	struct gconn *g;
	size_t sent = 0, recvd = 0;
	uint32_t max_buf = 0;
	int fd, iters;
	ssize_t r;

	ck_assert(pat && got);
	fill_pattern(pat, total, 12345);
	rx_split = 20; /* from now on headers straddle two descriptors */
	fd = host_open(1234, 64 * 1024, &g);
	ck_assert_uint_eq(vs->nr_conns, 1);

	/* host -> guest: the client writes as fast as the socket takes it. */
	for (iters = 0; g->rx_total < total && iters < 100000; iters++) {
		if (sent < total) {
			r = write(fd, pat + sent, total - sent < 65536 ? total - sent : 65536);
			if (r > 0)
				sent += (size_t)r;
		}
		spin();
	}
	ck_assert_uint_eq(g->rx_total, total);
	ck_assert(!memcmp(g->sink, pat, total));

	/* guest -> host with a slow reader: the device has to buffer, and
	 * credit must keep that within VSOCK_BUF_ALLOC. */
	c = hconn(1234);
	ck_assert_ptr_nonnull(c);
	fill_pattern(pat, total, 777);
	sent = 0;
	for (iters = 0; recvd < total && iters < 100000; iters++) {
		uint32_t room = host_free(g),
		         n = 1 + (uint32_t)((sent / 3 + (size_t)iters) % 65536);

		if (sent < total && room > 0 && free_slot(VSOCK_TXQ) >= 0) {
			n = n < room ? n : room;
			n = n < total - sent ? n : (uint32_t)(total - sent);
			gsend(1234, VSOCK_OP_RW, 0, pat + sent, n);
			sent += n;
		}
		spin();
		if (iters % 4 == 0) {
			r = read(fd, got + recvd, total - recvd < 16384 ? total - recvd : 16384);
			if (r > 0)
				recvd += (size_t)r;
		}
		ck_assert_uint_le(c->buf_len, VSOCK_BUF_ALLOC);
		ck_assert_uint_eq(c->rx_cnt - c->fwd_cnt, c->buf_len);
		if (c->buf_len > max_buf)
			max_buf = c->buf_len;
	}
	ck_assert_uint_eq(recvd, total);
	ck_assert(!memcmp(got, pat, total));
	ck_assert_uint_gt(max_buf, 0);
	ck_assert_uint_eq(g->rst, 0);

	/* The client hangs up: a full SHUTDOWN, answered by the guest's RST. */
	xclose(fd);
	WAIT_FOR(g->shut == VSOCK_SHUT_BOTH);
	gsend(1234, VSOCK_OP_RST, 0, NULL, 0);
	WAIT_FOR(vs->nr_conns == 0);
	free(pat);
	free(got);
}
END_TEST

START_TEST(guest_connect)
{
	int lfd = listen_at(5000), srv;
	struct gconn *g;
	char buf[16];

	srv = guest_open(lfd, 777, 5000, 65536, &g);
	ck_assert_uint_eq(vs->nr_conns, 1);
	gsend(777, VSOCK_OP_RW, 0, "ping", 4);
	ck_assert_int_eq(wait_read(srv, buf, sizeof(buf)), 4);
	ck_assert_mem_eq(buf, "ping", 4);
	ck_assert_int_eq(write(srv, "pong", 4), 4);
	WAIT_FOR(g->rx_total == 4);
	ck_assert_mem_eq(g->sink, "pong", 4);
	/* A full shutdown from the guest is answered with RST. */
	gsend(777, VSOCK_OP_SHUTDOWN, VSOCK_SHUT_BOTH, NULL, 0);
	WAIT_FOR(g->rst == 1);
	ck_assert(wait_eof(srv));
	/* Both ways ended for the host client: its writes fail too. */
	ck_assert(send(srv, "x", 1, MSG_NOSIGNAL) < 0 && errno == EPIPE);
	ck_assert_uint_eq(vs->nr_conns, 0);

	/* Nobody listens on host port 5001. */
	g = gconn_new(778, 5001, 65536);
	gsend(778, VSOCK_OP_REQUEST, 0, NULL, 0);
	WAIT_FOR(g->rst == 1);
	ck_assert_uint_eq(g->responses, 0);
	ck_assert_uint_eq(vs->nr_conns, 0);
}
END_TEST

/* Interrupts the guest had since the last call. */
static uint64_t irqs(void)
{
	uint64_t n = 0;

	return read(dev->irq_fd, &n, sizeof(n)) == sizeof(n) ? n : 0;
}

/* A RESPONSE to a REQUEST with bytes behind it, and the RST that answers a
 * full shutdown, interrupt nobody: the next packet's interrupt brings them,
 * or the lazy timer's. Everything else interrupts at once. */
START_TEST(lazy_irqs)
{
	int lfd = listen_at(5000), srv;
	uint16_t *tx_avail = gp(QAREA(VSOCK_TXQ) + 0x1000, 2);
	struct gconn *g;
	char buf[16];

	*tx_avail = htole16(1); /* VIRTQ_AVAIL_F_NO_INTERRUPT, as the driver has it */
	vs->lazy_s = 60;        /* no interrupt from the timer until asked for below */
	run(5);
	irqs();
	g = gconn_new(700, 5000, 65536);
	gsend(700, VSOCK_OP_REQUEST, 0, NULL, 0);
	gsend(700, VSOCK_OP_RW, 0, "hello", 5);
	srv = accept_one(lfd);
	ck_assert_int_eq(wait_read(srv, buf, sizeof(buf)), 5);
	WAIT_FOR(g->responses == 1);
	ck_assert_uint_eq(irqs(), 0);
	ck_assert_int_eq(write(srv, "ok", 2), 2);
	WAIT_FOR(g->rx_total == 2);
	ck_assert_uint_eq(irqs(), 1); /* one for both */
	gsend(700, VSOCK_OP_SHUTDOWN, VSOCK_SHUT_BOTH, NULL, 0);
	WAIT_FOR(g->rst == 1);
	run(20);
	ck_assert_uint_eq(irqs(), 0);
	ck_assert(ev_is_active(&vs->lazy_timer));
	ev_timer_stop(vm.loop, &vs->lazy_timer); /* again, with the real delay */
	vs->lazy_s = VSOCK_LAZY_IRQ;
	ev_timer_set(&vs->lazy_timer, vs->lazy_s, 0);
	ev_timer_start(vm.loop, &vs->lazy_timer);
	run_for(VSOCK_LAZY_IRQ * 20);
	ck_assert_uint_eq(irqs(), 1); /* the timer's */

	/* A guest that waits for its RESPONSE to send gets it at once, and
	 * so does every other packet. */
	srv = guest_open(lfd, 701, 5000, 65536, &g);
	ck_assert_uint_eq(irqs(), 1);
	ck_assert_int_eq(write(srv, "x", 1), 1);
	WAIT_FOR(g->rx_total == 1);
	ck_assert_uint_eq(irqs(), 1);
	xclose(srv);
	WAIT_FOR(g->shut == VSOCK_SHUT_BOTH);
	ck_assert_uint_eq(irqs(), 1);
	g = gconn_new(702, 5001, 65536); /* nobody listens there */
	gsend(702, VSOCK_OP_REQUEST, 0, NULL, 0);
	gsend(702, VSOCK_OP_RW, 0, "hello", 5);
	WAIT_FOR(g->rst == 2); /* for each packet */
	ck_assert_uint_ge(irqs(), 1);
	run_for(VSOCK_LAZY_IRQ * 20);
	ck_assert_uint_eq(irqs(), 0); /* nothing was left for the timer */
}
END_TEST

START_TEST(unknown_rst)
{
	struct vsock_pkt *p;

	gsend_to(55, 999, VSOCK_OP_RW, VSOCK_TYPE_STREAM);
	p = wait_take(VSOCK_OP_RST, 55);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->src_port, 999);
	ck_assert_uint_eq(p->type, VSOCK_TYPE_STREAM);
	ck_assert_uint_eq(p->len, 0);
	gsend_to(56, 999, VSOCK_OP_RST, VSOCK_TYPE_STREAM); /* never answered */
	gsend_to(57, 999, VSOCK_OP_CREDIT_REQUEST, VSOCK_TYPE_STREAM);
	gsend_to(58, 999, VSOCK_OP_SHUTDOWN, VSOCK_TYPE_STREAM);
	gsend_to(59, 999, VSOCK_OP_RESPONSE, VSOCK_TYPE_STREAM);
	ck_assert_ptr_nonnull(wait_take(VSOCK_OP_RST, 57));
	ck_assert_ptr_nonnull(wait_take(VSOCK_OP_RST, 58));
	ck_assert_ptr_nonnull(wait_take(VSOCK_OP_RST, 59));
	run(20);
	ck_assert_ptr_null(take(VSOCK_OP_RST, 56));
	ck_assert_uint_eq(nlog, 4);
}
END_TEST

START_TEST(shutdown_guest_send)
{
	int lfd = listen_at(5100), srv;
	struct gconn *g;
	char buf[16];

	srv = guest_open(lfd, 800, 5100, 65536, &g);
	gsend(800, VSOCK_OP_RW, 0, "abc", 3);
	gsend(800, VSOCK_OP_SHUTDOWN, VSOCK_SHUT_SEND, NULL, 0);
	ck_assert_int_eq(wait_read(srv, buf, sizeof(buf)), 3);
	ck_assert_int_eq(wait_read(srv, buf, sizeof(buf)), 0); /* the guest's EOF */
	/* The other direction still flows. */
	ck_assert_int_eq(write(srv, "late", 4), 4);
	WAIT_FOR(g->rx_total == 4);
	ck_assert_mem_eq(g->sink, "late", 4);
	ck_assert_uint_eq(g->shut, 0);
	ck_assert_uint_eq(vs->nr_conns, 1);
	/* The host ends its side too: nothing flows any more. */
	shutdown(srv, SHUT_WR);
	WAIT_FOR(g->shut == VSOCK_SHUT_BOTH);
	gsend(800, VSOCK_OP_RST, 0, NULL, 0);
	WAIT_FOR(vs->nr_conns == 0);
}
END_TEST

START_TEST(shutdown_guest_rcv)
{
	int lfd = listen_at(5200), srv;
	struct gconn *g;
	char buf[16];

	srv = guest_open(lfd, 801, 5200, 65536, &g);
	gsend(801, VSOCK_OP_SHUTDOWN, VSOCK_SHUT_RCV, NULL, 0);
	run(5);
	/* The guest reads no more, so the client cannot write. */
	ck_assert_int_eq(send(srv, "x", 1, MSG_NOSIGNAL), -1);
	ck_assert_int_eq(errno, EPIPE);
	gsend(801, VSOCK_OP_RW, 0, "still", 5);
	ck_assert_int_eq(wait_read(srv, buf, sizeof(buf)), 5);
	ck_assert_mem_eq(buf, "still", 5);
	ck_assert_uint_eq(g->rst, 0);
	/* Flags accumulate: SEND now makes a full shutdown. */
	gsend(801, VSOCK_OP_SHUTDOWN, VSOCK_SHUT_SEND, NULL, 0);
	WAIT_FOR(g->rst == 1);
	ck_assert(wait_eof(srv));
	ck_assert_uint_eq(vs->nr_conns, 0);
	ck_assert_uint_eq(g->rx_total, 0);
}
END_TEST

START_TEST(shutdown_host_half)
{
	struct gconn *g;
	char buf[16];
	int fd = host_open(900, 65536, &g);

	ck_assert_int_eq(write(fd, "req", 3), 3);
	shutdown(fd, SHUT_WR);
	WAIT_FOR(g->shut == VSOCK_SHUT_SEND);
	ck_assert_uint_eq(g->rx_total, 3);
	/* Half closed: the client still reads. */
	gsend(900, VSOCK_OP_RW, 0, "after", 5);
	ck_assert_int_eq(wait_read(fd, buf, sizeof(buf)), 5);
	ck_assert_mem_eq(buf, "after", 5);
	gsend(900, VSOCK_OP_SHUTDOWN, VSOCK_SHUT_BOTH, NULL, 0);
	WAIT_FOR(g->rst == 1);
	ck_assert(wait_eof(fd));
	ck_assert_uint_eq(vs->nr_conns, 0);
}
END_TEST

START_TEST(host_close)
{
	struct gconn *g;
	int fd = host_open(901, 65536, &g);

	ck_assert_int_eq(write(fd, "bye", 3), 3);
	xclose(fd);
	WAIT_FOR(g->shut == VSOCK_SHUT_BOTH);
	ck_assert_uint_eq(g->rx_total, 3); /* data first, then the shutdown */
	ck_assert_mem_eq(g->sink, "bye", 3);
	/* Guest data for a closed client is dropped quietly until the RST. */
	gsend(901, VSOCK_OP_RW, 0, "zz", 2);
	run(5);
	ck_assert_uint_eq(g->rst, 0);
	gsend(901, VSOCK_OP_RST, 0, NULL, 0);
	WAIT_FOR(vs->nr_conns == 0);
	run(5);
	ck_assert_uint_eq(g->rst, 0);
	/* Both ends close at once: the guest's full SHUTDOWN crosses ours and
	 * gets the RST. */
	fd = host_open(902, 65536, &g);
	xclose(fd);
	gsend(902, VSOCK_OP_SHUTDOWN, VSOCK_SHUT_BOTH, NULL, 0);
	WAIT_FOR(g->rst == 1);
	ck_assert_uint_eq(g->shut, VSOCK_SHUT_BOTH);
	ck_assert_uint_eq(vs->nr_conns, 0);
}
END_TEST

START_TEST(timeouts)
{
	int hello = client(), c40 = client(), lfd = listen_at(5300), srv;
	struct vsock_pkt *rq;
	char buf[8];

	vs->connect_s = VSOCK_CLOSE_TIMEOUT + 1.5;
	send_str(c40, "CONNECT 40\n");
	rq = wait_take(VSOCK_OP_REQUEST, 40);
	ck_assert_ptr_nonnull(rq);
	gconn_new(40, rq->src_port, 65536); /* but never answers */
	srv = guest_open(lfd, 41, 5300, 65536, NULL);
	xclose(srv);
	WAIT_FOR(gc[41].shut == VSOCK_SHUT_BOTH); /* and no RST from the guest */
	ck_assert_uint_eq(vs->nr_conns, 3);
	run_for(VSOCK_CLOSE_TIMEOUT + 0.5);
	ck_assert_uint_eq(gc[41].rst, 1);
	/* The connect waits on while its client does, up to connect_s. */
	ck_assert_uint_eq(gc[40].rst, 0);
	ck_assert_int_eq(read(c40, buf, sizeof(buf)), -1);
	ck_assert_uint_eq(vs->nr_conns, 2);
	run_for(vs->connect_s - VSOCK_CLOSE_TIMEOUT);
	ck_assert_uint_eq(gc[40].rst, 1);
	ck_assert_int_eq(read(c40, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(vs->nr_conns, 1);
	/* The client that never sent a CONNECT line goes last. */
	run_for(VSOCK_HELLO_TIMEOUT - vs->connect_s);
	ck_assert_int_eq(read(hello, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(vs->nr_conns, 0);
}
END_TEST

/* A guest that answers after seconds (a loaded host) is reached, however
 * late, while its client waits; a client that gives up takes its
 * connection with it within VSOCK_CONNECT_CHECK, and the guest gets an
 * RST, long before the device's own limit. */
START_TEST(connect_waits_for_client)
{
	int fd = client(), quitter = client();
	struct vsock_pkt *rq;
	struct gconn *g;

	send_str(fd, "CONNECT 42\n");
	rq = wait_take(VSOCK_OP_REQUEST, 42);
	ck_assert_ptr_nonnull(rq);
	g = gconn_new(42, rq->src_port, 65536);
	g->peer_buf_alloc = rq->buf_alloc;
	send_str(quitter, "CONNECT 43\n");
	rq = wait_take(VSOCK_OP_REQUEST, 43);
	ck_assert_ptr_nonnull(rq);
	gconn_new(43, rq->src_port, 65536);
	run_for(2.5);
	ck_assert_uint_eq(vs->nr_conns, 2);
	xclose(quitter);
	run_for(VSOCK_CONNECT_CHECK + 0.3);
	ck_assert_uint_eq(gc[43].rst, 1);
	ck_assert_uint_eq(vs->nr_conns, 1);
	ck_assert_uint_eq(gc[42].rst, 0);
	gsend(42, VSOCK_OP_RESPONSE, 0, NULL, 0);
	read_ok(fd, g->hport);
	ck_assert_int_eq(write(fd, "hi", 2), 2);
	WAIT_FOR(g->rx_total == 2);
	ck_assert_mem_eq(g->sink, "hi", 2);
}
END_TEST

START_TEST(malformed)
{
	struct vsock_pkt p = {
	    .src_cid = CID,
	    .dst_cid = VSOCK_HOST_CID,
	    .src_port = 60,
	    .dst_port = 999,
	    .type = VSOCK_TYPE_STREAM,
	    .op = VSOCK_OP_RW,
	};
	int lfd = listen_at(5400), srv;
	struct gconn *g;
	unsigned s;
	char buf[16];

	/* A chain shorter than a header. */
	s = tx_slot();
	memset(gp(TXBUF(s), 20), 0, 20);
	set_desc(VSOCK_TXQ, 2 * s, TXBUF(s), 20, 0, 0);
	post(VSOCK_TXQ, s);
	/* len beyond the chain, and a huge one. */
	p.len = 100;
	tx_raw(&p, "0123456789", 10, false);
	p.len = 0xffffffff;
	tx_raw(&p, "0123456789", 10, true);
	/* Wrong addresses. */
	p.len = 0;
	p.op = VSOCK_OP_REQUEST;
	p.dst_cid = 5;
	tx_raw(&p, NULL, 0, false);
	p.dst_cid = 1ULL << 32 | VSOCK_HOST_CID;
	tx_raw(&p, NULL, 0, false);
	p.dst_cid = VSOCK_HOST_CID;
	p.src_cid = 4;
	tx_raw(&p, NULL, 0, false);
	run(20);
	ck_assert_uint_eq(nlog, 0); /* all dropped, no answer */
	ck_assert_uint_eq(gq[VSOCK_TXQ].used_seen, gq[VSOCK_TXQ].avail);

	/* An unknown type gets an RST of that type, unless it is an RST. */
	gsend_to(62, 999, VSOCK_OP_REQUEST, 2);
	ck_assert_uint_eq(wait_take(VSOCK_OP_RST, 62)->type, 2);
	gsend_to(63, 999, VSOCK_OP_RST, 7);
	/* Unknown ops to an unknown tuple: RST. */
	gsend_to(64, 999, 99, VSOCK_TYPE_STREAM);
	gsend_to(65, 999, VSOCK_OP_INVALID, VSOCK_TYPE_STREAM);
	ck_assert_ptr_nonnull(wait_take(VSOCK_OP_RST, 64));
	ck_assert_ptr_nonnull(wait_take(VSOCK_OP_RST, 65));
	ck_assert_ptr_null(take(VSOCK_OP_RST, 63));

	/* An unknown op on an open connection resets it. */
	srv = guest_open(lfd, 66, 5400, 65536, &g);
	gsend(66, 99, 0, NULL, 0);
	WAIT_FOR(g->rst == 1);
	ck_assert(wait_eof(srv));
	/* So does a second REQUEST for the same tuple. */
	srv = guest_open(lfd, 67, 5400, 65536, &g);
	gsend(67, VSOCK_OP_REQUEST, 0, NULL, 0);
	WAIT_FOR(g->rst == 1);
	ck_assert(wait_eof(srv));
	ck_assert_uint_eq(vs->nr_conns, 0);

	/* A payload longer than len: only len bytes count. */
	srv = guest_open(lfd, 68, 5400, 65536, &g);
	p = (struct vsock_pkt){.src_cid = CID,
	                       .dst_cid = VSOCK_HOST_CID,
	                       .src_port = 68,
	                       .dst_port = 5400,
	                       .len = 4,
	                       .type = VSOCK_TYPE_STREAM,
	                       .op = VSOCK_OP_RW,
	                       .buf_alloc = 65536};
	tx_raw(&p, "abcdefghij", 10, true);
	ck_assert_int_eq(wait_read(srv, buf, sizeof(buf)), 4);
	ck_assert_mem_eq(buf, "abcd", 4);
	ck_assert_uint_eq(rd(STATUS) & VIRTIO_STATUS_NEEDS_RESET, 0);
}
END_TEST

/* The guest's EOF reaches the client after every byte it sent, even when
 * the device had to hold some of them. */
START_TEST(shutdown_after_buffered)
{
	int lfd = listen_at(5150), srv, i;
	uint8_t *pat = malloc(4 * MIB), *got = malloc(4 * MIB);
	struct vsock_conn *c;
	struct gconn *g;
	size_t n = 0;
	ssize_t r;

	ck_assert(pat && got);
	fill_pattern(pat, 4 * MIB, 42);
	srv = guest_open(lfd, 802, 5150, 65536, &g);
	for (i = 0; i < 1000 && g->tx_cnt < 4 * MIB; i++) {
		uint32_t room = host_free(g);

		if (room && free_slot(VSOCK_TXQ) >= 0)
			gsend(802, VSOCK_OP_RW, 0, pat + g->tx_cnt, room < 32768 ? room : 32768);
		spin();
	}
	c = hconn(802);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_gt(c->buf_len, 0);
	gsend(802, VSOCK_OP_SHUTDOWN, VSOCK_SHUT_SEND, NULL, 0);
	run(5);
	for (i = 0; i < 3000; i++) {
		r = read(srv, got + n, 4 * MIB - n);
		if (r == 0)
			break;
		if (r > 0)
			n += (size_t)r;
		spin();
	}
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(n, g->tx_cnt);
	ck_assert(!memcmp(got, pat, n));
	ck_assert_uint_eq(g->rst, 0);
	/* Data after the guest said it sends no more is a protocol error. */
	gsend(802, VSOCK_OP_RW, 0, "x", 1);
	WAIT_FOR(g->rst == 1);
	ck_assert_uint_eq(vs->nr_conns, 0);
	free(pat);
	free(got);
}
END_TEST

START_TEST(credit_abuse)
{
	int lfd = listen_at(5500), srv;
	uint8_t *chunk = malloc(65536), buf[65536];
	size_t sent = 0, got = 0;
	struct vsock_conn *c;
	struct gconn *g;
	ssize_t r;

	ck_assert_ptr_nonnull(chunk);
	fill_pattern(chunk, 65536, 99);
	srv = guest_open(lfd, 70, 5500, 65536, &g);
	/* The server does not read; the guest ignores credit. */
	while (!g->rst && sent < 8 * MIB) {
		gsend(70, VSOCK_OP_RW, 0, chunk, 65536);
		sent += 65536;
		run(2);
		c = hconn(70);
		if (c)
			ck_assert_uint_le(c->buf_len, VSOCK_BUF_ALLOC);
	}
	ck_assert_uint_ge(g->rst, 1);
	ck_assert_uint_lt(sent, 2 * MIB);
	while ((r = wait_read(srv, buf, sizeof(buf))) > 0)
		got += (size_t)r;
	ck_assert_int_eq(r, 0);
	ck_assert_uint_le(got, sent);
	WAIT_FOR(vs->nr_conns == 0);
	free(chunk);
}
END_TEST

START_TEST(credit_flow)
{
	int lfd = listen_at(5600), srv, i;
	uint8_t *pat = malloc(65536), buf[65536];
	struct vsock_conn *c;
	struct gconn *g;
	unsigned u;
	size_t got = 0;
	ssize_t r;

	ck_assert_ptr_nonnull(pat);
	fill_pattern(pat, 65536, 5);
	srv = guest_open(lfd, 71, 5600, 16384, &g);
	/* Guest -> host into a server that does not read: the guest runs out
	 * of credit, and the device holds at most what it advertised. */
	for (i = 0; i < 2000; i++) {
		uint32_t room = host_free(g);

		if (room && free_slot(VSOCK_TXQ) >= 0)
			gsend(71, VSOCK_OP_RW, 0, pat, room < 32768 ? room : 32768);
		spin();
	}
	c = hconn(71);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(g->rst, 0);
	ck_assert_uint_eq(host_free(g), 0);
	ck_assert_uint_gt(c->buf_len, 0);
	ck_assert_uint_le(c->buf_len, VSOCK_BUF_ALLOC);
	/* The server drains it: the device writes the rest and says so. */
	u = g->credit_updates;
	for (i = 0; i < 3000 && got < g->tx_cnt; i++) {
		r = read(srv, buf, sizeof(buf));
		if (r > 0)
			got += (size_t)r;
		spin();
	}
	ck_assert_uint_eq(got, g->tx_cnt);
	/* Updates come while the space the guest knows of is under half the
	 * window: it ends with at least half. */
	WAIT_FOR(g->credit_updates > u && host_free(g) >= VSOCK_BUF_ALLOC / 2);
	/* A CREDIT_REQUEST is answered. */
	u = g->credit_updates;
	gsend(71, VSOCK_OP_CREDIT_REQUEST, 0, NULL, 0);
	WAIT_FOR(g->credit_updates > u);

	/* Host -> guest never beyond the guest's 16 KiB. */
	g->hold = true;
	ck_assert_int_eq(write(srv, pat, 65536), 65536);
	run(200);
	ck_assert_uint_eq(g->rx_total, 16384);
	ck_assert_uint_ge(g->credit_requests, 1);
	while (g->rx_total < 65536) {
		g->fwd_cnt = g->rx_total; /* the application read it all */
		gsend(71, VSOCK_OP_CREDIT_UPDATE, 0, NULL, 0);
		WAIT_FOR(g->rx_total - g->fwd_cnt == 16384);
	}
	ck_assert(!memcmp(g->sink, pat, 65536));
	free(pat);
}
END_TEST

/* Guest -> host through a server that reads: nbytes in 32 KiB packets as
 * credit allows. */
static void stream_to(uint32_t gport, int srv, const uint8_t *pat, size_t nbytes)
{
	struct gconn *g = &gc[gport];
	uint8_t buf[65536];
	size_t sent = 0, got = 0;
	ssize_t r;
	int i;

	for (i = 0; i < 100000 && got < nbytes; i++) {
		uint32_t room = host_free(g), n = room < 32768 ? room : 32768;
		struct vsock_conn *c = hconn(gport);

		if (n > nbytes - sent)
			n = (uint32_t)(nbytes - sent);
		if (n && free_slot(VSOCK_TXQ) >= 0) {
			gsend(gport, VSOCK_OP_RW, 0, pat, n);
			sent += n;
		}
		spin();
		while ((r = recv(srv, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			got += (size_t)r;
		ck_assert_ptr_nonnull(c);
		ck_assert_uint_le(c->buf_len, c->win);
	}
	ck_assert_uint_eq(got, nbytes);
}

START_TEST(big_window)
{
	int lfd = listen_at(5700), srv[VSOCK_BIG_CONNS + 1];
	uint8_t *pat = malloc(32768);
	struct gconn *g;
	unsigned i;

	ck_assert_ptr_nonnull(pat);
	fill_pattern(pat, 32768, 7);
	/* A stream starts with the small window; once the guest has sent
	 * VSOCK_BUF_BIG it is told the big one, for VSOCK_BIG_CONNS
	 * connections at most. */
	for (i = 0; i <= VSOCK_BIG_CONNS; i++) {
		srv[i] = guest_open(lfd, 200 + i, 5700, 65536, &g);
		stream_to(200 + i, srv[i], pat, VSOCK_BUF_BIG + 65536);
		WAIT_FOR(g->credit_updates > 0);
		ck_assert_uint_eq(g->peer_buf_alloc,
		                  i < VSOCK_BIG_CONNS ? VSOCK_BUF_BIG : VSOCK_BUF_ALLOC);
	}
	ck_assert_uint_eq(vs->nr_big, VSOCK_BIG_CONNS);
	/* The big window lets the guest send that much ahead. */
	g = &gc[200];
	ck_assert_uint_gt(host_free(g), VSOCK_BUF_ALLOC);
	/* One goes: its big window goes to the next stream that asks. */
	gsend(200, VSOCK_OP_RST, 0, NULL, 0);
	WAIT_FOR(vs->nr_big == VSOCK_BIG_CONNS - 1);
	stream_to(200 + VSOCK_BIG_CONNS, srv[VSOCK_BIG_CONNS], pat, 65536);
	WAIT_FOR(gc[200 + VSOCK_BIG_CONNS].peer_buf_alloc == VSOCK_BUF_BIG);
	ck_assert_uint_eq(vs->nr_big, VSOCK_BIG_CONNS);
	free(pat);
}
END_TEST

START_TEST(connection_limit)
{
	struct rlimit rl;
	int lfd, hc, srv[VSOCK_MAX_CONNS + 1];
	struct gconn *g;
	unsigned i, n;
	uint32_t id;

	/* Both ends of every connection live in this process. */
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = rl.rlim_max;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_uint_ge(rl.rlim_cur, 2 * VSOCK_MAX_CONNS + 100);
	lfd = listen_at(6000);
	for (i = 0; i < VSOCK_MAX_CONNS; i++) {
		gconn_new(10000 + i, 6000, 65536);
		gsend(10000 + i, VSOCK_OP_REQUEST, 0, NULL, 0);
	}
	WAIT_FOR(count_op(VSOCK_OP_RESPONSE) == VSOCK_MAX_CONNS);
	ck_assert_uint_eq(vs->nr_conns, VSOCK_MAX_CONNS);
	/* One more is refused, from either side. */
	g = gconn_new(12000, 6000, 65536);
	gsend(12000, VSOCK_OP_REQUEST, 0, NULL, 0);
	WAIT_FOR(g->rst == 1);
	hc = client();
	ck_assert(wait_eof(hc));
	ck_assert_uint_eq(vs->nr_conns, VSOCK_MAX_CONNS);
	/* One closes, and there is room again. */
	gsend(10000, VSOCK_OP_RST, 0, NULL, 0);
	WAIT_FOR(vs->nr_conns == VSOCK_MAX_CONNS - 1);
	g = gconn_new(12001, 6000, 65536);
	gsend(12001, VSOCK_OP_REQUEST, 0, NULL, 0);
	WAIT_FOR(g->responses == 1);
	/* Every connection carries data: each server end sends its index. */
	for (i = 0; i <= VSOCK_MAX_CONNS; i++) {
		srv[i] = accept_one(lfd);
		send(srv[i], &i, sizeof(i), MSG_NOSIGNAL); /* #0 was reset */
	}
	for (n = 0; n < 3000; n++) {
		unsigned done = 0;

		for (i = 1; i <= VSOCK_MAX_CONNS; i++)
			done += gc[i < VSOCK_MAX_CONNS ? 10000 + i : 12001].rx_total == 4;
		if (done == VSOCK_MAX_CONNS)
			break;
		spin();
	}
	for (i = 1; i <= VSOCK_MAX_CONNS; i++) {
		g = &gc[i < VSOCK_MAX_CONNS ? 10000 + i : 12001];
		ck_assert_uint_eq(g->rx_total, 4);
		memcpy(&id, g->sink, 4);
		ck_assert_uint_eq(id, i);
	}
}
END_TEST

START_TEST(many_host_clients)
{
	enum { N = 200 };
	int fd[N];
	uint32_t i, j, id;
	struct vsock_pkt *rq;
	struct gconn *g;
	char line[32];

	for (i = 0; i < N; i++) {
		fd[i] = client();
		snprintf(line, sizeof(line), "CONNECT %u\n", 30000 + i);
		send_str(fd[i], line);
		if (i % 32 == 31)
			run(2); /* let the device accept */
	}
	for (i = 0; i < N; i++) {
		rq = wait_take(VSOCK_OP_REQUEST, 30000 + i);
		ck_assert_ptr_nonnull(rq);
		ck_assert_uint_ge(rq->src_port, VSOCK_PORT_BASE);
		g = gconn_new(30000 + i, rq->src_port, 65536);
		g->peer_buf_alloc = rq->buf_alloc;
		for (j = 0; j < i; j++)
			ck_assert_uint_ne(gc[30000 + j].hport, g->hport);
		gsend(30000 + i, VSOCK_OP_RESPONSE, 0, NULL, 0);
	}
	for (i = 0; i < N; i++) {
		read_ok(fd[i], gc[30000 + i].hport);
		ck_assert_int_eq(write(fd[i], &i, 4), 4);
		gsend(30000 + i, VSOCK_OP_RW, 0, &i, 4);
	}
	for (i = 0; i < N; i++) {
		WAIT_FOR(gc[30000 + i].rx_total == 4);
		memcpy(&id, gc[30000 + i].sink, 4);
		ck_assert_uint_eq(id, i);
		ck_assert_int_eq(wait_read(fd[i], &id, 4), 4);
		ck_assert_uint_eq(id, i);
	}
	ck_assert_uint_eq(vs->nr_conns, N);
}
END_TEST

START_TEST(connect_line)
{
	static const char *const bad[] = {
	    "HELLO\n",      "CONNECT abc\n",        "CONNECT 99999999999\n",
	    "CONNECT \n",   "CONNECT 5 \n",         "connect 5\n",
	    "CONNECT -5\n", "CONNECT 4294967296\n", "0123456789012345678901234567890123456789",
	};
	struct vsock_pkt *rq;
	struct gconn *g;
	unsigned i;
	int fd;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fd = client();
		send_str(fd, bad[i]);
		ck_assert_msg(wait_eof(fd), "not closed after '%s'", bad[i]);
		xclose(fd);
	}
	ck_assert_uint_eq(count_op(VSOCK_OP_REQUEST), 0);
	ck_assert_uint_eq(vs->nr_conns, 0);
	/* The line may come in pieces. */
	fd = client();
	send_str(fd, "CONN");
	run(5);
	send_str(fd, "ECT 77\n");
	ck_assert_ptr_nonnull(wait_take(VSOCK_OP_REQUEST, 77));
	/* Bytes right behind the line are stream data, not lost. */
	fd = client();
	send_str(fd, "CONNECT 78\nhello");
	rq = wait_take(VSOCK_OP_REQUEST, 78);
	ck_assert_ptr_nonnull(rq);
	g = gconn_new(78, rq->src_port, 65536);
	gsend(78, VSOCK_OP_RESPONSE, 0, NULL, 0);
	read_ok(fd, g->hport);
	WAIT_FOR(g->rx_total == 5);
	ck_assert_mem_eq(g->sink, "hello", 5);
	/* Nobody listens on guest port 79: RST closes the client. */
	fd = client();
	send_str(fd, "CONNECT 79\n");
	rq = wait_take(VSOCK_OP_REQUEST, 79);
	ck_assert_ptr_nonnull(rq);
	gconn_new(79, rq->src_port, 65536);
	gsend(79, VSOCK_OP_RST, 0, NULL, 0);
	ck_assert(wait_eof(fd));
	ck_assert_uint_eq(vs->nr_conns, 2); /* 77 (waiting) and 78 */
	/* Anything but RESPONSE or RST to our REQUEST: reset both ends. */
	fd = client();
	send_str(fd, "CONNECT 80\n");
	rq = wait_take(VSOCK_OP_REQUEST, 80);
	ck_assert_ptr_nonnull(rq);
	g = gconn_new(80, rq->src_port, 65536);
	gsend(80, VSOCK_OP_RW, 0, "hi", 2);
	WAIT_FOR(g->rst == 1);
	ck_assert(wait_eof(fd));
	/* A client that hangs up before its line. */
	fd = client();
	send_str(fd, "CONN");
	run(5);
	ck_assert_uint_eq(vs->nr_conns, 3);
	xclose(fd);
	WAIT_FOR(vs->nr_conns == 2);
}
END_TEST

START_TEST(device_reset)
{
	int lfd = listen_at(5700), srv, fd;

	srv = guest_open(lfd, 90, 5700, 65536, NULL);
	fd = host_open(91, 65536, NULL);
	ck_assert_uint_eq(vs->nr_conns, 2);
	wr(STATUS, 0); /* a vCPU thread, in real life */
	ck_assert(vs->reset_pending);
	ck_assert_uint_eq(vs->nr_conns, 2); /* the loop cleans up, not the vCPU */
	run(5);
	ck_assert_uint_eq(vs->nr_conns, 0);
	ck_assert(wait_eof(srv));
	ck_assert(wait_eof(fd));
	/* Clients that connect while there is no driver wait for the next. */
	fd = client();
	send_str(fd, "CONNECT 92\n");
	run(5);
	ck_assert_uint_eq(vs->nr_conns, 1);
	wr(STATUS, 0); /* drivers reset the device when they start */
	run(5);
	ck_assert_uint_eq(vs->nr_conns, 1);
	drv_init();
	rx_fill();
	ck_assert_ptr_nonnull(wait_take(VSOCK_OP_REQUEST, 92));
	host_open(96, 65536, NULL);
	ck_assert_uint_eq(vs->nr_conns, 2);
}
END_TEST

START_TEST(transport_reset)
{
	int fd = host_open(93, 65536, NULL);
	unsigned i;

	pthread_mutex_lock(&dev->lock);
	vsock_transport_reset(vs);
	pthread_mutex_unlock(&dev->lock);
	WAIT_FOR(ev_used == 1);
	ck_assert(wait_eof(fd));
	ck_assert_uint_eq(vs->nr_conns, 0);
	/* Out of event buffers, the event waits for the next one. */
	for (i = 0; i < 4; i++) {
		pthread_mutex_lock(&dev->lock);
		vsock_transport_reset(vs);
		pthread_mutex_unlock(&dev->lock);
	}
	run(5);
	ck_assert_uint_eq(ev_used, qsize[VSOCK_EVQ] / 2);
	ck_assert(vs->event_pending);
	ev_fill();
	WAIT_FOR(ev_used == qsize[VSOCK_EVQ] / 2 + 1);
}
END_TEST

START_TEST(drain)
{
	int lfd = listen_at(5800), srv;
	char buf[8];

	srv = guest_open(lfd, 95, 5800, 65536, NULL);
	gsend(95, VSOCK_OP_RW, 0, "bye", 3); /* kicked, but the loop does not run */
	virtio_mmio_drain_all(&vm);
	ck_assert_int_eq(read(srv, buf, sizeof(buf)), 3);
	ck_assert_mem_eq(buf, "bye", 3);
	ck_assert_int_eq(read(srv, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(vs->nr_conns, 0);
}
END_TEST

START_TEST(rst_ring_stall)
{
	const unsigned extra = 10, rx_posted = qsize[VSOCK_RXQ] / 2;
	unsigned i;

	rx_auto = false;
	for (i = 0; i < rx_posted + VSOCK_RST_RING + extra; i++)
		gsend_to(100 + i, 999, VSOCK_OP_RW, VSOCK_TYPE_STREAM);
	run(20);
	/* Posted buffers took the first RSTs, the ring holds the next, and
	 * then the transmit queue waits for the driver. */
	ck_assert_uint_eq(count_op(VSOCK_OP_RST), rx_posted);
	ck_assert(vs->tx_stalled);
	ck_assert_uint_eq(gq[VSOCK_TXQ].used_seen, rx_posted + VSOCK_RST_RING);
	rx_auto = true;
	rx_fill();
	WAIT_FOR(count_op(VSOCK_OP_RST) == rx_posted + VSOCK_RST_RING + extra);
	ck_assert(!vs->tx_stalled);
}
END_TEST

START_TEST(small_rx_buffers)
{
	int lfd = listen_at(5900), srv;
	struct gconn *g;
	unsigned empty;

	rx_len = 16; /* too small for a header */
	rx_fill();
	gsend_to(200, 999, VSOCK_OP_RW, VSOCK_TYPE_STREAM);
	run(10);
	ck_assert_uint_eq(n_empty, qsize[VSOCK_RXQ] / 2);
	ck_assert_uint_eq(count_op(VSOCK_OP_RST), 0);
	rx_len = VSOCK_HDR_SIZE; /* room for control packets only */
	rx_fill();
	WAIT_FOR(count_op(VSOCK_OP_RST) == 1);
	srv = guest_open(lfd, 201, 5900, 65536, &g);
	empty = n_empty;
	ck_assert_int_eq(write(srv, "data", 4), 4);
	run(10);
	ck_assert_uint_gt(n_empty, empty);
	ck_assert_uint_eq(g->rx_total, 0);
	rx_len = 4096;
	rx_auto = true;
	rx_fill();
	WAIT_FOR(g->rx_total == 4);
	ck_assert_mem_eq(g->sink, "data", 4);
}
END_TEST

/* The device asks for receive-buffer kicks only while a packet waits. */
START_TEST(rx_kicks_only_while_waiting)
{
	gsend_to(300, 999, VSOCK_OP_RW, VSOCK_TYPE_STREAM); /* owed an RST */
	run(10);
	ck_assert_uint_eq(used_flags(VSOCK_RXQ), 0);
	rx_len = 4096;
	rx_fill();
	WAIT_FOR(count_op(VSOCK_OP_RST) == 1);
	run(10);
	ck_assert_uint_eq(used_flags(VSOCK_RXQ), 1); /* VIRTQ_USED_F_NO_NOTIFY */
	gsend_to(301, 999, VSOCK_OP_RW, VSOCK_TYPE_STREAM);
	WAIT_FOR(count_op(VSOCK_OP_RST) == 2); /* found the posted buffers unasked */
	ck_assert_uint_eq(used_flags(VSOCK_RXQ), 1);
}
END_TEST

static Suite *vsock_suite(void)
{
	Suite *s = suite_create("virtio-vsock");
	TCase *t = tcase_create("vsock");
	TCase *n = tcase_create("no-rx-buffers");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 120);
	tcase_add_test(t, config_and_features);
	tcase_add_test(t, create_errors);
	tcase_add_test(t, host_connect_transfer);
	tcase_add_test(t, guest_connect);
	tcase_add_test(t, lazy_irqs);
	tcase_add_test(t, unknown_rst);
	tcase_add_test(t, shutdown_guest_send);
	tcase_add_test(t, shutdown_guest_rcv);
	tcase_add_test(t, shutdown_after_buffered);
	tcase_add_test(t, shutdown_host_half);
	tcase_add_test(t, host_close);
	tcase_add_test(t, timeouts);
	tcase_add_test(t, connect_waits_for_client);
	tcase_add_test(t, malformed);
	tcase_add_test(t, credit_abuse);
	tcase_add_test(t, credit_flow);
	tcase_add_test(t, big_window);
	tcase_add_test(t, connection_limit);
	tcase_add_test(t, many_host_clients);
	tcase_add_test(t, connect_line);
	tcase_add_test(t, device_reset);
	tcase_add_test(t, transport_reset);
	tcase_add_test(t, drain);
	tcase_add_test(t, rst_ring_stall);
	suite_add_tcase(s, t);
	tcase_add_checked_fixture(n, setup_norx, teardown);
	tcase_add_test(n, small_rx_buffers);
	tcase_add_test(n, rx_kicks_only_while_waiting);
	suite_add_tcase(s, n);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(vsock_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
