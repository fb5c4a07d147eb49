/* SPDX-License-Identifier: MIT */
/*
 * Replaying a guest's change set (the agent's CHANGES, include/kiln/agent.h)
 * onto the container's mounted rootfs, BUNDLE/rootfs: containerd's
 * overlay, whose upper dir (the container's snapshot) then holds the
 * files and whiteouts as with runc.
 *
 * The change set is the guest's, so hostile: every path is split into
 * names (no empty, "." or ".." ones), its parent opened with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV from the root (so a symlink the guest wrote, or the
 * image has, is never followed), and the last name only acted on with
 * *at calls that do not follow it. Device nodes, fifos and sockets are
 * refused, set-id bits dropped (as binds.c does the other way; a hard
 * link to a set-id file is refused), and the
 * total bytes and entries bounded (the upper dir's disk). A refused change
 * is skipped and counted (rwl_end reports them); what breaks the stream
 * (bounds, bytes beyond a file's size, I/O errors of the root) ends it.
 * Files are written to a temporary name beside theirs and renamed over it
 * once complete. Directory times are set last, after their entries.
 */
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

#include "rwlayer.h"

#define RWL_MAX_DEPTH 256 /* levels removed below a name */

static void refuse(struct rwl *w, const char *path, const char *why)
{
	if (!w->refused++)
		snprintf(w->first, sizeof(w->first), "/%.1000s: %s", path, why);
}

/* A change that ends the replay: what, at path, and why. */
static int fatal(struct rwl *w, int err, const char *what, const char *path)
{
	snprintf(w->msg, sizeof(w->msg), "%s /%.1000s: %s", what, path, strerror(-err));
	return err;
}

/* A file's bytes to read and drop. */
static int skip_bytes(struct rwl *w, const char *path, uint64_t size)
{
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->left = size;
	return 0;
}

/* path is at or beneath an excluded one */
static bool excluded(const struct rwl *w, const char *path)
{
	for (size_t i = 0; i < w->nexcl; i++) {
		size_t k = strlen(w->excl[i]);

		if (!strncmp(path, w->excl[i], k) && (path[k] == 0 || path[k] == '/'))
			return true;
	}
	return false;
}

/* Split path into its parent (opened beneath the root: *pd) and its last
 * name (in name); "" is the root itself (name empty). NULL, or a reason. */
static const char *open_parent(struct rwl *w, const char *path, int *pd, char *name)
{
	char parent[PATH_MAX];
	const char *p = path, *last = path;
	size_t depth = 0;
	struct open_how how = {
	    .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve =
	        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};

	*pd = -1;
	name[0] = 0;
	if (strlen(path) >= sizeof(parent))
		return "path too long";
	while (*path) {
		const char *e = strchr(p, '/');
		size_t k = e ? (size_t)(e - p) : strlen(p);

		if (!k || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
			return "an empty, \".\" or \"..\" name in the path";
		if (k > NAME_MAX)
			return "a name too long";
		if (++depth > RWL_MAX_DEPTH)
			return "too deep";
		last = p;
		if (!e)
			break;
		p = e + 1;
	}
	if (!*path) {
		*pd = dup(w->root);
		return *pd < 0 ? "out of descriptors" : NULL;
	}
	snprintf(name, NAME_MAX + 1, "%s", last);
	if (last == path)
		snprintf(parent, sizeof(parent), ".");
	else
		snprintf(parent, sizeof(parent), "%.*s", (int)(last - 1 - path), path);
	*pd = (int)syscall(SYS_openat2, w->root, parent, &how, sizeof(how));
	if (*pd < 0)
		return errno == ELOOP || errno == EXDEV ? "a parent is a symlink or leaves the root"
		       : errno == ENOENT                ? "a parent is missing"
		       : errno == ENOTDIR               ? "a parent is not a directory"
		                                        : "cannot open its parent";
	return NULL;
}

static int remove_at(int pd, const char *name, int depth)
{
	struct stat st;
	struct dirent *e;
	DIR *d;
	int fd, err = 0;

	if (fstatat(pd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(pd, name, 0) ? -errno : 0;
	if (depth > RWL_MAX_DEPTH)
		return -ELOOP;
	fd = openat(pd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	while (!err && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			err = remove_at(dirfd(d), e->d_name, depth + 1);
	closedir(d);
	return err ?: (unlinkat(pd, name, AT_REMOVEDIR) ? -errno : 0);
}

int rwl_begin(struct rwl *w, const char *root, uint64_t max_bytes, uint64_t max_entries,
              const char *const *excl, size_t nexcl)
{
	memset(w, 0, sizeof(*w));
	w->fd = w->pd = -1;
	w->max_bytes = max_bytes;
	w->max_entries = max_entries;
	w->root = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->root < 0)
		return fatal(w, -errno, "cannot open the rootfs at", root);
	w->excl = calloc(nexcl ? nexcl : 1, sizeof(*w->excl));
	if (!w->excl)
		return fatal(w, -ENOMEM, "replaying the changes in", root);
	for (size_t i = 0; i < nexcl; i++) {
		const char *x = excl[i];

		while (*x == '/')
			x++;
		if (!(w->excl[w->nexcl] = strdup(x)))
			return fatal(w, -ENOMEM, "replaying the changes in", root);
		w->nexcl++;
	}
	return 0;
}

static void set_attrs_fd(int fd, const struct rwl_attr *a)
{
	struct timespec t[2] = {{0, UTIME_OMIT}, {a->mtime_s, a->mtime_ns}};

	if (fchown(fd, a->uid, a->gid) || fchmod(fd, a->mode & 07777) || futimens(fd, t))
		return; /* best effort: the bytes matter most */
}

/* The file being written is complete: in place with its attributes. */
static int finish_file(struct rwl *w)
{
	int err = 0;

	if (w->fd < 0)
		return 0;
	set_attrs_fd(w->fd, &w->attr);
	if (close(w->fd))
		err = -errno;
	w->fd = -1;
	if (!err && renameat(w->pd, w->tmp, w->pd, w->name))
		err = -errno;
	if (err) {
		unlinkat(w->pd, w->tmp, 0);
		refuse(w, w->path, strerror(-err));
	}
	close(w->pd);
	w->pd = -1;
	return 0;
}

static int start_file(struct rwl *w, int pd, const char *name, const char *path, uint64_t size)
{
	static unsigned seq;

	if (size > w->max_bytes - w->bytes) {
		snprintf(w->msg, sizeof(w->msg),
		         "the container's writes are more than the %llu MiB its snapshot's disk "
		         "takes (at /%.1000s); free space there or raise KILN_SHIM_RW_MAX_MB",
		         (unsigned long long)(w->max_bytes >> 20), path);
		return -EFBIG;
	}
	w->bytes += size;
	w->left = size;
	snprintf(w->tmp, sizeof(w->tmp), ".kiln-rw.%d.%u", (int)getpid(), seq++);
	snprintf(w->name, sizeof(w->name), "%s", name);
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->fd = openat(pd, w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		refuse(w, path, strerror(errno));
		return 0; /* its bytes are read and dropped */
	}
	w->pd = dup(pd);
	if (w->pd < 0) {
		close(w->fd);
		w->fd = -1;
		unlinkat(pd, w->tmp, 0);
		return fatal(w, -errno, "writing", path);
	}
	return w->left ? 0 : finish_file(w);
}

static int note_dir_time(struct rwl *w, const char *path, const struct rwl_attr *a)
{
	if (w->ndirs == w->cap_dirs) {
		size_t cap = w->cap_dirs ? 2 * w->cap_dirs : 64;
		struct rwl_dir *v = realloc(w->dirs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->dirs = v;
		w->cap_dirs = cap;
	}
	w->dirs[w->ndirs].path = strdup(path);
	if (!w->dirs[w->ndirs].path)
		return -ENOMEM;
	w->dirs[w->ndirs].s = a->mtime_s;
	w->dirs[w->ndirs++].ns = a->mtime_ns;
	return 0;
}

static int count_entry(struct rwl *w)
{
	if (w->left)
		return fatal(w, -EPROTO, "a change came before the end of the bytes of", w->path);
	if (++w->entries > w->max_entries) {
		snprintf(w->msg, sizeof(w->msg),
		         "the container changed more than %llu entries of its root",
		         (unsigned long long)w->max_entries);
		return -E2BIG;
	}
	return 0;
}

int rwl_node(struct rwl *w, const char *path, const struct rwl_attr *a0, const char *link)
{
	struct rwl_attr a = *a0;
	uint32_t type = a.mode & S_IFMT;
	char name[NAME_MAX + 1];
	struct stat st;
	const char *why;
	int pd, err = count_entry(w), fd;
	bool exists;

	if (err)
		return err;
	if (type == S_IFREG && a.size > (uint64_t)INT64_MAX)
		return fatal(w, -EPROTO, "a size beyond any file for", path);
	if (type != S_IFREG)
		a.size = 0;
	if (excluded(w, path))
		return skip_bytes(w, path, a.size);
	if (type != S_IFREG && type != S_IFDIR && type != S_IFLNK) {
		refuse(w, path, "device nodes, fifos and sockets are not copied");
		return 0; /* (no bytes: size is 0 for them) */
	}
	if (a.mode & (S_ISUID | S_ISGID)) {
		a.mode &= ~(uint32_t)(S_ISUID | S_ISGID);
		w->setid++;
	}
	if ((why = open_parent(w, path, &pd, name))) {
		refuse(w, path, why);
		return skip_bytes(w, path, a.size);
	}
	if (!name[0]) { /* the root itself */
		if (type == S_IFDIR) {
			set_attrs_fd(w->root, &a);
			err = note_dir_time(w, "", &a);
		} else {
			refuse(w, path, "the root is not a directory");
		}
		close(pd);
		return err;
	}
	exists = !fstatat(pd, name, &st, AT_SYMLINK_NOFOLLOW);
	/* what is in the way goes (a directory whole, without following) */
	if (exists && (type != (st.st_mode & S_IFMT) || type == S_IFLNK) &&
	    (type != S_IFREG || S_ISDIR(st.st_mode)) && (err = remove_at(pd, name, 0))) {
		refuse(w, path, strerror(-err));
		close(pd);
		return skip_bytes(w, path, a.size);
	}
	err = 0;
	if (type == S_IFDIR) {
		if (mkdirat(pd, name, 0700) && errno != EEXIST)
			refuse(w, path, strerror(errno));
		else if ((fd = openat(pd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
		         0)
			refuse(w, path, strerror(errno));
		else {
			set_attrs_fd(fd, &a);
			close(fd);
			err = note_dir_time(w, path, &a);
		}
	} else if (type == S_IFLNK) {
		struct timespec t[2] = {{0, UTIME_OMIT}, {a.mtime_s, a.mtime_ns}};

		if (!link[0] || symlinkat(link, pd, name)) {
			refuse(w, path, link[0] ? strerror(errno) : "an empty symlink target");
		} else if (!fchownat(pd, name, a.uid, a.gid, AT_SYMLINK_NOFOLLOW)) {
			utimensat(pd, name, t, AT_SYMLINK_NOFOLLOW); /* best effort, as for files */
		}
	} else {
		w->attr = a;
		err = start_file(w, pd, name, path, a.size);
	}
	close(pd);
	return err;
}

int rwl_data(struct rwl *w, const void *p, size_t n)
{
	const char *c = p;

	if (n > w->left)
		return fatal(w, -EPROTO, "more bytes than the size of", w->path);
	w->left -= n;
	while (w->fd >= 0 && n) {
		ssize_t k = write(w->fd, c, n);

		if (k <= 0) {
			int err = k < 0 ? -errno : -EIO;

			close(w->fd);
			w->fd = -1;
			unlinkat(w->pd, w->tmp, 0);
			close(w->pd);
			w->pd = -1;
			if (err == -ENOSPC || err == -EDQUOT)
				return fatal(w, err, "writing to the snapshot", w->path);
			refuse(w, w->path, strerror(-err));
			break;
		}
		c += k;
		n -= (size_t)k;
	}
	if (!w->left)
		return finish_file(w);
	return 0;
}

int rwl_link(struct rwl *w, const char *path, const char *target)
{
	char name[NAME_MAX + 1], tname[NAME_MAX + 1];
	struct stat st, ts;
	const char *why;
	int pd = -1, tpd = -1, err = count_entry(w);

	if (err || excluded(w, path))
		return err;
	if (excluded(w, target)) {
		refuse(w, path, "a hard link to a file not in the snapshot");
		return 0;
	}
	if ((why = open_parent(w, path, &pd, name)) || (why = open_parent(w, target, &tpd, tname)))
		refuse(w, path, why);
	else if (!name[0] || !tname[0])
		refuse(w, path, "a hard link of or to the root");
	else if (fstatat(tpd, tname, &ts, AT_SYMLINK_NOFOLLOW) || !S_ISREG(ts.st_mode))
		refuse(w, path, "a hard link to what is not a file");
	else if (ts.st_mode & (S_ISUID | S_ISGID))
		refuse(w, path, "a hard link to a set-id file");
	else if (!fstatat(pd, name, &st, AT_SYMLINK_NOFOLLOW) && st.st_dev == ts.st_dev &&
	         st.st_ino == ts.st_ino)
		; /* the same file already */
	else if ((err = remove_at(pd, name, 0)))
		refuse(w, path, strerror(-err));
	else if (linkat(tpd, tname, pd, name, 0))
		refuse(w, path, strerror(errno));
	else
		w->links++;
	if (pd >= 0)
		close(pd);
	if (tpd >= 0)
		close(tpd);
	return 0;
}

/* what the guest of a copied root never had */
static bool special(int dfd, const char *name)
{
	struct stat st;

	return !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	       (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode) ||
	        S_ISSOCK(st.st_mode));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int rwl_names(struct rwl *w, const char *path, const char **names, size_t n)
{
	char name[NAME_MAX + 1], child[PATH_MAX];
	struct dirent *e;
	const char *why;
	int pd, fd, err = count_entry(w);
	DIR *d;

	if (err || excluded(w, path))
		return err;
	if ((why = open_parent(w, path, &pd, name))) {
		refuse(w, path, why);
		return 0;
	}
	fd = name[0] ? openat(pd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
	             : openat(pd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(pd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		refuse(w, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 0;
	}
	qsort(names, n, sizeof(*names), cmp_str);
	while ((e = readdir(d))) {
		const char *key = e->d_name;

		if (!strcmp(key, ".") || !strcmp(key, "..") || !strncmp(key, ".kiln-rw.", 9) ||
		    bsearch(&key, names, n, sizeof(*names), cmp_str))
			continue;
		snprintf(child, sizeof(child), "%s%s%s", path, *path ? "/" : "", key);
		if (excluded(w, child) || (w->keep_special && special(dirfd(d), key)))
			continue;
		if ((err = remove_at(dirfd(d), key, 0)))
			refuse(w, child, strerror(-err));
		else
			w->removed++;
	}
	closedir(d);
	return 0;
}

int rwl_end(struct rwl *w)
{
	if (w->left)
		return fatal(w, -EPROTO, "the change set ended inside the bytes of", w->path);
	for (size_t i = w->ndirs; i-- > 0;) {
		char name[NAME_MAX + 1];
		struct timespec t[2] = {{0, UTIME_OMIT}, {w->dirs[i].s, w->dirs[i].ns}};
		int pd, fd;

		if (open_parent(w, w->dirs[i].path, &pd, name))
			continue;
		fd = name[0] ? openat(pd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		             : dup(pd);
		close(pd);
		if (fd >= 0) {
			futimens(fd, t);
			close(fd);
		}
	}
	if (w->refused) {
		snprintf(w->msg, sizeof(w->msg), "%u change%s not saved to the snapshot, first %s",
		         w->refused, w->refused == 1 ? "" : "s", w->first);
		return -EPERM;
	}
	return 0;
}

void rwl_free(struct rwl *w)
{
	if (w->fd >= 0) {
		close(w->fd);
		unlinkat(w->pd, w->tmp, 0);
	}
	if (w->pd >= 0)
		close(w->pd);
	if (w->root >= 0)
		close(w->root);
	for (size_t i = 0; i < w->nexcl; i++)
		free(w->excl[i]);
	free(w->excl);
	for (size_t i = 0; i < w->ndirs; i++)
		free(w->dirs[i].path);
	free(w->dirs);
	memset(w, 0, sizeof(*w));
	w->root = w->fd = w->pd = -1;
}
