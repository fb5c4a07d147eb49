/* SPDX-License-Identifier: MIT */
/* libFuzzer: the kernel's device-tree parser (bootinfo_parse), over trees
 * the VMM did not build: every property is read within the blob's stated
 * size, which here is the input's. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bootinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bootinfo bi;
	const char *err;
	uint8_t *copy;
	uint32_t total;

	if (size < 40 || size > (64u << 10))
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	total = htonl((uint32_t)size); /* fdt header: totalsize at offset 4 */
	memcpy(copy + 4, &total, 4);
	bootinfo_parse(copy, &bi, &err);
	free(copy);
	return 0;
}
