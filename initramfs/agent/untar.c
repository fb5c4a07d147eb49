/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: a tar stream (POSIX ustar, with pax "x" and GNU "L"/"K"
 * headers for long names) unpacked into a directory as its bytes arrive,
 * so that the host can give a running guest a whole tree in one stream (a
 * pod's container roots, see shim/ctr_root.c) without a tar program in the
 * guest. Regular files, directories, symlinks and hard links are made with
 * the header's mode, owner and (files) mtime; device nodes, fifos and
 * anything else are left out. Names are relative to the directory: an
 * absolute name or a ".." component is refused, and so is a parent that is
 * not a directory (a symlink), so nothing is written outside it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "untar.h"

#define BLOCK    512
#define META_MAX (64u << 10) /* a pax or GNU long-name header's data */

enum phase { U_HDR, U_DATA, U_PAD, U_END };

struct untar {
	int dir;
	enum phase phase;
	uint8_t hdr[BLOCK];
	size_t have;
	uint64_t left, pad; /* the entry's data bytes still to come, then its padding */
	int fd;             /* the regular file being written, or -1 */
	struct timespec mtime[2];
	char meta_type; /* 'x', 'L' or 'K' while its data is collected, else 0 */
	char *meta;
	size_t meta_len;
	char *next_path, *next_link; /* from the headers before the entry */
};

struct untar *untar_new(int dirfd)
{
	struct untar *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->dir = dirfd;
	u->fd = -1;
	return u;
}

void untar_free(struct untar *u)
{
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	if (u->dir >= 0)
		close(u->dir);
	free(u->meta);
	free(u->next_path);
	free(u->next_link);
	free(u);
}

static int fail(int err, char *why, size_t n, const char *fmt, const char *arg)
{
	snprintf(why, n, fmt, arg);
	return err;
}

/* An octal field, or base-256 (GNU, for sizes of 8 GiB and more). */
static uint64_t num(const uint8_t *p, size_t n, bool *bad)
{
	uint64_t v = 0;
	size_t i = 0;

	if (p[0] & 0x80) {
		for (i = 1; i < n; i++) {
			if (v >> 56)
				*bad = true;
			v = v << 8 | p[i];
		}
		return (p[0] & 0x40) ? (*bad = true, 0) : v;
	}
	while (i < n && p[i] == ' ')
		i++;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
		if (v >> 60)
			*bad = true;
		v = v << 3 | (uint64_t)(p[i] - '0');
	}
	if (i < n && p[i] && p[i] != ' ')
		*bad = true;
	return v;
}

static bool checksum_ok(const uint8_t *h)
{
	bool bad = false;
	uint64_t want = num(h + 148, 8, &bad), sum = 0;

	for (int i = 0; i < BLOCK; i++)
		sum += (i >= 148 && i < 156) ? ' ' : h[i];
	return !bad && sum == want;
}

/* name without "./" prefixes and trailing slashes; NULL if it leaves the
 * directory (absolute, or a ".." component). "" is the directory itself. */
static char *clean(char *name)
{
	size_t len;

	while (name[0] == '.' && name[1] == '/')
		name += 2;
	while (name[0] == '/' && name[1] == 0)
		name++;
	if (name[0] == '/' || !strcmp(name, "."))
		return name[0] == '/' ? NULL : name + 1;
	len = strlen(name);
	while (len && name[len - 1] == '/')
		name[--len] = 0;
	for (char *c = name; *c;) {
		size_t k = strcspn(c, "/");

		if (k == 2 && c[0] == '.' && c[1] == '.')
			return NULL;
		c += k;
		while (*c == '/')
			c++;
	}
	return name;
}

/* The parents of name, made where missing; each must be a directory. */
static int parents(struct untar *u, char *name)
{
	struct stat st;

	for (char *s = strchr(name, '/'); s; s = strchr(s + 1, '/')) {
		int err = 0;

		*s = 0;
		if (fstatat(u->dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			err = errno == ENOENT && mkdirat(u->dir, name, 0755) < 0 ? -errno : 0;
		else if (!S_ISDIR(st.st_mode))
			err = -ENOTDIR;
		*s = '/';
		if (err)
			return err;
	}
	return 0;
}

/* Room for a new non-directory at name: what is there goes (not a directory). */
static void make_room(struct untar *u, const char *name)
{
	struct stat st;

	if (!fstatat(u->dir, name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode))
		unlinkat(u->dir, name, 0);
}

/* pax records "LEN key=value\n": path and linkpath are kept. */
static int pax_parse(struct untar *u, char *why, size_t n)
{
	size_t at = 0;

	while (at < u->meta_len) {
		char *rec = u->meta + at, *end, *eq;
		unsigned long len = strtoul(rec, &end, 10);

		if (*end != ' ' || len <= (size_t)(end - rec) + 1 || len > u->meta_len - at ||
		    rec[len - 1] != '\n')
			return fail(-EPROTO, why, n, "a malformed pax header%s", "");
		rec[len - 1] = 0;
		eq = strchr(end + 1, '=');
		if (eq) {
			char **to = NULL;

			*eq = 0;
			if (!strcmp(end + 1, "path"))
				to = &u->next_path;
			else if (!strcmp(end + 1, "linkpath"))
				to = &u->next_link;
			if (to) {
				free(*to);
				if (!(*to = strdup(eq + 1)))
					return -ENOMEM;
			}
		}
		at += len;
	}
	return 0;
}

static int meta_done(struct untar *u, char *why, size_t n)
{
	char **to = u->meta_type == 'L' ? &u->next_path : &u->next_link;
	int err = 0;

	u->meta[u->meta_len] = 0;
	if (u->meta_type == 'x') {
		err = pax_parse(u, why, n);
	} else {
		free(*to);
		if (!(*to = strdup(u->meta)))
			err = -ENOMEM;
	}
	u->meta_type = 0;
	free(u->meta);
	u->meta = NULL;
	return err;
}

static int owner_mode(struct untar *u, const char *name, uid_t uid, gid_t gid, mode_t mode,
                      bool link)
{
	/* chown first: it clears the set-id bits */
	if (fchownat(u->dir, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 && errno != EPERM)
		return -errno;
	if (!link && fchmodat(u->dir, name, mode, 0) < 0)
		return -errno;
	return 0;
}

/* One entry's header: what it names is made; its data follows. */
static int entry(struct untar *u, char *why, size_t n)
{
	const uint8_t *h = u->hdr;
	char raw[BLOCK], lraw[101], *name, *link;
	char type = (char)h[156];
	bool bad = false;
	uint64_t size = num(h + 124, 12, &bad);
	mode_t mode = (mode_t)num(h + 100, 8, &bad) & 07777;
	uid_t uid = (uid_t)num(h + 108, 8, &bad);
	gid_t gid = (gid_t)num(h + 116, 8, &bad);
	int64_t mtime = (int64_t)num(h + 136, 12, &bad);
	int err = 0;

	if (bad)
		return fail(-EPROTO, why, n, "a tar header with a malformed number%s", "");
	u->left = size;
	u->pad = (BLOCK - size % BLOCK) % BLOCK;
	if (type == 'x' || type == 'L' || type == 'K') {
		if (size > META_MAX)
			return fail(-E2BIG, why, n, "a pax or long-name header over 64 KiB%s", "");
		u->meta_type = type;
		u->meta_len = 0;
		if (!(u->meta = malloc(size + 1)))
			return -ENOMEM;
		if (!size)
			return meta_done(u, why, n);
		return 0;
	}
	if (type == 'g')
		return 0; /* global pax records: nothing kiln keeps */
	raw[0] = 0;
	if (!memcmp(h + 257, "ustar", 5) && h[345])
		snprintf(raw, sizeof(raw), "%.155s/", (const char *)h + 345);
	snprintf(raw + strlen(raw), sizeof(raw) - strlen(raw), "%.100s", (const char *)h);
	snprintf(lraw, sizeof(lraw), "%.100s", (const char *)h + 157);
	name = clean(u->next_path ? u->next_path : raw);
	link = u->next_link ? u->next_link : lraw;
	if (!name)
		err = fail(-EPERM, why, n, "tar entry '%.3000s' leaves the directory",
		           u->next_path ? u->next_path : raw);
	else if (!*name || type == '3' || type == '4' || type == '6')
		; /* the directory itself, device nodes and fifos */
	else if ((err = parents(u, name)))
		snprintf(why, n, "cannot make the parents of '%.3000s': %s", name, strerror(-err));
	else if (type == '0' || type == 0 || type == '7') {
		make_room(u, name);
		u->fd = openat(u->dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		               0600);
		err = u->fd < 0 ? -errno : owner_mode(u, name, uid, gid, mode, false);
		u->mtime[0] = u->mtime[1] = (struct timespec){.tv_sec = mtime};
	} else if (type == '5') {
		struct stat st;

		if (mkdirat(u->dir, name, 0700) < 0 && errno != EEXIST)
			err = -errno;
		else if (fstatat(u->dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			err = -errno;
		else
			err = S_ISDIR(st.st_mode) ? owner_mode(u, name, uid, gid, mode, false)
			                          : -ENOTDIR;
	} else if (type == '2') {
		make_room(u, name);
		err = symlinkat(link, u->dir, name) < 0 ? -errno
		                                        : owner_mode(u, name, uid, gid, mode, true);
	} else if (type == '1') {
		char *target = clean(link);

		make_room(u, name);
		if (!target || !*target)
			err = fail(-EPERM, why, n, "hard link to '%.3000s' outside the directory",
			           link);
		else if (linkat(u->dir, target, u->dir, name, 0) < 0)
			err = -errno;
	}
	if (err && !*why)
		snprintf(why, n, "cannot make '%.3000s': %s", name ? name : raw, strerror(-err));
	free(u->next_path);
	free(u->next_link);
	u->next_path = u->next_link = NULL;
	return err;
}

static bool zeroes(const uint8_t *h)
{
	for (int i = 0; i < BLOCK; i++)
		if (h[i])
			return false;
	return true;
}

static int data(struct untar *u, const uint8_t *p, size_t k, char *why, size_t n)
{
	if (u->meta_type) {
		memcpy(u->meta + u->meta_len, p, k);
		u->meta_len += k;
	}
	while (u->fd >= 0 && k) {
		ssize_t w = write(u->fd, p, k);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return fail(w < 0 ? -errno : -EIO, why, n, "cannot write a file: %s",
			            strerror(w < 0 ? errno : EIO));
		p += w;
		k -= (size_t)w;
	}
	return 0;
}

static int data_end(struct untar *u, char *why, size_t n)
{
	int err = 0;

	if (u->meta_type)
		return meta_done(u, why, n);
	if (u->fd >= 0) {
		futimens(u->fd, u->mtime);
		if (close(u->fd) < 0)
			err = fail(-errno, why, n, "cannot write a file: %s", strerror(errno));
		u->fd = -1;
	}
	return err;
}

int untar_feed(struct untar *u, const uint8_t *p, size_t n, char *why, size_t why_len)
{
	int err = 0;

	while (n && !err) {
		size_t k;

		switch (u->phase) {
		case U_HDR:
			k = n < BLOCK - u->have ? n : BLOCK - u->have;
			memcpy(u->hdr + u->have, p, k);
			u->have += k;
			if (u->have < BLOCK)
				break;
			u->have = 0;
			if (zeroes(u->hdr)) {
				u->phase = U_END;
			} else if (!checksum_ok(u->hdr)) {
				err = fail(-EPROTO, why, why_len,
				           "a tar header with a bad checksum%s", "");
			} else {
				why[0] = 0;
				err = entry(u, why, why_len);
				if (!err)
					u->phase = u->left ? U_DATA : u->pad ? U_PAD : U_HDR;
				if (!err && !u->left)
					err = data_end(u, why, why_len);
			}
			break;
		case U_DATA:
			k = n < u->left ? n : (size_t)u->left;
			err = data(u, p, k, why, why_len);
			u->left -= k;
			if (!err && !u->left) {
				err = data_end(u, why, why_len);
				u->phase = u->pad ? U_PAD : U_HDR;
			}
			break;
		case U_PAD:
			k = n < u->pad ? n : (size_t)u->pad;
			u->pad -= k;
			if (!u->pad)
				u->phase = U_HDR;
			break;
		default: /* U_END: what follows the end blocks is ignored */
			k = n;
			break;
		}
		p += k;
		n -= k;
	}
	return err;
}

int untar_finish(struct untar *u, char *why, size_t why_len)
{
	if (u->phase == U_END || (u->phase == U_HDR && !u->have && !u->meta_type))
		return 0;
	return fail(-EPROTO, why, why_len, "the tar stream ended inside an entry%s", "");
}

int untar_mount_proc(struct untar *u, const char *dir)
{
	char path[4200];

	if (mkdirat(u->dir, "proc", 0555) < 0 && errno != EEXIST)
		return -errno;
	if (snprintf(path, sizeof(path), "%s/proc", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ? -errno : 0;
}

int untar_link_dev(struct untar *u)
{
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
	char from[32], to[32];
	struct stat st;

	if (mkdirat(u->dir, "dev", 0755) < 0 && errno != EEXIST)
		return -errno;
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		snprintf(from, sizeof(from), "/dev/%s", nodes[i]);
		snprintf(to, sizeof(to), "dev/%s", nodes[i]);
		if (!fstatat(u->dir, to, &st, AT_SYMLINK_NOFOLLOW))
			continue; /* the image's own */
		if (!linkat(AT_FDCWD, from, u->dir, to, 0))
			continue;
		/* another file system (a host running the agent): a node of its own */
		if (errno != EXDEV || stat(from, &st) < 0 ||
		    mknodat(u->dir, to, st.st_mode, st.st_rdev) < 0)
			return -errno;
	}
	return 0;
}
