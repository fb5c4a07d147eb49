/* SPDX-License-Identifier: MIT */
/*
 * The zpoline (see README, "How the guest kernel works"): the sled at
 * virtual address 0 that a rewritten `syscall` (`call *%rax`) slides down
 * into the library OS, and the rewriting of syscall sites, with the record
 * each address space keeps of the sites it patched in private copies.
 * Sites in code shared from the image are rewritten once for everyone
 * (text_patch, vm_text.c).
 */
#include "printk.h"
#include "vm_pt.h"

/* The zpoline sled: any offset below KILN_SLED_END decodes as padding that
 * ends exactly at KILN_SLED_END, where a jmp rel32 whose displacement bytes
 * are themselves nops (see KILN_VA_ZPOLINE_ENTRY) enters the library OS.
 * Long no-op instructions (0x66 prefixes + 0x90) keep the slide short:
 * about 35 instructions instead of 512. */
void vm_build_sled(uint8_t *p)
{
	const unsigned blk = 15;
	unsigned i = 0, first = KILN_SLED_END % blk;

	for (; i + 1 < first; i++)
		p[i] = 0x66;
	if (first)
		p[i++] = 0x90;
	for (; i < KILN_SLED_END; i++)
		p[i] = ((i - first) % blk == blk - 1) ? 0x90 : 0x66;
	p[i++] = 0xe9;
	p[i++] = 0x90;
	p[i++] = 0x90;
	p[i++] = 0x90;
	p[i++] = 0x90;
	for (; i < PAGE_SIZE; i++)
		p[i] = 0xf4; /* hlt: #GP at CPL3, reported as -ENOSYS */
}

static size_t slot_of(uint64_t site, size_t cap)
{
	return (size_t)((site * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
}

/* In as's own record (sites patched in private copies)? */
static bool patched_here(const struct aspace *as, uint64_t site)
{
	if (!as->patched_cap)
		return false;
	for (size_t i = slot_of(site, as->patched_cap);; i = (i + 1) & (as->patched_cap - 1)) {
		if (as->patched[i] == site)
			return true;
		if (!as->patched[i])
			return false;
	}
}

bool vm_is_patched(struct aspace *as, uint64_t site)
{
	uint64_t pa;

	if (patched_here(as, site))
		return true;
	pa = vm_translate(as, site);
	return pa != ~0ULL && text_site_patched(pa);
}

static void set_insert(uint64_t *set, size_t cap, uint64_t site)
{
	size_t i = slot_of(site, cap);

	while (set[i] && set[i] != site)
		i = (i + 1) & (cap - 1);
	set[i] = site;
}

int vm_remember_patch(struct aspace *as, uint64_t site)
{
	if (patched_here(as, site))
		return 0;
	if ((as->patched_n + 1) * 2 > as->patched_cap) {
		size_t cap = as->patched_cap ? as->patched_cap * 2 : 64;
		uint64_t *set = kzalloc(cap * sizeof(*set));
		if (!set)
			return -ENOMEM;
		for (size_t i = 0; i < as->patched_cap; i++)
			if (as->patched[i])
				set_insert(set, cap, as->patched[i]);
		kfree(as->patched);
		as->patched = set;
		as->patched_cap = cap;
	}
	set_insert(as->patched, as->patched_cap, site);
	as->patched_n++;
	return 0;
}

/* Drop the translations of the two bytes of a syscall site. */
static void flush_site(struct aspace *as, uint64_t site)
{
	pt_flush_page(as, site);
	if ((site + 1) / PAGE_SIZE != site / PAGE_SIZE)
		pt_flush_page(as, site + 1);
}

int vm_patch_syscall(struct aspace *as, uint64_t site)
{
	uint64_t p0 = vm_translate(as, site), p1 = vm_translate(as, site + 1);
	bool flush = false;
	uint8_t *b0, *b1;

	if (p0 == ~0ULL || p1 == ~0ULL)
		return -EFAULT;
	b0 = phys_to_virt(p0);
	b1 = phys_to_virt(p1);
	if (*b0 == 0xff && *b1 == 0xd0) {
		/* Rewritten already, yet `syscall` ran here: from a stale
		 * translation to the page before text_patch made the copy. */
		flush_site(as, site);
		return 0;
	}
	if (*b0 != 0x0f || *b1 != 0x05)
		return -EINVAL;
	if (vm_is_borrowed(as, site) && vm_is_borrowed(as, site + 1)) {
		uint64_t size, *pte = pt_leaf(as, site, &size);

		/* Code mapped from the image: rewrite it for everyone. */
		if (!text_patch(as, pte, site))
			return 0;
	}
	if (vm_is_borrowed(as, site) || vm_is_borrowed(as, site + 1)) {
		/* Code mapped from the image: patch a private copy, and flush
		 * the TLB at once (unlike text_patch: the copy may be writable,
		 * and a write through the stale read-only entry would fault
		 * where vm_fault sees nothing to do). */
		p0 = vm_own_page(as, site);
		p1 = vm_own_page(as, site + 1);
		if (p0 == ~0ULL || p1 == ~0ULL)
			return -ENOMEM;
		b0 = phys_to_virt(p0);
		b1 = phys_to_virt(p1);
		flush = true;
	}
	/* Without a record of the site a later bad syscall number there would
	 * look like a wild call: leave such a site unpatched (it still works,
	 * through the slow path). */
	if (vm_remember_patch(as, site))
		return -ENOMEM;
	/* Second byte first: a racing thread sees 0f d0 (invalid) only if it
	 * is mid-decode, which the single-vCPU kernel never allows. */
	*b1 = 0xd0;
	*b0 = 0xff;
	if (flush)
		flush_site(as, site);
	return 0;
}
