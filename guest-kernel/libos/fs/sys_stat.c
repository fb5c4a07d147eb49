/* SPDX-License-Identifier: MIT */
/*
 * Syscalls that read or set attributes: the stat family, statx, access,
 * chmod, chown, utimensat, statfs, the xattr calls (not supported, as on a
 * file system without them), and getdents64.
 */
#include <asm/stat.h>
#include <asm/statfs.h>

#include "vfs_impl.h"
#include "mm.h"
#include "proc.h"
#include "syscall.h"

#define NSEC_PER_SEC 1000000000LL
#define TMPFS_MAGIC  0x01021994
#define ST_VALID     0x0020
#define UTIME_NOW    ((1L << 30) - 1)
#define UTIME_OMIT   ((1L << 30) - 2)
#define F_OK         0
#define X_OK         1
#define W_OK         2
#define R_OK         4

struct ts {
	long long sec, nsec;
};

static struct ts ns_to_ts(int64_t ns)
{
	struct ts t = {ns / NSEC_PER_SEC, ns % NSEC_PER_SEC};

	if (t.nsec < 0) {
		t.sec--;
		t.nsec += NSEC_PER_SEC;
	}
	return t;
}

static uint64_t stat_size(const struct inode *ip)
{
	if (S_ISDIR(ip->mode)) /* as tmpfs: 20 bytes a name, with "." and ".." */
		return (ip->dir.count + 2) * 20ULL;
	return S_ISREG(ip->mode) || S_ISLNK(ip->mode) ? ip->size : 0;
}

/* The inode a stat-like call names: AT_EMPTY_PATH with a NULL path is
 * allowed as for fstatat since Linux 6.11. */
static int stat_target(int dirfd, const char *upath, int flags, struct inode **out)
{
	unsigned int lf = (flags & AT_SYMLINK_NOFOLLOW ? 0 : LOOKUP_FOLLOW) |
	                  (flags & AT_EMPTY_PATH ? LOOKUP_EMPTY : 0);

	if (!upath && (flags & AT_EMPTY_PATH))
		return dirfd_inode(dirfd, out);
	return user_path_inode(dirfd, upath, lf, out);
}

/* ---------------------------------------------------------------- stat */

/* A synthesized directory (procfs) counts its subdirectories once brought
 * up to date: 2 + threads for /proc/<pid>/task, which Chromium reads to
 * know whether it is single-threaded (it must be to fork its zygote). */
static uint32_t stat_nlink(struct inode *ip)
{
	if (S_ISDIR(ip->mode) && ip->synth)
		ip->synth->ops->refresh(ip, NULL, 0);
	return inode_nlink(ip);
}

static long put_stat(struct inode *ip, struct stat *ust)
{
	struct ts a = ns_to_ts(ip->atime), m = ns_to_ts(ip->mtime), c = ns_to_ts(ip->ctime);
	struct stat st = {
	    .st_dev = VFS_DEV,
	    .st_ino = ip->ino,
	    .st_nlink = stat_nlink(ip),
	    .st_mode = ip->mode,
	    .st_uid = ip->uid,
	    .st_gid = ip->gid,
	    .st_rdev = ip->rdev,
	    .st_size = stat_size(ip),
	    .st_blksize = PAGE_SIZE,
	    .st_blocks = inode_blocks(ip),
	    .st_atime = a.sec,
	    .st_atime_nsec = a.nsec,
	    .st_mtime = m.sec,
	    .st_mtime_nsec = m.nsec,
	    .st_ctime = c.sec,
	    .st_ctime_nsec = c.nsec,
	};

	return copy_to_user(ust, &st, sizeof(st));
}

static long do_fstatat(int dirfd, const char *upath, struct stat *ust, int flags)
{
	struct inode *ip;
	long err;

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT))
		return -EINVAL;
	err = stat_target(dirfd, upath, flags, &ip);
	if (err)
		return err;
	err = put_stat(ip, ust);
	inode_put(ip);
	return err;
}

SYSCALL_DEFINE(newfstatat)
{
	return do_fstatat((int)a0, (const char *)a1, (struct stat *)a2, (int)a3);
}

SYSCALL_DEFINE(stat)
{
	return do_fstatat(AT_FDCWD, (const char *)a0, (struct stat *)a1, 0);
}

SYSCALL_DEFINE(lstat)
{
	return do_fstatat(AT_FDCWD, (const char *)a0, (struct stat *)a1, AT_SYMLINK_NOFOLLOW);
}

SYSCALL_DEFINE(fstat)
{
	struct file *f = fd_get(cur_proc()->files, (int)a0);

	return f ? put_stat(f->ip, (struct stat *)a1) : -EBADF;
}

static struct statx_timestamp sx_time(int64_t ns)
{
	struct ts t = ns_to_ts(ns);

	return (struct statx_timestamp){.tv_sec = t.sec, .tv_nsec = (uint32_t)t.nsec};
}

static long put_statx(struct inode *ip, struct statx *usx)
{
	struct statx sx = {
	    .stx_mask = STATX_BASIC_STATS | STATX_BTIME,
	    .stx_blksize = PAGE_SIZE,
	    .stx_nlink = stat_nlink(ip),
	    .stx_uid = ip->uid,
	    .stx_gid = ip->gid,
	    .stx_mode = (uint16_t)ip->mode,
	    .stx_ino = ip->ino,
	    .stx_size = stat_size(ip),
	    .stx_blocks = inode_blocks(ip),
	    .stx_atime = sx_time(ip->atime),
	    .stx_btime = sx_time(ip->btime),
	    .stx_ctime = sx_time(ip->ctime),
	    .stx_mtime = sx_time(ip->mtime),
	    .stx_rdev_major = VFS_MAJOR(ip->rdev),
	    .stx_rdev_minor = VFS_MINOR(ip->rdev),
	    .stx_dev_major = VFS_MAJOR(VFS_DEV),
	    .stx_dev_minor = VFS_MINOR(VFS_DEV),
	};

	return copy_to_user(usx, &sx, sizeof(sx));
}

SYSCALL_DEFINE(statx)
{
	int flags = (int)a2;
	struct inode *ip;
	long err;

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE))
		return -EINVAL;
	if ((flags & AT_STATX_SYNC_TYPE) == AT_STATX_SYNC_TYPE ||
	    ((unsigned int)a3 & STATX__RESERVED))
		return -EINVAL;
	err = stat_target((int)a0, (const char *)a1, flags, &ip);
	if (err)
		return err;
	err = put_statx(ip, (struct statx *)a4);
	inode_put(ip);
	return err;
}

/* ---------------------------------------------------------------- access, chmod, chown */

/* access() asks as the real ids (AT_EACCESS: the effective ones). */
static long do_access(int dirfd, const char *upath, int mode, int flags)
{
	struct cred c = *cur_cred();
	struct inode *ip;
	long err;

	if (mode & ~(R_OK | W_OK | X_OK))
		return -EINVAL;
	if (flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	err = stat_target(dirfd, upath, flags, &ip);
	if (err)
		return err;
	if (!(flags & AT_EACCESS)) {
		c.u.fs = c.u.real;
		c.g.fs = c.g.real;
	}
	/* (R_OK, W_OK, X_OK are the VFS_MAY_* bits) */
	err = vfs_permission_as(&c, ip, mode);
	inode_put(ip);
	return err;
}

SYSCALL_DEFINE(faccessat2)
{
	return do_access((int)a0, (const char *)a1, (int)a2, (int)a3);
}

SYSCALL_DEFINE(faccessat)
{
	return do_access((int)a0, (const char *)a1, (int)a2, 0);
}

SYSCALL_DEFINE(access)
{
	return do_access(AT_FDCWD, (const char *)a0, (int)a1, 0);
}

/* The owner or root only; like Linux, set-group-ID is dropped from a
 * file whose group the caller is not in. */
static int set_mode(struct inode *ip, uint32_t mode)
{
	const struct cred *c = cur_cred();

	if (!vfs_owner_or_root(ip))
		return -EPERM;
	if (c->u.fs && !S_ISDIR(ip->mode) && !cred_in_group(c, ip->gid))
		mode &= ~S_ISGID;
	ip->mode = (ip->mode & S_IFMT) | (mode & 07777);
	inode_touch(ip, false);
	return 0;
}

/* The file of a descriptor for f*() calls that O_PATH does not allow. */
static struct inode *fd_inode(long fd)
{
	struct file *f = fd_get(cur_proc()->files, (int)fd);

	return f && !(f->flags & O_PATH) ? f->ip : NULL;
}

SYSCALL_DEFINE(fchmod)
{
	struct inode *ip = fd_inode(a0);

	if (!ip)
		return -EBADF;
	return set_mode(ip, (uint32_t)a1);
}

static long do_chmod(int dirfd, const char *upath, uint32_t mode)
{
	struct inode *ip;
	int err = user_path_inode(dirfd, upath, LOOKUP_FOLLOW, &ip);

	if (err)
		return err;
	err = set_mode(ip, mode);
	inode_put(ip);
	return err;
}

SYSCALL_DEFINE(fchmodat)
{
	return do_chmod((int)a0, (const char *)a1, (uint32_t)a2);
}

SYSCALL_DEFINE(chmod)
{
	return do_chmod(AT_FDCWD, (const char *)a0, (uint32_t)a1);
}

/* -1 leaves an id as it is. Root may give a file to anyone; its owner may
 * only change its group, to one of its own groups. Like Linux, a chown of
 * a non-directory drops set-user-ID and (for group-executable files)
 * set-group-ID. */
static int set_owner(struct inode *ip, uint32_t uid, uint32_t gid)
{
	const struct cred *c = cur_cred();

	if (c->u.fs && (!vfs_owner_or_root(ip) || (uid != (uint32_t)-1 && uid != ip->uid) ||
	                (gid != (uint32_t)-1 && gid != ip->gid && !cred_in_group(c, gid))))
		return -EPERM;
	if (uid != (uint32_t)-1)
		ip->uid = uid;
	if (gid != (uint32_t)-1)
		ip->gid = gid;
	if (!S_ISDIR(ip->mode) && (uid != (uint32_t)-1 || gid != (uint32_t)-1)) {
		ip->mode &= ~S_ISUID;
		if (ip->mode & S_IXGRP)
			ip->mode &= ~S_ISGID;
	}
	inode_touch(ip, false);
	return 0;
}

static long do_chown(int dirfd, const char *upath, uint32_t uid, uint32_t gid, int flags)
{
	struct inode *ip;
	long err;

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	err = user_path_inode(dirfd, upath,
	                      (flags & AT_SYMLINK_NOFOLLOW ? 0 : LOOKUP_FOLLOW) |
	                          (flags & AT_EMPTY_PATH ? LOOKUP_EMPTY : 0),
	                      &ip);
	if (err)
		return err;
	err = set_owner(ip, uid, gid);
	inode_put(ip);
	return err;
}

SYSCALL_DEFINE(fchownat)
{
	return do_chown((int)a0, (const char *)a1, (uint32_t)a2, (uint32_t)a3, (int)a4);
}

SYSCALL_DEFINE(chown)
{
	return do_chown(AT_FDCWD, (const char *)a0, (uint32_t)a1, (uint32_t)a2, 0);
}

SYSCALL_DEFINE(lchown)
{
	return do_chown(AT_FDCWD, (const char *)a0, (uint32_t)a1, (uint32_t)a2,
	                AT_SYMLINK_NOFOLLOW);
}

SYSCALL_DEFINE(fchown)
{
	struct inode *ip = fd_inode(a0);

	if (!ip)
		return -EBADF;
	return set_owner(ip, (uint32_t)a1, (uint32_t)a2);
}

/* ---------------------------------------------------------------- utimensat */

/* A time as utimensat gives it, to ns (clamped to what 64 bits of ns hold:
 * the years 1678 to 2262). */
static int64_t ts_to_ns(struct ts t)
{
	const long long lim = INT64_MAX / NSEC_PER_SEC - 1;

	if (t.sec > lim)
		return INT64_MAX;
	if (t.sec < -lim)
		return INT64_MIN;
	return t.sec * NSEC_PER_SEC + t.nsec;
}

static bool ts_ok(const struct ts *t)
{
	return t->nsec == UTIME_NOW || t->nsec == UTIME_OMIT ||
	       (t->nsec >= 0 && t->nsec < NSEC_PER_SEC);
}

/* Both times now: the owner, root, or whoever may write the file; any
 * other time: the owner or root. */
static int times_perm(const struct inode *ip, const struct ts t[2])
{
	bool now = (t[0].nsec == UTIME_NOW || t[0].nsec == UTIME_OMIT) &&
	           (t[1].nsec == UTIME_NOW || t[1].nsec == UTIME_OMIT);

	if (vfs_owner_or_root(ip))
		return 0;
	return now && !vfs_permission(ip, VFS_MAY_WRITE) ? 0 : now ? -EACCES : -EPERM;
}

static void set_times(struct inode *ip, const struct ts t[2])
{
	int64_t now = vfs_now();

	if (t[0].nsec != UTIME_OMIT)
		ip->atime = t[0].nsec == UTIME_NOW ? now : ts_to_ns(t[0]);
	if (t[1].nsec != UTIME_OMIT)
		ip->mtime = t[1].nsec == UTIME_NOW ? now : ts_to_ns(t[1]);
	ip->ctime = now;
	vfs_chg_mark(ip, KILN_CHG_SELF);
}

SYSCALL_DEFINE(utimensat)
{
	struct ts t[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
	const char *upath = (const char *)a1;
	int flags = (int)a3;
	struct inode *ip;
	long err;

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	if (a2 && copy_from_user(t, (const void *)a2, sizeof(t)))
		return -EFAULT;
	if (!ts_ok(&t[0]) || !ts_ok(&t[1]))
		return -EINVAL;
	if (!upath && (flags & AT_SYMLINK_NOFOLLOW))
		return -EINVAL;
	if (!upath && (int)a0 == AT_FDCWD)
		return -EFAULT;
	if (!upath) /* futimens() */
		err = dirfd_inode((int)a0, &ip);
	else
		err = stat_target((int)a0, upath, flags, &ip);
	if (err)
		return err;
	if (t[0].nsec != UTIME_OMIT || t[1].nsec != UTIME_OMIT) {
		err = times_perm(ip, t);
		if (!err)
			set_times(ip, t);
	}
	inode_put(ip);
	return err;
}

/* ---------------------------------------------------------------- statfs */

static long put_statfs(struct statfs *ubuf)
{
	struct statfs sf = {
	    .f_type = TMPFS_MAGIC,
	    .f_bsize = PAGE_SIZE,
	    .f_blocks = pmem_total_pages(),
	    .f_bfree = pmem_free_pages(),
	    .f_bavail = pmem_free_pages(),
	    .f_files = pmem_total_pages(),
	    .f_ffree = pmem_free_pages(),
	    .f_namelen = VFS_NAME_MAX,
	    .f_frsize = PAGE_SIZE,
	    .f_flags = ST_VALID,
	};

	return copy_to_user(ubuf, &sf, sizeof(sf));
}

SYSCALL_DEFINE(statfs)
{
	struct inode *ip;
	int err = user_path_inode(AT_FDCWD, (const char *)a0, LOOKUP_FOLLOW, &ip);

	if (err)
		return err;
	inode_put(ip);
	return put_statfs((struct statfs *)a1);
}

SYSCALL_DEFINE(fstatfs)
{
	return fd_get(cur_proc()->files, (int)a0) ? put_statfs((struct statfs *)a1) : -EBADF;
}

/* ---------------------------------------------------------------- xattr */

SYSCALL_DEFINE(getxattr)
{
	return -EOPNOTSUPP;
}
SYSCALL_ALIAS(lgetxattr, getxattr);
SYSCALL_ALIAS(fgetxattr, getxattr);
SYSCALL_ALIAS(setxattr, getxattr);
SYSCALL_ALIAS(lsetxattr, getxattr);
SYSCALL_ALIAS(fsetxattr, getxattr);
SYSCALL_ALIAS(listxattr, getxattr);
SYSCALL_ALIAS(llistxattr, getxattr);
SYSCALL_ALIAS(flistxattr, getxattr);
SYSCALL_ALIAS(removexattr, getxattr);
SYSCALL_ALIAS(lremovexattr, getxattr);
SYSCALL_ALIAS(fremovexattr, getxattr);

/* ---------------------------------------------------------------- getdents64 */

struct dirent_hdr { /* struct linux_dirent64 less its name */
	uint64_t d_ino;
	int64_t d_off;
	uint16_t d_reclen;
	uint8_t d_type;
} __attribute__((packed));

/* Put one entry at ubuf: its length, -EINVAL when it does not fit in room,
 * or -EFAULT. next is the position after it (d_off). */
static long put_dirent(char *ubuf, size_t room, const char *name, size_t len,
                       const struct inode *ip, uint64_t next)
{
	char rec[sizeof(struct dirent_hdr) + VFS_NAME_MAX + 1 + 8];
	size_t reclen = ALIGN_UP(sizeof(struct dirent_hdr) + len + 1, 8);
	struct dirent_hdr h = {ip->ino, (int64_t)next, (uint16_t)reclen, (ip->mode >> 12) & 017};

	if (reclen > room)
		return -EINVAL;
	memset(rec, 0, reclen);
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + sizeof(h), name, len);
	return copy_to_user(ubuf, rec, reclen) ? -EFAULT : (long)reclen;
}

/* Positions: 0 is ".", 1 is "..", n >= 2 the first entry with seq >= n. */
SYSCALL_DEFINE(getdents64)
{
	struct file *f = fd_get(cur_proc()->files, (int)a0);
	char *ubuf = (char *)a1;
	size_t count = (unsigned int)a2, done = 0;
	struct inode *dir;
	long r;

	if (!f || (f->flags & O_PATH))
		return -EBADF;
	dir = f->ip;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (!user_range_ok((uint64_t)ubuf, count))
		return -EFAULT;
	if (!dir->nlink) /* removed: not even "." and ".." */
		return 0;
	for (; f->pos < 2; f->pos++, done += r) {
		const struct inode *ip = f->pos == 0       ? dir
		                         : dir->dir.parent ? dir->dir.parent
		                                           : dir;

		/* "." is the first f->pos + 1 bytes of ".." */
		r = put_dirent(ubuf + done, count - done, "..", f->pos + 1, ip, f->pos + 1);
		if (r < 0)
			return done ? (long)done : r;
	}
	for (struct dentry *de = ramfs_dir_from(dir, f->pos); de; de = de->next, done += r) {
		r = put_dirent(ubuf + done, count - done, de->name, de->namelen, de->ip,
		               de->seq + 1);
		if (r < 0)
			return done ? (long)done : r;
		f->pos = de->seq + 1;
	}
	return done;
}
