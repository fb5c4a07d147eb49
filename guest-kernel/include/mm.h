/* SPDX-License-Identifier: MIT */
/* Physical memory: the page allocator (pmem.c), the kernel heap (kmalloc.c)
 * and address translation. All RAM is mapped at KILN_VA_DIRECT_MAP. */
#ifndef KILN_MM_H
#define KILN_MM_H

#include "klib.h"
#include "kiln/boot.h"

#define PAGE_SIZE  4096UL
#define PAGE_SHIFT 12
#define HUGE_SIZE  (2UL << 20)
#define HUGE_PAGES (HUGE_SIZE / PAGE_SIZE)

/* Lower-half addresses a program may pass to a syscall. */
#define USER_TOP 0x00007ffffffff000UL

#ifdef KILN_HOSTED
/* Unit tests on the host: where physical address 0 is. The direct map's
 * address, for tests that hand out host pointers minus it as physical
 * addresses (test_ramfs), unless a test points it at RAM of its own
 * (test_vm). */
__attribute__((weak)) uintptr_t kiln_hosted_ram = KILN_VA_DIRECT_MAP;
#define DIRECT_MAP_BASE kiln_hosted_ram
#else
#define DIRECT_MAP_BASE KILN_VA_DIRECT_MAP
#endif

static inline void *phys_to_virt(uint64_t pa)
{
	return (void *)(DIRECT_MAP_BASE + pa);
}

/* Direct-map and kernel-image addresses; user addresses through the
 * current page tables. Returns ~0 if unmapped. */
uint64_t virt_to_phys(const void *va);

/* Page allocator. Pages come back zeroed when `zero` is set (and cost
 * nothing to zero when they were never used). 0 means out of memory. */
uint64_t pmem_alloc(bool zero);
uint64_t pmem_alloc_contig(size_t npages, size_t align_pages, bool zero);
void pmem_free(uint64_t pa);
void pmem_free_contig(uint64_t pa, size_t npages);
/* A 2 MiB-aligned run of HUGE_PAGES pages for a program's huge mapping, or
 * 0 when there is none or memory is not plentiful (then programs should
 * take single pages). Its pages may be freed one by one (pmem_free) once
 * the mapping is split, or all at once with pmem_free_huge. */
uint64_t pmem_alloc_huge(bool zero);
void pmem_free_huge(uint64_t pa);
/* Pages on behalf of a program: fail while the kernel's reserve would be
 * touched. */
uint64_t pmem_alloc_user(bool zero);
bool pmem_user_ok(size_t npages);
/* Give back the memory kept for programs yet to run (vm_keep.c): done
 * when a program's allocation would fail. */
void keep_shrink(void);
/* Pages for page tables (kept apart from data pages: see pmem.c). */
uint64_t pmem_alloc_pt(void);
void pmem_free_pt(uint64_t pa);
/* Was the frame at pa handed out without having been used before (its
 * memory untouched: not even the host has it), and is this the first ask
 * since? */
bool pmem_claim_fresh(uint64_t pa);
size_t pmem_free_pages(void);
/* Have the VMM make the host memory behind [pa, pa + len) present (a hint:
 * see pmem.c), for fresh frames in aligned chunks of this many (PMEM_POP_SMALL
 * while the guest has less than 16 MiB in use). Multiples of 64. */
#define PMEM_POP_CHUNK 256
#define PMEM_POP_SMALL 64
void host_populate(uint64_t pa, uint64_t len);
/* Have the VMM make the RAM past kiln,early-ram-end usable; returns once it
 * is (KILN_PORT_RAM). */
void host_ram_online(void);
size_t pmem_total_pages(void);
/* Copies into RAM done by the VMM, in batches (host_copy.c): begin, add
 * copies of at most a page between direct-map addresses (anything else is
 * copied at once), end. The bytes are there only after host_copy_end. */
struct host_copy {
	uint64_t page; /* the batch of struct kiln_copy_op; 0: copy at once */
	unsigned n;
};
_Static_assert(KILN_COPY_BATCH_MAX * sizeof(struct kiln_copy_op) <= PAGE_SIZE,
               "a batch of copies fills at most a page");
void host_copy_begin(struct host_copy *hc);
void host_copy_add(struct host_copy *hc, void *dst, const void *src, size_t len);
void host_copy_end(struct host_copy *hc);
/* How many copies the VMM did and how many it left (kiln.stats=1). */
void host_copy_print_stats(void);

/* Kernel heap for library-OS objects. kmalloc never returns memory that
 * was not asked for; kzalloc zeroes. Large requests take whole pages. */
void *kmalloc(size_t n);
void *kzalloc(size_t n);
void kfree(void *p);
char *kstrndup(const char *s, size_t n);

#endif
