/* SPDX-License-Identifier: MIT */
/* The frames of a KILN_NET_F_UDP stream (include/kiln/net.h) as kilnd
 * reads and writes them. Pure functions over bytes a hostile guest sent:
 * unit tested (tests/unit/test_udp_frame.c) and fuzzed
 * (tests/fuzz/fuzz_udp_frame.c). */
#ifndef KILND_NET_UDP_FRAME_H
#define KILND_NET_UDP_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <kiln/net.h>

struct udp_frame {
	uint8_t addr[16]; /* IPv4 as ::ffff:a.b.c.d */
	uint16_t port;    /* host byte order */
	uint8_t family;   /* KILN_NET_IPV4 or KILN_NET_IPV6, as the guest wrote it */
	const uint8_t *payload;
	size_t len;
};

/* The frame at the front of p (n bytes), from the guest: its size
 * (header and payload), 0 if it is not all there yet, or -1 if the
 * stream is no good (a bad family, length, port or reserved field). */
long udp_frame_parse(const uint8_t *p, size_t n, struct udp_frame *f);

/* Write a frame to out (sizeof(struct kiln_net_dgram) + len bytes): a
 * datagram from addr:port (family: the form the guest wrote it in), or a
 * refusal (status KILN_NET_EACCES, len 0). Returns the size written. */
size_t udp_frame_put(uint8_t *out, const uint8_t addr[16], uint8_t family, uint16_t port,
                     uint8_t status, const void *payload, size_t len);

#endif
