/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: the CHANGES file operation (include/kiln/agent.h): what the
 * container changed in the image's tree, walked depth first and sent as
 * it is found (pumped while the connection has room, as READ and LIST
 * are). The guest kernel notes the changes on its inodes
 * (include/kiln/rootchg.h): the walk asks each name's bits, descends only
 * into directories programs looked into (or that are new, whose whole
 * tree is sent), and sends what changed, a file's bytes after its
 * CHANGE. The container's processes have ended when the shim asks (its
 * init's end), so nothing moves under the walk; a file that shrinks all
 * the same ends the stream with an error rather than a short file.
 * A changed file with several names is sent whole once, at the first of
 * them the walk meets, and as a LINK to it at the others (a table of at
 * most KILN_CHANGES_LINKS such files; beyond it, each name's bytes go).
 *
 * BASE (changes_base) clears the bits of a tree the agent made, a pod
 * container's copied root, so that only the container's own changes
 * count afterwards: in one call to the kernel (KILN_PR_ROOTCHG_CLEAR_TREE),
 * or, on an older kernel, name by name as it walks the tree.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kiln/rootchg.h>

#include "agent.h"
#include "changes.h"

struct level {
	DIR *d;
	size_t plen; /* path's length at this level */
	bool all;    /* a new directory: everything beneath is sent */
};

/* a file with several names, sent at path */
struct linked {
	ino_t ino;
	char *path; /* NULL: a free slot */
};

#define LINK_SLOTS (2 * KILN_CHANGES_LINKS) /* open addressing, half full at most */

struct changes {
	struct level lv[KILN_CHANGES_DEPTH + 1];
	struct linked *links; /* LINK_SLOTS of them, made at the first */
	size_t nlinks;
	int depth; /* levels in use */
	char path[PATH_MAX];
	char **excl; /* relative paths */
	dev_t dev;
	int fd;        /* the file whose bytes are being sent, or -1 */
	uint64_t left; /* its bytes still to send */
	char why[PATH_MAX + 128];
};

static long bits_of(int dirfd, const char *name)
{
	return prctl(KILN_PR_ROOTCHG_GET, (unsigned long)dirfd, (unsigned long)name, 0, 0);
}

static long clear_of(int dirfd, const char *name)
{
	return prctl(KILN_PR_ROOTCHG_CLEAR, (unsigned long)dirfd, (unsigned long)name, 0, 0);
}

static int fail(struct changes *w, int err, const char *what)
{
	snprintf(w->why, sizeof(w->why), "%s '/%s': %s", what, w->path, strerror(err));
	return -err;
}

static void put_node(struct kbuf *out, const char *path, const struct stat *st, const char *link)
{
	struct frame_mark m;

	frame_begin(out, &m, KILN_MSG_CHANGE);
	put_u32(out, &m, KILN_CHANGE_NODE);
	put_str(out, &m, path);
	put_u32(out, &m, st->st_mode);
	put_u32(out, &m, st->st_uid);
	put_u32(out, &m, st->st_gid);
	put_u64(out, &m, (uint64_t)(int64_t)st->st_mtim.tv_sec);
	put_u32(out, &m, (uint32_t)st->st_mtim.tv_nsec);
	put_u64(out, &m, S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0);
	put_str(out, &m, link);
	frame_end(out, &m);
}

static void put_link(struct kbuf *out, const char *path, const char *target)
{
	struct frame_mark m;

	frame_begin(out, &m, KILN_MSG_CHANGE);
	put_u32(out, &m, KILN_CHANGE_LINK);
	put_str(out, &m, path);
	put_str(out, &m, target);
	frame_end(out, &m);
}

/* The path an earlier name of ino was sent at, or NULL (then it is noted
 * as sent at path, while the table has room). */
static const char *linked_at(struct changes *w, ino_t ino, const char *path)
{
	size_t i = (size_t)(ino * 0x9e3779b97f4a7c15ull) % LINK_SLOTS;

	if (!w->links && !(w->links = calloc(LINK_SLOTS, sizeof(*w->links))))
		return NULL; /* (no memory: its names go as files of their own) */
	for (; w->links[i].path; i = (i + 1) % LINK_SLOTS)
		if (w->links[i].ino == ino)
			return w->links[i].path;
	if (w->nlinks < KILN_CHANGES_LINKS && (w->links[i].path = strdup(path))) {
		w->links[i].ino = ino;
		w->nlinks++;
	}
	return NULL;
}

/* NAMES: every name of d now (then d is read again for the walk). */
static int put_names(struct changes *w, struct kbuf *out, DIR *d)
{
	struct frame_mark m;
	struct dirent *e;
	uint32_t count = 0;
	size_t bytes = 0, at;

	frame_begin(out, &m, KILN_MSG_CHANGE);
	put_u32(out, &m, KILN_CHANGE_NAMES);
	put_str(out, &m, w->path);
	at = out->len;
	put_u32(out, &m, 0); /* the count, filled in below */
	rewinddir(d);
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		bytes += 4 + n;
		if (bytes + strlen(w->path) + 64 > KILN_FRAME_MAX) {
			m.err = -E2BIG;
			break;
		}
		put_u32(out, &m, (uint32_t)n);
		put_bytes(out, &m, e->d_name, n);
		count++;
	}
	if (!m.err) {
		uint8_t *c = kbuf_head(out) + at;

		for (int i = 0; i < 4; i++)
			c[i] = (uint8_t)(count >> (8 * i));
	}
	rewinddir(d);
	if (m.err == -E2BIG) {
		frame_end(out, &m); /* discards it */
		return fail(w, E2BIG, "too many names for one frame in");
	}
	return frame_end(out, &m) ? fail(w, ENOMEM, "listing") : 0;
}

/* Enter directory fd (at w->path) as a new level. */
static int push(struct changes *w, struct kbuf *out, int fd, long bits, bool all)
{
	struct level *l;
	DIR *d;

	if (w->depth > KILN_CHANGES_DEPTH) {
		close(fd);
		return fail(w, ELOOP, "too deep a tree at");
	}
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		return fail(w, e, "cannot list");
	}
	l = &w->lv[w->depth++];
	l->d = d;
	l->plen = strlen(w->path);
	l->all = all;
	if (all || (bits & KILN_CHG_ENTRIES))
		return put_names(w, out, d);
	return 0;
}

static bool excluded(const struct changes *w)
{
	for (char **x = w->excl; x && *x; x++)
		if (!strcmp(*x, w->path))
			return true;
	return false;
}

/* w->path: the top directory's path and name */
static int name_path(struct changes *w, const struct level *l, const char *name)
{
	if (l->plen + 1 + strlen(name) >= sizeof(w->path))
		return fail(w, ENAMETOOLONG, "a name too long in");
	snprintf(w->path + l->plen, sizeof(w->path) - l->plen, "%s%s", l->plen ? "/" : "", name);
	return 0;
}

/* One name of the top directory, of readdir's type (DT_UNKNOWN: not
 * told). A name that is not a directory and has not changed is not even
 * looked at (no stat: the common case of a walk). */
static int visit(struct changes *w, struct kbuf *out, struct level *l, const char *name,
                 unsigned char type)
{
	int dfd = dirfd(l->d), fd;
	char link[PATH_MAX] = "";
	const char *first;
	struct stat st;
	long bits;
	bool changed;

	if (name_path(w, l, name))
		return -ENAMETOOLONG;
	if (excluded(w))
		return 0;
	bits = bits_of(dfd, name);
	if (bits < 0)
		return errno == ENOENT ? 0 : fail(w, errno, "cannot tell the changes of");
	if ((bits & KILN_CHG_OTHER) || (!l->all && !(bits & (KILN_CHG_SELF | KILN_CHG_NEW)) &&
	                                type != DT_DIR && type != DT_UNKNOWN))
		return 0;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : fail(w, errno, "cannot stat");
	if (st.st_dev != w->dev)
		return 0;
	changed = l->all || (bits & (KILN_CHG_SELF | KILN_CHG_NEW));
	if (S_ISLNK(st.st_mode) && changed) {
		ssize_t n = readlinkat(dfd, name, link, sizeof(link) - 1);

		if (n < 0)
			return fail(w, errno, "cannot read the link");
		link[n] = 0;
	}
	if (S_ISREG(st.st_mode) && changed && st.st_nlink > 1 &&
	    (first = linked_at(w, st.st_ino, w->path))) {
		put_link(out, w->path, first);
		return 0;
	}
	if (changed)
		put_node(out, w->path, &st, link);
	if (S_ISREG(st.st_mode) && changed && st.st_size) {
		w->fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (w->fd < 0)
			return fail(w, errno, "cannot open");
		w->left = (uint64_t)st.st_size;
	}
	if (!S_ISDIR(st.st_mode) ||
	    (!(l->all || (bits & KILN_CHG_NEW)) && (bits & KILN_CHG_PRISTINE)))
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fail(w, errno, "cannot open the directory");
	return push(w, out, fd, bits, l->all || (bits & KILN_CHG_NEW));
}

/* The bytes of the file being sent, one frame. */
static int send_data(struct changes *w, struct kbuf *out)
{
	ssize_t n = frame_read(out, w->fd, KILN_MSG_DATA,
	                       w->left < KILN_DATA_CHUNK ? (size_t)w->left : KILN_DATA_CHUNK);

	if (n < 0 && errno == EINTR)
		return 0;
	if (n <= 0)
		return fail(w, n ? errno : EIO, n ? "cannot read" : "a file shrank:");
	w->left -= (uint64_t)n;
	if (!w->left) {
		close(w->fd);
		w->fd = -1;
	}
	return 0;
}

/* The top directory's next name (1, *l, *name and *type), or its end (0:
 * the level is left), or -errno. */
static int next_name(struct changes *w, struct level **l, const char **name, unsigned char *type)
{
	struct dirent *e;

	*l = &w->lv[w->depth - 1];
	errno = 0;
	e = readdir((*l)->d);
	if (!e) {
		int err = errno;

		w->path[(*l)->plen] = 0;
		closedir((*l)->d);
		w->depth--;
		return err ? fail(w, err, "cannot list") : 0;
	}
	*name = e->d_name;
	*type = e->d_type;
	return strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
}

int changes_step(struct changes *w, struct kbuf *out)
{
	struct level *l;
	const char *name;
	unsigned char type;
	int r;

	if (w->fd >= 0)
		return send_data(w, out);
	if (!w->depth)
		return 1;
	r = next_name(w, &l, &name, &type);
	return r <= 0 ? r : visit(w, out, l, name, type);
}

/* BASE: one name of the top directory cleared, a directory entered. */
static int base_visit(struct changes *w, struct level *l, const char *name)
{
	int dfd = dirfd(l->d), fd;
	struct stat st;

	if (name_path(w, l, name))
		return -ENAMETOOLONG;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : fail(w, errno, "cannot stat");
	if (st.st_dev != w->dev)
		return 0; /* a mount of its own (its proc) */
	if (clear_of(dfd, name) < 0)
		return fail(w, errno, "cannot clear the changes of");
	if (!S_ISDIR(st.st_mode) || (bits_of(dfd, name) & KILN_CHG_OTHER))
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fail(w, errno, "cannot open the directory");
	return push(w, NULL, fd, 0, false);
}

int changes_base(const char *root, char *why, size_t n)
{
	struct changes *w = calloc(1, sizeof(*w));
	struct level *l;
	const char *name;
	struct stat st;
	int fd, err = 0;

	if (!w)
		return -ENOMEM;
	w->fd = -1;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = errno;
		snprintf(why, n, "cannot open the root '%s': %s", root, strerror(err));
		if (fd >= 0)
			close(fd);
		changes_free(w);
		return -err;
	}
	w->dev = st.st_dev;
	if (prctl(KILN_PR_ROOTCHG_CLEAR_TREE, (unsigned long)fd, (unsigned long)"", 0, 0) >= 0) {
		close(fd);
		changes_free(w);
		return 0;
	}
	if (errno != EINVAL) { /* (EINVAL: an older kernel, cleared name by name) */
		err = errno;
		snprintf(why, n,
		         "cannot clear the changes of the copied root '%s': %s (its bounds: %d "
		         "directory levels, %ld names)",
		         root, strerror(err), KILN_ROOTCHG_TREE_DEPTH, KILN_ROOTCHG_TREE_MAX);
		close(fd);
		changes_free(w);
		return -err;
	}
	if (clear_of(fd, "") < 0) {
		err = errno == EINVAL ? ENOSYS : errno;
		snprintf(why, n, "this guest kernel does not note what changes in its root (%s)",
		         strerror(errno));
		close(fd);
		changes_free(w);
		return -err;
	}
	err = push(w, NULL, fd, 0, false);
	while (!err && w->depth) {
		unsigned char type;
		int r = next_name(w, &l, &name, &type);

		err = r <= 0 ? r : base_visit(w, l, name);
	}
	if (err)
		snprintf(why, n, "%s", w->why);
	changes_free(w);
	return err;
}

const char *changes_why(const struct changes *w)
{
	return w->why;
}

int changes_start(struct changes **out_w, struct kbuf *out, const char *root, char **excl,
                  char *why, size_t n)
{
	struct changes *w = calloc(1, sizeof(*w));
	size_t k = strlen(root);
	struct stat st;
	long bits;
	int fd, err;

	*out_w = NULL;
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->excl = excl;
	/* excluded paths relative to the root, as the walk names them */
	for (char **x = excl; x && *x; x++) {
		const char *p = *x;

		if (k > 1 && !strncmp(p, root, k) && (p[k] == '/' || !p[k]))
			p += k;
		while (*p == '/')
			p++;
		memmove(*x, p, strlen(p) + 1);
	}
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = errno;
		snprintf(why, n, "cannot open the root '%s': %s", root, strerror(err));
		goto fail;
	}
	w->dev = st.st_dev;
	bits = bits_of(fd, "");
	if (bits < 0) {
		err = errno == EINVAL ? ENOSYS : errno;
		snprintf(why, n, "this guest kernel does not note what changes in its root (%s)",
		         strerror(errno));
		goto fail;
	}
	if (bits & (KILN_CHG_SELF | KILN_CHG_NEW))
		put_node(out, "", &st, "");
	if ((err = -push(w, out, fd, bits, false))) {
		snprintf(why, n, "%s", w->why);
		fd = -1;
		goto fail;
	}
	*out_w = w;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	changes_free(w);
	return -err;
}

void changes_free(struct changes *w)
{
	if (!w)
		return;
	while (w->depth)
		closedir(w->lv[--w->depth].d);
	if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; w->links && i < LINK_SLOTS; i++)
		free(w->links[i].path);
	free(w->links);
	strv_free(w->excl);
	free(w);
}
