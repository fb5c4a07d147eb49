// SPDX-License-Identifier: MIT
/*
 * kiln-bench-boot: how long a command (a kiln-vmm invocation) takes to print
 * its first byte and to finish, over repeated runs.
 *
 *   kiln-bench-boot [-n RUNS] [-x STATUS] [-t SECONDS] [-s] -- COMMAND [ARGS...]
 *
 * Each run forks and execs COMMAND with stdin from /dev/null, stdout to a
 * pipe and stderr to a temporary file. Time is taken (CLOCK_MONOTONIC) just
 * before fork, at the first byte read from the pipe, and when wait4 returns;
 * wait4's ru_maxrss is the command's peak RSS. With -s, one more run is made
 * with "--stats" inserted after COMMAND, and the "kiln-vmm: NAME: N kB" lines
 * it prints on stderr are reported.
 *
 * Output, one measurement per line, for tools/bench/bench.sh to read:
 *   runs N
 *   first_byte_ms median M min M p90 M
 *   whole_run_ms median M min M p90 M
 *   peak_rss_kib median K max K
 *   stats_RssAnon_kib K ...            (with -s, one line per stats value)
 *   private_rss_kib K                  (with -s: RssAnon, the VMM's own memory)
 * Exits 1 if a run fails (status other than STATUS, default 0, or a timeout),
 * after printing the failing run's status and stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct run {
	double first_byte_ms; /* < 0: the command printed nothing */
	double whole_ms;
	long maxrss_kib;
	int status; /* exit status, or 128 + signal */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void usage(void)
{
	fprintf(stderr, "usage: kiln-bench-boot [-n RUNS] [-x STATUS] [-t SECONDS] [-s] -- COMMAND "
	                "[ARGS...]\n");
	exit(2);
}

/* Runs argv once; the child's stderr goes to errfd. Returns 0, or -1 with a
 * message on stderr if the run could not be made or timed out. */
static int run_once(char **argv, int errfd, int timeout_s, struct run *r)
{
	struct rusage ru;
	char buf[65536];
	double t0, deadline;
	int pipefd[2], st, devnull;
	pid_t pid;

	if (pipe(pipefd) < 0) {
		perror("kiln-bench-boot: pipe");
		return -1;
	}
	r->first_byte_ms = -1;
	t0 = now_ms();
	pid = fork();
	if (pid < 0) {
		perror("kiln-bench-boot: fork");
		return -1;
	}
	if (pid == 0) {
		devnull = open("/dev/null", O_RDONLY);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(pipefd[1], 1) < 0 ||
		    dup2(errfd, 2) < 0)
			_exit(127);
		close(pipefd[0]);
		close(pipefd[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "kiln-bench-boot: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	deadline = t0 + timeout_s * 1e3;
	for (;;) {
		struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
		double left = deadline - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left + 1) == 0) {
			fprintf(stderr, "kiln-bench-boot: %s: no end after %d s; killed\n", argv[0],
			        timeout_s);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(pipefd[0]);
			return -1;
		}
		n = read(pipefd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (r->first_byte_ms < 0)
			r->first_byte_ms = now_ms() - t0;
	}
	close(pipefd[0]);
	while (wait4(pid, &st, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("kiln-bench-boot: wait4");
			return -1;
		}
	}
	r->whole_ms = now_ms() - t0;
	r->maxrss_kib = ru.ru_maxrss;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v[0..n) and prints "name median M min M p90 M" (p90: nearest rank). */
static void print_dist(const char *name, double *v, int n)
{
	double median;
	int p90;

	if (n == 0) {
		printf("%s none\n", name);
		return;
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	p90 = (9 * n + 9) / 10 - 1; /* ceil(0.9 n) - 1 */
	printf("%s median %.3f min %.3f p90 %.3f\n", name, median, v[0], v[p90]);
}

static void dump_stderr(int errfd)
{
	char buf[4096];
	ssize_t n;

	if (lseek(errfd, 0, SEEK_SET) < 0)
		return;
	while ((n = read(errfd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stderr);
}

/* One run with --stats after argv[0]; prints the "kiln-vmm: X: N kB" values. */
static int stats_run(int argc, char **argv, int errfd, int timeout_s, int want)
{
	char **sargv = calloc((size_t)argc + 2, sizeof(*sargv));
	char line[512];
	long anon = -1, file = -1;
	struct run r = {.status = -1};
	FILE *f;
	int found = 0;

	if (!sargv)
		return -1;
	sargv[0] = argv[0];
	sargv[1] = "--stats";
	memcpy(sargv + 2, argv + 1, (size_t)argc * sizeof(*sargv)); /* includes NULL */
	if (ftruncate(errfd, 0) < 0 || lseek(errfd, 0, SEEK_SET) < 0 ||
	    run_once(sargv, errfd, timeout_s, &r) < 0 || r.status != want) {
		fprintf(stderr, "kiln-bench-boot: the --stats run failed (status %d)\n", r.status);
		dump_stderr(errfd);
		free(sargv);
		return -1;
	}
	free(sargv);
	f = fdopen(dup(errfd), "r");
	if (!f || fseek(f, 0, SEEK_SET) < 0)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char name[64];
		long kib;

		if (sscanf(line, "kiln-vmm: %63[A-Za-z]: %ld kB", name, &kib) != 2)
			continue;
		printf("stats_%s_kib %ld\n", name, kib);
		found++;
		if (!strcmp(name, "RssAnon"))
			anon = kib;
		else if (!strcmp(name, "RssFile"))
			file = kib;
	}
	fclose(f);
	/* RssFile is shared: libraries and the initramfs page cache serve every
	 * VM on the host. What one more VM costs beyond its guest RAM is the
	 * VMM's anonymous memory. */
	if (anon >= 0 && file >= 0)
		printf("private_rss_kib %ld\n", anon);
	if (!found)
		fprintf(stderr,
		        "kiln-bench-boot: --stats printed no \"kiln-vmm: NAME: N kB\" lines\n");
	return found ? 0 : -1;
}

int main(int argc, char **argv)
{
	int runs = 20, want = 0, timeout_s = 60, stats = 0, nfirst = 0, c;
	double *first, *whole, *rss;
	FILE *errf;
	int errfd;

	while ((c = getopt(argc, argv, "+n:x:t:s")) != -1) {
		switch (c) {
		case 'n':
			runs = atoi(optarg);
			break;
		case 'x':
			want = atoi(optarg);
			break;
		case 't':
			timeout_s = atoi(optarg);
			break;
		case 's':
			stats = 1;
			break;
		default:
			usage();
		}
	}
	if (optind >= argc || runs < 1 || timeout_s < 1)
		usage();
	argv += optind;
	argc -= optind;

	errf = tmpfile();
	first = calloc((size_t)runs, sizeof(*first));
	whole = calloc((size_t)runs, sizeof(*whole));
	rss = calloc((size_t)runs, sizeof(*rss));
	if (!errf || !first || !whole || !rss) {
		perror("kiln-bench-boot");
		return 1;
	}
	errfd = fileno(errf);
	signal(SIGPIPE, SIG_IGN);

	for (int i = 0; i < runs; i++) {
		struct run r;

		if (ftruncate(errfd, 0) < 0 || lseek(errfd, 0, SEEK_SET) < 0 ||
		    run_once(argv, errfd, timeout_s, &r) < 0) {
			dump_stderr(errfd);
			return 1;
		}
		if (r.status != want) {
			fprintf(
			    stderr,
			    "kiln-bench-boot: run %d of %s: status %d, expected %d; its stderr:\n",
			    i + 1, argv[0], r.status, want);
			dump_stderr(errfd);
			return 1;
		}
		if (r.first_byte_ms >= 0)
			first[nfirst++] = r.first_byte_ms;
		whole[i] = r.whole_ms;
		rss[i] = (double)r.maxrss_kib;
	}
	printf("runs %d\n", runs);
	print_dist("first_byte_ms", first, nfirst);
	print_dist("whole_run_ms", whole, runs);
	qsort(rss, (size_t)runs, sizeof(*rss), cmp_double);
	printf("peak_rss_kib median %.0f max %.0f\n",
	       runs % 2 ? rss[runs / 2] : (rss[runs / 2 - 1] + rss[runs / 2]) / 2, rss[runs - 1]);
	fflush(stdout);
	if (stats && stats_run(argc, argv, errfd, timeout_s, want) < 0)
		return 1;
	return 0;
}
