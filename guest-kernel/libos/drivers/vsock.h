/* SPDX-License-Identifier: MIT */
/*
 * virtio-vsock in the library OS: what the driver (vsock.c: queues,
 * packets, the connection protocol and its flow control) and the AF_VSOCK
 * sockets (sock_vsock.c: the socket calls) share. Not for other
 * subsystems: they reach vsock through the socket layer (socket.h).
 *
 * Every connection is to the host (CID 2): the device carries nothing else.
 */
#ifndef KILN_LIBOS_VSOCK_H
#define KILN_LIBOS_VSOCK_H

#include "klib.h"
#include "ktimer.h"
#include "sched.h"

#define VSOCK_HOST_CID 2
#define VSOCK_CID_ANY  0xffffffffU
#define VSOCK_PORT_ANY 0xffffffffU

/* Packet header (virtio 1.2, 5.10.6), little-endian like the CPU. */
struct vsock_hdr {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port;
	uint32_t len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
} __attribute__((packed));
_Static_assert(sizeof(struct vsock_hdr) == 44, "virtio_vsock_hdr is 44 bytes");

#define VSOCK_TYPE_STREAM 1

enum {
	VSOCK_OP_REQUEST = 1,
	VSOCK_OP_RESPONSE,
	VSOCK_OP_RST,
	VSOCK_OP_SHUTDOWN,
	VSOCK_OP_RW,
	VSOCK_OP_CREDIT_UPDATE,
	VSOCK_OP_CREDIT_REQUEST,
};

/* SHUTDOWN flags: the sender will receive / send no more. */
#define VSOCK_SHUT_RCV  1
#define VSOCK_SHUT_SEND 2
#define VSOCK_SHUT_BOTH 3

#define VSOCK_BUF_ALLOC   (1024 * 1024) /* receive space each connection advertises */
#define VSOCK_CREDIT_MIN  (64 * 1024)   /* bytes read worth a CREDIT_UPDATE */
#define VSOCK_MAX_PAYLOAD (64 * 1024)   /* bytes per packet we send */
#define VSOCK_RX_PAGES    (VSOCK_BUF_ALLOC / 4096 + 1)

#define VSOCK_CONNECT_TIMEOUT_NS 2000000000ULL /* Linux's default */
#define VSOCK_CLOSE_TIMEOUT_NS   8000000000ULL /* Linux's: SHUTDOWN sent, no RST yet */

enum vsock_state {
	VSK_OPEN, /* new, perhaps bound */
	VSK_LISTEN,
	VSK_CONNECTING, /* REQUEST owed or sent, no RESPONSE yet */
	VSK_CONNECTED,  /* what is left of each direction flows (peer_shut, local_shut) */
	VSK_DONE,       /* the connection is over (RST, reset, refused, timed out) */
	VSK_CLOSING,    /* file closed, SHUTDOWN sent: the peer's RST ends it (or the timer) */
	VSK_DEAD,       /* file closed, RST owed: freed once it is out */
};

/* Control packets a socket owes the host (vsock_sk.pending), by priority. */
#define VSK_P_RST            0x01
#define VSK_P_RESPONSE       0x02
#define VSK_P_REQUEST        0x04
#define VSK_P_SHUTDOWN       0x08
#define VSK_P_CREDIT_UPDATE  0x10
#define VSK_P_CREDIT_REQUEST 0x20

/* Bytes received and not yet read: a ring of pages, allocated as they fill
 * and freed as they empty. Credit bounds it by VSOCK_BUF_ALLOC. */
struct vsock_rxbuf {
	uint64_t page[VSOCK_RX_PAGES]; /* physical; the ring of pages */
	unsigned first, npages;        /* ring position of the oldest page, pages held */
	uint32_t off;                  /* where the oldest byte is in page[first] */
	uint32_t len;                  /* bytes held */
};

struct socket;

/* One AF_VSOCK socket: unbound, bound, listening or one connection. */
struct vsock_sk {
	struct socket *sock; /* NULL once its file is closed, or before accept() */
	enum vsock_state state;
	uint32_t lport, pport; /* local port; the peer's (on CID 2) */
	uint32_t lcid;         /* local CID: as bound (maybe VSOCK_CID_ANY), ours once connected */
	bool bound;            /* lport is ours in the bound list */
	bool was_connected;    /* reached VSK_CONNECTED (connect() again: EISCONN) */
	bool hashed;           /* in the connection table */
	int err;               /* error owed to the next call (ECONNRESET ...) */
	uint8_t peer_shut;     /* SHUTDOWN flags received */
	uint8_t local_shut;    /* SHUTDOWN flags sent or owed */
	unsigned int pending;  /* VSK_P_* */
	bool on_owed;
	/* host <- guest: the peer's receive space */
	uint32_t peer_buf_alloc, peer_fwd_cnt, tx_cnt;
	bool credit_asked;
	/* host -> guest: ours; fwd_cnt counts bytes the program has read */
	uint32_t rx_cnt, fwd_cnt, fwd_told;
	struct vsock_rxbuf rx;
	/* listening */
	struct vsock_sk *listener; /* a connection not yet accepted */
	struct vsock_sk *acc_head, *acc_tail;
	struct vsock_sk *acc_next;
	int backlog, nr_acc;
	uint64_t connect_timeout_ns;
	struct ktimer timer; /* connect timeout; close timeout */
	struct waitq wq;     /* every change of state, data, credit */
	/* Called on every wake (from the driver too), for a stream that
	 * carries another family's socket (net/sock_inet_udp.c); NULL for most. */
	void (*notify)(struct vsock_sk *vs);
	void *owner;
	struct vsock_sk *hash_next, *bound_next, *owed_next, *all_next;
};

/* The CID the device gave us; 0 until the driver is up. */
extern uint64_t vsock_local_cid;
/* Woken when transmit buffers free up. */
extern struct waitq vsock_tx_wq;

/* vsock.c: the driver. */
struct bootinfo;
void vsock_init(const struct bootinfo *bi); /* at boot: remembers where the device is */
/* Bring the device up on first use: 0 or -ENODEV/-ENOMEM. */
int vsock_dev_up(void);
/* Serve the device's queues now (an interrupt may be pending unseen). */
void vsock_dev_poll(void);
/* Queue the control packets in `what` (VSK_P_*) for vs and send what the
 * transmit queue has room for. */
void vsock_owe(struct vsock_sk *vs, unsigned int what);
/* An RST to a tuple, for a connection given up (connect timed out or
 * interrupted) whose socket lives on. */
void vsock_owe_rst(uint32_t lport, uint32_t pport);
/* Bytes vs may send now, as the peer's credit allows. */
uint32_t vsock_credit(const struct vsock_sk *vs);
/* Room for one data packet in the transmit queue? Arms the transmit
 * interrupt when there is none, so that a waiter is woken (vsock_tx_wq). */
bool vsock_tx_room(void);
/* Send up to n bytes from `it` as data packets, as far as credit and the
 * transmit queue allow, without waiting. Bytes sent, or -EFAULT when
 * nothing was. */
struct sock_iter;
long vsock_send_data(struct vsock_sk *vs, struct sock_iter *it, size_t n);
/* Tell the device about what was queued. */
void vsock_tx_flush(void);
/* The program read n bytes of vs: credit them, and tell the host once
 * enough has been read. */
void vsock_consumed(struct vsock_sk *vs, uint32_t n);
/* Receive buffers (vsock_rxbuf.c). */
/* Append n bytes from src (checked against our credit by the caller);
 * -ENOMEM when out of pages. */
int vsock_rx_append(struct vsock_rxbuf *rb, const char *src, uint32_t n);
/* Copy n bytes (<= rx.len) from the front of vs's receive buffer to `it`;
 * drop them unless peek. 0 or -EFAULT. */
int vsock_rx_copy(struct vsock_sk *vs, struct sock_iter *it, uint32_t n, bool peek);
void vsock_rx_free(struct vsock_sk *vs);
/* Connection table and bound ports. */
void vsock_hash(struct vsock_sk *vs);
void vsock_unhash(struct vsock_sk *vs);
struct vsock_sk *vsock_find_bound(uint32_t port);
void vsock_bind_port(struct vsock_sk *vs, uint32_t port);
void vsock_unbind(struct vsock_sk *vs);
/* A free port for an outgoing connection, or 0. */
uint32_t vsock_ephemeral_port(void);
/* Free vs (off every list), which nothing refers to any more. */
void vsock_free(struct vsock_sk *vs);

/* sock_vsock.c: what the driver tells the sockets. */
/* A new connection from the host on a listening socket: vs is queued for
 * accept() (it owes a RESPONSE). */
void vsock_sk_incoming(struct vsock_sk *listener, struct vsock_sk *vs);
/* A packet changed vs (state, data, credit): wake whoever waits. */
void vsock_sk_wake(struct vsock_sk *vs);
/* A new vsock_sk with defaults, or NULL. */
struct vsock_sk *vsock_sk_alloc(void);
/* One sleep on vs's queue (and the transmit queue's, tx: for room to
 * send): 0, -EINTR or -ETIMEDOUT (deadline 0: none). */
long vsock_sk_sleep(struct vsock_sk *vs, bool tx, uint64_t deadline);

/* sock_vsock.c: one stream's calls, for sockets of other families carried
 * over vsock to the host (AF_INET egress, net/sock_inet_egress.c). s is the
 * socket whose options (SO_RCVTIMEO ...) count. Connect starts a
 * connection to host port `port` (vsock_dev_up() done): 0 or -errno, the
 * rest as in AF_VSOCK. Close hands vs over to finish by itself. */
struct poll_table;
int vsock_stream_connect(struct vsock_sk *vs, uint32_t port);
/* The same, with the first n bytes (at most VSOCK_MAX_PAYLOAD) sent right
 * behind the REQUEST (kiln's VMM only): how many went, or -errno. */
long vsock_stream_connect_with(struct vsock_sk *vs, uint32_t port, const void *p, size_t n);
long vsock_stream_send(struct vsock_sk *vs, struct socket *s, struct sock_iter *it, int flags);
long vsock_stream_recv(struct vsock_sk *vs, struct socket *s, struct sock_iter *it, int flags);
int vsock_stream_shutdown(struct vsock_sk *vs, int how);
unsigned int vsock_stream_poll(struct vsock_sk *vs);
void vsock_stream_poll_wait(struct vsock_sk *vs, struct poll_table *pt);
void vsock_stream_close(struct vsock_sk *vs);

#endif
