/* SPDX-License-Identifier: MIT */
/*
 * open, openat, creat (with O_CREAT, O_EXCL, O_NOFOLLOW, O_PATH, O_TMPFILE
 * as Linux does them on tmpfs) and truncate. Opening checks read and write
 * permission (perm.c), but not on a file the same call created.
 */
#include "vfs_impl.h"
#include "mm.h"
#include "proc.h"
#include "syscall.h"

/* The inode an O_CREAT open names, made if missing (*created). */
static int open_create(int dirfd, const char *upath, unsigned int flags, uint32_t mode,
                       struct inode **out, bool *created)
{
	struct nameidata nd;
	int err = user_path_parent(&nd, dirfd, upath);

	while (!err) {
		struct dentry *de;

		if (nd.last_type != LAST_NORM || nd.must_dir) {
			err = nd.last_type != LAST_NORM && (flags & O_EXCL) ? -EEXIST : -EISDIR;
			break;
		}
		err = vfs_permission(nd.dir, VFS_MAY_EXEC);
		if (err)
			break;
		de = ramfs_find(nd.dir, nd.last, nd.lastlen);
		if (!de) {
			mode = S_IFREG | (mode & 07777 & ~cur_proc()->fs->umask);
			err = vfs_may_create(nd.dir);
			if (!err)
				err = vfs_create(nd.dir, nd.last, nd.lastlen, mode, out);
			*created = !err;
			break;
		}
		if (flags & O_EXCL) {
			err = -EEXIST;
			break;
		}
		if (!S_ISLNK(de->ip->mode)) {
			inode_get(de->ip);
			*out = de->ip;
			break;
		}
		if (flags & O_NOFOLLOW) {
			err = -ELOOP;
			break;
		}
		err = nd_follow(&nd, de->ip);
		if (!err)
			err = nd_walk_parent(&nd);
	}
	nd_end(&nd);
	return err;
}

/* O_TMPFILE: a file with no name, in the directory the path names. */
static int open_tmpfile(int dirfd, const char *upath, unsigned int flags, uint32_t mode,
                        struct inode **out)
{
	struct inode *dir;
	unsigned int acc = flags & O_ACCMODE;
	int err;

	if (acc != O_WRONLY && acc != O_RDWR)
		return -EINVAL;
	err = user_path_inode(dirfd, upath, LOOKUP_FOLLOW, &dir);
	if (err)
		return err;
	if (!S_ISDIR(dir->mode))
		err = -ENOTDIR;
	else if (!dir->nlink)
		err = -ENOENT;
	else
		err = vfs_may_create(dir);
	if (!err) {
		*out = inode_alloc(S_IFREG | (mode & 07777 & ~cur_proc()->fs->umask));
		if (*out)
			vfs_new_owner(*out, dir);
		else
			err = -ENOMEM;
	}
	inode_put(dir);
	return err;
}

/* What opening with flags asks of the file: read, write (O_TRUNC too). */
static int open_mask(unsigned int flags)
{
	unsigned int acc = flags & O_ACCMODE;
	int mask = 0;

	if (flags & O_PATH)
		return 0;
	if (acc == O_RDONLY || acc == O_RDWR)
		mask |= VFS_MAY_READ;
	if (acc == O_WRONLY || acc == O_RDWR || (flags & O_TRUNC))
		mask |= VFS_MAY_WRITE;
	return mask;
}

static long do_open(int dirfd, const char *upath, unsigned int flags, uint32_t mode)
{
	struct files *t = cur_proc()->files;
	bool created = false; /* no check on a file the call made */
	struct inode *ip;
	struct file *f;
	int err, fd;

	if (flags & O_PATH) /* the other flags are ignored */
		flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	if ((flags & O_TMPFILE) == O_TMPFILE) {
		err = open_tmpfile(dirfd, upath, flags, mode, &ip);
		flags &= ~O_TMPFILE;
		created = true;
	} else if ((flags & (O_CREAT | O_DIRECTORY)) == (O_CREAT | O_DIRECTORY)) {
		err = -EINVAL;
	} else if (flags & O_CREAT) {
		err = open_create(dirfd, upath, flags, mode, &ip, &created);
	} else {
		err = user_path_inode(dirfd, upath, (flags & O_NOFOLLOW) ? 0 : LOOKUP_FOLLOW, &ip);
		if (!err && S_ISLNK(ip->mode) && !(flags & O_PATH)) {
			inode_put(ip);
			err = -ELOOP;
		}
	}
	if (!err && !created && (err = vfs_permission(ip, open_mask(flags))))
		inode_put(ip);
	if (err)
		return err;
	err = vfs_open_inode(ip, flags, &f);
	inode_put(ip);
	if (err)
		return err;
	fd = fd_alloc(t, f, 0, flags & O_CLOEXEC);
	if (fd < 0)
		file_put(f);
	return fd;
}

SYSCALL_DEFINE(openat)
{
	return do_open((int)a0, (const char *)a1, (unsigned int)a2, (uint32_t)a3);
}

SYSCALL_DEFINE(open)
{
	return do_open(AT_FDCWD, (const char *)a0, (unsigned int)a1, (uint32_t)a2);
}

SYSCALL_DEFINE(creat)
{
	return do_open(AT_FDCWD, (const char *)a0, O_CREAT | O_WRONLY | O_TRUNC, (uint32_t)a1);
}

SYSCALL_DEFINE(truncate)
{
	struct inode *ip;
	int err;

	if (a1 < 0)
		return -EINVAL;
	err = user_path_inode(AT_FDCWD, (const char *)a0, LOOKUP_FOLLOW, &ip);
	if (err)
		return err;
	if (S_ISDIR(ip->mode))
		err = -EISDIR;
	else if (!S_ISREG(ip->mode))
		err = -EINVAL;
	else if (!(err = vfs_permission(ip, VFS_MAY_WRITE)))
		err = ramfs_truncate(ip, (uint64_t)a1);
	inode_put(ip);
	return err;
}
