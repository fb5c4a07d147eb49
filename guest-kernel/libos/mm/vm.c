/* SPDX-License-Identifier: MIT */
/*
 * Address spaces and the mappings of the lower half (page tables: vm_pt.c,
 * 2 MiB pages: vm_huge.c).
 *
 * Most pages belong to the address space. Borrowed pages (PTE_BORROWED) are
 * read-only memory the page allocator does not own, the pmem window of an
 * image: mapped without copying, shared by fork, never freed and never
 * written. A write to a writable mapping of one copies it first (vm_fault).
 *
 * Shared mappings (VMA_SHARED) map the pages of an object, a tmpfs file
 * (PTE_SHARED): the object owns them, every mapping of it in every process
 * maps the same ones, and the object lives while a mapping holds it (each
 * VMA of one holds a reference, so a VMA that is copied or split takes
 * one more: vma_hold, vma_free).
 */
#include "bootinfo.h"
#include "printk.h"
#include "sched.h"
#include "sv.h"
#include "vm_pt.h"

#define SLED_VA 0

bool vm_borrow_pages = true;
static uint64_t boot_pml4;
static void aspace_destroy(struct aspace *as);
static uint64_t sled_pa;
static struct aspace *active;
static struct aspace *all_spaces; /* (linked by next_all) */
static int map_shared_page(struct aspace *as, const struct vma *v, uint64_t va, bool create);
extern char __libos_text_start[];
extern char __libos_phys_delta[];

/*
 * The first address space (init's) takes the boot page tables, whose user
 * half is empty and on which the CPU runs already: init starts without a
 * switch of CR3 (a supervisor call) and, on PVM hosts, without a new
 * shadow root and the faults that rebuild it. The page is the VMM's: when
 * the address space goes, its user tables go, the root stays.
 */
static bool boot_root_taken;

static bool is_boot_root(const struct aspace *as)
{
	return as->root == boot_pml4;
}

void vm_init(const struct bootinfo *bi)
{
	boot_pml4 = bi->pml4;
	boot_root_taken = false;
	keep_forget();
	sled_pa = pmem_alloc(false);
	if (!sled_pa)
		kpanic("no memory for the syscall sled");
	vm_build_sled(phys_to_virt(sled_pa));
	/* Sanity: the jump lands on zpoline_entry. */
	if (KILN_SLED_END + 5 + (int64_t)(int32_t)0x90909090 != (int64_t)KILN_VA_ZPOLINE_ENTRY)
		kpanic("zpoline entry address does not match the sled");
}

uint64_t virt_to_phys(const void *p)
{
	uint64_t va = (uint64_t)p;

	if (va >= KILN_VA_DIRECT_MAP && va < KILN_VA_MMIO)
		return va - KILN_VA_DIRECT_MAP;
	if (va >= (uint64_t)__libos_text_start && va < KILN_VA_LIBOS_END)
		return va - (uint64_t)__libos_phys_delta;
	if (va < USER_TOP && active)
		return vm_translate(active, va);
	return ~0ULL;
}

struct aspace *aspace_create(void)
{
	struct aspace *as = kzalloc(sizeof(*as));
	uint64_t *root, *sled_pte;

	if (!as)
		return NULL;
	if (!boot_root_taken) {
		boot_root_taken = true;
		as->root = boot_pml4;
	} else {
		as->root = pmem_alloc_pt();
		if (!as->root) {
			kfree(as);
			return NULL;
		}
		root = table(as->root);
		memcpy(root + 256, table(boot_pml4) + 256, 256 * sizeof(uint64_t));
	}
	sled_pte = pt_walk(as, SLED_VA, true);
	if (!sled_pte) {
		aspace_destroy(as);
		return NULL;
	}
	*sled_pte = sled_pa | PTE_P | PTE_U | PTE_A;
	as->mmap_top = 0x7f0000000000ULL;
	as->refs = 1;
	as->next_all = all_spaces;
	all_spaces = as;
	return as;
}

struct aspace *aspace_get(struct aspace *as)
{
	as->refs++;
	return as;
}

/* A copy of a VMA (fork, a split) holds its object too. */
static void vma_hold(struct vma *v)
{
	if (v->ops)
		v->ops->get(v->obj);
}

static void vma_free(struct vma *v)
{
	if (v && v->ops)
		v->ops->put(v->obj);
	kfree(v);
}

/* The object's page index that address va of v maps. */
static uint64_t vma_pgoff(const struct vma *v, uint64_t va)
{
	return v->pgoff + (va - v->start) / PAGE_SIZE;
}

/* Free everything without writing a single entry: on PVM hosts every
 * write to a page table the hardware has shadowed traps, and nobody will
 * look at these tables again. Unless they are kept, perhaps with the
 * pages, for the next process that runs the same program (vm_keep.c).
 * Every page above the sled is the program's (a huge page may span
 * several mappings: walk the tables, not them). One never used (a failed
 * exec) is merged into the kept tree it took first: it owns none of the
 * pages it adopted from it. */
static void aspace_destroy(struct aspace *as)
{
	struct aspace **pp = &all_spaces;

	while (*pp && *pp != as)
		pp = &(*pp)->next_all;
	if (*pp)
		*pp = as->next_all;
	/* The boot root's address space is the first one, made before any
	 * tree is kept: it never took one, and is never kept itself. */
	if (as->keep_root)
		aspace_keep_tables(as);
	if (is_boot_root(as) || !keep_tables(as->root)) {
		pt_put_pages(as->root);
		if (!is_boot_root(as))
			pt_free_tables(as->root, 4);
		else
			for (unsigned i = 0; i < 256; i++)
				if (table(as->root)[i] & PTE_P)
					pt_free_tables(table(as->root)[i], 3);
	}
	while (as->vmas) {
		struct vma *n = as->vmas->next;
		vma_free(as->vmas);
		as->vmas = n;
	}
	kfree(as->patched);
	kfree(as);
}

/* Released while still loaded in CR3, freed later: not on the way from an
 * exiting process to its parent (the kilnd agent is waiting to report the
 * exit), but when the CPU is about to idle, when a program is loaded (which
 * may take over their page tables, vm_keep.c), or at a switch when more
 * than GRAVEYARD_MAX of them or GRAVEYARD_PAGES of their pages wait. */
#define GRAVEYARD_MAX   4
#define GRAVEYARD_PAGES 2048
static struct aspace *graveyard;
static size_t nr_dead, dead_pages;

/* A dead address space lets go of its shared mappings' objects at once,
 * not when it is freed (perhaps later, see below): a memfd it mapped is
 * unmapped now for F_SEAL_WRITE, an unlinked file's memory free now. No
 * program runs in it again to reach their pages. */
static void drop_objects(struct aspace *as)
{
	for (struct vma *v = as->vmas; v; v = v->next)
		if (v->ops) {
			v->flags &= ~(VMA_SHARED | VMA_FILE);
			v->ops->put(v->obj);
			v->ops = NULL;
		}
}

void aspace_release(struct aspace *as)
{
	if (--as->refs > 0)
		return;
	drop_objects(as);
	if (as == active) {
		/* Still in CR3: free it once another one is loaded. */
		as->next_dead = graveyard;
		graveyard = as;
		nr_dead++;
		dead_pages += as->nr_pages;
		return;
	}
	aspace_destroy(as);
}

void aspace_reap(void)
{
	struct aspace **pp = &graveyard;

	while (*pp) {
		struct aspace *as = *pp;
		if (as == active) {
			pp = &as->next_dead;
			continue;
		}
		*pp = as->next_dead;
		nr_dead--;
		dead_pages -= as->nr_pages;
		aspace_destroy(as);
	}
}

/* Copy one present page of src into dst at va; a borrowed page is shared
 * (code as its copy with the syscall sites rewritten, if it has one: the
 * child of a shell would otherwise take the slow path at each one again,
 * and switch to the copy then). */
static int copy_page(struct aspace *dst, uint64_t va, uint64_t src_pte)
{
	uint64_t *pte = pt_walk(dst, va, true);
	uint64_t pa, adopted = 0;

	if (pte && (src_pte & PTE_SHARED)) { /* the object's: the same page */
		*pte = src_pte;
		dst->nr_pages++;
		return 0;
	}
	if (pte && (src_pte & PTE_BORROWED)) {
		pa = src_pte & PTE_ADDR;
		if (!(src_pte & PTE_NX))
			pa = vm_text_page(pa);
		*pte = pa | (src_pte & ~PTE_ADDR);
		dst->nr_pages++;
		return 0;
	}
	if (pte && (pa = keep_page(dst, va)))
		adopted = PTE_ADOPTED;
	else if (!pte || !(pa = pmem_alloc_user(false)))
		return -ENOMEM;
	memcpy(phys_to_virt(pa), phys_to_virt(src_pte & PTE_ADDR), PAGE_SIZE);
	*pte = pa | (src_pte & ~PTE_ADDR) | adopted;
	dst->nr_pages++;
	return 0;
}

/* The same for a 2 MiB page: as one if memory allows, else page by page. */
static int copy_huge(struct aspace *dst, uint64_t va, uint64_t src_pde)
{
	int err = huge_copy(dst, va, src_pde);

	for (unsigned i = 0; err == -EAGAIN && i < HUGE_PAGES; i++)
		if (copy_page(dst, va + i * PAGE_SIZE, huge_pte(src_pde, i)))
			return -ENOMEM;
	return err == -EAGAIN ? 0 : err;
}

struct aspace *aspace_copy(struct aspace *src)
{
	struct aspace *as = aspace_create();
	struct vma **tail;
	uint64_t *e, size;

	if (!as)
		return NULL;
	aspace_keep_seek(as);
	keep_take(as, keep_signature(src->root));
	tail = &as->vmas;
	for (struct vma *v = src->vmas; v; v = v->next) {
		struct vma *nv = kmalloc(sizeof(*nv));

		if (!nv)
			goto fail;
		*nv = *v;
		nv->next = NULL;
		vma_hold(nv);
		*tail = nv;
		tail = &nv->next;
	}
	for (uint64_t va = SLED_VA + PAGE_SIZE; (e = pt_next(src, &va, USER_TOP, &size));
	     va += size)
		if (size == HUGE_SIZE ? copy_huge(as, va, *e) : copy_page(as, va, *e))
			goto fail;
	for (size_t i = 0; i < src->patched_cap; i++)
		if (src->patched[i] && vm_remember_patch(as, src->patched[i]))
			goto fail;
	as->brk_start = src->brk_start;
	as->brk = src->brk;
	as->mmap_top = src->mmap_top;
	as->arg_start = src->arg_start;
	as->arg_end = src->arg_end;
	as->env_start = src->env_start;
	as->env_end = src->env_end;
	aspace_keep_tables(as);
	return as;
fail:
	aspace_destroy(as);
	return NULL;
}

void aspace_activate(struct aspace *as)
{
	if (active != as) {
		uint64_t deadline = sched_timer_take();

		/* Until the first switch the CPU runs on the boot tables. */
		if (as->root != (active ? active->root : boot_pml4))
			sv_set_cr3(as->root, deadline);
		else if (deadline)
			sv_set_timer(deadline);
		active = as;
	}
	if (nr_dead > GRAVEYARD_MAX || dead_pages > GRAVEYARD_PAGES)
		aspace_reap();
}

void pt_flush(struct aspace *as)
{
	if (as == active)
		sv_flush_tlb(as->root);
}

void pt_flush_page(struct aspace *as, uint64_t va)
{
	if (as == active)
		sv_invlpg(va);
}

/* Replace [start, end) in the VMA list with a new VMA (or nothing). */
static int vma_set(struct aspace *as, uint64_t start, uint64_t end, struct vma *nv)
{
	struct vma **pp = &as->vmas, *v;

	while ((v = *pp)) {
		if (v->end <= start) {
			pp = &v->next;
			continue;
		}
		if (v->start >= end)
			break;
		if (v->start < start && v->end > end) { /* split in two */
			struct vma *tail = kmalloc(sizeof(*tail));
			if (!tail)
				return -ENOMEM;
			*tail = *v;
			tail->start = end;
			tail->pgoff = vma_pgoff(v, end);
			vma_hold(tail);
			v->end = start;
			v->next = tail;
			pp = &v->next;
		} else if (v->start < start) {
			v->end = start;
			pp = &v->next;
		} else if (v->end > end) {
			v->pgoff = vma_pgoff(v, end);
			v->start = end;
			break;
		} else {
			*pp = v->next;
			vma_free(v);
		}
	}
	if (nv) {
		nv->next = *pp;
		*pp = nv;
	}
	return 0;
}

/* Does entry `now` take away a right entry `was` gave (write, execute, any
 * access: PROT_NONE)? */
static bool restricts(uint64_t was, uint64_t now)
{
	return ((was & PTE_W) && !(now & PTE_W)) || (!(was & PTE_NX) && (now & PTE_NX)) ||
	       ((was & PTE_U) && !(now & PTE_U));
}

/* Unmap and free the pages of [start, end), only the 2 MiB ones if
 * huge_only; *flush becomes true if there were any, whose translations the
 * caller must then flush. -ENOMEM (and nothing changed) if a 2 MiB page it
 * covers in part cannot be split. */
static int unmap_pages(struct aspace *as, uint64_t start, uint64_t end, bool huge_only, bool *flush)
{
	uint64_t *e, size;

	if (huge_split_edges(as, start, end))
		return -ENOMEM;
	for (uint64_t va = start; (e = pt_next(as, &va, end, &size)); va += size) {
		if (size == HUGE_SIZE) {
			huge_unmap(as, e);
		} else if (huge_only) {
			continue;
		} else {
			put_page(*e);
			*e = 0;
			as->nr_pages--;
		}
		*flush = true;
	}
	return 0;
}

static bool range_ok(uint64_t start, uint64_t len)
{
	return !(start % PAGE_SIZE) && len && start >= PAGE_SIZE && start < USER_TOP &&
	       len <= USER_TOP - start;
}

int vm_unmap(struct aspace *as, uint64_t start, uint64_t len)
{
	bool flush = false;

	if (!range_ok(start, len))
		return -EINVAL;
	len = ALIGN_UP(len, PAGE_SIZE);
	if (unmap_pages(as, start, start + len, false, &flush))
		return -ENOMEM;
	if (flush)
		pt_flush(as);
	return vma_set(as, start, start + len, NULL);
}

int vm_map_anon(struct aspace *as, uint64_t start, uint64_t len, uint32_t prot, uint32_t flags)
{
	return vm_map_pages(as, start, len, prot, flags, NULL, NULL);
}

/* The entry for a zeroed page at va with protection prot, to replace
 * entry old: the page the kept tree that as has taken has there, if any
 * (vm_keep.c), else old's page if it is dormant, else a new one. 0 if out
 * of memory. */
static uint64_t zeroed_page(struct aspace *as, uint64_t va, uint32_t prot, uint64_t old)
{
	uint64_t pa = keep_page(as, va), adopted = pa ? PTE_ADOPTED : 0;

	if (!pa && pte_dormant(old))
		pa = old & PTE_ADDR;
	if (pa) {
		memset(phys_to_virt(pa), 0, PAGE_SIZE);
		return pa | pte_flags(prot) | adopted;
	}
	pa = pmem_alloc_user(true);
	return pa ? pa | pte_flags(prot) : 0;
}

/* Entry e is being replaced by one for the page at pa: free its page if
 * it is a dormant one that pa is not. */
void vm_put_dormant(uint64_t e, uint64_t pa)
{
	if (pte_dormant(e) && (e & PTE_ADDR) != pa)
		put_page(e);
}

int vm_map_pages(struct aspace *as, uint64_t start, uint64_t len, uint32_t prot, uint32_t flags,
                 vm_page_fn page, void *ctx)
{
	bool lazy = (flags & VMA_LAZY) && !page, flush = false;
	struct vma *v;
	uint64_t end, va;

	if (!range_ok(start, len))
		return -EINVAL;
	end = start + ALIGN_UP(len, PAGE_SIZE);
	v = kmalloc(sizeof(*v));
	if (!v || unmap_pages(as, start, end, !lazy, &flush)) {
		kfree(v);
		return -ENOMEM;
	}
	if (!lazy)
		keep_take(as, 0);
	/* Old 4 KiB entries are replaced in place, and the flush of their
	 * translations comes after: the host then keeps its shadow of an entry
	 * that maps the same page again (a library's segment mapped over its
	 * reservation), and the same page with no right taken needs no flush. */
	for (va = start; !lazy && va < end; va += PAGE_SIZE) {
		uint64_t *pte = pt_walk(as, va, true), want;
		uint64_t pa = page && pte ? page(ctx, (va - start) / PAGE_SIZE) : 0;

		if (pa == VM_NO_PAGE) {
			/* As unmap_pages: a stale entry stays as it is. */
			if ((*pte & PTE_P) && !pte_stale(*pte)) {
				flush = true;
				put_page(*pte);
				*pte = 0;
				as->nr_pages--;
			}
			continue;
		}
		if (!vm_borrow_pages)
			pa = 0;
		if (pa)
			want = pte_make(pa | PTE_BORROWED, prot);
		else if (pte && (want = zeroed_page(as, va, prot, *pte)))
			pa = want & PTE_ADDR;
		else
			goto nomem;
		if ((*pte & PTE_P) && !pte_stale(*pte)) {
			bool same = (*pte & PTE_ADDR) == pa;

			flush |= !same || restricts(*pte, want);
			if (!same)
				put_page(*pte);
			as->nr_pages--;
		}
		vm_put_dormant(*pte, pa);
		*pte = want;
		as->nr_pages++;
	}
	*v = (struct vma){start, end,  prot, (lazy ? flags : flags & ~VMA_LAZY) & ~VMA_SHARED,
	                  NULL,  NULL, NULL, 0};
	if (vma_set(as, start, end, v))
		goto nomem;
	if (flush)
		pt_flush(as);
	return 0;
nomem:
	/* (The new pages, and the old ones not yet replaced.) */
	unmap_pages(as, start, end, false, &flush);
	if (flush)
		pt_flush(as);
	vma_set(as, start, end, NULL);
	kfree(v);
	return -ENOMEM;
}

int vm_map_shared(struct aspace *as, uint64_t start, uint64_t len, uint32_t prot, uint32_t flags,
                  const struct vm_object_ops *ops, void *obj, uint64_t pgoff, bool fill)
{
	struct vma *v;
	uint64_t end;
	int err = 0;

	if (!range_ok(start, len) || pgoff > UINT64_MAX / PAGE_SIZE - len / PAGE_SIZE)
		return -EINVAL;
	end = start + ALIGN_UP(len, PAGE_SIZE);
	v = kmalloc(sizeof(*v));
	if (!v || vm_unmap(as, start, end - start)) {
		kfree(v);
		return -ENOMEM;
	}
	*v = (struct vma){start, end, prot, flags | VMA_SHARED, NULL, ops, obj, pgoff};
	ops->get(obj);
	vma_set(as, start, end, v); /* (nothing to split: the range is free) */
	for (uint64_t va = start; va < end && !err; va += PAGE_SIZE)
		err = map_shared_page(as, v, va, fill);
	if (err == -ENOMEM) {
		vm_unmap(as, start, end - start);
		return err;
	}
	return 0; /* (-ERANGE: the rest lies past the object's end) */
}

/* Take the pages of v that map obj's pages from idx on out of as. */
static void cut_vma(struct aspace *as, const struct vma *v, uint64_t idx)
{
	uint64_t npages = (v->end - v->start) / PAGE_SIZE, start = v->start;
	bool flush = false;

	if (idx > v->pgoff) {
		if (idx - v->pgoff >= npages)
			return;
		start += (idx - v->pgoff) * PAGE_SIZE;
	}
	/* (-ENOMEM only for a 2 MiB page to split, and file mappings have
	 * none: their pages come from vm_map_pages, map_shared_page and
	 * file_fault, never from huge_fault.) */
	unmap_pages(as, start, v->end, false, &flush);
	if (flush)
		pt_flush(as);
}

int vm_map_file(struct aspace *as, uint64_t start, const struct vm_object_ops *ops, void *obj,
                uint64_t pgoff, uint64_t end_idx)
{
	struct vma *v = vm_find_vma(as, start);

	if (!v || v->start != start || v->ops ||
	    pgoff > UINT64_MAX / PAGE_SIZE - (v->end - v->start) / PAGE_SIZE)
		return -EINVAL;
	v->flags = (v->flags & ~VMA_LAZY) | VMA_FILE;
	v->ops = ops;
	v->obj = obj;
	v->pgoff = pgoff;
	ops->get(obj);
	cut_vma(as, v, end_idx);
	return 0;
}

void vm_object_cut(void *obj, uint64_t idx)
{
	for (struct aspace *as = all_spaces; as; as = as->next_all)
		for (const struct vma *v = as->vmas; v; v = v->next)
			if (v->ops && v->obj == obj)
				cut_vma(as, v, idx);
}

/* Give the pages of [start, end) protection prot (2 MiB pages lie wholly
 * inside); true if a page lost a right, which the TLB may still grant. An
 * entry that does not change is not written: on PVM hosts the first write
 * to a shadowed table costs a host fault. A right added needs no flush:
 * a fault on a stale translation makes the host walk the tables again. */
static bool protect_pages(struct aspace *as, uint64_t start, uint64_t end, uint32_t prot)
{
	uint64_t *e, size, want;
	bool restricted = false;

	for (uint64_t va = start; (e = pt_next(as, &va, end, &size)); va += size) {
		if (size == HUGE_SIZE)
			want = (*e & HUGE_ADDR) | pte_flags(prot) | PTE_PS;
		else
			want = pte_make(*e, prot);
		if (*e == want)
			continue;
		restricted |= restricts(*e, want);
		*e = want;
	}
	return restricted;
}

int vm_protect(struct aspace *as, uint64_t start, uint64_t len, uint32_t prot)
{
	bool flush = false;
	uint64_t end;

	if (!range_ok(start, len))
		return -EINVAL;
	end = start + ALIGN_UP(len, PAGE_SIZE);
	for (uint64_t a = start; a < end;) {
		struct vma *v = vm_find_vma(as, a);
		if (!v || v->start > a)
			return -ENOMEM; /* Linux: part of the range is unmapped */
		if ((prot & PROT_WRITE) && (v->flags & VMA_NOWRITE))
			return -EACCES;
		a = v->end;
	}
	if (huge_split_edges(as, start, end))
		return -ENOMEM;
	for (struct vma *v = as->vmas; v && v->start < end; v = v->next) {
		uint64_t s = MAX(v->start, start), e = MIN(v->end, end);
		if (s >= e)
			continue;
		if (s > v->start || e < v->end) {
			struct vma *nv = kmalloc(sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			*nv = *v;
			nv->start = s;
			nv->end = e;
			nv->prot = prot;
			nv->pgoff = vma_pgoff(v, s);
			vma_hold(nv);
			if (vma_set(as, s, e, nv)) {
				vma_free(nv);
				return -ENOMEM;
			}
			v = nv;
		} else {
			v->prot = prot;
		}
		flush |= protect_pages(as, s, e, prot);
	}
	if (flush)
		pt_flush(as);
	return 0;
}

struct vma *vm_find_vma(struct aspace *as, uint64_t addr)
{
	for (struct vma *v = as->vmas; v; v = v->next)
		if (addr < v->end)
			return addr >= v->start ? v : NULL;
	return NULL;
}

uint64_t vm_find_free(struct aspace *as, uint64_t len)
{
	uint64_t top = as->mmap_top, best = 0;

	len = ALIGN_UP(len, PAGE_SIZE);
	if (!len || len > top)
		return 0;
	/* Highest gap below mmap_top: walk the sorted list, remember the last
	 * gap that fits. */
	uint64_t prev_end = 1ULL << 32; /* leave the low 4 GiB to brk and ET_EXEC */
	for (struct vma *v = as->vmas;; v = v->next) {
		uint64_t gap_end = v ? MIN(v->start, top) : top;
		if (gap_end > prev_end && gap_end - prev_end >= len)
			best = gap_end - len;
		if (!v || v->start >= top)
			break;
		prev_end = MAX(prev_end, v->end);
	}
	return best;
}

uint64_t vm_translate(struct aspace *as, uint64_t va)
{
	uint64_t size, *e = pt_leaf(as, va, &size);

	if (!e)
		return ~0ULL;
	return (*e & PTE_ADDR & ~(size - 1)) | (va & (size - 1));
}

bool vm_is_borrowed(struct aspace *as, uint64_t va)
{
	uint64_t size, *e = pt_leaf(as, va, &size);

	return e && size == PAGE_SIZE && (*e & PTE_BORROWED);
}

uint64_t vm_translate_own(struct aspace *as, uint64_t va)
{
	uint64_t size, *e = pt_leaf(as, va, &size);

	if (!e)
		return ~0ULL;
	if (size == PAGE_SIZE && (*e & PTE_BORROWED))
		return 0;
	return (*e & PTE_ADDR & ~(size - 1)) | (va & (size - 1));
}

/* Replace the borrowed page at va by a private copy with protection prot.
 * The syscall sites rewritten in a shared copy of code stay known as ours. */
static int unborrow(struct aspace *as, uint64_t va, uint64_t *pte, uint32_t prot)
{
	uint64_t pa = pmem_alloc_user(false), old = *pte & PTE_ADDR;

	if (!pa)
		return -ENOMEM;
	memcpy(phys_to_virt(pa), phys_to_virt(old), PAGE_SIZE);
	if (text_is_copy(old))
		for (unsigned off = 0; off < PAGE_SIZE - 1; off++)
			if (text_site_patched(old + off) &&
			    vm_remember_patch(as, ALIGN_DOWN(va, PAGE_SIZE) + off)) {
				pmem_free(pa);
				return -ENOMEM;
			}
	*pte = pa | pte_flags(prot);
	return 0;
}

/* A zeroed page at va (if none is there yet). */
static int zero_page(struct aspace *as, uint64_t va, uint32_t prot)
{
	uint64_t size, *pte, want;

	if (pt_leaf(as, va, &size))
		return 0;
	pte = pt_walk(as, va, true);
	if (!pte || !(want = zeroed_page(as, va, prot, *pte)))
		return -ENOMEM;
	vm_put_dormant(*pte, want & PTE_ADDR);
	*pte = want;
	as->nr_pages++;
	return 0;
}

/* The first touch of a lazy page maps a 2 MiB page around it (vm_huge.c)
 * or else the pages around it too (as far as memory allows): one fault per
 * FAULT_AROUND bytes of a buffer being filled instead of one per page. */
static int populate(struct aspace *as, const struct vma *v, uint64_t addr)
{
	uint64_t page = ALIGN_DOWN(addr, PAGE_SIZE), win = ALIGN_DOWN(addr, FAULT_AROUND);
	uint64_t lo = MAX(v->start, win), hi = MIN(v->end, win + FAULT_AROUND);
	int err;

	if (huge_fault(as, v, addr))
		return 0;
	err = zero_page(as, page, v->prot);

	for (uint64_t va = lo; !err && va < hi; va += PAGE_SIZE)
		if (va != page && zero_page(as, va, v->prot))
			break;
	return err;
}

/* Map the object's page at va in the shared mapping v (if it has one, or
 * made if create), replacing what is there. 0, -ENOMEM, or -ERANGE past
 * the object's end. */
static int map_shared_page(struct aspace *as, const struct vma *v, uint64_t va, bool create)
{
	bool borrowed = false;
	uint64_t pa, want, *pte;
	int err = v->ops->page(v->obj, vma_pgoff(v, va), v->prot, create, &pa, &borrowed);

	if (err || !pa)
		return err;
	pte = pt_walk(as, va, true);
	if (!pte)
		return -ENOMEM;
	if (borrowed)
		want =
		    pte_make((v->prot & PROT_EXEC ? vm_text_page(pa) : pa) | PTE_BORROWED, v->prot);
	else
		want = pa | pte_flags(v->prot) | PTE_SHARED;
	if ((*pte & PTE_P) && !pte_stale(*pte)) {
		put_page(*pte);
		as->nr_pages--;
		pt_flush_page(as, va);
	}
	vm_put_dormant(*pte, pa);
	*pte = want;
	as->nr_pages++;
	return 0;
}

/* A touch of a shared mapping's page that is not mapped yet maps the
 * object's (made if need be) and its neighbours in the window around it;
 * a write to an image page mapped read-only, since made writable, maps
 * the object's own copy of it. */
static int shared_fault(struct aspace *as, const struct vma *v, uint64_t addr, const uint64_t *pte,
                        uint32_t error)
{
	uint64_t page = ALIGN_DOWN(addr, PAGE_SIZE), win = ALIGN_DOWN(addr, FAULT_AROUND);
	uint64_t lo = MAX(v->start, win), hi = MIN(v->end, win + FAULT_AROUND), size;
	int err;

	if (pte && !((error & PF_WRITE) && (*pte & PTE_BORROWED)))
		return -EFAULT;
	err = map_shared_page(as, v, page, true);
	for (uint64_t va = lo; !pte && !err && va < hi; va += PAGE_SIZE)
		if (va != page && !pt_leaf(as, va, &size) && map_shared_page(as, v, va, true))
			break;
	return err;
}

/* A touch of a private file mapping's page that is not there: a copy of
 * the file's bytes (zeroes where it has none), or for a read the image
 * page itself, mapped in place as map_file does; -ERANGE past the file's
 * end. */
static int file_fault(struct aspace *as, const struct vma *v, uint64_t addr, uint32_t error)
{
	uint64_t va = ALIGN_DOWN(addr, PAGE_SIZE), idx = vma_pgoff(v, va), pa = 0, want, *pte;
	bool borrowed = false;
	int err = v->ops->page(v->obj, idx, v->prot & ~(uint32_t)PROT_WRITE, false, &pa, &borrowed);

	if (err)
		return err;
	pte = pt_walk(as, va, true);
	if (!pte)
		return -ENOMEM;
	if (borrowed && vm_borrow_pages && !(error & PF_WRITE)) {
		want =
		    pte_make((v->prot & PROT_EXEC ? vm_text_page(pa) : pa) | PTE_BORROWED, v->prot);
	} else {
		uint64_t own = pmem_alloc_user(false);

		if (!own)
			return -ENOMEM;
		err = v->ops->copy(v->obj, idx, phys_to_virt(own));
		if (err) {
			pmem_free(own);
			return err;
		}
		want = own | pte_flags(v->prot);
	}
	vm_put_dormant(*pte, want & PTE_ADDR);
	*pte = want;
	as->nr_pages++;
	return 0;
}

static bool access_ok(uint32_t prot, uint32_t error)
{
	if (error & PF_WRITE)
		return prot & PROT_WRITE;
	if (error & PF_FETCH)
		return prot & PROT_EXEC;
	return prot & (PROT_READ | PROT_WRITE | PROT_EXEC);
}

int vm_fault(struct aspace *as, uint64_t addr, uint32_t error)
{
	struct vma *v = vm_find_vma(as, addr);
	uint64_t size, *pte;

	if (!v || !access_ok(v->prot, error))
		return -EFAULT;
	/* (A stale entry, see vm_pt.h, faults as present.) */
	pte = pt_leaf(as, addr, &size);
	if (v->flags & VMA_SHARED)
		return shared_fault(as, v, addr, (error & PF_PRESENT) ? pte : NULL, error);
	if (!pte && (v->flags & VMA_FILE))
		return file_fault(as, v, addr, error);
	if ((!(error & PF_PRESENT) || !pte) && (v->flags & VMA_LAZY))
		return populate(as, v, addr);
	if (!(error & PF_WRITE) || !pte || size != PAGE_SIZE || !(*pte & PTE_BORROWED))
		return -EFAULT;
	/* No TLB flush: the fault itself dropped the translation of addr
	 * (SDM 4.10.4.1), and nothing touched addr since. */
	return unborrow(as, addr, pte, v->prot);
}

uint64_t vm_translate_write(struct aspace *as, uint64_t va)
{
	uint64_t size, *e = pt_leaf(as, va, &size);
	struct vma *v = vm_find_vma(as, va);

	if (v && (v->flags & VMA_LAZY) && !e && !populate(as, v, va))
		e = pt_leaf(as, va, &size);
	if (v && (v->flags & VMA_FILE) && !e && !file_fault(as, v, va, PF_WRITE))
		e = pt_leaf(as, va, &size);
	if (v && (v->flags & VMA_SHARED) && (!e || (*e & PTE_BORROWED)) &&
	    !shared_fault(as, v, va, e, PF_WRITE))
		e = pt_leaf(as, va, &size);
	if (!e || !v)
		return ~0ULL;
	if (*e & PTE_BORROWED) {
		if (unborrow(as, va, e, v->prot))
			return ~0ULL;
		pt_flush(as);
	}
	return (*e & PTE_ADDR & ~(size - 1)) | (va & (size - 1));
}

/* The page at va made private (keeping its protection), for the kernel to
 * write. ~0 when out of memory. */
uint64_t vm_own_page(struct aspace *as, uint64_t va)
{
	uint64_t size, *e = pt_leaf(as, va, &size);
	struct vma *v = vm_find_vma(as, va);

	if (!e || ((*e & PTE_BORROWED) && (!v || unborrow(as, va, e, v->prot))))
		return ~0ULL;
	return (*e & PTE_ADDR & ~(size - 1)) | (va & (size - 1));
}
