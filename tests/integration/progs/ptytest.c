// SPDX-License-Identifier: MIT
/*
 * Pseudo-terminals and the line discipline, as a program sees them: a pty
 * pair from posix_openpt, canonical input with echo and erase, VEOF, raw
 * mode with VMIN/VTIME, ^C and ^Z to the foreground process group, SIGCONT,
 * background reads (SIGTTIN), window size and SIGWINCH, sessions and the
 * controlling terminal (setsid, TIOCSCTTY, TIOCGSID, /dev/tty), and hangup
 * when the master closes. Prints "ptytest ok", or what failed. Runs on
 * Linux too, where it must pass as well.
 *
 * Nothing here polls: the master is read non-blocking with short sleeps
 * until the expected text shows up or a deadline passes.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	failures++;
}

#define CHECK(cond, ...)                   \
	do {                               \
		if (!(cond))               \
			fail(__VA_ARGS__); \
	} while (0)

static void msleep(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct pair {
	int m, s; /* master, slave (-1: not open) */
	char name[64];
};

/* A new unlocked pair; the slave opened if open_slave. */
static int pair_open(struct pair *p, int open_slave)
{
	p->s = -1;
	p->m = posix_openpt(O_RDWR | O_NOCTTY);
	if (p->m < 0) {
		fail("posix_openpt: %s", strerror(errno));
		return -1;
	}
	if (grantpt(p->m) < 0 || unlockpt(p->m) < 0 || ptsname_r(p->m, p->name, sizeof(p->name))) {
		fail("grantpt/unlockpt/ptsname: %s", strerror(errno));
		return -1;
	}
	fcntl(p->m, F_SETFL, O_NONBLOCK);
	if (open_slave && (p->s = open(p->name, O_RDWR | O_NOCTTY)) < 0) {
		fail("open %s: %s", p->name, strerror(errno));
		return -1;
	}
	return 0;
}

static void pair_close(struct pair *p)
{
	if (p->s >= 0)
		close(p->s);
	if (p->m >= 0)
		close(p->m);
	p->s = p->m = -1;
}

/* Everything the master can read within ms milliseconds, stopping early
 * once `until` (if given) has shown up. */
static size_t drain(int m, char *buf, size_t cap, const char *until, int ms)
{
	long end = now_ms() + ms;
	size_t len = 0;

	buf[0] = 0;
	while (now_ms() < end && len + 1 < cap) {
		ssize_t r = read(m, buf + len, cap - 1 - len);

		if (r > 0) {
			len += (size_t)r;
			buf[len] = 0;
			if (until && strstr(buf, until))
				break;
			continue;
		}
		if (r < 0 && errno != EAGAIN && errno != EINTR)
			break;
		msleep(2);
	}
	return len;
}

/* Read the master until text shows up (within ms): true if it did. What
 * came before it is in pend_seen, what came after stays for the next call. */
static char pend[4096], pend_seen[4096];
static size_t pend_len;

static int expect(int m, const char *text, int ms)
{
	long end = now_ms() + ms;

	for (;;) {
		char *at = strstr(pend, text);
		ssize_t r;

		if (at) {
			size_t used = (size_t)(at - pend) + strlen(text);
			memcpy(pend_seen, pend, used);
			pend_seen[used] = 0;
			memmove(pend, pend + used, pend_len - used + 1);
			pend_len -= used;
			return 1;
		}
		if (now_ms() >= end || pend_len + 1 >= sizeof(pend)) {
			memcpy(pend_seen, pend, pend_len + 1);
			return 0;
		}
		r = read(m, pend + pend_len, sizeof(pend) - 1 - pend_len);
		if (r > 0) {
			pend_len += (size_t)r;
			pend[pend_len] = 0;
		} else if (r < 0 && errno != EAGAIN && errno != EINTR) {
			memcpy(pend_seen, pend, pend_len + 1);
			return 0;
		} else {
			msleep(2);
		}
	}
}

static void expect_reset(void)
{
	pend_len = 0;
	pend[0] = 0;
}

static void put(int fd, const char *s)
{
	size_t n = strlen(s);

	if (write(fd, s, n) != (ssize_t)n)
		fail("write %zu bytes: %s", n, strerror(errno));
}

/* Type into the master; Linux hands the bytes to the line discipline a
 * moment later (kiln at once), so give it that moment. */
static void type(int m, const char *s)
{
	put(m, s);
	msleep(30);
}

/* Show control characters, for messages. */
static const char *vis(const char *s)
{
	static char out[4][512];
	static int k;
	char *o = out[k++ & 3];
	size_t n = 0;

	for (; *s && n < 500; s++)
		n += (unsigned char)*s < 32 ? (size_t)snprintf(o + n, 8, "^%c", *s + 64)
		                            : (size_t)snprintf(o + n, 8, "%c", *s);
	return o;
}

/* ---------------------------------------------------------------- canonical input */

static void test_canon(void)
{
	struct pair p;
	char buf[256];
	ssize_t r;
	struct stat st;

	if (pair_open(&p, 1))
		return;
	CHECK(!strncmp(p.name, "/dev/pts/", 9), "ptsname %s", p.name);
	CHECK(stat(p.name, &st) == 0 && S_ISCHR(st.st_mode), "stat %s", p.name);
	CHECK(isatty(p.s) && isatty(p.m), "isatty");
	fcntl(p.s, F_SETFL, O_NONBLOCK);

	/* erase, and the echo of it */
	type(p.m, "abc\177d\n");
	r = read(p.s, buf, sizeof(buf));
	CHECK(r == 4 && !memcmp(buf, "abd\n", 4), "erase: read %zd '%.*s'", r, (int)(r > 0 ? r : 0),
	      buf);
	drain(p.m, buf, sizeof(buf), "\r\n", 1000);
	CHECK(!strcmp(buf, "abc\b \bd\r\n"), "erase echo '%s'", vis(buf));

	/* a partial line is not readable */
	type(p.m, "part");
	r = read(p.s, buf, sizeof(buf));
	CHECK(r < 0 && errno == EAGAIN, "partial line: read %zd", r);
	/* kill (^U) erases it, word erase (^W) a word */
	type(p.m, "\025foo bar\027baz\n");
	r = read(p.s, buf, sizeof(buf));
	CHECK(r == 8 && !memcmp(buf, "foo baz\n", 8), "kill/werase: read %zd '%.*s'", r,
	      (int)(r > 0 ? r : 0), buf);
	drain(p.m, buf, sizeof(buf), "baz\r\n", 1000);
	CHECK(!strcmp(buf, "part\b \b\b \b\b \b\b \bfoo bar\b \b\b \b\b \bbaz\r\n"),
	      "kill/werase echo '%s'", vis(buf));

	/* CR is read as NL (ICRNL); a short buffer takes the line in parts */
	type(p.m, "0123456789\r");
	r = read(p.s, buf, 4);
	CHECK(r == 4 && !memcmp(buf, "0123", 4), "short read %zd", r);
	r = read(p.s, buf, sizeof(buf));
	CHECK(r == 7 && !memcmp(buf, "456789\n", 7), "rest of line %zd", r);
	drain(p.m, buf, sizeof(buf), "\r\n", 1000);

	/* VEOF: ends a line without a newline; alone it reads as end of file */
	type(p.m, "ab\004");
	r = read(p.s, buf, sizeof(buf));
	CHECK(r == 2 && !memcmp(buf, "ab", 2), "EOF after data: read %zd", r);
	type(p.m, "\004");
	r = read(p.s, buf, sizeof(buf));
	CHECK(r == 0, "EOF alone: read %zd", r);
	drain(p.m, buf, sizeof(buf), NULL, 50);

	/* FIONREAD counts complete lines */
	type(p.m, "xy\nz");
	{
		int n = -1;
		CHECK(ioctl(p.s, FIONREAD, &n) == 0 && n == 3, "FIONREAD %d", n);
	}
	tcflush(p.s, TCIFLUSH);
	r = read(p.s, buf, sizeof(buf));
	CHECK(r < 0 && errno == EAGAIN, "after TCIFLUSH: read %zd", r);
	drain(p.m, buf, sizeof(buf), NULL, 50);

	/* output processing: NL becomes CR NL (ONLCR) */
	put(p.s, "out\n");
	drain(p.m, buf, sizeof(buf), "\n", 1000);
	CHECK(!strcmp(buf, "out\r\n"), "ONLCR '%s'", vis(buf));

	/* ECHOCTL: a control character echoes as ^X */
	type(p.m, "\001\n");
	drain(p.m, buf, sizeof(buf), "\n", 1000);
	CHECK(!strcmp(buf, "^A\r\n"), "ECHOCTL '%s'", vis(buf));
	read(p.s, buf, sizeof(buf));
	pair_close(&p);
}

/* ---------------------------------------------------------------- raw mode */

static void test_raw(void)
{
	struct pair p;
	struct termios t;
	char buf[64];
	ssize_t r;
	long t0;

	if (pair_open(&p, 1))
		return;
	tcgetattr(p.s, &t);
	cfmakeraw(&t);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	CHECK(tcsetattr(p.s, TCSANOW, &t) == 0, "tcsetattr raw");
	put(p.m, "q");
	r = read(p.s, buf, sizeof(buf)); /* blocking: VMIN 1 */
	CHECK(r == 1 && buf[0] == 'q', "raw VMIN=1 read %zd", r);
	r = read(p.m, buf, sizeof(buf));
	CHECK(r < 0 && errno == EAGAIN, "raw mode echoed %zd bytes", r);
	type(p.m, "\003\r");
	r = read(p.s, buf, sizeof(buf));
	CHECK(r == 2 && buf[0] == 3 && buf[1] == '\r', "raw ^C CR read %zd", r);
	put(p.s, "a\nb");
	drain(p.m, buf, sizeof(buf), "b", 1000);
	CHECK(!strcmp(buf, "a\nb"), "raw output '%s'", vis(buf));

	/* VMIN 0, VTIME 0: a read that never waits */
	t.c_cc[VMIN] = 0;
	tcsetattr(p.s, TCSANOW, &t);
	r = read(p.s, buf, sizeof(buf));
	CHECK(r == 0, "VMIN=0 VTIME=0 read %zd", r);
	/* VMIN 0, VTIME 2: up to 0.2 s for the first byte */
	t.c_cc[VTIME] = 2;
	tcsetattr(p.s, TCSANOW, &t);
	t0 = now_ms();
	r = read(p.s, buf, sizeof(buf));
	t0 = now_ms() - t0;
	CHECK(r == 0 && t0 >= 150 && t0 < 2000, "VTIME=2 read %zd after %ld ms", r, t0);
	/* VMIN 3: waits for three bytes */
	t.c_cc[VMIN] = 3;
	t.c_cc[VTIME] = 0;
	tcsetattr(p.s, TCSANOW, &t);
	put(p.m, "xyz");
	r = read(p.s, buf, sizeof(buf));
	CHECK(r == 3, "VMIN=3 read %zd", r);

	/* back to canonical: raw input typed ahead is read as it is, in one */
	type(p.m, "typed\nmore");
	tcgetattr(p.s, &t);
	t.c_lflag |= ICANON;
	tcsetattr(p.s, TCSANOW, &t);
	r = read(p.s, buf, sizeof(buf));
	CHECK(r == 10 && !memcmp(buf, "typed\nmore", 10), "raw to canonical read %zd", r);
	pair_close(&p);
}

/* ---------------------------------------------------------------- sessions and signals */

static volatile sig_atomic_t got_winch, got_hup;

static void on_winch(int sig)
{
	got_winch = 1;
}

static void on_hup(int sig)
{
	got_hup = 1;
}

/* The child's half: a new session with the slave as its terminal. Exit
 * codes say what went wrong. */
static int session_child(const char *name)
{
	int fd, v = -1;
	pid_t me = getpid();

	if (setsid() != me)
		return 10;
	fd = open(name, O_RDWR); /* without O_NOCTTY: becomes the terminal */
	if (fd < 0)
		return 11;
	if (ioctl(fd, TIOCGSID, &v) < 0 || v != me)
		return 12;
	if (tcgetpgrp(fd) != me)
		return 13;
	if (ioctl(fd, TIOCSCTTY, 0) < 0) /* already ours: fine */
		return 14;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
	return 0;
}

/* ^C to the foreground group, ^Z stops it, SIGCONT, a background read. */
static void test_job_control(void)
{
	struct pair p;
	char buf[512];
	pid_t c;
	int st;

	if (pair_open(&p, 0))
		return;
	expect_reset();
	c = fork();
	if (c == 0) {
		int r, ws;
		pid_t g, bg;

		close(p.m);
		r = session_child(p.name);
		if (r)
			_exit(r);
		/* a job in its own group, in the foreground */
		g = fork();
		if (g == 0) {
			setpgid(0, 0);
			for (;;)
				pause();
		}
		setpgid(g, g);
		signal(SIGTTOU, SIG_IGN);
		if (tcsetpgrp(0, g) < 0)
			_exit(20);
		printf("ready\n");
		fflush(stdout);
		if (waitpid(g, &ws, WUNTRACED) != g || !WIFSTOPPED(ws) || WSTOPSIG(ws) != SIGTSTP)
			_exit(21);
		printf("stopped\n");
		fflush(stdout);
		kill(g, SIGCONT);
		if (waitpid(g, &ws, WCONTINUED) != g || !WIFCONTINUED(ws))
			_exit(22);
		printf("continued\n");
		fflush(stdout);
		if (waitpid(g, &ws, 0) != g || !WIFSIGNALED(ws) || WTERMSIG(ws) != SIGINT)
			_exit(23);
		/* the shell takes the terminal back (SIGTTOU ignored) */
		if (tcsetpgrp(0, getpid()) < 0)
			_exit(24);
		/* a background job that reads stops with SIGTTIN */
		bg = fork();
		if (bg == 0) {
			setpgid(0, 0);
			read(0, buf, 1);
			_exit(0);
		}
		setpgid(bg, bg);
		if (waitpid(bg, &ws, WUNTRACED) != bg || !WIFSTOPPED(ws) || WSTOPSIG(ws) != SIGTTIN)
			_exit(25);
		kill(bg, SIGKILL);
		waitpid(bg, &ws, 0);
		printf("done\n");
		fflush(stdout);
		_exit(0);
	}
	CHECK(expect(p.m, "ready\r\n", 5000), "job control: child not ready ('%s')",
	      vis(pend_seen));
	put(p.m, "\032"); /* ^Z */
	CHECK(expect(p.m, "^Z", 5000), "^Z not echoed: '%s'", vis(pend_seen));
	CHECK(expect(p.m, "stopped\r\n", 5000), "^Z did not stop the job: '%s'", vis(pend_seen));
	CHECK(expect(p.m, "continued\r\n", 5000), "SIGCONT: '%s'", vis(pend_seen));
	put(p.m, "\003"); /* ^C */
	CHECK(expect(p.m, "^C", 5000), "^C not echoed: '%s'", vis(pend_seen));
	CHECK(expect(p.m, "done\r\n", 5000), "^C did not end the job: '%s'", vis(pend_seen));
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		fail("job control: child status %#x", st);
	pair_close(&p);
}

/* Window size, SIGWINCH, /dev/tty, and hangup when the master closes. */
static void test_winsize_hangup(void)
{
	struct pair p;
	struct winsize ws = {.ws_row = 30, .ws_col = 100};
	char buf[512];
	struct stat st;
	pid_t c;
	int status;

	if (pair_open(&p, 0))
		return;
	expect_reset();
	c = fork();
	if (c == 0) {
		int r, fd;
		struct winsize got;
		sigset_t block, old;
		ssize_t n;

		close(p.m);
		r = session_child(p.name);
		if (r)
			_exit(r);
		signal(SIGWINCH, on_winch);
		signal(SIGHUP, on_hup);
		sigemptyset(&block);
		sigaddset(&block, SIGWINCH);
		sigprocmask(SIG_BLOCK, &block, &old);
		fd = open("/dev/tty", O_RDWR);
		if (fd < 0)
			_exit(30);
		printf("ready\n");
		fflush(stdout);
		while (!got_winch)
			sigsuspend(&old);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (ioctl(fd, TIOCGWINSZ, &got) < 0 || got.ws_row != 30 || got.ws_col != 100)
			_exit(31);
		if (write(fd, "winch\n", 6) != 6)
			_exit(32);
		/* block reading until the master goes away */
		do
			n = read(0, buf, sizeof(buf));
		while (n < 0 && errno == EINTR);
		/* end of file (Linux: EIO for a read that was waiting) */
		if (n != 0 && !(n < 0 && errno == EIO))
			_exit(33);
		if (read(0, buf, sizeof(buf)) != 0)
			_exit(36);
		if (!got_hup)
			_exit(34);
		if (write(1, "x", 1) != -1 || errno != EIO)
			_exit(35);
		_exit(0);
	}
	CHECK(expect(p.m, "ready\r\n", 5000), "winsize: child not ready ('%s')", vis(pend_seen));
	CHECK(ioctl(p.m, TIOCSWINSZ, &ws) == 0, "TIOCSWINSZ on the master");
	CHECK(expect(p.m, "winch\r\n", 5000), "SIGWINCH: '%s'", vis(pend_seen));
	msleep(20);
	close(p.m);
	p.m = -1;
	if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("winsize/hangup: child status %#x", status);
	CHECK(stat(p.name, &st) < 0 && errno == ENOENT, "%s still there after both sides closed",
	      p.name);
}

/* The master side's view of the slave: EIO once it is closed, locking,
 * TIOCGPTPEER, and a process without a terminal. */
static void test_master(void)
{
	struct pair p;
	char buf[16];
	ssize_t r;
	int fd, locked = -1;
	pid_t c;
	int st;

	if (pair_open(&p, 1))
		return;
	close(p.s);
	p.s = -1;
	r = read(p.m, buf, sizeof(buf));
	CHECK(r < 0 && errno == EIO, "master read after the slave closed: %zd (%s)", r,
	      strerror(errno));
	fd = ioctl(p.m, TIOCGPTPEER, O_RDWR | O_NOCTTY);
	CHECK(fd >= 0 && isatty(fd), "TIOCGPTPEER: %d", fd);
	if (fd >= 0)
		close(fd);
	pair_close(&p);

	p.m = posix_openpt(O_RDWR | O_NOCTTY);
	CHECK(p.m >= 0, "posix_openpt");
	CHECK(ioctl(p.m, TIOCGPTLCK, &locked) == 0 && locked == 1, "new pair not locked");
	ptsname_r(p.m, p.name, sizeof(p.name));
	fd = open(p.name, O_RDWR | O_NOCTTY);
	CHECK(fd < 0 && errno == EIO, "open of a locked slave: %d", fd);
	if (fd >= 0)
		close(fd);
	close(p.m);

	c = fork();
	if (c == 0) {
		setsid();
		fd = open("/dev/tty", O_RDWR);
		_exit(fd < 0 && errno == ENXIO ? 0 : 1);
	}
	CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) && !WEXITSTATUS(st),
	      "/dev/tty without a controlling terminal is not ENXIO");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_canon();
	test_raw();
	test_job_control();
	test_winsize_hangup();
	test_master();
	if (failures)
		printf("ptytest: %d failures\n", failures);
	else
		printf("ptytest ok\n");
	return failures ? 1 : 0;
}
