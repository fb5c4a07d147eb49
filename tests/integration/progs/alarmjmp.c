// SPDX-License-Identifier: MIT
/*
 * alarmjmp: the timeout pattern of network tools (busybox wget -T, ftp
 * clients): SIGALRM from alarm() or setitimer() ends a blocking call,
 * either by a handler that siglongjmps out of it, one that exits, or one
 * that returns (EINTR, or a restart with SA_RESTART). Every line printed
 * depends only on what the calls return, so the host and the guest print
 * the same text. Exits 0 if every check passed.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
static sigjmp_buf env;
static volatile sig_atomic_t nalrm;

static void check(const char *what, int ok)
{
	printf("%s: %s\n", what, ok ? "ok" : "FAIL");
	if (!ok)
		failures++;
}

static void on_alarm_jump(int sig)
{
	nalrm++;
	siglongjmp(env, sig);
}

static void on_alarm_count(int sig)
{
	nalrm++;
}

static void on_alarm_exit(int sig)
{
	_exit(2);
}

static void handle(void (*fn)(int), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigaction(SIGALRM, &sa, NULL);
}

static void arm_ms(long ms)
{
	struct itimerval v = {{0, 0}, {ms / 1000, ms % 1000 * 1000}};

	setitimer(ITIMER_REAL, &v, NULL);
}

static int alarm_blocked(void)
{
	sigset_t cur;

	sigprocmask(SIG_BLOCK, NULL, &cur);
	return sigismember(&cur, SIGALRM);
}

/* A read of an empty pipe that only SIGALRM can end; siglongjmp leaves it. */
static void test_longjmp(int fd, const char *how, int use_alarm)
{
	char buf[16], what[96];
	volatile int jumped = 0;
	int sig;

	nalrm = 0;
	signal(SIGALRM, on_alarm_jump);
	sig = sigsetjmp(env, 1);
	if (sig == 0) {
		if (use_alarm)
			alarm(1);
		else
			arm_ms(100);
		(void)read(fd, buf, sizeof(buf));
	} else {
		jumped = 1;
	}
	alarm(0);
	snprintf(what, sizeof(what), "%s, read: the handler jumped out with SIGALRM", how);
	check(what, jumped && sig == SIGALRM && nalrm == 1);
	snprintf(what, sizeof(what), "%s: SIGALRM unblocked again after the jump", how);
	check(what, !alarm_blocked());
}

static void test_eintr(int fd)
{
	char buf[16];
	struct pollfd p = {fd, POLLIN, 0};
	ssize_t n;
	int r;

	nalrm = 0;
	handle(on_alarm_count, 0);
	arm_ms(100);
	n = read(fd, buf, sizeof(buf));
	check("no SA_RESTART: read fails with EINTR", n == -1 && errno == EINTR && nalrm == 1);

	handle(on_alarm_count, SA_RESTART);
	arm_ms(100);
	r = poll(&p, 1, -1);
	check("SA_RESTART: poll still fails with EINTR", r == -1 && errno == EINTR && nalrm == 2);
}

/* A handler that exits while the process is blocked, as wget's "download
 * timed out" does. */
static void test_exit(int fd)
{
	char buf[16];
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		handle(on_alarm_exit, 0);
		alarm(1);
		(void)read(fd, buf, sizeof(buf));
		_exit(3);
	}
	check("handler _exit(2) in a blocked child",
	      pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 2);
}

int main(void)
{
	int fds[2];

	setvbuf(stdout, NULL, _IONBF, 0);
	if (pipe(fds)) {
		perror("pipe");
		return 1;
	}
	test_longjmp(fds[0], "alarm(1)", 1);
	test_longjmp(fds[0], "setitimer 100 ms", 0);
	test_longjmp(fds[0], "setitimer again", 0);
	test_eintr(fds[0]);
	test_exit(fds[0]);
	printf("%s\n", failures ? "alarmjmp: FAILED" : "alarmjmp: all ok");
	return failures != 0;
}
