// SPDX-License-Identifier: MIT
/*
 * hugemem: memory that a program fills front to back, which kiln maps with
 * 2 MiB pages, and everything that cuts one up: fork, munmap, mprotect and
 * MADV_DONTNEED of a part, mremap. Prints one line per check; the output is
 * the same on Linux, so the integration tests compare it with the host's.
 *
 * Guest only (the numbers depend on the guest's memory):
 *   hugemem fill   fill memory until little is left: 2 MiB pages while it
 *                  is plentiful, 4 KiB ones after, no one killed
 *   hugemem fork   fill half of memory, fork, the child checks all of it
 *                  (copies in 2 MiB pages, in 4 KiB ones once memory runs
 *                  short)
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096UL
#define MIB  (1UL << 20)
#define HUGE (2 * MIB)

static const char *yes(int ok)
{
	return ok ? "yes" : "NO";
}

/* len bytes of fresh anonymous memory at a 2 MiB boundary. */
static unsigned char *map_aligned(size_t len)
{
	unsigned char *p =
	    mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t head;

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	head = (HUGE - (unsigned long)p % HUGE) % HUGE;
	if (head)
		munmap(p, head);
	munmap(p + head + len, HUGE - head);
	return p + head;
}

/* Page i of [p, p + len) gets bytes (seed + i) at its start and end. */
static void fill(unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len / PAGE; i++) {
		p[i * PAGE] = (unsigned char)(seed + i);
		p[i * PAGE + PAGE - 1] = (unsigned char)(seed + i);
	}
}

/* Does [p, p + len) hold fill(start, ..., seed) from page first on? */
static int check(const unsigned char *p, size_t len, unsigned seed, size_t first)
{
	for (size_t i = 0; i < len / PAGE; i++)
		if (p[i * PAGE] != (unsigned char)(seed + first + i) ||
		    p[i * PAGE + PAGE - 1] != (unsigned char)(seed + first + i))
			return 0;
	return 1;
}

static int zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i += 512)
		if (p[i])
			return 0;
	return 1;
}

static sigjmp_buf jb;

static void on_segv(int sig)
{
	siglongjmp(jb, sig);
}

/* Does reading (write 0) or writing (write 1) at p fault? */
static int faults(volatile unsigned char *p, int write)
{
	int hit = 0;

	signal(SIGSEGV, on_segv);
	if (!sigsetjmp(jb, 1)) {
		if (write)
			*p = *p;
		else
			(void)*p;
	} else {
		hit = 1;
	}
	signal(SIGSEGV, SIG_DFL);
	return hit;
}

/* A child sees the parent's memory, its own writes stay its own. */
static void forked(unsigned char *p, size_t len)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int ok = check(p, len, 1, 0);
		fill(p, len, 2);
		_exit(ok && check(p, len, 2, 0) ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	printf("fork: child sees the parent's memory: %s\n",
	       yes(WIFEXITED(status) && !WEXITSTATUS(status)));
	printf("fork: the child's writes stay its own: %s\n", yes(check(p, len, 1, 0)));
}

/* [p, p + 2M): one page unmapped in the middle. */
static void munmap_part(unsigned char *p)
{
	printf("munmap one page of a 2 MiB page: %s\n", yes(!munmap(p + 8 * PAGE, PAGE)));
	printf("  the pages around it kept: %s\n",
	       yes(check(p, 8 * PAGE, 1, 0) && check(p + 9 * PAGE, HUGE - 9 * PAGE, 1, 9)));
	printf("  it faults: %s\n", yes(faults(p + 8 * PAGE, 0)));
}

/* [p, p + 2M): one page read-only, then all of it and back. */
static void mprotect_part(unsigned char *p)
{
	unsigned char *q = p + MIB;

	printf("mprotect one page read-only: %s\n", yes(!mprotect(q, PAGE, PROT_READ)));
	printf("  it reads: %s\n", yes(check(q, PAGE, 1, MIB / PAGE)));
	printf("  it does not write: %s\n", yes(faults(q, 1)));
	printf("  the pages around it still write: %s\n",
	       yes(!faults(q - PAGE, 1) && !faults(q + PAGE, 1)));
	printf("mprotect 2 MiB read-only and back: %s\n",
	       yes(!mprotect(p, HUGE, PROT_READ) && faults(p + HUGE - PAGE, 1) &&
	           !mprotect(p, HUGE, PROT_READ | PROT_WRITE) && !faults(p + HUGE - PAGE, 1)));
	printf("  bytes kept: %s\n", yes(check(p, HUGE, 1, 0)));
}

/* [p, p + 4M): two pages of the first 2 MiB dropped, then all of the second. */
static void dontneed(unsigned char *p)
{
	printf("DONTNEED two pages of a 2 MiB page: %s\n",
	       yes(!madvise(p + PAGE, 2 * PAGE, MADV_DONTNEED)));
	printf("  they read zero: %s\n", yes(zero(p + PAGE, 2 * PAGE)));
	printf("  the rest kept: %s\n",
	       yes(check(p, PAGE, 1, 0) && check(p + 3 * PAGE, HUGE - 3 * PAGE, 1, 3)));
	printf("DONTNEED a whole 2 MiB page: %s\n", yes(!madvise(p + HUGE, HUGE, MADV_DONTNEED)));
	printf("  it reads zero: %s\n", yes(zero(p + HUGE, HUGE)));
	fill(p + HUGE, HUGE, 7);
	printf("  and takes new bytes: %s\n", yes(check(p + HUGE, HUGE, 7, 0)));
}

/* [p, p + 4M): moved and grown to 8 MiB, then shrunk to 3 MiB and a page. */
static void mremap_part(unsigned char *p)
{
	unsigned char *q = mremap(p, 4 * MIB, 8 * MIB, MREMAP_MAYMOVE);

	printf("mremap 4 MiB to 8 MiB: %s\n", yes(q != MAP_FAILED));
	if (q == MAP_FAILED)
		return;
	printf("  bytes kept: %s\n", yes(check(q, 4 * MIB, 1, 0)));
	printf("  the new part reads zero: %s\n", yes(zero(q + 4 * MIB, 4 * MIB)));
	printf("mremap down to 3 MiB and a page: %s\n",
	       yes(mremap(q, 8 * MIB, 3 * MIB + PAGE, 0) == q));
	printf("  bytes kept: %s\n", yes(check(q, 3 * MIB + PAGE, 1, 0)));
	printf("  past the end faults: %s\n", yes(faults(q + 3 * MIB + PAGE, 0)));
	munmap(q, 3 * MIB + PAGE);
}

/* Resident KiB, from /proc/self/statm. */
static long resident_kb(void)
{
	long size = 0, pages = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &size, &pages) != 2)
		pages = -1;
	if (f)
		fclose(f);
	return pages * (long)(PAGE / 1024);
}

static int checks(void)
{
	size_t len = 16 * MIB;
	long before = resident_kb(), grown;
	unsigned char *p = map_aligned(len);

	fill(p, len, 1);
	grown = resident_kb() - before;
	printf("fill 16 MiB front to back: %s\n", yes(check(p, len, 1, 0)));
	printf("  resident grows by 16 MiB: %s\n", yes(grown >= 16 * 1024 && grown < 17 * 1024));
	forked(p, len);
	munmap_part(p);
	mprotect_part(p + HUGE);
	dontneed(p + 2 * HUGE);
	mremap_part(p + 4 * HUGE);
	printf("munmap all: %s\n", yes(!munmap(p, len)));
	printf("  resident back where it was: %s\n", yes(resident_kb() - before < 1024));
	p = map_aligned(64 * MIB);
	fill(p, 64 * MIB, 3);
	printf("fill 64 MiB more: %s\n", yes(check(p, 64 * MIB, 3, 0)));
	munmap(p, 64 * MIB);
	return 0;
}

/* A kB figure from /proc/meminfo or /proc/self/status. */
static long kb_of(const char *file, const char *key)
{
	char line[256];
	long kb = -1;
	size_t n = strlen(key);
	FILE *f = fopen(file, "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			kb = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* Fill all but 12 MiB of free memory: 2 MiB pages first, then (memory no
 * longer plentiful) 4 KiB ones. */
static int fill_memory(void)
{
	long free_kb = kb_of("/proc/meminfo", "MemFree");
	size_t len = ((size_t)free_kb * 1024 - 12 * MIB) & ~(HUGE - 1);
	unsigned char *p = map_aligned(len);
	long huge_kb, rss_kb;

	fill(p, len, 5);
	huge_kb = kb_of("/proc/meminfo", "AnonHugePages");
	rss_kb = kb_of("/proc/self/status", "VmRSS");
	printf("filled all but 12 MiB: %s\n", yes(check(p, len, 5, 0)));
	printf("2 MiB pages: %s\n", yes(huge_kb >= 32 * 1024));
	printf("4 KiB pages once memory ran short: %s\n", yes(rss_kb - huge_kb >= 4 * 1024));
	printf("resident: %s\n", yes(rss_kb * 1024 >= (long)len));
	return 0;
}

/* Fill half of what is left (less 7 MiB) and fork: the child's copy takes
 * 2 MiB pages while memory is plentiful, 4 KiB ones after. */
static int fork_filled(void)
{
	size_t len = ((size_t)kb_of("/proc/meminfo", "MemFree") * 1024 / 2 - 7 * MIB) & ~(HUGE - 1);
	unsigned char *p = map_aligned(len);
	int status;
	pid_t pid;

	fill(p, len, 6);
	pid = fork();
	if (pid == 0) {
		/* Of all the 2 MiB pages, the parent has len bytes' worth. */
		long small_kb = kb_of("/proc/self/status", "VmRSS") -
		                (kb_of("/proc/meminfo", "AnonHugePages") - (long)(len / 1024));
		printf("the child got 4 KiB copies once memory ran short: %s\n",
		       yes(small_kb >= 2 * 1024));
		_exit(check(p, len, 6, 0) ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	printf("the child of a process filling half of memory sees it all: %s\n",
	       yes(WIFEXITED(status) && !WEXITSTATUS(status)));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && !strcmp(argv[1], "fill"))
		return fill_memory();
	if (argc > 1 && !strcmp(argv[1], "fork"))
		return fork_filled();
	return checks();
}
