/* SPDX-License-Identifier: MIT */
/*
 * Path walk. The path is walked in place in a VFS_PATH_MAX buffer; a
 * symlink met on the way is replaced by its target in that buffer, so the
 * walk is a loop, never a recursion, and its work is bounded by the buffer
 * and VFS_MAX_SYMLINKS. Errors follow Linux: ENOENT for a missing
 * component, ENOTDIR for a non-directory before a "/", ELOOP past 40
 * links, ENAMETOOLONG for a component past NAME_MAX or a path past PATH_MAX,
 * EACCES for a directory the caller may not search (no x bit for it).
 *
 * At the end, the syscalls' side: a program's (dirfd, path) as a walk.
 */
#include "vfs_impl.h"
#include "mm.h"
#include "proc.h"

void nd_init(struct nameidata *nd, struct inode *root, struct inode *start, char *buf)
{
	memset(nd, 0, sizeof(*nd));
	nd->root = root;
	nd->dir = start ? start : root;
	nd->buf = buf;
	inode_get(nd->dir);
}

void nd_end(struct nameidata *nd)
{
	if (nd->dir)
		inode_put(nd->dir);
	if (nd->buf)
		kfree(nd->buf);
	nd->dir = NULL;
	nd->buf = NULL;
}

int nd_init_path(struct nameidata *nd, struct inode *root, struct inode *start, const char *path)
{
	size_t len = strnlen(path, VFS_PATH_MAX);
	char *buf = len < VFS_PATH_MAX ? kmalloc(VFS_PATH_MAX) : NULL;

	if (buf)
		memcpy(buf, path, len + 1);
	nd_init(nd, root, start, buf);
	if (len >= VFS_PATH_MAX)
		return -ENAMETOOLONG;
	if (!buf)
		return -ENOMEM;
	return len ? 0 : -ENOENT;
}

static void nd_set_dir(struct nameidata *nd, struct inode *dir)
{
	inode_get(dir);
	inode_put(nd->dir);
	nd->dir = dir;
}

/* ".." stops at the walk's root. */
static struct inode *parent_of(const struct nameidata *nd, struct inode *dir)
{
	if (dir == nd->root || !dir->dir.parent)
		return dir;
	return dir->dir.parent;
}

static int classify(const char *name, size_t len)
{
	if (len == 0)
		return LAST_ROOT;
	if (len == 1 && name[0] == '.')
		return LAST_DOT;
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return LAST_DOTDOT;
	return LAST_NORM;
}

int nd_follow(struct nameidata *nd, struct inode *link)
{
	size_t tlen = link->size, rlen = strlen(nd->buf + nd->pos);

	if (++nd->nlinks > VFS_MAX_SYMLINKS)
		return -ELOOP;
	if (link->synth && link->synth->ops->link_access) {
		int err = link->synth->ops->link_access(link);

		if (err)
			return err;
	}
	if (tlen == 0)
		return -ENOENT;
	if (tlen + (rlen ? 1 + rlen : 0) >= VFS_PATH_MAX)
		return -ENAMETOOLONG;
	if (rlen) {
		memmove(nd->buf + tlen + 1, nd->buf + nd->pos, rlen + 1);
		nd->buf[tlen] = '/';
	} else {
		nd->buf[tlen] = '\0';
	}
	memcpy(nd->buf, link->target, tlen);
	nd->pos = 0;
	return 0;
}

/* Go through one component that is not the last. */
static int nd_step(struct nameidata *nd, const char *name, size_t len)
{
	struct dentry *de;
	int err = vfs_permission(nd->dir, VFS_MAY_EXEC);

	if (err)
		return err;
	switch (classify(name, len)) {
	case LAST_DOT:
		return 0;
	case LAST_DOTDOT:
		nd_set_dir(nd, parent_of(nd, nd->dir));
		return 0;
	}
	de = ramfs_find(nd->dir, name, len);
	if (!de)
		return -ENOENT;
	if (S_ISLNK(de->ip->mode))
		return nd_follow(nd, de->ip);
	if (!S_ISDIR(de->ip->mode))
		return -ENOTDIR;
	nd_set_dir(nd, de->ip);
	return 0;
}

int nd_walk_parent(struct nameidata *nd)
{
	for (;;) {
		char *p = nd->buf + nd->pos, *end, *rest;
		size_t len;
		int err;

		if (*p == '/') {
			nd_set_dir(nd, nd->root);
			while (*p == '/')
				p++;
		}
		for (end = p; *end && *end != '/'; end++)
			;
		for (rest = end; *rest == '/'; rest++)
			;
		len = end - p;
		if (len > VFS_NAME_MAX)
			return -ENAMETOOLONG;
		nd->pos = rest - nd->buf;
		if (*rest == '\0') {
			nd->last = p;
			nd->lastlen = len;
			nd->last_type = classify(p, len);
			nd->must_dir |= end != rest;
			return 0;
		}
		err = nd_step(nd, p, len);
		if (err)
			return err;
	}
}

int nd_last_inode(struct nameidata *nd, struct inode **out)
{
	struct inode *ip = nd->dir;
	struct dentry *de;

	if (nd->last_type == LAST_DOTDOT) {
		ip = parent_of(nd, nd->dir);
	} else if (nd->last_type == LAST_NORM) {
		int err = vfs_permission(nd->dir, VFS_MAY_EXEC);

		if (err)
			return err;
		de = ramfs_find(nd->dir, nd->last, nd->lastlen);
		if (!de)
			return -ENOENT;
		ip = de->ip;
	}
	inode_get(ip);
	*out = ip;
	return 0;
}

int nd_lookup(struct nameidata *nd, bool follow, struct inode **out)
{
	for (;;) {
		struct inode *ip;
		int err = nd_walk_parent(nd);

		if (!err)
			err = nd_last_inode(nd, &ip);
		if (err)
			return err;
		if (S_ISLNK(ip->mode) && (follow || nd->must_dir)) {
			err = nd_follow(nd, ip);
			inode_put(ip);
			if (err)
				return err;
			continue;
		}
		if (nd->must_dir && !S_ISDIR(ip->mode)) {
			inode_put(ip);
			return -ENOTDIR;
		}
		*out = ip;
		return 0;
	}
}

int vfs_lookup_at(struct fs_ctx *fs, const char *path, bool follow, struct inode **out)
{
	struct inode *root = fs ? fs->root : vfs_root();
	struct nameidata nd;
	int err = nd_init_path(&nd, root, fs ? fs->cwd : root, path);

	if (!err)
		err = nd_lookup(&nd, follow, out);
	nd_end(&nd);
	return err;
}

int vfs_lookup(const char *path, bool follow, struct inode **out)
{
	return vfs_lookup_at(cur_proc()->fs, path, follow, out);
}

int vfs_mknod(const char *path, uint32_t mode, struct inode **out)
{
	struct fs_ctx *fs = cur_proc()->fs;
	struct nameidata nd;
	int err = nd_init_path(&nd, fs->root, fs->cwd, path);

	if (!err)
		err = nd_walk_parent(&nd);
	if (!err && (nd.last_type != LAST_NORM || ramfs_find(nd.dir, nd.last, nd.lastlen)))
		err = -EEXIST;
	if (!err && nd.must_dir)
		err = -ENOENT;
	if (!err)
		err = vfs_may_create(nd.dir);
	if (!err)
		err = vfs_create(nd.dir, nd.last, nd.lastlen,
		                 (mode & S_IFMT) | (mode & 07777 & ~fs->umask), out);
	nd_end(&nd);
	return err;
}

/* ---------------------------------------------------------------- program paths */

int dirfd_inode(int dirfd, struct inode **out)
{
	struct proc *p = cur_proc();
	struct file *f;

	if (dirfd == AT_FDCWD) {
		*out = p->fs->cwd;
	} else {
		f = fd_get(p->files, dirfd);
		if (!f)
			return -EBADF;
		*out = f->ip;
	}
	inode_get(*out);
	return 0;
}

/* Copy the path in and set where the walk starts: "/", the working
 * directory or dirfd. For "" (*empty), nd->dir is dirfd's inode, whatever
 * its type, for the callers that take AT_EMPTY_PATH. */
static int path_start(struct nameidata *nd, int dirfd, const char *upath, bool *empty)
{
	struct fs_ctx *fs = cur_proc()->fs;
	char *buf = kmalloc(VFS_PATH_MAX);
	struct inode *start;
	long len;
	int err;

	nd_init(nd, fs->root, fs->cwd, buf);
	if (!buf)
		return -ENOMEM;
	len = strncpy_from_user(buf, upath, VFS_PATH_MAX);
	if (len < 0)
		return (int)len;
	*empty = len == 0;
	if (dirfd == AT_FDCWD || buf[0] == '/')
		return 0;
	err = dirfd_inode(dirfd, &start);
	if (err)
		return err;
	inode_put(nd->dir);
	nd->dir = start;
	return len && !S_ISDIR(start->mode) ? -ENOTDIR : 0;
}

int user_path_inode(int dirfd, const char *upath, unsigned int flags, struct inode **out)
{
	struct nameidata nd;
	bool empty = false;
	int err = path_start(&nd, dirfd, upath, &empty);

	if (!err && empty && !(flags & LOOKUP_EMPTY))
		err = -ENOENT;
	if (!err && empty) {
		inode_get(nd.dir);
		*out = nd.dir;
	} else if (!err) {
		err = nd_lookup(&nd, flags & LOOKUP_FOLLOW, out);
	}
	nd_end(&nd);
	return err;
}

int user_path_parent(struct nameidata *nd, int dirfd, const char *upath)
{
	bool empty = false;
	int err = path_start(nd, dirfd, upath, &empty);

	if (!err && empty)
		err = -ENOENT;
	return err ? err : nd_walk_parent(nd);
}
