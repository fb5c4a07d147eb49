// SPDX-License-Identifier: MIT
/*
 * procperm: /proc/PID/ as an unprivileged user sees it, as on Linux. Run as
 * root, it starts a root process and a uid-1000 one, then a uid-1000
 * checker that reads their entries and its own: another user's environ,
 * maps, fd/ and cwd/exe/root links are EACCES, status/cmdline/stat are
 * readable; its own user's are readable while the process is dumpable; a
 * process's files belong to its user (root's once not dumpable); the Cap*
 * lines follow the ids. Every line is one call's result, so the guest's
 * output is compared with the same program's on the host.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errname.h"

#define USER 1000

static void show(const char *what, const char *who, long rc)
{
	printf("%s %s: %s\n", who, what, rc < 0 ? ename(errno) : "ok");
}

static long try_open(const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd >= 0)
		close(fd);
	return fd;
}

static long try_dir(const char *path)
{
	DIR *d = opendir(path);

	if (!d)
		return -1;
	closedir(d);
	return 0;
}

static long try_readlink(const char *path)
{
	char buf[256];

	return readlink(path, buf, sizeof(buf));
}

static void owner(const char *path, const char *who)
{
	struct stat st;

	if (stat(path, &st) < 0)
		printf("%s owner of %s: %s\n", who, strrchr(path, '/'), ename(errno));
	else
		printf("%s owner of %s: %u:%u\n", who, strrchr(path, '/'), st.st_uid, st.st_gid);
}

/* What the caller may do with /proc/pid/, labelled who. */
static void probe(int pid, const char *who)
{
	char p[64];
	struct stat st;

#define P(name) (snprintf(p, sizeof(p), "/proc/%d/%s", pid, name), p)
	show("status", who, try_open(P("status"), O_RDONLY));
	show("cmdline", who, try_open(P("cmdline"), O_RDONLY));
	show("stat", who, try_open(P("stat"), O_RDONLY));
	show("environ", who, try_open(P("environ"), O_RDONLY));
	show("maps", who, try_open(P("maps"), O_RDONLY));
	show("fd/", who, try_dir(P("fd")));
	show("fdinfo/", who, try_dir(P("fdinfo")));
	show("readlink cwd", who, try_readlink(P("cwd")));
	show("readlink exe", who, try_readlink(P("exe")));
	show("readlink root", who, try_readlink(P("root")));
	show("stat cwd", who, stat(P("cwd"), &st));
	show("lstat cwd", who, lstat(P("cwd"), &st));
	show("write comm", who, try_open(P("comm"), O_WRONLY));
	owner(P("status"), who);
	owner(P("environ"), who);
	snprintf(p, sizeof(p), "/proc/%d/task/%d/maps", pid, pid);
	show("task maps", who, try_open(p, O_RDONLY));
#undef P
}

static void caps(const char *who)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "CapInh:", 7) || !strncmp(line, "CapPrm:", 7) ||
		    !strncmp(line, "CapEff:", 7) || !strncmp(line, "CapAmb:", 7) ||
		    !strncmp(line, "NoNewPrivs:", 11))
			printf("%s %s", who, line);
	if (f)
		fclose(f);
}

/* Root's sets hold what the host allows (a container's are fewer). */
static void root_caps(void)
{
	char line[256];
	unsigned long long v;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &v) == 1 || sscanf(line, "CapPrm: %llx", &v) == 1)
			printf("root %.6s %s\n", line, v ? "some" : "none");
	if (f)
		fclose(f);
}

/* "procperm wait FD": block until FD (a pipe) ends. */
static int wait_eof(int fd)
{
	char c;

	while (read(fd, &c, 1) > 0)
		;
	return 0;
}

static void become_user(void)
{
	gid_t g = USER;

	if (setgroups(1, &g) || setresgid(USER, USER, USER) || setresuid(USER, USER, USER)) {
		perror("become uid 1000");
		exit(1);
	}
}

/* A child that runs "procperm ARGS..." (exec: dumpable again), returned
 * once it has exec'd: until then a child that changed its user is not
 * dumpable, and a probe of it would race its exec. */
static pid_t spawn(int as_user, char *const argv[], int keep_fd)
{
	int execd[2];
	pid_t pid;
	char c;

	if (pipe2(execd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(execd[0]);
		if (as_user)
			become_user();
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(execd[1]);
	while (read(execd[0], &c, 1) > 0) /* EOF: exec'd (or gone) */
		;
	close(execd[0]);
	(void)keep_fd;
	return pid;
}

/* "procperm check ROOTPID USERPID": the checks, as uid 1000. */
static int check(int root_pid, int user_pid)
{
	int sync[2], done[2];
	char c;
	pid_t kid;

	probe(root_pid, "root's");
	probe(user_pid, "user's");
	probe(getpid(), "own");
	caps("own");
	/* A process of the same user that is not dumpable is root's. */
	if (pipe(sync) || pipe(done))
		return 1;
	kid = fork();
	if (kid == 0) {
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		close(sync[0]);
		close(sync[1]); /* ready */
		close(done[1]);
		wait_eof(done[0]);
		_exit(0);
	}
	close(sync[1]);
	close(done[0]);
	read(sync[0], &c, 1);
	probe(kid, "undumpable sibling's");
	close(done[1]);
	waitpid(kid, NULL, 0);
	/* And so are our own, but our fd/ stays ours. */
	show("PR_SET_DUMPABLE 0", "own", prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
	probe(getpid(), "own undumpable");
	return 0;
}

int main(int argc, char **argv)
{
	int hold[2];
	char fd[16], rp[16], up[16];
	pid_t root_pid, user_pid, checker;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 3 && !strcmp(argv[1], "wait"))
		return wait_eof(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "check"))
		return check(atoi(argv[2]), atoi(argv[3]));
	if (pipe(hold) || fcntl(hold[1], F_SETFD, FD_CLOEXEC))
		return 1;
	snprintf(fd, sizeof(fd), "%d", hold[0]);
	char *wait_args[] = {"procperm", "wait", fd, NULL};
	root_pid = spawn(0, wait_args, hold[0]);
	user_pid = spawn(1, wait_args, hold[0]);
	close(hold[0]);
	snprintf(rp, sizeof(rp), "%d", (int)root_pid);
	snprintf(up, sizeof(up), "%d", (int)user_pid);
	char *check_args[] = {"procperm", "check", rp, up, NULL};
	checker = spawn(1, check_args, -1);
	waitpid(checker, NULL, 0);
	probe(user_pid, "root on the user's");
	root_caps();
	close(hold[1]);
	waitpid(root_pid, NULL, 0);
	waitpid(user_pid, NULL, 0);
	printf("procperm done\n");
	return 0;
}
