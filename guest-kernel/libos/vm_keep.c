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
 * A kept tree still holds its dead process's entries: nothing reads it
 * until it is merged into. KEEP_MAX bounds the trees kept; the oldest is
 * freed.
 */
#include "vm_pt.h"

#define KEEP_MAX 8
#define ENTRIES  512

struct kept {
	uint64_t root; /* 0: free slot */
	uint64_t sig;  /* see signature */
	uint64_t age;
};

static struct kept kept[KEEP_MAX];
static uint64_t clock;

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
			if (t[i] & PTE_BORROWED)
				return t[i] & PTE_ADDR;
		} else if (!(t[i] & PTE_PS) && (sig = signature(t[i], level - 1))) {
			return sig;
		}
	}
	return 0;
}

bool keep_tables(uint64_t root)
{
	uint64_t sig = signature(root, 4);
	struct kept *k = &kept[0];

	if (!sig)
		return false;
	for (unsigned i = 1; i < KEEP_MAX && k->root; i++)
		if (!kept[i].root || kept[i].age < k->age)
			k = &kept[i];
	if (k->root)
		pt_free_tables(k->root, 4);
	*k = (struct kept){root, sig, ++clock};
	return true;
}

/* Make the kept table at kpa (level `level`) map what the new one at npa
 * does, keeping the kept tables below it where both have one, and free
 * the new tables merged. */
static void merge(uint64_t kpa, uint64_t npa, int level)
{
	uint64_t *k = table(kpa), *n = table(npa);

	for (unsigned i = 0; i < (level == 4 ? ENTRIES / 2 : ENTRIES); i++) {
		bool n_table = level > 1 && (n[i] & PTE_P) && !(n[i] & PTE_PS);
		bool k_table = level > 1 && (k[i] & PTE_P) && !(k[i] & PTE_PS);
		uint64_t want = n[i];

		if (n_table && k_table) {
			merge(k[i], n[i], level - 1);
			want = (k[i] & PTE_ADDR) | (n[i] & ~PTE_ADDR);
		} else if (k_table) {
			pt_free_tables(k[i], level - 1);
		}
		if (k[i] != want)
			k[i] = want;
	}
	/* Never loaded in CR3, so never shadowed: an ordinary free page. */
	pmem_free(npa & PTE_ADDR);
}

void aspace_keep_tables(struct aspace *as)
{
	uint64_t sig = signature(as->root, 4);
	struct kept *k = NULL;

	for (unsigned i = 0; sig && i < KEEP_MAX; i++)
		if (kept[i].root && kept[i].sig == sig && (!k || kept[i].age > k->age))
			k = &kept[i];
	if (!k)
		return;
	merge(k->root, as->root, 4);
	as->root = k->root;
	k->root = 0;
}
