// SPDX-License-Identifier: MIT
/*
 * procfs as programs read it: /proc/self links, fd listing, maps, stat,
 * status, cmdline, the system files, a child's /proc/<pid> coming and
 * going, a second thread in /proc/self/task. Prints "proctest ok", or a
 * line per failed check and exits 1.
 * Built static with glibc; runs on the host too (for comparison by hand).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures++;
}

/* The whole file (NUL-terminated; *len without the NUL), or NULL. */
static char *slurp(const char *path, size_t *len)
{
	size_t cap = 256, n = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY);
	ssize_t r;

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	/* Small reads on purpose: the text must stay consistent across them. */
	while ((r = read(fd, buf + n, cap - n - 1 < 100 ? cap - n - 1 : 100)) > 0) {
		n += r;
		if (cap - n < 2)
			buf = realloc(buf, cap *= 2);
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* The value after "Key:" in a status-like text, as a string. */
static const char *field(const char *text, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!strncmp(l, key, klen) && l[klen] == ':') {
			const char *v = l + klen + 1;
			size_t n = 0;

			while (*v == ' ' || *v == '\t')
				v++;
			while (v[n] && v[n] != '\n' && n + 1 < size)
				n++;
			memcpy(out, v, n);
			out[n] = '\0';
			return out;
		}
	}
	return NULL;
}

static void msleep(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void check_links(const char *argv0)
{
	char buf[PATH_MAX], want[PATH_MAX], path[64];
	ssize_t n;

	n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n < 0 || !realpath(argv0, want))
		fail("readlink /proc/self/exe: %s", strerror(errno));
	else if ((buf[n] = '\0', strcmp(buf, want)))
		fail("/proc/self/exe is '%s', expected '%s'", buf, want);

	n = readlink("/proc/self", buf, sizeof(buf) - 1);
	snprintf(want, sizeof(want), "%d", getpid());
	if (n < 0 || (buf[n] = '\0', strcmp(buf, want)))
		fail("/proc/self is '%s', expected '%s'", n < 0 ? strerror(errno) : buf, want);

	n = readlink("/proc/thread-self", buf, sizeof(buf) - 1);
	snprintf(want, sizeof(want), "%d/task/%d", getpid(), gettid());
	if (n < 0 || (buf[n] = '\0', strcmp(buf, want)))
		fail("/proc/thread-self is '%s', expected '%s'", n < 0 ? strerror(errno) : buf,
		     want);

	if (chdir("/tmp") || (n = readlink("/proc/self/cwd", buf, sizeof(buf) - 1)) < 0 ||
	    (buf[n] = '\0', strcmp(buf, "/tmp")))
		fail("/proc/self/cwd is not /tmp");
	/* getcwd inside /proc: the directory of this process */
	snprintf(want, sizeof(want), "/proc/%d", getpid());
	if (chdir("/proc/self") || !getcwd(buf, sizeof(buf)) || strcmp(buf, want))
		fail("getcwd in /proc/self: '%s', expected '%s'", buf, want);
	if (chdir("/"))
		fail("chdir /");
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", getpid(), gettid());
	if (access(path, R_OK))
		fail("%s: %s", path, strerror(errno));
}

static void check_fds(void)
{
	int a = open("/data/words.txt", O_RDONLY),
	    b = open("/tmp/proctest.out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	bool seen_a = false, seen_b = false, seen_0 = false;
	char path[64], buf[PATH_MAX];
	struct dirent *de;
	DIR *d;
	ssize_t n;

	if (a < 0 || b < 0) {
		fail("open test files: %s", strerror(errno));
		return;
	}
	d = opendir("/proc/self/fd");
	if (!d) {
		fail("opendir /proc/self/fd: %s", strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		seen_0 |= !strcmp(de->d_name, "0");
		seen_a |= fd == a && de->d_name[0] != '.';
		seen_b |= fd == b && de->d_name[0] != '.';
		if (de->d_name[0] != '.' && de->d_type != DT_LNK)
			fail("/proc/self/fd/%s is not a symlink (d_type %d)", de->d_name,
			     de->d_type);
	}
	closedir(d);
	if (!seen_0 || !seen_a || !seen_b)
		fail("/proc/self/fd lacks 0, %d or %d", a, b);

	snprintf(path, sizeof(path), "/proc/self/fd/%d", a);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0 || (buf[n] = '\0', strcmp(buf, "/data/words.txt")))
		fail("%s -> '%s'", path, n < 0 ? strerror(errno) : buf);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", b);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0 || (buf[n] = '\0', strcmp(buf, "/tmp/proctest.out")))
		fail("%s -> '%s'", path, n < 0 ? strerror(errno) : buf);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", b);
	{
		char *info = slurp(path, NULL), v[32];

		if (!info || !field(info, "flags", v, sizeof(v)) ||
		    !(strtol(v, NULL, 8) & O_WRONLY))
			fail("%s: no write-only flags", path);
		free(info);
	}
	close(a);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", a);
	if (readlink(path, buf, sizeof(buf)) >= 0 || errno != ENOENT)
		fail("%s still there after close", path);
	close(b);
	unlink("/tmp/proctest.out");
}

static void check_maps(void)
{
	char *maps = slurp("/proc/self/maps", NULL), exe[PATH_MAX];
	unsigned long lo, hi, code = (unsigned long)&check_maps, stack = (unsigned long)&maps;
	bool code_ok = false, stack_ok = false;
	char perms[8];

	if (!maps) {
		fail("/proc/self/maps: %s", strerror(errno));
		return;
	}
	if (!realpath("/proc/self/exe", exe) || !strstr(maps, exe))
		fail("/proc/self/maps does not name the program");
	for (char *l = maps; *l;) {
		if (sscanf(l, "%lx-%lx %4s", &lo, &hi, perms) != 3) {
			fail("maps line does not parse: %.60s", l);
			break;
		}
		char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);

		code_ok |= lo <= code && code < hi && perms[2] == 'x';
		stack_ok |= lo <= stack && stack < hi && memmem(l, len, "[stack]", 7);
		if (!end)
			break;
		l = end + 1;
	}
	if (!code_ok)
		fail("no executable mapping holds the program's code");
	if (!stack_ok)
		fail("no [stack] mapping holds the stack");
	free(maps);
}

static void check_stat(const char *path, int pid, int ppid, char state)
{
	char *st = slurp(path, NULL), *p, comm[64];
	int spid, sppid, fields = 0;
	char s;

	if (!st) {
		fail("%s: %s", path, strerror(errno));
		return;
	}
	p = strrchr(st, ')');
	if (sscanf(st, "%d (%63[^)]", &spid, comm) != 2 || !p ||
	    sscanf(p + 1, " %c %d", &s, &sppid) != 2) {
		fail("%s does not parse: %s", path, st);
	} else {
		if (spid != pid || sppid != ppid || (state && s != state))
			fail("%s: pid %d ppid %d state %c, expected %d %d %c", path, spid, sppid, s,
			     pid, ppid, state ? state : '?');
		for (char *t = strtok(p + 1, " \n"); t; t = strtok(NULL, " \n"))
			fields++;
		if (fields + 2 != 52)
			fail("%s has %d fields, expected 52", path, fields + 2);
	}
	free(st);
}

static void check_status(void)
{
	char *st = slurp("/proc/self/status", NULL), v[64], want[32];

	if (!st) {
		fail("/proc/self/status: %s", strerror(errno));
		return;
	}
	if (!field(st, "Name", v, sizeof(v)) || strcmp(v, "proctest"))
		fail("status Name: '%s'", field(st, "Name", v, sizeof(v)) ? v : "(none)");
	snprintf(want, sizeof(want), "%d", getpid());
	if (!field(st, "Pid", v, sizeof(v)) || strcmp(v, want))
		fail("status Pid: '%s', expected %s", v, want);
	snprintf(want, sizeof(want), "%d", getppid());
	if (!field(st, "PPid", v, sizeof(v)) || strcmp(v, want))
		fail("status PPid: '%s', expected %s", v, want);
	if (!field(st, "State", v, sizeof(v)) || v[0] != 'R')
		fail("status State: '%s'", v);
	if (!field(st, "VmRSS", v, sizeof(v)) || atol(v) <= 0)
		fail("status VmRSS: '%s'", v);
	if (!field(st, "Threads", v, sizeof(v)) || strcmp(v, "1"))
		fail("status Threads: '%s'", v);
	free(st);
}

static void check_cmdline(int argc, char **argv)
{
	size_t len, want = 0;
	char *cl = slurp("/proc/self/cmdline", &len), *env = slurp("/proc/self/environ", NULL);

	for (int i = 0; i < argc; i++)
		want += strlen(argv[i]) + 1;
	if (!cl || len != want) {
		fail("/proc/self/cmdline: %zu bytes, expected %zu", cl ? len : 0, want);
	} else {
		for (int i = 0, off = 0; i < argc; off += strlen(argv[i++]) + 1)
			if (strcmp(cl + off, argv[i]))
				fail("cmdline argv[%d] '%s', expected '%s'", i, cl + off, argv[i]);
	}
	if (!env || strncmp(env, "PATH=", 5))
		fail("/proc/self/environ does not start with PATH=");
	free(cl);
	free(env);
}

static double uptime(void)
{
	char *u = slurp("/proc/uptime", NULL);
	double v = u ? atof(u) : -1;

	free(u);
	return v;
}

static void check_system(void)
{
	char *cpu = slurp("/proc/cpuinfo", NULL), *mem = slurp("/proc/meminfo", NULL), v[64];
	char *rel = slurp("/proc/sys/kernel/osrelease", NULL), *stat = slurp("/proc/stat", NULL);
	struct utsname u;
	double up1, up2;
	int fd;

	if (!cpu || !strstr(cpu, "processor\t: 0\n") || !strstr(cpu, "flags\t\t:"))
		fail("/proc/cpuinfo has no processor 0");
	if (!mem || !field(mem, "MemTotal", v, sizeof(v)) || atol(v) <= 0)
		fail("/proc/meminfo MemTotal: '%s'", mem ? v : "(none)");
	if (!field(mem, "MemFree", v, sizeof(v)) || atol(v) <= 0)
		fail("/proc/meminfo MemFree: '%s'", v);
	uname(&u);
	if (!rel || strncmp(rel, u.release, strlen(u.release)))
		fail("/proc/sys/kernel/osrelease '%s' is not uname's '%s'", rel, u.release);
	if (!stat || strncmp(stat, "cpu  ", 5) || !strstr(stat, "\ncpu0 ") ||
	    !strstr(stat, "btime "))
		fail("/proc/stat: %.40s", stat ? stat : "(none)");
	/* The first reading may be 0.00: a guest gets here within 10 ms of boot. */
	up1 = uptime();
	msleep(50);
	up2 = uptime();
	if (up1 < 0 || up2 <= up1)
		fail("uptime did not increase: %f then %f", up1, up2);
	/* kiln refuses the open (EACCES); Linux lets root open it, then the write fails */
	fd = open("/proc/cpuinfo", O_WRONLY);
	if (fd >= 0 ? write(fd, "x", 1) >= 0 : errno != EACCES)
		fail("writing /proc/cpuinfo: %s", fd >= 0 ? "allowed" : strerror(errno));
	if (fd >= 0)
		close(fd);
	if (mkdir("/proc/foo", 0755) == 0 || errno != ENOENT)
		fail("mkdir /proc/foo: %s", strerror(errno));
	if (unlink("/proc/self") == 0)
		fail("unlink /proc/self succeeded");
	fd = open("/proc/self/oom_score_adj", O_WRONLY);
	if (fd < 0 || write(fd, "100\n", 4) != 4)
		fail("write oom_score_adj: %s", strerror(errno));
	close(fd);
	free(cpu);
	free(mem);
	free(rel);
	free(stat);
	mem = slurp("/proc/self/oom_score_adj", NULL);
	if (!mem || strcmp(mem, "100\n"))
		fail("oom_score_adj reads '%s' after writing 100", mem);
	free(mem);
}

static bool in_proc_dir(int pid)
{
	char name[16];
	struct dirent *de;
	bool found = false;
	DIR *d = opendir("/proc");

	snprintf(name, sizeof(name), "%d", pid);
	while (d && (de = readdir(d)))
		found |= !strcmp(de->d_name, name) && de->d_type == DT_DIR;
	if (d)
		closedir(d);
	return found;
}

static char proc_state(int pid)
{
	char path[64], *st, *p, s = '?';

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	st = slurp(path, NULL);
	p = st ? strrchr(st, ')') : NULL;
	if (p)
		s = p[2];
	free(st);
	return s;
}

static void check_child(void)
{
	char path[64], s = '?';
	struct stat sb;
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		msleep(200);
		_exit(7);
	}
	if (pid < 0) {
		fail("fork: %s", strerror(errno));
		return;
	}
	msleep(20); /* the child runs until it sleeps */
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &sb) || !S_ISDIR(sb.st_mode) || !in_proc_dir(pid))
		fail("%s missing while the child runs", path);
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	check_stat(path, pid, getpid(), 'S');
	for (int i = 0; i < 200 && (s = proc_state(pid)) != 'Z'; i++)
		msleep(10);
	if (s != 'Z')
		fail("the exited child's state is %c, not Z", s);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
		fail("waitpid");
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &sb) == 0 || errno != ENOENT || in_proc_dir(pid))
		fail("%s still there after wait", path);
}

static volatile int stop_sleeper;

static void *sleeper(void *arg)
{
	while (!stop_sleeper)
		msleep(5);
	return NULL;
}

/* The tids in /proc/self/task; each task/<tid>/stat names its thread. */
static int count_tasks(void)
{
	char path[300];
	struct dirent *de;
	int n = 0;
	DIR *d = opendir("/proc/self/task");

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
		check_stat(path, atoi(de->d_name), getppid(), 0);
	}
	if (d)
		closedir(d);
	return n;
}

static void check_threads(void)
{
	char *st, v[16];
	pthread_t th;
	int n;

	if (pthread_create(&th, NULL, sleeper, NULL)) {
		fail("pthread_create");
		return;
	}
	msleep(20);
	if ((n = count_tasks()) != 2)
		fail("/proc/self/task has %d threads, expected 2", n);
	st = slurp("/proc/self/status", NULL);
	if (!st || !field(st, "Threads", v, sizeof(v)) || strcmp(v, "2"))
		fail("status Threads: '%s' with two threads", st ? v : "(none)");
	free(st);
	stop_sleeper = 1;
	pthread_join(th, NULL);
	if ((n = count_tasks()) != 1)
		fail("/proc/self/task has %d threads after join, expected 1", n);
}

int main(int argc, char **argv)
{
	char path[64];

	check_links(argv[0]);
	check_fds();
	check_maps();
	snprintf(path, sizeof(path), "/proc/%d/stat", getpid());
	check_stat("/proc/self/stat", getpid(), getppid(), 'R');
	check_stat(path, getpid(), getppid(), 'R');
	check_status();
	check_cmdline(argc, argv);
	check_system();
	check_child();
	check_threads();
	if (failures)
		return 1;
	printf("proctest ok\n");
	return 0;
}
