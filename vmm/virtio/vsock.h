/* SPDX-License-Identifier: MIT */
/*
 * virtio-vsock internals, shared by the device (vsock.c: queues, packets,
 * listener) and its connections (vsock_conn.c: the unix-socket side of each
 * stream). Not a public interface: the rest of the VMM sees vsock_create()
 * in virtio.h only; the unit test looks inside through this header.
 */
#ifndef KILN_VMM_VIRTIO_VSOCK_H
#define KILN_VMM_VIRTIO_VSOCK_H

#include <ev.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <sys/un.h>

#include "virtio.h"

#define VIRTIO_ID_VSOCK 19

#define VSOCK_RXQ 0
#define VSOCK_TXQ 1
#define VSOCK_EVQ 2

#define VSOCK_HOST_CID    2
#define VSOCK_TYPE_STREAM 1

enum {
	VSOCK_OP_INVALID,
	VSOCK_OP_REQUEST,
	VSOCK_OP_RESPONSE,
	VSOCK_OP_RST,
	VSOCK_OP_SHUTDOWN,
	VSOCK_OP_RW,
	VSOCK_OP_CREDIT_UPDATE,
	VSOCK_OP_CREDIT_REQUEST,
};

/* SHUTDOWN flags: the sender will not receive / will not send any more. */
#define VSOCK_SHUT_RCV  1
#define VSOCK_SHUT_SEND 2
#define VSOCK_SHUT_BOTH 3

#define VSOCK_EVENT_TRANSPORT_RESET 0

/* The packet header as it sits in guest memory (little-endian, packed). */
struct vsock_hdr_le {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port;
	uint32_t len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
} __attribute__((packed));

#define VSOCK_HDR_SIZE 44
_Static_assert(sizeof(struct vsock_hdr_le) == VSOCK_HDR_SIZE, "virtio_vsock_hdr is 44 bytes");

/* The same, decoded once into host order; only this copy is validated. */
struct vsock_pkt {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port;
	uint32_t len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
};

/* Limits. Every byte a guest can make us hold is bounded by these. */
#define VSOCK_MAX_CONNS  1024
#define VSOCK_BUF_ALLOC  (256 * 1024)  /* receive space we advertise per connection ... */
#define VSOCK_BUF_BIG    (1024 * 1024) /* ... and to one that streams to the host */
#define VSOCK_BIG_CONNS  32            /* connections with VSOCK_BUF_BIG at most */
#define VSOCK_CREDIT_MIN (64 * 1024)   /* forwarded bytes worth a CREDIT_UPDATE */
#define VSOCK_MAX_PKT    (64 * 1024)   /* payload bytes per packet we send */
#define VSOCK_RST_RING   64            /* RSTs owed to tuples with no connection */
#define VSOCK_HASH_SIZE  256
#define VSOCK_LINE_MAX   32         /* "CONNECT <port>\n" from a host client */
#define VSOCK_PORT_BASE  (1u << 30) /* first ephemeral host port */

/* Seconds. */
#define VSOCK_HELLO_TIMEOUT 5.0 /* client connected, no CONNECT line yet */
/* CONNECT line read, no RESPONSE yet: the most a host client may wait,
 * above every client's own deadline (the shim's longest is 30 s, kilnd's
 * 5 s). A client that hung up is noticed within VSOCK_CONNECT_CHECK and its
 * connection dropped, so a loaded guest is given as long as the client
 * grants it, and one that never answers holds a connection (no buffer)
 * that long at most. */
#define VSOCK_CONNECT_TIMEOUT 60.0
#define VSOCK_CONNECT_CHECK   0.5
#define VSOCK_CLOSE_TIMEOUT   2.0   /* SHUTDOWN sent, no RST yet */
#define VSOCK_ACCEPT_RETRY    1.0   /* out of file descriptors */
#define VSOCK_LAZY_IRQ        0.002 /* a packet nobody waits for: interrupt by then */

enum vsock_conn_state {
	VSOCK_HELLO,       /* host client connected; reading its CONNECT line */
	VSOCK_CONNECTING,  /* host-initiated; REQUEST owed or sent, no RESPONSE yet */
	VSOCK_ESTABLISHED, /* bytes flow (what is left of each direction) */
	VSOCK_CLOSING,     /* socket closed, SHUTDOWN owed or sent; waiting for RST */
	VSOCK_DEAD,        /* socket closed, RST owed; freed once it is delivered */
};

/* Packets a connection owes the guest (vsock_conn.pending). */
#define VSOCK_P_REQUEST        0x01
#define VSOCK_P_RESPONSE       0x02
#define VSOCK_P_SHUTDOWN       0x04
#define VSOCK_P_CREDIT_UPDATE  0x08
#define VSOCK_P_CREDIT_REQUEST 0x10
#define VSOCK_P_RST            0x20

struct vsock;

struct vsock_conn {
	struct vsock *v;
	enum vsock_conn_state state;
	int fd;                /* the unix socket, -1 once closed */
	uint32_t lport, pport; /* host (local) and guest (peer) port */
	unsigned pending;      /* VSOCK_P_* */
	bool hashed, on_rxq;
	bool readable;      /* fd has input; rd watcher stopped until it is read */
	bool host_eof;      /* read() on fd returned 0 */
	bool request_sent;  /* the guest has seen our REQUEST */
	bool credit_asked;  /* CREDIT_REQUEST sent since the last credit change */
	ev_tstamp deadline; /* CONNECTING: reset then if the guest has not answered */
	uint8_t peer_shut;  /* SHUTDOWN flags received from the guest */
	uint8_t local_shut; /* SHUTDOWN flags sent (or owed) to the guest */
	/* host -> guest: the guest's receive space */
	uint32_t peer_buf_alloc, peer_fwd_cnt, tx_cnt;
	/* guest -> host: ours; fwd_cnt counts bytes written out to fd */
	uint32_t rx_cnt, fwd_cnt, fwd_told;
	/* The receive space we advertise: VSOCK_BUF_ALLOC, or VSOCK_BUF_BIG
	 * once the guest has sent that much (while v->nr_big allows). */
	uint32_t win;
	bool big;
	/* Guest bytes fd did not take yet, a ring of win bytes, allocated only
	 * while non-empty (win changes only then). Credit keeps it from
	 * overflowing. */
	uint8_t *buf;
	uint32_t buf_head, buf_len;
	char line[VSOCK_LINE_MAX];
	unsigned line_len;
	ev_io rd, wr;
	ev_timer timer;
	LIST_ENTRY(vsock_conn) hash_link;
	TAILQ_ENTRY(vsock_conn) all_link, rxq_link;
};

struct vsock_rst {
	uint32_t lport, pport;
	uint16_t type;
};

struct vsock {
	struct virtio_dev *dev;
	struct ev_loop *loop;
	uint64_t guest_cid;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t path_dev; /* the socket file we bound, so destroy unlinks only it */
	ino_t path_ino;
	int listen_fd;
	ev_io listen_watch;
	ev_timer listen_retry;
	/* Device reset runs on a vCPU thread: it only sets reset_pending and
	 * wakes the loop, which drops the connections (vsock_sync_reset). */
	bool reset_pending;
	ev_async reset_async;
	unsigned nr_conns;
	unsigned nr_big; /* connections with a VSOCK_BUF_BIG window */
	uint32_t next_port;
	LIST_HEAD(, vsock_conn) hash[VSOCK_HASH_SIZE];
	TAILQ_HEAD(, vsock_conn) all;
	TAILQ_HEAD(, vsock_conn) rxq; /* connections owing the guest a packet */
	struct vsock_rst rst[VSOCK_RST_RING];
	unsigned rst_head, rst_len;
	bool tx_stalled;    /* tx stopped because rst[] was full */
	bool event_pending; /* TRANSPORT_RESET not yet delivered */
	/* Packets nobody in the guest waits for (vsock_conn_emit) go into the
	 * ring without an interrupt of their own: the next packet's, or
	 * lazy_timer's, delivers them. An interrupt costs the guest 35-55 us
	 * on PVM hosts, and a wake from halt to go back to sleep. */
	bool rx_urgent; /* a packet pushed since the last interrupt is awaited */
	ev_timer lazy_timer;
	double lazy_s;    /* VSOCK_LAZY_IRQ (the unit test waits longer) */
	double connect_s; /* VSOCK_CONNECT_TIMEOUT (the unit test waits less) */
	/* Stream payload bytes since the VMM started, from the guest (rx) and
	 * to it (tx): counted under the lock, read by the API on the loop. */
	uint64_t rx_bytes, tx_bytes;
};

/* vsock.c */
void vsock_log(struct vsock *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop every connection if the device was reset; true if it was (callers
 * from watchers must then not touch their connection). Lock held. */
bool vsock_sync_reset(struct vsock *v);
/* Owe the guest an RST for a tuple we have no connection for. False when
 * the ring is full (the caller drops it). */
bool vsock_queue_rst(struct vsock *v, uint32_t lport, uint32_t pport, uint16_t type);
/* Send what is owed on the rx queue, bounded per call. Main loop, lock held. */
void vsock_rx_pump(struct vsock *v);
/* Close every connection and send the guest a TRANSPORT_RESET event (for
 * snapshot restore). Main loop, lock held. */
void vsock_transport_reset(struct vsock *v);

/* vsock_conn.c */
/* A host client connected to the listening socket. False at the limit. */
bool vsock_conn_accept(struct vsock *v, int fd);
/* A validated stream packet from the guest; payload is iov[0..n) from off. */
void vsock_conn_recv(struct vsock *v, const struct vsock_pkt *p, const struct iovec *iov,
                     unsigned n, size_t off);
/* Build the next packet c owes the guest into the writable buffers iov:
 * returns its length, 0 if c has nothing to send after all, -1 if the
 * buffer cannot hold it. May free c. */
int vsock_conn_emit(struct vsock_conn *c, const struct iovec *iov, unsigned n, size_t room);
struct vsock_conn *vsock_conn_find(struct vsock *v, uint32_t lport, uint32_t pport);
/* Try once, without blocking, to write out what c has buffered. */
void vsock_conn_flush(struct vsock_conn *c);
void vsock_conn_free(struct vsock_conn *c);
void vsock_conn_free_all(struct vsock *v);
/* Free the connections the guest knows of (after a reset). */
void vsock_conn_reset_all(struct vsock *v);

#endif
