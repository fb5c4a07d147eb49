/* SPDX-License-Identifier: MIT */
/*
 * Kernel heap: power-of-two size classes from 16 to 2048 bytes carved from
 * single pages, larger requests as whole pages with a small header. The
 * library OS is never preempted inside itself, so no locking.
 */
#include "mm.h"
#include "printk.h"

#define MIN_SHIFT   4
#define MAX_SHIFT   11
#define NR_CLASSES  (MAX_SHIFT - MIN_SHIFT + 1)
#define LARGE_MAGIC 0x4c415247454b4d41ULL

struct free_obj {
	struct free_obj *next;
};

struct large_hdr {
	uint64_t magic;
	uint64_t npages;
};

static struct free_obj *free_list[NR_CLASSES];

static int class_of(size_t n)
{
	int c = 0;
	while ((1UL << (c + MIN_SHIFT)) < n)
		c++;
	return c;
}

/* Each class page starts with a one-word tag so kfree can tell sizes apart:
 * the slab payload follows at the first object boundary. */
#define SLAB_TAG 0x534c4142U

struct slab_hdr {
	uint32_t tag;
	uint32_t cls;
};

static int refill(int c)
{
	uint64_t pa = pmem_alloc(false);
	size_t sz = 1UL << (c + MIN_SHIFT);
	char *page;
	struct slab_hdr *h;

	if (!pa)
		return -ENOMEM;
	page = phys_to_virt(pa);
	h = (struct slab_hdr *)page;
	h->tag = SLAB_TAG;
	h->cls = (uint32_t)c;
	for (size_t off = MAX(sz, sizeof(*h)); off + sz <= PAGE_SIZE; off += sz) {
		struct free_obj *o = (struct free_obj *)(page + off);
		o->next = free_list[c];
		free_list[c] = o;
	}
	return 0;
}

/* Whole pages with the header in front. Zeroed pages that were never used
 * cost nothing to zero: kzalloc leaves the pages it does not touch alone. */
static void *kmalloc_large(size_t n, bool zero)
{
	size_t np = (n + sizeof(struct large_hdr) + PAGE_SIZE - 1) / PAGE_SIZE;
	uint64_t pa;
	struct large_hdr *h;

	if (n > (1UL << 40))
		return NULL;
	pa = pmem_alloc_contig(np, 1, zero);
	if (!pa)
		return NULL;
	h = phys_to_virt(pa);
	h->magic = LARGE_MAGIC;
	h->npages = np;
	return h + 1;
}

void *kmalloc(size_t n)
{
	struct free_obj *o;
	int c;

	if (n == 0)
		n = 1;
	if (n > (1UL << MAX_SHIFT))
		return kmalloc_large(n, false);
	c = class_of(n);
	if (!free_list[c] && refill(c))
		return NULL;
	o = free_list[c];
	free_list[c] = o->next;
	return o;
}

void *kzalloc(size_t n)
{
	void *p;

	if (n > (1UL << MAX_SHIFT))
		return kmalloc_large(n, true);
	p = kmalloc(n);
	if (p)
		memset(p, 0, n);
	return p;
}

void kfree(void *p)
{
	uintptr_t page = ALIGN_DOWN((uintptr_t)p, PAGE_SIZE);
	struct slab_hdr *h = (struct slab_hdr *)page;
	struct free_obj *o = p;

	if (!p)
		return;
	if ((uintptr_t)p - page == sizeof(struct large_hdr) &&
	    ((struct large_hdr *)page)->magic == LARGE_MAGIC) {
		struct large_hdr *lh = (struct large_hdr *)page;
		lh->magic = 0;
		pmem_free_contig(virt_to_phys(lh), lh->npages);
		return;
	}
	if (h->tag != SLAB_TAG || h->cls >= NR_CLASSES)
		kpanic("kfree of a pointer kmalloc did not return: %p", p);
	o->next = free_list[h->cls];
	free_list[h->cls] = o;
}

char *kstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = kmalloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}
