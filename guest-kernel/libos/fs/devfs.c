/* SPDX-License-Identifier: MIT */
/*
 * Device files: the memory devices (null, zero, full, random, urandom) and
 * the terminals: /dev/console (the virtio console's tty), /dev/tty (the
 * caller's controlling terminal), /dev/ptmx and /dev/pts (tty.c, pty.c).
 */
#include "vfs_impl.h"
#include "console.h"
#include "tty.h"

#if __has_include("rng.h")
#include "rng.h"
#else
long rng_read(void *buf, size_t n);
#endif

/* ---------------------------------------------------------------- memory devices */

static long null_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	return 0;
}

static long null_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	return n;
}

static long zero_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	return iob_zero(b, 0, n) ? -EFAULT : (long)n;
}

static long full_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	return -ENOSPC;
}

static long random_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	uint8_t buf[256];
	size_t done = 0;
	long r = 0;

	while (done < n) {
		r = rng_read(buf, MIN(sizeof(buf), n - done));
		if (r <= 0)
			break;
		if (iob_to(b, done, buf, r)) {
			r = -EFAULT;
			break;
		}
		done += r;
	}
	memset(buf, 0, sizeof(buf));
	if (done)
		return done;
	return r < 0 ? r : -EIO;
}

static const struct file_ops null_ops = {.read = null_read, .write = null_write};
static const struct file_ops zero_ops = {.read = zero_read, .write = null_write};
static const struct file_ops full_ops = {.read = zero_read, .write = full_write};
static const struct file_ops random_ops = {.read = random_read, .write = null_write};

bool vfs_file_is_zero(const struct file *f)
{
	return f->ops == &zero_ops;
}

/* ---------------------------------------------------------------- console */

static int console_open(struct file *f, unsigned int oflags)
{
	struct tty *tty = console_tty();

	return tty ? tty_open(tty, f, oflags) : -ENXIO;
}

const struct file_ops devfs_console_ops = {.open = console_open, .stream = true};

/* ---------------------------------------------------------------- /dev */

static const struct devnode {
	const char *name;
	uint32_t major, minor, perm;
	const struct file_ops *ops;
} devnodes[] = {
    {"null", 1, 3, 0666, &null_ops},
    {"zero", 1, 5, 0666, &zero_ops},
    {"full", 1, 7, 0666, &full_ops},
    {"random", 1, 8, 0666, &random_ops},
    {"urandom", 1, 9, 0666, &random_ops},
    {"tty", 5, 0, 0666, &tty_ctty_dev_ops},
    {"console", 5, 1, 0600, &devfs_console_ops},
    {"ptmx", 5, 2, 0666, &pty_ptmx_ops},
};

/* What udev and devtmpfs systems have; /proc/self/fd is someone else's. */
static const struct {
	const char *name, *target;
} devlinks[] = {
    {"fd", "/proc/self/fd"},
    {"stdin", "/proc/self/fd/0"},
    {"stdout", "/proc/self/fd/1"},
    {"stderr", "/proc/self/fd/2"},
};

const struct file_ops *devfs_driver(uint64_t rdev)
{
	for (size_t i = 0; i < ARRAY_SIZE(devnodes); i++)
		if (VFS_MKDEV(devnodes[i].major, devnodes[i].minor) == rdev)
			return devnodes[i].ops;
	if (VFS_MAJOR(rdev) >= 136 && VFS_MAJOR(rdev) < 144)
		return &pty_slave_ops;
	return NULL;
}

int devfs_populate(struct inode *dev)
{
	struct inode *ip;
	int err = 0;

	for (size_t i = 0; i < ARRAY_SIZE(devnodes) && !err; i++) {
		const struct devnode *d = &devnodes[i];

		err = vfs_create(dev, d->name, strlen(d->name), S_IFCHR | d->perm, &ip);
		if (!err) {
			ip->rdev = VFS_MKDEV(d->major, d->minor);
			ip->dev = d->ops;
			inode_put(ip);
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(devlinks) && !err; i++)
		err = vfs_symlink(dev, devlinks[i].name, strlen(devlinks[i].name),
		                  devlinks[i].target, strlen(devlinks[i].target), NULL);
	if (!err)
		err = vfs_create(dev, "shm", 3, S_IFDIR | 01777, NULL);
	if (!err)
		err = vfs_create(dev, "pts", 3, S_IFDIR | 0755, &ip);
	if (!err) {
		pty_init(ip);
		inode_put(ip);
	}
	return err;
}
