/* SPDX-License-Identifier: MIT */
/*
 * Open files, the descriptor table and the working directory.
 *
 * A struct file is shared by every descriptor dup()ed or inherited from
 * the same open(), so they share the offset and status flags as in Linux;
 * close-on-exec belongs to the descriptor. The table starts small and
 * doubles up to FILES_MAX.
 */
#include <linux/poll.h>
#include <linux/resource.h>

#include <linux/inotify.h>

#include "proc.h"
#include "vfs_impl.h"
#include "mm.h"

#define FILES_FIRST_CAP 32

struct files {
	int refs;
	int cap;
	struct file **fd;
	uint64_t cloexec[FILES_MAX / 64];
};

/* O_PATH files: a place in the tree, no I/O. */
static const struct file_ops path_ops;

/* ---------------------------------------------------------------- open files */

struct file *file_alloc(struct inode *ip, const struct file_ops *ops, unsigned int flags,
                        void *priv)
{
	struct file *f = kzalloc(sizeof(*f));

	if (!f)
		return NULL;
	f->refs = 1;
	f->flags = flags;
	f->ip = ip;
	f->ops = ops;
	f->priv = priv;
	return f;
}

void file_get(struct file *f)
{
	f->refs++;
}

void file_put(struct file *f)
{
	if (--f->refs)
		return;
	if (f->ops->release)
		f->ops->release(f);
	if (S_ISREG(f->ip->mode) && !(f->flags & O_PATH))
		inotify_event(
		    f->ip, (f->flags & O_ACCMODE) == O_RDONLY ? IN_CLOSE_NOWRITE : IN_CLOSE_WRITE,
		    0, NULL, 0);
	inode_put(f->ip);
	kfree(f);
}

struct inode *file_inode(const struct file *f)
{
	return f->ip;
}

static const struct file_ops *open_ops(struct inode *ip, unsigned int flags, int *err)
{
	unsigned int acc = flags & O_ACCMODE;

	*err = 0;
	if ((flags & O_DIRECTORY) && !S_ISDIR(ip->mode))
		*err = -ENOTDIR;
	else if (flags & O_PATH)
		return &path_ops;
	else if (S_ISDIR(ip->mode) && (acc != O_RDONLY || (flags & (O_CREAT | O_TRUNC))))
		*err = -EISDIR;
	else if (S_ISDIR(ip->mode))
		return &ramfs_dir_ops;
	else if (S_ISREG(ip->mode))
		return &ramfs_file_ops;
	else if (S_ISLNK(ip->mode))
		*err = -ELOOP;
	else if (S_ISCHR(ip->mode) && ip->dev)
		return ip->dev;
	else
		*err = -ENXIO;
	return NULL;
}

int vfs_open_inode(struct inode *ip, unsigned int flags, struct file **out)
{
	const struct file_ops *ops;
	unsigned int oflags = flags;
	struct file *f;
	int err;

	ops = open_ops(ip, flags, &err);
	if (!ops)
		return err;
	/* Linux truncates even for O_RDONLY|O_TRUNC. */
	if (S_ISREG(ip->mode) && (flags & O_TRUNC) && !(flags & O_PATH) && ip->size) {
		err = ramfs_truncate(ip, 0);
		if (err)
			return err;
	}
	if (flags & O_PATH)
		flags &= O_PATH;
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_CLOEXEC);
	f = file_alloc(ip, ops, flags | O_LARGEFILE, NULL);
	if (!f)
		return -ENOMEM;
	inode_get(ip);
	if (ip->synth && !S_ISDIR(ip->mode) && !(flags & O_PATH)) {
		err = ip->synth->ops->open(f);
		if (err) {
			file_put(f);
			return err;
		}
	}
	if (ops->open && (err = ops->open(f, oflags))) {
		file_put(f);
		return err;
	}
	*out = f;
	return 0;
}

static bool can_read(const struct file *f)
{
	unsigned int acc = f->flags & O_ACCMODE;

	return !(f->flags & O_PATH) && (acc == O_RDONLY || acc == O_RDWR);
}

static bool can_write(const struct file *f)
{
	unsigned int acc = f->flags & O_ACCMODE;

	return !(f->flags & O_PATH) && (acc == O_WRONLY || acc == O_RDWR);
}

long file_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	if (!can_read(f))
		return -EBADF;
	if (!f->ops->read)
		return -EINVAL;
	if (S_ISDIR(f->ip->mode))
		return -EISDIR;
	if (n == 0)
		return 0;
	return f->ops->read(f, b, MIN(n, (size_t)VFS_MAX_RW), pos);
}

long file_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	if (!can_write(f))
		return -EBADF;
	if (!f->ops->write)
		return -EINVAL;
	if (n == 0)
		return 0;
	return f->ops->write(f, b, MIN(n, (size_t)VFS_MAX_RW), pos);
}

unsigned int file_poll(struct file *f)
{
	if (f->ops->poll)
		return f->ops->poll(f);
	return POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
}

/* ---------------------------------------------------------------- descriptors */

struct files *files_create(void)
{
	struct files *t = kzalloc(sizeof(*t));

	if (t)
		t->refs = 1;
	return t;
}

/* Make room for descriptor fd (< FILES_MAX). */
static int files_grow(struct files *t, int fd)
{
	int cap = t->cap ? t->cap : FILES_FIRST_CAP;
	struct file **n;

	if (fd < t->cap)
		return 0;
	while (cap <= fd)
		cap *= 2;
	cap = MIN(cap, FILES_MAX);
	n = kzalloc(cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	if (t->cap)
		memcpy(n, t->fd, t->cap * sizeof(*n));
	kfree(t->fd);
	t->fd = n;
	t->cap = cap;
	return 0;
}

struct files *files_dup(struct files *t)
{
	struct files *n = files_create();

	if (!n || (t->cap && files_grow(n, t->cap - 1))) {
		kfree(n);
		return NULL;
	}
	for (int fd = 0; fd < t->cap; fd++) {
		n->fd[fd] = t->fd[fd];
		if (n->fd[fd])
			file_get(n->fd[fd]);
	}
	memcpy(n->cloexec, t->cloexec, sizeof(n->cloexec));
	return n;
}

void files_get(struct files *t)
{
	t->refs++;
}

void files_put(struct files *t)
{
	if (--t->refs)
		return;
	for (int fd = 0; fd < t->cap; fd++)
		if (t->fd[fd])
			file_put(t->fd[fd]);
	kfree(t->fd);
	kfree(t);
}

void files_close_on_exec(struct files *t)
{
	for (int fd = 0; fd < t->cap; fd++)
		if (t->fd[fd] && fd_cloexec(t, fd))
			fd_close(t, fd);
}

int files_open_console(struct files *t)
{
	struct inode *ip;
	struct file *f;
	int err = vfs_lookup_at(NULL, "/dev/console", true, &ip);

	if (!err && (!S_ISCHR(ip->mode) || ip->dev != &devfs_console_ops)) {
		inode_put(ip);
		err = -ENXIO;
	}
	if (err) { /* the initramfs replaced /dev/console: use a nameless one */
		ip = vfs_inode_anon(S_IFCHR | 0600);
		if (!ip)
			return -ENOMEM;
		ip->rdev = DEVFS_CONSOLE;
		ip->dev = &devfs_console_ops;
	}
	err = vfs_open_inode(ip, O_RDWR, &f);
	inode_put(ip);
	if (err)
		return err;
	for (int fd = 0; fd < 3 && !err; fd++) {
		file_get(f);
		err = fd_install_at(t, fd, f, false);
		if (err)
			file_put(f);
	}
	file_put(f);
	return err;
}

struct file *fd_get(struct files *t, int fd)
{
	return fd >= 0 && fd < t->cap ? t->fd[fd] : NULL;
}

bool fd_cloexec(struct files *t, int fd)
{
	return t->cloexec[fd / 64] & (1ULL << (fd % 64));
}

void fd_set_cloexec(struct files *t, int fd, bool on)
{
	if (on)
		t->cloexec[fd / 64] |= 1ULL << (fd % 64);
	else
		t->cloexec[fd / 64] &= ~(1ULL << (fd % 64));
}

int fd_limit(void)
{
	uint64_t lim = cur_proc()->rlim[RLIMIT_NOFILE].cur;

	return lim < FILES_MAX ? (int)lim : FILES_MAX;
}

int fd_alloc(struct files *t, struct file *f, int min, bool cloexec)
{
	int fd = min, err, lim = fd_limit();

	if (min < 0 || min >= FILES_MAX)
		return -EINVAL;
	while (fd < t->cap && t->fd[fd])
		fd++;
	if (fd >= lim)
		return -EMFILE;
	err = files_grow(t, fd);
	if (err)
		return err;
	t->fd[fd] = f;
	fd_set_cloexec(t, fd, cloexec);
	return fd;
}

int fd_install_at(struct files *t, int fd, struct file *f, bool cloexec)
{
	struct file *old;
	int err;

	if (fd < 0 || fd >= FILES_MAX)
		return -EBADF;
	err = files_grow(t, fd);
	if (err)
		return err;
	old = t->fd[fd];
	t->fd[fd] = f;
	fd_set_cloexec(t, fd, cloexec);
	if (old)
		file_put(old);
	return 0;
}

int fd_close(struct files *t, int fd)
{
	struct file *f = fd_get(t, fd);

	if (!f)
		return -EBADF;
	t->fd[fd] = NULL;
	fd_set_cloexec(t, fd, false);
	file_put(f);
	return 0;
}

/* ---------------------------------------------------------------- cwd */

struct fs_ctx *fs_ctx_create(void)
{
	struct fs_ctx *fs = kzalloc(sizeof(*fs));

	if (!fs)
		return NULL;
	fs->refs = 1;
	fs->root = fs->cwd = vfs_root();
	inode_get(fs->root);
	inode_get(fs->cwd);
	fs->umask = 022;
	return fs;
}

struct fs_ctx *fs_ctx_dup(struct fs_ctx *fs)
{
	struct fs_ctx *n = kzalloc(sizeof(*n));

	if (!n)
		return NULL;
	*n = *fs;
	n->refs = 1;
	inode_get(n->root);
	inode_get(n->cwd);
	return n;
}

void fs_ctx_get(struct fs_ctx *fs)
{
	fs->refs++;
}

void fs_ctx_put(struct fs_ctx *fs)
{
	if (--fs->refs)
		return;
	inode_put(fs->cwd);
	inode_put(fs->root);
	kfree(fs);
}
