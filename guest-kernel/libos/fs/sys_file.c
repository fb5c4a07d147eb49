/* SPDX-License-Identifier: MIT */
/*
 * Syscalls on open files: read and write in their plain, vector and
 * positioned forms, lseek, sendfile, ioctl, ftruncate, fallocate and the
 * sync family (no-ops: there is no disk).
 */
#include <asm/ioctls.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/uio.h>

#include "vfs_impl.h"
#include "mm.h"
#include "proc.h"
#include "syscall.h"

#define NO_POS (-1LL) /* use and advance the file position */

static struct file *fd_file(long fd)
{
	return fd_get(cur_proc()->files, (int)fd);
}

/* ---------------------------------------------------------------- read, write */

static long do_rw(struct file *f, void *ubuf, size_t n, long long off, bool write)
{
	struct iobuf b = iob_user(ubuf);
	uint64_t pos;
	long r;

	if (off != NO_POS && f->ops->stream)
		return -ESPIPE;
	n = MIN(n, (size_t)VFS_MAX_RW);
	if (!user_range_ok((uint64_t)ubuf, n))
		return -EFAULT;
	pos = off == NO_POS ? f->pos : (uint64_t)off;
	r = write ? file_write(f, &b, n, &pos) : file_read(f, &b, n, &pos);
	if (off == NO_POS && r >= 0)
		f->pos = pos;
	return r;
}

static long rw_fd(long fd, void *ubuf, size_t n, long long off, bool write)
{
	struct file *f = fd_file(fd);

	return f ? do_rw(f, ubuf, n, off, write) : -EBADF;
}

SYSCALL_DEFINE(read)
{
	return rw_fd(a0, (void *)a1, (size_t)a2, NO_POS, false);
}

SYSCALL_DEFINE(write)
{
	return rw_fd(a0, (void *)a1, (size_t)a2, NO_POS, true);
}

SYSCALL_DEFINE(pread64)
{
	return a3 < 0 ? -EINVAL : rw_fd(a0, (void *)a1, (size_t)a2, a3, false);
}

SYSCALL_DEFINE(pwrite64)
{
	return a3 < 0 ? -EINVAL : rw_fd(a0, (void *)a1, (size_t)a2, a3, true);
}

/* The iovec array, checked as Linux does: at most UIO_MAXIOV entries, no
 * length past SSIZE_MAX; the total is cut at VFS_MAX_RW. */
static long iov_load(const struct iovec *uiov, long cnt, struct iovec **out)
{
	struct iovec *iov;
	size_t total = 0;

	if (cnt < 0 || cnt > UIO_MAXIOV)
		return -EINVAL;
	iov = kmalloc((cnt ? cnt : 1) * sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	if (copy_from_user(iov, uiov, cnt * sizeof(*iov))) {
		kfree(iov);
		return -EFAULT;
	}
	for (long i = 0; i < cnt; i++) {
		if ((long)iov[i].iov_len < 0) {
			kfree(iov);
			return -EINVAL;
		}
		iov[i].iov_len = MIN(iov[i].iov_len, VFS_MAX_RW - total);
		total += iov[i].iov_len;
	}
	*out = iov;
	return 0;
}

static long rwv_fd(long fd, const struct iovec *uiov, long cnt, long long off, bool write)
{
	struct file *f = fd_file(fd);
	struct iovec *iov;
	long total = 0, err;

	if (!f)
		return -EBADF;
	err = iov_load(uiov, cnt, &iov);
	if (err)
		return err;
	for (long i = 0; i < cnt; i++) {
		long r;

		if (!iov[i].iov_len)
			continue;
		r = do_rw(f, iov[i].iov_base, iov[i].iov_len, off == NO_POS ? off : off + total,
		          write);
		if (r < 0) {
			total = total ? total : r;
			break;
		}
		total += r;
		if ((size_t)r < iov[i].iov_len)
			break;
	}
	kfree(iov);
	return total;
}

SYSCALL_DEFINE(readv)
{
	return rwv_fd(a0, (const struct iovec *)a1, a2, NO_POS, false);
}

SYSCALL_DEFINE(writev)
{
	return rwv_fd(a0, (const struct iovec *)a1, a2, NO_POS, true);
}

SYSCALL_DEFINE(preadv)
{
	return a3 < 0 ? -EINVAL : rwv_fd(a0, (const struct iovec *)a1, a2, a3, false);
}

SYSCALL_DEFINE(pwritev)
{
	return a3 < 0 ? -EINVAL : rwv_fd(a0, (const struct iovec *)a1, a2, a3, true);
}

/* ---------------------------------------------------------------- lseek */

static long seek_end(struct inode *ip, long long off, int whence, long long *out)
{
	long long size = (long long)ip->size;

	if (S_ISDIR(ip->mode))
		return -EINVAL; /* positions in a directory are not byte counts */
	if (whence == SEEK_END)
		return __builtin_add_overflow(size, off, out) ? -EINVAL : 0;
	if (off < 0 || off >= size)
		return -ENXIO;
	*out = whence == SEEK_DATA ? off : size; /* no holes are reported */
	return 0;
}

SYSCALL_DEFINE(lseek)
{
	struct file *f = fd_file(a0);
	long long off = a1, pos;
	int whence = (int)a2;
	long err = 0;

	if (!f || (f->flags & O_PATH))
		return -EBADF;
	if (f->ops->stream)
		return -ESPIPE;
	if (S_ISCHR(f->ip->mode)) /* /dev/null and the like: always at 0 */
		return f->pos = 0;
	if (whence == SEEK_SET)
		pos = off;
	else if (whence == SEEK_CUR)
		err = __builtin_add_overflow((long long)f->pos, off, &pos) ? -EINVAL : 0;
	else if (whence == SEEK_END || whence == SEEK_DATA || whence == SEEK_HOLE)
		err = seek_end(f->ip, off, whence, &pos);
	else
		err = -EINVAL;
	if (!err && pos < 0)
		err = -EINVAL;
	if (err)
		return err;
	f->pos = pos;
	return pos;
}

/* ---------------------------------------------------------------- sendfile */

static long copy_file(struct file *out, struct file *in, uint64_t *pos, size_t count)
{
	char *buf = kmalloc(PAGE_SIZE);
	struct iobuf b = iob_kernel(buf);
	size_t total = 0;
	long err = 0;

	if (!buf)
		return -ENOMEM;
	while (total < count) {
		uint64_t rpos = *pos;
		long r = file_read(in, &b, MIN(PAGE_SIZE, count - total), &rpos), w;

		if (r <= 0) {
			err = r;
			break;
		}
		w = file_write(out, &b, r, &out->pos);
		if (w <= 0) {
			err = w;
			break;
		}
		*pos += w;
		total += w;
		if (w < r)
			break;
	}
	kfree(buf);
	return total ? (long)total : err;
}

SYSCALL_DEFINE(sendfile)
{
	struct file *out = fd_file(a0), *in = fd_file(a1);
	long long *uoff = (long long *)a2, off;
	uint64_t pos;
	long r;

	if (!out || !in)
		return -EBADF;
	/* Like Linux: no sendfile from a stream (a tty's EOF, a pipe's end
	 * would be lost in the copy loop) or to an O_APPEND file. */
	if ((out->flags & O_APPEND) || in->ops->stream)
		return -EINVAL;
	if (uoff) {
		if (copy_from_user(&off, uoff, sizeof(off)))
			return -EFAULT;
		if (off < 0)
			return -EINVAL;
		if (in->ops->stream)
			return -ESPIPE;
		pos = off;
	} else {
		pos = in->pos;
	}
	r = copy_file(out, in, &pos, MIN((size_t)a3, (size_t)VFS_MAX_RW));
	if (uoff) {
		off = pos;
		if (copy_to_user(uoff, &off, sizeof(off)))
			return -EFAULT;
	} else {
		in->pos = pos;
	}
	return r;
}

/* ---------------------------------------------------------------- ioctl */

static long ioctl_flag(struct file *f, const int *uv, unsigned int flag)
{
	int v;

	if (copy_from_user(&v, uv, sizeof(v)))
		return -EFAULT;
	f->flags = v ? f->flags | flag : f->flags & ~flag;
	return 0;
}

SYSCALL_DEFINE(ioctl)
{
	struct files *t = cur_proc()->files;
	struct file *f = fd_get(t, (int)a0);
	unsigned int cmd = (unsigned int)a1;
	int v;

	if (!f || (f->flags & O_PATH))
		return -EBADF;
	switch (cmd) { /* what Linux does for every file */
	case FIOCLEX:
	case FIONCLEX:
		fd_set_cloexec(t, (int)a0, cmd == FIOCLEX);
		return 0;
	case FIONBIO:
		return ioctl_flag(f, (const int *)a2, O_NONBLOCK);
	case FIOASYNC:
		return ioctl_flag(f, (const int *)a2, FASYNC);
	case FIONREAD:
		if (!S_ISREG(f->ip->mode))
			break;
		v = f->ip->size > f->pos ? (int)MIN(f->ip->size - f->pos, 0x7fffffffULL) : 0;
		return copy_to_user((void *)a2, &v, sizeof(v));
	}
	return f->ops->ioctl ? f->ops->ioctl(f, cmd, (unsigned long)a2) : -ENOTTY;
}

/* ---------------------------------------------------------------- size, sync */

SYSCALL_DEFINE(ftruncate)
{
	struct file *f = fd_file(a0);
	unsigned int acc;

	if (!f || (f->flags & O_PATH))
		return -EBADF;
	acc = f->flags & O_ACCMODE;
	if (a1 < 0 || !S_ISREG(f->ip->mode) || (acc != O_WRONLY && acc != O_RDWR))
		return -EINVAL;
	return ramfs_truncate(f->ip, (uint64_t)a1);
}

/* Space is not reserved ahead: pages still come as bytes are written. */
SYSCALL_DEFINE(fallocate)
{
	struct file *f = fd_file(a0);
	int mode = (int)a1;
	long long off = a2, len = a3, end;
	unsigned int acc;

	if (!f || (f->flags & O_PATH))
		return -EBADF;
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	if (off < 0 || len <= 0)
		return -EINVAL;
	acc = f->flags & O_ACCMODE;
	if (acc != O_WRONLY && acc != O_RDWR)
		return -EBADF;
	if (S_ISDIR(f->ip->mode))
		return -EISDIR;
	if (!S_ISREG(f->ip->mode))
		return -ENODEV;
	if (__builtin_add_overflow(off, len, &end) || (uint64_t)end > RAMFS_MAX_SIZE)
		return -EFBIG;
	if (!(mode & FALLOC_FL_KEEP_SIZE) && (uint64_t)end > f->ip->size)
		return ramfs_truncate(f->ip, end);
	return 0;
}

SYSCALL_DEFINE(fsync)
{
	return fd_file(a0) ? 0 : -EBADF;
}
SYSCALL_ALIAS(fdatasync, fsync);
SYSCALL_ALIAS(syncfs, fsync);

SYSCALL_DEFINE(sync)
{
	return 0;
}

SYSCALL_DEFINE(fadvise64)
{
	struct file *f = fd_file(a0);

	if (!f)
		return -EBADF;
	if (f->ops->stream)
		return -ESPIPE;
	return a3 < 0 || a3 > 5 ? -EINVAL : 0; /* POSIX_FADV_NORMAL .. NOREUSE */
}
