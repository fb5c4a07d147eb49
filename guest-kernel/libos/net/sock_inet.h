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
struct vsock_sk;

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
	struct egress *eg;         /* TCP: a connection to elsewhere (sock_inet_egress.c) */
	struct vsock_sk *announce; /* TCP: a wildcard listener told to the host */
	/* TCP: the peer its loopback connection shows the listener
	 * (KILN_SO_PEER, include/kiln/sockpeer.h) */
	bool as_peer;
	struct inet_addr as_addr;
	uint16_t as_port;
	/* UDP off the guest (sock_inet_udp.c): to the resolver, elsewhere */
	struct udp_relay *dns, *udp;
};

/* sock_inet.c: addresses, for the files below. */
bool inet_is_v4(const struct inet_addr *a);
/* A struct sockaddr_in or sockaddr_in6 (either family) into a and port;
 * -EINVAL if it is neither or too short. */
int inet_addr_in_any(const void *addr, int len, struct inet_addr *a, uint16_t *port);
/* The guest's own address (KILN_NET_GUEST4/6) in d's family. */
struct inet_addr inet_guest_addr(const struct inet_addr *d);
/* An address as a socket of this family reports it; returns the length. */
int inet_addr_out(int family, const struct inet_addr *a, uint16_t port, void *out);

/* sock_inet_egress.c: a TCP connection to an address off the guest, a
 * vsock stream to kilnd (include/kiln/net.h). Start sends the hello and
 * returns at once (0 or -errno); connect reports as connect() does
 * (nonblock: -EINPROGRESS, -EALREADY; 0 once, then -EISCONN; the failure's
 * errno once, after which the socket may connect again). The rest are the
 * socket's calls once it has an egress. */
int egress_start(struct inet_sk *is, const struct inet_addr *d, uint16_t port);
int egress_connect(struct socket *s, struct inet_sk *is, bool nonblock);
bool egress_connected(struct inet_sk *is);
long egress_send(struct socket *s, struct inet_sk *is, struct sock_iter *it, int flags);
long egress_recv(struct socket *s, struct inet_sk *is, struct sock_iter *it, int flags);
int egress_shutdown(struct inet_sk *is, int how);
unsigned int egress_poll(struct inet_sk *is);
void egress_poll_wait(struct inet_sk *is, struct poll_table *pt);
int egress_inq(struct inet_sk *is);
/* Catch up with the stream (the pending SO_ERROR lands in is->e.err). */
void egress_update(struct inet_sk *is);
void egress_release(struct inet_sk *is);

/* sock_inet_listen.c: tell the host of a listener (any: it is bound to the
 * wildcard address; else nothing is done), and that it is gone. */
void listen_announce(struct inet_sk *is, bool any);
void listen_release(struct inet_sk *is);

/* sock_inet_udp.c: UDP to addresses off the guest, carried to kilnd (to
 * the resolver address, KILN_NET_RESOLVER4/6 port 53, kilnd's own DNS);
 * answers come back as datagrams from where they came. */
bool inet_is_resolver(const struct inet_addr *a);
long udp_relay_send(struct socket *s, struct inet_sk *is, struct sock_iter *it,
                    const struct inet_addr *to, uint16_t port);
void udp_relay_release(struct inet_sk *is);

/* sock_inet_ctl.c */
int inet_getsockopt(struct socket *s, int level, int name, void *val, int *len);
int inet_setsockopt(struct socket *s, int level, int name, const void *val, int len);
long inet_ioctl(struct socket *s, unsigned int cmd, unsigned long arg);

#endif
