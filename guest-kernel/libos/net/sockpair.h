/* SPDX-License-Identifier: MIT */
/*
 * Sockets paired in memory (sockpair.c, sockpair_msg.c), for the families that need no
 * network: AF_UNIX (sock_unix.c) and loopback AF_INET/AF_INET6
 * (sock_inet.c). One struct sp_end is one socket's side: a receive queue of
 * messages, the connection to its peer, and for a listener the queue of
 * connections not yet accepted. A family embeds it in its own per-socket
 * struct and keeps the addresses; this file moves the bytes.
 *
 *   SOCK_STREAM     bytes; a read may take parts of several writes
 *   SOCK_SEQPACKET  connected messages with boundaries
 *   SOCK_DGRAM      messages, each with its sender's address
 *
 * A message carries the sender's credentials, address (refcounted) and,
 * for SCM_RIGHTS, references on open files; they go back with the bytes.
 *
 * Memory: a sender may have sndbuf bytes unread in the receiver's queue
 * (SO_SNDBUF, 208 KiB by default), then waits, as Linux's AF_UNIX does.
 * Ends are refcounted: the socket holds one, a connection one on its peer,
 * a listener one on every connection it queues, and a sender one on the
 * receiver while it waits for room.
 *
 * Every wait of a caller on end e is on e->wq (data, connections, errors,
 * shutdown), or for room in a receiver's queue on that receiver's room_wq.
 */
#ifndef KILN_LIBOS_SOCKPAIR_H
#define KILN_LIBOS_SOCKPAIR_H

#include "sched.h"
#include "socket.h"

#define SP_SHUT_RD    1
#define SP_SHUT_WR    2
#define SP_SHUT_BOTH  3
#define SP_DGRAM_QLEN 10 /* net.unix.max_dgram_qlen */

/* A sender's address as its messages carry it (a sockaddr of len bytes). */
struct sp_addr {
	int refs;
	int len;
	char bytes[];
};

struct sp_addr *sp_addr_new(const void *bytes, int len);
void sp_addr_get(struct sp_addr *a);
void sp_addr_put(struct sp_addr *a); /* NULL is fine */

struct sp_msg;

struct sp_queue {
	struct sp_msg *head, *tail;
	size_t bytes;       /* unread */
	unsigned int count; /* messages */
};

enum sp_state {
	SP_OPEN, /* not connected (a datagram end may still have a peer) */
	SP_LISTEN,
	SP_CONNECTED,
};

struct sp_end {
	int refs;
	void (*destroy)(struct sp_end *e); /* the last reference is gone: free it */
	int type;                          /* SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM */
	bool tcp;                          /* TCP's semantics where they differ from AF_UNIX's */
	bool dead;                         /* its socket is closed */
	bool reset;                        /* TCP: the peer reset the connection */
	enum sp_state state;
	uint8_t shut;        /* SP_SHUT_*: what can no longer be done here */
	int err;             /* a pending error (positive errno): SO_ERROR, the next call */
	struct sp_end *peer; /* a reference: connected to / sends to by default */
	struct sp_queue rx;
	struct waitq wq;      /* this end's callers */
	struct waitq room_wq; /* senders waiting for room in rx */
	/* Listening: connections not yet accepted (embryos), oldest first. */
	struct sp_end *acc_head, *acc_tail;
	struct sp_end *acc_next;
	struct sp_end *listener; /* an embryo's, no reference */
	int nacc, backlog;
};

void sp_init(struct sp_end *e, int type, void (*destroy)(struct sp_end *));
void sp_get(struct sp_end *e);
void sp_put(struct sp_end *e);
/* The socket is closed: wake everyone, tell the peer, drop what is queued,
 * put the socket's reference. */
void sp_release(struct sp_end *e, bool reset);

/* Connect a and b to each other. */
void sp_link(struct sp_end *a, struct sp_end *b);
/* Datagram: the default destination (a reference taken), or NULL. */
void sp_set_peer(struct sp_end *e, struct sp_end *peer);

/* Listening. sp_connect_wait waits while l's queue is full (-EAGAIN when
 * nonblock, -ERESTARTSYS, -ECONNREFUSED once l stops listening);
 * sp_enqueue queues the embryo (taking the caller's reference);
 * sp_accept waits for one and hands over its reference. */
void sp_listen(struct sp_end *l, int backlog);
bool sp_acc_full(const struct sp_end *l);
int sp_connect_wait(struct sp_end *l, struct socket *s, bool nonblock);
void sp_enqueue(struct sp_end *l, struct sp_end *embryo);
int sp_accept(struct sp_end *l, struct socket *s, bool nonblock, struct sp_end **out);
/* Stop listening: every queued connection is reset. */
void sp_unlisten(struct sp_end *l);

/* Sending on a connection (stream, seqpacket) to e->peer, or a datagram
 * to `to` (qlen: also wait while `to` holds SP_DGRAM_QLEN messages). The
 * message carries from (may be NULL) and it->scm's files and creds.
 * Returns bytes sent or -errno (-EPIPE raises SIGPIPE in the layer). */
long sp_send(struct sp_end *e, struct socket *s, struct sock_iter *it, int flags,
             struct sp_addr *from);
long sp_send_to(struct sp_end *e, struct sp_end *to, struct socket *s, struct sock_iter *it,
                int flags, struct sp_addr *from, bool qlen);
/* A datagram into to's queue however full it is (UDP: the caller drops
 * what does not fit). */
long sp_deliver(struct sp_end *to, struct sock_iter *it, struct sp_addr *from);
/* Receiving, for every type; addr (SOCK_ADDR_MAX bytes) gets the sender's
 * address if the message has one. passcred: SO_PASSCRED (creds into
 * it->scm, and a stream read does not join two senders' bytes). */
long sp_recv(struct sp_end *e, struct socket *s, struct sock_iter *it, int flags, int *msg_flags,
             void *addr, int *addrlen, bool passcred);

int sp_shutdown(struct sp_end *e, int how); /* SHUT_RD/WR/RDWR */
unsigned int sp_poll(struct sp_end *e, struct socket *s);
void sp_poll_wait(struct sp_end *e, struct poll_table *pt);
/* FIONREAD: the unread bytes (stream), the next message's size (others). */
int sp_inq(const struct sp_end *e);
/* SIOCOUTQ: this end's bytes not yet read by the peer. */
int sp_outq(const struct sp_end *e);

/* The interface ioctls (SIOCGIFFLAGS ... for "lo") every socket takes
 * (sock_netdev.c); -ENOTTY for any other command. */
long netdev_ioctl(unsigned int cmd, unsigned long arg);

/* For sockpair*.c: one sleep on wq until woken or the deadline (set on
 * the first call from timeo_ns; *timed tracks that). 0, -ERESTARTSYS or
 * -EAGAIN (timed out). */
long sp_sleep(struct waitq *wq, uint64_t timeo_ns, uint64_t *deadline, bool *timed);

/* SCM_RIGHTS in flight: how many queued messages carry files. */
unsigned long sp_inflight(void);
typedef bool (*sp_visit_fn)(struct file *f, void *arg);
/* Call fn on every file in e's queue; stops when it returns false. */
void sp_for_each_inflight(struct sp_end *e, sp_visit_fn fn, void *arg);
/* Drop every message of e's queue (the collector's last step). */
void sp_purge(struct sp_end *e);

#endif
