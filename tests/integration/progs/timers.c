// SPDX-License-Identifier: MIT
/*
 * timers: timerfd, alarm and setitimer as Linux does them. Every line
 * printed depends only on what the calls return; times are checked with
 * generous bounds (a loaded host is slow), so the host and the guest print
 * the same text. Exits 0 if every check passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void check(const char *what, int ok)
{
	printf("%s: %s\n", what, ok ? "ok" : "FAIL");
	if (!ok)
		failures++;
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

static struct itimerspec its(long value_ms, long interval_ms)
{
	struct itimerspec t = {{interval_ms / 1000, interval_ms % 1000 * 1000000},
	                       {value_ms / 1000, value_ms % 1000 * 1000000}};
	return t;
}

static long ts_ms(const struct timespec *ts)
{
	return ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- timerfd */

static void test_timerfd(void)
{
	struct itimerspec t, old;
	uint64_t n, total = 0;
	int fd, p[2];
	long t0, dt;
	struct pollfd pf;

	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	check("timerfd_create", fd >= 0);
	check("TFD_CLOEXEC", fcntl(fd, F_GETFD) == FD_CLOEXEC);
	check("disarmed: read EAGAIN", read(fd, &n, 8) < 0 && errno == EAGAIN);
	check("gettime disarmed: zeros", timerfd_gettime(fd, &t) == 0 && t.it_value.tv_sec == 0 &&
	                                     t.it_value.tv_nsec == 0 && t.it_interval.tv_nsec == 0);
	t = its(1000, 250);
	check("settime 1 s, every 250 ms", timerfd_settime(fd, 0, &t, NULL) == 0);
	check("gettime: a little under 1 s left, interval 250 ms",
	      timerfd_gettime(fd, &t) == 0 && ts_ms(&t.it_value) > 500 &&
	          ts_ms(&t.it_value) <= 1000 && ts_ms(&t.it_interval) == 250);
	check("not yet: EAGAIN", read(fd, &n, 8) < 0 && errno == EAGAIN);
	check("short buffer: EINVAL", read(fd, &n, 4) < 0 && errno == EINVAL);
	t = its(0, 0);
	check("disarm, old value returned", timerfd_settime(fd, 0, &t, &old) == 0 &&
	                                        ts_ms(&old.it_interval) == 250 &&
	                                        ts_ms(&old.it_value) > 500);
	close(fd);

	/* Periodic: 50 ms, read with blocking reads until 6 expirations. */
	fd = timerfd_create(CLOCK_MONOTONIC, 0);
	t = its(50, 50);
	t0 = now_ms();
	timerfd_settime(fd, 0, &t, NULL);
	for (int i = 0; i < 100 && total < 6; i++) {
		if (read(fd, &n, 8) != 8 || n == 0)
			break;
		total += n;
	}
	dt = now_ms() - t0;
	check("periodic: 6 expirations take about 300 ms", total >= 6 && dt >= 280 && dt < 5000);
	/* Expirations pile up while nobody reads. */
	msleep(260);
	check("periodic: 260 ms unread gives 4 or more",
	      read(fd, &n, 8) == 8 && n >= 4 && n <= 100);
	close(fd);

	/* Absolute time on CLOCK_REALTIME. */
	{
		struct timespec now;

		fd = timerfd_create(CLOCK_REALTIME, 0);
		clock_gettime(CLOCK_REALTIME, &now);
		now.tv_nsec += 100000000;
		if (now.tv_nsec >= 1000000000) {
			now.tv_sec++;
			now.tv_nsec -= 1000000000;
		}
		t = (struct itimerspec){{0, 0}, now};
		t0 = now_ms();
		check("TFD_TIMER_ABSTIME on CLOCK_REALTIME",
		      timerfd_settime(fd, TFD_TIMER_ABSTIME, &t, NULL) == 0);
		check("one expiration after about 100 ms",
		      read(fd, &n, 8) == 8 && n == 1 && now_ms() - t0 >= 80);
		check("one-shot: disarmed after", timerfd_gettime(fd, &t) == 0 &&
		                                      t.it_value.tv_sec == 0 &&
		                                      t.it_value.tv_nsec == 0);
		close(fd);
	}

	/* Absolute time in the past on CLOCK_BOOTTIME: expires at once. */
	fd = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK);
	t = its(1, 0);
	check("BOOTTIME absolute in the past",
	      timerfd_settime(fd, TFD_TIMER_ABSTIME, &t, NULL) == 0);
	pf = (struct pollfd){fd, POLLIN, 0};
	check("expired at once: poll POLLIN", poll(&pf, 1, 1000) == 1 && pf.revents == POLLIN);
	check("read 1", read(fd, &n, 8) == 8 && n == 1);
	close(fd);

	/* poll and epoll sleep until it fires. */
	fd = timerfd_create(CLOCK_MONOTONIC, 0);
	t = its(80, 0);
	timerfd_settime(fd, 0, &t, NULL);
	t0 = now_ms();
	pf = (struct pollfd){fd, POLLIN, 0};
	check("poll(-1) wakes when it fires", poll(&pf, 1, -1) == 1 && now_ms() - t0 >= 60);
	read(fd, &n, 8);
	{
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 77};
		int ep = epoll_create1(0);

		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
		t = its(80, 0);
		timerfd_settime(fd, 0, &t, NULL);
		t0 = now_ms();
		check("epoll_wait(-1) wakes when it fires",
		      epoll_wait(ep, &ev, 1, -1) == 1 && ev.data.u64 == 77 && now_ms() - t0 >= 60);
		close(ep);
	}
	close(fd);

	check("bad clock: EINVAL",
	      timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0) < 0 && errno == EINVAL);
	check("bad flags: EINVAL", timerfd_create(CLOCK_MONOTONIC, 1) < 0 && errno == EINVAL);
	pipe(p);
	t = its(10, 0);
	check("settime on a pipe: EINVAL",
	      timerfd_settime(p[0], 0, &t, NULL) < 0 && errno == EINVAL);
	check("settime on a bad fd: EBADF",
	      timerfd_settime(999, 0, &t, NULL) < 0 && errno == EBADF);
	close(p[0]);
	close(p[1]);
	fd = timerfd_create(CLOCK_MONOTONIC, 0);
	t.it_value.tv_nsec = 1000000000;
	check("settime bad timespec: EINVAL",
	      timerfd_settime(fd, 0, &t, NULL) < 0 && errno == EINVAL);
	t = its(10, 0);
	check("settime bad flags: EINVAL", timerfd_settime(fd, 4, &t, NULL) < 0 && errno == EINVAL);
	close(fd);
}

/* ---------------------------------------------------------------- alarm, setitimer */

static volatile sig_atomic_t nalrm, nvt, nprof;

static void on_alrm(int sig)
{
	nalrm++;
}

static void on_vt(int sig)
{
	nvt++;
}

static void on_prof(int sig)
{
	nprof++;
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa = {0};

	sa.sa_handler = fn;
	sigaction(sig, &sa, NULL);
}

/* Spin (no system calls in the loop itself) until *flag or ~5 s. */
static int spin_until(volatile sig_atomic_t *flag)
{
	long t0 = now_ms();

	while (!*flag && now_ms() - t0 < 5000)
		for (volatile int i = 0; i < 100000; i++)
			;
	return *flag;
}

static void test_alarm(void)
{
	unsigned int left;
	long t0;

	handle(SIGALRM, on_alrm);
	check("alarm(5): none before", alarm(5) == 0);
	left = alarm(3);
	check("alarm(3): 5 were left", left == 5);
	check("alarm(0): 3 were left", alarm(0) == 3);
	check("alarm(0) again: 0", alarm(0) == 0);

	nalrm = 0;
	t0 = now_ms();
	alarm(1);
	pause();
	check("alarm(1), pause: SIGALRM after about 1 s", nalrm == 1 && now_ms() - t0 >= 900);

	/* A program that never makes a system call still gets it. */
	nalrm = 0;
	alarm(1);
	check("alarm(1) during a busy loop", spin_until(&nalrm));

	/* Not inherited by a child. */
	alarm(10);
	{
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(alarm(0) == 0 ? 0 : 1);
		waitpid(pid, &st, 0);
		check("fork: the child has no alarm", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	check("the parent's is still there", alarm(0) == 10);
}

static void test_setitimer(void)
{
	struct itimerval it, old;
	long t0;

	handle(SIGALRM, on_alrm);
	it = (struct itimerval){{0, 20000}, {0, 20000}};
	nalrm = 0;
	t0 = now_ms();
	check("setitimer ITIMER_REAL every 20 ms", setitimer(ITIMER_REAL, &it, NULL) == 0);
	while (nalrm < 5)
		pause();
	check("5 SIGALRMs in about 100 ms", now_ms() - t0 >= 90 && now_ms() - t0 < 5000);
	check("getitimer: interval 20 ms, value at most 20 ms",
	      getitimer(ITIMER_REAL, &it) == 0 && it.it_interval.tv_sec == 0 &&
	          it.it_interval.tv_usec == 20000 && it.it_value.tv_sec == 0 &&
	          it.it_value.tv_usec <= 20000 && it.it_value.tv_usec > 0);
	it = (struct itimerval){{0, 0}, {0, 0}};
	check("disarm, old interval 20 ms",
	      setitimer(ITIMER_REAL, &it, &old) == 0 && old.it_interval.tv_usec == 20000);
	check("getitimer: disarmed", getitimer(ITIMER_REAL, &it) == 0 && it.it_value.tv_sec == 0 &&
	                                 it.it_value.tv_usec == 0);
	nalrm = 0;
	msleep(60);
	check("no more SIGALRM", nalrm == 0);

	/* One-shot, then sleeping in nanosleep: EINTR from the handler. */
	it = (struct itimerval){{0, 0}, {0, 50000}};
	setitimer(ITIMER_REAL, &it, NULL);
	{
		struct timespec ts = {5, 0};
		check("nanosleep interrupted by ITIMER_REAL",
		      nanosleep(&ts, &ts) < 0 && errno == EINTR && nalrm == 1);
	}

	/* ITIMER_VIRTUAL and ITIMER_PROF while the program computes. */
	handle(SIGVTALRM, on_vt);
	handle(SIGPROF, on_prof);
	it = (struct itimerval){{0, 0}, {0, 50000}};
	check("setitimer ITIMER_VIRTUAL", setitimer(ITIMER_VIRTUAL, &it, NULL) == 0);
	check("SIGVTALRM while computing", spin_until(&nvt) && nvt == 1);
	check("setitimer ITIMER_PROF", setitimer(ITIMER_PROF, &it, NULL) == 0);
	check("SIGPROF while computing", spin_until(&nprof) && nprof == 1);

	/* Two at once: the second must fire too, with no system call between. */
	nvt = nprof = 0;
	it = (struct itimerval){{0, 0}, {0, 30000}};
	setitimer(ITIMER_VIRTUAL, &it, NULL);
	it = (struct itimerval){{0, 0}, {0, 60000}};
	setitimer(ITIMER_PROF, &it, NULL);
	check("two timers while computing: both fire",
	      spin_until(&nprof) && nvt == 1 && nprof == 1);

	check("bad which: EINVAL", setitimer(7, &it, NULL) < 0 && errno == EINVAL);
	it.it_value.tv_usec = 1000000;
	check("tv_usec 1000000: EINVAL", setitimer(ITIMER_REAL, &it, NULL) < 0 && errno == EINVAL);
	signal(SIGALRM, SIG_DFL);
}

/* ------------------------------------------------------------ idle sleepers */

/* A timed sleep must end on time whatever deadline the CPU last had armed:
 * the time slice of a process that ran and then blocked, the timeout of a
 * sleeper woken early, or none at all (an idle CPU with nothing timed). */
static void test_idle_sleepers(void)
{
	int to_child[2], to_parent[2];
	char c = 0;
	long t0, dt;
	pid_t pid;
	int st;

	if (pipe(to_child) || pipe(to_parent)) {
		check("pipes for the sleepers", 0);
		return;
	}
	pid = fork();
	if (pid == 0) {
		/* Echo each byte; 's' first sleeps 5 ms, 't' 80 ms. */
		close(to_child[1]);
		close(to_parent[0]);
		while (read(to_child[0], &c, 1) == 1) {
			if (c == 's')
				msleep(5);
			else if (c == 't')
				msleep(80);
			if (write(to_parent[1], &c, 1) != 1)
				break;
		}
		_exit(0);
	}
	/* Both run in turn (each wakeup starts a time slice), then the
	 * child blocks and the parent sleeps alone. */
	for (int i = 0; i < 20; i++) {
		c = 'p';
		if (write(to_child[1], &c, 1) != 1 || read(to_parent[0], &c, 1) != 1)
			break;
	}
	t0 = now_ms();
	msleep(50);
	dt = now_ms() - t0;
	check("nanosleep(50 ms) after a ping-pong, the other process idle", dt >= 50 && dt < 2000);

	/* A poll timeout cut short by data, then a longer sleep. */
	{
		struct pollfd pfd = {to_parent[0], POLLIN, 0};

		c = 's';
		check("echo request", write(to_child[1], &c, 1) == 1);
		check("poll(30 ms) woken early by data",
		      poll(&pfd, 1, 30) == 1 && read(to_parent[0], &c, 1) == 1 && c == 's');
		t0 = now_ms();
		msleep(100);
		dt = now_ms() - t0;
		check("nanosleep(100 ms) after it", dt >= 100 && dt < 2000);
	}

	/* The other process sleeps on a timer while this one blocks with
	 * none: the CPU idles with only the sleeper's deadline. */
	c = 't';
	t0 = now_ms();
	check("sleeping echo request", write(to_child[1], &c, 1) == 1);
	check("read() until the child's 80 ms sleep ends",
	      read(to_parent[0], &c, 1) == 1 && c == 't');
	dt = now_ms() - t0;
	check("it ended on time", dt >= 80 && dt < 2000);

	close(to_child[1]);
	waitpid(pid, &st, 0);
	check("the echo child exits", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(to_child[0]);
	close(to_parent[0]);
	close(to_parent[1]);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_timerfd();
	test_alarm();
	test_setitimer();
	test_idle_sleepers();
	printf("timers: %s\n", failures ? "FAILED" : "all ok");
	return failures != 0;
}
