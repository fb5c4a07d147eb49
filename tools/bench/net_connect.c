/* SPDX-License-Identifier: MIT */
/*
 * N TCP connects to ADDR:PORT, each closed at once; prints the median, p10,
 * p90 and minimum connect() time. Static, so that it runs in a sandbox of
 * the initramfs alone (tools/bench/net_connect_events.sh).
 *
 *   net_connect ADDR PORT N [stamps]
 *
 * With "stamps", a line "F <TSC ticks per us>" (over the whole loop) and a
 * line "T <tsc before> <tsc after>" per connect follow:
 * the TSC a kiln guest reads is the host's, so tools/bench/net_connect_hops.py
 * can place the host's hop timestamps (include/kiln/trace.h) inside each.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	bool stamps = argc == 5 && !strcmp(argv[4], "stamps");
	unsigned long long *tsc, tsc0;
	int n, fails = 0;
	double *t, t0all;

	if ((argc != 4 && !stamps) || inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 ||
	    (n = atoi(argv[3])) < 0) {
		fprintf(stderr, "usage: net_connect ADDR PORT N [stamps]\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	t = malloc(sizeof(*t) * ((size_t)n + 1));
	tsc = malloc(sizeof(*tsc) * 2 * ((size_t)n + 1));
	if (!t || !tsc)
		return 1;
	t0all = now();
	tsc0 = __rdtsc();
	for (int i = 0; i < n; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		double t0 = now();

		tsc[2 * i] = __rdtsc();
		if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)))
			fails++;
		tsc[2 * i + 1] = __rdtsc();
		t[i] = now() - t0;
		close(s);
	}
	if (stamps && n)
		printf("F %.3f\n", (double)(__rdtsc() - tsc0) / ((now() - t0all) * 1e6));
	if (n) {
		qsort(t, (size_t)n, sizeof(*t), cmp);
		printf("connect median %.1f us, p10 %.1f, p90 %.1f, min %.1f (n=%d, %d failed)\n",
		       t[n / 2] * 1e6, t[n / 10] * 1e6, t[n * 9 / 10] * 1e6, t[0] * 1e6, n, fails);
	}
	for (int i = 0; stamps && i < n; i++)
		printf("T %llu %llu\n", tsc[2 * i], tsc[2 * i + 1]);
	return fails != 0;
}
