/* SPDX-License-Identifier: MIT */
/*
 * timerfd_create, timerfd_settime, timerfd_gettime: a timer whose
 * expirations are read from a descriptor as a 64-bit count.
 *
 * Expirations are counted from the clock when asked (read, poll, gettime),
 * so a periodic timer nobody watches costs nothing; the kernel timer only
 * wakes whoever waits. Deadlines are kept on the monotonic clock, or on
 * CLOCK_BOOTTIME for its timers, which also count the time the VM spent
 * paused (as Linux's count a suspend); a reader blocked across a pause is
 * woken on the monotonic clock, late by the pause, and then counts right.
 * An absolute CLOCK_REALTIME time is converted once, when set: a later
 * change of the real-time clock does not move it, and
 * TFD_TIMER_CANCEL_ON_SET is accepted but never cancels.
 */
#include <linux/fcntl.h>
#include <linux/poll.h>
#include <linux/time.h>
#include <linux/timerfd.h>

#include "errno_k.h"
#include "kpoll.h"
#include "ktime.h"
#include "ktimer.h"
#include "mm.h"
#include "proc.h"
#include "syscall.h"
#include "vfs.h"

#define NSEC 1000000000ULL

#ifndef CLOCK_REALTIME_ALARM
#define CLOCK_REALTIME_ALARM 8
#define CLOCK_BOOTTIME_ALARM 9
#endif

struct timerfd {
	int clockid;
	uint64_t ticks;    /* expirations not read yet */
	uint64_t next;     /* monotonic ns of the next expiration; 0: disarmed */
	uint64_t interval; /* ns; 0: one-shot */
	int refs;          /* the file, and reads waiting */
	struct ktimer kt;
	struct waitq wq;
};

struct kitimerspec {
	int64_t interval_sec, interval_nsec, value_sec, value_nsec;
};

static const struct file_ops timerfd_ops;

static bool is_boottime(const struct timerfd *t)
{
	return t->clockid == CLOCK_BOOTTIME || t->clockid == CLOCK_BOOTTIME_ALARM;
}

/* Now, on the clock t->next is kept on. */
static uint64_t tfd_now(const struct timerfd *t)
{
	return is_boottime(t) ? time_boottime_ns() : time_monotonic_ns();
}

static void tfd_fire(struct ktimer *kt);

/* The kernel timer runs on the monotonic clock. */
static void tfd_timer_add(struct timerfd *t)
{
	uint64_t at = t->next;

	if (is_boottime(t)) {
		uint64_t paused = time_boottime_ns() - time_monotonic_ns();
		at = at > paused ? at - paused : 1;
	}
	ktimer_add(&t->kt, at, tfd_fire);
}

/* Count the expirations up to now. */
static void tfd_update(struct timerfd *t)
{
	uint64_t now = tfd_now(t), n;

	if (!t->next || now < t->next)
		return;
	if (t->interval) {
		n = (now - t->next) / t->interval + 1;
		t->ticks += n;
		t->next += n * t->interval;
	} else {
		t->ticks++;
		t->next = 0;
	}
}

static void tfd_fire(struct ktimer *kt)
{
	struct timerfd *t = container_of(kt, struct timerfd, kt);

	tfd_update(t);
	if (t->next && t->wq.head) /* still waited for: the next one too */
		tfd_timer_add(t);
	wake_all(&t->wq);
}

/* Someone is about to wait: make sure the next expiration wakes them. */
static void tfd_arm(struct timerfd *t)
{
	if (t->next && !ktimer_pending(&t->kt))
		tfd_timer_add(t);
}

static bool tfd_ready(struct timerfd *t)
{
	tfd_update(t);
	if (!t->ticks)
		tfd_arm(t);
	return t->ticks;
}

static void tfd_put(struct timerfd *t)
{
	if (--t->refs)
		return;
	ktimer_del(&t->kt);
	kfree(t);
}

static long tfd_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct timerfd *t = f->priv;
	long r;

	if (n < sizeof(t->ticks))
		return -EINVAL;
	if (!tfd_ready(t) && (f->flags & O_NONBLOCK))
		return -EAGAIN;
	t->refs++;
	r = WAIT_EVENT(&t->wq, tfd_ready(t), 0);
	if (!r) {
		r = iob_to(b, 0, &t->ticks, sizeof(t->ticks));
		if (!r) {
			t->ticks = 0;
			r = sizeof(t->ticks);
		}
	} else {
		r = -ERESTARTSYS;
	}
	tfd_put(t);
	return r;
}

static unsigned int tfd_poll(struct file *f)
{
	struct timerfd *t = f->priv;

	tfd_update(t);
	return t->ticks ? POLLIN | POLLRDNORM : 0;
}

static void tfd_poll_wait(struct file *f, struct poll_table *pt)
{
	struct timerfd *t = f->priv;

	poll_add_wait(pt, &t->wq);
	tfd_arm(t);
}

static void tfd_release(struct file *f)
{
	tfd_put(f->priv);
}

static const struct file_ops timerfd_ops = {
    .read = tfd_read,
    .poll = tfd_poll,
    .poll_wait = tfd_poll_wait,
    .release = tfd_release,
    .stream = true,
    .anon_name = "anon_inode:[timerfd]",
};

static struct timerfd *tfd_get(long fd)
{
	struct file *f = fd_get(cur_proc()->files, (int)fd);

	return f && f->ops == &timerfd_ops ? f->priv : NULL;
}

SYSCALL_DEFINE(timerfd_create)
{
	int clockid = (int)a0;
	long flags = a1;
	struct timerfd *t;
	struct inode *ip;
	struct file *f;
	int fd;

	if (clockid != CLOCK_REALTIME && clockid != CLOCK_MONOTONIC && clockid != CLOCK_BOOTTIME &&
	    clockid != CLOCK_REALTIME_ALARM && clockid != CLOCK_BOOTTIME_ALARM)
		return -EINVAL;
	if (flags & ~(long)(TFD_CLOEXEC | TFD_NONBLOCK))
		return -EINVAL;
	t = kzalloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->clockid = clockid;
	t->refs = 1;
	ip = vfs_inode_anon(0600);
	if (!ip)
		goto err_ctx;
	f = file_alloc(ip, &timerfd_ops, O_RDWR | (flags & TFD_NONBLOCK), t);
	if (!f)
		goto err_inode;
	fd = fd_alloc(cur_proc()->files, f, 0, flags & TFD_CLOEXEC);
	if (fd < 0)
		file_put(f);
	return fd;

err_inode:
	inode_put(ip);
err_ctx:
	kfree(t);
	return -ENOMEM;
}

static bool ts_valid(int64_t sec, int64_t nsec)
{
	return sec >= 0 && nsec >= 0 && nsec < (int64_t)NSEC;
}

static uint64_t ts_ns(int64_t sec, int64_t nsec)
{
	if ((uint64_t)sec > (1ULL << 62) / NSEC)
		return 1ULL << 62; /* a century and more: never, in practice */
	return (uint64_t)sec * NSEC + (uint64_t)nsec;
}

static void ts_put(int64_t *sec, int64_t *nsec, uint64_t ns)
{
	*sec = (int64_t)(ns / NSEC);
	*nsec = (int64_t)(ns % NSEC);
}

static void tfd_current(struct timerfd *t, struct kitimerspec *its)
{
	uint64_t now = tfd_now(t);

	tfd_update(t);
	ts_put(&its->interval_sec, &its->interval_nsec, t->interval);
	ts_put(&its->value_sec, &its->value_nsec, t->next > now ? t->next - now : 0);
}

SYSCALL_DEFINE(timerfd_settime)
{
	struct timerfd *t;
	struct kitimerspec nw, old;
	int flags = (int)a1;
	uint64_t value, now;

	if (copy_from_user(&nw, (void *)a2, sizeof(nw)))
		return -EFAULT;
	if ((flags & ~(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)) ||
	    !ts_valid(nw.interval_sec, nw.interval_nsec) || !ts_valid(nw.value_sec, nw.value_nsec))
		return -EINVAL;
	t = tfd_get(a0);
	if (!t)
		return fd_get(cur_proc()->files, (int)a0) ? -EINVAL : -EBADF;
	tfd_current(t, &old);
	ktimer_del(&t->kt);
	t->ticks = 0;
	t->interval = ts_ns(nw.interval_sec, nw.interval_nsec);
	t->next = 0;
	value = ts_ns(nw.value_sec, nw.value_nsec);
	if (value) {
		now = tfd_now(t);
		if (!(flags & TFD_TIMER_ABSTIME)) {
			t->next = now + value;
		} else if (t->clockid == CLOCK_REALTIME || t->clockid == CLOCK_REALTIME_ALARM) {
			uint64_t real = time_realtime_ns();
			t->next = now + (value > real ? value - real : 0);
		} else {
			t->next = value;
		}
		t->next = MAX(t->next, 1);
		tfd_timer_add(t);
	}
	if (a3 && copy_to_user((void *)a3, &old, sizeof(old)))
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE(timerfd_gettime)
{
	struct timerfd *t = tfd_get(a0);
	struct kitimerspec cur;

	if (!t)
		return fd_get(cur_proc()->files, (int)a0) ? -EINVAL : -EBADF;
	tfd_current(t, &cur);
	return copy_to_user((void *)a1, &cur, sizeof(cur));
}
