/* SPDX-License-Identifier: MIT */
/*
 * Page tables kept across processes, for the host's sake.
 *
 * On PVM hosts (shadow paging) the host keeps a shadow of each guest page
 * table, keyed by the table's frame. A new process used to get new frames
 * for its tables, and the host built new shadows for them one fault at a
 * time as pages were touched (15-25 us each): code mapped in place from
 * an image is read-only host memory, which the host never maps ahead of
 * use, so a process running busybox took some 50 faults for code the
 * previous one had already touched. The frames freed by the old process
 * were still shadowed too, so their next user paid for the host to let go
 * of them (an emulated write and a fault, see pmem.c).
 *
 * So the tables of an address space that maps image pages (PTE_BORROWED)
 * are kept when it goes, whole. A new address space that maps the same
 * image page first (the same program) takes them over before its first
 * use: its tables, built as usual, are merged into the kept ones, writing
 * only the entries that differ. The upper levels then match already (the
 * same tables point to the same tables) and are not written at all, which
 * on PVM would trap each time; a changed level-1 table costs one host fault
 * (it becomes "unsync"), its other writes run natively, and the host keeps
 * the shadow entries of what did not change, the code. The new tables,
 * never loaded in CR3, are ordinary free pages again.
 *
 * A small process's pages are kept with its tables (KEEP_PAGES): where
 * the new process has a page of its own at the same address, its bytes are
 * copied into the old page instead, and the entry and the host's shadow of
 * it stay as they are (a copy costs ~0.3 us, a host fault 15-25 us). Else a
 * kept tree holds outdated entries: nothing reads it until it is merged into.
 *
 * Better still, a new address space built page by page (exec, fork) takes
 * its kept tree as soon as it knows its program (keep_take), and its own
 * pages are then the kept tree's own pages at the same addresses, filled
 * in place (keep_page): no page to allocate, to copy into the kept one at
 * the merge and to free again.
 * Until the merge such a page is the kept tree's (PTE_ADOPTED): whatever
 * the new tables do with it, the merge finds it in the kept tree, and an
 * address space that goes before its merge (a failed exec) is merged first,
 * so that the kept tree is never left half merged.
 *
 * A page of the dead process where the new one maps nothing yet, in a
 * level-1 table the new one has (its heap, mostly: brk comes after exec,
 * and starts past the data) stays too, dormant (see vm_pt.h): no access
 * reaches it, and the new process's next mapping there takes it, zeroed,
 * with no host fault (the host keeps its shadow entry across a change of
 * rights, not across a change of page). DORMANT_MAX of them per merge, and
 * none when programs run short of memory.
 *
 * A dynamically linked program's libraries are mapped after exec, by the
 * loader, at the same addresses each time. Where the new process maps
 * nothing yet, the kept entries of image pages stay, made stale (no
 * PTE_U, see vm_pt.h), and the tables that hold them: when the loader maps
 * the library there again, the entries become what they were and the host
 * still has their shadows (python3 -c pass: some 100 host faults fewer).
 * KEEP_MAX bounds the trees kept, KEEP_PAGES_ALL the pages: the oldest tree
 * goes first, and all of them when programs run short of memory.
 */
#include "vm_pt.h"

#define KEEP_MAX       8
#define KEEP_PAGES     2048 /* pages of one process, at most */
#define KEEP_PAGES_ALL 2048 /* of all kept processes */
#define ENTRIES        512
#define DORMANT_MAX    16 /* pages left dormant by one merge */

struct kept {
	uint64_t root; /* 0: free slot */
	uint64_t sig;  /* see signature */
	uint64_t age;
	size_t pages; /* its own pages still mapped (0: entries are stale) */
};

static struct kept kept[KEEP_MAX];
static uint64_t clock;
static size_t kept_pages;

static bool is_table(uint64_t e, int level)
{
	return level > 1 && (e & PTE_P) && !(e & PTE_PS);
}

/* (A shared mapping's page is its object's, see vm_pt.h.) */
static bool is_own_page(uint64_t e)
{
	return (e & PTE_P) && !(e & (PTE_BORROWED | PTE_SHARED));
}

/* The first borrowed page the table at pa (of level `level`) maps, in
 * address order: which program an address space runs, for matching. 0 if
 * it maps none. */
static uint64_t signature(uint64_t pa, int level)
{
	const uint64_t *t = table(pa);

	for (unsigned i = 0; i < (level == 4 ? ENTRIES / 2 : ENTRIES); i++) {
		uint64_t sig;

		if (!(t[i] & PTE_P))
			continue;
		if (level == 1) {
			if ((t[i] & PTE_BORROWED) && !pte_stale(t[i]))
				return t[i] & PTE_ADDR;
		} else if (is_table(t[i], level) && (sig = signature(t[i], level - 1))) {
			return sig;
		}
	}
	return 0;
}

/* Free the process's own pages under the table at pa (the sled at address
 * 0 is everyone's: level-1 entry 0 of the first table is skipped). */
static void free_pages(uint64_t pa, int level, bool first)
{
	uint64_t *t = table(pa);

	for (unsigned i = 0; i < (level == 4 ? ENTRIES / 2 : ENTRIES); i++) {
		if (is_table(t[i], level))
			free_pages(t[i], level - 1, first && !i);
		else if (level == 1 && is_own_page(t[i]) && !(first && !i))
			put_page(t[i]);
		else if (level == 2 && (t[i] & PTE_P) && (t[i] & PTE_PS))
			pmem_free_huge(t[i] & HUGE_ADDR);
	}
}

/* The process's own 4 KiB pages under pa; SIZE_MAX if it has a 2 MiB one. */
static size_t count_pages(uint64_t pa, int level, bool first)
{
	const uint64_t *t = table(pa);
	size_t n = 0, m;

	for (unsigned i = 0; i < (level == 4 ? ENTRIES / 2 : ENTRIES); i++) {
		if (is_table(t[i], level)) {
			m = count_pages(t[i], level - 1, first && !i);
			if (m == SIZE_MAX)
				return m;
			n += m;
		} else if (level == 2 && (t[i] & PTE_P) && (t[i] & PTE_PS)) {
			return SIZE_MAX;
		} else if (level == 1 && is_own_page(t[i]) && !(first && !i)) {
			n++;
		}
	}
	return n;
}

static void drop(struct kept *k)
{
	if (k->pages)
		free_pages(k->root, 4, true);
	kept_pages -= k->pages;
	pt_free_tables(k->root, 4);
	k->root = 0;
}

void pt_put_pages(uint64_t root)
{
	free_pages(root, 4, true);
}

void keep_forget(void)
{
	memset(kept, 0, sizeof(kept));
	kept_pages = 0;
}

void keep_shrink(void)
{
	for (unsigned i = 0; i < KEEP_MAX; i++)
		if (kept[i].root)
			drop(&kept[i]);
}

bool keep_tables(uint64_t root)
{
	uint64_t sig = signature(root, 4);
	struct kept *k = &kept[0];
	size_t pages;

	if (!sig)
		return false;
	for (unsigned i = 1; i < KEEP_MAX && k->root; i++)
		if (!kept[i].root || kept[i].age < k->age)
			k = &kept[i];
	if (k->root)
		drop(k);
	pages = count_pages(root, 4, true);
	if (pages > KEEP_PAGES || kept_pages + pages > KEEP_PAGES_ALL ||
	    !pmem_user_ok(KEEP_PAGES_ALL)) {
		free_pages(root, 4, true);
		pages = 0;
	}
	kept_pages += pages;
	*k = (struct kept){root, sig, ++clock, pages};
	return true;
}

/* A level-1 entry of a kept table with pages, made to map what the new
 * table's entry ne does: the new page's bytes go into the kept page when
 * both are the processes' own, so that the entry stays. */
static uint64_t merge_page(uint64_t *ke, uint64_t ne)
{
	if (ne & PTE_ADOPTED) /* the same page: it stays the kept tree's */
		return ne & ~PTE_ADOPTED;
	if (is_own_page(*ke) && is_own_page(ne)) {
		memcpy(phys_to_virt(*ke & PTE_ADDR), phys_to_virt(ne & PTE_ADDR), PAGE_SIZE);
		put_page(ne);
		return (*ke & PTE_ADDR) | (ne & ~PTE_ADDR);
	}
	if (is_own_page(*ke))
		put_page(*ke);
	return ne;
}

/* What a kept level-1 entry ke becomes where the new process maps
 * nothing: a stale entry if it maps an image page (see vm_pt.h), a dormant
 * one if it is the kept process's own page and *dormant allows one more,
 * else nothing (its page freed if the kept process's pages are kept). */
static uint64_t retire(uint64_t ke, bool pages, size_t *dormant)
{
	if ((ke & PTE_P) && (ke & PTE_BORROWED))
		return ke & ~(PTE_U | PTE_PROTNONE);
	if (pages && is_own_page(ke) && *dormant) {
		--*dormant;
		return ke & ~(PTE_U | PTE_PROTNONE);
	}
	if (pages && is_own_page(ke))
		put_page(ke);
	return 0;
}

/* Retire every entry under the kept table at kpa, where the new process
 * has no table; true if a stale entry is left (else the caller frees the
 * tables). */
static bool retire_table(uint64_t kpa, int level, bool pages, bool first)
{
	uint64_t *k = table(kpa), want;
	size_t none = 0; /* no dormant page: the table would stay for it */
	bool stale = false;

	for (unsigned i = 0; i < ENTRIES; i++) {
		if (is_table(k[i], level) && retire_table(k[i], level - 1, pages, first && !i)) {
			stale = true;
			continue;
		}
		if (is_table(k[i], level))
			pt_free_tables(k[i], level - 1);
		want = level == 1 && !(first && !i) ? retire(k[i], pages, &none) : 0;
		if (k[i] != want)
			k[i] = want;
		stale |= want != 0;
	}
	return stale;
}

/* Make the kept table at kpa (level `level`) map what the new one at npa
 * does, keeping the kept tables below it where both have one, and free
 * the new tables merged. With pages, the kept table's own pages are the
 * kept process's (except the sled's, in the first table of each level).
 * Image pages the new process does not map stay as stale entries, and
 * the tables that hold them. So does a level-1 table, empty, that follows
 * one the new process has: where its heap will grow (a program's brk
 * starts past its data), which would else cost a write to the level-2
 * table twice (emulated on PVM hosts, each time) and a new table for the
 * host to shadow. One such table per run of them: the kept tree does not
 * grow past twice the new process's. */
static void merge(uint64_t kpa, uint64_t npa, int level, bool pages, bool first, size_t *dormant)
{
	uint64_t *k = table(kpa), *n = table(npa);

	for (unsigned i = 0; i < (level == 4 ? ENTRIES / 2 : ENTRIES); i++) {
		uint64_t want = n[i];

		if (level == 1 && k[i] == want) /* most: code, unused */
			continue;
		if (is_table(n[i], level) && is_table(k[i], level)) {
			merge(k[i], n[i], level - 1, pages, first && !i, dormant);
			want = (k[i] & PTE_ADDR) | (n[i] & ~PTE_ADDR);
		} else if (is_table(k[i], level) && !(n[i] & PTE_P)) {
			if (retire_table(k[i], level - 1, pages, first && !i) ||
			    (level == 2 && i && is_table(n[i - 1], level)))
				want = k[i];
			else
				pt_free_tables(k[i], level - 1);
		} else if (is_table(k[i], level)) {
			if (pages)
				free_pages(k[i], level - 1, first && !i);
			pt_free_tables(k[i], level - 1);
		} else if (level == 1 && !(first && !i) && !(n[i] & PTE_P)) {
			want = retire(k[i], pages, dormant);
		} else if (level == 1 && pages && !(first && !i) && k[i] != n[i]) {
			want = merge_page(&k[i], n[i]);
		}
		if (k[i] != want)
			k[i] = want;
	}
	/* Never loaded in CR3, so never shadowed: an ordinary free page. */
	pmem_free(npa & PTE_ADDR);
}

uint64_t keep_signature(uint64_t root)
{
	return signature(root, 4);
}

/* The newest kept tree of the program with signature sig, or NULL. */
static struct kept *find(uint64_t sig)
{
	struct kept *k = NULL;

	for (unsigned i = 0; sig && i < KEEP_MAX; i++)
		if (kept[i].root && kept[i].sig == sig && (!k || kept[i].age > k->age))
			k = &kept[i];
	return k;
}

void keep_take(struct aspace *as, uint64_t sig)
{
	struct kept *k;

	if (!as->keep_seek || !(sig = sig ? sig : signature(as->root, 4)))
		return;
	as->keep_seek = false;
	k = find(sig);
	if (!k || !k->pages)
		return; /* its entries are outdated: merged into at the end */
	kept_pages -= k->pages;
	as->keep_root = k->root;
	k->root = 0;
}

uint64_t keep_page(struct aspace *as, uint64_t va)
{
	uint64_t e = as->keep_root;

	if (!e || va < PAGE_SIZE)
		return 0;
	for (int level = 4; level > 1; level--) {
		e = table(e)[(va >> (12 + 9 * (level - 1))) & (ENTRIES - 1)];
		if (!is_table(e, level))
			return 0;
	}
	e = table(e)[(va >> 12) & (ENTRIES - 1)];
	return is_own_page(e) ? e & PTE_ADDR : 0;
}

void aspace_keep_seek(struct aspace *as)
{
	as->keep_seek = true;
}

void aspace_keep_tables(struct aspace *as)
{
	/* (Asked first: when memory is short, the kept trees go.) */
	size_t dormant = pmem_user_ok(KEEP_PAGES_ALL) ? DORMANT_MAX : 0;
	struct kept *k = as->keep_root ? NULL : find(signature(as->root, 4));
	uint64_t root = as->keep_root ? as->keep_root : k ? k->root : 0;

	as->keep_seek = false;
	if (!root)
		return;
	merge(root, as->root, 4, !k || k->pages, true, &dormant);
	if (k) {
		kept_pages -= k->pages;
		k->root = 0;
	}
	as->root = root;
	as->keep_root = 0;
}
