/* SPDX-License-Identifier: MIT */
/*
 * eventfd and eventfd2: a 64-bit counter behind a descriptor. A write adds
 * to it (waiting while the sum would pass 2^64 - 2); a read takes it all
 * and resets it to 0, or with EFD_SEMAPHORE takes 1, waiting while it is 0.
 */
#include <linux/fcntl.h>
#include <linux/poll.h>

#include "errno_k.h"
#include "kpoll.h"
#include "mm.h"
#include "proc.h"
#include "syscall.h"
#include "vfs.h"

#define EFD_SEMAPHORE 1
#define EFD_MAX       (~0ULL - 1) /* the largest count */

struct eventfd {
	uint64_t count;
	bool semaphore;
	int refs;        /* the file, and reads or writes waiting */
	struct waitq wq; /* readers and writers both */
};

static void efd_put(struct eventfd *e)
{
	if (!--e->refs)
		kfree(e);
}

static long efd_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct eventfd *e = f->priv;
	uint64_t v;
	long r;

	if (n < sizeof(v))
		return -EINVAL;
	if (!e->count && (f->flags & O_NONBLOCK))
		return -EAGAIN;
	e->refs++;
	r = WAIT_EVENT(&e->wq, e->count, 0);
	if (!r) {
		v = e->semaphore ? 1 : e->count;
		r = iob_to(b, 0, &v, sizeof(v));
		if (!r) {
			e->count -= v;
			wake_all(&e->wq);
			r = sizeof(v);
		}
	} else {
		r = -ERESTARTSYS;
	}
	efd_put(e);
	return r;
}

static long efd_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct eventfd *e = f->priv;
	uint64_t v;
	long r;

	if (n < sizeof(v))
		return -EINVAL;
	if (iob_from(&v, b, 0, sizeof(v)))
		return -EFAULT;
	if (v == ~0ULL)
		return -EINVAL;
	if (EFD_MAX - e->count < v && (f->flags & O_NONBLOCK))
		return -EAGAIN;
	e->refs++;
	r = WAIT_EVENT(&e->wq, EFD_MAX - e->count >= v, 0);
	if (!r) {
		e->count += v;
		if (v)
			wake_all(&e->wq);
		r = sizeof(v);
	} else {
		r = -ERESTARTSYS;
	}
	efd_put(e);
	return r;
}

static unsigned int efd_poll(struct file *f)
{
	struct eventfd *e = f->priv;
	unsigned int mask = 0;

	if (e->count)
		mask |= POLLIN | POLLRDNORM;
	if (e->count < EFD_MAX)
		mask |= POLLOUT | POLLWRNORM;
	return mask;
}

static void efd_poll_wait(struct file *f, struct poll_table *pt)
{
	poll_add_wait(pt, &((struct eventfd *)f->priv)->wq);
}

static void efd_release(struct file *f)
{
	efd_put(f->priv);
}

static const struct file_ops eventfd_ops = {
    .read = efd_read,
    .write = efd_write,
    .poll = efd_poll,
    .poll_wait = efd_poll_wait,
    .release = efd_release,
    .stream = true,
    .anon_name = "anon_inode:[eventfd]",
};

static long do_eventfd(unsigned int count, long flags)
{
	struct eventfd *e;
	struct inode *ip;
	struct file *f;
	int fd;

	if (flags & ~(long)(EFD_SEMAPHORE | O_CLOEXEC | O_NONBLOCK))
		return -EINVAL;
	e = kzalloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->count = count;
	e->semaphore = flags & EFD_SEMAPHORE;
	e->refs = 1;
	ip = vfs_inode_anon(0600); /* Linux's anonymous inode: no file type */
	if (!ip)
		goto err_ctx;
	f = file_alloc(ip, &eventfd_ops, O_RDWR | (flags & O_NONBLOCK), e);
	if (!f)
		goto err_inode;
	fd = fd_alloc(cur_proc()->files, f, 0, flags & O_CLOEXEC);
	if (fd < 0)
		file_put(f);
	return fd;

err_inode:
	inode_put(ip);
err_ctx:
	kfree(e);
	return -ENOMEM;
}

SYSCALL_DEFINE(eventfd2)
{
	return do_eventfd((unsigned int)a0, a1);
}

SYSCALL_DEFINE(eventfd)
{
	return do_eventfd((unsigned int)a0, 0);
}
