/* SPDX-License-Identifier: MIT */
/* kiln-agent: mkdir -p and (recursive) remove for file streams. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsops.h"
#include "users.h"

/* Each level of a recursive remove holds one directory open. */
#define RM_MAX_DEPTH 256

/* A directory mkdir just made goes to owner (when there is one). */
static int give_dir(const char *path, const struct agent_user *owner)
{
	return owner && chown(path, owner->uid, owner->gid) < 0 ? -errno : 0;
}

int fs_mkdir_p(const char *path, uint32_t mode, const struct agent_user *owner)
{
	size_t n = strlen(path);
	struct stat st;
	int err = 0;
	char *buf;

	if (!n)
		return -ENOENT;
	buf = strdup(path);
	if (!buf)
		return -ENOMEM;
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = 0;
	for (char *s = buf + 1; *s && !err; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		/* Parents get the default mode, as with mkdir -p -m. */
		if (mkdir(buf, 0777) == 0)
			err = give_dir(buf, owner);
		else if (errno != EEXIST)
			err = -errno;
		*s = '/';
	}
	if (!err) {
		if (mkdir(buf, mode) == 0) {
			err = give_dir(buf, owner);
			if (!err && chmod(buf, mode) < 0) /* mkdir applied the umask */
				err = -errno;
		} else if (errno != EEXIST) {
			err = -errno;
		} else if (stat(buf, &st) < 0) {
			err = -errno;
		} else if (!S_ISDIR(st.st_mode)) {
			err = -EEXIST;
		}
	}
	free(buf);
	return err;
}

/* `where` holds the path of name (relative to dfd) at entry and at a failure. */
static int rm_tree(int dfd, const char *name, int depth, char *where, size_t wlen, size_t cap)
{
	struct dirent *e;
	struct stat st;
	int fd, err = 0;
	DIR *d;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) < 0 ? -errno : 0;
	if (depth >= RM_MAX_DEPTH)
		return -ELOOP;
	/* a procfs a pod container's root has (UNTAR): not to be emptied;
	 * where names it unless it was too long to (then it is the parent's) */
	size_t wl = strlen(where), nl = strlen(name);
	if (wl >= nl && !strcmp(where + wl - nl, name))
		umount2(where, MNT_DETACH | UMOUNT_NOFOLLOW);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	for (;;) {
		errno = 0;
		e = readdir(d);
		if (!e) {
			err = -errno;
			break;
		}
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		size_t len = wlen;
		int k = snprintf(where + wlen, cap - wlen, "/%s", e->d_name);
		if (k > 0 && (size_t)k < cap - wlen)
			len += k;
		else
			where[wlen] = 0; /* too long to name: report the parent */
		err = rm_tree(dirfd(d), e->d_name, depth + 1, where, len, cap);
		if (err)
			break;
		where[wlen] = 0;
	}
	closedir(d);
	if (!err && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		err = -errno;
	return err;
}

int fs_remove(const char *path, bool recursive, char *where, size_t cap)
{
	struct stat st;

	snprintf(where, cap, "%s", path);
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 ? -errno : 0;
	if (!recursive)
		return rmdir(path) < 0 ? -errno : 0;
	return rm_tree(AT_FDCWD, path, 0, where, strlen(where), cap);
}
