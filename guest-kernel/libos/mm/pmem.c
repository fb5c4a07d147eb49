/* SPDX-License-Identifier: MIT */
/*
 * Physical page allocator: two bitmaps over all page frames, "used" and
 * "dirty" (the page may hold old data). Guest RAM starts out zero (fresh
 * host memory), so a zeroed allocation of a never-used page costs nothing
 * and, better, does not touch host memory.
 *
 * Single pages come from the bottom of RAM up (next fit), 2 MiB blocks for
 * huge mappings from the top down: the two kinds mix less, so free aligned
 * blocks last longer. Every frame has its own bit, so the pages of a block
 * can be freed one at a time after its mapping was split.
 *
 * RAM past kiln,early-ram-end (kiln/boot.h) is counted from the start but
 * stays out of the bitmaps until the early RAM runs out: then the VMM is
 * asked for it (host_ram_online) and registers it with KVM (under a
 * millisecond per GiB). Most guests never need it.
 */
#include "bootinfo.h"
#include "mm.h"
#include "pidns.h"
#include "pmem.h"
#include "printk.h"
#include "sv.h"

/* fresh_map: handed out without having been used before, and not claimed
 * since (pmem_claim_fresh). */
static uint64_t *used_map, *dirty_map, *pt_map, *fresh_map;
static uint64_t nr_frames; /* frames covered by the bitmaps */
static uint64_t next_hint; /* next-fit search start (in words) */
static size_t free_count, total_count;
/* RAM, and what in it is not free: page 0, the bitmaps, the reserved
 * ranges (sorted by base). */
static struct mem_range ram[BOOT_MAX_RANGES], holes[BOOT_MAX_RANGES + 2];
static int nr_ram, nr_holes;
/* Free frames at and above late_start, not in the bitmaps yet. */
static uint64_t late_start;
static size_t late_count;

/* Recently freed frames, reused first (LIFO). On PVM hosts the first touch
 * of a frame costs a host page allocation and a shadow-paging fault (several
 * microseconds); a frame that was just in use has neither. */
#define HOT_MAX 8192
static uint64_t hot[HOT_MAX] __attribute__((section(".bss.late")));
static unsigned nhot;
/* The same for 2 MiB blocks (their first frame). */
#define HOT_HUGE_MAX 64
static uint64_t hot_huge[HOT_HUGE_MAX];
static unsigned nhot_huge;

static bool test(const uint64_t *map, uint64_t pfn)
{
	return map[pfn / 64] >> (pfn % 64) & 1;
}

/*
 * Host memory in chunks. On PVM hosts the first touch of a fresh guest page
 * costs a host fault of ~15 us (the host allocates the page, then fills its
 * shadow entry); where the host has the page already, the host maps the 8
 * around a fault at once. So the VMM is asked to make a chunk of fresh
 * frames present (host_populate) before the first of them is handed out:
 * frames mostly come in order (next fit), and the chunk's neighbours are
 * next. A guest with little memory in use (up to POP_BUSY frames) asks for
 * POP_SMALL frames at a time, a busier one for POP_CHUNK: python3 running
 * analysis.py exited to the VMM 942 times with 64 KiB chunks, 62 with 1 MiB
 * ones, and took ~3k fewer host shadow faults.
 *
 * The cost is host memory for frames handed out but never touched (the
 * pages of an eager mapping a program leaves alone, see vm.c): a first
 * python3 -c pass in a fresh VM took 1197 host shadow faults instead of
 * 1835 when small guests populated too (31 exits to the VMM instead of 5),
 * and an idle python3 sandbox holds 6.9 instead of 5.3 MB of guest RAM, an
 * idle busybox guest 1.5 instead of 1.2 MB (Intel PVM host, 12-03).
 */
#define POP_CHUNK PMEM_POP_CHUNK
#define POP_SMALL PMEM_POP_SMALL
#define POP_BUSY  ((16UL << 20) / PAGE_SIZE)

#ifndef KILN_HOSTED /* unit tests bring their own */
void host_populate(uint64_t pa, uint64_t len)
{
	port_out_regs(KILN_PORT_POPULATE, pa, len);
}

void host_ram_online(void)
{
	port_out_regs(KILN_PORT_RAM, 0, 0);
}
#endif

/* Frame pfn is about to be handed out for the first time. */
static void populate(uint64_t pfn)
{
	uint64_t n = total_count - pmem_free_pages() < POP_BUSY ? POP_SMALL : POP_CHUNK;
	uint64_t first = ALIGN_DOWN(pfn, n);

	/* A chunk with a frame used before was populated (or touched). Both
	 * sizes are whole words of the bitmap, aligned. */
	for (uint64_t w = first / 64; w < MIN(first + n, nr_frames) / 64; w++)
		if (dirty_map[w])
			return;
	host_populate(first * PAGE_SIZE, n * PAGE_SIZE);
}

static void set(uint64_t *map, uint64_t pfn, bool v)
{
	if (v)
		map[pfn / 64] |= 1ULL << (pfn % 64);
	else
		map[pfn / 64] &= ~(1ULL << (pfn % 64));
}

static bool overlaps_reserved(const struct bootinfo *bi, uint64_t pa, uint64_t len)
{
	if (pa < PAGE_SIZE) /* physical 0 is our "no page" value */
		return true;
	for (int i = 0; i < bi->nr_reserved; i++) {
		const struct mem_range *r = &bi->reserved[i];
		if (pa < r->base + r->size && r->base < pa + len)
			return true;
	}
	return false;
}

/* Find room for the bitmaps themselves: the first free run of early RAM. */
static uint64_t find_home(const struct bootinfo *bi, uint64_t bytes)
{
	for (int i = 0; i < bi->nr_ram; i++) {
		const struct mem_range *r = &bi->ram[i];
		uint64_t end = MIN(r->base + r->size, late_start);

		for (uint64_t pa = ALIGN_UP(r->base, PAGE_SIZE); pa + bytes <= end; pa += PAGE_SIZE)
			if (!overlaps_reserved(bi, pa, bytes))
				return pa;
	}
	return 0;
}

/* Frames [first, end): marked free (a word at a time where possible) if
 * mark; their number. */
static size_t mark_free(uint64_t first, uint64_t end, bool mark)
{
	size_t n = end - first;

	if (!mark)
		return n;
	for (; first < end && first % 64; first++)
		set(used_map, first, false);
	for (; first + 64 <= end; first += 64)
		used_map[first / 64] = 0;
	for (; first < end; first++)
		set(used_map, first, false);
	return n;
}

/* Page 0, the bitmaps at home and the reserved ranges, sorted by base. */
static void find_holes(const struct bootinfo *bi, uint64_t home, uint64_t bytes)
{
	nr_holes = 0;
	holes[nr_holes++] = (struct mem_range){0, PAGE_SIZE};
	holes[nr_holes++] = (struct mem_range){home, bytes};
	for (int i = 0; i < bi->nr_reserved; i++)
		holes[nr_holes++] = bi->reserved[i];
	for (int i = 1; i < nr_holes; i++) /* insertion sort by base */
		for (int j = i; j > 0 && holes[j].base < holes[j - 1].base; j--) {
			struct mem_range t = holes[j];
			holes[j] = holes[j - 1];
			holes[j - 1] = t;
		}
}

/* Free frames of RAM in [lo, hi) (page-aligned): RAM minus the holes.
 * Marked free if mark, else only counted. */
static size_t free_ram(uint64_t lo, uint64_t hi, bool mark)
{
	size_t count = 0;

	for (int i = 0; i < nr_ram; i++) {
		uint64_t cur = MAX(ALIGN_UP(ram[i].base, PAGE_SIZE), lo);
		uint64_t end = MIN(ALIGN_DOWN(ram[i].base + ram[i].size, PAGE_SIZE), hi);

		for (int h = 0; h < nr_holes && cur < end; h++) {
			uint64_t hs = ALIGN_DOWN(holes[h].base, PAGE_SIZE);
			uint64_t he = ALIGN_UP(holes[h].base + holes[h].size, PAGE_SIZE);
			if (he <= cur)
				continue;
			if (hs > cur)
				count += mark_free(cur / PAGE_SIZE, MIN(hs, end) / PAGE_SIZE, mark);
			cur = MAX(cur, he);
		}
		if (cur < end)
			count += mark_free(cur / PAGE_SIZE, end / PAGE_SIZE, mark);
	}
	return count;
}

/* The RAM past the early part, the first time the early RAM runs out:
 * false if there is none to bring. */
static bool online_late(void)
{
	if (!late_count)
		return false;
	host_ram_online();
	free_count += free_ram(late_start, ~0ULL, true);
	late_count = 0;
	return true;
}

void pmem_init(const struct bootinfo *bi)
{
	uint64_t top = 0, bytes, home;

	nhot = nhot_huge = 0; /* (unit tests start over many times) */
	next_hint = 0;
	late_start = bi->early_ram_end ? bi->early_ram_end : ~0ULL;
	nr_ram = bi->nr_ram;
	for (int i = 0; i < bi->nr_ram; i++) {
		ram[i] = bi->ram[i];
		top = MAX(top, bi->ram[i].base + bi->ram[i].size);
	}
	nr_frames = ALIGN_UP(top / PAGE_SIZE, 64);
	bytes = ALIGN_UP(4 * nr_frames / 8, PAGE_SIZE);
	home = find_home(bi, bytes);
	if (!home)
		kpanic("no room for the page bitmaps (%lu bytes)", (unsigned long)bytes);
	find_holes(bi, home, bytes);
	used_map = phys_to_virt(home);
	dirty_map = used_map + nr_frames / 64;
	pt_map = dirty_map + nr_frames / 64;
	fresh_map = pt_map + nr_frames / 64;
	/* Everything is used until proven free RAM; fresh RAM is all zero. */
	memset(used_map, 0xff, nr_frames / 8);
	memset(dirty_map, 0, 3 * nr_frames / 8);
	free_count = free_ram(0, late_start, true);
	late_count = late_start == ~0ULL ? 0 : free_ram(late_start, ~0ULL, false);
	total_count = free_count + late_count;
}

static void take(uint64_t pfn, bool zero)
{
	set(used_map, pfn, true);
	if (test(pt_map, pfn)) {
		/* A former page table may still be shadowed by the host (PVM),
		 * which then traps and emulates every write to it. A one-byte
		 * write inside an entry is one the host does not take for a
		 * page-table update: it lets go of the page at once. Left to
		 * the next user, the first write could be an aligned store
		 * (emulated, and the page stays shadowed) or a `rep stosb`,
		 * emulated a byte at a time: up to 1024 bytes, ~1 ms, when the
		 * page was a root the host still caches. */
		((volatile uint8_t *)phys_to_virt(pfn * PAGE_SIZE))[1] = 0;
		set(pt_map, pfn, false);
	}
	set(fresh_map, pfn, !test(dirty_map, pfn));
	if (!test(dirty_map, pfn))
		populate(pfn);
	else if (zero)
		memset(phys_to_virt(pfn * PAGE_SIZE), 0, PAGE_SIZE);
	set(dirty_map, pfn, true);
	free_count--;
}

bool pmem_claim_fresh(uint64_t pa)
{
	uint64_t pfn = pa / PAGE_SIZE;
	bool fresh = pfn < nr_frames && test(fresh_map, pfn);

	if (fresh)
		set(fresh_map, pfn, false);
	return fresh;
}

static uint64_t alloc_from_bitmap(bool zero);

uint64_t pmem_alloc(bool zero)
{
	uint64_t pa;

	while (nhot) {
		uint64_t pfn = hot[--nhot];
		if (!test(used_map, pfn)) { /* not taken by a contiguous alloc since */
			take(pfn, zero);
			return pfn * PAGE_SIZE;
		}
	}
	pa = alloc_from_bitmap(zero);
	if (!pa && online_late())
		pa = alloc_from_bitmap(zero);
	return pa;
}

static uint64_t alloc_from_bitmap(bool zero)
{
	uint64_t words = nr_frames / 64;

	for (uint64_t n = 0; n < words; n++) {
		uint64_t w = (next_hint + n) % words;
		if (used_map[w] != ~0ULL) {
			uint64_t pfn = w * 64 + (uint64_t)__builtin_ctzll(~used_map[w]);
			next_hint = w;
			take(pfn, zero);
			return pfn * PAGE_SIZE;
		}
	}
	return 0;
}

static uint64_t alloc_contig(size_t npages, size_t align_pages, bool zero)
{
	for (uint64_t start = 0; start + npages <= nr_frames; start += align_pages) {
		uint64_t i;

		/* Words of 64 used frames are skipped whole: this runs for every
		 * kmalloc of more than 2 KiB (each path a program names), and a
		 * bit at a time it cost ~15 us once programs held some memory. */
		if (used_map[start / 64] == ~0ULL) {
			start = ALIGN_UP(start + 1, MAX(align_pages, 64)) - align_pages;
			continue;
		}
		for (i = 0; i < npages && !test(used_map, start + i); i++)
			;
		if (i == npages) {
			for (i = 0; i < npages; i++)
				take(start + i, zero);
			return start * PAGE_SIZE;
		}
		/* Skip past the used frame we hit, keeping the alignment. */
		start = ALIGN_DOWN(start + i, align_pages);
	}
	return 0;
}

uint64_t pmem_alloc_contig(size_t npages, size_t align_pages, bool zero)
{
	uint64_t pa;

	if (!npages || !align_pages || (align_pages & (align_pages - 1)))
		return 0;
	pa = alloc_contig(npages, align_pages, zero);
	if (!pa && online_late())
		pa = alloc_contig(npages, align_pages, zero);
	return pa;
}

/* Is the 2 MiB block starting at frame pfn (aligned) all free? */
static bool block_free(uint64_t pfn)
{
	if (pfn + HUGE_PAGES > nr_frames)
		return false;
	for (uint64_t w = pfn / 64; w < (pfn + HUGE_PAGES) / 64; w++)
		if (used_map[w])
			return false;
	return true;
}

/* Memory is plentiful while a block leaves more than 1/16 of RAM free
 * beyond the kernel's reserve (see pmem_user_ok). A huge mapping may be
 * mostly untouched; that costs nothing while memory is plentiful, and
 * below that point single pages make what is left go further. */
static bool huge_ok(void)
{
	size_t keep = MAX(total_count / 64, 256) + total_count / 16;

	size_t free = pmem_free_pages();

	return free > keep && free - keep >= HUGE_PAGES;
}

/* The highest free 2 MiB block's first frame, or 0 (block 0 holds frame 0,
 * which is never free). */
static uint64_t highest_free_block(void)
{
	for (uint64_t b = nr_frames / HUGE_PAGES; b-- > 0;)
		if (block_free(b * HUGE_PAGES))
			return b * HUGE_PAGES;
	return 0;
}

uint64_t pmem_alloc_huge(bool zero)
{
	uint64_t pfn = 0;

	if (!huge_ok() || !pidns_mem_ok(HUGE_PAGES))
		return 0;
	while (nhot_huge && !pfn) {
		uint64_t p = hot_huge[--nhot_huge];
		if (block_free(p)) /* no single page taken from it since */
			pfn = p;
	}
	if (!pfn)
		pfn = highest_free_block();
	if (!pfn && online_late())
		pfn = highest_free_block();
	if (!pfn)
		return 0;
	for (uint64_t i = 0; i < HUGE_PAGES; i++)
		take(pfn + i, zero);
	return pfn * PAGE_SIZE;
}

static void release(uint64_t pa)
{
	uint64_t pfn = pa / PAGE_SIZE;

	if (pa % PAGE_SIZE || pfn >= nr_frames || !test(used_map, pfn))
		kpanic("freeing a page that is not allocated: %#lx", (unsigned long)pa);
	set(used_map, pfn, false);
	free_count++;
}

void pmem_free(uint64_t pa)
{
	release(pa);
	if (nhot < HOT_MAX)
		hot[nhot++] = pa / PAGE_SIZE;
}

void pmem_free_contig(uint64_t pa, size_t npages)
{
	for (size_t i = 0; i < npages; i++)
		pmem_free(pa + i * PAGE_SIZE);
}

void pmem_free_huge(uint64_t pa)
{
	if (pa % HUGE_SIZE)
		kpanic("freeing a huge page at an unaligned address: %#lx", (unsigned long)pa);
	for (uint64_t i = 0; i < HUGE_PAGES; i++)
		release(pa + i * PAGE_SIZE);
	if (nhot_huge < HOT_HUGE_MAX)
		hot_huge[nhot_huge++] = pa / PAGE_SIZE;
}

size_t pmem_free_pages(void)
{
	return free_count + late_count;
}

size_t pmem_total_pages(void)
{
	return total_count;
}

/*
 * Page tables go back to the bitmap, not the hot cache. On PVM (shadow
 * paging) the host write-protects every page the guest uses as a page table
 * until it notices the page is no longer one: a former page table reused at
 * once for data makes each write to it an emulated instruction. New page
 * tables do come from the hot cache, which then only holds former data
 * pages. forkbench per fork: hot reuse both ways 2.0 ms, a separate pool for
 * page tables 1.0 ms, fresh pages for them 1.2 ms, this 0.4 ms.
 */
uint64_t pmem_alloc_pt(void)
{
	return pmem_alloc(true);
}

void pmem_free_pt(uint64_t pa)
{
	release(pa);
	set(pt_map, pa / PAGE_SIZE, true);
}

/* Memory programs ask for (their pages, their files in tmpfs, their
 * threads) stops short of the last 1/64 of RAM (at least 1 MiB), which stays
 * for the kernel's own needs: a program that eats all memory gets ENOMEM,
 * and the kernel can still run the rest of the guest. */
static bool user_room(size_t npages)
{
	size_t reserve = MAX(total_count / 64, 256), free = pmem_free_pages();

	return free > reserve && free - reserve >= npages;
}

/* Memory kept for programs yet to run goes first. */
bool pmem_user_ok(size_t npages)
{
	if (!pidns_mem_ok(npages)) /* the container's own bound */
		return false;
	if (user_room(npages))
		return true;
	keep_shrink();
	return user_room(npages);
}

uint64_t pmem_alloc_user(bool zero)
{
	return pmem_user_ok(1) ? pmem_alloc(zero) : 0;
}
