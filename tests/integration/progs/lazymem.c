// SPDX-License-Identifier: MIT
/*
 * lazymem: large anonymous mappings whose pages appear on first touch.
 * Prints one line per check; the output is the same on Linux, so the
 * integration tests compare it with the host's.
 *
 * lazymem oom: a child touches more memory than the machine has; it must
 * die of SIGKILL and the parent must live on (guest only: the host has
 * plenty).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1UL << 20)
#define GIB (1UL << 30)

static long page_size;

/* Resident pages of this process, from /proc/self/statm. */
static long resident_pages(void)
{
	long size = 0, rss = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &size, &rss) != 2)
		rss = -1;
	if (f)
		fclose(f);
	return rss;
}

static const char *yes(int ok)
{
	return ok ? "yes" : "NO";
}

/* Touch one byte per page at stride `step` and check it read zero first. */
static int touch(unsigned char *p, size_t len, size_t step, unsigned char val)
{
	int zero = 1;

	for (size_t off = 0; off < len; off += step) {
		zero &= p[off] == 0;
		p[off] = val;
	}
	return zero;
}

static int check(const unsigned char *p, size_t len, size_t step, unsigned char val)
{
	for (size_t off = 0; off < len; off += step)
		if (p[off] != val)
			return 0;
	return 1;
}

static void reservation(void)
{
	/* 64 GiB of address space, no memory: what V8, Go and PartitionAlloc do. */
	size_t len = 64 * GIB;
	unsigned char *p =
	    mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	printf("reserve 64 GiB PROT_NONE: %s\n", yes(p != MAP_FAILED));
	if (p == MAP_FAILED)
		return;
	/* Commit a slice in the middle, use it. */
	printf("mprotect 8 MiB read-write: %s\n",
	       yes(!mprotect(p + 32 * GIB, 8 * MIB, PROT_READ | PROT_WRITE)));
	printf("slice reads zero, keeps writes: %s\n",
	       yes(touch(p + 32 * GIB, 8 * MIB, page_size, 7) &&
	           check(p + 32 * GIB, 8 * MIB, page_size, 7)));
	printf("munmap 64 GiB: %s\n", yes(!munmap(p, len)));
}

static void sparse(void)
{
	size_t len = 1 * GIB;
	long before = resident_pages();
	unsigned char *p =
	    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int status;
	pid_t pid;

	printf("map 1 GiB read-write: %s\n", yes(p != MAP_FAILED));
	if (p == MAP_FAILED)
		return;
	/* One page per MiB: 1024 pages, a few MiB resident with fault-around. */
	printf("sparse touch reads zero: %s\n", yes(touch(p, len, MIB, 1)));
	printf("sparse touch costs < 96 MiB: %s\n",
	       yes(resident_pages() - before < (long)(96 * MIB / page_size)));

	/* A child sees the parent's pages and writes its own. */
	pid = fork();
	if (pid == 0) {
		int ok = check(p, len, MIB, 1) && touch(p + page_size, len - MIB, MIB, 0);
		memset(p, 2, 4096);
		_exit(ok ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	printf("child sees the pages, untouched ones zero: %s\n",
	       yes(WIFEXITED(status) && WEXITSTATUS(status) == 0));
	printf("child's writes stay its own: %s\n", yes(check(p, len, MIB, 1)));

	/* DONTNEED: zeroes again (and the memory goes back). */
	printf("madvise DONTNEED: %s\n", yes(!madvise(p, len / 2, MADV_DONTNEED)));
	printf("discarded half reads zero: %s\n", yes(check(p, len / 2, MIB, 0)));
	printf("kept half unchanged: %s\n", yes(check(p + len / 2, len / 2, MIB, 1)));

	/* mremap moves the pages, holes stay zero. */
	p = mremap(p, len, 2 * len, MREMAP_MAYMOVE);
	printf("mremap to 2 GiB: %s\n", yes(p != MAP_FAILED));
	if (p == MAP_FAILED)
		return;
	printf("moved pages kept: %s\n",
	       yes(check(p, len / 2, MIB, 0) && check(p + len / 2, len / 2, MIB, 1)));
	printf("new part reads zero: %s\n", yes(check(p + len, len, MIB, 0)));
	printf("munmap: %s\n", yes(!munmap(p, 2 * len)));
}

/* The kernel writes into never-touched memory (read(2) into a fresh
 * buffer), and a fault inside a PROT_NONE range is SIGSEGV. */
static sigjmp_buf jb;

static void on_segv(int sig)
{
	siglongjmp(jb, sig);
}

static void kernel_writes(void)
{
	size_t len = 4 * MIB;
	unsigned char *p =
	    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open("/proc/self/statm", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, p + len - 100, 64) : -1;
	volatile unsigned char *none;

	printf("read(2) into untouched memory: %s\n", yes(n > 0 && p[len - 100] >= '0'));
	close(fd);
	munmap(p, len);

	none = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	signal(SIGSEGV, on_segv);
	if (!sigsetjmp(jb, 1)) {
		(void)none[len / 2];
		printf("PROT_NONE read faults: NO\n");
	} else {
		printf("PROT_NONE read faults: yes\n");
	}
	signal(SIGSEGV, SIG_DFL);
	munmap((void *)none, len);
}

static int oom(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		size_t len = 4 * GIB;
		unsigned char *p =
		    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(3);
		touch(p, len, page_size, 1);
		_exit(4); /* all of it fit?! */
	}
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		printf("child killed by signal %d\n", WTERMSIG(status));
	else
		printf("child exited with %d\n", WEXITSTATUS(status));
	/* The memory it had is back: map and fill 64 MiB. */
	unsigned char *q =
	    mmap(NULL, 64 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("parent fills 64 MiB afterwards: %s\n",
	       yes(q != MAP_FAILED && touch(q, 64 * MIB, page_size, 5)));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	page_size = sysconf(_SC_PAGESIZE);
	if (argc > 1 && !strcmp(argv[1], "oom"))
		return oom();
	reservation();
	sparse();
	kernel_writes();
	return 0;
}
