/* SPDX-License-Identifier: MIT */
/*
 * poll, ppoll, select, pselect6, and the poll tables (kpoll.h) that they,
 * epoll and the pollable files share.
 *
 * A signal ends a wait with -ERESTARTNOHAND: EINTR when a handler ran, a
 * restart otherwise (after SIGSTOP/SIGCONT). poll keeps its deadline for
 * the restart in restart_deadline, as nanosleep does; ppoll, select and
 * pselect6 write the time left back to the program, as Linux does, and the
 * restart reads it from there.
 */
#include <asm/signal.h>
#include <linux/poll.h>

#include "errno_k.h"
#include "kpoll.h"
#include "ktime.h"
#include "mm.h"
#include "proc.h"
#include "syscall.h"
#include "vfs.h"

#define NSEC 1000000000ULL

/* select's classes of readiness (Linux's POLLIN_SET ...). */
#define SEL_IN  (POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR)
#define SEL_OUT (POLLOUT | POLLWRNORM | POLLWRBAND | POLLERR)
#define SEL_EX  (POLLPRI)

/* ---------------------------------------------------------------- poll tables */

void poll_table_init(struct poll_table *pt)
{
	pt->first.next = NULL;
	pt->first.n = 0;
	pt->last = &pt->first;
	pt->err = 0;
	pt->depth = 0;
}

static struct poll_slot *slot_new(struct poll_table *pt)
{
	struct poll_chunk *c = pt->last;

	if (c->n == POLL_CHUNK_SLOTS) {
		c = kmalloc(sizeof(*c));
		if (!c) {
			pt->err = -ENOMEM;
			return NULL;
		}
		c->next = NULL;
		c->n = 0;
		pt->last->next = c;
		pt->last = c;
	}
	c->slot[c->n].e.wq = NULL;
	c->slot[c->n].f = NULL;
	return &c->slot[c->n++];
}

void poll_add_wait(struct poll_table *pt, struct waitq *wq)
{
	struct poll_slot *s = slot_new(pt);

	if (s)
		waitq_add(wq, &s->e);
}

void poll_add_file(struct poll_table *pt, struct file *f)
{
	struct poll_slot *s = slot_new(pt);

	if (!s)
		return;
	file_get(f);
	s->f = f;
	if (f->ops->poll_wait)
		f->ops->poll_wait(f, pt);
}

void poll_table_free(struct poll_table *pt)
{
	struct poll_chunk *c, *next;

	/* Off every queue before a file (and a queue in it) can go. */
	for (c = &pt->first; c; c = c->next)
		for (int i = 0; i < c->n; i++)
			waitq_del(&c->slot[i].e);
	for (c = &pt->first; c; c = next) {
		next = c->next;
		for (int i = 0; i < c->n; i++)
			if (c->slot[i].f)
				file_put(c->slot[i].f);
		if (c != &pt->first)
			kfree(c);
	}
	poll_table_init(pt);
}

/* ---------------------------------------------------------------- shared helpers */

uint64_t poll_deadline(uint64_t rel_ns)
{
	if (!rel_ns)
		return POLL_NOW;
	if (rel_ns > (1ULL << 62)) /* centuries: the same as never */
		return POLL_FOREVER;
	return time_monotonic_ns() + rel_ns;
}

long poll_sigmask_begin(const void *usigmask, size_t size)
{
	struct thread *t = cur_thread();
	uint64_t set;

	if (!usigmask)
		return 0;
	if (size != sizeof(set))
		return -EINVAL;
	if (copy_from_user(&set, usigmask, sizeof(set)))
		return -EFAULT;
	t->saved_sigmask = t->sigmask;
	t->restore_sigmask = true;
	t->sigmask = set & ~(SIGBIT(SIGKILL) | SIGBIT(SIGSTOP));
	return 0;
}

long poll_sigmask_end(long ret)
{
	struct thread *t = cur_thread();

	if (ret != -ERESTARTNOHAND && ret != -EINTR && t->restore_sigmask) {
		t->sigmask = t->saved_sigmask;
		t->restore_sigmask = false;
	}
	return ret;
}

/*
 * Call scan until it reports something (> 0) or fails (< 0), the deadline
 * passes (0) or a signal comes (-EINTR). scan(arg, pt) with pt set must
 * also poll_add_file() every file it looks at.
 */
static long poll_loop(long (*scan)(void *arg, struct poll_table *pt), void *arg, uint64_t deadline)
{
	struct poll_table pt;
	long n = scan(arg, NULL), err;

	if (n || deadline == POLL_NOW)
		return n;
	poll_table_init(&pt);
	n = scan(arg, &pt);
	while (!n && !pt.err) {
		err = wait_sleep(deadline);
		n = scan(arg, NULL);
		if (!n && err)
			n = err == -ETIMEDOUT ? 0 : err;
		if (err == -ETIMEDOUT)
			break;
	}
	if (!n && pt.err)
		n = pt.err;
	poll_table_free(&pt);
	return n;
}

/* A timespec or timeval from the program as a deadline. */
static long get_timeout(const void *uts, bool timeval, uint64_t *deadline)
{
	int64_t ts[2];
	uint64_t ns;

	if (!uts) {
		*deadline = POLL_FOREVER;
		return 0;
	}
	if (copy_from_user(ts, uts, sizeof(ts)))
		return -EFAULT;
	if (ts[0] < 0 || ts[1] < 0)
		return -EINVAL;
	if (timeval) { /* select normalizes tv_usec >= 1000000 */
		ts[0] += ts[1] / 1000000;
		ts[1] = ts[1] % 1000000 * 1000;
	} else if (ts[1] >= (int64_t)NSEC) {
		return -EINVAL;
	}
	ns = (uint64_t)ts[0] > (1ULL << 62) / NSEC ? ~0ULL : (uint64_t)ts[0] * NSEC + ts[1];
	*deadline = poll_deadline(ns);
	return 0;
}

/* What is left of the timeout, back to the program (select, pselect6,
 * ppoll). A restart after a signal reads it. ret as the call returns it. */
static long put_timeout(void *uts, bool timeval, uint64_t deadline, long ret)
{
	uint64_t now = time_monotonic_ns(), left;
	int64_t ts[2];

	if (!uts || deadline == POLL_FOREVER || deadline == POLL_NOW)
		return ret;
	left = deadline > now ? deadline - now : 0;
	ts[0] = (int64_t)(left / NSEC);
	ts[1] = (int64_t)(left % NSEC);
	if (timeval)
		ts[1] /= 1000;
	if (copy_to_user(uts, ts, sizeof(ts)) && ret == -ERESTARTNOHAND)
		ret = -EINTR; /* a restart would wait the whole time again */
	return ret;
}

/* ---------------------------------------------------------------- poll, ppoll */

struct poll_args {
	struct pollfd *fds;
	unsigned int n;
};

static long poll_scan(void *arg, struct poll_table *pt)
{
	struct poll_args *a = arg;
	struct files *files = cur_proc()->files;
	long count = 0;

	for (unsigned int i = 0; i < a->n; i++) {
		struct pollfd *p = &a->fds[i];
		struct file *f;

		p->revents = 0;
		if (p->fd < 0)
			continue;
		f = fd_get(files, p->fd);
		if (!f) {
			p->revents = POLLNVAL;
		} else {
			if (pt)
				poll_add_file(pt, f);
			p->revents = file_poll(f) & ((uint16_t)p->events | POLLERR | POLLHUP);
		}
		if (p->revents)
			count++;
	}
	return count;
}

static long do_poll(struct pollfd *ufds, unsigned long nfds, uint64_t deadline)
{
	struct poll_args a = {NULL, (unsigned int)nfds};
	size_t size = nfds * sizeof(struct pollfd);
	long n;

	if (nfds > FILES_MAX)
		return -EINVAL;
	a.fds = kmalloc(size ? size : 1);
	if (!a.fds)
		return -ENOMEM;
	if (copy_from_user(a.fds, ufds, size)) {
		kfree(a.fds);
		return -EFAULT;
	}
	n = poll_loop(poll_scan, &a, deadline);
	if (n == -EINTR)
		n = -ERESTARTNOHAND;
	for (unsigned int i = 0; i < a.n; i++)
		if (copy_to_user(&ufds[i].revents, &a.fds[i].revents, sizeof(a.fds[i].revents))) {
			n = -EFAULT;
			break;
		}
	kfree(a.fds);
	return n;
}

SYSCALL_DEFINE(poll)
{
	struct thread *t = cur_thread();
	int ms = (int)a2;
	uint64_t deadline = ms < 0 ? POLL_FOREVER : poll_deadline((uint64_t)ms * 1000000);
	long n;

	if (t->restart_deadline) { /* restarted after a stop: the same end */
		deadline = t->restart_deadline;
		t->restart_deadline = 0;
	}
	n = do_poll((struct pollfd *)a0, (unsigned long)a1, deadline);
	if (n == -ERESTARTNOHAND && deadline != POLL_FOREVER)
		t->restart_deadline = deadline;
	return n;
}

SYSCALL_DEFINE(ppoll)
{
	void *uts = (void *)a2;
	uint64_t deadline;
	long err = get_timeout(uts, false, &deadline);

	if (!err && a3)
		err = poll_sigmask_begin((const void *)a3, (size_t)a4);
	if (err)
		return err;
	err = do_poll((struct pollfd *)a0, (unsigned long)a1, deadline);
	return poll_sigmask_end(put_timeout(uts, false, deadline, err));
}

/* ---------------------------------------------------------------- select, pselect6 */

#define SEL_WORDS (FILES_MAX / 64)

struct select_args {
	int nfds;
	uint64_t in[3][SEL_WORDS];  /* read, write, except: what was asked */
	uint64_t out[3][SEL_WORDS]; /* what is ready */
};

static long select_scan(void *arg, struct poll_table *pt)
{
	static const unsigned int class[3] = {SEL_IN, SEL_OUT, SEL_EX};
	struct select_args *a = arg;
	struct files *files = cur_proc()->files;
	long count = 0;

	memset(a->out, 0, sizeof(a->out));
	for (int w = 0; w * 64 < a->nfds; w++) {
		uint64_t any = a->in[0][w] | a->in[1][w] | a->in[2][w];

		while (any) {
			int bit = __builtin_ctzll(any), fd = w * 64 + bit;
			struct file *f = fd_get(files, fd);
			unsigned int mask;

			any &= any - 1;
			if (!f)
				return -EBADF;
			if (pt)
				poll_add_file(pt, f);
			mask = file_poll(f);
			for (int c = 0; c < 3; c++)
				if ((a->in[c][w] & (1ULL << bit)) && (mask & class[c])) {
					a->out[c][w] |= 1ULL << bit;
					count++;
				}
		}
	}
	return count;
}

static long do_select(int nfds, uint64_t *usets[3], void *uts, bool timeval, uint64_t deadline)
{
	struct select_args *a;
	size_t bytes;
	long n;

	if (nfds < 0)
		return -EINVAL;
	nfds = MIN(nfds, FILES_MAX);
	bytes = (size_t)(nfds + 63) / 64 * 8;
	a = kzalloc(sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->nfds = nfds;
	for (int c = 0; c < 3; c++)
		if (usets[c] && copy_from_user(a->in[c], usets[c], bytes)) {
			kfree(a);
			return -EFAULT;
		}
	/* Bits past nfds in the last word are not ours to look at. */
	if (nfds % 64)
		for (int c = 0; c < 3; c++)
			a->in[c][nfds / 64] &= (1ULL << (nfds % 64)) - 1;
	n = poll_loop(select_scan, a, deadline);
	if (n == -EINTR)
		n = -ERESTARTNOHAND;
	if (n >= 0)
		for (int c = 0; c < 3; c++)
			if (usets[c] && copy_to_user(usets[c], a->out[c], bytes)) {
				n = -EFAULT;
				break;
			}
	kfree(a);
	return put_timeout(uts, timeval, deadline, n);
}

SYSCALL_DEFINE(select)
{
	uint64_t *sets[3] = {(uint64_t *)a1, (uint64_t *)a2, (uint64_t *)a3};
	uint64_t deadline;
	long err = get_timeout((void *)a4, true, &deadline);

	return err ? err : do_select((int)a0, sets, (void *)a4, true, deadline);
}

SYSCALL_DEFINE(pselect6)
{
	uint64_t *sets[3] = {(uint64_t *)a1, (uint64_t *)a2, (uint64_t *)a3};
	struct {
		const void *set;
		size_t size;
	} sig = {NULL, 0};
	uint64_t deadline;
	long err = get_timeout((void *)a4, false, &deadline);

	if (!err && a5 && copy_from_user(&sig, (void *)a5, sizeof(sig)))
		err = -EFAULT;
	if (!err)
		err = poll_sigmask_begin(sig.set, sig.size);
	if (err)
		return err;
	err = do_select((int)a0, sets, (void *)a4, false, deadline);
	return poll_sigmask_end(err);
}
