/* SPDX-License-Identifier: MIT */
/*
 * Syscalls on names: mkdir, unlink, rmdir, rename, link, symlink,
 * readlink, the working directory, umask. A new or removed name needs
 * write and search permission on its directory, and the sticky bit's
 * ownership (perm.c).
 */
#include <linux/fs.h>

#include <linux/inotify.h>

#include "vfs_impl.h"
#include "mm.h"
#include "proc.h"
#include "syscall.h"

/* ---------------------------------------------------------------- mkdir, unlink, rmdir */

static long do_mkdir(int dirfd, const char *upath, uint32_t mode)
{
	struct nameidata nd;
	int err = user_path_parent(&nd, dirfd, upath);

	if (!err && (nd.last_type != LAST_NORM || ramfs_find(nd.dir, nd.last, nd.lastlen)))
		err = -EEXIST;
	if (!err)
		err = vfs_may_create(nd.dir);
	if (!err) {
		mode = S_IFDIR | (mode & 01777 & ~cur_proc()->fs->umask);
		err = vfs_create(nd.dir, nd.last, nd.lastlen, mode, NULL);
	}
	nd_end(&nd);
	return err;
}

SYSCALL_DEFINE(mkdirat)
{
	return do_mkdir((int)a0, (const char *)a1, (uint32_t)a2);
}

SYSCALL_DEFINE(mkdir)
{
	return do_mkdir(AT_FDCWD, (const char *)a0, (uint32_t)a1);
}

/* Remove the entry de of nd's final component, and tell inotify. */
static void remove_entry(struct nameidata *nd, struct dentry *de)
{
	struct inode *ip = de->ip;
	uint32_t isdir = S_ISDIR(ip->mode) ? IN_ISDIR : 0;

	inode_get(ip);
	ramfs_unlink(nd->dir, de);
	/* (In Linux's order: the inode's own watches first.) */
	if (!ip->nlink)
		inotify_event(ip, IN_DELETE_SELF, 0, NULL, 0);
	inotify_event(nd->dir, IN_DELETE | isdir, 0, nd->last, nd->lastlen);
	inode_put(ip);
}

static int unlink_at(struct nameidata *nd)
{
	struct dentry *de;
	int err;

	if (nd->last_type != LAST_NORM)
		return -EISDIR;
	de = ramfs_find(nd->dir, nd->last, nd->lastlen);
	if (!de)
		return -ENOENT;
	if (S_ISDIR(de->ip->mode))
		return -EISDIR;
	if (nd->must_dir)
		return -ENOTDIR;
	if (nd->dir->synth) /* procfs */
		return -EPERM;
	err = vfs_may_delete(nd->dir, de->ip);
	if (err)
		return err;
	remove_entry(nd, de);
	return 0;
}

static int rmdir_at(struct nameidata *nd)
{
	struct dentry *de;
	int err;

	if (nd->last_type == LAST_DOT)
		return -EINVAL;
	if (nd->last_type == LAST_DOTDOT)
		return -ENOTEMPTY;
	if (nd->last_type == LAST_ROOT)
		return -EBUSY;
	de = ramfs_find(nd->dir, nd->last, nd->lastlen);
	if (!de)
		return -ENOENT;
	if (!S_ISDIR(de->ip->mode))
		return -ENOTDIR;
	if (nd->dir->synth)
		return -EPERM;
	err = vfs_may_delete(nd->dir, de->ip);
	if (err)
		return err;
	if (de->ip->dir.count)
		return -ENOTEMPTY;
	remove_entry(nd, de);
	return 0;
}

static long do_unlink(int dirfd, const char *upath, unsigned int flags)
{
	struct nameidata nd;
	int err;

	if (flags & ~AT_REMOVEDIR)
		return -EINVAL;
	err = user_path_parent(&nd, dirfd, upath);
	if (!err)
		err = (flags & AT_REMOVEDIR) ? rmdir_at(&nd) : unlink_at(&nd);
	nd_end(&nd);
	return err;
}

SYSCALL_DEFINE(unlinkat)
{
	return do_unlink((int)a0, (const char *)a1, (unsigned int)a2);
}

SYSCALL_DEFINE(unlink)
{
	return do_unlink(AT_FDCWD, (const char *)a0, 0);
}

SYSCALL_DEFINE(rmdir)
{
	return do_unlink(AT_FDCWD, (const char *)a0, AT_REMOVEDIR);
}

/* ---------------------------------------------------------------- rename */

/* Whether dir is anc or below it. The tree has no cycles: rename keeps it so. */
static bool is_under(struct inode *dir, struct inode *anc)
{
	for (; dir; dir = dir->dir.parent)
		if (dir == anc)
			return true;
	return false;
}

/* Permissions: the old name's removal, the new name's creation or
 * replacement, and a directory that changes parent must be writable (its
 * ".." changes). */
static int rename_perm(struct nameidata *o, struct nameidata *n, struct inode *src,
                       struct inode *dst, unsigned int flags)
{
	int err = vfs_may_delete(o->dir, src);

	if (!err)
		err = dst ? vfs_may_delete(n->dir, dst) : vfs_may_create(n->dir);
	if (!err && o->dir != n->dir && S_ISDIR(src->mode))
		err = vfs_permission(src, VFS_MAY_WRITE);
	if (!err && dst && (flags & RENAME_EXCHANGE) && o->dir != n->dir && S_ISDIR(dst->mode))
		err = vfs_permission(dst, VFS_MAY_WRITE);
	return err;
}

static int rename_check(struct nameidata *o, struct nameidata *n, struct inode *src,
                        struct inode *dst, unsigned int flags)
{
	int err = rename_perm(o, n, src, dst, flags);

	if (err)
		return err;
	if ((o->must_dir && !S_ISDIR(src->mode)) ||
	    (n->must_dir && !S_ISDIR((flags & RENAME_EXCHANGE) ? dst->mode : src->mode)))
		return -ENOTDIR;
	if (S_ISDIR(src->mode) && is_under(n->dir, src))
		return -EINVAL;
	if (dst && (flags & RENAME_EXCHANGE))
		return S_ISDIR(dst->mode) && is_under(o->dir, dst) ? -EINVAL : 0;
	if (dst && S_ISDIR(src->mode) && !S_ISDIR(dst->mode))
		return -ENOTDIR;
	if (dst && !S_ISDIR(src->mode) && S_ISDIR(dst->mode))
		return -EISDIR;
	if (dst && S_ISDIR(dst->mode) && dst->dir.count)
		return -ENOTEMPTY;
	return 0;
}

/* inotify: src moved from o's name to n's (and dst, exchanged or replaced). */
static void rename_events(struct nameidata *o, struct nameidata *n, struct inode *src,
                          struct inode *dst, unsigned int flags)
{
	uint32_t cookie = inotify_cookie(), isdir = S_ISDIR(src->mode) ? IN_ISDIR : 0;

	inotify_event(o->dir, IN_MOVED_FROM | isdir, cookie, o->last, o->lastlen);
	inotify_event(n->dir, IN_MOVED_TO | isdir, cookie, n->last, n->lastlen);
	inotify_event(src, IN_MOVE_SELF, 0, NULL, 0);
	if (dst && (flags & RENAME_EXCHANGE)) {
		cookie = inotify_cookie();
		isdir = S_ISDIR(dst->mode) ? IN_ISDIR : 0;
		inotify_event(n->dir, IN_MOVED_FROM | isdir, cookie, n->last, n->lastlen);
		inotify_event(o->dir, IN_MOVED_TO | isdir, cookie, o->last, o->lastlen);
		inotify_event(dst, IN_MOVE_SELF, 0, NULL, 0);
	} else if (dst && !dst->nlink) {
		inotify_event(dst, IN_DELETE_SELF, 0, NULL, 0);
	}
}

static int rename_at(struct nameidata *o, struct nameidata *n, unsigned int flags)
{
	struct dentry *ode, *nde;
	struct inode *src, *dst;
	int err;

	if (o->last_type != LAST_NORM)
		return -EBUSY;
	if (n->last_type != LAST_NORM)
		return (flags & RENAME_NOREPLACE) ? -EEXIST : -EBUSY;
	ode = ramfs_find(o->dir, o->last, o->lastlen);
	nde = ramfs_find(n->dir, n->last, n->lastlen);
	if (!ode || (!nde && (flags & RENAME_EXCHANGE)))
		return -ENOENT;
	if (nde && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (o->dir->synth || n->dir->synth) /* procfs */
		return o->dir->synth && n->dir->synth ? -EPERM : -EXDEV;
	src = ode->ip;
	dst = nde ? nde->ip : NULL;
	err = rename_check(o, n, src, dst, flags);
	if (err || src == dst)
		return err;
	inode_get(src);
	if (dst)
		inode_get(dst);
	if (flags & RENAME_EXCHANGE) {
		ramfs_relink(o->dir, ode, dst);
		ramfs_relink(n->dir, nde, src);
	} else {
		if (nde)
			ramfs_relink(n->dir, nde, src);
		else
			err = ramfs_link(n->dir, n->last, n->lastlen, src);
		if (!err)
			ramfs_unlink(o->dir, ode);
	}
	if (!err)
		rename_events(o, n, src, dst, flags);
	inode_put(src);
	if (dst)
		inode_put(dst);
	return err;
}

static long do_rename(int odfd, const char *opath, int ndfd, const char *npath, unsigned int flags)
{
	struct nameidata o, n;
	int err;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT))
		return -EINVAL;
	if ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)))
		return -EINVAL;
	if (flags & RENAME_WHITEOUT) /* for overlay file systems, which we lack */
		return -EINVAL;
	err = user_path_parent(&o, odfd, opath);
	if (err) {
		nd_end(&o);
		return err;
	}
	err = user_path_parent(&n, ndfd, npath);
	if (!err)
		err = rename_at(&o, &n, flags);
	nd_end(&n);
	nd_end(&o);
	return err;
}

SYSCALL_DEFINE(renameat2)
{
	return do_rename((int)a0, (const char *)a1, (int)a2, (const char *)a3, (unsigned int)a4);
}

SYSCALL_DEFINE(renameat)
{
	return do_rename((int)a0, (const char *)a1, (int)a2, (const char *)a3, 0);
}

SYSCALL_DEFINE(rename)
{
	return do_rename(AT_FDCWD, (const char *)a0, AT_FDCWD, (const char *)a1, 0);
}

/* ---------------------------------------------------------------- link, symlink, readlink */

/* Check that the final component of a path being created is free. */
static int new_name_ok(struct nameidata *nd)
{
	if (nd->last_type != LAST_NORM || ramfs_find(nd->dir, nd->last, nd->lastlen))
		return -EEXIST;
	return nd->must_dir ? -ENOENT : 0;
}

static long do_link(int odfd, const char *opath, int ndfd, const char *npath, int flags)
{
	unsigned int lf = (flags & AT_SYMLINK_FOLLOW ? LOOKUP_FOLLOW : 0) |
	                  (flags & AT_EMPTY_PATH ? LOOKUP_EMPTY : 0);
	struct nameidata nd;
	struct inode *ip;
	int err;

	if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	err = user_path_inode(odfd, opath, lf, &ip);
	if (err)
		return err;
	if (S_ISDIR(ip->mode)) {
		inode_put(ip);
		return -EPERM;
	}
	err = user_path_parent(&nd, ndfd, npath);
	if (!err)
		err = new_name_ok(&nd);
	if (!err)
		err = vfs_may_create(nd.dir);
	if (!err)
		err = ramfs_link(nd.dir, nd.last, nd.lastlen, ip);
	if (!err)
		inotify_event(nd.dir, IN_CREATE, 0, nd.last, nd.lastlen);
	nd_end(&nd);
	inode_put(ip);
	return err;
}

SYSCALL_DEFINE(linkat)
{
	return do_link((int)a0, (const char *)a1, (int)a2, (const char *)a3, (int)a4);
}

SYSCALL_DEFINE(link)
{
	return do_link(AT_FDCWD, (const char *)a0, AT_FDCWD, (const char *)a1, 0);
}

static long do_symlink(const char *utarget, int dirfd, const char *upath)
{
	char *target = kmalloc(VFS_PATH_MAX);
	struct nameidata nd;
	long len;
	int err;

	if (!target)
		return -ENOMEM;
	len = strncpy_from_user(target, utarget, VFS_PATH_MAX);
	if (len <= 0) {
		kfree(target);
		return len ? len : -ENOENT;
	}
	err = user_path_parent(&nd, dirfd, upath);
	if (!err)
		err = new_name_ok(&nd);
	if (!err)
		err = vfs_may_create(nd.dir);
	if (!err)
		err = vfs_symlink(nd.dir, nd.last, nd.lastlen, target, len, NULL);
	nd_end(&nd);
	kfree(target);
	return err;
}

SYSCALL_DEFINE(symlinkat)
{
	return do_symlink((const char *)a0, (int)a1, (const char *)a2);
}

SYSCALL_DEFINE(symlink)
{
	return do_symlink((const char *)a0, AT_FDCWD, (const char *)a1);
}

static long do_readlink(int dirfd, const char *upath, char *ubuf, long size)
{
	struct inode *ip;
	long err, n;

	if (size <= 0)
		return -EINVAL;
	err = user_path_inode(dirfd, upath, LOOKUP_EMPTY, &ip);
	if (err)
		return err;
	n = MIN((uint64_t)size, ip->size);
	if (!S_ISLNK(ip->mode))
		err = -EINVAL;
	else if (ip->synth && ip->synth->ops->link_access &&
	         (err = ip->synth->ops->link_access(ip)))
		; /* (another user's /proc/PID/cwd) */
	else if (copy_to_user(ubuf, ip->target, n))
		err = -EFAULT;
	inode_put(ip);
	return err ? err : n;
}

SYSCALL_DEFINE(readlinkat)
{
	return do_readlink((int)a0, (const char *)a1, (char *)a2, (int)a3);
}

SYSCALL_DEFINE(readlink)
{
	return do_readlink(AT_FDCWD, (const char *)a0, (char *)a1, (int)a2);
}

/* ---------------------------------------------------------------- cwd, umask */

/* The path of dir, built from the end of buf[VFS_PATH_MAX]; returns where it starts. */
static long path_of(struct inode *dir, struct inode *root, char *buf)
{
	long pos = VFS_PATH_MAX - 1;

	buf[pos] = '\0';
	while (dir != root && dir->dir.parent) {
		struct dentry *de = ramfs_name_of(dir->dir.parent, dir);

		if (!de)
			return -ENOENT;
		if ((long)de->namelen + 1 > pos)
			return -ENAMETOOLONG;
		pos -= de->namelen;
		memcpy(buf + pos, de->name, de->namelen);
		buf[--pos] = '/';
		dir = dir->dir.parent;
	}
	if (pos == VFS_PATH_MAX - 1)
		buf[--pos] = '/';
	return pos;
}

SYSCALL_DEFINE(getcwd)
{
	struct fs_ctx *fs = cur_proc()->fs;
	char *buf;
	long pos, len;

	if (!fs->cwd->nlink)
		return -ENOENT;
	buf = kmalloc(VFS_PATH_MAX);
	if (!buf)
		return -ENOMEM;
	pos = path_of(fs->cwd, fs->root, buf);
	len = VFS_PATH_MAX - pos;
	if (pos >= 0 && (unsigned long)a1 < (unsigned long)len)
		pos = -ERANGE;
	if (pos >= 0 && copy_to_user((void *)a0, buf + pos, len))
		pos = -EFAULT;
	kfree(buf);
	return pos < 0 ? pos : len;
}

/* ip may be a working directory or root: a directory one may search. */
static int enterable(struct inode *ip)
{
	return S_ISDIR(ip->mode) ? vfs_permission(ip, VFS_MAY_EXEC) : -ENOTDIR;
}

static long set_cwd(struct inode *ip)
{
	struct fs_ctx *fs = cur_proc()->fs;
	int err = enterable(ip);

	if (err) {
		inode_put(ip);
		return err;
	}
	inode_put(fs->cwd);
	fs->cwd = ip;
	return 0;
}

SYSCALL_DEFINE(chdir)
{
	struct inode *ip;
	int err = user_path_inode(AT_FDCWD, (const char *)a0, LOOKUP_FOLLOW, &ip);

	return err ? err : set_cwd(ip);
}

SYSCALL_DEFINE(fchdir)
{
	struct file *f = fd_get(cur_proc()->files, (int)a0);

	if (!f)
		return -EBADF;
	inode_get(f->ip);
	return set_cwd(f->ip);
}

/* The process's root (fs->root: where "/" and ".." stop), which fork
 * passes on: the tree of one container of a pod, when a pod's containers
 * share a VM. Not a security boundary (the VM is one). Root only, as
 * Linux's CAP_SYS_CHROOT; the working directory stays, as in Linux. */
SYSCALL_DEFINE(chroot)
{
	struct fs_ctx *fs = cur_proc()->fs;
	struct inode *ip;
	int err;

	if (cur_cred()->u.eff != 0)
		return -EPERM;
	err = user_path_inode(AT_FDCWD, (const char *)a0, LOOKUP_FOLLOW, &ip);
	if (err)
		return err;
	err = enterable(ip);
	if (err) {
		inode_put(ip);
		return err;
	}
	inode_put(fs->root);
	fs->root = ip;
	return 0;
}

SYSCALL_DEFINE(umask)
{
	struct fs_ctx *fs = cur_proc()->fs;
	uint32_t old = fs->umask;

	fs->umask = (uint32_t)a0 & 0777;
	return old;
}
