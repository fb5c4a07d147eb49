/* SPDX-License-Identifier: MIT */
/*
 * TCP throughput against the server of tools/bench/net_bench.py: MIB MiB
 * sent to its sink (PORT) and MIB MiB read from its source (PORT+1), in
 * 1 MiB calls as net_bench.py makes them. Prints "up X MB/s  down Y MB/s";
 * with "up" or "down" after MIB, only that direction runs (0 for the other).
 * "stall" asks the source for MIB MiB, reads 1 MiB of it and then nothing
 * for 20 s (a reader that stops: what do the VMM and kilnd hold then?).
 * Static, so that it runs in a sandbox of the initramfs alone
 * (tools/bench/net_tput_events.sh).
 *
 *   net_tput ADDR PORT MIB [up|down|stall]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int dial(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
		perror("net_tput: connect");
		exit(1);
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, 0);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	long long mib, mib_up, mib_down, got = 0, k = 0;
	const char *dir = argc == 5 ? argv[4] : "both";
	double t0, up = 0, down = 0;
	char line[64], *buf;
	ssize_t r;
	int fd, len;

	if ((argc != 4 && argc != 5) || inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 ||
	    (mib = atoll(argv[3])) < 0 ||
	    (strcmp(dir, "both") && strcmp(dir, "up") && strcmp(dir, "down") &&
	     strcmp(dir, "stall"))) {
		fprintf(stderr, "usage: net_tput ADDR PORT MIB [up|down|stall]\n");
		return 2;
	}
	mib_up = !strcmp(dir, "both") || !strcmp(dir, "up") ? mib : 0;
	mib_down = strcmp(dir, "up") ? mib : 0;
	if (!(buf = malloc(CHUNK)))
		return 1;
	memset(buf, 'x', CHUNK);
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	if (!mib_up)
		goto download;
	fd = dial(&sa);
	t0 = now();
	for (long long i = 0; i < mib_up; i++)
		if (send_all(fd, buf, CHUNK)) {
			perror("net_tput: send");
			return 1;
		}
	shutdown(fd, SHUT_WR);
	len = 0;
	while (len < (int)sizeof(line) - 1 && (r = recv(fd, line + len, 1, 0)) == 1 &&
	       line[len] != '\n')
		len++;
	line[len] = 0;
	got = atoll(line);
	up = (double)got / (now() - t0) / 1e6;
	close(fd);
download:
	if (!mib_down)
		goto out;
	sa.sin_port = htons((uint16_t)(atoi(argv[2]) + 1));
	fd = dial(&sa);
	t0 = now();
	len = snprintf(line, sizeof(line), "%lld\n", mib_down);
	if (send_all(fd, line, (size_t)len))
		return 1;
	if (!strcmp(dir, "stall")) {
		while (k < CHUNK && (r = recv(fd, buf, CHUNK - (size_t)k, 0)) > 0)
			k += r;
		sleep(20);
		printf("stalled after %lld bytes\n", k);
		return 0;
	}
	while ((r = recv(fd, buf, CHUNK, 0)) > 0)
		k += r;
	down = (double)k / (now() - t0) / 1e6;
	close(fd);
out:
	printf("up %.0f MB/s  down %.0f MB/s  (%lld MiB)\n", up, down, mib);
	if (got != mib_up * CHUNK || k != mib_down * CHUNK) {
		printf("net_tput: bytes lost: sent %lld, the sink got %lld; asked %lld, got %lld\n",
		       mib_up * CHUNK, got, mib_down * CHUNK, k);
		return 1;
	}
	return 0;
}
