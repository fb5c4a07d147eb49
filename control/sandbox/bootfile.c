/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "bootfile.h"
#include "sandbox.h"
#include "template.h"
#include "util.h"

#define HASH_HEX 16 /* of the SHA-256, in the copy's name */

/* What was pinned for a source file, known again by its inode and times
 * (hashing a kernel on every create would cost milliseconds). */
struct bootfile {
	struct bootfile *next;
	char *src, *pinned;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

static bool same_file(const struct bootfile *b, const struct stat *st)
{
	return b->dev == st->st_dev && b->ino == st->st_ino && b->size == st->st_size &&
	       b->mtime.tv_sec == st->st_mtim.tv_sec && b->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       b->ctime.tv_sec == st->st_ctim.tv_sec && b->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static char *boot_dir(struct kilnd *kd)
{
	char *d;

	return asprintf(&d, "%s/boot", kd->cfg.data_dir) < 0 ? NULL : d;
}

/* Is the file at path a pinned copy of the open file (a regular file of
 * its size; the name holds the content's hash)? */
static bool same_copy(const char *path, int fd)
{
	struct stat a, b;

	if (lstat(path, &a) || fstat(fd, &b)) {
		errno = EEXIST;
		return false;
	}
	errno = EEXIST;
	return S_ISREG(a.st_mode) && a.st_size == b.st_size;
}

/* Read the open file into a copy in dir, named NAME-HASH; returns its path. */
static char *copy_in(int fd, const char *dir, const char *name, char *msg, size_t n)
{
	struct sha256_ctx h;
	uint8_t digest[SHA256_DIGEST_SIZE], buf[64 << 10];
	char *tmp = NULL, *dst = NULL, hex[2 * HASH_HEX + 1];
	int out = -1;
	ssize_t r;

	if (asprintf(&tmp, "%s/.%s.%d", dir, name, (int)getpid()) < 0)
		goto oom;
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0400);
	if (out < 0) {
		snprintf(msg, n, "cannot create %s: %s", tmp, strerror(errno));
		goto fail;
	}
	sha256_init(&h);
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		sha256_update(&h, (size_t)r, buf);
		if (write(out, buf, (size_t)r) != r) {
			snprintf(msg, n, "cannot write %s: %s", tmp, strerror(errno ? errno : EIO));
			goto fail;
		}
	}
	if (r < 0 || close(out)) {
		snprintf(msg, n, "copying %s into %s: %s", name, dir, strerror(errno));
		out = -1;
		goto fail;
	}
	out = -1;
	sha256_digest(&h, sizeof(digest), digest);
	for (int i = 0; i < HASH_HEX / 2; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	if (asprintf(&dst, "%s/%s-%s", dir, name, hex) < 0)
		goto oom;
	/* Same name, same content: an existing copy is kept. Never replaced
	 * (no rename over it): a running VMM checks that the file it booted
	 * from is still the same inode before it can snapshot. */
	if (link(tmp, dst) && (errno != EEXIST || !same_copy(dst, fd))) {
		snprintf(msg, n, "cannot pin %s as %s: %s", name, dst,
		         errno == EEXIST ? "a different file has that name; remove it"
		                         : strerror(errno));
		goto fail;
	}
	unlink(tmp);
	free(tmp);
	return dst;
oom:
	snprintf(msg, n, "out of memory");
fail:
	if (out >= 0)
		close(out);
	if (tmp)
		unlink(tmp);
	free(tmp);
	free(dst);
	return NULL;
}

const char *bootfile_pin(struct kilnd *kd, const char *path, char *msg, size_t msglen)
{
	struct bootfile *b;
	struct stat st;
	char *dir, *base, *pinned;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(msg, msglen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (b = kd->bootfiles; b; b = b->next)
		if (!strcmp(b->src, path))
			break;
	if (b && same_file(b, &st) && !access(b->pinned, R_OK)) {
		close(fd);
		return b->pinned;
	}
	dir = boot_dir(kd);
	base = strdup(path);
	pinned = NULL;
	if (!dir || !base)
		snprintf(msg, msglen, "out of memory");
	else if (mkdir_p(dir, 0700))
		snprintf(msg, msglen, "cannot create %s: %s", dir, strerror(errno));
	else
		pinned = copy_in(fd, dir, basename(base), msg, msglen);
	close(fd);
	free(dir);
	free(base);
	if (!pinned)
		return NULL;
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || !(b->src = strdup(path))) {
			free(b);
			free(pinned);
			snprintf(msg, msglen, "out of memory");
			return NULL;
		}
		b->next = kd->bootfiles;
		kd->bootfiles = b;
	}
	free(b->pinned);
	b->pinned = pinned;
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	b->size = st.st_size;
	b->mtime = st.st_mtim;
	b->ctime = st.st_ctim;
	log_info("pinned %s as %s", path, pinned);
	return b->pinned;
}

static bool in_use(struct kilnd *kd, const char *path)
{
	for (struct sandbox *sb = kd->sandboxes; sb; sb = sb->next)
		if ((sb->state != SB_KILLED && sb->state != SB_ERROR) || sb->alive)
			if ((sb->rec.kernel && !strcmp(sb->rec.kernel, path)) ||
			    (sb->rec.initrd && !strcmp(sb->rec.initrd, path)))
				return true;
	for (struct template *t = kd->templates; t; t = t->next)
		if (!strcmp(t->rec.kernel, path) || !strcmp(t->rec.initrd, path))
			return true;
	for (struct bootfile *b = kd->bootfiles; b; b = b->next)
		if (!strcmp(b->pinned, path))
			return true;
	return false;
}

void bootfile_gc(struct kilnd *kd)
{
	char *dir = boot_dir(kd), *p;
	struct dirent *e;
	DIR *d = dir ? opendir(dir) : NULL;

	/* Builds in progress name their files only once done: wait. */
	if (!d || kd->builds) {
		if (d)
			closedir(d);
		free(dir);
		return;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || asprintf(&p, "%s/%s", dir, e->d_name) < 0)
			continue;
		if (!in_use(kd, p)) {
			log_info("removing %s: no sandbox or template boots it any more", p);
			unlink(p);
		}
		free(p);
	}
	closedir(d);
	free(dir);
}

void bootfile_free_all(struct kilnd *kd)
{
	while (kd->bootfiles) {
		struct bootfile *b = kd->bootfiles;

		kd->bootfiles = b->next;
		free(b->src);
		free(b->pinned);
		free(b);
	}
}
