/* SPDX-License-Identifier: MIT */
/*
 * Finding and creating page-table entries of the lower half (see vm_pt.h).
 * The library OS edits page tables directly through the direct map (native
 * speed); only the TLB flush needs the supervisor.
 */
#include "vm_pt.h"

static unsigned idx(uint64_t va, int level)
{
	return (va >> (12 + 9 * (level - 1))) & 511;
}

uint64_t pte_flags(uint32_t prot)
{
	uint64_t f = PTE_P | PTE_U | PTE_A | PTE_D;

	if (!(prot & (PROT_READ | PROT_WRITE | PROT_EXEC)))
		return PTE_P | PTE_PROTNONE | PTE_A | PTE_D | PTE_NX;
	if (prot & PROT_WRITE)
		f |= PTE_W;
	if (!(prot & PROT_EXEC))
		f |= PTE_NX;
	return f;
}

uint64_t pte_make(uint64_t old, uint32_t prot)
{
	uint64_t f = pte_flags(prot);

	if (old & PTE_BORROWED)
		f = (f & ~PTE_W) | PTE_BORROWED;
	return (old & (PTE_ADDR | PTE_ADOPTED | PTE_SHARED)) | f;
}

void put_page(uint64_t pte)
{
	if (!(pte & (PTE_BORROWED | PTE_ADOPTED | PTE_SHARED)))
		pmem_free(pte & PTE_ADDR);
}

/* The table an absent entry e should point to, made now; false if asked
 * not to or out of memory. */
static bool fill(uint64_t *e, bool create)
{
	uint64_t pa;

	if (!create || !(pa = pmem_alloc_pt()))
		return false;
	*e = pa | PTE_TABLE;
	return true;
}

uint64_t *pt_pde(struct aspace *as, uint64_t va, bool create)
{
	uint64_t *t = table(as->root);

	for (int level = 4; level > 2; level--) {
		uint64_t *e = &t[idx(va, level)];
		if (!(*e & PTE_P) && !fill(e, create))
			return NULL;
		t = table(*e);
	}
	return &t[idx(va, 2)];
}

uint64_t *pt_walk(struct aspace *as, uint64_t va, bool create)
{
	uint64_t *pde = pt_pde(as, va, create);

	if (!pde || (*pde & PTE_PS) || (!(*pde & PTE_P) && !fill(pde, create)))
		return NULL;
	return &table(*pde)[idx(va, 1)];
}

uint64_t *pt_leaf(struct aspace *as, uint64_t va, uint64_t *size)
{
	uint64_t *pde = pt_pde(as, va, false), *pte;

	if (!pde || !(*pde & PTE_P))
		return NULL;
	if (*pde & PTE_PS) {
		*size = HUGE_SIZE;
		return pde;
	}
	pte = &table(*pde)[idx(va, 1)];
	*size = PAGE_SIZE;
	return (*pte & PTE_P) && !pte_stale(*pte) ? pte : NULL;
}

uint64_t *pt_next(struct aspace *as, uint64_t *va, uint64_t end, uint64_t *size)
{
	while (*va < end) {
		uint64_t *t = table(as->root), *pte;
		int level;

		for (level = 4; level > 1; level--) {
			uint64_t *e = &t[idx(*va, level)];
			if (!(*e & PTE_P))
				break;
			if (*e & PTE_PS) { /* only ever at level 2 in the lower half */
				*va = ALIGN_DOWN(*va, HUGE_SIZE);
				*size = HUGE_SIZE;
				return e;
			}
			t = table(*e);
		}
		if (level > 1) {
			uint64_t span = 1ULL << (12 + 9 * (level - 1));
			*va = ALIGN_DOWN(*va, span) + span;
			continue;
		}
		pte = &t[idx(*va, 1)];
		if ((*pte & PTE_P) && !pte_stale(*pte)) {
			*size = PAGE_SIZE;
			return pte;
		}
		*va += PAGE_SIZE;
	}
	return NULL;
}

void pt_free_tables(uint64_t pa, int level)
{
	uint64_t *t = table(pa);

	for (int i = 0; level > 1 && i < (level == 4 ? 256 : 512); i++)
		if ((t[i] & PTE_P) && !(t[i] & PTE_PS))
			pt_free_tables(t[i], level - 1);
	pmem_free_pt(pa & PTE_ADDR);
}
