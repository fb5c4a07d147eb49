/* SPDX-License-Identifier: MIT */
/*
 * Inside AF_INET/AF_INET6 over loopback: what sock_inet.c (addresses,
 * ports, connections, data) and sock_inet_ctl.c (options, ioctls) share.
 */
#ifndef KILN_LIBOS_SOCK_INET_H
#define KILN_LIBOS_SOCK_INET_H

#include "sockpair.h"

#define IPPROTO_IP   0
#define IPPROTO_TCP  6
#define IPPROTO_UDP  17
#define IPPROTO_IPV6 41

/* An address as an IPv6 socket sees it: IPv4 ones are ::ffff:a.b.c.d. */
struct inet_addr {
	uint8_t b[16];
};

/* IPPROTO_TCP, IPPROTO_IP and IPPROTO_IPV6 options kept to be read back. */
#define INET_NOPTS 8
struct inet_opt {
	int level, name, val;
};

struct inet_sk {
	struct sp_end e;
	struct socket *sock; /* NULL while an embryo */
	int family;          /* AF_INET or AF_INET6 */
	bool bound;
	bool v6only;       /* IPV6_V6ONLY */
	bool connected;    /* UDP: has a default destination */
	bool connect_told; /* TCP: a non-blocking connect's success was reported */
	struct inet_addr laddr, paddr;
	uint16_t lport, pport; /* host byte order */
	struct inet_sk *bnext; /* in its protocol's table of bound sockets */
	struct inet_opt opts[INET_NOPTS];
	int nopts;
};

/* sock_inet_ctl.c */
int inet_getsockopt(struct socket *s, int level, int name, void *val, int *len);
int inet_setsockopt(struct socket *s, int level, int name, const void *val, int len);
long inet_ioctl(struct socket *s, unsigned int cmd, unsigned long arg);

#endif
