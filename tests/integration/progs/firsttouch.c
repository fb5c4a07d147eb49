// SPDX-License-Identifier: MIT
/*
 * firsttouch [MIB]: the cost of touching fresh memory (make bench). Maps MIB
 * MiB (default 64) of anonymous memory, writes one byte per 4 KiB page,
 * unmaps it; twice. The first round meets memory the machine never gave
 * this program (in a fresh VM: never touched by the guest either), the
 * second memory freed by the first. Prints
 *   first_touch_us_per_page US
 *   first_touch_mbps MBPS
 *   again_us_per_page US
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096UL

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Microseconds to touch every page of a fresh len-byte mapping. */
static double touch_round(size_t len)
{
	volatile unsigned char *p =
	    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t0, t;

	if (p == MAP_FAILED) {
		perror("firsttouch: mmap");
		exit(1);
	}
	t0 = now_us();
	for (size_t off = 0; off < len; off += PAGE)
		p[off] = 1;
	t = now_us() - t0;
	munmap((void *)p, len);
	return t;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64, len = mib << 20;
	double first, again;

	if (!mib) {
		fprintf(stderr, "usage: firsttouch [MIB]\n");
		return 2;
	}
	first = touch_round(len);
	again = touch_round(len);
	printf("first_touch_us_per_page %.2f\n", first / (double)(len / PAGE));
	printf("first_touch_mbps %.0f\n", (double)len / first);
	printf("again_us_per_page %.2f\n", again / (double)(len / PAGE));
	return 0;
}
