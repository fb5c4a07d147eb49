/* fork+exec+wait of a program, N times: prints the median and min in
 * microseconds. Also fork+wait alone (the child exits at once), and fork
 * with a given amount of the parent's memory dirtied, which is where
 * copy-on-write and eager copying differ. Usage: forkbench N PROGRAM [MiB] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%s_us median %.1f min %.1f\n", what, t[n / 2], t[0]);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	const char *prog = argc > 2 ? argv[2] : "/bin/true";
	size_t mib = argc > 3 ? (size_t)atoi(argv[3]) : 0;
	double *t = calloc((size_t)n, sizeof(double));
	char *mem = mib ? malloc(mib << 20) : NULL;
	int st;

	if (!t || (mib && !mem) || n < 1)
		return 2;
	if (mem)
		memset(mem, 1, mib << 20);
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		pid_t pid = fork();
		if (pid == 0) {
			execl(prog, prog, (char *)NULL);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "forkbench: %s failed\n", prog);
			return 1;
		}
		t[i] = now_us() - t0;
	}
	report("fork_exec_wait", t, n);
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return 1;
		t[i] = now_us() - t0;
	}
	report("fork_wait", t, n);
	return 0;
}
