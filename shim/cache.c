/* SPDX-License-Identifier: MIT */
/* The shim's cache of rootfs images ($KILN_CACHE/shim/rootfs-HASH.erofs,
 * rootfs.c), bounded: after a shim packs a new image it prunes the cache
 * to $KILN_SHIM_CACHE_MAX_MB (default 20480) and drops images unused for
 * $KILN_SHIM_CACHE_MAX_DAYS (default 30), least recently used first.
 *
 * An image in use is never pruned: each shim holds a shared flock on the
 * image its VM booted from (from before the image is renamed into place
 * until the container is deleted, or the shim dies), and the pruner
 * removes a file only while it holds an exclusive flock on it (taken
 * without waiting: a locked file is skipped). A shim that opened an image
 * just as the pruner removed it sees it unlinked once its lock is granted
 * and packs it afresh. Use refreshes the file's mtime: that is "last
 * used". One pruner at a time (.prune.lock); temporary files of a pack
 * that died (unlocked, over an hour old) go too. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

#define MAX_ENTRIES 4096
#define TMP_AGE_S   3600

struct entry {
	char name[256];
	uint64_t bytes;
	int64_t used; /* mtime, s */
};

int cache_use(const char *path, int *lock)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	*lock = -1;
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_SH) || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink == 0 ||
	    st.st_size == 0) {
		close(fd); /* pruned meanwhile, or not an image: pack it again */
		return -ENOENT;
	}
	futimens(fd, NULL);
	*lock = fd;
	return 0;
}

/* NAME's value as a positive decimal number, or DEF (logged when set wrong). */
uint64_t shim_env_num(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return def;
	n = strtoull(v, &end, 10);
	if (*end || n == 0) {
		shim_log("%s=%s is not a positive number: using %llu", name, v,
		         (unsigned long long)def);
		return def;
	}
	return n;
}

static int by_use(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->used < y->used ? -1 : x->used > y->used;
}

static bool is_image(const char *n)
{
	size_t l = strlen(n);

	return !strncmp(n, "rootfs-", 7) && l > 13 && !strcmp(n + l - 6, ".erofs");
}

static bool is_tmp(const char *n)
{
	size_t l = strlen(n);

	return !strncmp(n, "rootfs-", 7) && l > 4 && !strcmp(n + l - 4, ".tmp");
}

/* Remove dir/name if nobody holds it; true if it went. */
static bool drop(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	bool gone = false;

	if (fd < 0)
		return false;
	if (!flock(fd, LOCK_EX | LOCK_NB))
		gone = !unlinkat(dfd, name, 0);
	close(fd);
	return gone;
}

int cache_prune(const char *dir, uint64_t max_bytes, int64_t max_age_s)
{
	struct entry *v = NULL;
	size_t n = 0, removed = 0;
	uint64_t total = 0;
	int64_t now = time(NULL);
	struct dirent *e;
	int dfd, lock;
	DIR *d;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	lock = openat(dfd, ".prune.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB)) {
		/* another shim is pruning: that is enough */
		if (lock >= 0)
			close(lock);
		close(dfd);
		return 0;
	}
	d = fdopendir(dup(dfd));
	v = calloc(MAX_ENTRIES, sizeof(*v));
	while (d && v && (e = readdir(d))) {
		struct stat st;

		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (is_tmp(e->d_name)) {
			if (now - st.st_mtime > TMP_AGE_S)
				removed += drop(dfd, e->d_name);
			continue;
		}
		if (!is_image(e->d_name) || strlen(e->d_name) >= sizeof(v->name))
			continue;
		if (n == MAX_ENTRIES) /* the rest is judged on a later pack */
			break;
		snprintf(v[n].name, sizeof(v[n].name), "%s", e->d_name);
		v[n].bytes = (uint64_t)st.st_blocks * 512;
		v[n].used = st.st_mtime;
		total += v[n].bytes;
		n++;
	}
	if (d)
		closedir(d);
	if (v)
		qsort(v, n, sizeof(*v), by_use);
	for (size_t i = 0; v && i < n; i++) {
		if (total <= max_bytes && now - v[i].used <= max_age_s)
			break; /* the rest are newer */
		if (drop(dfd, v[i].name)) {
			total -= v[i].bytes;
			removed++;
		}
	}
	if (total > max_bytes)
		shim_log("the rootfs cache %s holds %llu MiB, more than its %llu MiB: the rest is "
		         "in use",
		         dir, (unsigned long long)(total >> 20),
		         (unsigned long long)(max_bytes >> 20));
	free(v);
	close(lock);
	close(dfd);
	return (int)removed;
}

void cache_prune_env(const char *dir)
{
	uint64_t mb = shim_env_num("KILN_SHIM_CACHE_MAX_MB", 20480);
	uint64_t days = shim_env_num("KILN_SHIM_CACHE_MAX_DAYS", 30);
	int r = cache_prune(dir, mb << 20, (int64_t)days * 86400);

	if (r > 0)
		shim_log("pruned %d file(s) from the rootfs cache %s", r, dir);
}
