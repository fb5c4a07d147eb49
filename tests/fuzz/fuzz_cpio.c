/* SPDX-License-Identifier: MIT */
/* libFuzzer: the guest's cpio (newc) reader, which unpacks the initramfs
 * and which the VMM runs on the host to index it. Every entry it hands out
 * must lie inside the archive. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpio.h"

/* Reads go here, so that none is optimized away. */
static volatile uint8_t sink;

/* Touch every byte an entry names: ASan sees any that is not the archive's. */
static int check(void *ctx, const struct cpio_entry *e)
{

	cpio_name_ok(e->name, e->namelen);
	for (size_t i = 0; i <= e->namelen; i++)
		sink += (uint8_t)e->name[i];
	for (size_t i = 0; i < e->size; i++)
		sink += ((const uint8_t *)e->data)[i];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy: ASan sees any read past the end. */
	uint8_t *copy = malloc(size ? size : 1);
	const char *err;
	size_t off;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	cpio_parse(copy, size, check, NULL, &err, &off);
	free(copy);
	return 0;
}
