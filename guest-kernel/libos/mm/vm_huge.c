/* SPDX-License-Identifier: MIT */
/*
 * Transparent huge pages: 2 MiB pages for lazily mapped anonymous memory
 * (VMA_LAZY). On PVM hosts the first touch of each 4 KiB page costs a
 * shadow-paging fault in the host (5-25 us); a 2 MiB page needs one guest
 * fault for 512 pages, and one host fault too when the host backs guest RAM
 * with huge pages (kiln-vmm --mem-backing thp).
 *
 * A huge page lies in lazy mappings of one protection; it may span several
 * adjacent ones (Python's 1 MiB arenas, a malloc heap grown by mprotect).
 * Whatever covers only part of one (munmap, mprotect, MADV_DONTNEED,
 * mremap, MAP_FIXED) splits it first into 512 entries of one new table;
 * its frames are then ordinary pages, freed one by one.
 *
 * When (kiln.thp=): "fill", the default, maps a huge page once memory is
 * being filled: the page just below the touched fault-around window is
 * mapped already (a buffer written front to back, a heap or an arena in
 * use). Sparse touches keep 4 KiB pages, so a program that touches one
 * page per MiB of a large mapping costs what it did. The 4 KiB pages a
 * region got before are moved into the huge page. "always" maps one at the
 * first touch, "never" never does. Either way only while memory is
 * plentiful (pmem_alloc_huge).
 */
#include "vm_pt.h"

enum vm_thp vm_thp = VM_THP_FILL;

/* Does [r, r + HUGE_SIZE) lie in lazy mappings with protection prot? */
static bool region_lazy(struct aspace *as, uint64_t r, uint32_t prot)
{
	uint64_t a = r;

	for (const struct vma *v = vm_find_vma(as, r); v && v->start <= a; v = v->next) {
		if (!(v->flags & VMA_LAZY) || v->prot != prot)
			return false;
		a = v->end;
		if (a >= r + HUGE_SIZE)
			return true;
	}
	return false;
}

/* Memory is being filled: the page below addr's fault-around window is
 * mapped. */
static bool filling(struct aspace *as, uint64_t addr)
{
	uint64_t below = ALIGN_DOWN(addr, FAULT_AROUND) - PAGE_SIZE, size;

	return below >= PAGE_SIZE && pt_leaf(as, below, &size);
}

/* Copy the 4 KiB pages of the table that entry pde points to into the
 * 2 MiB page at pa, and free them and the table. Returns how many there
 * were. */
static size_t absorb(uint64_t pde, uint64_t pa)
{
	uint64_t *pt = table(pde);
	size_t n = 0;

	for (unsigned i = 0; i < HUGE_PAGES; i++) {
		if (pte_dormant(pt[i]))
			put_page(pt[i]);
		if (!(pt[i] & PTE_P) || pte_stale(pt[i]))
			continue;
		memcpy(phys_to_virt(pa + i * PAGE_SIZE), table(pt[i]), PAGE_SIZE);
		put_page(pt[i]);
		n++;
	}
	pmem_free_pt(pde & PTE_ADDR);
	return n;
}

bool huge_fault(struct aspace *as, const struct vma *v, uint64_t addr)
{
	uint64_t r = ALIGN_DOWN(addr, HUGE_SIZE), *pde, pa;
	size_t had = 0;

	if (vm_thp == VM_THP_NEVER || (vm_thp == VM_THP_FILL && !filling(as, addr)) ||
	    !region_lazy(as, r, v->prot))
		return false;
	pde = pt_pde(as, r, true);
	if (!pde || (*pde & PTE_PS))
		return pde != NULL;
	pa = pmem_alloc_huge(true);
	if (!pa)
		return false;
	if (*pde & PTE_P)
		had = absorb(*pde, pa);
	*pde = pa | pte_flags(v->prot) | PTE_PS;
	as->nr_pages += HUGE_PAGES - had;
	as->nr_huge++;
	if (had) /* the old pages are free: forget their translations */
		pt_flush(as);
	return true;
}

int huge_split(struct aspace *as, uint64_t *pde)
{
	uint64_t pt = pmem_alloc_pt(), *t;

	if (!pt)
		return -ENOMEM;
	t = table(pt);
	for (unsigned i = 0; i < HUGE_PAGES; i++)
		t[i] = huge_pte(*pde, i);
	/* Same translations as before: the TLB may keep the 2 MiB one until
	 * the caller changes some of them and flushes. */
	*pde = pt | PTE_TABLE;
	as->nr_huge--;
	return 0;
}

int huge_split_edges(struct aspace *as, uint64_t start, uint64_t end)
{
	const uint64_t edges[2] = {start, end};

	for (int i = 0; i < 2; i++) {
		uint64_t size, *e = pt_leaf(as, edges[i], &size);

		if (e && size == HUGE_SIZE && edges[i] % HUGE_SIZE && huge_split(as, e))
			return -ENOMEM;
	}
	return 0;
}

void huge_unmap(struct aspace *as, uint64_t *pde)
{
	pmem_free_huge(*pde & HUGE_ADDR);
	*pde = 0;
	as->nr_pages -= HUGE_PAGES;
	as->nr_huge--;
}

int huge_copy(struct aspace *dst, uint64_t va, uint64_t src_pde)
{
	uint64_t *pde = pt_pde(dst, va, true), pa;

	if (!pde)
		return -ENOMEM;
	pa = pmem_alloc_huge(false);
	if (!pa)
		return -EAGAIN;
	memcpy(phys_to_virt(pa), table(src_pde & HUGE_ADDR), HUGE_SIZE);
	*pde = pa | (src_pde & ~HUGE_ADDR);
	dst->nr_pages += HUGE_PAGES;
	dst->nr_huge++;
	return 0;
}
