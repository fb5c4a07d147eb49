/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail_out.h"
#include "sandbox.h"
#include "util.h"

#define OUT_SNAP SB_OUT_DIR "/snapshot"
/* Other snapshots (forks, templates): never the pause's, which a later
 * pause appends to (pause_base.h). */
#define OUT_OTHER SB_OUT_DIR "/other-snapshot"

static const char *out_name(const struct sandbox *sb, const char *dest)
{
	return strcmp(dest, sb->snap_path) ? OUT_OTHER : OUT_SNAP;
}

int sb_out_dir_make(const char *dir)
{
	char path[4200];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/" SB_OUT_DIR, dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	/* The VMM's uid must pass through dir (not read or write it); nobody
	 * else reaches it (the data directory is 0700). */
	if (chmod(dir, 0711) < 0)
		return -errno;
	/* A VMM of this sandbox may have put something else there. */
	if (lstat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

char *sb_vmm_snap_target(const struct sandbox *sb, const char *dest)
{
	char *p;

	if (!sb->jail_id)
		return strdup(dest);
	return asprintf(&p, "%s/%s", sb->dir, out_name(sb, dest)) < 0 ? NULL : p;
}

int sb_take_snapshot(const struct sandbox *sb, const char *dest, char *why, size_t n)
{
	char src[4200];
	struct stat st;
	int err;

	if (!sb->jail_id)
		return 0;
	snprintf(src, sizeof(src), "%s/%s", sb->dir, out_name(sb, dest));
	/* The VMM's uid owns the directory: anything but a file it wrote
	 * (a link, a hard link to another file, a fifo) is refused. Root's
	 * files are a VMM's that wrote before it dropped root, or a test
	 * double's: a jailed VMM can make none (and cannot rename one here
	 * from elsewhere: it has no other writable directory, and its bound
	 * files are on other mounts). */
	if (lstat(src, &st) < 0) {
		err = -errno;
		snprintf(why, n, "the VMM's snapshot %s: %s", src, strerror(errno));
		return err;
	}
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    (st.st_uid != sb->jail_id && st.st_uid != 0)) {
		snprintf(
		    why, n,
		    "the VMM's snapshot %s is not a plain file of its own (mode %o, %lu links, "
		    "uid %u): refused",
		    src, (unsigned)st.st_mode, (unsigned long)st.st_nlink, (unsigned)st.st_uid);
		unlink(src);
		return -EPERM;
	}
	if (rename(src, dest) < 0) {
		err = -errno;
		snprintf(why, n, "cannot move the snapshot %s to %s: %s", src, dest,
		         strerror(errno));
		unlink(src);
		return err;
	}
	/* The VMM is stopped next: the move must survive a host crash, or
	 * the paused sandbox's only copy of its memory is gone with it. The
	 * VMM fsynced the file; both directories' entries change here. */
	err = fsync_parent(dest);
	if (!err)
		err = fsync_parent(src);
	if (err) {
		snprintf(why, n, "moving the snapshot to %s: syncing its directory: %s", dest,
		         strerror(-err));
		return err;
	}
	return 0;
}

int sb_give_snapshot(const struct sandbox *sb, char *why, size_t n)
{
	char dst[4200];
	int fd, err = 0;

	if (!sb->jail_id)
		return 0; /* the VMM writes to snap_path itself */
	snprintf(dst, sizeof(dst), "%s/" OUT_SNAP, sb->dir);
	/* By descriptor: the name is kilnd's, but the uid given may be
	 * another VMM's by now than the one that wrote the file. */
	fd = open(sb->snap_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, sb->jail_id, sb->jail_id) < 0 || rename(sb->snap_path, dst) < 0) {
		err = -errno;
		snprintf(why, n, "cannot give %s to the VMM as %s: %s", sb->snap_path, dst,
		         strerror(errno));
		unlink(sb->snap_path);
	}
	if (fd >= 0)
		close(fd);
	return err;
}
