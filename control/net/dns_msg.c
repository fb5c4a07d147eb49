/* SPDX-License-Identifier: MIT */
/* DNS messages: parsing a query's question, building an answer. */
#include <arpa/nameser.h>
#include <stdlib.h>
#include <string.h>

#include "net/dns_msg.h"

uint16_t dns_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* The message's question and EDNS size; -1 if it is no query we answer
 * at all (then it is dropped, as a server drops garbage). */
int dns_parse(const uint8_t *m, size_t n, struct dns_query *q)
{
	char text[NET_NAME_MAX + 2];
	size_t off = DNS_HDR, tl = 0;
	bool printable = true;

	memset(q, 0, sizeof(*q));
	if (n < DNS_HDR)
		return -1;
	q->id = dns_get16(m);
	q->flags = dns_get16(m + 2);
	if ((q->flags & 0x8000) || dns_get16(m + 4) != 1 || dns_get16(m + 6) || dns_get16(m + 8) ||
	    dns_get16(m + 10) > 1)
		return -1; /* an answer, or not one question */
	while (off < n && m[off]) {
		size_t l = m[off];

		if (l > 63 || off + 1 + l >= n || tl + l + 1 > NET_NAME_MAX + 1)
			return -1; /* a compression pointer or too long */
		for (size_t i = 0; i < l; i++) {
			uint8_t c = m[off + 1 + i];

			printable = printable && c != '.' && c > 0x20 && c < 0x7f;
			text[tl++] = (char)c;
		}
		text[tl++] = '.';
		off += 1 + l;
	}
	if (off + 5 > n)
		return -1;
	off++;
	q->qtype = dns_get16(m + off);
	if (dns_get16(m + off + 2) != 1 /* IN */)
		return -1;
	off += 4;
	q->question = m + DNS_HDR;
	q->qlen = off - DNS_HDR;
	q->udp_max = DNS_UDP_MIN;
	if (dns_get16(m + 10)) { /* EDNS's OPT record: root name, type 41 */
		if (off + 11 > n || m[off] || dns_get16(m + off + 1) != T_OPT_EDNS)
			return -1;
		q->edns = true;
		q->udp_max =
		    dns_get16(m + off + 3) > DNS_UDP_MIN ? dns_get16(m + off + 3) : DNS_UDP_MIN;
		if (q->udp_max > 1232)
			q->udp_max = 1232; /* DNS flag day 2020's size */
	}
	/* A label with a dot or a NUL in it is not a host name we could match. */
	q->name_ok = printable && tl && net_name_norm(text, tl, q->name);
	if (!tl)
		return -1; /* the root */
	return 0;
}

/* The answer: rcode, and n addresses of the query's type. */
uint8_t *dns_answer(const struct dns_query *q, bool datagram, int rcode, const uint8_t (*a)[16],
                    const uint32_t *ttl, size_t n, size_t *framelen)
{
	size_t alen = q->qtype == ns_t_a ? 4 : 16, max = datagram ? q->udp_max : 65535, len;
	uint8_t *m = malloc(2 + DNS_HDR + q->qlen + n * (12 + 16) + 11), *p;
	bool tc = false;

	if (!m)
		return NULL;
	if (DNS_HDR + q->qlen + n * (12 + alen) + (q->edns ? 11 : 0) > max) {
		n = 0; /* as UDP: truncated, the guest asks again over TCP */
		tc = true;
	}
	p = m + 2;
	put16(p, q->id);
	/* QR, opcode 0, TC, RD as asked, RA, rcode */
	put16(p + 2, (uint16_t)(0x8000 | (tc ? 0x0200 : 0) | (q->flags & 0x0100) | 0x0080 | rcode));
	put16(p + 4, 1);
	put16(p + 6, (uint16_t)n);
	put16(p + 8, 0);
	put16(p + 10, q->edns ? 1 : 0);
	memcpy(p + DNS_HDR, q->question, q->qlen);
	p += DNS_HDR + q->qlen;
	for (size_t i = 0; i < n; i++) {
		put16(p, 0xc000 | DNS_HDR); /* the question's name */
		put16(p + 2, q->qtype);
		put16(p + 4, 1);
		put32(p + 6, ttl[i]);
		put16(p + 10, (uint16_t)alen);
		memcpy(p + 12, alen == 4 ? a[i] + 12 : a[i], alen);
		p += 12 + alen;
	}
	if (q->edns) {
		memset(p, 0, 11);
		put16(p + 1, T_OPT_EDNS);
		put16(p + 3, 1232);
		p += 11;
	}
	len = (size_t)(p - m) - 2;
	put16(m, (uint16_t)len);
	*framelen = len + 2;
	return m;
}
