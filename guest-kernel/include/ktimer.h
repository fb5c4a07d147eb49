/* SPDX-License-Identifier: MIT */
/*
 * Kernel timers: a callback at a monotonic-clock deadline, for timers that
 * fire while nobody waits (alarm, setitimer, timerfd). Sleeping threads use
 * the scheduler's own per-thread timer (wait_sleep) instead.
 *
 * Callbacks run from irq_poll(): in schedule() or on an interrupt that hit
 * program code, never inside another syscall's work. They may send signals,
 * wake queues and re-add their own timer (for a later deadline).
 */
#ifndef KILN_KTIMER_H
#define KILN_KTIMER_H

#include "klib.h"

struct ktimer {
	uint64_t deadline; /* monotonic ns; 0 while not queued */
	void (*fn)(struct ktimer *kt);
	struct ktimer *next;
};

/* Queue kt (removing it first if queued) to run fn at deadline (> 0). */
void ktimer_add(struct ktimer *kt, uint64_t deadline, void (*fn)(struct ktimer *kt));
void ktimer_del(struct ktimer *kt);
static inline bool ktimer_pending(const struct ktimer *kt)
{
	return kt->deadline != 0;
}

/* For the scheduler (sched.c): run the expired timers; the earliest
 * deadline queued, 0 if none. */
void ktimer_expire(void);
uint64_t ktimer_next(void);
/* sched.c: re-arm the TSC deadline after the earliest timer changed. */
void sched_timer_rearm(void);

#endif
