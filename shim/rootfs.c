/* SPDX-License-Identifier: MIT */
/* The container's rootfs as the VM's root: the mounts containerd gives
 * (an overlay of the image's layer snapshots and an empty upper dir, or a
 * bind mount) are mounted on BUNDLE/rootfs as runc's shim does, and
 * mkfs.erofs packs that tree into a read-only image the VM boots over
 * virtio-pmem (kiln's usual image path; the guest keeps its writes in
 * memory). An overlay whose upper dir is still empty is the image as
 * containerd unpacked it, so its image is cached under a hash of its
 * lower dirs, their paths and identities (snapshots are immutable): the
 * next container of the same image starts without packing; cache.c bounds
 * the cache and keeps the images in use. The image is released by Delete. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "shim.h"

static bool dir_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool empty = true;

	if (!d)
		return false;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = false;
	closedir(d);
	return empty;
}

static const char *opt_value(const struct shim_mount *m, const char *key)
{
	size_t k = strlen(key);

	for (size_t i = 0; i < m->n_options; i++)
		if (!strncmp(m->options[i], key, k) && m->options[i][k] == '=')
			return m->options[i] + k + 1;
	return NULL;
}

/* One mount onto target: flags from the options runc knows, the rest as
 * the file system's data. */
static int do_mount(const struct shim_mount *m, const char *target, char *msg, size_t n)
{
	unsigned long flags = 0;
	char data[8192] = "";
	size_t used = 0;

	for (size_t i = 0; i < m->n_options; i++) {
		const char *o = m->options[i];

		if (!strcmp(o, "ro"))
			flags |= MS_RDONLY;
		else if (!strcmp(o, "bind"))
			flags |= MS_BIND;
		else if (!strcmp(o, "rbind"))
			flags |= MS_BIND | MS_REC;
		else if (!strcmp(o, "rw") || !strcmp(o, "rprivate"))
			continue;
		else {
			int w =
			    snprintf(data + used, sizeof(data) - used, "%s%s", used ? "," : "", o);

			if (w < 0 || (size_t)w >= sizeof(data) - used) {
				snprintf(msg, n, "the rootfs mount's options are too long");
				return -E2BIG;
			}
			used += (size_t)w;
		}
	}
	if (mount(m->source, target, m->type, flags, used ? data : NULL)) {
		int e = errno;

		snprintf(msg, n, "mounting the rootfs (%s %s) on %s: %s", m->type, m->source,
		         target, strerror(e));
		return -e;
	}
	return 0;
}

static int run_mkfs(const char *out, const char *root, const char *log)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("mkfs.erofs", "mkfs.erofs", "--quiet", "-Enoinline_data", "-T0", out, root,
		       (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int mkdir_p(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *c = p + 1; *c; c++)
		if (*c == '/') {
			*c = 0;
			if (mkdir(p, 0755) && errno != EEXIST)
				return -1;
			*c = '/';
		}
	return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

static void cache_dir(char *out, size_t n)
{
	const char *c = getenv("KILN_CACHE"), *home = getenv("HOME");

	if (c && *c)
		snprintf(out, n, "%s/shim", c);
	else
		snprintf(out, n, "%s/.cache/kiln/shim", home && *home ? home : "/root");
}

/* The identity of each lower dir ("a:b:c") beside its path: a snapshot
 * directory made again under the same path (containerd's state wiped, its
 * snapshot numbers starting over) is another image. */
static void hash_dirs(struct sha256_ctx *h, const char *lower)
{
	char path[PATH_MAX];
	const char *p = lower;

	while (*p) {
		size_t n = strcspn(p, ":");
		struct stat st;

		if (n < sizeof(path)) {
			memcpy(path, p, n);
			path[n] = 0;
			if (!stat(path, &st)) {
				uint64_t id[4] = {st.st_dev, st.st_ino, (uint64_t)st.st_ctim.tv_sec,
				                  (uint64_t)st.st_ctim.tv_nsec};

				sha256_update(h, sizeof(id), (const uint8_t *)id);
			}
		}
		p += n;
		if (*p == ':')
			p++;
	}
}

int rootfs_mount(const char *bundle, const char *root_path, const struct shim_mount *m, size_t nm,
                 char *root, size_t root_len, bool *mounted, char *msg, size_t len)
{
	struct stat st;
	int err;

	*mounted = false;
	snprintf(root, root_len, "%s/rootfs", bundle);
	if (mkdir(root, 0755) && errno != EEXIST) {
		snprintf(msg, len, "%s: %s", root, strerror(errno));
		return -errno;
	}
	/* No mounts and an absolute root.path (ctr run --rootfs DIR, a root
	 * containerd does not manage): that directory is the root, packed
	 * afresh for each container. */
	if (!nm && root_path && root_path[0] == '/') {
		if (stat(root_path, &st) || !S_ISDIR(st.st_mode)) {
			snprintf(msg, len, "the spec's root.path %s is not a directory", root_path);
			return -ENOTDIR;
		}
		snprintf(root, root_len, "%s", root_path);
	}
	if (nm > 1) {
		snprintf(msg, len, "the rootfs is %zu mounts; kiln's shim takes one", nm);
		return -EINVAL;
	}
	if (nm == 1) {
		if ((err = do_mount(m, root, msg, len)))
			return err;
		*mounted = true;
	}
	return 0;
}

int rootfs_prepare(const char *bundle, const char *root_path, const struct shim_mount *m, size_t nm,
                   char **image, bool *mounted, int *lock, char *msg, size_t len)
{
	char root[PATH_MAX], cache[PATH_MAX], out[PATH_MAX + 64], tmp[PATH_MAX + 80],
	    log[PATH_MAX + 16];
	const char *lower = NULL, *upper = NULL;
	bool cacheable = false;
	int err;

	*image = NULL;
	*lock = -1;
	if (nm == 1) {
		lower = !strcmp(m->type, "overlay") ? opt_value(m, "lowerdir") : NULL;
		upper = lower ? opt_value(m, "upperdir") : NULL;
		cacheable = lower && (!upper || dir_empty(upper));
	}
	if ((err = rootfs_mount(bundle, root_path, m, nm, root, sizeof(root), mounted, msg, len)))
		return err;
	cache_dir(cache, sizeof(cache));
	if (cacheable) {
		struct sha256_ctx h;
		uint8_t d[SHA256_DIGEST_SIZE];
		char hex[2 * 16 + 1];

		sha256_init(&h);
		sha256_update(&h, strlen(lower), (const uint8_t *)lower);
		hash_dirs(&h, lower);
		sha256_digest(&h, sizeof(d), d);
		for (int i = 0; i < 16; i++)
			sprintf(hex + 2 * i, "%02x", d[i]);
		snprintf(out, sizeof(out), "%s/rootfs-%s.erofs", cache, hex);
		if (!cache_use(out, lock)) {
			*image = strdup(out);
			return *image ? 0 : -ENOMEM;
		}
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", out, (int)getpid());
	} else {
		snprintf(out, sizeof(out), "%s/rootfs.erofs", bundle);
		snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	}
	if (mkdir_p(cache)) {
		snprintf(msg, len, "cannot make the image cache %s: %s", cache, strerror(errno));
		return -EIO;
	}
	snprintf(log, sizeof(log), "%s/mkfs.log", bundle);
	/* a cached image is ours (shared lock) from before it is in place */
	if (cacheable) {
		*lock = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (*lock >= 0 && flock(*lock, LOCK_SH)) {
			close(*lock);
			*lock = -1;
		}
	}
	if (run_mkfs(tmp, root, log) || rename(tmp, out)) {
		unlink(tmp);
		if (*lock >= 0)
			close(*lock);
		*lock = -1;
		snprintf(msg, len,
		         "mkfs.erofs of the rootfs failed (is erofs-utils installed? its log: %s)",
		         log);
		return -EIO;
	}
	if (cacheable) {
		struct stat a, b;

		/* the lock must be on what is in place (had mkfs made a new file) */
		if (*lock < 0 || fstat(*lock, &a) || stat(out, &b) || a.st_ino != b.st_ino) {
			if (*lock >= 0)
				close(*lock);
			cache_use(out, lock);
		}
		cache_prune_env(cache);
	}
	*image = strdup(out);
	return *image ? 0 : -ENOMEM;
}

void rootfs_release(const char *bundle, bool mounted, int *lock)
{
	char root[PATH_MAX], img[PATH_MAX];

	if (*lock >= 0)
		close(*lock); /* the cached image may be pruned now */
	*lock = -1;
	snprintf(root, sizeof(root), "%s/rootfs", bundle);
	if (mounted && umount2(root, MNT_DETACH))
		shim_log("unmounting %s: %s", root, strerror(errno));
	snprintf(img, sizeof(img), "%s/rootfs.erofs", bundle);
	unlink(img);
}
