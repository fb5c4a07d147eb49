/* SPDX-License-Identifier: MIT */
/*
 * Threads on one vCPU. The library OS is never preempted inside itself:
 * a thread runs until it blocks or returns to its program, so library-OS
 * data needs no locks. Programs are preempted by the TSC-deadline timer
 * (the supervisor forwards interrupts that hit program code).
 */
#ifndef KILN_SCHED_H
#define KILN_SCHED_H

#include "klib.h"

struct thread;

/* A wait queue: threads blocked until someone calls wake_all(). A thread
 * may wait on several queues at once (poll) through several entries. */
struct wait_entry {
	struct thread *t;
	struct waitq *wq;
	struct wait_entry *next;
};

struct waitq {
	struct wait_entry *head;
};

enum thread_state {
	T_RUNNABLE = 1,
	T_BLOCKED,
	T_STOPPED, /* job control: SIGSTOP and friends */
	T_DEAD,
};

void sched_init(void);
/* Give up the CPU: run something else until this thread is runnable again
 * (it must be on a wait queue or have a timer, or it sleeps forever). */
void schedule(void);
/* How long the running thread has had the CPU since it was given it. */
uint64_t sched_ran_ns(void);
void sched_make_runnable(struct thread *t);
/* Preemption: the current thread goes to the back of the run queue. */
void sched_yield_current(void);
size_t sched_xsave_size(void);
uint64_t sched_xsave_mask(void);
/* The running thread's vector registers to/from its XSAVE area. */
void sched_fpu_save_current(void);
void sched_fpu_restore_current(void);
/* Is this XSAVE image (from a program) safe to XRSTOR? */
bool sched_fpu_check(const void *area);
/* Preempt at the next return to the program (time slice over, or a
 * higher-priority wakeup). */
void sched_request_resched(void);
bool sched_need_resched(void);
/* The TSC deadline to hand to the supervisor with the call about to be
 * made (SV_HALT, SV_SET_CR3), 0 if the armed one stands. */
uint64_t sched_timer_take(void);
/* A new thread that will start in ret_from_fork with the trapframe at the
 * top of its kernel stack. */
void sched_start_thread(struct thread *t);
/* The current thread is gone: switch away for good. Its stack is freed
 * after the switch. */
__attribute__((noreturn)) void sched_exit_current(void);

/*
 * Block until cond is true, an interrupting signal is pending (returns
 * -EINTR; the syscall decides whether to restart), or the monotonic clock
 * passes deadline_ns (0 = none; returns -ETIMEDOUT). 0 when cond held.
 */
#define WAIT_EVENT(wq, cond, deadline_ns)                     \
	({                                                    \
		long _r = 0;                                  \
		while (!(cond)) {                             \
			_r = wait_block((wq), (deadline_ns)); \
			if (_r && !(cond))                    \
				break;                        \
			_r = 0;                               \
		}                                             \
		_r;                                           \
	})
/* One wait: sleep on wq (may be NULL) until woken, a signal, or the
 * deadline. 0, -EINTR or -ETIMEDOUT. */
long wait_block(struct waitq *wq, uint64_t deadline_ns);
/* Waiting on several queues: add an entry per queue (for the current
 * thread), sleep with wait_sleep(), then remove them all. */
void waitq_add(struct waitq *wq, struct wait_entry *e);
void waitq_del(struct wait_entry *e);
long wait_sleep(uint64_t deadline_ns);
/* Wake every thread with an entry in wq (they remove their own entries). */
void wake_all(struct waitq *wq);
void wake_thread(struct thread *t); /* one blocked thread, wherever it waits */

/* Poll devices and timers: called from the idle loop and after interrupts. */
void irq_poll(void);
/* Device drivers register a poll function run by irq_poll. */
void irq_register(unsigned bit, void (*fn)(void));

#endif
