/* SPDX-License-Identifier: MIT */
/*
 * Syscalls on the descriptor table: close, close_range, dup, dup2, dup3,
 * fcntl, flock. Locks always succeed: one guest runs one program tree
 * against its own private files, and nothing else can hold a lock.
 */
#include <linux/close_range.h>

#include "vfs_impl.h"
#include "proc.h"
#include "syscall.h"

#define LOCK_SH 1
#define LOCK_EX 2
#define LOCK_NB 4
#define LOCK_UN 8

SYSCALL_DEFINE(close)
{
	return fd_close(cur_proc()->files, (int)a0);
}

SYSCALL_DEFINE(close_range)
{
	struct proc *p = cur_proc();
	unsigned int first = (unsigned int)a0, last = (unsigned int)a1, flags = (unsigned int)a2;

	if ((flags & ~(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)) || first > last)
		return -EINVAL;
	if (flags & CLOSE_RANGE_UNSHARE) {
		struct files *copy = files_dup(p->files);

		if (!copy)
			return -ENOMEM;
		files_put(p->files);
		p->files = copy;
	}
	for (unsigned int fd = first; fd <= last && fd < FILES_MAX; fd++) {
		if (!fd_get(p->files, (int)fd))
			continue;
		if (flags & CLOSE_RANGE_CLOEXEC)
			fd_set_cloexec(p->files, (int)fd, true);
		else
			fd_close(p->files, (int)fd);
	}
	return 0;
}

static long dup_from(int oldfd, int min, bool cloexec)
{
	struct files *t = cur_proc()->files;
	struct file *f = fd_get(t, oldfd);
	int fd;

	if (!f)
		return -EBADF;
	file_get(f);
	fd = fd_alloc(t, f, min, cloexec);
	if (fd < 0)
		file_put(f);
	return fd;
}

SYSCALL_DEFINE(dup)
{
	return dup_from((int)a0, 0, false);
}

static long dup_to(int oldfd, int newfd, unsigned int flags)
{
	struct files *t = cur_proc()->files;
	struct file *f = fd_get(t, oldfd);
	int err;

	if (flags & ~O_CLOEXEC)
		return -EINVAL;
	if (newfd < 0 || newfd >= fd_limit() || !f)
		return -EBADF;
	if (oldfd == newfd)
		return -EINVAL;
	file_get(f);
	err = fd_install_at(t, newfd, f, flags & O_CLOEXEC);
	if (err)
		file_put(f);
	return err ? err : newfd;
}

SYSCALL_DEFINE(dup2)
{
	if (a0 == a1) /* unlike dup3, a valid no-op */
		return fd_get(cur_proc()->files, (int)a0) ? a1 : -EBADF;
	return dup_to((int)a0, (int)a1, 0);
}

SYSCALL_DEFINE(dup3)
{
	return dup_to((int)a0, (int)a1, (unsigned int)a2);
}

/* Locks are never held by anyone else: GETLK reports the range free. */
static long fcntl_lock(unsigned int cmd, struct flock *ul)
{
	struct flock fl;

	if (copy_from_user(&fl, ul, sizeof(fl)))
		return -EFAULT;
	if (fl.l_type != F_RDLCK && fl.l_type != F_WRLCK && fl.l_type != F_UNLCK)
		return -EINVAL;
	if (cmd != F_GETLK && cmd != F_OFD_GETLK)
		return 0;
	fl.l_type = F_UNLCK;
	return copy_to_user(ul, &fl, sizeof(fl));
}

#define SETFL_MASK (O_APPEND | O_NONBLOCK | FASYNC | O_DIRECT | O_NOATIME)

SYSCALL_DEFINE(fcntl)
{
	struct files *t = cur_proc()->files;
	int fd = (int)a0;
	unsigned int cmd = (unsigned int)a1;
	struct file *f = fd_get(t, fd);
	long r;

	if (!f)
		return -EBADF;
	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		if (a2 < 0 || a2 >= fd_limit())
			return -EINVAL;
		return dup_from(fd, (int)a2, cmd == F_DUPFD_CLOEXEC);
	case F_GETFD:
		return fd_cloexec(t, fd) ? FD_CLOEXEC : 0;
	case F_SETFD:
		fd_set_cloexec(t, fd, a2 & FD_CLOEXEC);
		return 0;
	case F_GETFL:
		return f->flags;
	}
	if (f->flags & O_PATH) /* only the above work on O_PATH files */
		return -EBADF;
	switch (cmd) {
	case F_SETFL:
		f->flags = (f->flags & ~SETFL_MASK) | ((unsigned int)a2 & SETFL_MASK);
		return 0;
	case F_GETLK:
	case F_SETLK:
	case F_SETLKW:
	case F_OFD_GETLK:
	case F_OFD_SETLK:
	case F_OFD_SETLKW:
		return fcntl_lock(cmd, (struct flock *)a2);
	case F_GETOWN:
	case F_SETOWN:
		return 0;
	case F_GET_SEALS:
		return S_ISREG(vfs_inode_mode(file_inode(f))) ? (long)vfs_inode_seals(file_inode(f))
		                                              : -EINVAL;
	case F_ADD_SEALS:
		if ((f->flags & O_ACCMODE) == O_RDONLY)
			return -EPERM;
		return vfs_inode_add_seals(file_inode(f), (uint32_t)a2);
	case F_GETPIPE_SZ: /* for pipes, whose ops take them as ioctls */
	case F_SETPIPE_SZ:
		r = f->ops->ioctl ? f->ops->ioctl(f, cmd, (unsigned long)a2) : -ENOTTY;
		return r == -ENOTTY ? -EBADF : r;
	default:
		return -EINVAL;
	}
}

SYSCALL_DEFINE(flock)
{
	struct file *f = fd_get(cur_proc()->files, (int)a0);
	int op = (int)a1 & ~LOCK_NB;

	if (!f || (f->flags & O_PATH))
		return -EBADF;
	return op == LOCK_SH || op == LOCK_EX || op == LOCK_UN ? 0 : -EINVAL;
}
