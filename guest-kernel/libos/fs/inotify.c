/* SPDX-License-Identifier: MIT */
/*
 * inotify: watches on inodes of the tmpfs, events queued on a descriptor.
 *
 * The VFS reports what happens (inotify_event): names created, deleted and
 * moved in a directory, a file written or closed after writing, an inode
 * losing its last name. Each watch holds its inode, so the pointer stays
 * valid until the watch goes (inotify_rm_watch, IN_ONESHOT, the inode
 * deleted, the descriptor closed: then IN_IGNORED). Events about a file
 * reach the watches on the file; events about a name, the watches on its
 * directory (a write to a file is not reported to its directory's watchers:
 * an inode does not know its names). With no watch anywhere, a report
 * costs one test.
 */
#include <linux/fcntl.h>
#include <linux/inotify.h>
#include <linux/poll.h>

#include "vfs_impl.h"
#include "errno_k.h"
#include "kpoll.h"
#include "mm.h"
#include "proc.h"
#include "sched.h"
#include "syscall.h"

#define MAX_WATCHES 8192  /* per descriptor: /proc/sys/fs/inotify/max_user_watches */
#define MAX_EVENTS  16384 /* queued: max_queued_events */
#define ALL_EVENTS  (IN_ALL_EVENTS | IN_IGNORED | IN_Q_OVERFLOW | IN_ISDIR)
#define ADD_FLAGS \
	(IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_MASK_ADD | IN_MASK_CREATE | IN_ONESHOT)

struct ievent {
	struct ievent *next;
	struct inotify_event e; /* then the name, NUL-padded to a multiple of 16 */
};

struct iwatch {
	struct inotify *in;
	struct inode *ip; /* a reference */
	int wd;
	uint32_t mask;
	struct iwatch *next_in, *next_all;
};

struct inotify {
	int refs; /* the file, and reads waiting */
	struct waitq wq;
	struct ievent *head, *tail;
	unsigned int nevents;
	size_t bytes; /* FIONREAD */
	struct iwatch *watches;
	unsigned int nwatches;
	int next_wd;
	bool closed;
};

static struct iwatch *all_watches;

static void in_put(struct inotify *in)
{
	if (--in->refs)
		return;
	while (in->head) {
		struct ievent *n = in->head->next;
		kfree(in->head);
		in->head = n;
	}
	kfree(in);
}

static size_t name_room(size_t len)
{
	return len ? ALIGN_UP(len + 1, sizeof(struct inotify_event)) : 0;
}

static void queue(struct inotify *in, int wd, uint32_t mask, uint32_t cookie, const char *name,
                  size_t len)
{
	struct ievent *ev, *last = in->tail;
	size_t room = name_room(len);

	/* Linux's coalescing: the same event twice in a row is one. */
	if (last && last->e.wd == wd && last->e.mask == mask && last->e.cookie == cookie &&
	    strnlen(last->e.name, last->e.len) == len && (!len || !memcmp(last->e.name, name, len)))
		return;
	if (in->nevents >= MAX_EVENTS) {
		if (last && last->e.mask == IN_Q_OVERFLOW)
			return;
		wd = -1;
		mask = IN_Q_OVERFLOW;
		cookie = 0;
		len = room = 0;
	}
	ev = kzalloc(sizeof(*ev) + room);
	if (!ev)
		return; /* (as an event lost to overflow) */
	ev->e =
	    (struct inotify_event){.wd = wd, .mask = mask, .cookie = cookie, .len = (uint32_t)room};
	if (len)
		memcpy(ev->e.name, name, len);
	if (last)
		last->next = ev;
	else
		in->head = ev;
	in->tail = ev;
	in->nevents++;
	in->bytes += sizeof(ev->e) + room;
	wake_all(&in->wq);
}

static void watch_free(struct iwatch *w)
{
	struct iwatch **pp;

	for (pp = &all_watches; *pp != w; pp = &(*pp)->next_all)
		;
	*pp = w->next_all;
	for (pp = &w->in->watches; *pp != w; pp = &(*pp)->next_in)
		;
	*pp = w->next_in;
	w->in->nwatches--;
	inode_put(w->ip);
	kfree(w);
}

/* The watch goes, with IN_IGNORED (unless its descriptor is closing). */
static void watch_drop(struct iwatch *w)
{
	if (!w->in->closed)
		queue(w->in, w->wd, IN_IGNORED, 0, NULL, 0);
	watch_free(w);
}

void inotify_event(struct inode *ip, uint32_t mask, uint32_t cookie, const char *name, size_t len)
{
	struct iwatch *w, *next;

	if (!all_watches)
		return;
	for (w = all_watches; w; w = next) {
		next = w->next_all;
		if (w->ip != ip || !(w->mask & mask & IN_ALL_EVENTS))
			continue;
		queue(w->in, w->wd, mask & ALL_EVENTS, cookie, name, len);
		if (w->mask & IN_ONESHOT)
			watch_drop(w);
	}
	/* An inode without names: its watches report that, and go. */
	if (mask & IN_DELETE_SELF)
		for (w = all_watches; w; w = next) {
			next = w->next_all;
			if (w->ip == ip)
				watch_drop(w);
		}
}

uint32_t inotify_cookie(void)
{
	static uint32_t cookie;

	return ++cookie ? cookie : ++cookie;
}

/* ---------------------------------------------------------------- the descriptor */

static long in_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct inotify *in = f->priv;
	size_t done = 0;
	long r;

	if (!in->head && (f->flags & O_NONBLOCK))
		return -EAGAIN;
	in->refs++;
	r = WAIT_EVENT(&in->wq, in->head, 0);
	while (!r && in->head) {
		struct ievent *ev = in->head;
		size_t size = sizeof(ev->e) + ev->e.len;

		if (size > n - done) {
			r = done ? 0 : -EINVAL; /* the buffer cannot hold the next one */
			break;
		}
		if (iob_to(b, done, &ev->e, size)) {
			r = done ? 0 : -EFAULT;
			break;
		}
		done += size;
		in->head = ev->next;
		if (!in->head)
			in->tail = NULL;
		in->nevents--;
		in->bytes -= size;
		kfree(ev);
	}
	in_put(in);
	if (r)
		return r == -EINTR ? -ERESTARTSYS : r;
	return (long)done;
}

static unsigned int in_poll(struct file *f)
{
	return ((struct inotify *)f->priv)->head ? POLLIN | POLLRDNORM : 0;
}

static void in_poll_wait(struct file *f, struct poll_table *pt)
{
	poll_add_wait(pt, &((struct inotify *)f->priv)->wq);
}

static long in_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	int n;

	if (cmd != 0x541b) /* FIONREAD */
		return -ENOTTY;
	n = (int)((struct inotify *)f->priv)->bytes;
	return copy_to_user((void *)arg, &n, sizeof(n));
}

static void in_release(struct file *f)
{
	struct inotify *in = f->priv;

	in->closed = true;
	while (in->watches)
		watch_free(in->watches);
	in_put(in);
}

static const struct file_ops inotify_ops = {
    .read = in_read,
    .ioctl = in_ioctl,
    .poll = in_poll,
    .poll_wait = in_poll_wait,
    .release = in_release,
    .stream = true,
    .anon_name = "anon_inode:inotify",
};

static long do_init(long flags)
{
	struct inotify *in;
	struct inode *ip;
	struct file *f;
	int fd;

	if (flags & ~(long)(IN_CLOEXEC | IN_NONBLOCK))
		return -EINVAL;
	in = kzalloc(sizeof(*in));
	ip = in ? vfs_inode_anon(0600) : NULL;
	f = ip ? file_alloc(ip, &inotify_ops, O_RDONLY | (flags & O_NONBLOCK), in) : NULL;
	if (!f) {
		if (ip)
			inode_put(ip);
		kfree(in);
		return -ENOMEM;
	}
	in->refs = 1;
	in->next_wd = 1;
	fd = fd_alloc(cur_proc()->files, f, 0, flags & IN_CLOEXEC);
	if (fd < 0)
		file_put(f);
	return fd;
}

SYSCALL_DEFINE(inotify_init1)
{
	return do_init(a0);
}

SYSCALL_DEFINE(inotify_init)
{
	return do_init(0);
}

static struct inotify *inotify_of(int fd)
{
	struct file *f = fd_get(cur_proc()->files, fd);

	return f && f->ops == &inotify_ops ? f->priv : NULL;
}

SYSCALL_DEFINE(inotify_add_watch)
{
	struct inotify *in = inotify_of((int)a0);
	uint32_t mask = (uint32_t)a2;
	struct inode *ip;
	struct iwatch *w;
	int err;

	if (!fd_get(cur_proc()->files, (int)a0))
		return -EBADF;
	/* (Unknown bits are ignored, as Linux does.) */
	mask &= IN_ALL_EVENTS | ADD_FLAGS;
	if (!in || !(mask & IN_ALL_EVENTS) || ((mask & IN_MASK_ADD) && (mask & IN_MASK_CREATE)))
		return -EINVAL;
	err = user_path_inode(AT_FDCWD, (const char *)a1, mask & IN_DONT_FOLLOW ? 0 : LOOKUP_FOLLOW,
	                      &ip);
	if (err)
		return err;
	if ((mask & IN_ONLYDIR) && !S_ISDIR(ip->mode)) {
		inode_put(ip);
		return -ENOTDIR;
	}
	for (w = in->watches; w && w->ip != ip; w = w->next_in)
		;
	if (w) { /* one watch per inode and descriptor */
		inode_put(ip);
		if (mask & IN_MASK_CREATE)
			return -EEXIST;
		w->mask = (mask & IN_MASK_ADD ? w->mask : 0) | (mask & ~(uint32_t)IN_MASK_ADD);
		return w->wd;
	}
	if (in->nwatches >= MAX_WATCHES || !(w = kzalloc(sizeof(*w)))) {
		inode_put(ip);
		return in->nwatches >= MAX_WATCHES ? -ENOSPC : -ENOMEM;
	}
	*w = (struct iwatch){
	    in, ip, in->next_wd++, mask & ~(uint32_t)IN_MASK_CREATE, in->watches, all_watches};
	in->watches = all_watches = w;
	in->nwatches++;
	return w->wd;
}

SYSCALL_DEFINE(inotify_rm_watch)
{
	struct inotify *in = inotify_of((int)a0);
	struct iwatch *w;

	if (!fd_get(cur_proc()->files, (int)a0))
		return -EBADF;
	if (!in)
		return -EINVAL;
	for (w = in->watches; w && w->wd != (int)a1; w = w->next_in)
		;
	if (!w)
		return -EINVAL;
	watch_drop(w);
	return 0;
}
