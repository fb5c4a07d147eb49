/* SPDX-License-Identifier: MIT */
/*
 * Copies the VMM makes for the library OS (KILN_PORT_COPY, kiln/boot.h).
 *
 * On PVM hosts the first touch of a page through the guest's own page
 * tables costs a host shadow fault (~15 us), and the host fills no
 * neighbours for pages of a read-only image: so an image page copied into
 * a fresh page through the direct map costs two, a program's data segment
 * of 318 pages (python3's) 636. The VMM copies from its own mappings
 * without any: one exit (a few to tens of microseconds) per batch.
 *
 * The copies are ordered only against each other's batch: callers add
 * copies that nothing reads before host_copy_end. What the VMM does not do
 * (another VMM, an address it refuses) is copied here.
 */
#include "mm.h"
#include "printk.h"
#include "sv.h"

/* Fewer copies than this are made here: an exit costs more than the
 * faults a few pages save. */
#define BATCH_MIN 8

/* Copies the VMM did, and those of batches it was given that it left to
 * the library OS (kiln.stats=1). */
static uint64_t by_vmm, by_us;

/* Direct-map addresses only: anything else is copied here at once. */
static bool direct(const void *p)
{
#ifdef KILN_HOSTED
	(void)p;
	return true;
#else
	uintptr_t a = (uintptr_t)p;

	return a >= KILN_VA_DIRECT_MAP && a < KILN_VA_MMIO;
#endif
}

void host_copy_begin(struct host_copy *hc)
{
	hc->n = 0;
	hc->page = pmem_alloc(false);
}

static void flush(struct host_copy *hc)
{
	struct kiln_copy_op *ops = phys_to_virt(hc->page);

	if (!hc->n)
		return;
#ifndef KILN_HOSTED /* unit tests: every copy is done below */
	if (hc->n >= BATCH_MIN)
		port_out_regs(KILN_PORT_COPY, hc->page, hc->n);
#endif
	for (unsigned i = 0; i < hc->n; i++) {
		if (ops[i].done) {
			by_vmm++;
			continue;
		}
		memcpy(phys_to_virt(ops[i].dst), phys_to_virt(ops[i].src), ops[i].len);
		by_us += hc->n >= BATCH_MIN;
	}
	hc->n = 0;
}

void host_copy_add(struct host_copy *hc, void *dst, const void *src, size_t len)
{
	struct kiln_copy_op *op;

	uint64_t pa = (uint64_t)(uintptr_t)dst - DIRECT_MAP_BASE;
	bool fresh;

	if (!hc->page || !len || len > PAGE_SIZE || !direct(dst) || !direct(src)) {
		memcpy(dst, src, len);
		return;
	}
	/* Only into memory the guest never touched: a page used before (one
	 * a program run again gets back, as busybox's data segment at every
	 * exec) has its host shadow entry already, its source most likely
	 * too, and copying here costs no fault. */
	fresh = pmem_claim_fresh(pa);
	fresh |= pmem_claim_fresh(pa + len - 1);
	if (!fresh) {
		memcpy(dst, src, len);
		return;
	}
	if (hc->n == KILN_COPY_BATCH_MAX)
		flush(hc);
	op = (struct kiln_copy_op *)phys_to_virt(hc->page) + hc->n++;
	*op = (struct kiln_copy_op){
	    .dst = pa,
	    .src = (uint64_t)(uintptr_t)src - DIRECT_MAP_BASE,
	    .len = (uint32_t)len,
	};
}

void host_copy_end(struct host_copy *hc)
{
	if (!hc->page)
		return;
	flush(hc);
	pmem_free(hc->page);
	hc->page = 0;
}

void host_copy_print_stats(void)
{
	kprintf("kiln: copies of image bytes: %lu by the VMM, %lu by the library OS\n",
	        (unsigned long)by_vmm, (unsigned long)by_us);
}
