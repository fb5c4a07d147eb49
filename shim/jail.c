/* SPDX-License-Identifier: MIT */
/*
 * The container's VMM in kiln-vmm's jail (README "The jail"), started as
 * kilnd starts its own: pid 1 of a pid namespace of its own
 * (control/sandbox/vmm_clone.c), with a uid and gid of its own and one
 * writable directory, BUNDLE/vmm-out.
 *
 * The uid: shims are separate processes with no kilnd to hand out ids, so
 * each takes one of KILN_SHIM_JAIL_UID_BASE (default 800000, below kilnd's
 * 900000 + 1...65535) + 1...65535 by an flock on /run/kiln-shim/jail/UID,
 * held while the shim lives, and skips an id that some process still runs
 * as (the VMM of a shim that died, until containerd's `delete` kills it).
 *
 * The bundle stays the shim's (root's): the VMM's uid may only pass
 * through it (0711) to vmm-out, so it cannot put a link where the shim
 * writes as root (console.log, vmm.pid, pause.snap). A snapshot is written
 * in vmm-out and moved into the bundle only if it is a plain file of the
 * VMM's uid with one link, as kilnd does (control/sandbox/jail_out.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

#define LOCK_DIR      "/run/kiln-shim/jail"
#define UID_BASE      800000u
#define UID_BASE_MAX  4000000000u
#define SLOTS         65536u
#define JAIL_OUT      "vmm-out"
#define JAIL_OUT_SNAP JAIL_OUT "/pause.snap"
#define JAIL_ID_FILE  "jail.id"

/* Does any process run as uid? /proc/PID is owned by the process's
 * euid (a jailed VMM stays dumpable after it drops root for that). */
static bool uid_in_use(unsigned uid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	struct stat st;
	bool used = false;

	if (!d)
		return false;
	while (!used && (e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
		    !fstatat(dirfd(d), e->d_name, &st, 0) && st.st_uid == uid)
			used = true;
	closedir(d);
	return used;
}

/* uid no longer in use, waiting up to a second for it: on a loaded host
 * the ended VMM's uid was seen in /proc just after its exit was reaped, and
 * its lock file was left behind. */
static bool uid_gone(unsigned uid)
{
	for (int i = 0; i < 100; i++) {
		if (!uid_in_use(uid))
			return true;
		usleep(10000);
	}
	return false;
}

/* The lock we hold is still the file at path: a lock file is unlinked by
 * the shim that held it (jail_release), and one opened before that is no
 * lock any more. */
static bool still_there(int fd, const char *path)
{
	struct stat a, b;

	return !fstat(fd, &a) && !stat(path, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A lock per uid (not per slot): shims of other KILN_SHIM_JAIL_UID_BASEs
 * take other files. */
static void lock_path(unsigned uid, char *out, size_t n)
{
	snprintf(out, n, LOCK_DIR "/%u", uid);
}

static int uid_base(unsigned *base, char *msg, size_t n)
{
	const char *env = getenv("KILN_SHIM_JAIL_UID_BASE");
	char *end;
	unsigned long v;

	*base = UID_BASE;
	if (!env || !*env)
		return 0;
	errno = 0;
	v = strtoul(env, &end, 10);
	if (errno || *end || v < 1000 || v > UID_BASE_MAX - SLOTS) {
		snprintf(msg, n, "KILN_SHIM_JAIL_UID_BASE=%s: expected a uid from 1000 to %u", env,
		         UID_BASE_MAX - SLOTS);
		return -EINVAL;
	}
	*base = (unsigned)v;
	return 0;
}

/* Take a jail id: its lock's fd in *lock_fd. */
static int take_id(unsigned *id, int *lock_fd, char *msg, size_t n)
{
	unsigned base, start = (unsigned)getpid() % (SLOTS - 1);
	char path[64];
	int err = uid_base(&base, msg, n);

	if (err)
		return err;
	mkdir("/run/kiln-shim", 0700);
	if (mkdir(LOCK_DIR, 0700) < 0 && errno != EEXIST) {
		err = -errno;
		snprintf(msg, n, "cannot make %s: %s", LOCK_DIR, strerror(errno));
		return err;
	}
	for (unsigned i = 0; i < SLOTS - 1; i++) {
		unsigned slot = 1 + (start + i) % (SLOTS - 1);
		int fd;

		lock_path(base + slot, path, sizeof(path));
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			err = -errno;
			snprintf(msg, n, "cannot open %s: %s", path, strerror(errno));
			return err;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && still_there(fd, path) &&
		    !uid_in_use(base + slot)) {
			*id = base + slot;
			*lock_fd = fd;
			return 0;
		}
		close(fd);
	}
	snprintf(msg, n, "all %u jail uids from %u are taken by running VMMs", SLOTS - 1, base + 1);
	return -EAGAIN;
}

int jail_prepare(struct shim *s, char *msg, size_t n)
{
	const char *off = getenv("KILN_SHIM_NO_JAIL");
	struct stat st;
	int err, fd;

	s->vm.jail_id = 0;
	s->vm.jail_lock = -1;
	s->vm.no_jail = off && *off && strcmp(off, "0");
	/* Not root: kiln-vmm jails itself as far as a user can (and says
	 * so in its console); there is no uid to give it. */
	if (s->vm.no_jail || geteuid() != 0)
		return 0;
	if (mkdir(JAIL_OUT, 0700) < 0 && errno != EEXIST) {
		err = -errno;
		snprintf(msg, n, "cannot make %s/" JAIL_OUT ": %s", s->bundle, strerror(errno));
		return err;
	}
	if (lstat(JAIL_OUT, &st) < 0 || !S_ISDIR(st.st_mode) || chmod(".", 0711) < 0) {
		snprintf(msg, n, "%s/" JAIL_OUT " is not a directory of the shim's", s->bundle);
		return -ENOTDIR;
	}
	if ((err = take_id(&s->vm.jail_id, &s->vm.jail_lock, msg, n)))
		return err;
	/* for `delete` after a shim that died (jail_cleanup) */
	if ((fd = open(JAIL_ID_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	               0600)) >= 0) {
		dprintf(fd, "%u\n", s->vm.jail_id);
		close(fd);
	}
	return 0;
}

/* The VMM of id has ended: its cgroup leaves and its lock file go. The
 * lock (lock_fd, or taken here after a shim that died) is held while the
 * file is unlinked, so no other shim holds that file meanwhile. */
static void release_id(unsigned id, int lock_fd)
{
	char path[64];
	int fd = lock_fd;

	cgroup_remove_leaves(id);
	lock_path(id, path, sizeof(path));
	if (fd < 0 && (fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) >= 0 &&
	    flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd); /* another shim's now */
		return;
	}
	if (fd >= 0 && still_there(fd, path) && uid_gone(id))
		unlink(path);
	if (fd >= 0)
		close(fd);
}

void jail_release(struct shim *s)
{
	podcg_remove(s->bundle);
	if (s->vm.jail_id && s->vm.jail_lock >= 0)
		release_id(s->vm.jail_id, s->vm.jail_lock);
	else if (s->vm.jail_lock >= 0)
		close(s->vm.jail_lock);
	s->vm.jail_lock = -1;
}

void jail_cleanup(const char *bundle)
{
	char path[PATH_MAX + 16];
	unsigned id = 0;
	FILE *f;

	podcg_remove(bundle);
	snprintf(path, sizeof(path), "%s/" JAIL_ID_FILE, bundle);
	if (!(f = fopen(path, "re")))
		return;
	if (fscanf(f, "%u", &id) == 1 && id)
		release_id(id, -1);
	fclose(f);
}

int jail_snap_target(const struct shim *s, char *out, size_t len)
{
	const char *rel = s->vm.jail_id ? JAIL_OUT_SNAP : "pause.snap";

	return snprintf(out, len, "%s/%s", s->bundle, rel) >= (int)len ? -ENAMETOOLONG : 0;
}

int jail_take_snapshot(const struct shim *s, char *msg, size_t n)
{
	struct stat st;
	int err;

	if (!s->vm.jail_id)
		return 0;
	/* Anything but a file the VMM wrote (a link, a hard link to another
	 * file, a fifo) is refused: the VMM's uid owns vmm-out. */
	if (lstat(JAIL_OUT_SNAP, &st) < 0) {
		err = -errno;
		snprintf(msg, n, "the VMM's snapshot %s/" JAIL_OUT_SNAP ": %s", s->bundle,
		         strerror(errno));
		return err;
	}
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != s->vm.jail_id) {
		snprintf(msg, n,
		         "the VMM's snapshot %s/" JAIL_OUT_SNAP " is not a plain file of its own "
		         "(mode %o, %lu links, uid %u): refused",
		         s->bundle, (unsigned)st.st_mode, (unsigned long)st.st_nlink,
		         (unsigned)st.st_uid);
		unlink(JAIL_OUT_SNAP);
		return -EPERM;
	}
	if (rename(JAIL_OUT_SNAP, "pause.snap") < 0) {
		err = -errno;
		snprintf(msg, n, "cannot move the snapshot into %s: %s", s->bundle,
		         strerror(errno));
		unlink(JAIL_OUT_SNAP);
		return err;
	}
	return 0;
}
