/* SPDX-License-Identifier: MIT */
/* libFuzzer: the split virtqueue against a hostile driver. The input is a
 * queue set-up (size, ring addresses) and the bytes of guest memory below
 * 64 KiB: descriptor tables, rings and chains as the guest wrote them. The
 * device side pops every chain it can, maps it and returns it, as a device
 * would; nothing may read or write outside guest RAM, or loop. */
#include <stdint.h>
#include <string.h>

#include "virtio/virtio.h"
#include "vm.h"

#define MEM_SIZE (2u << 20)
#define IMAGE    (64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct guest_mem mem;
	struct virtq q = {0};
	struct virtq_chain ch;
	uint16_t hdr[4];

	if (!mem.host && mem_init(&mem, MEM_SIZE))
		return 0;
	if (size < sizeof(hdr))
		return 0;
	memcpy(hdr, data, sizeof(hdr));
	data += sizeof(hdr);
	size -= sizeof(hdr);
	memset(mem.host, 0, IMAGE);
	memcpy(mem.host, data, size < IMAGE ? size : IMAGE);
	q.size = (uint16_t)(1u << (hdr[0] % 9)); /* 1 to 256 */
	q.max = 256;
	/* Ring addresses inside the image, or anywhere (also outside RAM). */
	q.desc_gpa = hdr[0] & 0x8000 ? (uint64_t)hdr[1] << 20 : hdr[1] % IMAGE;
	q.avail_gpa = hdr[2] % IMAGE;
	q.used_gpa = hdr[3] % IMAGE;
	q.ready = true;
	q.event_idx = hdr[3] & 1;
	if (virtq_check_layout(&mem, &q))
		return 0;
	for (int i = 0; i < 512; i++) {
		int r = virtq_pop(&mem, &q, &ch);
		uint32_t len = 0;

		if (r <= 0)
			break;
		for (unsigned k = ch.n_out; k < ch.n_out + ch.n_in; k++) {
			memset(ch.iov[k].iov_base, 0xa5, ch.iov[k].iov_len);
			len += (uint32_t)ch.iov[k].iov_len;
		}
		for (unsigned k = 0; k < ch.n_out; k++)
			(void)*(volatile uint8_t *)ch.iov[k].iov_base;
		virtq_push(&mem, &q, ch.head, len);
		virtq_want_kicks(&mem, &q, i & 1);
		virtq_need_irq(&mem, &q);
	}
	return 0;
}
