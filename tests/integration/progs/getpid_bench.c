// SPDX-License-Identifier: MIT
/*
 * getpid_bench [N]: the cost of one system call round trip, measured with a
 * bare `syscall` instruction for getpid (glibc caches nothing here, and no
 * wrapper code is timed), and the cost of clock_gettime(CLOCK_MONOTONIC).
 * Prints "getpid_ns X", "getpid_cycles X", "clock_gettime_ns X" and
 * "iterations N"; tools/bench/bench.sh reads these lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <x86intrin.h>

#define WARMUP 1000

static inline long raw_getpid(void)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_getpid) : "rcx", "r11", "memory");
	return ret;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
	long pid, bad = 0;
	double t0, t1, getpid_ns, clock_ns;
	uint64_t c0, c1;
	struct timespec ts;

	if (n <= 0) {
		fprintf(stderr, "usage: getpid_bench [ITERATIONS > 0]\n");
		return 2;
	}
	pid = raw_getpid();
	if (pid <= 0) {
		printf("getpid returned %ld\n", pid);
		return 1;
	}
	for (int i = 0; i < WARMUP; i++)
		bad += raw_getpid() != pid;

	t0 = now_ns();
	c0 = __rdtsc();
	for (long i = 0; i < n; i++)
		bad += raw_getpid() != pid;
	c1 = __rdtsc();
	t1 = now_ns();
	getpid_ns = (t1 - t0) / (double)n;

	for (int i = 0; i < WARMUP; i++)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	t1 = now_ns();
	clock_ns = (t1 - t0) / (double)n;

	if (bad) {
		printf("getpid changed its answer %ld times\n", bad);
		return 1;
	}
	printf("getpid_ns %.1f\n", getpid_ns);
	printf("getpid_cycles %.1f\n", (double)(c1 - c0) / (double)n);
	printf("clock_gettime_ns %.1f\n", clock_ns);
	printf("iterations %ld\n", n);
	return 0;
}
