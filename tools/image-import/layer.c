/* SPDX-License-Identifier: MIT */
/*
 * One image layer (a tar, gzip or zstd compressed or not) applied onto a
 * root directory, as the OCI image spec's "Applying changesets" says: each
 * entry replaces what was at its path; `.wh.NAME` removes NAME from the
 * layers below, and `.wh..wh..opq` removes every entry of its directory
 * that the layers below put there. The layer is read twice: the whiteouts
 * first (so that an opaque directory keeps what this layer itself puts in
 * it), then the entries.
 *
 * The archive is hostile: paths are relative, without `..`, and are
 * written with libarchive's secure options (no write through a symlink, no
 * absolute or `..` path), so nothing lands outside the root. Device nodes
 * and FIFOs are skipped (a sandbox has devfs). Sizes are counted against a
 * limit before anything is written.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "import.h"

#define WH_OPAQUE ".wh..wh..opq"

/* The entry's path made "./a/b" (the form libarchive is given), or an error
 * naming what is wrong with it. */
static int clean_path(const char *in, char *out, size_t cap, const char **why)
{
	const char *p = in;
	size_t n = 2;

	while (*p == '/' || (p[0] == '.' && p[1] == '/'))
		p += *p == '/' ? 1 : 2;
	memcpy(out, "./", 2);
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);

		if (len == 2 && !memcmp(p, "..", 2)) {
			*why = "a path with '..' in it";
			return -EINVAL;
		}
		if (len && !(len == 1 && *p == '.')) {
			if (n + len + 2 > cap) {
				*why = "a path longer than PATH_MAX";
				return -ENAMETOOLONG;
			}
			if (n > 2)
				out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p = *end ? end + 1 : end;
	}
	out[n] = 0;
	return 0;
}

/* Directory rel (a clean "./a/b") of the root, reached without following
 * a single symlink and never leaving the root; -errno (ELOOP: a symlink on
 * the way, ENOENT, ENOTDIR) otherwise. */
int layer_open_beneath(int root, const char *rel)
{
	struct open_how how = {
	    .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

/* Remove name in directory dfd, a whole tree if it is a directory; never
 * follows a link. Gone already is fine. */
static int rm_at(int dfd, const char *name, unsigned depth)
{
	struct dirent *d;
	struct stat st;
	DIR *dp;
	int fd, err = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) ? -errno : 0;
	if (depth > PATH_MAX / 2)
		return -ELOOP;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !(dp = fdopendir(fd))) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	while (!err && (d = readdir(dp)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
			err = rm_at(fd, d->d_name, depth + 1);
	closedir(dp);
	if (!err && unlinkat(dfd, name, AT_REMOVEDIR))
		err = -errno;
	return err;
}

/* `.wh.NAME` at path (with the prefix taken off): NAME goes. A parent that
 * is not a plain directory of the root has nothing of the layers below. */
static int whiteout(int root, char *path)
{
	char *slash = strrchr(path, '/');
	int dfd, err;

	*slash = 0;
	dfd = layer_open_beneath(root, path);
	*slash = '/';
	if (dfd == -ENOENT || dfd == -ELOOP || dfd == -ENOTDIR)
		return 0;
	if (dfd < 0)
		return dfd;
	err = rm_at(dfd, slash + 1, 0);
	close(dfd);
	return err;
}

/* An opaque directory: what the layers below put in it goes. */
static int clear_dir(int root, const char *dir)
{
	struct dirent *d;
	DIR *dp;
	int dfd = layer_open_beneath(root, dir), err = 0;

	if (dfd == -ENOENT || dfd == -ELOOP || dfd == -ENOTDIR)
		return 0;
	if (dfd < 0 || !(dp = fdopendir(dfd))) {
		err = dfd < 0 ? dfd : -errno;
		if (dfd >= 0)
			close(dfd);
		return err;
	}
	while (!err && (d = readdir(dp)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
			err = rm_at(dfd, d->d_name, 0);
	closedir(dp);
	return err;
}

/* A hard link's target: a file already in the root, reached through plain
 * directories only (link(2) would follow a symlink on the way out of it). */
static int link_target_ok(int root, char *target)
{
	char *slash = strrchr(target, '/');
	struct stat st;
	int dfd, err = 0;

	*slash = 0;
	dfd = layer_open_beneath(root, target);
	*slash = '/';
	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) || S_ISDIR(st.st_mode))
		err = -EINVAL;
	close(dfd);
	return err;
}

static struct archive *open_layer(const char *file)
{
	struct archive *a = archive_read_new();

	archive_read_support_format_tar(a);
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_filter_none(a);
	if (archive_read_open_filename(a, file, 1 << 16) != ARCHIVE_OK) {
		archive_read_free(a);
		return NULL;
	}
	return a;
}

/* Pass 1: whiteouts remove what lower layers have. */
static int apply_whiteouts(struct import *im, const char *file, struct layer_stats *ls)
{
	struct archive *a = open_layer(file);
	struct archive_entry *e;
	char path[PATH_MAX];
	const char *why = NULL;
	int r, err = 0;

	if (!a)
		return import_fail(im, -EINVAL, "%s is not a tar archive", im->layer);
	while (!err && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		char *base;

		if ((err = clean_path(archive_entry_pathname(e), path, sizeof(path), &why)))
			break;
		base = strrchr(path, '/') + 1;
		if (!strcmp(base, WH_OPAQUE)) {
			base[-1] = 0;
			err = clear_dir(im->root_fd, path);
			ls->whiteouts++;
		} else if (!strncmp(base, ".wh.", 4)) {
			memmove(base, base + 4, strlen(base + 4) + 1);
			err = base[0] ? whiteout(im->root_fd, path) : 0;
			ls->whiteouts++;
		}
	}
	if (!err && r != ARCHIVE_EOF)
		err = import_fail(im, -EINVAL, "%s: %s", im->layer, archive_error_string(a));
	else if (err && why)
		err = import_fail(im, err, "%s: refused: %s (%s)", im->layer, why,
		                  archive_entry_pathname(e));
	else if (err)
		err = import_fail(im, err, "%s: cannot apply a whiteout: %s", im->layer,
		                  strerror(-err));
	archive_read_free(a);
	return err;
}

/* Pass 2: every other entry, written under the root (the current directory). */
static int apply_entries(struct import *im, const char *file, struct layer_stats *ls)
{
	struct archive *a = open_layer(file), *w;
	struct archive_entry *e;
	char path[PATH_MAX], link[PATH_MAX];
	const char *why = NULL;
	int r, err = 0;

	if (!a)
		return import_fail(im, -EINVAL, "%s is not a tar archive", im->layer);
	w = archive_write_disk_new();
	archive_write_disk_set_options(
	    w, ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	           ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_UNLINK |
	           ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_TIME |
	           ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_FFLAGS);
	while (!err && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		mode_t type = archive_entry_filetype(e);
		const char *hl = archive_entry_hardlink(e), *base;

		if ((err = clean_path(archive_entry_pathname(e), path, sizeof(path), &why)))
			break;
		base = strrchr(path, '/') + 1;
		if (!strcmp(path, ".") || !strncmp(base, ".wh.", 4))
			continue;
		if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK && !hl) {
			ls->skipped++;
			continue;
		}
		if (archive_entry_size(e) > 0) {
			im->bytes += (uint64_t)archive_entry_size(e);
			if (im->bytes > im->max_bytes) {
				err = import_fail(im, -EFBIG,
				                  "the image is over the %llu MiB limit "
				                  "(--max-size) at %s",
				                  (unsigned long long)(im->max_bytes >> 20), path);
				break;
			}
		}
		archive_entry_set_pathname(e, path);
		if (hl) {
			if ((err = clean_path(hl, link, sizeof(link), &why)))
				break;
			if ((err = link_target_ok(im->root_fd, link))) {
				why = "a hard link to a path through a symlink, or to nothing";
				break;
			}
			archive_entry_set_hardlink(e, link);
		}
		if (archive_write_header(w, e) != ARCHIVE_OK) {
			err = import_fail(im, -EINVAL, "%s: refused %s: %s", im->layer, path,
			                  archive_error_string(w));
			break;
		}
		if (archive_entry_size(e) > 0 && !hl) {
			const void *buf;
			size_t len;
			la_int64_t off;

			while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK)
				if (archive_write_data_block(w, buf, len, off) != ARCHIVE_OK)
					break;
			if (r != ARCHIVE_EOF) {
				err = import_fail(im, -EIO, "%s: %s: %s", im->layer, path,
				                  archive_error_string(r == ARCHIVE_OK ? w : a));
				break;
			}
		}
		if (archive_write_finish_entry(w) != ARCHIVE_OK) {
			err = import_fail(im, -EIO, "%s: %s: %s", im->layer, path,
			                  archive_error_string(w));
			break;
		}
		ls->entries++;
	}
	if (!err && r != ARCHIVE_EOF)
		err = import_fail(im, -EINVAL, "%s: %s", im->layer, archive_error_string(a));
	else if (err && why)
		err = import_fail(im, err, "%s: refused: %s (%s)", im->layer, why,
		                  archive_entry_pathname(e));
	archive_write_free(w);
	archive_read_free(a);
	return err;
}

int layer_apply(struct import *im, const char *file, struct layer_stats *ls)
{
	int err;

	memset(ls, 0, sizeof(*ls));
	/* libarchive writes relative paths from the current directory. */
	if (fchdir(im->root_fd))
		return import_fail(im, -errno, "%s: %s", im->root, strerror(errno));
	err = apply_whiteouts(im, file, ls);
	if (!err)
		err = apply_entries(im, file, ls);
	if (chdir("/"))
		return import_fail(im, -errno, "/: %s", strerror(errno));
	return err;
}

int layer_rm_tree(const char *path)
{
	return rm_at(AT_FDCWD, path, 0);
}
