// SPDX-License-Identifier: MIT
/*
 * User and group ids and Unix permissions between users: run as root, it
 * sets up files in /tmp/credtest, then a child becomes uid/gid 1000 and
 * tries what an unprivileged user may and may not do. Every line is the
 * result of one call (ok, or the errno's name), so the run in a kiln guest
 * is compared with the same program run on a Linux host (as root).
 *
 * Set-user-ID and set-group-ID programs: copies of this program with those
 * bits, run by uid 1000 and by root ("credtest report LABEL" prints the ids
 * they run with, AT_SECURE and the other ids in the aux vector, whether the
 * process is dumpable and whether the C library dropped LD_PRELOAD); a
 * set-id script (ignored), a set-group-ID file without the group x bit,
 * and no_new_privs (ignored too).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errname.h"

#define D    "/tmp/credtest"
#define USER 1000

/* Print what a call gave: rc < 0 is errno. */
static void show(const char *what, long rc)
{
	printf("%s: %s\n", what, rc < 0 ? ename(errno) : "ok");
}

static long try_open(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd >= 0)
		close(fd);
	return fd;
}

static void must(long rc, const char *what)
{
	if (rc < 0) {
		printf("setup failed: %s: %s\n", what, strerror(errno));
		exit(1);
	}
}

static void put(const char *path, mode_t mode, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	must(fd, path);
	must(write(fd, text, strlen(text)), path);
	close(fd);
	must(chmod(path, mode), path);
}

static void ids(const char *who)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	gid_t g[8];
	int n;

	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	n = getgroups(8, g);
	printf("%s: uid %u %u %u gid %u %u %u groups %d", who, r, e, s, gr, ge, gs, n);
	for (int i = 0; i < n && i < 8; i++)
		printf(" %u", g[i]);
	printf("\n");
}

static void status_uid(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Uid:", 4) || !strncmp(line, "Gid:", 4) ||
		    !strncmp(line, "Groups:", 7))
			fputs(line, stdout);
	if (f)
		fclose(f);
}

static void as_user(void)
{
	static char *const argv[] = {"noexec", NULL};
	struct timespec t[2] = {{1, 0}, {1, 0}};
	struct stat st;
	gid_t one = USER;
	int fd;

	show("setgroups", setgroups(1, &one));
	show("setresgid", setresgid(USER, USER, USER));
	show("setresuid", setresuid(USER, USER, USER));
	ids("user");
	status_uid();
	show("setuid(0)", setuid(0));
	show("seteuid(0)", seteuid(0));
	show("setgroups as user", setgroups(0, NULL));
	show("setresuid to own ids", setresuid(-1, USER, -1));

	show("read root's file", try_open(D "/rootfile", O_RDONLY));
	show("write root's file", try_open(D "/rootfile", O_WRONLY));
	show("truncate-open root's file", try_open(D "/rootfile", O_RDONLY | O_TRUNC));
	show("truncate root's file", truncate(D "/rootfile", 0));
	show("create in root's dir", try_open(D "/new", O_WRONLY | O_CREAT));
	show("mkdir in root's dir", mkdir(D "/newdir", 0755));
	show("symlink in root's dir", symlink("x", D "/link"));
	show("unlink in root's dir", unlink(D "/rootfile"));
	show("rmdir in root's dir", rmdir(D "/userdir"));
	show("rename in root's dir", rename(D "/rootfile", D "/moved"));
	show("chmod root's file", chmod(D "/rootfile", 0666));
	show("chown root's file", chown(D "/rootfile", USER, USER));
	show("utimens now root's file", utimensat(AT_FDCWD, D "/rootfile", NULL, 0));
	show("utimens set root's file", utimensat(AT_FDCWD, D "/rootfile", t, 0));
	show("access R root's file", access(D "/rootfile", R_OK));
	show("access W root's file", access(D "/rootfile", W_OK));
	show("open private dir", try_open(D "/private", O_RDONLY | O_DIRECTORY));
	show("stat in private dir", stat(D "/private/secret", &st));
	show("chdir private dir", chdir(D "/private"));
	show("exec root's 0700 script", execv(D "/noexec", argv));
	show("write group-writable file", try_open(D "/groupfile", O_WRONLY));

	fd = open(D "/userdir/mine", O_WRONLY | O_CREAT | O_EXCL, 0444);
	show("create in own dir (0444)", fd);
	if (fd >= 0) {
		show("write the new 0444 file", write(fd, "x", 1));
		fstat(fd, &st);
		printf("new file: uid %u gid %u mode %o\n", st.st_uid, st.st_gid,
		       st.st_mode & 07777);
		close(fd);
	}
	show("reopen own 0444 file for writing", try_open(D "/userdir/mine", O_WRONLY));
	show("chmod own file", chmod(D "/userdir/mine", 0644));
	show("write own file", try_open(D "/userdir/mine", O_WRONLY));
	show("chown own file to root", chown(D "/userdir/mine", 0, -1));
	show("chgrp own file to group 0", chown(D "/userdir/mine", -1, 0));
	show("chgrp own file to own group", chown(D "/userdir/mine", -1, USER));
	show("utimens set own file", utimensat(AT_FDCWD, D "/userdir/mine", t, 0));
	show("mkdir in own dir", mkdir(D "/userdir/sub", 0755));
	show("unlink root's file in sticky dir", unlink(D "/sticky/rootfile"));
	show("rename over root's file in sticky dir",
	     rename(D "/userdir/mine", D "/sticky/rootfile"));
	show("create in sticky dir", try_open(D "/sticky/usermade", O_WRONLY | O_CREAT));
	show("unlink own file in sticky dir", unlink(D "/sticky/usermade"));
	show("rename own file within own dir", rename(D "/userdir/mine", D "/userdir/mine2"));
	if (fork() == 0) {
		ids("user's child");
		_exit(0);
	}
	wait(NULL);
}

/* Keep a saved uid of 0: the effective uid may come back to root. */
static void saved_root(void)
{
	show("setresuid(1000, 1000, 0)", setresuid(USER, USER, 0));
	show("write root's file as 1000", try_open(D "/rootfile", O_WRONLY));
	show("seteuid(0) from saved", seteuid(0));
	ids("back to root");
	show("write root's file as root again", try_open(D "/rootfile", O_WRONLY));
	show("setreuid(1000, 1000)", setreuid(USER, USER));
	ids("after setreuid");
	show("seteuid(0) after setreuid", seteuid(0));
	show("setfsuid(1000) answers old", setfsuid(USER) == USER ? 0 : -1);
}

/* "credtest report LABEL": what a program started by exec runs with. */
static int report(const char *label)
{
	printf("%s: AT_SECURE %lu AT_UID %lu AT_EUID %lu AT_GID %lu AT_EGID %lu dumpable %d "
	       "LD_PRELOAD %s\n",
	       label, getauxval(AT_SECURE), getauxval(AT_UID), getauxval(AT_EUID),
	       getauxval(AT_GID), getauxval(AT_EGID), prctl(PR_GET_DUMPABLE, 0, 0, 0, 0),
	       getenv("LD_PRELOAD") ? "kept" : "dropped");
	ids(label);
	status_uid();
	show("write root's file", try_open(D "/rootfile", O_WRONLY));
	show("setresuid(0, 0, 0)", setresuid(0, 0, 0));
	return 0;
}

/* A copy of this program (from /proc/self/exe) at path, owner uid:gid,
 * mode mode (chmod after chown: chown clears the set-id bits). */
static void copy_self(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	char buf[65536];
	int in = open("/proc/self/exe", O_RDONLY), out;
	long n;

	must(in, "/proc/self/exe");
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0700);
	must(out, path);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		must(write(out, buf, (size_t)n), path);
	must(n, "read /proc/self/exe");
	close(in);
	close(out);
	must(chown(path, uid, gid), path);
	must(chmod(path, mode), path);
}

/* Run path as "path report label" with LD_PRELOAD set; wait for it. */
static void run_report(const char *path, const char *label)
{
	char *const argv[] = {(char *)path, "report", (char *)label, NULL};
	char *const envp[] = {"LD_PRELOAD=/nonexistent.so", "PATH=/bin:/usr/bin", NULL};
	pid_t pid = fork();

	if (pid == 0) {
		execve(path, argv, envp);
		printf("%s: exec: %s\n", label, ename(errno));
		_exit(127);
	}
	waitpid(pid, NULL, 0);
}

static void setid_programs(void)
{
	gid_t one = USER;

	run_report(D "/suid-user", "root runs a set-uid-1000 program");
	show("setgroups", setgroups(1, &one));
	show("setresgid", setresgid(USER, USER, USER));
	show("setresuid", setresuid(USER, USER, USER));
	printf("dumpable before: %d\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
	run_report(D "/plain-copy", "user runs a plain program");
	run_report(D "/suid-root", "user runs a set-uid-root program");
	run_report(D "/sgid-root", "user runs a set-gid-0 program");
	run_report(D "/sgid-nox", "user runs a set-gid file without group x");
	run_report(D "/suid-script", "user runs a set-uid-root script");
	show("PR_SET_DUMPABLE 2", prctl(PR_SET_DUMPABLE, 2, 0, 0, 0));
	show("PR_SET_DUMPABLE 0", prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
	printf("dumpable after 0: %d\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
	show("PR_SET_NO_NEW_PRIVS", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	printf("no_new_privs: %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	run_report(D "/suid-root", "user runs a set-uid-root program with no_new_privs");
}

int main(int argc, char **argv)
{
	struct stat st;
	pid_t pid;
	int status;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 3 && !strcmp(argv[1], "report"))
		return report(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "report")) /* a script's interpreter: */
		return report(argv[4]);              /* interp report script report label */
	umask(022);
	ids("root");
	if (system("rm -rf " D) != 0)
		return 1;
	must(mkdir(D, 0755), D);
	put(D "/rootfile", 0644, "root\n");
	put(D "/groupfile", 0664, "group\n");
	must(chown(D "/groupfile", 0, USER), "chown groupfile");
	put(D "/noexec", 0700, "#!/bin/sh\necho ran\n");
	put(D "/readonly", 0444, "ro\n");
	put(D "/plain", 0644, "plain\n");
	must(mkdir(D "/private", 0700), "private");
	put(D "/private/secret", 0600, "s\n");
	must(mkdir(D "/userdir", 0755), "userdir");
	must(chown(D "/userdir", USER, USER), "chown userdir");
	must(mkdir(D "/sticky", 01777), "sticky");
	must(chmod(D "/sticky", 01777), "chmod sticky");
	put(D "/sticky/rootfile", 0666, "r\n");

	/* root passes the checks, but runs only what has an x bit */
	show("root writes a 0444 file", try_open(D "/readonly", O_WRONLY));
	show("root reads a 0600 file in a 0700 dir", try_open(D "/private/secret", O_RDONLY));
	show("root access X of a 0644 file", access(D "/plain", X_OK));
	show("root access W of a 0444 file", access(D "/readonly", W_OK));

	pid = fork();
	if (pid == 0) {
		as_user();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	pid = fork();
	if (pid == 0) {
		saved_root();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	copy_self(D "/plain-copy", 0, 0, 0755);
	copy_self(D "/suid-root", 0, 0, 04755);
	copy_self(D "/suid-user", USER, USER, 04755);
	copy_self(D "/sgid-root", 0, 0, 02755);
	copy_self(D "/sgid-nox", 0, 0, 02745);
	put(D "/suid-script", 04755, "#!" D "/plain-copy report\n");
	pid = fork();
	if (pid == 0) {
		setid_programs();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	ids("root after children");
	must(stat(D "/userdir/mine2", &st), "stat mine2");
	printf("user's file: uid %u gid %u\n", st.st_uid, st.st_gid);
	must(stat(D "/sticky/rootfile", &st), "stat sticky/rootfile");
	printf("sticky rootfile: uid %u size %ld\n", st.st_uid, (long)st.st_size);
	if (system("rm -rf " D) != 0)
		return 1;
	printf("credtest done\n");
	return 0;
}
