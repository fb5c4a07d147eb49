/* SPDX-License-Identifier: MIT */
/* Frames of a KILN_NET_F_UDP stream: one struct kiln_net_dgram, then the
 * datagram. The header's rules are kiln_net_dgram_len's (include/kiln/net.h),
 * which the guest applies to kilnd's frames too. */
#include <arpa/inet.h>
#include <string.h>

#include "net/udp_frame.h"

long udp_frame_parse(const uint8_t *p, size_t n, struct udp_frame *f)
{
	struct kiln_net_dgram h;
	long len;

	if (n < sizeof(h))
		return 0;
	memcpy(&h, p, sizeof(h));
	len = kiln_net_dgram_len(&h, 0);
	if (len < 0)
		return -1;
	if (n - sizeof(h) < (size_t)len)
		return 0;
	memset(f->addr, 0, sizeof(f->addr));
	if (h.family == KILN_NET_IPV4) {
		f->addr[10] = f->addr[11] = 0xff;
		memcpy(f->addr + 12, h.addr, 4);
	} else {
		memcpy(f->addr, h.addr, 16); /* ::ffff:a.b.c.d is judged as IPv4 */
	}
	f->port = ntohs(h.port);
	f->family = h.family;
	f->payload = p + sizeof(h);
	f->len = (size_t)len;
	return (long)(sizeof(h) + (size_t)len);
}

size_t udp_frame_put(uint8_t *out, const uint8_t addr[16], uint8_t family, uint16_t port,
                     uint8_t status, const void *payload, size_t len)
{
	struct kiln_net_dgram h = {
	    .len = (uint16_t)len, .family = family, .status = status, .port = htons(port)};

	if (family == KILN_NET_IPV4)
		memcpy(h.addr, addr + 12, 4);
	else
		memcpy(h.addr, addr, 16);
	memcpy(out, &h, sizeof(h));
	if (len)
		memcpy(out + sizeof(h), payload, len);
	return sizeof(h) + len;
}
