// SPDX-License-Identifier: MIT
/*
 * polltest: poll, ppoll, select, pselect6 and eventfd as Linux does them.
 * Every line printed depends only on what the calls return; timeouts are
 * checked with generous bounds, so the host and the guest print the same
 * text. Exits 0 if every check passed.
 *
 * The system calls are made with syscall() where libcs differ in which one
 * a wrapper uses (musl's select is pselect6 on some targets, say).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/select.h>
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

static void checkv(const char *what, long got, long want)
{
	if (got == want) {
		printf("%s: ok\n", what);
	} else {
		printf("%s: FAIL (got %ld, want %ld, errno %d)\n", what, got, want, errno);
		failures++;
	}
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void msleep(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static long sys_poll(struct pollfd *fds, unsigned long n, int ms)
{
	return syscall(SYS_poll, fds, n, ms);
}

static volatile sig_atomic_t nsig;

static void on_sig(int sig)
{
	nsig++;
}

static void handle(int sig, int flags)
{
	struct sigaction sa = {0};

	sa.sa_handler = on_sig;
	sa.sa_flags = flags;
	sigaction(sig, &sa, NULL);
}

static void alarm_ms(int ms)
{
	struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};

	setitimer(ITIMER_REAL, &it, NULL);
}

/* A child that writes one byte to fd after ms, then exits. */
static pid_t write_later(int fd, int ms)
{
	pid_t pid = fork();

	if (pid == 0) {
		msleep(ms);
		if (write(fd, "w", 1) != 1) {
			uint64_t one = 1; /* an eventfd wants 8 bytes */
			write(fd, &one, sizeof(one));
		}
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* ---------------------------------------------------------------- poll */

static void test_poll(void)
{
	struct pollfd fds[4];
	int p[2], fd;
	long t0, r;
	char c;
	pid_t pid;

	pipe(p);
	fds[0] = (struct pollfd){p[0], POLLIN, 0};
	fds[1] = (struct pollfd){p[1], POLLOUT, 0};
	r = sys_poll(fds, 2, 0);
	check("empty pipe: write end ready only",
	      r == 1 && fds[0].revents == 0 && fds[1].revents == POLLOUT);
	r = sys_poll(fds, 1, 0);
	checkv("timeout 0 on an empty pipe", r, 0);
	t0 = now_ms();
	r = sys_poll(fds, 1, 100);
	check("timeout 100 ms: 0 after about 100 ms",
	      r == 0 && now_ms() - t0 >= 90 && now_ms() - t0 < 5000);
	write(p[1], "a", 1);
	r = sys_poll(fds, 2, -1);
	check("one byte: POLLIN", r == 2 && fds[0].revents == POLLIN);
	fds[0].events = POLLIN | POLLRDNORM | POLLOUT;
	r = sys_poll(fds, 1, 0);
	check("read end: POLLIN|POLLRDNORM, never POLLOUT",
	      r == 1 && fds[0].revents == (POLLIN | POLLRDNORM));
	close(p[1]);
	fds[0].events = POLLIN;
	r = sys_poll(fds, 1, 0);
	check("writer gone, data left: POLLIN|POLLHUP",
	      r == 1 && fds[0].revents == (POLLIN | POLLHUP));
	read(p[0], &c, 1);
	fds[0].events = 0; /* POLLHUP comes even if not asked for */
	r = sys_poll(fds, 1, 0);
	check("writer gone, empty: POLLHUP", r == 1 && fds[0].revents == POLLHUP);
	close(p[0]);

	pipe(p);
	close(p[0]);
	fds[0] = (struct pollfd){p[1], POLLOUT, 0};
	r = sys_poll(fds, 1, 0);
	check("reader gone: POLLOUT|POLLERR", r == 1 && fds[0].revents == (POLLOUT | POLLERR));
	close(p[1]);

	/* Closed and negative descriptors. */
	fd = dup(0);
	close(fd);
	fds[0] = (struct pollfd){fd, POLLIN, 0};
	fds[1] = (struct pollfd){-1, POLLIN, 0};
	r = sys_poll(fds, 2, 0);
	check("closed fd: POLLNVAL; negative fd: ignored",
	      r == 1 && fds[0].revents == POLLNVAL && fds[1].revents == 0);

	/* A regular file is always ready. */
	fd = open("/tmp/polltest.file", O_RDWR | O_CREAT | O_TRUNC, 0600);
	fds[0] = (struct pollfd){fd, POLLIN | POLLOUT, 0};
	r = sys_poll(fds, 1, -1);
	check("regular file: POLLIN|POLLOUT", r == 1 && fds[0].revents == (POLLIN | POLLOUT));
	close(fd);
	unlink("/tmp/polltest.file");

	/* Blocking until another process writes. */
	pipe(p);
	pid = write_later(p[1], 100);
	fds[0] = (struct pollfd){p[0], POLLIN, 0};
	r = sys_poll(fds, 1, -1);
	check("poll(-1) woken by a writer", r == 1 && fds[0].revents == POLLIN);
	reap(pid);

	/* The same file twice, and several pipes at once. */
	{
		int q[2];
		pipe(q);
		pid = write_later(q[1], 50);
		fds[0] = (struct pollfd){p[0], POLLIN, 0};
		fds[1] = (struct pollfd){q[0], POLLIN, 0};
		fds[2] = (struct pollfd){q[0], POLLIN, 0};
		read(p[0], &c, 1);
		r = sys_poll(fds, 3, 5000);
		check("three entries, the second pipe written: 2", r == 2 && fds[0].revents == 0 &&
		                                                       fds[1].revents == POLLIN &&
		                                                       fds[2].revents == POLLIN);
		reap(pid);
		close(q[0]);
		close(q[1]);
	}

	/* A signal handler ends the wait: EINTR even with SA_RESTART. */
	handle(SIGALRM, SA_RESTART);
	nsig = 0;
	alarm_ms(50);
	fds[0] = (struct pollfd){p[0], POLLIN, 0};
	r = sys_poll(fds, 1, -1);
	check("poll interrupted by SIGALRM: EINTR", r < 0 && errno == EINTR && nsig == 1);
	close(p[0]);
	close(p[1]);

	check("nfds too large: EINVAL", sys_poll(fds, 1 << 20, 0) < 0 && errno == EINVAL);
	check("bad array: EFAULT", sys_poll(BAD_PTR, 1, 0) < 0 && errno == EFAULT);
}

/* ---------------------------------------------------------------- ppoll */

static void test_ppoll(void)
{
	struct pollfd fds[1];
	struct timespec ts = {0, 50000000};
	sigset_t block, empty, cur;
	int p[2];
	long r;

	pipe(p);
	fds[0] = (struct pollfd){p[0], POLLIN, 0};
	r = syscall(SYS_ppoll, fds, 1, &ts, NULL, 8);
	check("ppoll timeout: 0, time left written back as 0",
	      r == 0 && ts.tv_sec == 0 && ts.tv_nsec == 0);

	/* SIGUSR1 blocked and pending: ppoll with an empty mask takes it. */
	handle(SIGUSR1, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigemptyset(&empty);
	sigprocmask(SIG_BLOCK, &block, NULL);
	nsig = 0;
	raise(SIGUSR1);
	check("blocked SIGUSR1 pending, not delivered", nsig == 0);
	r = syscall(SYS_ppoll, fds, 1, NULL, &empty, 8);
	check("ppoll with an empty mask: EINTR, handler ran", r < 0 && errno == EINTR && nsig == 1);
	sigprocmask(SIG_SETMASK, NULL, &cur);
	check("mask back after ppoll", sigismember(&cur, SIGUSR1));

	/* Ready at once: the temporary mask must not linger. */
	write(p[1], "x", 1);
	r = syscall(SYS_ppoll, fds, 1, NULL, &empty, 8);
	sigprocmask(SIG_SETMASK, NULL, &cur);
	check("ppoll ready: 1, mask back", r == 1 && sigismember(&cur, SIGUSR1));
	check("ppoll bad sigsetsize: EINVAL",
	      syscall(SYS_ppoll, fds, 1, NULL, &empty, 4) < 0 && errno == EINVAL);
	ts.tv_nsec = 1000000000;
	check("ppoll bad timespec: EINVAL",
	      syscall(SYS_ppoll, fds, 1, &ts, NULL, 8) < 0 && errno == EINVAL);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	close(p[0]);
	close(p[1]);
}

/* ---------------------------------------------------------------- select */

static void test_select(void)
{
	fd_set r, w, e;
	struct timeval tv;
	int p[2], n, fd;
	long t0;
	pid_t pid;

	pipe(p);
	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_SET(p[0], &r);
	FD_SET(p[1], &w);
	tv = (struct timeval){0, 0};
	n = (int)syscall(SYS_select, p[1] + 1, &r, &w, NULL, &tv);
	check("select: write end ready", n == 1 && !FD_ISSET(p[0], &r) && FD_ISSET(p[1], &w));

	FD_ZERO(&r);
	FD_SET(p[0], &r);
	tv = (struct timeval){0, 100000};
	t0 = now_ms();
	n = (int)syscall(SYS_select, p[0] + 1, &r, NULL, NULL, &tv);
	check("select timeout: 0, cleared set, time left 0",
	      n == 0 && !FD_ISSET(p[0], &r) && tv.tv_sec == 0 && tv.tv_usec == 0 &&
	          now_ms() - t0 >= 90);

	pid = write_later(p[1], 50);
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	tv = (struct timeval){10, 0};
	n = (int)syscall(SYS_select, p[0] + 1, &r, NULL, NULL, &tv);
	check("select woken by a writer, some time left",
	      n == 1 && FD_ISSET(p[0], &r) && (tv.tv_sec > 0 || tv.tv_usec > 0) && tv.tv_sec < 10);
	reap(pid);

	/* Readable and writable count twice; exceptfds stays empty. */
	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_ZERO(&e);
	FD_SET(p[0], &r);
	FD_SET(p[1], &w);
	FD_SET(p[0], &e);
	n = (int)syscall(SYS_select, p[1] + 1, &r, &w, &e, NULL);
	check("select counts each set bit",
	      n == 2 && FD_ISSET(p[0], &r) && FD_ISSET(p[1], &w) && !FD_ISSET(p[0], &e));

	fd = dup(0);
	close(fd);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	n = (int)syscall(SYS_select, fd + 1, &r, NULL, NULL, NULL);
	check("select on a closed fd: EBADF", n < 0 && errno == EBADF);
	check("select nfds < 0: EINVAL",
	      syscall(SYS_select, -1, NULL, NULL, NULL, NULL) < 0 && errno == EINVAL);
	tv = (struct timeval){0, 50000};
	t0 = now_ms();
	n = (int)syscall(SYS_select, 0, NULL, NULL, NULL, &tv);
	check("select with no fds sleeps", n == 0 && now_ms() - t0 >= 40);

	/* Writer gone: readable (EOF). */
	close(p[1]);
	{
		char c;
		read(p[0], &c, 1);
	}
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	n = (int)syscall(SYS_select, p[0] + 1, &r, NULL, NULL, NULL);
	check("select: EOF is readable", n == 1 && FD_ISSET(p[0], &r));

	/* A handler interrupts it. */
	close(p[0]);
	pipe(p);
	handle(SIGALRM, SA_RESTART);
	nsig = 0;
	alarm_ms(50);
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	n = (int)syscall(SYS_select, p[0] + 1, &r, NULL, NULL, NULL);
	check("select interrupted: EINTR", n < 0 && errno == EINTR && nsig == 1);
	close(p[0]);
	close(p[1]);
}

static void test_pselect(void)
{
	struct {
		const sigset_t *set;
		size_t size;
	} sig;
	sigset_t block, empty, cur;
	struct timespec ts = {0, 20000000};
	fd_set r;
	int p[2];
	long n;

	pipe(p);
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	n = syscall(SYS_pselect6, p[0] + 1, &r, NULL, NULL, &ts, NULL);
	check("pselect6 timeout: 0, time left 0", n == 0 && ts.tv_sec == 0 && ts.tv_nsec == 0);

	handle(SIGUSR2, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	sigemptyset(&empty);
	sigprocmask(SIG_BLOCK, &block, NULL);
	nsig = 0;
	raise(SIGUSR2);
	sig.set = &empty;
	sig.size = 8;
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	n = syscall(SYS_pselect6, p[0] + 1, &r, NULL, NULL, NULL, &sig);
	sigprocmask(SIG_SETMASK, NULL, &cur);
	check("pselect6 with an empty mask: EINTR, handler ran, mask back",
	      n < 0 && errno == EINTR && nsig == 1 && sigismember(&cur, SIGUSR2));
	sig.size = 7;
	n = syscall(SYS_pselect6, p[0] + 1, &r, NULL, NULL, NULL, &sig);
	check("pselect6 bad sigset size: EINVAL", n < 0 && errno == EINVAL);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	close(p[0]);
	close(p[1]);
}

/* ---------------------------------------------------------------- eventfd */

static void test_eventfd(void)
{
	uint64_t v;
	struct pollfd pf;
	struct stat st;
	int fd, fd2;
	long r;
	pid_t pid;

	fd = eventfd(0, EFD_NONBLOCK);
	check("eventfd", fd >= 0);
	check("fstat: an anonymous inode (no file type)",
	      fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == 0);
	check("F_GETFL O_RDWR|O_NONBLOCK", fcntl(fd, F_GETFL) == (O_RDWR | O_NONBLOCK));
	r = read(fd, &v, sizeof(v));
	check("empty: EAGAIN", r < 0 && errno == EAGAIN);
	pf = (struct pollfd){fd, POLLIN | POLLOUT, 0};
	check("empty: POLLOUT only", sys_poll(&pf, 1, 0) == 1 && pf.revents == POLLOUT);
	v = 3;
	write(fd, &v, 8);
	v = 4;
	write(fd, &v, 8);
	check("ready: POLLIN|POLLOUT",
	      sys_poll(&pf, 1, 0) == 1 && pf.revents == (POLLIN | POLLOUT));
	r = read(fd, &v, sizeof(v));
	check("read takes the sum 7", r == 8 && v == 7);
	r = read(fd, &v, sizeof(v));
	check("then EAGAIN", r < 0 && errno == EAGAIN);
	check("short read buffer: EINVAL", read(fd, &v, 4) < 0 && errno == EINVAL);
	check("short write: EINVAL", write(fd, &v, 4) < 0 && errno == EINVAL);
	v = UINT64_MAX;
	check("write 2^64-1: EINVAL", write(fd, &v, 8) < 0 && errno == EINVAL);
	v = UINT64_MAX - 1;
	check("write 2^64-2: ok", write(fd, &v, 8) == 8);
	check("full: POLLIN only", sys_poll(&pf, 1, 0) == 1 && pf.revents == POLLIN);
	v = 1;
	check("full: write EAGAIN", write(fd, &v, 8) < 0 && errno == EAGAIN);
	v = 0;
	check("full: writing 0 still works", write(fd, &v, 8) == 8);
	check("read the maximum", read(fd, &v, 8) == 8 && v == UINT64_MAX - 1);
	close(fd);

	fd = eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
	check("EFD_CLOEXEC", fcntl(fd, F_GETFD) == FD_CLOEXEC);
	for (int i = 0; i < 3; i++) {
		r = read(fd, &v, sizeof(v));
		check("semaphore: read gives 1", r == 8 && v == 1);
	}
	r = read(fd, &v, sizeof(v));
	check("semaphore: then EAGAIN", r < 0 && errno == EAGAIN);
	close(fd);
	check("bad flags: EINVAL", eventfd(0, 0x40) < 0 && errno == EINVAL);

	/* Blocking read woken by another process; poll woken too. */
	fd = eventfd(0, 0);
	pid = write_later(fd, 50);
	r = read(fd, &v, sizeof(v));
	check("blocking read woken by a writer", r == 8 && v == 1);
	reap(pid);
	pid = write_later(fd, 50);
	pf = (struct pollfd){fd, POLLIN, 0};
	check("poll(-1) on an eventfd woken", sys_poll(&pf, 1, -1) == 1 && pf.revents == POLLIN);
	reap(pid);
	fd2 = dup(fd);
	r = read(fd2, &v, sizeof(v));
	check("a dup shares the counter", r == 8 && v == 1);

	/* A handler interrupts a blocking read: EINTR without SA_RESTART. */
	handle(SIGALRM, 0);
	nsig = 0;
	alarm_ms(50);
	r = read(fd, &v, sizeof(v));
	check("blocking read interrupted: EINTR", r < 0 && errno == EINTR && nsig == 1);
	close(fd);
	close(fd2);
	signal(SIGALRM, SIG_DFL);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_poll();
	test_ppoll();
	test_select();
	test_pselect();
	test_eventfd();
	printf("polltest (" KILN_TEST_LIBC "): %s\n", failures ? "FAILED" : "all ok");
	return failures != 0;
}
