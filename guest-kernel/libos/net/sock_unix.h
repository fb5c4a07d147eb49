/* SPDX-License-Identifier: MIT */
/*
 * Inside AF_UNIX: what sock_unix.c and its collector of unreachable
 * sockets in flight (sock_unix_gc.c) share.
 */
#ifndef KILN_LIBOS_SOCK_UNIX_H
#define KILN_LIBOS_SOCK_UNIX_H

#include "sockpair.h"

struct inode;

struct unix_sk {
	struct sp_end e;
	struct socket *sock;           /* NULL while an embryo in a listener's queue */
	struct sp_addr *addr;          /* bound (a struct sockaddr_un), or NULL */
	struct inode *ip;              /* a path's socket node (a reference), or NULL */
	struct unix_sk *bnext;         /* in the table of bound sockets */
	struct unix_sk *anext, *aprev; /* every AF_UNIX socket, for the collector */
	bool passcred;                 /* SO_PASSCRED */
	bool has_peercred;
	struct sock_ucred peercred; /* SO_PEERCRED */
	/* The collector's marks. */
	int gc_inflight, gc_internal;
	bool gc_candidate, gc_alive;
	struct unix_sk *gc_next;
};

/* Every AF_UNIX socket, embryos included (sock_unix.c). */
extern struct unix_sk *unix_all;

/* The AF_UNIX socket that f is, or NULL. */
struct unix_sk *unix_sk_of_file(struct file *f);

/* Free the sockets that only messages in flight keep open, in cycles no
 * descriptor reaches (sock_unix_gc.c). */
void unix_gc(void);

#endif
