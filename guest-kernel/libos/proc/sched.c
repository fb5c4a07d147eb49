/* SPDX-License-Identifier: MIT */
/*
 * Run queue, context switches, wait queues, timers and idle. One vCPU; the
 * library OS itself is never preempted, so there is no locking here. The
 * queue is taken in turn, but between PID namespaces by their CPU shares
 * (fair.h).
 */
#include "fair.h"
#include "kcpu.h"
#include "ktime.h"
#include "ktimer.h"
#include "printk.h"
#include "proc.h"
#include "sched.h"
#include "sv.h"
#include "trapframe.h"
#include "vm.h"

#define SLICE_NS 10000000ULL /* 10 ms time slice when others are runnable */

static struct thread *runq_head, *runq_tail;
static struct thread *timers; /* sorted by wake_at */
static struct thread *dead;   /* exited threads whose stacks can go */
static bool resched;
static uint64_t slice_end, armed_deadline;
/* when the running thread was given the CPU (0: init, since its start) */
static uint64_t ran_from;
/* armed_deadline is chosen but not yet handed to the supervisor: that
 * waits for its next call (a CR3 switch, a halt), or the return to the
 * program at the latest (sched_need_resched). */
static bool timer_unsent;
static void (*irq_fn[64])(void);
static uint64_t xsave_mask = ~0ULL;
static size_t xsave_size;

void switch_to(uint64_t *save_ksp, uint64_t ksp);
void ret_from_fork(void);

void sched_init(void)
{
	/* XCR0 may include state (AMX tiles) that XSAVE handles lazily; save
	 * whatever the CPU has enabled. XCR0 never changes, nor with it the
	 * area's size: asked once, as CPUID at CPL3 is a host exit (every
	 * thread's start and end and every signal asked again: 4 exits per
	 * fork+exec+wait of a shell's child). */
	uint32_t a = 0xd, b, c = 0, d;

	asm volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	xsave_mask = ((uint64_t)d << 32) | a;
	xsave_size = b;
}

size_t sched_xsave_size(void)
{
	return xsave_size;
}

static void fpu_save(void *area)
{
	asm volatile("xsave64 (%0)" ::"r"(area), "a"((uint32_t)xsave_mask),
	             "d"((uint32_t)(xsave_mask >> 32))
	             : "memory");
}

static void fpu_restore(void *area)
{
	asm volatile("xrstor64 (%0)" ::"r"(area), "a"((uint32_t)xsave_mask),
	             "d"((uint32_t)(xsave_mask >> 32))
	             : "memory");
}

uint64_t sched_xsave_mask(void)
{
	return xsave_mask;
}

void sched_fpu_save_current(void)
{
	fpu_save(cur_thread()->fpu);
}

void sched_fpu_restore_current(void)
{
	fpu_restore(cur_thread()->fpu);
}

/* XRSTOR faults on a bad header or MXCSR; a program's signal frame must not
 * be able to make the library OS fault. */
bool sched_fpu_check(const void *area)
{
	const uint8_t *a = area;
	uint32_t mxcsr;
	uint64_t xstate_bv, xcomp_bv, reserved[6];

	memcpy(&mxcsr, a + 24, 4);
	memcpy(&xstate_bv, a + 512, 8);
	memcpy(&xcomp_bv, a + 520, 8);
	memcpy(reserved, a + 528, sizeof(reserved));
	if (mxcsr & 0xffff0000U)
		return false;
	if (xstate_bv & ~xsave_mask || xcomp_bv)
		return false;
	for (unsigned i = 0; i < 6; i++)
		if (reserved[i])
			return false;
	return true;
}

static void runq_push(struct thread *t)
{
	t->next_run = NULL;
	if (runq_tail)
		runq_tail->next_run = t;
	else
		runq_head = t;
	runq_tail = t;
}

static int ns_of(const struct thread *t)
{
	return t->proc ? t->proc->pidns : 0;
}

/* The first queued thread of the namespace least ahead (fair.h): the head
 * when all are of one namespace. */
static struct thread *runq_pop(void)
{
	struct thread *t = runq_head, *before = NULL;

	if (!t)
		return NULL;
	for (struct thread *p = t, *q = t->next_run; q; p = q, q = q->next_run)
		if (fair_before(ns_of(q), ns_of(t))) {
			t = q;
			before = p;
		}
	if (before)
		before->next_run = t->next_run;
	else
		runq_head = t->next_run;
	if (runq_tail == t)
		runq_tail = before;
	fair_picked(ns_of(t));
	return t;
}

void sched_make_runnable(struct thread *t)
{
	if (t->state == T_RUNNABLE || t->state == T_DEAD)
		return;
	t->state = T_RUNNABLE;
	runq_push(t);
}

void sched_request_resched(void)
{
	resched = true;
}

static void timer_rearm(void);

/* Others became runnable while we ran alone (a fork, a wakeup): our slice
 * starts now, or a busy loop would keep them out. */
static void slice_start(void)
{
	if (runq_head && !slice_end) {
		slice_end = time_monotonic_ns() + SLICE_NS;
		timer_rearm();
	}
}

bool sched_need_resched(void)
{
	slice_start();
	if (!resched && runq_head && slice_end && time_monotonic_ns() >= slice_end)
		resched = true;
	if (unlikely(timer_unsent))
		sv_set_timer(sched_timer_take());
	return resched;
}

uint64_t sched_timer_take(void)
{
	slice_start();
	if (!timer_unsent)
		return 0;
	timer_unsent = false;
	return time_ns_to_tsc_deadline(armed_deadline);
}

/* ---------------------------------------------------------------- timers */

static void timer_add(struct thread *t, uint64_t at)
{
	struct thread **pp = &timers;

	t->wake_at = at;
	while (*pp && (*pp)->wake_at <= at)
		pp = &(*pp)->next_timer;
	t->next_timer = *pp;
	*pp = t;
}

static void timer_del(struct thread *t)
{
	for (struct thread **pp = &timers; *pp; pp = &(*pp)->next_timer) {
		if (*pp == t) {
			*pp = t->next_timer;
			break;
		}
	}
	t->wake_at = 0;
}

static void timers_expire(void)
{
	uint64_t now = time_monotonic_ns();

	while (timers && timers->wake_at <= now) {
		struct thread *t = timers;
		timers = t->next_timer;
		t->wake_at = 0;
		t->timed_out = true;
		wake_thread(t);
	}
}

/* The next timed wakeup (a sleeper's or a kernel timer's), 0 if none. */
static uint64_t timer_next(void)
{
	uint64_t want = timers ? timers->wake_at : 0, kt = ktimer_next();

	if (kt && (!want || kt < want))
		want = kt;
	return want;
}

/* The TSC deadline: the next timer (a sleeper's or a kernel timer's,
 * ktimer.c), or the end of the slice when others wait to run. Arming costs
 * a supervisor call, so only when it must come sooner, and then with the
 * next call that is made anyway (timer_unsent). A deadline no longer
 * wanted is not disarmed while there is work: it fires, and irq_poll finds
 * nothing due. Only an idle CPU replaces it (idle_halt). */
static void timer_rearm(void)
{
	uint64_t want = timer_next(), now = time_monotonic_ns();

	/* A slice already over needs no interrupt: the switch it asks for is
	 * made at the next return to the program (sched_need_resched), which
	 * starts the next slice. Armed anyway, the deadline in the past fired
	 * again at once (a python3 started by a shell that vforked it: its
	 * slice's interrupt, then one more before the shell got the CPU). */
	if (runq_head && slice_end > now && (!want || slice_end < want))
		want = slice_end;
	if (want == armed_deadline)
		return;
	/* A deadline still to come before the one we want stays: its
	 * interrupt finds little to do and arms the next (irq_poll). That
	 * spares two supervisor calls per wakeup when threads hand work back
	 * and forth (a pipe): each starts a slice, then blocks. */
	if (armed_deadline && (!want || want > armed_deadline) && armed_deadline > now)
		return;
	armed_deadline = want;
	timer_unsent = want != 0;
}

/* ktimer_add() queued a new earliest kernel timer: the program may run on
 * without a schedule() (alarm(), then a busy loop), so arm it now. */
void sched_timer_rearm(void)
{
	timer_rearm();
}

/* ---------------------------------------------------------------- interrupts */

void irq_register(unsigned bit, void (*fn)(void))
{
	if (bit < 64)
		irq_fn[bit] = fn;
}

void irq_poll(void)
{
	uint64_t bits = __atomic_exchange_n(&kcpu0.irq_pending, 0, __ATOMIC_SEQ_CST);
	bool fired = bits & (1ULL << KCPU_IRQ_TIMER_BIT);

	if (fired)
		armed_deadline = 0; /* it fired */
	for (unsigned i = 0; bits && i < 64; i++, bits >>= 1)
		if ((bits & 1) && irq_fn[i])
			irq_fn[i]();
	timers_expire();
	ktimer_expire();
	/* The timer fired: arm it for what is still queued (a second kernel
	 * timer, a sleeper). On an interrupt that hit program code nothing
	 * else would until the next schedule(). */
	if (fired)
		timer_rearm();
}

/* ---------------------------------------------------------------- switching */

static void free_dead(void)
{
	while (dead) {
		struct thread *t = dead;
		dead = t->next_run;
		thread_free(t);
	}
}

static void context_switch(struct thread *prev, struct thread *next)
{
	if (prev->state != T_DEAD && prev->fpu)
		fpu_save(prev->fpu);
	asm volatile("rdfsbase %0" : "=r"(prev->fs_base));
	if (next->proc->as && next->proc->as != prev->proc->as)
		aspace_activate(next->proc->as);
	asm volatile("wrfsbase %0" ::"r"(next->fs_base) : "memory");
	thread_set_current(next);
	kcpu0.kstack_top = next->kstack_top;
	if (next->fpu)
		fpu_restore(next->fpu);
	switch_to(&prev->ksp, next->ksp);
	/* Back on prev's stack, much later. */
	free_dead();
}

/* Nothing to run: sleep until an interrupt or the next timed wakeup. A
 * deadline armed for what is no longer wanted (the slice of the thread that
 * ran last, a sleeper woken early) would wake the idle CPU for nothing, and
 * keep every idle guest ticking: the halt replaces it with the real one, or
 * disarms the timer when nothing is timed. Only a deadline still to come
 * needs it (one past has fired, or its interrupt is on the way). */
static void idle_halt(void)
{
	uint64_t want = timer_next();

	if (armed_deadline && (!want || want > armed_deadline) &&
	    armed_deadline > time_monotonic_ns()) {
		armed_deadline = want;
		timer_unsent = false;
		sv_halt_rearm(want ? time_ns_to_tsc_deadline(want) : 0);
		return;
	}
	timer_rearm();
	sv_halt(sched_timer_take());
}

uint64_t sched_ran_ns(void)
{
	return ran_from ? time_monotonic_ns() - ran_from : 0;
}

void schedule(void)
{
	struct thread *prev = cur_thread(), *next;
	uint64_t now;

	/* its CPU time (library OS and program alike: /proc's utime), idle
	 * time not counted */
	if (prev && prev->state != T_DEAD && prev->proc) {
		uint64_t ran = time_monotonic_ns() - (ran_from ? ran_from : prev->proc->start_ns);

		prev->proc->user_ns += ran;
		fair_charge(prev->proc->pidns, ran);
	}
	resched = false;
	for (;;) {
		irq_poll();
		next = runq_pop();
		if (next)
			break;
		aspace_reap();
		idle_halt();
	}
	now = time_monotonic_ns();
	ran_from = now;
	slice_end = runq_head ? now + SLICE_NS : 0;
	timer_rearm();
	if (next != prev)
		context_switch(prev, next);
}

/* Preempt: the current thread goes to the back of the queue. */
void sched_yield_current(void)
{
	struct thread *t = cur_thread();

	if (t->state == T_RUNNABLE)
		runq_push(t);
	schedule();
}

void sched_start_thread(struct thread *t)
{
	/* switch_to pops six callee-saved registers, then returns into
	 * ret_from_fork with the trapframe at the top of the stack. */
	uint64_t *sp = (uint64_t *)(t->kstack_top - TF_SIZE);

	*--sp = (uint64_t)ret_from_fork;
	for (int i = 0; i < 6; i++)
		*--sp = 0;
	t->ksp = (uint64_t)sp;
	t->state = T_BLOCKED;
	sched_make_runnable(t);
}

void sched_exit_current(void)
{
	struct thread *t = cur_thread();

	t->state = T_DEAD;
	t->next_run = dead;
	dead = t;
	schedule();
	kpanic("a dead thread was scheduled");
}

/* ---------------------------------------------------------------- waiting */

void waitq_add(struct waitq *wq, struct wait_entry *e)
{
	e->t = cur_thread();
	e->wq = wq;
	e->next = wq->head;
	wq->head = e;
}

void waitq_del(struct wait_entry *e)
{
	if (!e->wq)
		return;
	for (struct wait_entry **pp = &e->wq->head; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	e->wq = NULL;
}

long wait_sleep(uint64_t deadline_ns)
{
	struct thread *t = cur_thread();

	if (signal_pending(t))
		return -EINTR;
	if (deadline_ns && time_monotonic_ns() >= deadline_ns)
		return -ETIMEDOUT;
	t->timed_out = false;
	if (deadline_ns)
		timer_add(t, deadline_ns);
	t->state = T_BLOCKED;
	schedule();
	if (t->wake_at)
		timer_del(t);
	if (t->timed_out)
		return -ETIMEDOUT;
	if (signal_pending(t))
		return -EINTR;
	return 0;
}

long wait_block(struct waitq *wq, uint64_t deadline_ns)
{
	struct wait_entry e = {0};
	long err;

	if (wq)
		waitq_add(wq, &e);
	err = wait_sleep(deadline_ns);
	waitq_del(&e);
	return err;
}

void wake_thread(struct thread *t)
{
	if (t->state == T_BLOCKED)
		sched_make_runnable(t);
}

void wake_all(struct waitq *wq)
{
	for (struct wait_entry *e = wq->head; e; e = e->next)
		wake_thread(e->t);
}
