/* SPDX-License-Identifier: MIT */
/*
 * Code pages with their syscall sites rewritten, shared by every process.
 *
 * The first run of each `syscall` site costs a reflection to LSTAR (22 us
 * on the Intel PVM host of shared/probes/RESULTS.md, a few on an AMD one)
 * before vm_patch_syscall rewrites it into a call.
 * Code an image holds is mapped in place (borrowed) and used to be patched
 * in a private copy per address space, so every exec of busybox paid for
 * each of its sites again. Instead, a borrowed page gets one patched copy
 * for the whole guest: processes that map the image page with execute
 * permission later get the copy, and a site one process rewrites is
 * rewritten for all of them. The copy is itself borrowed (PTE_BORROWED:
 * read-only, never freed, copied on a write), which is sound because an
 * image page never changes and a rewritten site does what it did.
 *
 * A site in a copy was rewritten by us where the copy reads `ff d0` and
 * the image page `0f 05`: that answers vm_is_patched without a record per
 * site. Copies live as long as the guest, up to COPIES_MAX of them.
 */
#include "vm_pt.h"

#define COPIES_MAX 1024
#define SLOTS      (2 * COPIES_MAX) /* open addressing, at most half full */

struct text_copy {
	uint64_t src, copy; /* physical addresses of the image page and its copy */
};

static struct text_copy *copies;
static unsigned nr_copies;
/* Indexes + 1 into copies, hashed by src and by copy (0: empty slot). */
static uint16_t *by_src, *by_copy;

static unsigned slot_of(uint64_t pa)
{
	return (unsigned)((pa >> PAGE_SHIFT) * 0x9e3779b97f4a7c15ULL >> 40) & (SLOTS - 1);
}

static struct text_copy *find(const uint16_t *index, uint64_t pa, bool by_source)
{
	if (!index)
		return NULL;
	for (unsigned i = slot_of(pa);; i = (i + 1) & (SLOTS - 1)) {
		struct text_copy *c;

		if (!index[i])
			return NULL;
		c = &copies[index[i] - 1];
		if ((by_source ? c->src : c->copy) == pa)
			return c;
	}
}

static void insert(uint16_t *index, uint64_t pa, unsigned n)
{
	unsigned i = slot_of(pa);

	while (index[i])
		i = (i + 1) & (SLOTS - 1);
	index[i] = (uint16_t)n;
}

uint64_t vm_text_page(uint64_t pa)
{
	struct text_copy *c = find(by_src, pa, true);

	return c ? c->copy : pa;
}

bool text_is_copy(uint64_t pa)
{
	return find(by_copy, ALIGN_DOWN(pa, PAGE_SIZE), false) != NULL;
}

/* The shared copy of image page src, made now if there is none; 0 when
 * there is no room for one. */
static uint64_t copy_of(uint64_t src)
{
	struct text_copy *c = find(by_src, src, true);
	uint64_t pa;

	if (c)
		return c->copy;
	if (!copies) {
		copies = kzalloc(COPIES_MAX * sizeof(*copies));
		by_src = kzalloc(SLOTS * sizeof(*by_src));
		by_copy = kzalloc(SLOTS * sizeof(*by_copy));
		if (!copies || !by_src || !by_copy) {
			kfree(copies);
			kfree(by_src);
			kfree(by_copy);
			copies = NULL;
			by_src = by_copy = NULL;
			return 0;
		}
	}
	if (nr_copies == COPIES_MAX || !(pa = pmem_alloc_user(false)))
		return 0;
	memcpy(phys_to_virt(pa), phys_to_virt(src), PAGE_SIZE);
	copies[nr_copies++] = (struct text_copy){src, pa};
	insert(by_src, src, nr_copies);
	insert(by_copy, pa, nr_copies);
	return pa;
}

int text_patch(struct aspace *as, uint64_t *pte, uint64_t site)
{
	unsigned off = site & (PAGE_SIZE - 1);
	uint64_t pa = *pte & PTE_ADDR;
	uint8_t *b;

	if (off == PAGE_SIZE - 1) /* the site straddles two pages */
		return -EINVAL;
	if (!text_is_copy(pa)) {
		pa = copy_of(pa);
		if (!pa)
			return -ENOMEM;
		/* No TLB flush: until the old translation goes (with a shadow
		 * MMU, maybe not before the next address-space switch) the
		 * site runs from the image page, unpatched but correct, each
		 * run through the first-run path, which flushes when it finds
		 * the site rewritten (vm_patch_syscall). A flush now would cost
		 * a supervisor call and the refill (~45 us on the AMD PVM host,
		 * more than the rest of the first run), and most sites do not
		 * run again before the next switch. Both pages are read-only
		 * borrowed ones, alike but for rewritten sites. */
		*pte = pa | (*pte & ~PTE_ADDR);
	}
	b = (uint8_t *)phys_to_virt(pa) + off;
	/* Second byte first, as vm_patch_syscall does. */
	b[1] = 0xd0;
	b[0] = 0xff;
	return 0;
}

bool text_site_patched(uint64_t pa)
{
	unsigned off = pa & (PAGE_SIZE - 1);
	struct text_copy *c = find(by_copy, ALIGN_DOWN(pa, PAGE_SIZE), false);
	const uint8_t *now, *was;

	if (!c || off == PAGE_SIZE - 1)
		return false;
	now = (const uint8_t *)phys_to_virt(c->copy) + off;
	was = (const uint8_t *)phys_to_virt(c->src) + off;
	return now[0] == 0xff && now[1] == 0xd0 && was[0] == 0x0f && was[1] == 0x05;
}
