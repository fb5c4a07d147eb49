/* SPDX-License-Identifier: MIT */
/*
 * Device files: the memory devices (null, zero, full, random, urandom) and
 * the console (/dev/console, /dev/tty) with the little of a tty programs
 * ask for: termios, window size and foreground process group are stored
 * and returned, not acted on. Line editing and echo are the host
 * terminal's, on the other side of virtio-console.
 */
#include <asm/termios.h>
#include <linux/poll.h>

#include "vfs_impl.h"
#include "console.h"

#if __has_include("rng.h")
#include "rng.h"
#else
long rng_read(void *buf, size_t n);
#endif

#define CTRL(c) ((c)&0x1f)

/* The one terminal's state. termios2 is termios plus the speeds. */
static struct {
	struct termios2 tio;
	struct winsize ws;
	int pgrp;
} tty = {
    .tio =
        {
            .c_iflag = ICRNL | IXON,
            .c_oflag = OPOST | ONLCR,
            .c_cflag = B38400 | CS8 | CREAD | HUPCL,
            .c_lflag = ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
            .c_cc =
                {
                    [VINTR] = CTRL('C'),
                    [VQUIT] = CTRL('\\'),
                    [VERASE] = 0177,
                    [VKILL] = CTRL('U'),
                    [VEOF] = CTRL('D'),
                    [VMIN] = 1,
                    [VSTART] = CTRL('Q'),
                    [VSTOP] = CTRL('S'),
                    [VSUSP] = CTRL('Z'),
                    [VREPRINT] = CTRL('R'),
                    [VDISCARD] = CTRL('O'),
                    [VWERASE] = CTRL('W'),
                    [VLNEXT] = CTRL('V'),
                },
            .c_ispeed = 38400,
            .c_ospeed = 38400,
        },
    .ws = {.ws_row = 24, .ws_col = 80},
    .pgrp = 1,
};

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

/* ---------------------------------------------------------------- console */

static long con_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	char buf[512];
	bool nonblock = f->flags & O_NONBLOCK;
	size_t done = 0;
	long r = 0;

	/* Wait for the first bytes only, then take what else is there. */
	while (done < n && (done == 0 || console_input_ready())) {
		r = console_read(buf, MIN(sizeof(buf), n - done), nonblock || done);
		if (r <= 0)
			break;
		if (iob_to(b, done, buf, r)) {
			r = -EFAULT;
			break;
		}
		done += r;
	}
	return done ? (long)done : r;
}

static long con_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	char buf[512];
	size_t done = 0;

	while (done < n) {
		size_t chunk = MIN(sizeof(buf), n - done);
		const char *src = b->base + done;
		long r;

		if (b->user) {
			if (copy_from_user(buf, src, chunk))
				return done ? (long)done : -EFAULT;
			src = buf;
		}
		r = console_write(src, chunk);
		if (r <= 0)
			return done ? (long)done : r;
		done += r;
	}
	return done;
}

static long con_get(void *u, const void *val, size_t n)
{
	return copy_to_user(u, val, n);
}

static long con_set_termios(void *u, size_t n)
{
	struct termios2 t = tty.tio;

	if (copy_from_user(&t, u, n))
		return -EFAULT;
	tty.tio = t;
	return 0;
}

static long con_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	void *u = (void *)arg;
	struct winsize ws;
	int v;

	switch (cmd) {
	case TCGETS:
		return con_get(u, &tty.tio, sizeof(struct termios));
	case TCGETS2:
		return con_get(u, &tty.tio, sizeof(struct termios2));
	case TCSETS:
	case TCSETSW:
	case TCSETSF:
		return con_set_termios(u, sizeof(struct termios));
	case TCSETS2:
	case TCSETSW2:
	case TCSETSF2:
		return con_set_termios(u, sizeof(struct termios2));
	case TIOCGWINSZ:
		return con_get(u, &tty.ws, sizeof(tty.ws));
	case TIOCSWINSZ:
		if (copy_from_user(&ws, u, sizeof(ws)))
			return -EFAULT;
		tty.ws = ws;
		return 0;
	case TIOCGPGRP:
		return con_get(u, &tty.pgrp, sizeof(tty.pgrp));
	case TIOCSPGRP:
		if (copy_from_user(&v, u, sizeof(v)))
			return -EFAULT;
		if (v < 0)
			return -EINVAL;
		tty.pgrp = v;
		return 0;
	case FIONREAD:
		v = (int)MIN(console_input_ready(), (size_t)0x7fffffff);
		return con_get(u, &v, sizeof(v));
	case TCSBRK: /* tcdrain() */
	case TCSBRKP:
		console_flush();
		return 0;
	case TCXONC:
	case TCFLSH:
	case TIOCSCTTY:
	case TIOCNOTTY:
		return 0;
	default:
		return -ENOTTY;
	}
}

static unsigned int con_poll(struct file *f)
{
	unsigned int mask = POLLOUT | POLLWRNORM;

	if (console_input_ready())
		mask |= POLLIN | POLLRDNORM;
	return mask;
}

const struct file_ops devfs_console_ops = {
    .read = con_read,
    .write = con_write,
    .ioctl = con_ioctl,
    .poll = con_poll,
    .stream = true,
};

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
    {"tty", 5, 0, 0666, &devfs_console_ops},
    {"console", 5, 1, 0600, &devfs_console_ops},
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
	return err;
}
