/* SPDX-License-Identifier: MIT */
/*
 * Pseudo-terminals. Each open of /dev/ptmx makes a pair: the master (that
 * open file) and the slave, a tty (tty.c) whose device is the master and
 * whose node /dev/pts/N is made now and removed when both sides are
 * closed. What the slave's programs write (after output processing) the
 * master reads; what the master writes is the slave's input, through the
 * line discipline. Closing the master hangs the slave up; closing the
 * last slave file makes master reads fail with EIO, as on Linux.
 */
#include <asm/termios.h>
#include <linux/poll.h>

#include "fs/vfs_impl.h"
#include "errno_k.h"
#include "kpoll.h"
#include "mm.h"
#include "proc.h"
#include "tty.h"

#define PTY_MAX   256 /* pairs at once (Linux's default is 4096) */
#define PTY_MAJOR 136 /* UNIX98_PTY_SLAVE_MAJOR, and the seven after it */

struct pty {
	struct tty *tty; /* the slave */
	int index;
	bool locked;                    /* until unlockpt(): slave opens fail */
	int masters, slaves;            /* open files of each side */
	bool slave_gone;                /* the slave was open and is not any more */
	struct inode *node;             /* /dev/pts/N (a reference) */
	struct waitq read_wq, write_wq; /* master: output to read, input room */
};

static struct pty *ptys[PTY_MAX];
static struct inode *pts_dir;

void pty_init(struct inode *dir)
{
	inode_get(dir);
	pts_dir = dir;
}

static size_t pty_name(int index, char *buf)
{
	char tmp[8];
	size_t n = 0, len = 0;

	do
		tmp[n++] = (char)('0' + index % 10);
	while ((index /= 10));
	while (n)
		buf[len++] = tmp[--n];
	buf[len] = '\0';
	return len;
}

static void pty_free(struct pty *pty)
{
	char name[8];
	size_t len = pty_name(pty->index, name);
	struct dentry *de = pts_dir ? ramfs_find(pts_dir, name, len) : NULL;

	if (de && de->ip == pty->node)
		ramfs_unlink(pts_dir, de);
	inode_put(pty->node);
	ptys[pty->index] = NULL;
	tty_destroy(pty->tty);
	kfree(pty);
}

/* ---------------------------------------------------------------- the slave's device */

static void pty_start(struct tty *tty)
{
	struct pty *pty = tty->drv_data;

	wake_all(&pty->read_wq);
}

static void pty_unthrottle(struct tty *tty)
{
	struct pty *pty = tty->drv_data;

	wake_all(&pty->write_wq);
}

static int pty_slave_open(struct tty *tty)
{
	struct pty *pty = tty->drv_data;

	if (pty->locked || !pty->masters)
		return -EIO;
	pty->slaves++;
	pty->slave_gone = false;
	return 0;
}

static void pty_slave_close(struct tty *tty)
{
	struct pty *pty = tty->drv_data;

	if (--pty->slaves)
		return;
	pty->slave_gone = true;
	wake_all(&pty->read_wq);
	wake_all(&pty->write_wq);
	if (!pty->masters)
		pty_free(pty);
}

static const struct tty_driver pty_driver = {
    .start = pty_start,
    .unthrottle = pty_unthrottle,
    .open = pty_slave_open,
    .close = pty_slave_close,
};

/* /dev/pts/N, whoever made the node. */
static int slave_node_open(struct file *f, unsigned int oflags)
{
	uint64_t rdev = file_inode(f)->rdev;
	uint32_t index = (VFS_MAJOR(rdev) - PTY_MAJOR) * 256 + VFS_MINOR(rdev);
	struct pty *pty = index < PTY_MAX ? ptys[index] : NULL;

	if (!pty)
		return -ENXIO;
	return tty_open(pty->tty, f, oflags);
}

const struct file_ops pty_slave_ops = {.open = slave_node_open, .stream = true};

/* ---------------------------------------------------------------- the master */

static long master_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct pty *pty = f->priv;

	for (;;) {
		if (tty_out_ready(pty->tty))
			return tty_out_read(pty->tty, b, n);
		if (pty->slave_gone)
			return -EIO;
		if (f->flags & O_NONBLOCK)
			return -EAGAIN;
		if (WAIT_EVENT(&pty->read_wq, tty_out_ready(pty->tty) || pty->slave_gone, 0))
			return -ERESTARTSYS;
	}
}

static long master_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct pty *pty = f->priv;
	struct tty *tty = pty->tty;
	char buf[256];
	size_t done = 0;
	long err = 0;

	while (done < n && !err) {
		size_t chunk = MIN(sizeof(buf), n - done), took = 0;

		if (iob_from(buf, b, done, chunk)) {
			err = -EFAULT;
			break;
		}
		while (!err && (took += tty_receive(tty, buf + took, chunk - took)) < chunk) {
			if (f->flags & O_NONBLOCK)
				err = -EAGAIN;
			else if (WAIT_EVENT(&pty->write_wq, tty_can_receive(tty), 0))
				err = -ERESTARTSYS;
		}
		done += took;
	}
	return done ? (long)done : err;
}

/* TIOCGPTPEER: open the slave without knowing its path. */
static long open_peer(struct pty *pty, unsigned long flags)
{
	struct file *f;
	int err, fd;

	if (flags & ~(unsigned long)(O_ACCMODE | O_NOCTTY | O_NONBLOCK | O_CLOEXEC))
		return -EINVAL;
	err = vfs_open_inode(pty->node, (unsigned int)flags, &f);
	if (err)
		return err;
	fd = fd_alloc(cur_proc()->files, f, 0, flags & O_CLOEXEC);
	if (fd < 0)
		file_put(f);
	return fd;
}

static long master_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct pty *pty = f->priv;
	int v;

	switch (cmd) {
	case TIOCGPTN:
		v = pty->index;
		return copy_to_user((void *)arg, &v, sizeof(v));
	case TIOCSPTLCK:
		if (copy_from_user(&v, (const void *)arg, sizeof(v)))
			return -EFAULT;
		pty->locked = v != 0;
		return 0;
	case TIOCGPTLCK:
		v = pty->locked;
		return copy_to_user((void *)arg, &v, sizeof(v));
	case TIOCGPTPEER:
		return open_peer(pty, arg);
	case TIOCSIG:
		if (arg < 1 || arg > NSIG_KILN)
			return -EINVAL;
		if (pty->tty->pgrp)
			tty_signal_pgrp(pty->tty->pgrp, (int)arg);
		return 0;
	case TIOCPKT: /* packet mode: not done, but off is fine */
		if (copy_from_user(&v, (const void *)arg, sizeof(v)))
			return -EFAULT;
		return v ? -EINVAL : 0;
	case FIONREAD:
		v = (int)tty_out_pending(pty->tty);
		return copy_to_user((void *)arg, &v, sizeof(v));
	case TIOCOUTQ:
		v = 0;
		return copy_to_user((void *)arg, &v, sizeof(v));
	case TIOCSCTTY:
	case TIOCNOTTY:
		return -ENOTTY; /* only the slave can be a controlling terminal */
	default:                /* termios, window size, process group: the slave's */
		return tty_ioctl(pty->tty, cmd, arg, true);
	}
}

static unsigned int master_poll(struct file *f)
{
	struct pty *pty = f->priv;
	unsigned int mask = 0;

	if (tty_out_ready(pty->tty))
		mask |= POLLIN | POLLRDNORM;
	if (pty->slave_gone)
		mask |= POLLHUP;
	if (tty_can_receive(pty->tty))
		mask |= POLLOUT | POLLWRNORM;
	return mask;
}

static void master_poll_wait(struct file *f, struct poll_table *pt)
{
	struct pty *pty = f->priv;

	poll_add_wait(pt, &pty->read_wq);
	poll_add_wait(pt, &pty->write_wq);
}

static void master_release(struct file *f)
{
	struct pty *pty = f->priv;

	if (--pty->masters)
		return;
	tty_hangup(pty->tty);
	if (!pty->slaves)
		pty_free(pty);
}

static const struct file_ops pty_master_ops = {
    .read = master_read,
    .write = master_write,
    .ioctl = master_ioctl,
    .poll = master_poll,
    .poll_wait = master_poll_wait,
    .release = master_release,
    .stream = true,
};

/* /dev/ptmx: a new pair, locked until unlockpt(). */
static int ptmx_open(struct file *f, unsigned int oflags)
{
	struct pty *pty;
	struct inode *ip;
	char name[8];
	size_t len;
	int index = 0, err;

	if (!pts_dir)
		return -ENODEV;
	/* A name someone else made in /dev/pts is skipped. */
	while (index < PTY_MAX && (ptys[index] || ramfs_find(pts_dir, name, pty_name(index, name))))
		index++;
	if (index == PTY_MAX)
		return -ENOSPC;
	pty = kzalloc(sizeof(*pty));
	if (!pty || !(pty->tty = tty_create(&pty_driver, pty, true))) {
		kfree(pty);
		return -ENOMEM;
	}
	len = pty_name(index, name);
	err = vfs_create(pts_dir, name, len, S_IFCHR | 0620, &ip);
	if (err) {
		tty_destroy(pty->tty);
		kfree(pty);
		return err;
	}
	ip->rdev = VFS_MKDEV(PTY_MAJOR + index / 256, index % 256);
	ip->dev = &pty_slave_ops;
	pty->node = ip;
	pty->index = index;
	pty->locked = true;
	pty->masters = 1;
	ptys[index] = pty;
	f->ops = &pty_master_ops;
	f->priv = pty;
	return 0;
}

const struct file_ops pty_ptmx_ops = {.open = ptmx_open, .stream = true};
