/* SPDX-License-Identifier: MIT */
/* libFuzzer: the frames a guest sends on a UDP stream
 * (control/net/udp_frame.c), a stream of them as kilnd's relay reads it:
 * every frame taken must lie inside the input, say no more than UDP
 * allows, and write back to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "net/udp_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1), *back;
	size_t off = 0;

	if (!copy)
		return 0;
	memcpy(copy, data, size); /* exact size: ASan sees any read past it */
	back = malloc(sizeof(struct kiln_net_dgram) + KILN_NET_DGRAM_MAX);
	while (back) {
		struct udp_frame f;
		long k = udp_frame_parse(copy + off, size - off, &f);

		if (k <= 0)
			break;
		if ((size_t)k > size - off || f.len > KILN_NET_DGRAM_MAX || !f.port ||
		    f.payload != copy + off + sizeof(struct kiln_net_dgram))
			abort();
		if (udp_frame_put(back, f.addr, f.family, f.port, 0, f.payload, f.len) !=
		        (size_t)k ||
		    memcmp(back, copy + off, (size_t)k))
			abort();
		off += (size_t)k;
	}
	free(back);
	free(copy);
	return 0;
}
