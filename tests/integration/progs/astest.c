/* SPDX-License-Identifier: MIT */
/* RLIMIT_AS (cases/rlimits.sh): under a soft limit of 256 MiB, an mmap of
 * 16 MiB works and one of 1 GiB fails with ENOMEM, brk cannot grow by
 * 1 GiB, mremap cannot grow the 16 MiB to 1 GiB, a MAP_FIXED of 200 MiB
 * over a 200 MiB mapping counts it once; with the limit raised back, 1 GiB maps.
 * The same answers as on the host. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define MIB (1UL << 20)

static const char *res(void *p)
{
	return p != MAP_FAILED ? "works" : errno == ENOMEM ? "ENOMEM" : "another error";
}

static void *anon(size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

int main(void)
{
	struct rlimit rl;
	void *small, *big, *brk0, *again;

	getrlimit(RLIMIT_AS, &rl);
	rl.rlim_cur = 256 * MIB;
	if (setrlimit(RLIMIT_AS, &rl)) {
		perror("astest: setrlimit");
		return 2;
	}
	small = anon(16 * MIB);
	printf("mmap 16 MiB under AS 256 MiB: %s\n", res(small));
	big = anon(1024 * MIB);
	printf("mmap 1 GiB: %s\n", res(big));
	brk0 = sbrk(0);
	printf("brk up by 1 GiB: %s\n", brk((char *)brk0 + 1024 * MIB) ? "refused" : "works");
	again = mremap(small, 16 * MIB, 1024 * MIB, MREMAP_MAYMOVE);
	printf("mremap 16 MiB to 1 GiB: %s\n", res(again));
	munmap(small, 16 * MIB);
	/* 2 x 200 MiB is past the limit: over itself it is counted once */
	small =
	    mmap(NULL, 200 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	printf("mmap 200 MiB: %s\n", res(small));
	again = mmap(small, 200 * MIB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	printf("MAP_FIXED of 200 MiB over it: %s\n", res(again));
	munmap(small, 200 * MIB);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_AS, &rl);
	big = anon(1024 * MIB);
	printf("mmap 1 GiB with the limit raised: %s\n", res(big));
	return 0;
}
