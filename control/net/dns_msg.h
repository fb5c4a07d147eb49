/* SPDX-License-Identifier: MIT */
/* DNS messages (RFC 1035) as kilnd's resolver reads and writes them: the
 * one question of a query, and answers built from scratch around it. Pure
 * functions (fuzzed: tests/fuzz/fuzz_dns_msg.c). */
#ifndef KILND_NET_DNS_MSG_H
#define KILND_NET_DNS_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/policy.h"

#define DNS_HDR     12
#define DNS_MSG_MAX 4096 /* a query longer than this is no query */
#define DNS_UDP_MIN 512
#define T_OPT_EDNS  41

struct dns_query {
	uint16_t id, flags, qtype;
	const uint8_t *question; /* name, type, class: copied into the answer */
	size_t qlen;
	bool edns;
	size_t udp_max;              /* what a datagram answer may take (512, or EDNS's) */
	char name[NET_NAME_MAX + 1]; /* normalized (net_name_norm) ... */
	bool name_ok;                /* ... if the name is a host name at all */
};

uint16_t dns_get16(const uint8_t *p);
/* The message's question and EDNS size into q (q->question points into
 * m); -1 if it is no query to answer at all (dropped, as a server drops
 * garbage). */
int dns_parse(const uint8_t *m, size_t n, struct dns_query *q);
/* The answer to q: rcode and n addresses of q's type (16 bytes each, IPv4
 * as ::ffff:a.b.c.d), behind its 2-byte length; a datagram one that does
 * not fit q->udp_max is truncated (TC, no answers). malloc'd, NULL when
 * out of memory; *framelen its bytes. */
uint8_t *dns_answer(const struct dns_query *q, bool datagram, int rcode, const uint8_t (*a)[16],
                    const uint32_t *ttl, size_t n, size_t *framelen);

#endif
