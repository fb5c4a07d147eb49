/* SPDX-License-Identifier: MIT */
/*
 * The page tables of the lower half, shared by the memory code of the
 * library OS: vm_pt.c finds and creates entries, vm.c keeps mappings,
 * vm_huge.c 2 MiB pages.
 *
 * An address is mapped by a level-1 entry (a 4 KiB page) or by a level-2
 * entry with PTE_PS (a 2 MiB page: always anonymous, owned and lazily
 * mapped; see vm_huge.c). Tables above level 1 are created on demand and
 * kept until the address space goes.
 */
#ifndef KILN_VM_PT_H
#define KILN_VM_PT_H

#include "vm.h"

#define PTE_P        (1ULL << 0)
#define PTE_W        (1ULL << 1)
#define PTE_U        (1ULL << 2)
#define PTE_A        (1ULL << 5)
#define PTE_D        (1ULL << 6)
#define PTE_PS       (1ULL << 7)
#define PTE_NX       (1ULL << 63)
#define PTE_BORROWED (1ULL << 9) /* software bit: not ours, see vm.c */
/* Software bit: a page of this process with protection PROT_NONE (a guard
 * page made so after it was filled). Present, so that every walk finds it
 * (munmap frees it, fork copies it, mprotect gives its bytes back), but
 * without PTE_U, so that every access of the program or of the library OS
 * faults; vm_fault refuses it (the mapping allows no access). */
#define PTE_PROTNONE (1ULL << 10)
/* Software bit: a page of the kept tree that the address space being built
 * will be merged into, at the same address (vm_keep.c). The kept tree
 * owns it until the merge: put_page leaves it, pte_make keeps the bit. */
#define PTE_ADOPTED (1ULL << 11)
/* Software bit: a page of a shared mapping's object (VMA_SHARED), which the
 * object owns: put_page leaves it, fork maps the same page, vm_keep.c
 * never counts, keeps or reuses it. */
#define PTE_SHARED (1ULL << 52)
#define PTE_ADDR   0x000ffffffffff000ULL
#define HUGE_ADDR  0x000fffffffe00000ULL
/* A level-1 entry left from a dead process that ran the same program
 * (vm_keep.c): an image page it mapped where this process maps nothing,
 * without PTE_U (nor PTE_PROTNONE) so that no access of the program (or
 * of the library OS) reaches it, but present, so that the host keeps its shadow of it (a
 * change of rights keeps a host's shadow entry, a non-present entry does
 * not). The loader mapping the same library at the same address again
 * sets PTE_U, and the host maps the page without a fault. Everything
 * but vm_keep.c treats it as absent: pt_leaf and pt_next skip it. */
static inline bool pte_stale(uint64_t e)
{
	return (e & (PTE_P | PTE_U | PTE_PROTNONE)) == PTE_P;
}

/* A stale entry of a page of the address space's own, not the image's: a
 * dormant page, which a dead process that ran the same program had there
 * (vm_keep.c). Its bytes are the dead process's: it is the address space's
 * to free, or to take, zeroed or filled, when it maps a page there (and
 * the host then keeps its shadow entry). Nothing else reads it. */
static inline bool pte_dormant(uint64_t e)
{
	return pte_stale(e) && !(e & (PTE_BORROWED | PTE_SHARED));
}

/* An entry pointing to a table. Accessed already: the host would set the
 * bit itself at the first walk through it (and a kept table would then
 * differ from a new one, see vm_keep.c). */
#define PTE_TABLE (PTE_P | PTE_W | PTE_U | PTE_A)
/* The first touch of a lazy 4 KiB page maps the pages around it too. */
#define FAULT_AROUND (16 * PAGE_SIZE)

static inline uint64_t *table(uint64_t entry)
{
	return phys_to_virt(entry & PTE_ADDR);
}

/* The level-1 entry for page i of the 2 MiB page that entry pde maps. */
static inline uint64_t huge_pte(uint64_t pde, unsigned i)
{
	return ((pde & HUGE_ADDR) + i * PAGE_SIZE) | (pde & (PTE_NX | 0xfff) & ~PTE_PS);
}

/* Entry flags for a page with protection prot. */
uint64_t pte_flags(uint32_t prot);
/* The entry for a page with protection prot, keeping it borrowed (and then
 * never writable: the first write copies it). */
uint64_t pte_make(uint64_t old, uint32_t prot);
/* Free the 4 KiB page behind a present entry unless it is borrowed (or
 * adopted, or shared). */
void put_page(uint64_t pte);

/* The level-2 entry for va, creating the tables above it if asked. */
uint64_t *pt_pde(struct aspace *as, uint64_t va, bool create);
/* The level-1 entry for va, creating its table if asked; NULL if va lies
 * in a 2 MiB page (see huge_split) or a table is missing. */
uint64_t *pt_walk(struct aspace *as, uint64_t va, bool create);
/* The present entry that maps va, its size (PAGE_SIZE or HUGE_SIZE) in
 * *size; NULL if va is not mapped (or its entry is stale). */
uint64_t *pt_leaf(struct aspace *as, uint64_t va, uint64_t *size);
/* The first present entry (not stale) for an address in [*va, end),
 * skipping missing tables whole (a reservation of terabytes has none); NULL if none. *va
 * becomes the address it maps from (2 MiB-aligned for a huge page, so
 * possibly below the *va passed in) and *size its size. */
uint64_t *pt_next(struct aspace *as, uint64_t *va, uint64_t end, uint64_t *size);
/* Free the pages of the address space's own (dormant ones too) that the
 * tables under root map, not the tables. */
void pt_put_pages(uint64_t root);
/* Free the page tables under the level-`level` table at pa (not the pages
 * they map). */
void pt_free_tables(uint64_t pa, int level);
/* Flush the TLB if as is the address space in use (vm.c). */
void pt_flush(struct aspace *as);
/* One page's translation changed in as (cheaper than pt_flush). */
void pt_flush_page(struct aspace *as, uint64_t va);

/* 2 MiB pages (vm_huge.c). */
/* Map the 2 MiB around addr, a first touch of lazy memory in v, with one
 * huge page if policy and memory allow; false: use 4 KiB pages. */
bool huge_fault(struct aspace *as, const struct vma *v, uint64_t addr);
/* Replace the 2 MiB page of entry pde by 512 4 KiB entries (one new table).
 * 0 or -ENOMEM. */
int huge_split(struct aspace *as, uint64_t *pde);
/* Split the 2 MiB pages that [start, end) covers only in part, so that
 * every one left in it lies wholly inside. 0 or -ENOMEM. */
int huge_split_edges(struct aspace *as, uint64_t start, uint64_t end);
/* Unmap the 2 MiB page of entry pde and free it. */
void huge_unmap(struct aspace *as, uint64_t *pde);
/* fork: a copy of the 2 MiB page src_pde maps at va in dst, as a 2 MiB
 * page. -EAGAIN if there is no 2 MiB block to spare (copy it page by page
 * instead), -ENOMEM if a page table cannot be had. */
int huge_copy(struct aspace *dst, uint64_t va, uint64_t src_pde);

/* The page tables of a dead address space, kept for the next process
 * that runs the same program (vm_keep.c): keep the tree under root if it
 * maps image pages, perhaps with the pages it maps; true if kept (then
 * neither the tables nor the pages are to be freed). */
bool keep_tables(uint64_t root);
/* Forget every kept tree, its memory being no longer ours (vm_init). */
void keep_forget(void);
/* An address space being built (as->keep_seek) takes the newest kept tree
 * with pages that runs the program with signature sig (0: the one it maps
 * so far), if there is one, to merge into later. */
void keep_take(struct aspace *as, uint64_t sig);
/* Where as has taken a kept tree, the page that tree has of its own at
 * va, to map at va in as with PTE_ADOPTED (the merge then neither copies
 * it nor writes its entry); 0 if none. Its bytes are the dead process's. */
uint64_t keep_page(struct aspace *as, uint64_t va);
/* The first image page that the tree under root maps (see vm_keep.c). */
uint64_t keep_signature(uint64_t root);

/* Shared copies of code pages with rewritten syscall sites (vm_text.c). */
/* Is the page at pa such a copy? */
bool text_is_copy(uint64_t pa);
/* Rewrite the syscall at site, which the borrowed 4 KiB page of entry pte
 * maps, in the page's shared copy (made now if need be; then pte maps it,
 * with no TLB flush). -EINVAL if the site straddles two pages, -ENOMEM if
 * no copy can be made: the caller patches a private copy instead. */
int text_patch(struct aspace *as, uint64_t *pte, uint64_t site);
/* Is pa the address of a syscall site rewritten in a shared copy? */
bool text_site_patched(uint64_t pa);

/* Entry e is being replaced by one for the page at pa: free its page if
 * it is a dormant one that pa is not (vm.c; vm_move.c uses it too). */
void vm_put_dormant(uint64_t e, uint64_t pa);

/* Between vm.c and vm_zpoline.c. */
/* Write the sled's page at p (vm_zpoline.c). */
void vm_build_sled(uint8_t *p);
/* Record site as patched in as's own copy (vm_zpoline.c); -ENOMEM. */
int vm_remember_patch(struct aspace *as, uint64_t site);
/* Is the page at va borrowed from the image (vm.c)? */
bool vm_is_borrowed(struct aspace *as, uint64_t va);
/* The page at va made private (keeping its protection), for the kernel to
 * write: its physical address, ~0 when out of memory (vm.c). */
uint64_t vm_own_page(struct aspace *as, uint64_t va);

#endif
