/* SPDX-License-Identifier: MIT */
/*
 * alarm, setitimer, getitimer: a process's interval timers.
 *
 * ITIMER_REAL sends SIGALRM on the monotonic clock. ITIMER_VIRTUAL and
 * ITIMER_PROF should count the process's CPU time; here they count real
 * time too (SIGVTALRM, SIGPROF), like the CPU-time clocks of sys_time.c:
 * one vCPU, and a program that waits for them is usually computing.
 *
 * The timers survive execve and are not inherited by fork, as in Linux.
 * They live here, keyed by process, rather than in struct proc: a process
 * is known by its pid, address and start time, so a timer of a process
 * that is gone is dropped when it fires or when the table is next looked
 * through (nothing tells this file that a process ended).
 */
#include <asm/signal.h>

#include "ktime.h"
#include "ktimer.h"
#include "mm.h"
#include "proc.h"
#include "syscall.h"
#include "uaccess.h"

#define NSEC      1000000000ULL
#define NR_TIMERS 3 /* ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF */

struct itimers;

struct itimer {
	struct ktimer kt;  /* queued while armed */
	uint64_t expires;  /* the deadline it was queued for */
	uint64_t interval; /* ns; 0: one-shot */
	struct itimers *set;
	int which;
};

struct itimers {
	struct itimers *next;
	struct proc *p; /* never dereferenced before proc_alive() */
	int pid;
	uint64_t start_ns;
	struct itimer it[NR_TIMERS];
};

struct kitimerval {
	int64_t interval_sec, interval_usec, value_sec, value_usec;
};

static struct itimers *all_sets;
static const int timer_signal[NR_TIMERS] = {SIGALRM, SIGVTALRM, SIGPROF};

static bool proc_alive(const struct itimers *s)
{
	struct proc *p = proc_find(s->pid);

	return p && p == s->p && p->start_ns == s->start_ns && !p->exiting;
}

static bool set_idle(const struct itimers *s)
{
	for (int i = 0; i < NR_TIMERS; i++)
		if (ktimer_pending(&s->it[i].kt))
			return false;
	return true;
}

/* Drop the sets of processes that are gone, and those with nothing armed. */
static void sets_sweep(void)
{
	for (struct itimers **pp = &all_sets; *pp;) {
		struct itimers *s = *pp;

		if (set_idle(s) || !proc_alive(s)) {
			*pp = s->next;
			for (int i = 0; i < NR_TIMERS; i++)
				ktimer_del(&s->it[i].kt);
			kfree(s);
		} else {
			pp = &s->next;
		}
	}
}

static struct itimers *set_of(struct proc *p, bool create)
{
	struct itimers *s;

	for (s = all_sets; s; s = s->next)
		if (s->p == p && s->pid == p->pid && s->start_ns == p->start_ns)
			return s;
	if (!create)
		return NULL;
	s = kzalloc(sizeof(*s));
	if (!s)
		return NULL;
	s->p = p;
	s->pid = p->pid;
	s->start_ns = p->start_ns;
	for (int i = 0; i < NR_TIMERS; i++) {
		s->it[i].set = s;
		s->it[i].which = i;
	}
	s->next = all_sets;
	all_sets = s;
	return s;
}

static void itimer_fire(struct ktimer *kt)
{
	struct itimer *it = container_of(kt, struct itimer, kt);
	struct itimers *s = it->set;
	uint64_t now, next;

	if (!proc_alive(s))
		return; /* the next sweep frees the set */
	signal_send_proc(s->p, timer_signal[it->which], NULL);
	if (it->interval) {
		/* The next period after now: missed periods give no signal. */
		now = time_monotonic_ns();
		next = it->expires + it->interval;
		if (next <= now)
			next = now + it->interval - (now - it->expires) % it->interval;
		it->expires = next;
		ktimer_add(kt, next, itimer_fire);
	}
}

/* The timer's value and interval as of now, in ns. */
static void itimer_get(struct proc *p, int which, uint64_t *value, uint64_t *interval)
{
	struct itimers *s = set_of(p, false);
	struct itimer *it = s ? &s->it[which] : NULL;
	uint64_t now = time_monotonic_ns();

	*value = *interval = 0;
	if (!it || !ktimer_pending(&it->kt))
		return;
	*interval = it->interval;
	/* Linux reports an expired, not yet handled timer as 1 us left. */
	*value = it->kt.deadline > now ? it->kt.deadline - now : 1000;
}

/* Arm (value > 0) or disarm the timer. 0 or -ENOMEM. */
static long itimer_set(struct proc *p, int which, uint64_t value, uint64_t interval)
{
	struct itimers *s;

	sets_sweep();
	s = set_of(p, value != 0);
	if (!s)
		return value ? -ENOMEM : 0;
	ktimer_del(&s->it[which].kt);
	s->it[which].interval = interval;
	if (value) {
		s->it[which].expires = time_monotonic_ns() + value;
		ktimer_add(&s->it[which].kt, s->it[which].expires, itimer_fire);
	}
	return 0;
}

static bool tv_valid(int64_t sec, int64_t usec)
{
	return sec >= 0 && usec >= 0 && usec < 1000000;
}

static uint64_t tv_ns(int64_t sec, int64_t usec)
{
	if ((uint64_t)sec > (1ULL << 62) / NSEC)
		return 1ULL << 62;
	return (uint64_t)sec * NSEC + (uint64_t)usec * 1000;
}

static void tv_put(int64_t *sec, int64_t *usec, uint64_t ns)
{
	*sec = (int64_t)(ns / NSEC);
	*usec = (int64_t)(ns % NSEC / 1000);
	if (!*sec && !*usec && ns) /* never round a running timer down to 0 */
		*usec = 1;
}

static long put_itimerval(void *u, uint64_t value, uint64_t interval)
{
	struct kitimerval v;

	tv_put(&v.interval_sec, &v.interval_usec, interval);
	tv_put(&v.value_sec, &v.value_usec, value);
	return copy_to_user(u, &v, sizeof(v));
}

SYSCALL_DEFINE(getitimer)
{
	uint64_t value, interval;

	if (a0 < 0 || a0 >= NR_TIMERS)
		return -EINVAL;
	itimer_get(cur_proc(), (int)a0, &value, &interval);
	return put_itimerval((void *)a1, value, interval);
}

SYSCALL_DEFINE(setitimer)
{
	struct proc *p = cur_proc();
	struct kitimerval nw = {0};
	uint64_t value, interval;
	long err;

	if (a0 < 0 || a0 >= NR_TIMERS)
		return -EINVAL;
	/* A NULL new value disarms, as Linux still allows. */
	if (a1 && copy_from_user(&nw, (void *)a1, sizeof(nw)))
		return -EFAULT;
	if (!tv_valid(nw.interval_sec, nw.interval_usec) || !tv_valid(nw.value_sec, nw.value_usec))
		return -EINVAL;
	itimer_get(p, (int)a0, &value, &interval);
	err = itimer_set(p, (int)a0, tv_ns(nw.value_sec, nw.value_usec),
	                 tv_ns(nw.interval_sec, nw.interval_usec));
	if (err)
		return err;
	if (a2 && put_itimerval((void *)a2, value, interval))
		return -EFAULT;
	return 0;
}

/* alarm: ITIMER_REAL in whole seconds; the seconds that were left, rounded
 * to the nearest (at least 1 if any time was left), as Linux does. */
SYSCALL_DEFINE(alarm)
{
	struct proc *p = cur_proc();
	uint64_t value, interval, secs = (unsigned int)a0;
	long err;

	itimer_get(p, 0, &value, &interval);
	err = itimer_set(p, 0, secs * NSEC, 0);
	if (err)
		return err;
	if (!value)
		return 0;
	return MAX((value + NSEC / 2) / NSEC, 1);
}
