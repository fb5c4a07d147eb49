/* SPDX-License-Identifier: MIT */
/*
 * The initramfs index (kiln,initrd-index-* in include/kiln/boot.h): the
 * archive's members without their data, in guest RAM after the device tree.
 * Walking the archive itself, the guest touches every page that holds a
 * header, and each first touch of a page costs it 15-25 us under shadow
 * paging (test.cpio: 53 pages, ~1 ms); the index is a few pages. It is
 * built with the guest's own parser (guest-kernel/libos/fs/cpio.c), so an
 * archive gets one only if the guest would accept it, names included: the
 * guest then skips its own pass over the names.
 */
#include <string.h>
#include <sys/stat.h>

#include "cpio.h"
#include "vm.h"

/* Guest RAM an index may take (it stays reserved): about 1700 members. */
#define INDEX_MAX (256 << 10)

struct builder {
	const uint8_t *archive;
	uint8_t *out;
	size_t len, cap;
};

static int add_member(void *ctx, const struct cpio_entry *e)
{
	struct builder *b = ctx;
	const uint8_t *hdr = b->archive + e->hdr_off;
	/* The header and the name up to its NUL, as they are in the archive,
	 * and a link's target (read when the link is made). */
	size_t n = (size_t)((const uint8_t *)e->name + e->namelen + 1 - hdr);
	size_t target = S_ISLNK(e->mode) ? e->size : 0;
	size_t used = CPIO_INDEX_OFF_LEN + n + target;
	size_t rec = (used + CPIO_INDEX_ALIGN - 1) & ~(size_t)(CPIO_INDEX_ALIGN - 1);
	uint64_t off = e->hdr_off;
	uint8_t *p = b->out + b->len;

	if (!cpio_name_ok(e->name, e->namelen) || target > b->cap || rec > b->cap - b->len)
		return 1;
	memcpy(p, &off, sizeof(off));
	memcpy(p + CPIO_INDEX_OFF_LEN, hdr, n);
	memcpy(p + CPIO_INDEX_OFF_LEN + n, e->data, target);
	memset(p + used, 0, rec - used);
	b->len += rec;
	return 0;
}

void initrd_index_build(struct vm *vm, uint64_t pa, uint64_t room)
{
	struct builder b = {.archive = vm->mem.initrd, .cap = room < INDEX_MAX ? room : INDEX_MAX};

	vm->initrd_index_size = 0;
	/* 070702 archives: checking their checksums here would read all of
	 * the archive's data; the guest does it as it unpacks. */
	if (!vm->initrd_size || !memcmp(vm->mem.initrd, "070702", 6))
		return;
	b.out = gpa_ptr(&vm->mem, pa, b.cap);
	if (!b.out || cpio_parse(b.archive, vm->initrd_size, add_member, &b, NULL, NULL) || !b.len)
		return;
	vm->initrd_index_pa = pa;
	vm->initrd_index_size = b.len;
}
