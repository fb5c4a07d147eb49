/* SPDX-License-Identifier: MIT */
/*
 * epoll: epoll_create, epoll_create1, epoll_ctl, epoll_wait, epoll_pwait,
 * epoll_pwait2. An epoll file holds an interest list; epoll_wait asks each
 * item's file for its mask and, if nothing is ready, sleeps on all their
 * wait queues at once (kpoll.h), as poll does. An epoll file can itself be
 * polled, and put in another epoll set (at most EP_MAX_NESTS deep, no
 * loops).
 *
 * Closed files: an item holds no reference on its file (a reference would
 * keep a pipe's write end open, and its reader would never see EOF). It
 * counts as there only while its descriptor still holds that very file
 * (same struct file, same inode number: inode numbers are never reused);
 * otherwise it is skipped, and dropped when its descriptor number is next
 * used in epoll_ctl. Unlike Linux, an item whose descriptor was closed is
 * gone even if a dup() of it keeps the file open.
 *
 * EPOLLET is approximated. Wait queues wake threads and say nothing of
 * why, and nothing watches a file between two epoll_wait calls, so an edge
 * is seen as a bit of the file's mask that was clear when epoll last
 * looked. Not seen: more bytes on a file that was already readable, or a
 * file drained and refilled between two calls. So that a program does not
 * wait for them forever, an edge-triggered item that stays ready is
 * reported again by an epoll_wait that sleeps: when it is woken with no
 * new edge in sight (something happened that it cannot see), or when a
 * re-check delay runs out, which starts at ET_RECHECK_MIN after a report
 * and doubles up to ET_RECHECK_MAX while nothing changes. A call that does
 * not sleep (timeout 0) never repeats an item. Programs written for
 * EPOLLET (read until EAGAIN) take a repeat as a spurious wakeup; an idle,
 * always writable socket costs a few wakeups a second. Exact edges need a
 * wake callback in struct wait_entry and a hook when a file is released.
 */
#include <linux/eventpoll.h>
#include <linux/fcntl.h>
#include <linux/poll.h>

#include "errno_k.h"
#include "kpoll.h"
#include "ktime.h"
#include "mm.h"
#include "proc.h"
#include "syscall.h"
#include "vfs.h"

#define EP_MAX_NESTS  4
#define EP_MAX_EVENTS (0x7fffffff / (int)sizeof(struct epoll_event))
#define EP_PRIVATE    (EPOLLWAKEUP | EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE)
#define EP_EXCLUSIVE_OK \
	(EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE)
#define ET_RECHECK_MIN 2000000ULL   /* 2 ms */
#define ET_RECHECK_MAX 256000000ULL /* 256 ms */

struct epitem {
	struct epitem *prev, *next;
	struct file *f; /* no reference: see item_file() */
	uint64_t ino;
	int fd;
	uint32_t events; /* as asked, plus EPOLLERR | EPOLLHUP */
	uint64_t data;
	bool disabled;                /* EPOLLONESHOT fired: until EPOLL_CTL_MOD */
	uint32_t cur;                 /* the mask found by this scan */
	uint32_t last;                /* EPOLLET: the mask when last looked at */
	uint64_t recheck_at, backoff; /* EPOLLET: see above */
};

struct eventpoll {
	struct epitem *head, *tail;
	uint64_t gen;    /* counts EPOLL_CTL_ADD and MOD */
	struct waitq wq; /* woken by them: waiters look at the new interest */
};

/* One epoll_wait in progress. */
struct ep_wait {
	struct eventpoll *ep;
	struct epoll_event *uev;
	int max;
	bool woken;       /* a queue woke the waiter since the last scan */
	bool timed_out;   /* its sleep ended at a deadline: re-checks are due */
	uint64_t recheck; /* earliest re-check of a ready EPOLLET item; 0: none */
};

static const struct file_ops epoll_ops;
static int ep_poll_depth; /* ep_poll() inside ep_poll(), for nested sets */

/* ---------------------------------------------------------------- items */

/* The item's file while its descriptor still holds it, else NULL. */
static struct file *item_file(const struct epitem *it)
{
	struct file *f = fd_get(cur_proc()->files, it->fd);

	return f && f == it->f && vfs_inode_ino(file_inode(f)) == it->ino ? f : NULL;
}

static uint32_t item_mask(const struct epitem *it, struct file *f)
{
	return file_poll(f) & (it->events & ~EP_PRIVATE);
}

/* What to report of mask m now; 0 for nothing. nudge: woken with no edge
 * in sight; recheck: re-check delays that ran out count. */
static uint32_t item_due(const struct epitem *it, uint32_t m, uint64_t now, bool nudge,
                         bool recheck)
{
	if (!m || !(it->events & EPOLLET))
		return m;
	return (m & ~it->last) || nudge || (recheck && now >= it->recheck_at) ? m : 0;
}

static void item_unlink(struct eventpoll *ep, struct epitem *it)
{
	if (it->prev)
		it->prev->next = it->next;
	else
		ep->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		ep->tail = it->prev;
	it->prev = it->next = NULL;
}

static void item_append(struct eventpoll *ep, struct epitem *it)
{
	it->prev = ep->tail;
	it->next = NULL;
	if (ep->tail)
		ep->tail->next = it;
	else
		ep->head = it;
	ep->tail = it;
}

/* The item for (fd, f); items at fd whose file is gone are dropped. */
static struct epitem *ep_find(struct eventpoll *ep, int fd, struct file *f)
{
	uint64_t ino = vfs_inode_ino(file_inode(f));
	struct epitem *it, *next;

	for (it = ep->head; it; it = next) {
		next = it->next;
		if (it->fd != fd)
			continue;
		if (it->f == f && it->ino == ino)
			return it;
		item_unlink(ep, it);
		kfree(it);
	}
	return NULL;
}

/* Would putting set `from` into set `to` make a loop, or nest too deep? */
static bool ep_loops(struct eventpoll *from, struct eventpoll *to, int depth)
{
	if (from == to || depth >= EP_MAX_NESTS)
		return true;
	for (struct epitem *it = from->head; it; it = it->next) {
		struct file *f = item_file(it);

		if (f && f->ops == &epoll_ops && ep_loops(f->priv, to, depth + 1))
			return true;
	}
	return false;
}

/* The interest changed: waiters must look again (and wait on new files). */
static void ep_changed(struct eventpoll *ep)
{
	ep->gen++;
	wake_all(&ep->wq);
}

/* ---------------------------------------------------------------- waiting */

/* Put ready items into w->uev: their number, or -EFAULT. */
static long ep_scan(struct ep_wait *w, struct poll_table *pt)
{
	struct eventpoll *ep = w->ep;
	uint64_t now = time_monotonic_ns();
	struct epitem *it, *last_out = NULL;
	bool edge = false, nudge;
	long n = 0;

	w->recheck = 0;
	for (it = ep->head; it; it = it->next) {
		struct file *f = item_file(it);

		it->cur = 0;
		if (!f || it->disabled)
			continue;
		if (pt)
			poll_add_file(pt, f);
		it->cur = item_mask(it, f);
		if ((it->events & EPOLLET) && (it->cur & ~it->last))
			edge = true;
	}
	nudge = w->woken && !edge;
	for (it = ep->head; it && n < w->max; it = it->next) {
		struct epoll_event ev;
		uint32_t m = it->cur;
		bool stale;

		if (it->disabled)
			continue;
		ev.events = item_due(it, m, now, nudge, w->timed_out);
		if (!ev.events) {
			it->last = m; /* a falling edge, or nothing new */
			if (m && (!w->recheck || it->recheck_at < w->recheck))
				w->recheck = it->recheck_at;
			continue;
		}
		ev.data = it->data;
		if (copy_to_user(&w->uev[n], &ev, sizeof(ev)))
			return n ? n : -EFAULT;
		n++;
		last_out = it;
		if (it->events & EPOLLET) {
			stale = !(m & ~it->last) && !nudge; /* the re-check delay ran out */
			it->backoff = stale ? MIN(it->backoff * 2, ET_RECHECK_MAX) : ET_RECHECK_MIN;
			it->recheck_at = now + it->backoff;
			it->last = m;
		}
		if (it->events & EPOLLONESHOT)
			it->disabled = true;
	}
	/* Not all fit: the next call starts after the last one reported. */
	if (n == w->max && last_out && last_out->next) {
		ep->tail->next = ep->head;
		ep->head->prev = ep->tail;
		ep->head = last_out->next;
		ep->head->prev = NULL;
		ep->tail = last_out;
		last_out->next = NULL;
	}
	return n;
}

static long ep_wait(struct file *epf, struct epoll_event *uev, int max, uint64_t deadline)
{
	struct ep_wait w = {.ep = epf->priv, .uev = uev, .max = max};
	struct poll_table pt;
	uint64_t gen, at;
	long n, err;

	n = ep_scan(&w, NULL);
	if (n || deadline == POLL_NOW)
		return n;
	file_get(epf); /* another thread may close it while we sleep */
	poll_table_init(&pt);
	for (;;) {
		/* (Re)build the table: at first, and after EPOLL_CTL_ADD/MOD. */
		poll_table_free(&pt);
		gen = w.ep->gen;
		w.woken = w.timed_out = false;
		poll_add_wait(&pt, &w.ep->wq);
		n = ep_scan(&w, &pt);
		if (n || pt.err)
			break;
		while (gen == w.ep->gen) {
			at = deadline;
			if (w.recheck && (at == POLL_FOREVER || w.recheck < at))
				at = w.recheck;
			err = wait_sleep(at);
			w.woken = !err && gen == w.ep->gen;
			w.timed_out = err == -ETIMEDOUT;
			n = ep_scan(&w, NULL);
			if (n)
				goto out;
			if (err == -EINTR) {
				n = -EINTR;
				goto out;
			}
			if (err == -ETIMEDOUT && deadline != POLL_FOREVER &&
			    time_monotonic_ns() >= deadline)
				goto out;
		}
	}
	if (!n)
		n = pt.err;
out:
	poll_table_free(&pt);
	file_put(epf);
	return n;
}

/* The checks of epoll_wait and friends, then the wait. */
static long do_epoll_wait(long epfd, void *uev, long max, uint64_t deadline)
{
	struct file *epf;

	if (max <= 0 || max > EP_MAX_EVENTS)
		return -EINVAL;
	if (!user_range_ok((uint64_t)uev, (uint64_t)max * sizeof(struct epoll_event)))
		return -EFAULT;
	epf = fd_get(cur_proc()->files, (int)epfd);
	if (!epf)
		return -EBADF;
	if (epf->ops != &epoll_ops)
		return -EINVAL;
	return ep_wait(epf, uev, (int)max, deadline);
}

/* epoll_wait and epoll_pwait: a timeout in ms; a restart after a stop
 * keeps the deadline (restart_deadline, as poll and nanosleep do). */
static long epoll_wait_ms(long epfd, void *uev, long max, int ms)
{
	struct thread *t = cur_thread();
	uint64_t deadline = ms < 0 ? POLL_FOREVER : poll_deadline((uint64_t)ms * 1000000);
	long n;

	if (t->restart_deadline) {
		deadline = t->restart_deadline;
		t->restart_deadline = 0;
	}
	n = do_epoll_wait(epfd, uev, max, deadline);
	if (n != -EINTR)
		return n;
	if (deadline != POLL_FOREVER)
		t->restart_deadline = deadline;
	return -ERESTARTNOHAND;
}

SYSCALL_DEFINE(epoll_wait)
{
	return epoll_wait_ms(a0, (void *)a1, a2, (int)a3);
}

SYSCALL_DEFINE(epoll_pwait)
{
	long err = poll_sigmask_begin((const void *)a4, (size_t)a5);

	if (err)
		return err;
	return poll_sigmask_end(epoll_wait_ms(a0, (void *)a1, a2, (int)a3));
}

SYSCALL_DEFINE(epoll_pwait2)
{
	struct thread *t = cur_thread();
	uint64_t deadline = POLL_FOREVER;
	int64_t ts[2];
	long n;

	if (a3) {
		if (copy_from_user(ts, (void *)a3, sizeof(ts)))
			return -EFAULT;
		if (ts[0] < 0 || ts[1] < 0 || ts[1] >= 1000000000)
			return -EINVAL;
		deadline = poll_deadline((uint64_t)ts[0] > (1ULL << 62) / 1000000000
		                             ? ~0ULL
		                             : (uint64_t)ts[0] * 1000000000 + (uint64_t)ts[1]);
	}
	if (t->restart_deadline) {
		deadline = t->restart_deadline;
		t->restart_deadline = 0;
	}
	n = poll_sigmask_begin((const void *)a4, (size_t)a5);
	if (n)
		return n;
	n = do_epoll_wait(a0, (void *)a1, a2, deadline);
	if (n == -EINTR) {
		if (deadline != POLL_FOREVER)
			t->restart_deadline = deadline;
		n = -ERESTARTNOHAND;
	}
	return poll_sigmask_end(n);
}

/* ---------------------------------------------------------------- the epoll file */

/* Readable when epoll_wait would report something. */
static unsigned int ep_poll(struct file *f)
{
	struct eventpoll *ep = f->priv;
	uint64_t now = time_monotonic_ns();
	unsigned int mask = 0;

	if (ep_poll_depth > EP_MAX_NESTS)
		return 0;
	ep_poll_depth++;
	for (struct epitem *it = ep->head; it && !mask; it = it->next) {
		struct file *itf = item_file(it);

		if (itf && !it->disabled && item_due(it, item_mask(it, itf), now, false, false))
			mask = POLLIN | POLLRDNORM;
	}
	ep_poll_depth--;
	return mask;
}

static void ep_poll_wait(struct file *f, struct poll_table *pt)
{
	struct eventpoll *ep = f->priv;

	if (pt->depth > EP_MAX_NESTS)
		return;
	pt->depth++;
	poll_add_wait(pt, &ep->wq);
	for (struct epitem *it = ep->head; it; it = it->next) {
		struct file *itf = item_file(it);

		if (itf && !it->disabled)
			poll_add_file(pt, itf);
	}
	pt->depth--;
}

static void ep_release(struct file *f)
{
	struct eventpoll *ep = f->priv;

	while (ep->head) {
		struct epitem *it = ep->head;

		item_unlink(ep, it);
		kfree(it);
	}
	kfree(ep);
}

static const struct file_ops epoll_ops = {
    .poll = ep_poll,
    .poll_wait = ep_poll_wait,
    .release = ep_release,
    .stream = true,
    .anon_name = "anon_inode:[eventpoll]",
};

/* ---------------------------------------------------------------- create, ctl */

static long ep_create(long flags)
{
	struct eventpoll *ep;
	struct inode *ip;
	struct file *f;
	int fd;

	if (flags & ~(long)EPOLL_CLOEXEC)
		return -EINVAL;
	ep = kzalloc(sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	ip = vfs_inode_anon(0600);
	if (!ip)
		goto err_ep;
	f = file_alloc(ip, &epoll_ops, O_RDWR, ep);
	if (!f)
		goto err_inode;
	fd = fd_alloc(cur_proc()->files, f, 0, flags & EPOLL_CLOEXEC);
	if (fd < 0)
		file_put(f);
	return fd;

err_inode:
	inode_put(ip);
err_ep:
	kfree(ep);
	return -ENOMEM;
}

SYSCALL_DEFINE(epoll_create1)
{
	return ep_create(a0);
}

SYSCALL_DEFINE(epoll_create)
{
	return (int)a0 <= 0 ? -EINVAL : ep_create(0);
}

static long ep_insert(struct eventpoll *ep, int fd, struct file *f, const struct epoll_event *ev)
{
	struct epitem *it = kzalloc(sizeof(*it));

	if (!it)
		return -ENOMEM;
	it->f = f;
	it->ino = vfs_inode_ino(file_inode(f));
	it->fd = fd;
	it->events = ev->events | EPOLLERR | EPOLLHUP;
	it->data = ev->data;
	item_append(ep, it);
	ep_changed(ep);
	return 0;
}

SYSCALL_DEFINE(epoll_ctl)
{
	struct files *files = cur_proc()->files;
	int op = (int)a1, fd = (int)a2;
	struct epoll_event ev = {0};
	struct file *epf, *f;
	struct eventpoll *ep;
	struct epitem *it;

	if (op != EPOLL_CTL_DEL && copy_from_user(&ev, (void *)a3, sizeof(ev)))
		return -EFAULT;
	epf = fd_get(files, (int)a0);
	f = fd_get(files, fd);
	if (!epf || !f)
		return -EBADF;
	if (!f->ops->poll && !f->ops->poll_wait) /* regular files, directories */
		return -EPERM;
	if (epf->ops != &epoll_ops || f == epf)
		return -EINVAL;
	if ((ev.events & EPOLLEXCLUSIVE) &&
	    (op == EPOLL_CTL_MOD ||
	     (op == EPOLL_CTL_ADD && (f->ops == &epoll_ops || (ev.events & ~EP_EXCLUSIVE_OK)))))
		return -EINVAL;
	ep = epf->priv;
	it = ep_find(ep, fd, f);
	switch (op) {
	case EPOLL_CTL_ADD:
		if (it)
			return -EEXIST;
		if (f->ops == &epoll_ops && ep_loops(f->priv, ep, 0))
			return -ELOOP;
		return ep_insert(ep, fd, f, &ev);
	case EPOLL_CTL_MOD:
		if (!it)
			return -ENOENT;
		if (it->events & EPOLLEXCLUSIVE)
			return -EINVAL;
		it->events = ev.events | EPOLLERR | EPOLLHUP;
		it->data = ev.data;
		it->disabled = false;
		it->last = 0; /* as if new: report what is ready now */
		ep_changed(ep);
		return 0;
	case EPOLL_CTL_DEL:
		if (!it)
			return -ENOENT;
		item_unlink(ep, it);
		kfree(it);
		return 0;
	default:
		return -EINVAL;
	}
}
