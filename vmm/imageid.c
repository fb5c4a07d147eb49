/* SPDX-License-Identifier: MIT */
/*
 * Identity of the files a guest was booted from (kernel, initramfs), named
 * in every snapshot so that a restore with other files is refused: XXH64 of
 * the whole file. Restoring must not cost a pass over the files, so each
 * result is remembered in a small cache file keyed by the file's device,
 * inode, size, mtime and ctime (any write changes the last two), under
 * $KILN_CACHE/image-ids (default ~/.cache/kiln, or /tmp/kiln-cache-UID
 * without a home), one file per image. A missing or stale entry only costs
 * the hash. An entry names a file as a kernel: the cache is used only in
 * a directory that is ours (not a link, owned by our uid, writable by
 * nobody else), and its entries are opened without following links.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../snapshot/snap.h"
#include "imageid.h"

#define CACHE_MAGIC "KILNIMG1"

struct cache_entry {
	char magic[8];
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
	struct snap_image_id id;
};

static int cache_dir(char *buf, size_t len)
{
	const char *base = getenv("KILN_CACHE"), *home = getenv("HOME");
	int n;

	if (base && *base)
		n = snprintf(buf, len, "%s/image-ids", base);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.cache/kiln/image-ids", home);
	else
		n = snprintf(buf, len, "/tmp/kiln-cache-%u/image-ids", (unsigned)geteuid());
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

static bool dir_is_ours(const char *path)
{
	struct stat st;

	return !lstat(path, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 022);
}

/* The cache directory, if it can be trusted; in /tmp (shared with every
 * user) its parent kiln-cache-UID too, which another user may have made. */
static bool cache_dir_ok(char *dir)
{
	char *slash = strrchr(dir, '/');
	bool ok;

	if (!dir_is_ours(dir))
		return false;
	if (strncmp(dir, "/tmp/", 5) || !slash)
		return true;
	*slash = 0;
	ok = dir_is_ours(dir);
	*slash = '/';
	return ok;
}

/* mkdir -p, owner-only for what we create. */
static void make_dirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(path, 0700);
		*p = '/';
	}
	mkdir(path, 0700);
}

static void fill_key(struct cache_entry *e, const struct stat *st)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->magic, CACHE_MAGIC, 8);
	e->dev = (uint64_t)st->st_dev;
	e->ino = (uint64_t)st->st_ino;
	e->size = (uint64_t)st->st_size;
	e->mtime_sec = st->st_mtim.tv_sec;
	e->mtime_nsec = st->st_mtim.tv_nsec;
	e->ctime_sec = st->st_ctim.tv_sec;
	e->ctime_nsec = st->st_ctim.tv_nsec;
}

static int entry_path(const struct stat *st, char *buf, size_t len)
{
	char dir[512];
	int n;

	if (cache_dir(dir, sizeof(dir)))
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%s/%llx-%llx", dir, (unsigned long long)st->st_dev,
	             (unsigned long long)st->st_ino);
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

static bool cache_get(const struct stat *st, struct snap_image_id *id)
{
	struct cache_entry want, got;
	char path[600], dir[512];
	ssize_t n;
	int fd;

	if (entry_path(st, path, sizeof(path)) || cache_dir(dir, sizeof(dir)) || !cache_dir_ok(dir))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	n = read(fd, &got, sizeof(got));
	close(fd);
	fill_key(&want, st);
	if (n != (ssize_t)sizeof(got) || memcmp(&want, &got, offsetof(struct cache_entry, id)) ||
	    got.id.size != (uint64_t)st->st_size || got.id.alg != SNAP_HASH_XXH64)
		return false;
	*id = got.id;
	return true;
}

static void cache_put(const struct stat *st, const struct snap_image_id *id)
{
	struct cache_entry e;
	char path[600], tmp[640], dir[512];
	int fd;

	if (entry_path(st, path, sizeof(path)) || cache_dir(dir, sizeof(dir)))
		return;
	make_dirs(dir);
	if (!cache_dir_ok(dir))
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	fill_key(&e, st);
	e.id = *id;
	if (write(fd, &e, sizeof(e)) == (ssize_t)sizeof(e) && close(fd) == 0) {
		if (rename(tmp, path) < 0)
			unlink(tmp);
		return;
	}
	close(fd);
	unlink(tmp);
}

int image_id_of(const struct stat *st, const void *buf, size_t len, struct snap_image_id *id)
{
	if (cache_get(st, id))
		return 0;
	if (!buf || len != (uint64_t)st->st_size)
		return -ENODATA;
	snap_image_id_from_buf(id, buf, len);
	cache_put(st, id);
	return 0;
}

int image_id_of_path(const char *path, struct stat *st, struct snap_image_id *id)
{
	void *map;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	errno = 0;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		err = errno ? -errno : -EINVAL;
		close(fd);
		return err;
	}
	if (cache_get(st, id)) {
		close(fd);
		return 0;
	}
	map = st->st_size ? mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	err = image_id_of(st, map, (size_t)st->st_size, id);
	if (map)
		munmap(map, (size_t)st->st_size);
	return err;
}
