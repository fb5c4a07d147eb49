// SPDX-License-Identifier: MIT
/*
 * protnone: pages made PROT_NONE by mprotect after they were filled (a
 * thread stack's guard page) must fault on any access, read or write, by
 * the program (SIGSEGV) or by a system call (EFAULT), in a forked child
 * too, and get their contents back when made accessible again. Also a
 * page that was read-only and read just before, and a 2 MiB region filled
 * front to back (a huge page where the kernel makes them). Prints one line
 * per check; the output is the same on Linux, so the integration tests
 * compare it with the host's.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN   (64 * 1024)
#define MIB   (1UL << 20)
#define PAGE  4096
#define GUARD (4 * PAGE) /* the page made PROT_NONE, an offset in the 64 KiB */

static sigjmp_buf jump;

static void on_segv(int sig)
{
	siglongjmp(jump, 1);
}

static const char *yes(int ok)
{
	return ok ? "yes" : "NO";
}

/* Does reading the byte at p fault? */
static int read_faults(volatile const unsigned char *p)
{
	if (sigsetjmp(jump, 1))
		return 1;
	(void)*p;
	return 0;
}

static int write_faults(volatile unsigned char *p)
{
	if (sigsetjmp(jump, 1))
		return 1;
	*p = 1;
	return 0;
}

/* Does write(2) from p fail with EFAULT? */
static int syscall_efaults(const void *p)
{
	int fds[2], ok;

	if (pipe(fds))
		return 0;
	ok = write(fds[1], p, 16) < 0 && errno == EFAULT;
	close(fds[0]);
	close(fds[1]);
	return ok;
}

static void fill(unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + i / PAGE);
}

static int intact(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (unsigned char)(i * 7 + i / PAGE))
			return 0;
	return 1;
}

/* The checks on p + off, PROT_NONE now, then made read-write again. */
static void check_none(const char *who, unsigned char *p, size_t len, size_t off, size_t n)
{
	printf("%s: read faults: %s\n", who,
	       yes(read_faults(p + off) && read_faults(p + off + n - 1)));
	printf("%s: write faults: %s\n", who, yes(write_faults(p + off)));
	printf("%s: write(2) from it: EFAULT: %s\n", who, yes(syscall_efaults(p + off)));
	printf("%s: the rest readable: %s\n", who,
	       yes(off ? !read_faults(p + off - 1) : !read_faults(p + off + n)));
	printf("%s: mprotect back to RW: %s\n", who,
	       yes(!mprotect(p + off, n, PROT_READ | PROT_WRITE)));
	printf("%s: contents intact: %s\n", who, yes(intact(p, len)));
}

static void filled_page(void)
{
	unsigned char *p =
	    mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pid_t pid;
	int status;

	if (p == MAP_FAILED) {
		perror("mmap");
		return;
	}
	fill(p, LEN);
	printf("mprotect PROT_NONE: %s\n", yes(!mprotect(p + GUARD, PAGE, PROT_NONE)));
	pid = fork();
	if (pid == 0) {
		check_none("child", p, LEN, GUARD, PAGE);
		fflush(stdout);
		_exit(0);
	}
	printf("fork: child exits 0: %s\n", yes(pid > 0 && waitpid(pid, &status, 0) == pid &&
	                                        WIFEXITED(status) && !WEXITSTATUS(status)));
	check_none("parent", p, LEN, GUARD, PAGE);
	printf("munmap with a PROT_NONE page: %s\n",
	       yes(!mprotect(p, PAGE, PROT_NONE) && !munmap(p, LEN)));
	printf("unmapped: read faults: %s\n", yes(read_faults(p)));
}

/* A read-only page read just before: the read must not stay allowed. */
static void read_only_page(void)
{
	unsigned char *p =
	    mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	fill(p, LEN);
	mprotect(p, LEN, PROT_READ);
	printf("read-only page readable: %s\n", yes(!read_faults(p + GUARD)));
	mprotect(p + GUARD, PAGE, PROT_NONE);
	check_none("read-only then none", p, LEN, GUARD, PAGE);
	munmap(p, LEN);
}

/* A small PROT_NONE reservation made read-write: zero-filled. */
static void reservation(void)
{
	unsigned char *p = mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int zero = 1;

	if (p == MAP_FAILED)
		return;
	printf("reservation: read faults: %s\n", yes(read_faults(p + LEN / 2)));
	printf("reservation: write(2) from it: EFAULT: %s\n", yes(syscall_efaults(p)));
	mprotect(p, LEN, PROT_READ | PROT_WRITE);
	for (size_t i = 0; i < LEN; i++)
		zero &= p[i] == 0;
	printf("reservation made RW: zeroed: %s\n", yes(zero));
	munmap(p, LEN);
}

/* 2 MiB-aligned 2 MiB filled front to back, then PROT_NONE whole and in part. */
static void huge_region(void)
{
	unsigned char *m =
	    mmap(NULL, 6 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *p;

	if (m == MAP_FAILED)
		return;
	p = (unsigned char *)(((uintptr_t)m + 2 * MIB - 1) & ~(2 * MIB - 1));
	fill(p, 4 * MIB);
	printf("2 MiB: mprotect PROT_NONE: %s\n", yes(!mprotect(p, 2 * MIB, PROT_NONE)));
	check_none("2 MiB whole", p, 4 * MIB, 0, 2 * MIB);
	printf("2 MiB: mprotect one page PROT_NONE: %s\n",
	       yes(!mprotect(p + 2 * MIB + GUARD, PAGE, PROT_NONE)));
	check_none("2 MiB in part", p, 4 * MIB, 2 * MIB + GUARD, PAGE);
	munmap(m, 6 * MIB);
}

int main(void)
{
	struct sigaction sa = {.sa_handler = on_segv};

	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	filled_page();
	read_only_page();
	reservation();
	huge_region();
	return 0;
}
