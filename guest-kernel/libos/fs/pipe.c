/* SPDX-License-Identifier: MIT */
/*
 * Pipes: pipe and pipe2. A pipe is a ring buffer of pages (64 KiB unless
 * F_SETPIPE_SZ says otherwise) shared by two open files, the read end and
 * the write end, over one anonymous S_IFIFO inode.
 *
 * As in Linux: a read returns what is there (at least one byte) or waits;
 * it returns 0 once no writer is left. A write of at most PIPE_BUF bytes
 * goes in whole or waits for room; a longer one goes in as room frees up.
 * Writing with no reader left raises SIGPIPE and fails with EPIPE.
 */
#include <asm/ioctls.h>
#include <asm/signal.h>
#include <linux/fcntl.h>
#include <linux/limits.h>
#include <linux/poll.h>
#include <linux/stat.h>

#include "errno_k.h"
#include "kpoll.h"
#include "mm.h"
#include "pidns.h"
#include "proc.h"
#include "syscall.h"
#include "vfs.h"

#define PIPE_DEF_SIZE (16 * PAGE_SIZE)
#define PIPE_MAX_SIZE (1024 * 1024) /* Linux's default fs.pipe-max-size */

struct pipe {
	uint64_t *pages;      /* physical addresses; 0 until first written */
	size_t size;          /* bytes: a power of two number of pages */
	size_t head;          /* where the next read starts */
	size_t len;           /* bytes in the ring */
	int readers, writers; /* open files of each end */
	int busy;             /* calls in progress: keep the pipe while > 0 */
	struct waitq rd_wq;   /* readers wait for bytes or the last writer */
	struct waitq wr_wq;   /* writers wait for room or the last reader */
};

static bool is_reader(const struct file *f)
{
	return (f->flags & O_ACCMODE) == O_RDONLY;
}

static void pages_free(uint64_t *pages, size_t npages)
{
	for (size_t i = 0; i < npages; i++)
		if (pages[i])
			pmem_free(pages[i]);
	kfree(pages);
}

/* Free the pipe once nothing uses it any more. */
static void pipe_maybe_free(struct pipe *p)
{
	if (p->readers || p->writers || p->busy)
		return;
	pages_free(p->pages, p->size / PAGE_SIZE);
	kfree(p);
}

/* Between the ring at byte pos and b at byte off, n bytes (n <= size). */
static long ring_copy(struct pipe *p, size_t pos, const struct iobuf *b, size_t off, size_t n,
                      bool to_ring)
{
	while (n) {
		size_t pg = pos / PAGE_SIZE, in = pos % PAGE_SIZE;
		size_t chunk = MIN(n, PAGE_SIZE - in);
		char *va;
		int err;

		if (!p->pages[pg]) {
			p->pages[pg] = pmem_alloc(false);
			if (!p->pages[pg])
				return -ENOMEM;
		}
		va = (char *)phys_to_virt(p->pages[pg]) + in;
		err = to_ring ? iob_from(va, b, off, chunk) : iob_to(b, off, va, chunk);
		if (err)
			return err;
		pos = (pos + chunk) & (p->size - 1);
		off += chunk;
		n -= chunk;
	}
	return 0;
}

static long pipe_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct pipe *p = f->priv;
	long r;

	if (!p->len && p->writers && (f->flags & O_NONBLOCK))
		return -EAGAIN;
	p->busy++;
	r = WAIT_EVENT(&p->rd_wq, p->len || !p->writers, 0);
	if (r) {
		r = -ERESTARTSYS;
	} else if (p->len) {
		n = MIN(n, p->len);
		r = ring_copy(p, p->head, b, 0, n, false);
		if (!r) {
			p->len -= n;
			p->head = p->len ? (p->head + n) & (p->size - 1) : 0;
			wake_all(&p->wr_wq);
			r = n;
		}
	}
	p->busy--;
	pipe_maybe_free(p);
	return r;
}

static void send_sigpipe(void)
{
	struct siginfo_k info;

	memset(&info, 0, sizeof(info));
	info.signo = SIGPIPE;
	info.code = 0; /* SI_USER, from the writer itself, as Linux sends it */
	info.kill.pid = pid_to_user(cur_proc(), cur_proc()->pid);
	signal_send_thread(cur_thread(), SIGPIPE, &info);
}

static long pipe_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct pipe *p = f->priv;
	size_t done = 0, need = n <= PIPE_BUF ? n : 1; /* small writes go in whole */
	long err = 0;

	p->busy++;
	while (done < n) {
		size_t room = p->size - p->len, chunk;

		if (!p->readers) {
			send_sigpipe();
			err = -EPIPE;
			break;
		}
		if (room < need) {
			if (f->flags & O_NONBLOCK) {
				err = -EAGAIN;
				break;
			}
			err = WAIT_EVENT(&p->wr_wq, !p->readers || p->size - p->len >= need, 0);
			if (err) {
				err = -ERESTARTSYS;
				break;
			}
			continue;
		}
		chunk = MIN(room, n - done);
		err = ring_copy(p, (p->head + p->len) & (p->size - 1), b, done, chunk, true);
		if (err)
			break;
		p->len += chunk;
		done += chunk;
		wake_all(&p->rd_wq);
	}
	p->busy--;
	pipe_maybe_free(p);
	return done ? (long)done : err;
}

/* F_SETPIPE_SZ: the bytes move to a ring of the new size. */
static long pipe_resize(struct pipe *p, unsigned long want)
{
	size_t npages = 1, size;
	uint64_t *pages;
	struct pipe tmp;

	if (want > PIPE_MAX_SIZE)
		return -EPERM;
	while (npages * PAGE_SIZE < want)
		npages *= 2;
	size = npages * PAGE_SIZE;
	if (size < p->len)
		return -EBUSY;
	if (size == p->size)
		return size;
	pages = kzalloc(npages * sizeof(*pages));
	if (!pages)
		return -ENOMEM;
	tmp = (struct pipe){.pages = pages, .size = size};
	/* Linearize: the old ring's bytes to the start of the new one. */
	for (size_t done = 0; done < p->len;) {
		size_t at = (p->head + done) & (p->size - 1);
		size_t chunk = MIN(PAGE_SIZE - at % PAGE_SIZE, p->len - done);
		struct iobuf src =
		    iob_kernel((char *)phys_to_virt(p->pages[at / PAGE_SIZE]) + at % PAGE_SIZE);

		if (ring_copy(&tmp, done, &src, 0, chunk, true)) {
			pages_free(pages, npages);
			return -ENOMEM;
		}
		done += chunk;
	}
	pages_free(p->pages, p->size / PAGE_SIZE);
	p->pages = pages;
	p->size = size;
	p->head = 0;
	wake_all(&p->wr_wq); /* more room, perhaps */
	return size;
}

static long pipe_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct pipe *p = f->priv;
	int v;

	switch (cmd) {
	case FIONREAD:
		v = (int)p->len;
		return copy_to_user((void *)arg, &v, sizeof(v));
	case F_GETPIPE_SZ: /* fcntl forwards these two */
		return p->size;
	case F_SETPIPE_SZ:
		return pipe_resize(p, (unsigned int)arg);
	default:
		return -ENOTTY;
	}
}

static unsigned int pipe_poll(struct file *f)
{
	struct pipe *p = f->priv;
	unsigned int mask = 0;

	if (is_reader(f)) {
		if (p->len)
			mask |= POLLIN | POLLRDNORM;
		if (!p->writers)
			mask |= POLLHUP;
	} else {
		if (p->size - p->len >= MIN((size_t)PIPE_BUF, p->size))
			mask |= POLLOUT | POLLWRNORM;
		if (!p->readers)
			mask |= POLLERR;
	}
	return mask;
}

static void pipe_poll_wait(struct file *f, struct poll_table *pt)
{
	struct pipe *p = f->priv;

	poll_add_wait(pt, is_reader(f) ? &p->rd_wq : &p->wr_wq);
}

static void pipe_release(struct file *f)
{
	struct pipe *p = f->priv;

	if (is_reader(f)) {
		if (!--p->readers)
			wake_all(&p->wr_wq);
	} else {
		if (!--p->writers)
			wake_all(&p->rd_wq);
	}
	pipe_maybe_free(p);
}

static const struct file_ops pipe_ops = {
    .read = pipe_read,
    .write = pipe_write,
    .ioctl = pipe_ioctl,
    .poll = pipe_poll,
    .poll_wait = pipe_poll_wait,
    .release = pipe_release,
    .stream = true,
};

static struct pipe *pipe_alloc(void)
{
	struct pipe *p = kzalloc(sizeof(*p));

	if (!p)
		return NULL;
	p->size = PIPE_DEF_SIZE;
	p->pages = kzalloc(p->size / PAGE_SIZE * sizeof(*p->pages));
	if (!p->pages) {
		kfree(p);
		return NULL;
	}
	return p;
}

/* The two ends' files over one inode; the pipe is freed with them. */
static int pipe_files(unsigned int flags, struct file **rf, struct file **wf)
{
	struct pipe *p = pipe_alloc();
	struct inode *ip = p ? vfs_inode_anon(S_IFIFO | 0600) : NULL;

	if (!ip)
		goto err_pipe;
	*rf = file_alloc(ip, &pipe_ops, O_RDONLY | flags, p);
	if (!*rf)
		goto err_inode;
	p->readers = 1;
	inode_get(ip);
	*wf = file_alloc(ip, &pipe_ops, O_WRONLY | flags, p);
	if (!*wf) {
		inode_put(ip);
		file_put(*rf); /* frees the pipe, drops the first reference */
		return -ENOMEM;
	}
	p->writers = 1;
	return 0;

err_inode:
	inode_put(ip);
err_pipe:
	if (p) {
		kfree(p->pages);
		kfree(p);
	}
	return -ENOMEM;
}

static long do_pipe2(int *ufds, long flags)
{
	struct files *t = cur_proc()->files;
	bool cloexec = flags & O_CLOEXEC;
	struct file *rf, *wf;
	int fds[2], err;

	/* O_DIRECT (packet mode) is not supported. */
	if (flags & ~(long)(O_CLOEXEC | O_NONBLOCK))
		return -EINVAL;
	err = pipe_files(flags & O_NONBLOCK, &rf, &wf);
	if (err)
		return err;
	fds[0] = fd_alloc(t, rf, 0, cloexec);
	if (fds[0] < 0) {
		file_put(rf);
		file_put(wf);
		return fds[0];
	}
	fds[1] = fd_alloc(t, wf, 0, cloexec);
	if (fds[1] < 0) {
		fd_close(t, fds[0]);
		file_put(wf);
		return fds[1];
	}
	if (copy_to_user(ufds, fds, sizeof(fds))) {
		fd_close(t, fds[0]);
		fd_close(t, fds[1]);
		return -EFAULT;
	}
	return 0;
}

SYSCALL_DEFINE(pipe2)
{
	return do_pipe2((int *)a0, a1);
}

SYSCALL_DEFINE(pipe)
{
	return do_pipe2((int *)a0, 0);
}
