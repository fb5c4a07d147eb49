/* SPDX-License-Identifier: MIT */
/*
 * kiln guest networking, version 1: the guest's library OS <-> kilnd.
 *
 * The guest has no network interface but loopback. A TCP connect() of an
 * AF_INET/AF_INET6 socket to an address outside 127.0.0.0/8 and ::1
 * becomes a virtio-vsock stream from the guest to the host (CID 2) port
 * KILN_NET_PORT. Under Firecracker's hybrid vsock the VMM turns it into a
 * unix-socket connection to "<vsock uds path>_1025", where kilnd listens
 * for that sandbox, checks the sandbox's egress policy, makes the real
 * connection from the host and then carries bytes both ways. The policy
 * check is kilnd's (not the VMM's): kilnd holds the policy, the sandbox's
 * DNS answers that domain rules are pinned to, its log and its counters,
 * and the VMM stays a small jailed process that opens no host sockets.
 *
 * One stream is one connection:
 *
 *   guest -> host  struct kiln_net_hello (exactly, then payload bytes)
 *   host -> guest  struct kiln_net_reply (exactly); then, if status is 0,
 *                  the destination's bytes, else the host closes
 *
 * The guest may send payload right behind the hello, before the reply
 * (kilnd holds it until the destination is connected); a guest socket
 * normally does not, as connect() returns only once the reply is in.
 *
 * DNS: the guest's /etc/resolv.conf names KILN_NET_RESOLVER4. The library
 * OS sends a UDP datagram to it (port 53) over a stream of its own, with a
 * hello whose destination is the resolver and KILN_NET_F_DATAGRAM set; a
 * TCP connect() to resolver:53 is an ordinary stream to the resolver.
 * Either way kilnd answers the stream as a DNS-over-TCP server (RFC 1035
 * 4.2.2: every message behind a 2-byte big-endian length), resolving
 * through the host's resolver, and records the answers: a domain rule of
 * the policy admits the addresses that the sandbox's own lookups of that
 * domain returned, nothing else. With KILN_NET_F_DATAGRAM an answer that
 * does not fit 512 bytes (or the query's EDNS size) comes back truncated
 * (TC), as a UDP server's does, and the guest delivers every message to
 * the socket as one datagram from resolver:53.
 *
 * UDP elsewhere (KILN_NET_F_UDP): a UDP socket's first datagram to an
 * address off the guest (not the resolver's port 53) opens one stream for
 * that socket. Its hello names that first destination (checked for form
 * only); kilnd replies as to any hello, then both ways carry frames, each
 * a struct kiln_net_dgram and its len bytes of payload:
 *
 *   guest -> host  destination family/addr/port, status 0, the datagram
 *   host -> guest  the source it came from (an address the socket sent
 *                  to, as the guest wrote it), status 0, the datagram;
 *                  or status KILN_NET_EACCES, len 0: a datagram to
 *                  addr:port was refused by the policy (nothing was sent)
 *
 * kilnd judges every datagram by the sandbox's policy, sends it from one
 * unconnected host UDP socket per family and stream, and passes back only
 * datagrams from the destinations the stream sent to (as a NAT would).
 * Datagrams may be dropped anywhere (a full buffer, the sandbox's rate),
 * as UDP's are. A stream idle for a while is closed by kilnd; the guest
 * opens another with its next datagram. (KILN_NET_F_UDP came within
 * version 1: a kilnd without it answers such a hello KILN_NET_EPROTO, and
 * the guest's datagrams are lost, as before it.)
 *
 * Listeners (KILN_NET_F_LISTEN): a TCP socket of the guest that listens
 * on the wildcard address opens a stream whose hello names the family
 * (KILN_NET_IPV6: ::, which takes IPv4 too unless IPV6_V6ONLY), addr all
 * zero, and the listening port. The host replies as to any hello; with
 * status 0 the stream then carries nothing and stays open for as long as
 * the socket listens: its end (the guest closed the socket, or the VM is
 * gone) is the end of the listener. A host that serves inbound ports (the
 * containerd shim: the pod's IP, as runc's container has it) listens on
 * that port and carries each connection to the guest's loopback as an
 * agent port stream (include/kiln/agent.h). kilnd has no use for it and
 * replies KILN_NET_EPROTO (its ports are reached by name, control/net/
 * ports.h). Loopback listeners are never announced. (KILN_NET_F_LISTEN
 * came within version 1, as KILN_NET_F_UDP did.)
 *
 * host.kiln.internal resolves (only when a rule names it) to
 * KILN_NET_HOST4 and KILN_NET_HOST6, which kilnd maps to the host's own
 * 127.0.0.1 and ::1. These stand-in addresses and the guest's own address
 * are QEMU user networking's (10.0.2.0/24) and are never forwarded as
 * themselves.
 *
 * Integers are little-endian except ports, which are in network byte order
 * as in a sockaddr. Any change of layout or meaning bumps KILN_NET_VERSION;
 * kilnd answers a hello of another version with KILN_NET_EPROTO.
 */
#ifndef KILN_NET_H
#define KILN_NET_H

#include <stdint.h>

#define KILN_NET_VERSION 1
#define KILN_NET_PORT    1025   /* host vsock port of egress and DNS */
#define KILN_NET_MAGIC   0x6e6b /* "kn" */

/* Addresses the guest sees (network byte order, as in_addr/in6_addr). */
#define KILN_NET_GUEST4      \
	{                    \
		10, 0, 2, 15 \
	} /* the guest's own, getsockname */
#define KILN_NET_HOST4      \
	{                   \
		10, 0, 2, 2 \
	} /* host.kiln.internal */
#define KILN_NET_RESOLVER4  \
	{                   \
		10, 0, 2, 3 \
	} /* nameserver in /etc/resolv.conf */
/* fec0::/10 (deprecated site-local, never routed) as QEMU's IPv6 does. */
#define KILN_NET_GUEST6                                                 \
	{                                                               \
		0xfe, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x15 \
	}
#define KILN_NET_HOST6                                               \
	{                                                            \
		0xfe, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 \
	}
#define KILN_NET_RESOLVER6                                           \
	{                                                            \
		0xfe, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3 \
	}
#define KILN_NET_DNS_PORT  53
#define KILN_NET_HOST_NAME "host.kiln.internal"

enum kiln_net_family {
	KILN_NET_INET = 0, /* reserved: never valid */
	KILN_NET_IPV4 = 4, /* addr[0..3] is the address, addr[4..15] zero */
	KILN_NET_IPV6 = 6, /* addr is the address (IPv4-mapped forms allowed: */
	                   /* kilnd treats ::ffff:a.b.c.d as a.b.c.d) */
};

/* Hello flags. */
#define KILN_NET_F_DATAGRAM 1u /* DNS over UDP, framed (see above) */
#define KILN_NET_F_UDP      2u /* UDP datagrams, struct kiln_net_dgram frames */
#define KILN_NET_F_LISTEN   4u /* a wildcard TCP listener of the guest (above) */

/* IN (guest -> host): the first bytes of a stream. */
struct kiln_net_hello {
	uint16_t magic;    /* KILN_NET_MAGIC */
	uint8_t version;   /* KILN_NET_VERSION */
	uint8_t family;    /* enum kiln_net_family */
	uint16_t port;     /* destination port, network byte order; not 0 */
	uint16_t flags;    /* KILN_NET_F_*; others must be 0 */
	uint8_t addr[16];  /* destination address */
	uint32_t reserved; /* 0 */
};
_Static_assert(sizeof(struct kiln_net_hello) == 28, "kiln_net_hello is 28 bytes");

/*
 * OUT (host -> guest): how the connection went. status is 0 or one of these
 * (Linux's errno values, which the guest's connect() returns):
 */
#define KILN_NET_OK           0
#define KILN_NET_EACCES       13  /* the sandbox's policy forbids the destination */
#define KILN_NET_EPROTO       71  /* a hello kilnd cannot read */
#define KILN_NET_ENETUNREACH  101 /* no route from the host */
#define KILN_NET_ETIMEDOUT    110 /* no answer within kilnd's connect timeout */
#define KILN_NET_ECONNREFUSED 111 /* the destination refused (RST) */
#define KILN_NET_EHOSTUNREACH 113
#define KILN_NET_EAGAIN       11 /* the sandbox has too many connections open */

struct kiln_net_reply {
	uint16_t magic;   /* KILN_NET_MAGIC */
	uint8_t version;  /* KILN_NET_VERSION */
	uint8_t reserved; /* 0 */
	uint32_t status;  /* KILN_NET_OK or an errno above */
};
_Static_assert(sizeof(struct kiln_net_reply) == 8, "kiln_net_reply is 8 bytes");

/*
 * BOTH WAYS on a KILN_NET_F_UDP stream: one datagram. A frame that breaks
 * these rules ends the stream (kiln_net_dgram_len says so).
 */
#define KILN_NET_DGRAM_MAX 65507 /* payload bytes: UDP's largest over IPv4 */

struct kiln_net_dgram {
	uint16_t len;      /* payload bytes behind this header, <= KILN_NET_DGRAM_MAX */
	uint8_t family;    /* enum kiln_net_family: IPV4 or IPV6 */
	uint8_t status;    /* guest -> host: 0; host -> guest: 0 or KILN_NET_EACCES */
	uint16_t port;     /* network byte order; not 0 */
	uint16_t reserved; /* 0 */
	uint8_t addr[16];  /* IPV4: addr[0..3], the rest zero */
};
_Static_assert(sizeof(struct kiln_net_dgram) == 24, "kiln_net_dgram is 24 bytes");

/* The payload length a well-formed header announces, or -1. from_host:
 * the header came from kilnd (status may be KILN_NET_EACCES, then len 0). */
static inline long kiln_net_dgram_len(const struct kiln_net_dgram *h, int from_host)
{
	if (h->family != KILN_NET_IPV4 && h->family != KILN_NET_IPV6)
		return -1;
	if (h->reserved || !h->port || h->len > KILN_NET_DGRAM_MAX)
		return -1;
	if (h->status && !(from_host && h->status == KILN_NET_EACCES && !h->len))
		return -1;
	if (h->family == KILN_NET_IPV4)
		for (int i = 4; i < 16; i++)
			if (h->addr[i])
				return -1;
	return h->len;
}

#endif
