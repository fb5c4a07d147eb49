/* SPDX-License-Identifier: MIT */
/* PID namespaces (include/kiln/pidns.h, cases/pidns.sh), run as the VM's
 * init: a child made in a new namespace is its pid 1 with parent 0, its
 * own child pid 2; from inside, /proc lists only the namespace, kill and
 * wait name only its processes, kill(-1) spares the outside, the prctl is
 * refused, the init ignores its namespace's SIGTERM; outside, the parent
 * sees global numbers and NSpid; a process joins the namespace while its
 * init lives; a frozen namespace stops (SIGKILL still ends it) and goes
 * on when thawed; the init's end kills the rest, and the namespace cannot
 * be joined after; bounds of memory and CPU, and CPU shares between
 * namespaces. One line per check, "FAIL" on any that does not hold. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln/pidns.h"

static int failed;

static void check(const char *what, int ok)
{
	printf("%s: %s\n", what, ok ? "ok" : "FAIL");
	fflush(stdout);
	failed |= !ok;
}

/* Numeric entries of /proc: count, and whether n is one. */
static int proc_count(int n, int *has)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int count = 0;

	*has = 0;
	while (d && (e = readdir(d))) {
		int v = atoi(e->d_name);
		if (v > 0) {
			count++;
			*has |= v == n;
		}
	}
	if (d)
		closedir(d);
	return count;
}

/* A status line's value ("NSpid", "PPid") of /proc/PID/status. */
static int status_line(const char *pid, const char *key, char *out, size_t n)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			snprintf(out, n, "%s", line + klen + 2);
			out[strcspn(out, "\n")] = 0;
			fclose(f);
			return 0;
		}
	fclose(f);
	return -1;
}

/* The namespace's init: its checks, then it waits to be told to end. */
static void ns_init(int outside, int go, int tick)
{
	int has, st, n;
	pid_t k;
	char c;

	check("init pid 1", getpid() == 1);
	check("init ppid 0", getppid() == 0);
	check("prctl inside: EPERM",
	      prctl(KILN_PR_PIDNS, KILN_PIDNS_NEW, 0, 0, 0) < 0 && errno == EPERM);
	k = fork();
	if (k == 0) {
		check("child pid 2", getpid() == 2 && getppid() == 1);
		/* a SIGTERM of the namespace to its init (SIG_DFL) is dropped:
		 * the init's exit status 7 shows it lived on */
		check("SIGTERM to the init sent", kill(1, SIGTERM) == 0);
		pause();
		_exit(0);
	}
	check("fork returns 2", k == 2);
	n = proc_count(2, &has);
	check("/proc lists the namespace", n == 2 && has);
	check("/proc/1 is the init", access("/proc/1/status", F_OK) == 0);
	check("kill outside: ESRCH", kill(outside, 0) < 0 && errno == ESRCH);
	check("kill of a global number: ESRCH", kill(KILN_PIDNS_SPAN + 1, 0) < 0 && errno == ESRCH);
	check("waitpid outside: ECHILD", waitpid(outside, &st, WNOHANG) < 0 && errno == ECHILD);
	usleep(100000);
	kill(-1, SIGKILL); /* the child, not the outside */
	check("wait returns the child's 2",
	      waitpid(-1, &st, 0) == 2 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* a child left behind when the init ends, ticking for the freeze */
	if (fork() == 0) {
		for (;;) {
			if (write(tick, "t", 1) != 1)
				_exit(1);
			usleep(10000);
		}
	}
	if (read(go, &c, 1) != 1) {
		/* the parent's end of the pipe closed: end anyway */
	}
	_exit(failed ? 1 : 7);
}

/* What the ticker wrote in the last ms milliseconds. */
static int ticks(int fd, int ms)
{
	char buf[4096];
	int n = 0, r;

	while (read(fd, buf, sizeof(buf)) > 0) /* what came before */
		;
	usleep(ms * 1000);
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		n += r;
	return n;
}

/* A namespace frozen: its processes stop, SIGKILL still ends them. */
static void freezes(int ns, int tick)
{
	int st, other, k;

	struct pollfd pf = {.fd = tick, .events = POLLIN};

	check("ticking", poll(&pf, 1, 5000) == 1 && ticks(tick, 200) >= 3);
	check("freeze", prctl(KILN_PR_PIDNS_FREEZE, ns, 1, 0, 0) == 0);
	check("frozen: no ticks", ticks(tick, 200) <= 1);
	check("thaw", prctl(KILN_PR_PIDNS_FREEZE, ns, 0, 0, 0) == 0);
	check("thawed: ticking again", ticks(tick, 200) >= 3);
	check("freeze the VM's: EINVAL",
	      prctl(KILN_PR_PIDNS_FREEZE, 0, 1, 0, 0) < 0 && errno == EINVAL);
	check("freeze bad: EINVAL",
	      prctl(KILN_PR_PIDNS_FREEZE, ns, 2, 0, 0) < 0 && errno == EINVAL);
	other = prctl(KILN_PR_PIDNS, KILN_PIDNS_NEW, 0, 0, 0);
	k = fork();
	if (k == 0) {
		pause();
		_exit(0);
	}
	prctl(KILN_PR_PIDNS, 0, 0, 0, 0);
	usleep(50000);
	check("freeze another", prctl(KILN_PR_PIDNS_FREEZE, other, 1, 0, 0) == 0);
	kill(k, SIGTERM); /* held while frozen */
	usleep(50000);
	check("frozen: a SIGTERM waits", waitpid(k, &st, WNOHANG) == 0);
	kill(k, SIGKILL);
	check("frozen: SIGKILL ends it",
	      waitpid(k, &st, 0) == k && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	check("freeze an ended one: ESRCH",
	      prctl(KILN_PR_PIDNS_FREEZE, other, 0, 0, 0) < 0 && errno == ESRCH);
}

static __attribute__((noreturn)) void touch(int mib)
{
	char *m = malloc((size_t)mib << 20);

	for (size_t i = 0; m && i < (size_t)mib << 20; i += 4096)
		m[i] = 1;
	_exit(m ? 0 : 2);
}

static __attribute__((noreturn)) void spin(int unused)
{
	for (volatile unsigned long i = 0;; i++)
		;
}

/* A child that runs body(arg) in a namespace of its own whose bound op is
 * bound (0: in ours, unbounded), once the bound is set. */
static pid_t child_in(int op, int bound, void (*body)(int), int arg)
{
	int go[2], ns = 0;
	pid_t k;
	char c;

	if (pipe(go))
		return -1;
	if (bound)
		ns = prctl(KILN_PR_PIDNS, KILN_PIDNS_NEW, 0, 0, 0);
	k = fork();
	if (k == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		body(arg);
	}
	prctl(KILN_PR_PIDNS, 0, 0, 0, 0);
	close(go[0]);
	if ((bound && prctl(op, ns, bound, 0, 0) < 0) || write(go[1], "g", 1) != 1)
		kill(k, SIGKILL);
	close(go[1]);
	return k;
}

/* The wait status of a child that touches mib MiB under a bound of bound MiB. */
static int touch_in(int bound, int mib)
{
	pid_t k = child_in(KILN_PR_PIDNS_MEMORY, bound, touch, mib);
	int st;

	return k > 0 && waitpid(k, &st, 0) == k ? st : -1;
}

/* The CPU time (ms, /proc/PID/stat) process k used; huge if unknown. */
static long cpu_ms(pid_t k)
{
	unsigned long ut = 0, st = 0;
	char path[64], buf[512], *p = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)k);
	if ((f = fopen(path, "r"))) {
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = 0;
		fclose(f);
		p = strrchr(buf, ')');
	}
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		ut = st = ~0UL / 4;
	return (long)((ut + st) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
}

static void end(pid_t k)
{
	int wst;

	kill(k, SIGKILL);
	waitpid(k, &wst, 0);
}

/* The CPU time (ms) a busy child used in a second, under a bound of milli
 * thousandths of the CPU. */
static long busy_in(int milli)
{
	pid_t k = child_in(KILN_PR_PIDNS_CPU, milli, spin, 0);
	long ms;

	usleep(1000000);
	ms = cpu_ms(k);
	end(k);
	return ms;
}

/* 100 times the CPU time b used over a's in 2 s, both busy (/proc counts
 * in 10 ms, and a host that is loaded steals from either); b and a are
 * ended. */
static long ratio_over(pid_t a, pid_t b)
{
	long a0 = cpu_ms(a), b0 = cpu_ms(b), da, db;

	usleep(2000000);
	da = cpu_ms(a) - a0;
	db = cpu_ms(b) - b0;
	end(a);
	end(b);
	printf("# busy for 2 s side by side: %ld and %ld ms of CPU\n", da, db);
	return da > 0 ? 100 * db / da : 0;
}

/* Namespaces' CPU shares, as cpu.shares between cgroups; a namespace
 * number given out again starts with the default. */
static void shares(void)
{
	pid_t a = child_in(KILN_PR_PIDNS_SHARES, 512, spin, 0);
	pid_t b = child_in(KILN_PR_PIDNS_SHARES, 1536, spin, 0);
	long r = ratio_over(a, b);
	int ns_a, ns = -1;

	check("shares 512 and 1536: CPU about 1:3 (2.25 to 3.75)", r >= 225 && r <= 375);
	check("shares of the VM's: EINVAL",
	      prctl(KILN_PR_PIDNS_SHARES, 0, 512, 0, 0) < 0 && errno == EINVAL);
	check("shares 1: EINVAL", prctl(KILN_PR_PIDNS_SHARES, 1, 1, 0, 0) < 0 && errno == EINVAL);
	check("shares 262145: EINVAL",
	      prctl(KILN_PR_PIDNS_SHARES, 1, 262145, 0, 0) < 0 && errno == EINVAL);
	/* a namespace at 2 ends; its number, given out again, is at 1024 */
	a = child_in(KILN_PR_PIDNS_SHARES, 2, spin, 0);
	ns_a = a / KILN_PIDNS_SPAN;
	end(a);
	check("shares of an ended one: ESRCH",
	      prctl(KILN_PR_PIDNS_SHARES, ns_a, 512, 0, 0) < 0 && errno == ESRCH);
	for (int i = 0; i < 2 * KILN_PIDNS_MAX && ns != ns_a; i++)
		ns = prctl(KILN_PR_PIDNS, KILN_PIDNS_NEW, 0, 0, 0);
	a = ns == ns_a ? child_in(0, 0, spin, 0) : -1; /* (its children's is ns_a) */
	b = child_in(KILN_PR_PIDNS_SHARES, 1024, spin, 0);
	if (a > 0) {
		r = ratio_over(a, b);
	} else {
		end(b);
		r = 0;
	}
	check("a number given out again: shares 1024 (CPU about 1:1, 0.75 to 1.33)",
	      a / KILN_PIDNS_SPAN == ns_a && r >= 75 && r <= 133);
}

/* A namespace's CPU bound: its share of each period, as cpu.max. */
static void cpu(void)
{
	long bounded = busy_in(200), free_ms = busy_in(0);

	printf("# busy for 1 s: %ld ms of CPU at 200 millicpus, %ld ms unbounded\n", bounded,
	       free_ms);
	check("bounded 200 millicpus: at most 0.35 s of CPU in 1 s",
	      bounded >= 0 && bounded <= 350);
	check("unbounded: over 0.6 s of CPU in 1 s", free_ms >= 600 && free_ms < 100000);
	check("CPU bound of the VM's: EINVAL",
	      prctl(KILN_PR_PIDNS_CPU, 0, 500, 0, 0) < 0 && errno == EINVAL);
}

/* A namespace's memory bound: beyond it the faulting process dies. */
static void memory(void)
{
	int st = touch_in(16, 4);

	check("bounded 16 MiB: 4 MiB touched", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = touch_in(16, 64);
	check("bounded 16 MiB: 64 MiB killed", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	st = touch_in(0, 64);
	check("unbounded: 64 MiB touched", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	check("bound of the VM's: EINVAL",
	      prctl(KILN_PR_PIDNS_MEMORY, 0, 16, 0, 0) < 0 && errno == EINVAL);
	check("bound negative: EINVAL",
	      prctl(KILN_PR_PIDNS_MEMORY, 1, -1, 0, 0) < 0 && errno == EINVAL);
}

int main(void)
{
	int go[2], tick[2], st, ns, n, has;
	pid_t outside, init, joined;
	char pid[16], val[256];

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* the outside process gets a number the namespace will not have */
	for (int i = 0; i < 8; i++)
		if (fork() == 0)
			_exit(0);
	while (wait(&st) > 0)
		;
	outside = fork();
	if (outside == 0) {
		pause();
		_exit(0);
	}
	if (pipe(go) || pipe2(tick, O_NONBLOCK))
		return 2;
	ns = prctl(KILN_PR_PIDNS, KILN_PIDNS_NEW, 0, 0, 0);
	check("prctl new", ns > 0 && ns < KILN_PIDNS_MAX);
	init = fork();
	if (init == 0) {
		close(go[1]);
		close(tick[0]);
		ns_init(outside, go[0], tick[1]);
	}
	close(go[0]);
	close(tick[1]);
	check("prctl back", prctl(KILN_PR_PIDNS, 0, 0, 0, 0) == 0);
	check("outside sees a global pid", init == ns * KILN_PIDNS_SPAN + 1);
	usleep(300000); /* its checks */
	snprintf(pid, sizeof(pid), "%d", (int)init);
	check("NSpid global and local", !status_line(pid, "NSpid", val, sizeof(val)) &&
	                                    strchr(val, '\t') && atoi(val) == init &&
	                                    atoi(strchr(val, '\t') + 1) == 1);
	n = proc_count(init, &has);
	check("outside /proc lists all", has && n >= 4);
	/* a later process of the namespace (a container's exec) */
	check("prctl join", prctl(KILN_PR_PIDNS, ns, 0, 0, 0) == ns);
	joined = fork();
	if (joined == 0) {
		_exit(getpid() > 2 && getppid() == 0 && kill(1, 0) == 0 ? 0 : 1);
	}
	prctl(KILN_PR_PIDNS, 0, 0, 0, 0);
	check("joined: pid of the namespace, ppid 0",
	      waitpid(joined, &st, 0) == joined && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	freezes(ns, tick[0]);
	/* the init's end kills what is left of its namespace */
	close(go[1]);
	check("init's checks",
	      waitpid(init, &st, 0) == init && WIFEXITED(st) && WEXITSTATUS(st) == 7);
	{
		pid_t r = waitpid(-1, &st, 0); /* the orphan, reparented to us */
		check("orphan killed with the init",
		      r > ns * KILN_PIDNS_SPAN && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	check("join after the init: ESRCH",
	      prctl(KILN_PR_PIDNS, ns, 0, 0, 0) < 0 && errno == ESRCH);
	check("outside process lived", kill(outside, 0) == 0);
	check("bad namespace: EINVAL",
	      prctl(KILN_PR_PIDNS, KILN_PIDNS_MAX, 0, 0, 0) < 0 && errno == EINVAL);
	memory();
	cpu();
	shares();
	kill(outside, SIGKILL);
	waitpid(outside, &st, 0);
	printf("pidnstest %s\n", failed ? "FAILED" : "ok");
	return failed;
}
