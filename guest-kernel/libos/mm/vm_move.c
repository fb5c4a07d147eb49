/* SPDX-License-Identifier: MIT */
/*
 * Changes to mapped ranges that keep their pages or drop them without
 * unmapping: madvise(MADV_DONTNEED) (vm_discard), the page moves of
 * mremap (vm_move_pages, 2 MiB pages moved whole where they can be) and
 * stack growth (vm_grow_stack). The mappings themselves are vm.c's.
 */
#include "vm_pt.h"

/* Drop what [start, end) covers of the page entry e maps at va (size
 * bytes) for vm_discard; true if the entry went. */
static bool discard(struct aspace *as, uint64_t *e, uint64_t va, uint64_t size, uint64_t start,
                    uint64_t end)
{
	struct vma *v = vm_find_vma(as, MAX(va, start));
	uint64_t lo = MAX(va, start), hi = MIN(va + size, end);

	/* (A borrowed or shared page holds the file's bytes, as it should.) */
	if (!v || !(v->prot & PROT_WRITE) || (*e & (PTE_BORROWED | PTE_SHARED)))
		return false;
	/* A private file mapping's page reads the file's bytes again. */
	if ((v->flags & (VMA_LAZY | VMA_FILE)) && lo == va && hi == va + size) {
		if (size == HUGE_SIZE) {
			huge_unmap(as, e);
		} else {
			put_page(*e);
			*e = 0;
			as->nr_pages--;
		}
		return true;
	}
	memset(phys_to_virt((*e & PTE_ADDR & ~(size - 1)) + (lo - va)), 0, hi - lo);
	return false;
}

void vm_discard(struct aspace *as, uint64_t start, uint64_t len)
{
	uint64_t end = start + len, *e, size;
	bool any = false;

	/* Without the memory to split a 2 MiB page covered in part, the part
	 * is zeroed instead (discard). */
	huge_split_edges(as, start, end);
	for (uint64_t va = start; (e = pt_next(as, &va, end, &size)); va += size)
		any |= discard(as, e, va, size, start, end);
	if (any)
		pt_flush(as);
}

/* Can the 2 MiB page at va move to va + delta as it is? Its new place
 * must be 2 MiB-aligned and have no page table (tables on the way are
 * made). -ENOMEM if one cannot be. */
static int huge_movable(struct aspace *as, uint64_t va, uint64_t delta, bool *movable)
{
	uint64_t *dst;

	*movable = false;
	if (delta % HUGE_SIZE)
		return 0;
	dst = pt_pde(as, va + delta, true);
	if (!dst)
		return -ENOMEM;
	*movable = !(*dst & PTE_P);
	return 0;
}

/* Everything vm_move_pages needs that can fail: 2 MiB pages split at the
 * edges and where they cannot move whole, page tables at the new place. */
static int prepare_move(struct aspace *as, uint64_t from, uint64_t to, uint64_t len)
{
	uint64_t *e, size;
	bool movable;

	if (huge_split_edges(as, from, from + len))
		return -ENOMEM;
	for (uint64_t va = from; (e = pt_next(as, &va, from + len, &size)); va += size) {
		if (size == HUGE_SIZE) {
			if (huge_movable(as, va, to - from, &movable))
				return -ENOMEM;
			if (movable)
				continue;
			if (huge_split(as, e))
				return -ENOMEM;
			size = 0; /* the same address again, now as 4 KiB pages */
		} else if (!pt_walk(as, to + (va - from), true)) {
			return -ENOMEM;
		}
	}
	return 0;
}

int vm_move_pages(struct aspace *as, uint64_t from, uint64_t to, uint64_t len)
{
	uint64_t *e, size;

	/* Tables first, so that the move itself cannot fail half-way. */
	if (prepare_move(as, from, to, len))
		return -ENOMEM;
	for (uint64_t va = from; (e = pt_next(as, &va, from + len, &size)); va += size) {
		uint64_t *dst = size == HUGE_SIZE ? pt_pde(as, to + (va - from), false)
		                                  : pt_walk(as, to + (va - from), false);

		if ((*dst & PTE_P) && !pte_stale(*dst)) {
			put_page(*dst);
			as->nr_pages--;
		}
		vm_put_dormant(*dst, *e & PTE_ADDR);
		*dst = *e;
		*e = 0;
	}
	pt_flush(as);
	return 0;
}

/* A stack that grows past its pages maps at least STACK_GROW more (short of
 * the mapping below it): a program that goes deeper once usually goes on,
 * and each fault costs tens of microseconds. */
int vm_grow_stack(struct aspace *as, uint64_t addr)
{
	struct vma *v, *below = NULL;
	uint64_t lo = ALIGN_DOWN(addr, PAGE_SIZE), floor;

	for (v = as->vmas; v && v->end <= addr; v = v->next)
		below = v;
	if (!v || !(v->flags & VMA_STACK) || v->start <= lo || v->start - lo > (64UL << 20))
		return -EFAULT;
	if (v->start - lo < STACK_GROW) {
		floor = below ? below->end : PAGE_SIZE;
		lo = MIN(lo, MAX(v->start - STACK_GROW, floor));
	}
	return vm_map_anon(as, lo, v->start - lo, v->prot, v->flags);
}
