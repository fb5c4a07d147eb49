// SPDX-License-Identifier: MIT
/*
 * memtouch [MIB]: allocates memory every way a libc does (brk, anonymous
 * mmap, mprotect, munmap, mremap, malloc/calloc/free), checks that fresh
 * memory reads as zero and that what was written reads back, and prints one
 * checksum per step. The output depends only on MIB (default 16), so the
 * same program run on the host must print the same lines.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KIB 1024UL
#define MIB (1024 * KIB)

static int failures;

static void fail(const char *step, const char *what)
{
	printf("%s: FAIL %s\n", step, what);
	failures++;
}

static uint64_t fnv1a(const unsigned char *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ULL

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(((i + seed) * 2654435761U) >> 13);
}

static int is_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* musl's sbrk() refuses to move the break, so use the system call. */
static uintptr_t sys_brk(uintptr_t addr)
{
	return (uintptr_t)syscall(SYS_brk, addr);
}

/* Runs before anything else can call malloc, which may own the break. */
static uint64_t test_brk(void)
{
	const size_t size = MIB + 123;
	uintptr_t base = sys_brk(0);
	uint64_t h = 0;
	unsigned char *p = (unsigned char *)base;

	if (sys_brk(1) != base)
		fail("brk", "brk(1) moved the break");
	if (sys_brk(base + size) != base + size) {
		fail("brk", "cannot grow the break by 1 MiB");
		return 0;
	}
	if (!is_zero(p, size))
		fail("brk", "new break memory is not zero");
	fill(p, size, 1);
	h = fnv1a(p, size, FNV_INIT);
	/* Shrink and grow again: the pages given back must come back zeroed. */
	if (sys_brk(base + 4096) != base + 4096)
		fail("brk", "cannot shrink the break");
	if (sys_brk(base + size) != base + size)
		fail("brk", "cannot grow the break again");
	else if (!is_zero(p + 8192, size - 8192))
		fail("brk", "memory given back and regrown is not zero");
	h = fnv1a(p, 4096, h);
	if (sys_brk(base) != base)
		fail("brk", "cannot restore the break");
	return h;
}

static uint64_t test_mmap(size_t size)
{
	unsigned char *p =
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *q;
	uint64_t h, h2;

	if (p == MAP_FAILED) {
		fail("mmap", strerror(errno));
		return 0;
	}
	if ((uintptr_t)p % 4096)
		fail("mmap", "mapping is not page aligned");
	/* One byte per page first, the way a program first touches a heap. */
	for (size_t i = 0; i < size; i += 4096)
		if (p[i])
			fail("mmap", "fresh page is not zero");
	if (!is_zero(p, size))
		fail("mmap", "fresh mapping is not zero");
	fill(p, size, 2);
	h = fnv1a(p, size, FNV_INIT);
	if (mprotect(p, size, PROT_READ))
		fail("mmap", "mprotect(PROT_READ) failed");
	h2 = fnv1a(p, size, FNV_INIT);
	if (h2 != h)
		fail("mmap", "contents changed under mprotect");
	if (mprotect(p, size, PROT_READ | PROT_WRITE))
		fail("mmap", "mprotect(PROT_READ|PROT_WRITE) failed");
	/* Punch a hole in the middle; both sides must stay intact. */
	if (munmap(p + size / 2, MIB))
		fail("mmap", "munmap of the middle failed");
	h = fnv1a(p, size / 2, h);
	h = fnv1a(p + size / 2 + MIB, size / 2 - MIB, h);
	/* MAP_FIXED over mapped memory replaces it with zeros. */
	q = mmap(p, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
	         0);
	if (q != p)
		fail("mmap", "MAP_FIXED did not map at the address asked for");
	else if (!is_zero(q, 2 * 4096))
		fail("mmap", "MAP_FIXED replacement is not zero");
	if (munmap(p, size / 2) || munmap(p + size / 2 + MIB, size / 2 - MIB))
		fail("mmap", "munmap failed");
	if (munmap(p, size) != 0)
		fail("mmap", "munmap of an already unmapped range failed");
	return h;
}

static uint64_t test_mremap(void)
{
	unsigned char *p =
	    mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *q;
	uint64_t h;

	if (p == MAP_FAILED) {
		fail("mremap", strerror(errno));
		return 0;
	}
	fill(p, MIB, 3);
	q = mremap(p, MIB, 4 * MIB, MREMAP_MAYMOVE);
	if (q == MAP_FAILED) {
		fail("mremap", strerror(errno));
		munmap(p, MIB);
		return 0;
	}
	h = fnv1a(q, MIB, FNV_INIT);
	if (!is_zero(q + MIB, 3 * MIB))
		fail("mremap", "grown part is not zero");
	fill(q + MIB, 3 * MIB, 4);
	h = fnv1a(q, 4 * MIB, h);
	q = mremap(q, 4 * MIB, 2 * MIB, 0);
	if (q == MAP_FAILED)
		fail("mremap", "shrinking failed");
	else
		h = fnv1a(q, 2 * MIB, h);
	munmap(q, 2 * MIB);
	return h;
}

static uint64_t test_malloc(size_t big)
{
	enum { N = 2000 };
	static unsigned char *blk[N];
	size_t sz[N];
	uint64_t h = FNV_INIT;
	unsigned char *z;

	for (int i = 0; i < N; i++) {
		sz[i] = (size_t)(i * 7919) % (64 * KIB) + 1;
		blk[i] = malloc(sz[i]);
		if (!blk[i]) {
			fail("malloc", "out of memory");
			return 0;
		}
		fill(blk[i], sz[i], (unsigned)i);
	}
	for (int i = 0; i < N; i += 2) {
		h = fnv1a(blk[i], sz[i], h);
		free(blk[i]);
	}
	for (int i = 1; i < N; i += 2) {
		h = fnv1a(blk[i], sz[i], h);
		free(blk[i]);
	}
	/* Large enough that both glibc and musl take it straight from mmap. */
	z = calloc(1, big);
	if (!z) {
		fail("malloc", "calloc of the large block failed");
		return h;
	}
	if (!is_zero(z, big))
		fail("malloc", "calloc memory is not zero");
	fill(z, big, 5);
	h = fnv1a(z, big, h);
	z = realloc(z, 2 * big);
	if (!z) {
		fail("malloc", "realloc failed");
		return h;
	}
	h = fnv1a(z, big, h);
	free(z);
	return h;
}

int main(int argc, char **argv)
{
	uint64_t hb = test_brk();
	long mib = argc > 1 ? strtol(argv[1], NULL, 10) : 16;
	size_t size;

	if (mib < 4 || mib > 4096) {
		printf("usage: memtouch [MIB from 4 to 4096]\n");
		return 2;
	}
	size = (size_t)mib * MIB;
	printf("brk %016llx\n", (unsigned long long)hb);
	printf("mmap %zu MiB %016llx\n", size / MIB, (unsigned long long)test_mmap(size));
	printf("mremap %016llx\n", (unsigned long long)test_mremap());
	printf("malloc %016llx\n", (unsigned long long)test_malloc(size / 2));
	if (failures) {
		printf("memtouch: %d checks failed\n", failures);
		return 1;
	}
	printf("memtouch ok\n");
	return 0;
}
