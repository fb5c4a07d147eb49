// SPDX-License-Identifier: MIT
/*
 * pipes: pipe and pipe2 as Linux does them. Every line printed depends only
 * on what the calls return (never on timing), so the host and the guest must
 * print the same text; exits 0 if every check passed.
 *
 *   10 MB through two pipes and two children, byte-exact; EOF; EPIPE with
 *   SIGPIPE (handled, ignored, default); atomic writes of PIPE_BUF bytes by
 *   two writers at once; O_NONBLOCK; F_GETPIPE_SZ/F_SETPIPE_SZ; FIONREAD;
 *   fstat; a read interrupted by a signal (EINTR, or restarted with
 *   SA_RESTART).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* An address no program may pass (not a low one: kiln keeps its syscall
 * trampoline at address 0, as zpoline does). */
#define BAD_PTR ((void *)0xffff800000000000UL)

static int failures;

static void check(const char *what, int ok)
{
	printf("%s: %s\n", what, ok ? "ok" : "FAIL");
	if (!ok)
		failures++;
}

static void checkf(const char *what, int ok, long got)
{
	if (ok) {
		printf("%s: ok\n", what);
	} else {
		printf("%s: FAIL (got %ld, errno %d)\n", what, got, errno);
		failures++;
	}
}

static void msleep(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* write() all of it (a pipe may take a long write in parts). */
static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static ssize_t read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int wait_child(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return st;
}

/* ---------------------------------------------------------------- basics */

static void test_basics(void)
{
	int p[2], q[2], sz;
	struct stat st;
	char buf[16];

	checkf("pipe2", pipe2(p, 0) == 0, -1);
	check("pipe2 fds are lowest free", p[0] >= 3 && p[1] == p[0] + 1);
	check("fstat S_IFIFO", fstat(p[0], &st) == 0 && S_ISFIFO(st.st_mode));
	check("F_GETFL read end O_RDONLY", fcntl(p[0], F_GETFL) == O_RDONLY);
	check("F_GETFL write end O_WRONLY", fcntl(p[1], F_GETFL) == O_WRONLY);
	check("F_GETFD no cloexec", fcntl(p[0], F_GETFD) == 0);
	check("lseek ESPIPE", lseek(p[0], 0, SEEK_SET) < 0 && errno == ESPIPE);
	check("write to read end EBADF", write(p[0], "x", 1) < 0 && errno == EBADF);
	check("read from write end EBADF", read(p[1], buf, 1) < 0 && errno == EBADF);
	check("isatty is false", !isatty(p[0]));
	sz = fcntl(p[0], F_GETPIPE_SZ);
	checkf("F_GETPIPE_SZ 65536", sz == 65536, sz);
	check("write 5", write(p[1], "hello", 5) == 5);
	check("FIONREAD 5", ioctl(p[0], FIONREAD, &sz) == 0 && sz == 5);
	check("read 5", read(p[0], buf, sizeof(buf)) == 5 && memcmp(buf, "hello", 5) == 0);
	close(p[0]);
	close(p[1]);

	checkf("pipe2 O_CLOEXEC|O_NONBLOCK", pipe2(q, O_CLOEXEC | O_NONBLOCK) == 0, -1);
	check("cloexec set",
	      fcntl(q[0], F_GETFD) == FD_CLOEXEC && fcntl(q[1], F_GETFD) == FD_CLOEXEC);
	check("O_NONBLOCK set",
	      (fcntl(q[0], F_GETFL) & O_NONBLOCK) && (fcntl(q[1], F_GETFL) & O_NONBLOCK));
	close(q[0]);
	close(q[1]);
	check("pipe2 bad flags EINVAL", pipe2(q, O_APPEND) < 0 && errno == EINVAL);
	check("pipe2 bad pointer EFAULT", syscall(SYS_pipe2, BAD_PTR, 0) < 0 && errno == EFAULT);
	checkf("pipe (old call)", syscall(SYS_pipe, q) == 0, -1);
	close(q[0]);
	close(q[1]);
}

/* ---------------------------------------------------------------- sizes */

static void test_pipe_size(void)
{
	static char big[8192], back[8192];
	int p[2];
	long r;

	pipe(p);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + 1);
	r = fcntl(p[1], F_SETPIPE_SZ, 100000);
	checkf("F_SETPIPE_SZ 100000 -> 131072", r == 131072, r);
	r = fcntl(p[0], F_GETPIPE_SZ);
	checkf("F_GETPIPE_SZ 131072 (either end)", r == 131072, r);
	r = fcntl(p[1], F_SETPIPE_SZ, 0);
	checkf("F_SETPIPE_SZ 0 -> 4096", r == 4096, r);
	r = fcntl(p[1], F_SETPIPE_SZ, 65536);
	checkf("F_SETPIPE_SZ 65536", r == 65536, r);
	check("write 8192", write(p[1], big, sizeof(big)) == (ssize_t)sizeof(big));
	r = fcntl(p[1], F_SETPIPE_SZ, 4096);
	check("F_SETPIPE_SZ below content EBUSY", r < 0 && errno == EBUSY);
	r = fcntl(p[1], F_SETPIPE_SZ, 32768);
	checkf("F_SETPIPE_SZ 32768 with content", r == 32768, r);
	check("content kept across resize",
	      read_full(p[0], back, sizeof(back)) == (ssize_t)sizeof(back) &&
	          memcmp(big, back, sizeof(big)) == 0);
	r = fcntl(0, F_GETPIPE_SZ);
	check("F_GETPIPE_SZ on a non-pipe EBADF", r < 0 && errno == EBADF);
	close(p[0]);
	close(p[1]);
}

/* ---------------------------------------------------------------- 10 MB round trip */

#define ROUND_BYTES (10 * 1024 * 1024)

static unsigned char pattern_at(size_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13);
}

/* generator -> a -> echo child -> b -> parent, in odd-sized pieces. */
static void test_roundtrip(void)
{
	static unsigned char buf[100003];
	int a[2], b[2];
	pid_t gen, echo;
	size_t got = 0, bad = 0;
	int st1, st2;

	pipe(a);
	pipe(b);
	gen = fork();
	if (gen == 0) {
		static unsigned char out[7919];
		size_t off = 0;

		close(a[0]);
		close(b[0]);
		close(b[1]);
		while (off < ROUND_BYTES) {
			size_t n = sizeof(out) - (off / sizeof(out)) % 5 * 1000;

			if (n > ROUND_BYTES - off)
				n = ROUND_BYTES - off;
			for (size_t i = 0; i < n; i++)
				out[i] = pattern_at(off + i);
			if (write_all(a[1], out, n))
				_exit(1);
			off += n;
		}
		_exit(0);
	}
	echo = fork();
	if (echo == 0) {
		static char mid[12345];
		ssize_t r;

		close(a[1]);
		close(b[0]);
		while ((r = read(a[0], mid, sizeof(mid))) > 0)
			if (write_all(b[1], mid, (size_t)r))
				_exit(1);
		_exit(r < 0 ? 2 : 0);
	}
	close(a[0]);
	close(a[1]);
	close(b[1]);
	for (;;) {
		ssize_t r = read(b[0], buf, sizeof(buf));

		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != pattern_at(got + (size_t)i))
				bad++;
		got += (size_t)r;
	}
	close(b[0]);
	st1 = wait_child(gen);
	st2 = wait_child(echo);
	printf("roundtrip: %zu bytes, %zu wrong\n", got, bad);
	check("roundtrip children exit 0", st1 == 0 && st2 == 0);
	if (got != ROUND_BYTES || bad)
		failures++;
}

/* ---------------------------------------------------------------- EOF */

static void test_eof(void)
{
	int p[2];
	char c;
	pid_t pid;

	pipe(p);
	close(p[1]);
	check("EOF on an empty pipe without writers", read(p[0], &c, 1) == 0);
	close(p[0]);

	/* A reader blocked in read() sees EOF when the last writer goes. */
	pipe(p);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		msleep(50);
		write(p[1], "z", 1);
		msleep(50);
		_exit(0); /* closes the write end */
	}
	close(p[1]);
	check("blocked read gets the byte", read(p[0], &c, 1) == 1 && c == 'z');
	check("blocked read gets EOF at the writer's exit", read(p[0], &c, 1) == 0);
	close(p[0]);
	wait_child(pid);
}

/* ---------------------------------------------------------------- EPIPE, SIGPIPE */

static volatile sig_atomic_t nsigpipe;

static void on_sigpipe(int sig)
{
	nsigpipe++;
}

static void test_epipe(void)
{
	struct sigaction sa = {0};
	int p[2], st;
	ssize_t r;
	pid_t pid;

	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, NULL);
	pipe(p);
	close(p[0]);
	r = write(p[1], "x", 1);
	check("write without readers EPIPE", r < 0 && errno == EPIPE);
	check("SIGPIPE handler ran once", nsigpipe == 1);

	signal(SIGPIPE, SIG_IGN);
	r = write(p[1], "x", 1);
	check("SIG_IGN: still EPIPE", r < 0 && errno == EPIPE);
	check("SIG_IGN: no handler call", nsigpipe == 1);
	close(p[1]);

	/* Default action: the writer dies of SIGPIPE. */
	signal(SIGPIPE, SIG_DFL);
	pipe(p);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		msleep(50); /* let the parent close the read end */
		write(p[1], "x", 1);
		_exit(0);
	}
	close(p[0]);
	close(p[1]);
	st = wait_child(pid);
	check("default SIGPIPE kills the writer", WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE);

	/* A writer blocked on a full pipe gets EPIPE when the reader goes. */
	signal(SIGPIPE, SIG_IGN);
	pipe(p);
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		msleep(100);
		_exit(0); /* closes the read end */
	}
	close(p[0]);
	{
		static char blk[65536 + 4096];
		r = write(p[1], blk, sizeof(blk)); /* fills 64 KiB, then waits */
		check("blocked writer: partial count when the reader goes", r == 65536);
		r = write(p[1], blk, 1);
		check("then EPIPE", r < 0 && errno == EPIPE);
	}
	close(p[1]);
	wait_child(pid);
	signal(SIGPIPE, SIG_DFL);
}

/* ---------------------------------------------------------------- atomic writes */

#define REC   4096 /* PIPE_BUF */
#define NRECS 300

/* Two writers, records of PIPE_BUF bytes each: none may be split. */
static void test_atomic(void)
{
	static char rec[REC];
	int p[2], mixed = 0, count[2] = {0, 0};
	pid_t w[2];

	pipe(p);
	for (int k = 0; k < 2; k++) {
		w[k] = fork();
		if (w[k] == 0) {
			close(p[0]);
			memset(rec, 'A' + k, sizeof(rec));
			for (int i = 0; i < NRECS; i++)
				if (write(p[1], rec, sizeof(rec)) != (ssize_t)sizeof(rec))
					_exit(1);
			_exit(0);
		}
	}
	close(p[1]);
	while (read_full(p[0], rec, sizeof(rec)) == (ssize_t)sizeof(rec)) {
		int k = rec[0] - 'A';
		bool same = k == 0 || k == 1;

		for (size_t i = 1; same && i < sizeof(rec); i++)
			same = rec[i] == rec[0];
		if (!same)
			mixed++;
		else
			count[k]++;
	}
	close(p[0]);
	wait_child(w[0]);
	wait_child(w[1]);
	printf("atomic: A %d B %d mixed %d\n", count[0], count[1], mixed);
	if (mixed || count[0] != NRECS || count[1] != NRECS)
		failures++;
}

/* ---------------------------------------------------------------- O_NONBLOCK */

static void test_nonblock(void)
{
	static char blk[5000];
	int p[2], n = 0;
	ssize_t r;
	char c;

	pipe2(p, O_NONBLOCK);
	r = read(p[0], &c, 1);
	check("empty nonblocking read EAGAIN", r < 0 && errno == EAGAIN);
	while ((r = write(p[1], blk, 4096)) == 4096)
		n++;
	check("full after 16 writes of 4096, then EAGAIN", n == 16 && r < 0 && errno == EAGAIN);
	r = write(p[1], blk, 1);
	check("one more byte EAGAIN", r < 0 && errno == EAGAIN);
	check("read 4096", read(p[0], blk, 4096) == 4096);
	r = write(p[1], blk, 5000);
	checkf("write 5000 into 4096 of room: partial 4096", r == 4096, r);
	r = write(p[1], blk, 100);
	check("then EAGAIN", r < 0 && errno == EAGAIN);
	/* Drain; with the writer still open an empty read is EAGAIN, not EOF. */
	while (read(p[0], blk, sizeof(blk)) > 0)
		;
	check("drained: EAGAIN", read(p[0], &c, 1) < 0 && errno == EAGAIN);
	close(p[1]);
	check("no writers: EOF even nonblocking", read(p[0], &c, 1) == 0);
	close(p[0]);

	/* fcntl(F_SETFL) turns it on and off. */
	pipe(p);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	check("F_SETFL O_NONBLOCK: EAGAIN", read(p[0], &c, 1) < 0 && errno == EAGAIN);
	close(p[0]);
	close(p[1]);
}

/* ---------------------------------------------------------------- signals */

static volatile sig_atomic_t nalrm;

static void on_alrm(int sig)
{
	nalrm++;
}

/* A blocking read and a SIGALRM handler: EINTR without SA_RESTART; with
 * it, the read goes on and gets the byte a child writes later. */
static void test_read_signal(void)
{
	struct itimerval it = {{0, 0}, {0, 50000}};
	struct sigaction sa = {0};
	int p[2];
	ssize_t r;
	pid_t pid;
	char c;

	sa.sa_handler = on_alrm;
	sigaction(SIGALRM, &sa, NULL);
	pipe(p);
	setitimer(ITIMER_REAL, &it, NULL);
	r = read(p[0], &c, 1);
	check("read interrupted: EINTR", r < 0 && errno == EINTR && nalrm == 1);

	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	pid = fork();
	if (pid == 0) {
		msleep(300);
		write(p[1], "r", 1);
		_exit(0);
	}
	setitimer(ITIMER_REAL, &it, NULL);
	r = read(p[0], &c, 1);
	check("SA_RESTART: read restarted, gets the byte", r == 1 && c == 'r' && nalrm == 2);
	wait_child(pid);
	close(p[0]);
	close(p[1]);
	signal(SIGALRM, SIG_DFL);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_basics();
	test_pipe_size();
	test_roundtrip();
	test_eof();
	test_epipe();
	test_atomic();
	test_nonblock();
	test_read_signal();
	printf("pipes: %s\n", failures ? "FAILED" : "all ok");
	return failures != 0;
}
