// SPDX-License-Identifier: MIT
/*
 * The guest's page allocator and address spaces on the host: pmem.c, vm.c,
 * vm_pt.c and vm_huge.c built with -DKILN_HOSTED, "physical memory" a
 * buffer of this test. Page faults are simulated by calling vm_fault the
 * way trap.c does; what a program would read is read through the page
 * tables (vm_translate). Covers 2 MiB pages: when they are made, and every
 * operation that splits, moves, copies or frees them; and the page tables
 * (and pages) kept for the next process running the same program.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bootinfo.h"
#include "mm.h"
#include "pmem.h"
#include "vm.h"
#include "../../guest-kernel/libos/mm/vm_pt.h"

#define MIB (1ULL << 20)
#define RAM (64 * MIB)
#define RW  (PROT_READ | PROT_WRITE)
/* A lazy mapping's place: 2 MiB-aligned, like most of what mmap returns. */
#define BASE 0x40000000ULL

static uint8_t *ram;
char __libos_text_start[1], __libos_phys_delta[1];
static struct aspace *as;
static size_t free_at_start;

/* The library OS's services this code uses. */
/* No PID namespace bounds memory here (pidns.c's, tested in cases/pidns.sh). */
bool pidns_mem_ok(size_t npages)
{
	return true;
}

void kpanic(const char *fmt, ...)
{
	ck_abort_msg("kpanic: %s", fmt);
	abort();
}

void kprintf(const char *fmt, ...)
{
}

void *kmalloc(size_t n)
{
	return malloc(n);
}

void *kzalloc(size_t n)
{
	return calloc(1, n);
}

void kfree(void *p)
{
	free(p);
}

/* aspace_activate's timer deadline (sched.c); the tests switch no CR3. */
uint64_t sched_timer_take(void)
{
	return 0;
}

/* The supervisor's CR3 load (libos/core/entry.S): no address space here is
 * ever the active one, so neither a switch nor a flush may reach it. */
void sv_load_cr3(uint64_t root)
{
	ck_abort_msg("CR3 load of %#llx on the host", (unsigned long long)root);
}

/* The VMM's side: the chunks asked for, in order. */
static uint64_t populated[64], populated_len[64];
static unsigned npopulated;

void host_populate(uint64_t pa, uint64_t len)
{
	ck_assert(len == PMEM_POP_CHUNK * 4096 || len == PMEM_POP_SMALL * 4096);
	ck_assert_uint_eq(pa % len, 0);
	if (npopulated < 64) {
		populated[npopulated] = pa;
		populated_len[npopulated] = len;
	}
	npopulated++;
}

/* KILN_PORT_RAM: times asked. */
static unsigned nonline;

void host_ram_online(void)
{
	nonline++;
}

/* RAM usable before the guest asks for the rest (kiln,early-ram-end), in
 * the tests of it; 0: all at once. */
#define EARLY (16 * MIB)
static uint64_t early_end;

static uint64_t boot_pml4;

static void setup(void)
{
	struct bootinfo bi = {.nr_ram = 1, .ram = {{0, RAM}}, .early_ram_end = early_end};

	ram = mmap(NULL, RAM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(ram, MAP_FAILED);
	kiln_hosted_ram = (uintptr_t)ram;
	nonline = 0;
	pmem_init(&bi);
	bi.pml4 = boot_pml4 = pmem_alloc(true); /* the boot page tables: no upper half here */
	vm_init(&bi);
	vm_thp = VM_THP_FILL;
	free_at_start = pmem_free_pages();
	as = aspace_create();
	ck_assert_ptr_nonnull(as);
}

static void teardown(void)
{
	if (as)
		aspace_release(as);
	munmap(ram, RAM);
	early_end = 0;
}

static void setup_late(void)
{
	early_end = EARLY;
	setup();
}

static uint8_t *byte_at(struct aspace *a, uint64_t va)
{
	uint64_t pa = vm_translate(a, va);

	return pa == ~0ULL ? NULL : ram + pa;
}

/* A program's write of val at va: a fault first if nothing is there. */
static void poke(uint64_t va, uint8_t val)
{
	if (!byte_at(as, va))
		ck_assert_int_eq(vm_fault(as, va, PF_WRITE), 0);
	*byte_at(as, va) = val;
}

/* What a program reads at va; -1 if it is not mapped (yet). */
static int peek(struct aspace *a, uint64_t va)
{
	uint8_t *p = byte_at(a, va);

	return p ? *p : -1;
}

static bool writable(uint64_t va)
{
	uint64_t size, *e = pt_leaf(as, va, &size);

	ck_assert_ptr_nonnull(e);
	return *e & PTE_W;
}

/* Map len bytes lazily at BASE + off and fill the first fill bytes front
 * to back, one write per page (page i gets i & 0xff). */
static void map_and_fill(uint64_t off, uint64_t len, uint64_t fill)
{
	ck_assert_int_eq(vm_map_anon(as, BASE + off, len, RW, VMA_ANON | VMA_LAZY), 0);
	for (uint64_t a = 0; a < fill; a += PAGE_SIZE)
		poke(BASE + off + a, (uint8_t)(a / PAGE_SIZE));
}

static void check_fill(uint64_t start, uint64_t len, uint64_t first)
{
	for (uint64_t a = 0; a < len; a += PAGE_SIZE)
		ck_assert_int_eq(peek(as, start + a), (uint8_t)((first + a) / PAGE_SIZE));
}

/* ------------------------------------------------------------ page allocator */

START_TEST(huge_blocks_from_the_top)
{
	size_t before = pmem_free_pages();
	uint64_t a = pmem_alloc_huge(true), b = pmem_alloc_huge(true);

	ck_assert_uint_eq(a, RAM - HUGE_SIZE);
	ck_assert_uint_eq(b, RAM - 2 * HUGE_SIZE);
	ck_assert_uint_eq(pmem_free_pages(), before - 2 * HUGE_PAGES);
	/* The pieces of a block go back one by one (a split mapping). */
	for (unsigned i = 0; i < HUGE_PAGES; i++)
		pmem_free(a + i * PAGE_SIZE);
	pmem_free_huge(b);
	ck_assert_uint_eq(pmem_free_pages(), before);
}
END_TEST

START_TEST(huge_block_reuse_is_zeroed)
{
	uint64_t a = pmem_alloc_huge(false), b;

	memset(ram + a, 0xab, HUGE_SIZE);
	pmem_free_huge(a);
	b = pmem_alloc_huge(true);
	ck_assert_uint_eq(b, a); /* recently freed blocks first */
	for (uint64_t i = 0; i < HUGE_SIZE; i += 509)
		ck_assert_int_eq(ram[b + i], 0);
	pmem_free_huge(b);
}
END_TEST

/* Runs of frames for kmalloc: the lowest free run with the alignment,
 * found past whole words of used frames and past holes too small. */
START_TEST(contig_first_fit)
{
	uint64_t pa[300], end, huge, quad;

	for (int i = 0; i < 300; i++) {
		pa[i] = pmem_alloc(false);
		if (i)
			ck_assert_uint_eq(pa[i], pa[i - 1] + PAGE_SIZE);
	}
	end = pa[299] + PAGE_SIZE; /* everything above is free */
	pmem_free(pa[20]);
	pmem_free(pa[150]);
	pmem_free(pa[151]);
	ck_assert_uint_eq(pmem_alloc_contig(2, 1, false), pa[150]);
	ck_assert_uint_eq(pmem_alloc_contig(1, 1, false), pa[20]);
	huge = pmem_alloc_contig(1, HUGE_PAGES, false);
	ck_assert_uint_eq(huge, ALIGN_UP(end, HUGE_SIZE));
	quad = ALIGN_UP(end, 64 * PAGE_SIZE);
	ck_assert_uint_eq(pmem_alloc_contig(4, 64, false),
	                  quad == huge ? quad + 64 * PAGE_SIZE : quad);
}
END_TEST

/* The first frame handed out of an aligned chunk of fresh ones comes with
 * a request to populate the chunk: of PMEM_POP_SMALL frames while less than
 * 16 MiB are in use, of PMEM_POP_CHUNK once more are; frames used before
 * come without. (first_in_chunk: allocate until a frame starts a chunk of
 * n frames; the requests made until then are the test's to check.) */
static uint64_t first_in_chunk(uint64_t n)
{
	uint64_t pa = 0;

	for (uint64_t i = 0; i < n; i++) {
		pa = pmem_alloc(false);
		if (pa % (n * PAGE_SIZE) == 0)
			break;
	}
	ck_assert_uint_eq(pa % (n * PAGE_SIZE), 0);
	return pa;
}

static void check_chunk(uint64_t n)
{
	uint64_t chunk = n * PAGE_SIZE, pa, reused;
	unsigned before;

	npopulated = 0;
	pa = first_in_chunk(n);
	ck_assert_uint_ge(npopulated, 1);
	ck_assert_uint_eq(populated[npopulated - 1], pa);
	ck_assert_uint_eq(populated_len[npopulated - 1], chunk);
	before = npopulated;
	for (uint64_t i = 1; i < n; i++) /* the rest of the chunk */
		ck_assert_uint_eq(pmem_alloc(false), pa + i * PAGE_SIZE);
	ck_assert_uint_eq(npopulated, before);
	pmem_free(pa);
	reused = pmem_alloc(true);
	ck_assert_uint_eq(reused, pa);
	ck_assert_uint_eq(npopulated, before);
	ck_assert_uint_eq(pmem_alloc(false), pa + chunk);
	ck_assert_uint_eq(npopulated, before + 1);
	ck_assert_uint_eq(populated[before], pa + chunk);
	ck_assert_uint_eq(populated_len[before], chunk);
}

START_TEST(fresh_chunks_populated)
{
	size_t busy = 16 * MIB / PAGE_SIZE;

	check_chunk(PMEM_POP_SMALL);
	while (pmem_total_pages() - pmem_free_pages() < busy)
		ck_assert_uint_ne(pmem_alloc(false), 0);
	check_chunk(PMEM_POP_CHUNK);
}
END_TEST

START_TEST(huge_blocks_only_while_plentiful)
{
	uint64_t pa;
	unsigned n = 0;

	while ((pa = pmem_alloc_huge(false)))
		n++;
	ck_assert_uint_gt(n, 20);
	/* What is left: more than 1/16 of RAM, for single pages. */
	ck_assert_uint_ge(pmem_free_pages(), pmem_total_pages() / 16);
	ck_assert_uint_ne(pmem_alloc_user(false), 0);
}
END_TEST

/* ------------------------------------------------------------ RAM that comes late */

/* All of RAM counts from the start: page 0 and the two pages of bitmaps
 * (3 bits a frame) are all that is not free. */
START_TEST(late_ram_counted_from_the_start)
{
	ck_assert_uint_eq(pmem_total_pages(), RAM / PAGE_SIZE - 3);
	ck_assert_uint_gt(pmem_free_pages(), (RAM - EARLY) / PAGE_SIZE);
	ck_assert_uint_eq(nonline, 0);
}
END_TEST

/* Single pages come from the early RAM until none is left, then the VMM
 * is asked once and the rest of RAM is handed out too; every page is
 * accounted for. */
START_TEST(late_ram_asked_for_when_early_runs_out)
{
	size_t n = 0, free = pmem_free_pages();
	uint64_t pa;

	while ((pa = pmem_alloc(false)) && !nonline) {
		ck_assert_uint_lt(pa, EARLY);
		n++;
	}
	ck_assert_uint_eq(nonline, 1);
	ck_assert_uint_ge(pa, EARLY);
	ck_assert_uint_gt(n, (EARLY - MIB) / PAGE_SIZE);
	n++;
	while (pmem_alloc(false))
		n++;
	ck_assert_uint_eq(nonline, 1);
	ck_assert_uint_eq(n, free);
	ck_assert_uint_eq(pmem_free_pages(), 0);
}
END_TEST

/* 2 MiB blocks come from the top of the early RAM first, from the top of
 * RAM once the early RAM has none. */
START_TEST(late_ram_huge_blocks)
{
	uint64_t pa = pmem_alloc_huge(false);

	ck_assert_uint_eq(pa, EARLY - HUGE_SIZE);
	while ((pa = pmem_alloc_huge(false)) && !nonline)
		ck_assert_uint_lt(pa, EARLY);
	ck_assert_uint_eq(nonline, 1);
	ck_assert_uint_eq(pa, RAM - HUGE_SIZE);
}
END_TEST

/* A run longer than the early RAM holds: it reaches into the rest. */
START_TEST(late_ram_for_a_long_run)
{
	uint64_t pa = pmem_alloc_contig(EARLY / PAGE_SIZE, 1, true);

	ck_assert_uint_eq(nonline, 1);
	ck_assert_uint_ne(pa, 0);
	ck_assert_uint_eq(pmem_alloc_contig(EARLY / PAGE_SIZE, 1, true), pa + EARLY);
	ck_assert_uint_eq(nonline, 1);
}
END_TEST

/* ------------------------------------------------------------ when huge pages are made */

START_TEST(fill_promotes)
{
	uint64_t pa0;

	map_and_fill(0, 8 * MIB, PAGE_SIZE);
	ck_assert_uint_eq(as->nr_pages, FAULT_AROUND / PAGE_SIZE); /* a window, no page below */
	ck_assert_uint_eq(as->nr_huge, 0);
	/* The next window: memory is being filled. The window's pages move
	 * into the new huge page. */
	poke(BASE + FAULT_AROUND, 7);
	ck_assert_uint_eq(as->nr_huge, 1);
	ck_assert_uint_eq(as->nr_pages, HUGE_PAGES);
	ck_assert_int_eq(peek(as, BASE), 0);
	ck_assert_int_eq(peek(as, BASE + FAULT_AROUND), 7);
	pa0 = vm_translate(as, BASE);
	ck_assert_uint_eq(pa0 % HUGE_SIZE, 0);
	ck_assert_uint_eq(vm_translate(as, BASE + HUGE_SIZE - 1), pa0 + HUGE_SIZE - 1);
	/* The next 2 MiB: huge at the first touch. */
	poke(BASE + HUGE_SIZE, 1);
	ck_assert_uint_eq(as->nr_huge, 2);
	ck_assert_uint_eq(as->nr_pages, 2 * HUGE_PAGES);
	map_and_fill(16 * MIB, 8 * MIB, 8 * MIB);
	check_fill(BASE + 16 * MIB, 8 * MIB, 0);
	ck_assert_uint_eq(as->nr_huge, 6);
}
END_TEST

START_TEST(sparse_touches_stay_small)
{
	ck_assert_int_eq(vm_map_anon(as, BASE, 64 * MIB, RW, VMA_ANON | VMA_LAZY), 0);
	for (uint64_t a = 0; a < 64 * MIB; a += MIB)
		poke(BASE + a, 1);
	ck_assert_uint_eq(as->nr_huge, 0);
	ck_assert_uint_eq(as->nr_pages, 64 * FAULT_AROUND / PAGE_SIZE);
}
END_TEST

START_TEST(policy_always_and_never)
{
	vm_thp = VM_THP_ALWAYS;
	map_and_fill(0, 4 * MIB, PAGE_SIZE);
	ck_assert_uint_eq(as->nr_huge, 1);
	vm_thp = VM_THP_NEVER;
	map_and_fill(8 * MIB, 4 * MIB, 4 * MIB);
	ck_assert_uint_eq(as->nr_huge, 1);
	ck_assert_uint_eq(as->nr_pages, HUGE_PAGES + 4 * MIB / PAGE_SIZE);
}
END_TEST

START_TEST(only_whole_aligned_regions)
{
	/* 3 MiB from 1 MiB: no aligned 2 MiB inside. */
	map_and_fill(MIB, 3 * MIB - PAGE_SIZE, 3 * MIB - PAGE_SIZE);
	ck_assert_uint_eq(as->nr_huge, 0);
	/* Eager memory is never huge. */
	ck_assert_int_eq(vm_map_anon(as, BASE + 8 * MIB, 4 * MIB, RW, VMA_ANON), 0);
	ck_assert_uint_eq(as->nr_huge, 0);
}
END_TEST

START_TEST(adjacent_mappings_share_one)
{
	/* Two 1 MiB arenas side by side, filled one after the other. */
	map_and_fill(MIB, MIB, MIB);
	ck_assert_int_eq(vm_map_anon(as, BASE, MIB, RW, VMA_ANON | VMA_LAZY), 0);
	for (uint64_t a = 0; a < MIB; a += PAGE_SIZE)
		poke(BASE + a, 0xee);
	ck_assert_uint_eq(as->nr_huge, 1);
	check_fill(BASE + MIB, MIB, 0);
	/* Unmapping one arena splits the page; the other keeps its bytes. */
	ck_assert_int_eq(vm_unmap(as, BASE + MIB, MIB), 0);
	ck_assert_uint_eq(as->nr_huge, 0);
	ck_assert_uint_eq(as->nr_pages, MIB / PAGE_SIZE);
	ck_assert_int_eq(peek(as, BASE + MIB - PAGE_SIZE), 0xee);
	ck_assert_int_eq(peek(as, BASE + MIB), -1);
}
END_TEST

START_TEST(different_protection_blocks_it)
{
	ck_assert_int_eq(vm_map_anon(as, BASE, MIB, PROT_READ, VMA_ANON | VMA_LAZY), 0);
	map_and_fill(MIB, 3 * MIB, 3 * MIB);
	/* [0, 2M) mixes protections; [2M, 4M) is one mapping. */
	ck_assert_uint_eq(as->nr_huge, 1);
	ck_assert_uint_eq(vm_translate(as, BASE + HUGE_SIZE) % HUGE_SIZE, 0);
}
END_TEST

START_TEST(exhaustion_falls_back_to_small_pages)
{
	uint64_t a;
	int err = 0;

	vm_thp = VM_THP_ALWAYS;
	ck_assert_int_eq(vm_map_anon(as, BASE, 2 * RAM, RW, VMA_ANON | VMA_LAZY), 0);
	for (a = 0; a < 2 * RAM && !err; a += PAGE_SIZE)
		if (!byte_at(as, BASE + a))
			err = vm_fault(as, BASE + a, PF_WRITE);
	ck_assert_int_eq(err, -ENOMEM);
	ck_assert_uint_gt(as->nr_huge, 0);
	ck_assert_uint_gt(as->nr_pages, as->nr_huge * HUGE_PAGES); /* then 4 KiB ones */
	ck_assert_int_eq(vm_unmap(as, BASE, 2 * RAM), 0);
	ck_assert_uint_eq(as->nr_pages, 0);
	ck_assert_uint_ne(pmem_alloc_huge(false), 0);
}
END_TEST

START_TEST(kernel_write_into_lazy_memory)
{
	vm_thp = VM_THP_ALWAYS;
	ck_assert_int_eq(vm_map_anon(as, BASE, 4 * MIB, RW, VMA_ANON | VMA_LAZY), 0);
	ck_assert_uint_ne(vm_translate_write(as, BASE + 5000), ~0ULL);
	ck_assert_uint_eq(as->nr_huge, 1);
}
END_TEST

/* ------------------------------------------------------------ operations on part of one */

START_TEST(munmap_part_splits)
{
	map_and_fill(0, 4 * MIB, 4 * MIB);
	ck_assert_uint_eq(as->nr_huge, 2);
	ck_assert_int_eq(vm_unmap(as, BASE + 8 * PAGE_SIZE, PAGE_SIZE), 0);
	ck_assert_uint_eq(as->nr_huge, 1);
	ck_assert_uint_eq(as->nr_pages, 2 * HUGE_PAGES - 1);
	ck_assert_int_eq(peek(as, BASE + 8 * PAGE_SIZE), -1);
	ck_assert_ptr_null(vm_find_vma(as, BASE + 8 * PAGE_SIZE));
	check_fill(BASE, 8 * PAGE_SIZE, 0);
	check_fill(BASE + 9 * PAGE_SIZE, 4 * MIB - 9 * PAGE_SIZE, 9 * PAGE_SIZE);
	/* A range of whole huge pages and pieces. */
	ck_assert_int_eq(vm_unmap(as, BASE, 4 * MIB), 0);
	ck_assert_uint_eq(as->nr_pages, 0);
	ck_assert_uint_eq(as->nr_huge, 0);
}
END_TEST

/* A page function's VM_NO_PAGE (a file's end inside the mapping) leaves
 * the page unmapped, taking away what was mapped there before. */
static uint64_t two_then_none(void *ctx, uint64_t i)
{
	return i < 2 ? 0 : VM_NO_PAGE;
}

START_TEST(no_page_past_the_end)
{
	ck_assert_int_eq(vm_map_anon(as, BASE, 4 * PAGE_SIZE, RW, VMA_ANON), 0);
	poke(BASE + PAGE_SIZE, 'a');
	poke(BASE + 3 * PAGE_SIZE, 'b');
	ck_assert_uint_eq(as->nr_pages, 4);
	ck_assert_int_eq(vm_map_pages(as, BASE, 4 * PAGE_SIZE, RW, VMA_ANON, two_then_none, NULL),
	                 0);
	ck_assert_int_eq(peek(as, BASE), 0);
	ck_assert_int_eq(peek(as, BASE + PAGE_SIZE), 0); /* a page of its own, zeroed */
	ck_assert_int_eq(peek(as, BASE + 2 * PAGE_SIZE), -1);
	ck_assert_int_eq(peek(as, BASE + 3 * PAGE_SIZE), -1);
	ck_assert_uint_eq(as->nr_pages, 2);
	ck_assert_ptr_nonnull(vm_find_vma(as, BASE + 3 * PAGE_SIZE)); /* the mapping is whole */
	ck_assert_int_eq(vm_unmap(as, BASE, 4 * PAGE_SIZE), 0);
	ck_assert_uint_eq(as->nr_pages, 0);
	aspace_release(as);
	as = NULL;
	ck_assert_uint_eq(pmem_free_pages(), free_at_start);
}
END_TEST

START_TEST(mprotect_whole_and_part)
{
	map_and_fill(0, 4 * MIB, 4 * MIB);
	ck_assert_int_eq(vm_protect(as, BASE, 2 * MIB, PROT_READ), 0);
	ck_assert_uint_eq(as->nr_huge, 2);
	ck_assert(!writable(BASE));
	ck_assert(writable(BASE + 2 * MIB));
	ck_assert_int_eq(vm_protect(as, BASE + 3 * MIB, PAGE_SIZE, PROT_READ), 0);
	ck_assert_uint_eq(as->nr_huge, 1);
	ck_assert(!writable(BASE + 3 * MIB));
	ck_assert(writable(BASE + 3 * MIB + PAGE_SIZE));
	ck_assert(writable(BASE + 3 * MIB - PAGE_SIZE));
	check_fill(BASE, 4 * MIB, 0);
	/* A write fault where the mapping does not allow it is the program's. */
	ck_assert_int_eq(vm_fault(as, BASE + 3 * MIB, PF_PRESENT | PF_WRITE), -EFAULT);
}
END_TEST

START_TEST(dontneed_part_and_whole)
{
	map_and_fill(0, 4 * MIB, 4 * MIB);
	vm_discard(as, BASE + PAGE_SIZE, 2 * PAGE_SIZE);
	ck_assert_uint_eq(as->nr_huge, 1);
	ck_assert_uint_eq(as->nr_pages, 2 * HUGE_PAGES - 2);
	ck_assert_int_eq(peek(as, BASE + PAGE_SIZE), -1); /* reads zero: a fresh page */
	ck_assert_int_eq(peek(as, BASE), 0);
	ck_assert_int_eq(peek(as, BASE + 3 * PAGE_SIZE), 3);
	vm_discard(as, BASE + 2 * MIB, 2 * MIB);
	ck_assert_uint_eq(as->nr_huge, 0);
	ck_assert_uint_eq(as->nr_pages, HUGE_PAGES - 2);
	ck_assert_int_eq(peek(as, BASE + 2 * MIB), -1);
	ck_assert_ptr_nonnull(vm_find_vma(as, BASE + 2 * MIB));
}
END_TEST

START_TEST(mremap_moves_whole_or_split)
{
	uint64_t pa, to = BASE + 64 * MIB;

	map_and_fill(0, 4 * MIB, 4 * MIB);
	pa = vm_translate(as, BASE);
	/* A 2 MiB-aligned distance: the pages move as they are. */
	ck_assert_int_eq(vm_map_anon(as, to, 4 * MIB, RW, VMA_ANON | VMA_LAZY), 0);
	ck_assert_int_eq(vm_move_pages(as, BASE, to, 4 * MIB), 0);
	ck_assert_uint_eq(as->nr_huge, 2);
	ck_assert_uint_eq(vm_translate(as, to), pa);
	ck_assert_int_eq(peek(as, BASE), -1);
	/* Any other distance: split on the way. */
	ck_assert_int_eq(vm_map_anon(as, BASE + PAGE_SIZE, 4 * MIB, RW, VMA_ANON | VMA_LAZY), 0);
	ck_assert_int_eq(vm_move_pages(as, to, BASE + PAGE_SIZE, 4 * MIB), 0);
	ck_assert_uint_eq(as->nr_huge, 0);
	ck_assert_uint_eq(as->nr_pages, 2 * HUGE_PAGES);
	check_fill(BASE + PAGE_SIZE, 4 * MIB, 0);
	/* Part of one: split at the edge, the rest stays. */
	vm_thp = VM_THP_ALWAYS;
	map_and_fill(32 * MIB, 2 * MIB, 2 * MIB);
	ck_assert_int_eq(vm_map_anon(as, to, MIB, RW, VMA_ANON | VMA_LAZY), 0);
	ck_assert_int_eq(vm_move_pages(as, BASE + 32 * MIB, to, MIB), 0);
	check_fill(to, MIB, 0);
	check_fill(BASE + 33 * MIB, MIB, MIB);
	ck_assert_int_eq(peek(as, BASE + 32 * MIB), -1);
}
END_TEST

START_TEST(map_fixed_over_part)
{
	map_and_fill(0, 2 * MIB, 2 * MIB);
	ck_assert_int_eq(vm_map_anon(as, BASE + MIB, 64 * 1024, RW, VMA_ANON), 0);
	ck_assert_uint_eq(as->nr_huge, 0);
	ck_assert_int_eq(peek(as, BASE + MIB), 0); /* fresh and zero */
	check_fill(BASE + MIB + 64 * 1024, MIB - 64 * 1024, MIB + 64 * 1024);
}
END_TEST

/* ------------------------------------------------------------ fork and exit */

START_TEST(fork_copies_huge_pages)
{
	struct aspace *child;

	map_and_fill(0, 4 * MIB, 4 * MIB);
	child = aspace_copy(as);
	ck_assert_ptr_nonnull(child);
	ck_assert_uint_eq(child->nr_huge, 2);
	ck_assert_uint_eq(child->nr_pages, as->nr_pages);
	ck_assert_uint_ne(vm_translate(child, BASE), vm_translate(as, BASE));
	for (uint64_t a = 0; a < 4 * MIB; a += PAGE_SIZE)
		ck_assert_int_eq(peek(child, BASE + a), peek(as, BASE + a));
	aspace_release(child);
}
END_TEST

START_TEST(fork_without_huge_blocks_copies_pages)
{
	struct aspace *child;
	uint64_t keep = HUGE_PAGES + 64;

	map_and_fill(0, 2 * MIB, 2 * MIB);
	ck_assert_uint_eq(as->nr_huge, 1);
	/* Use up memory until a single page copy still fits, a huge one not. */
	while (pmem_free_pages() > keep + MAX(pmem_total_pages() / 64, 256))
		ck_assert_uint_ne(pmem_alloc(false), 0);
	child = aspace_copy(as);
	ck_assert_ptr_nonnull(child);
	ck_assert_uint_eq(child->nr_huge, 0);
	ck_assert_uint_eq(child->nr_pages, HUGE_PAGES);
	for (uint64_t a = 0; a < 2 * MIB; a += PAGE_SIZE)
		ck_assert_int_eq(peek(child, BASE + a), peek(as, BASE + a));
	aspace_release(child);
}
END_TEST

START_TEST(exit_frees_everything)
{
	struct aspace *child;

	map_and_fill(0, 8 * MIB, 8 * MIB);
	ck_assert_int_eq(vm_unmap(as, BASE + 3 * MIB, PAGE_SIZE), 0); /* one split */
	child = aspace_copy(as);
	ck_assert_ptr_nonnull(child);
	aspace_release(child);
	aspace_release(as);
	as = NULL;
	ck_assert_uint_eq(pmem_free_pages(), free_at_start);
}
END_TEST

/* The first address space (init's) runs on the boot page tables; the
 * root page is not ours to free, the user tables under it are. */
START_TEST(first_aspace_takes_the_boot_tables)
{
	struct aspace *second = aspace_create();

	ck_assert_ptr_nonnull(second);
	ck_assert_uint_eq(as->root, boot_pml4);
	ck_assert_uint_ne(second->root, boot_pml4);
	aspace_release(second);
	map_and_fill(0, 4 * MIB, 4 * MIB);
	aspace_release(as);
	as = NULL;
	ck_assert_uint_eq(pmem_free_pages(), free_at_start);
}
END_TEST

/* ---- page tables (and pages) kept for the next run of a program */

#define PROG 0x400000ULL

static uint64_t image_page(void *ctx, uint64_t i)
{
	return *(uint64_t *)ctx;
}

/* The end of a kept-tables test: kept trees, the image page and the test's
 * address space given back, and nothing lost on the way. */
static void end_keep_test(uint64_t img)
{
	keep_shrink();
	pmem_free(img);
	aspace_release(as);
	as = NULL;
	ck_assert_uint_eq(pmem_free_pages(), free_at_start);
}

/* A process running "program" img: its code page (borrowed from the
 * image) at PROG, its own data page after it holding val. */
static struct aspace *run_program(uint64_t img, uint8_t val)
{
	struct aspace *a = aspace_create();

	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(
	    vm_map_pages(a, PROG, PAGE_SIZE, PROT_READ | PROT_EXEC, 0, image_page, &img), 0);
	ck_assert_int_eq(vm_map_anon(a, PROG + PAGE_SIZE, PAGE_SIZE, RW, 0), 0);
	*byte_at(a, PROG + PAGE_SIZE) = val;
	return a;
}

START_TEST(kept_tables_and_pages_are_reused)
{
	uint64_t img = pmem_alloc(true), root, data;
	struct aspace *a = run_program(img, 'A'), *b;

	ram[img] = 'I';
	root = a->root;
	data = vm_translate(a, PROG + PAGE_SIZE);
	aspace_release(a); /* kept, with its data page */
	b = run_program(img, 'B');
	ck_assert_int_eq(vm_map_anon(b, PROG + 2 * PAGE_SIZE, PAGE_SIZE, RW, 0), 0);
	ck_assert_uint_ne(b->root, root);
	aspace_keep_tables(b);
	ck_assert_uint_eq(b->root, root);
	ck_assert_uint_eq(vm_translate(b, PROG + PAGE_SIZE), data);
	ck_assert_int_eq(peek(b, PROG + PAGE_SIZE), 'B');
	ck_assert_int_eq(peek(b, PROG), 'I');
	ck_assert_int_eq(peek(b, PROG + 2 * PAGE_SIZE), 0);
	ck_assert_uint_eq(vm_translate_own(b, PROG), 0); /* borrowed */
	aspace_release(b);
	end_keep_test(img);
}
END_TEST

START_TEST(kept_only_for_the_same_program)
{
	uint64_t img1 = pmem_alloc(true), img2 = pmem_alloc(true), root;
	struct aspace *a = run_program(img1, 'A'), *b;

	root = a->root;
	aspace_release(a);
	b = run_program(img2, 'B');
	aspace_keep_tables(b);
	ck_assert_uint_ne(b->root, root);
	ck_assert_int_eq(peek(b, PROG + PAGE_SIZE), 'B');
	aspace_release(b);
	keep_shrink();
	pmem_free(img1);
	pmem_free(img2);
	aspace_release(as);
	as = NULL;
	ck_assert_uint_eq(pmem_free_pages(), free_at_start);
}
END_TEST

/* exec's way: the kept tree is taken once the program is known (its
 * first image page mapped), and its data page is filled in place. */
static struct aspace *load_program(uint64_t img)
{
	struct aspace *a = aspace_create();

	ck_assert_ptr_nonnull(a);
	aspace_keep_seek(a);
	ck_assert_int_eq(
	    vm_map_pages(a, PROG, PAGE_SIZE, PROT_READ | PROT_EXEC, 0, image_page, &img), 0);
	ck_assert_int_eq(vm_map_anon(a, PROG + PAGE_SIZE, PAGE_SIZE, RW, 0), 0);
	return a;
}

START_TEST(load_fills_kept_pages_in_place)
{
	uint64_t img = pmem_alloc(true), root, data, *pte;
	struct aspace *a = run_program(img, 'A'), *b;
	size_t free_before;

	root = a->root;
	data = vm_translate(a, PROG + PAGE_SIZE);
	aspace_release(a);
	free_before = pmem_free_pages();
	b = load_program(img);
	ck_assert_uint_eq(vm_translate(b, PROG + PAGE_SIZE), data);
	ck_assert_int_eq(peek(b, PROG + PAGE_SIZE), 0); /* zeroed, not A's */
	ck_assert_uint_ne(b->root, root);
	aspace_keep_tables(b);
	ck_assert_uint_eq(b->root, root);
	/* Only the new tables were taken (and given back): no page. */
	ck_assert_uint_eq(pmem_free_pages(), free_before);
	pte = pt_walk(b, PROG + PAGE_SIZE, false);
	ck_assert_ptr_nonnull(pte);
	ck_assert_uint_eq(*pte & (PTE_ADDR | PTE_ADOPTED), data);
	aspace_release(b);
	end_keep_test(img);
}
END_TEST

/* An exec that fails after it took the kept tree: the tree comes out
 * whole (its page neither lost nor freed twice) and serves the next run. */
START_TEST(failed_load_leaves_the_kept_tree_whole)
{
	uint64_t img = pmem_alloc(true), root, data;
	struct aspace *a = run_program(img, 'A'), *b;

	root = a->root;
	data = vm_translate(a, PROG + PAGE_SIZE);
	aspace_release(a);
	b = load_program(img);
	ck_assert_uint_eq(vm_translate(b, PROG + PAGE_SIZE), data);
	aspace_release(b); /* failed */
	b = load_program(img);
	ck_assert_uint_eq(vm_translate(b, PROG + PAGE_SIZE), data);
	/* Failed after it unmapped the page: the tree keeps (and owns) no page there. */
	ck_assert_int_eq(vm_unmap(b, PROG + PAGE_SIZE, PAGE_SIZE), 0);
	aspace_release(b);
	b = load_program(img);
	ck_assert_uint_ne(vm_translate(b, PROG + PAGE_SIZE), ~0ULL);
	ck_assert_int_eq(peek(b, PROG + PAGE_SIZE), 0);
	aspace_keep_tables(b);
	ck_assert_uint_eq(b->root, root);
	aspace_release(b);
	end_keep_test(img);
}
END_TEST

/* The heap's empty table, next to the program's, stays for the next run;
 * a table far from what the new process maps goes. */
START_TEST(kept_table_next_to_the_program_stays)
{
	uint64_t img = pmem_alloc(true), *pde;
	struct aspace *a = run_program(img, 'A'), *b;

	ck_assert_int_eq(vm_map_anon(a, PROG + HUGE_SIZE, PAGE_SIZE, RW, 0), 0);
	ck_assert_int_eq(vm_map_anon(a, BASE, PAGE_SIZE, RW, 0), 0);
	aspace_release(a);
	b = load_program(img);
	aspace_keep_tables(b);
	ck_assert_int_eq(peek(b, PROG + HUGE_SIZE), -1);
	pde = pt_pde(b, PROG + HUGE_SIZE, false);
	ck_assert(pde && (*pde & PTE_P));
	ck_assert_ptr_null(pt_pde(b, BASE, false));
	ck_assert_int_eq(vm_map_anon(b, PROG + HUGE_SIZE, PAGE_SIZE, RW, 0), 0);
	aspace_release(b);
	end_keep_test(img);
}
END_TEST

START_TEST(fork_takes_over_a_dead_childs_tables)
{
	uint64_t img = pmem_alloc(true), root, data;
	struct aspace *parent = run_program(img, 'P'), *child;

	child = aspace_copy(parent);
	root = child->root;
	data = vm_translate(child, PROG + PAGE_SIZE);
	aspace_release(child);
	child = aspace_copy(parent);
	ck_assert_uint_eq(child->root, root);
	ck_assert_uint_eq(vm_translate(child, PROG + PAGE_SIZE), data); /* copied in place */
	ck_assert_int_eq(peek(child, PROG + PAGE_SIZE), 'P');
	ck_assert_uint_ne(vm_translate(child, PROG + PAGE_SIZE),
	                  vm_translate(parent, PROG + PAGE_SIZE));
	aspace_release(child);
	aspace_release(parent);
	end_keep_test(img);
}
END_TEST

/* A dead process's page where the new one maps nothing yet (its heap)
 * stays dormant: no access reaches it, and it comes back zeroed. */
START_TEST(dead_heap_page_comes_back_zeroed)
{
	uint64_t img = pmem_alloc(true), heap = PROG + 2 * PAGE_SIZE, pa, *pte;
	struct aspace *a = run_program(img, 'A'), *b;

	ck_assert_int_eq(vm_map_anon(a, heap, PAGE_SIZE, RW, 0), 0);
	memset(byte_at(a, heap), 'S', PAGE_SIZE);
	pa = vm_translate(a, heap);
	aspace_release(a);
	b = load_program(img);
	aspace_keep_tables(b);
	pte = pt_walk(b, heap, false);
	ck_assert(pte && pte_dormant(*pte) && (*pte & PTE_ADDR) == pa);
	ck_assert_int_eq(peek(b, heap), -1);
	ck_assert_uint_eq(vm_translate_own(b, heap), ~0ULL);
	ck_assert_int_eq(vm_fault(b, heap, 0), -EFAULT); /* no mapping there */
	ck_assert_int_eq(vm_map_anon(b, heap, PAGE_SIZE, RW, 0), 0);
	ck_assert_uint_eq(vm_translate(b, heap), pa);
	for (unsigned i = 0; i < PAGE_SIZE; i++)
		ck_assert_int_eq(ram[pa + i], 0);
	aspace_release(b);
	end_keep_test(img);
}
END_TEST

/* Dormant pages are freed with the address space, or when something else
 * is mapped over them. */
START_TEST(dormant_pages_are_freed)
{
	uint64_t img = pmem_alloc(true), other = pmem_alloc(true);
	struct aspace *a = run_program(img, 'A'), *b;

	ck_assert_int_eq(vm_map_anon(a, PROG + 2 * PAGE_SIZE, 2 * PAGE_SIZE, RW, 0), 0);
	aspace_release(a);
	b = load_program(img);
	aspace_keep_tables(b);
	ck_assert(pte_dormant(*pt_walk(b, PROG + 2 * PAGE_SIZE, false)));
	ck_assert_int_eq(
	    vm_map_pages(b, PROG + 2 * PAGE_SIZE, PAGE_SIZE, PROT_READ, 0, image_page, &other), 0);
	ck_assert_int_eq(peek(b, PROG + 2 * PAGE_SIZE), 0);
	ck_assert(pte_dormant(*pt_walk(b, PROG + 3 * PAGE_SIZE, false)));
	/* No image page left at PROG: not kept, freed at once. */
	ck_assert_int_eq(vm_unmap(b, PROG, PAGE_SIZE), 0);
	aspace_release(b);
	pmem_free(other);
	end_keep_test(img);
}
END_TEST

START_TEST(kept_pages_given_back_when_short)
{
	uint64_t img = pmem_alloc(true);
	size_t before;

	aspace_release(run_program(img, 'A'));
	before = pmem_free_pages();
	ck_assert(!pmem_user_ok(pmem_total_pages())); /* cannot be: but drops what is kept */
	ck_assert_uint_gt(pmem_free_pages(), before);
	pmem_free(img);
	aspace_release(as);
	as = NULL;
	ck_assert_uint_eq(pmem_free_pages(), free_at_start);
}
END_TEST

/* ---- shared mappings (VMA_SHARED): an object's pages in every mapping */

#define OBJ_PAGES 8

/* A stand-in for a tmpfs file: pages made on first use, mappings counted. */
struct fake_obj {
	uint64_t pages[OBJ_PAGES];
	uint64_t npages; /* its size */
	int maps;
};

static int obj_page(void *o, uint64_t idx, uint32_t prot, bool create, uint64_t *pa, bool *borrowed)
{
	struct fake_obj *f = o;

	if (idx >= f->npages)
		return -ERANGE; /* (SIGBUS) */
	if (!f->pages[idx] && create && !(f->pages[idx] = pmem_alloc(true)))
		return -ENOMEM;
	*pa = f->pages[idx];
	return 0;
}

static void obj_get(void *o)
{
	((struct fake_obj *)o)->maps++;
}

static void obj_put(void *o)
{
	ck_assert_int_gt(((struct fake_obj *)o)->maps--, 0);
}

/* A private mapping's copy: page idx reads 'A' + idx. */
static int obj_copy(void *o, uint64_t idx, void *dst)
{
	struct fake_obj *f = o;

	if (idx >= f->npages)
		return -ERANGE;
	memset(dst, 'A' + (int)idx, PAGE_SIZE);
	return 0;
}

static const struct vm_object_ops obj_ops = {
    .page = obj_page, .copy = obj_copy, .get = obj_get, .put = obj_put};

static void obj_free(struct fake_obj *f)
{
	ck_assert_int_eq(f->maps, 0);
	for (unsigned i = 0; i < OBJ_PAGES; i++)
		if (f->pages[i])
			pmem_free(f->pages[i]);
}

START_TEST(shared_mappings_see_each_other)
{
	struct fake_obj f = {.npages = 4};

	ck_assert_int_eq(vm_map_shared(as, BASE, 4 * PAGE_SIZE, RW, 0, &obj_ops, &f, 0, false), 0);
	ck_assert_int_eq(
	    vm_map_shared(as, BASE + MIB, 3 * PAGE_SIZE, RW, 0, &obj_ops, &f, 1, false), 0);
	ck_assert_int_eq(f.maps, 2);
	ck_assert_int_eq(peek(as, BASE + PAGE_SIZE), -1); /* on first touch */
	poke(BASE + PAGE_SIZE + 5, 'x');
	ck_assert_int_eq(peek(as, BASE + MIB + 5), -1);
	ck_assert_int_eq(vm_fault(as, BASE + MIB + 5, 0), 0); /* a read */
	ck_assert_int_eq(peek(as, BASE + MIB + 5), 'x');      /* its page 1 is our page 0 */
	ck_assert_uint_eq(vm_translate(as, BASE + 3 * PAGE_SIZE), f.pages[3]); /* fault-around */
	poke(BASE + MIB + 2 * PAGE_SIZE, 'y');
	ck_assert_int_eq(peek(as, BASE + 3 * PAGE_SIZE), 'y');
	ck_assert_int_eq(vm_fault(as, BASE + 4 * PAGE_SIZE, PF_WRITE), -EFAULT); /* unmapped */
	/* MADV_DONTNEED leaves the object's bytes. */
	vm_discard(as, BASE, 4 * PAGE_SIZE);
	ck_assert_int_eq(peek(as, BASE + PAGE_SIZE + 5), 'x');
	ck_assert_int_eq(vm_unmap(as, BASE, 2 * MIB), 0);
	ck_assert_int_eq(f.maps, 0);
	ck_assert_int_eq(ram[f.pages[1] + 5], 'x'); /* the object's pages stay */
	obj_free(&f);
}
END_TEST

START_TEST(shared_past_the_end_faults)
{
	struct fake_obj f = {.npages = 2};

	ck_assert_int_eq(vm_map_shared(as, BASE, 4 * PAGE_SIZE, RW, 0, &obj_ops, &f, 0, true), 0);
	ck_assert_uint_eq(vm_translate(as, BASE + PAGE_SIZE), f.pages[1]); /* filled */
	ck_assert_int_eq(vm_fault(as, BASE + 2 * PAGE_SIZE, PF_WRITE), -ERANGE);
	ck_assert_int_eq(vm_map_shared(as, BASE, PAGE_SIZE, RW, 0, &obj_ops, &f, UINT64_MAX, false),
	                 -EINVAL);
	ck_assert_int_eq(vm_unmap(as, BASE, 4 * PAGE_SIZE), 0);
	obj_free(&f);
}
END_TEST

START_TEST(fork_shares_shared_pages)
{
	struct fake_obj f = {.npages = 2};
	struct aspace *child;

	ck_assert_int_eq(vm_map_shared(as, BASE, 2 * PAGE_SIZE, RW, 0, &obj_ops, &f, 0, true), 0);
	ck_assert_int_eq(vm_map_anon(as, BASE + MIB, PAGE_SIZE, RW, VMA_ANON), 0);
	poke(BASE + MIB, 'p');
	child = aspace_copy(as);
	ck_assert_ptr_nonnull(child);
	ck_assert_int_eq(f.maps, 2);
	ck_assert_uint_eq(vm_translate(child, BASE), f.pages[0]);
	*byte_at(child, BASE + PAGE_SIZE) = 'c';
	ck_assert_int_eq(peek(as, BASE + PAGE_SIZE), 'c');
	*byte_at(child, BASE + MIB) = 'q'; /* private memory stays private */
	ck_assert_int_eq(peek(as, BASE + MIB), 'p');
	aspace_release(child);
	ck_assert_int_eq(f.maps, 1);
	ck_assert_int_eq(ram[f.pages[1]], 'c');
	aspace_release(as);
	as = NULL;
	ck_assert_int_eq(f.maps, 0);
	obj_free(&f);
	ck_assert_uint_eq(pmem_free_pages(), free_at_start);
}
END_TEST

START_TEST(shared_split_holds_the_object)
{
	struct fake_obj f = {.npages = 4};

	ck_assert_int_eq(vm_map_shared(as, BASE, 4 * PAGE_SIZE, RW, 0, &obj_ops, &f, 0, true), 0);
	ck_assert_int_eq(vm_protect(as, BASE + PAGE_SIZE, PAGE_SIZE, PROT_READ), 0);
	ck_assert_int_eq(f.maps, 3);
	ck_assert(!writable(BASE + PAGE_SIZE));
	ck_assert_uint_eq(vm_translate(as, BASE + PAGE_SIZE), f.pages[1]);
	ck_assert_int_eq(vm_find_vma(as, BASE + 2 * PAGE_SIZE)->pgoff, 2);
	ck_assert_int_eq(vm_unmap(as, BASE + 2 * PAGE_SIZE, PAGE_SIZE), 0); /* a hole */
	ck_assert_int_eq(f.maps, 3);
	ck_assert_int_eq(vm_find_vma(as, BASE + 3 * PAGE_SIZE)->pgoff, 3);
	poke(BASE + 3 * PAGE_SIZE, 'z');
	ck_assert_int_eq(ram[f.pages[3]], 'z');
	ck_assert_int_eq(vm_unmap(as, BASE, 4 * PAGE_SIZE), 0);
	ck_assert_int_eq(f.maps, 0);
	obj_free(&f);
}
END_TEST

START_TEST(shared_read_only_file_stays_so)
{
	struct fake_obj f = {.npages = 1};

	ck_assert_int_eq(
	    vm_map_shared(as, BASE, PAGE_SIZE, PROT_READ, VMA_NOWRITE, &obj_ops, &f, 0, true), 0);
	ck_assert_int_eq(vm_protect(as, BASE, PAGE_SIZE, RW), -EACCES);
	ck_assert_int_eq(vm_fault(as, BASE, PF_WRITE | PF_PRESENT), -EFAULT);
	ck_assert_int_eq(vm_unmap(as, BASE, PAGE_SIZE), 0);
	obj_free(&f);
}
END_TEST

/* A program that mapped shared memory ends; its tables are kept for the
 * next run (vm_keep.c), which must neither free nor reuse the object's
 * pages nor see them. */
START_TEST(kept_tables_leave_shared_pages)
{
	uint64_t img = pmem_alloc(true);
	struct fake_obj f = {.npages = 1};
	struct aspace *a = run_program(img, 'A'), *b;

	ck_assert_int_eq(
	    vm_map_shared(a, PROG + 2 * PAGE_SIZE, PAGE_SIZE, RW, 0, &obj_ops, &f, 0, true), 0);
	ram[f.pages[0]] = 's';
	aspace_release(a);
	ck_assert_int_eq(f.maps, 0);
	b = run_program(img, 'B');
	aspace_keep_tables(b);
	ck_assert_int_eq(peek(b, PROG + 2 * PAGE_SIZE), -1);
	ck_assert_int_eq(ram[f.pages[0]], 's');
	aspace_release(b);
	obj_free(&f);
	end_keep_test(img);
}
END_TEST

/* A truncate (vm_object_cut) takes the pages it cuts off out of every
 * shared mapping in every address space; they come back on a touch. */
START_TEST(shared_cut_unmaps_everywhere)
{
	struct fake_obj f = {.npages = 4};
	struct aspace *child;

	ck_assert_int_eq(vm_map_shared(as, BASE, 4 * PAGE_SIZE, RW, 0, &obj_ops, &f, 0, true), 0);
	ck_assert_int_eq(vm_map_shared(as, BASE + MIB, 2 * PAGE_SIZE, RW, 0, &obj_ops, &f, 2, true),
	                 0);
	child = aspace_copy(as);
	ck_assert_ptr_nonnull(child);
	f.npages = 2;
	vm_object_cut(&f, 2);
	ck_assert_uint_eq(vm_translate(as, BASE + PAGE_SIZE), f.pages[1]); /* kept */
	for (struct aspace *a = as;; a = child) {
		ck_assert_uint_eq(vm_translate(a, BASE + 2 * PAGE_SIZE), ~0ULL);
		ck_assert_uint_eq(vm_translate(a, BASE + 3 * PAGE_SIZE), ~0ULL);
		ck_assert_uint_eq(vm_translate(a, BASE + MIB), ~0ULL); /* its page 0 is 2 */
		ck_assert_uint_eq(vm_translate(a, BASE + MIB + PAGE_SIZE), ~0ULL);
		if (a == child)
			break;
	}
	ck_assert_int_eq(vm_fault(child, BASE + 3 * PAGE_SIZE, 0), -ERANGE); /* past the end */
	f.npages = 4;
	ck_assert_int_eq(vm_fault(child, BASE + 3 * PAGE_SIZE, PF_WRITE), 0);
	ck_assert_uint_eq(vm_translate(child, BASE + 3 * PAGE_SIZE), f.pages[3]);
	aspace_release(child);
	ck_assert_int_eq(vm_unmap(as, BASE, 2 * MIB), 0);
	ck_assert_int_eq(f.maps, 0);
	obj_free(&f);
}
END_TEST

/* A private file mapping (VMA_FILE): no pages past the end, copies read
 * from the object on a touch, taken away by a cut, copied by fork. */
START_TEST(private_file_mapping_follows_its_file)
{
	struct fake_obj f = {.npages = 2};
	struct aspace *child;

	ck_assert_int_eq(vm_map_anon(as, BASE, 4 * PAGE_SIZE, RW, VMA_ANON), 0);
	ck_assert_int_eq(vm_map_file(as, BASE, &obj_ops, &f, 1, 3), 0);
	ck_assert_int_eq(vm_map_file(as, BASE, &obj_ops, &f, 1, 3), -EINVAL); /* has one */
	ck_assert_int_eq(vm_map_file(as, BASE + PAGE_SIZE, &obj_ops, &f, 0, 0), -EINVAL);
	ck_assert_int_eq(f.maps, 1);
	ck_assert_int_eq(peek(as, BASE + PAGE_SIZE), 0);                  /* (map_file's copy) */
	ck_assert_uint_eq(vm_translate(as, BASE + 2 * PAGE_SIZE), ~0ULL); /* file page 3 */
	ck_assert_int_eq(vm_fault(as, BASE + 2 * PAGE_SIZE, PF_WRITE), -ERANGE);
	/* Cut to one page: the copy of its page 1 (our page 0) goes. */
	poke(BASE, 'p');
	f.npages = 1;
	vm_object_cut(&f, 1);
	ck_assert_uint_eq(vm_translate(as, BASE), ~0ULL);
	ck_assert_int_eq(vm_fault(as, BASE, 0), -ERANGE);
	/* Grown again: a touch reads the object's bytes, privately. */
	f.npages = 3;
	ck_assert_int_eq(vm_fault(as, BASE + 5, 0), 0);
	ck_assert_int_eq(peek(as, BASE), 'B');
	ck_assert(f.pages[1] == 0 || vm_translate(as, BASE) != f.pages[1]);
	child = aspace_copy(as);
	ck_assert_ptr_nonnull(child);
	ck_assert_int_eq(f.maps, 2);
	*byte_at(child, BASE) = 'c';
	ck_assert_int_eq(peek(as, BASE), 'B');
	aspace_release(child);
	ck_assert_int_eq(f.maps, 1);
	/* MADV_DONTNEED: the object's bytes again, not zeroes. */
	poke(BASE, 'q');
	vm_discard(as, BASE, PAGE_SIZE);
	ck_assert_int_eq(vm_fault(as, BASE, 0), 0);
	ck_assert_int_eq(peek(as, BASE), 'B');
	/* A kernel write (read() into it) makes the page too. */
	f.npages = 4;
	ck_assert_uint_ne(vm_translate_write(as, BASE + 2 * PAGE_SIZE), ~0ULL);
	ck_assert_int_eq(peek(as, BASE + 2 * PAGE_SIZE), 'D');
	ck_assert_int_eq(vm_unmap(as, BASE, 4 * PAGE_SIZE), 0);
	ck_assert_int_eq(f.maps, 0);
	obj_free(&f);
}
END_TEST

static Suite *vm_suite(void)
{
	Suite *s = suite_create("vm");
	TCase *t = tcase_create("pmem");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, huge_blocks_from_the_top);
	tcase_add_test(t, huge_block_reuse_is_zeroed);
	tcase_add_test(t, huge_blocks_only_while_plentiful);
	tcase_add_test(t, contig_first_fit);
	tcase_add_test(t, fresh_chunks_populated);
	suite_add_tcase(s, t);

	t = tcase_create("late RAM");
	tcase_add_checked_fixture(t, setup_late, teardown);
	tcase_add_test(t, late_ram_counted_from_the_start);
	tcase_add_test(t, late_ram_asked_for_when_early_runs_out);
	tcase_add_test(t, late_ram_huge_blocks);
	tcase_add_test(t, late_ram_for_a_long_run);
	tcase_add_test(t, fill_promotes);
	tcase_add_test(t, fork_copies_huge_pages);
	suite_add_tcase(s, t);

	t = tcase_create("policy");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, fill_promotes);
	tcase_add_test(t, sparse_touches_stay_small);
	tcase_add_test(t, policy_always_and_never);
	tcase_add_test(t, only_whole_aligned_regions);
	tcase_add_test(t, adjacent_mappings_share_one);
	tcase_add_test(t, different_protection_blocks_it);
	tcase_add_test(t, exhaustion_falls_back_to_small_pages);
	tcase_add_test(t, kernel_write_into_lazy_memory);
	suite_add_tcase(s, t);

	t = tcase_create("split");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, munmap_part_splits);
	tcase_add_test(t, no_page_past_the_end);
	tcase_add_test(t, mprotect_whole_and_part);
	tcase_add_test(t, dontneed_part_and_whole);
	tcase_add_test(t, mremap_moves_whole_or_split);
	tcase_add_test(t, map_fixed_over_part);
	suite_add_tcase(s, t);

	t = tcase_create("fork");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, fork_copies_huge_pages);
	tcase_add_test(t, fork_without_huge_blocks_copies_pages);
	tcase_add_test(t, exit_frees_everything);
	tcase_add_test(t, first_aspace_takes_the_boot_tables);
	suite_add_tcase(s, t);

	t = tcase_create("keep");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, kept_tables_and_pages_are_reused);
	tcase_add_test(t, kept_only_for_the_same_program);
	tcase_add_test(t, load_fills_kept_pages_in_place);
	tcase_add_test(t, failed_load_leaves_the_kept_tree_whole);
	tcase_add_test(t, kept_table_next_to_the_program_stays);
	tcase_add_test(t, fork_takes_over_a_dead_childs_tables);
	tcase_add_test(t, kept_pages_given_back_when_short);
	tcase_add_test(t, dead_heap_page_comes_back_zeroed);
	tcase_add_test(t, dormant_pages_are_freed);
	suite_add_tcase(s, t);

	t = tcase_create("shared");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, shared_mappings_see_each_other);
	tcase_add_test(t, shared_past_the_end_faults);
	tcase_add_test(t, fork_shares_shared_pages);
	tcase_add_test(t, shared_split_holds_the_object);
	tcase_add_test(t, shared_read_only_file_stays_so);
	tcase_add_test(t, kept_tables_leave_shared_pages);
	tcase_add_test(t, shared_cut_unmaps_everywhere);
	tcase_add_test(t, private_file_mapping_follows_its_file);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(vm_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
