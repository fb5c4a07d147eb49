/* SPDX-License-Identifier: MIT */
/* libFuzzer: the DNS queries a guest sends kilnd's resolver
 * (control/net/dns_msg.c). Whatever parses must have its question inside
 * the message, and the answers built around it must be as long as they say
 * and, for a datagram, fit what the query allows. */
#include <stdlib.h>
#include <string.h>

#include "net/dns_msg.h"

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t a[2][16] = {
	    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 203, 0, 113, 1},
	    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
	static const uint32_t ttl[2] = {30, 60};
	uint8_t *copy = malloc(size ? size : 1), *m;
	struct dns_query q;
	size_t len;

	if (!copy)
		return 0;
	memcpy(copy, data, size); /* exact size: ASan sees any read past it */
	if (!dns_parse(copy, size, &q)) {
		if (q.question < copy || q.question + q.qlen > copy + size)
			abort();
		for (int dgram = 0; dgram < 2; dgram++) {
			m = dns_answer(&q, dgram, 0, a, ttl, 2, &len);
			if (!m)
				continue;
			if (dns_get16(m) + 2u != len || (dgram && len - 2 > q.udp_max))
				abort();
			for (size_t i = 0; i < len; i++)
				sink += m[i];
			free(m);
		}
	}
	free(copy);
	return 0;
}
