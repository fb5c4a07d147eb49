/* Pipe throughput between two processes: the child writes N MiB in 64 KiB
 * writes, the parent reads them all. Prints MB/s (median of 5 rounds).
 * Usage: pipebench [MiB] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double round_mbps(size_t mib)
{
	static char buf[CHUNK];
	size_t total = mib << 20, got = 0;
	int fds[2];
	double t0;
	pid_t pid;

	if (pipe(fds) < 0)
		exit(1);
	t0 = now_s();
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		memset(buf, 'k', sizeof(buf));
		for (size_t done = 0; done < total;) {
			ssize_t w = write(fds[1], buf, CHUNK);
			if (w <= 0)
				_exit(1);
			done += (size_t)w;
		}
		_exit(0);
	}
	close(fds[1]);
	while (got < total) {
		ssize_t r = read(fds[0], buf, sizeof(buf));
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fds[0]);
	waitpid(pid, NULL, 0);
	if (got != total) {
		fprintf(stderr, "pipebench: short transfer\n");
		exit(1);
	}
	return total / 1e6 / (now_s() - t0);
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64;
	double r[5];

	for (int i = 0; i < 5; i++)
		r[i] = round_mbps(mib);
	qsort(r, 5, sizeof(r[0]), cmp);
	printf("pipe_mbps %.0f\n", r[2]);
	return 0;
}
