/* SPDX-License-Identifier: MIT */
/* libFuzzer: the library OS's ELF parser (execve of programs from images and
 * the initramfs). What it accepts must hold what the loader relies on:
 * segments inside the file, ascending and disjoint, the entry in an
 * executable one, PT_INTERP inside the buffer and NUL-terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf.h"

static void check(const struct elf_info *e, size_t len, const uint8_t *buf)
{
	bool entry_ok = false;

	if (e->nseg > ELF_MAX_SEGMENTS)
		abort();
	for (unsigned i = 0; i < e->nseg; i++) {
		const struct elf_segment *s = &e->seg[i];

		if (s->filesz > s->memsz || s->offset > len || s->filesz > len - s->offset)
			abort();
		if (i && s->vaddr < e->seg[i - 1].vaddr + e->seg[i - 1].memsz)
			abort();
		if ((s->prot & ELF_PROT_EXEC) && e->entry >= s->vaddr &&
		    e->entry - s->vaddr < s->memsz)
			entry_ok = true;
	}
	if (!entry_ok)
		abort();
	if (e->interp &&
	    (e->interp < (const char *)buf ||
	     e->interp + e->interp_len >= (const char *)buf + len || e->interp[e->interp_len]))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	struct elf_info info;
	const char *err;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (elf_parse(copy, size, &info, &err) == 0)
		check(&info, size, copy);
	/* The header-only form, on the first page, against a larger file. */
	if (elf_parse_headers(copy, size < 4096 ? size : 4096, (uint64_t)size, &info, &err) == 0 &&
	    info.nseg > ELF_MAX_SEGMENTS)
		abort();
	free(copy);
	return 0;
}
