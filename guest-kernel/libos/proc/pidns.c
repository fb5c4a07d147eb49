/* SPDX-License-Identifier: MIT */
/* PID namespaces: translating numbers, and choosing a child's namespace. */
#include <asm/signal.h>

#include "fair.h"
#include "pidns.h"
#include "proc.h"
#include "ktime.h"
#include "ktimer.h"
#include "sched.h"
#include "vm.h"

/* Namespaces whose processes are held (KILN_PR_PIDNS_FREEZE); any: one
 * test on the way back to every program while none is. */
static bool frozen[KILN_PIDNS_MAX];
static int nr_frozen;
/* KILN_PR_PIDNS_MEMORY's bounds, in pages (0: none) */
static uint64_t mem_max[KILN_PIDNS_MAX];
/* KILN_PR_PIDNS_CPU's: the share, and the CPU time used by the start of
 * the current period */
static struct cpu_bound {
	uint32_t milli;
	uint64_t period_start, used_before;
	struct ktimer tick; /* when the share will be used: back to exit_to_user */
} cpu[KILN_PIDNS_MAX];
static int nr_cpu_bounded;

int pid_to_user(const struct proc *viewer, int pid)
{
	if (!viewer || !viewer->pidns || pid <= 0)
		return pid;
	return pidns_of(pid) == viewer->pidns ? pid % KILN_PIDNS_SPAN : 0;
}

int pid_from_user(const struct proc *viewer, int upid)
{
	if (upid <= 0)
		return 0;
	if (!viewer || !viewer->pidns)
		return upid;
	return upid < KILN_PIDNS_SPAN ? viewer->pidns * KILN_PIDNS_SPAN + upid : 0;
}

bool pid_spec_from_user(const struct proc *viewer, int upid, int *pid)
{
	if (upid == INT32_MIN)
		return false;
	*pid = upid > 0    ? pid_from_user(viewer, upid)
	       : upid < -1 ? -pid_from_user(viewer, -upid)
	                   : upid;
	return *pid != 0 || upid == 0;
}

bool pid_visible(const struct proc *viewer, const struct proc *p)
{
	return !viewer || !viewer->pidns || viewer->pidns == p->pidns;
}

struct proc *proc_find_user(const struct proc *viewer, int upid)
{
	int pid = pid_from_user(viewer, upid);

	return pid ? proc_find(pid) : NULL;
}

bool pidns_is_init(const struct proc *p)
{
	return p->pid % KILN_PIDNS_SPAN == 1;
}

bool pidns_empty(int ns)
{
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (p->pidns == ns)
			return false;
	return true;
}

/* A namespace in use has processes, zombies included, or is chosen for
 * someone's children. */
static bool pidns_used(int ns)
{
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (p->pidns == ns || p->pidns_child == ns)
			return true;
	return false;
}

bool pidns_open(int ns)
{
	return !ns || proc_find(ns * KILN_PIDNS_SPAN + 1) || pidns_empty(ns);
}

long pidns_prctl(struct proc *p, int ns)
{
	static int last;

	if (p->pidns || p->cred.u.eff != 0)
		return -EPERM;
	if (ns == 0 || (ns > 0 && ns < KILN_PIDNS_MAX)) {
		if (ns && !proc_find((int)ns * KILN_PIDNS_SPAN + 1))
			return -ESRCH;
		p->pidns_child = (int)ns;
		return ns;
	}
	if (ns != KILN_PIDNS_NEW)
		return -EINVAL;
	for (int i = 1; i < KILN_PIDNS_MAX; i++) {
		last = last % (KILN_PIDNS_MAX - 1) + 1;
		if (!pidns_used(last)) {
			if (frozen[last]) { /* (a namespace that ended frozen) */
				frozen[last] = false;
				nr_frozen--;
			}
			mem_max[last] = 0;
			fair_reset(last);
			if (cpu[last].milli)
				nr_cpu_bounded--;
			cpu[last].milli = 0;
			p->pidns_child = last;
			return last;
		}
	}
	return -EAGAIN;
}

long pidns_freeze(struct proc *p, int ns, int on)
{
	if (p->pidns || p->cred.u.eff != 0)
		return -EPERM;
	if (ns <= 0 || ns >= KILN_PIDNS_MAX || (on != 0 && on != 1))
		return -EINVAL;
	if (!proc_find(ns * KILN_PIDNS_SPAN + 1))
		return -ESRCH;
	if (frozen[ns] == on)
		return 0;
	frozen[ns] = on;
	nr_frozen += on ? 1 : -1;
	/* on: each thread takes syscall_entry's slow way back (tf_dirty), to
	 * the freeze point in exit_to_user; off: the held ones go on */
	for (struct proc *q = proc_first(); q; q = q->next_all)
		for (struct thread *t = q->threads; q->pidns == ns && t; t = t->next_in_proc)
			if (on)
				t->tf_dirty = true;
			else if (t->frozen)
				wake_thread(t);
	return 0;
}

long pidns_memory(struct proc *p, int ns, long mib)
{
	if (p->pidns || p->cred.u.eff != 0)
		return -EPERM;
	if (ns <= 0 || ns >= KILN_PIDNS_MAX || mib < 0 || mib > (1L << 20))
		return -EINVAL;
	if (!proc_find(ns * KILN_PIDNS_SPAN + 1))
		return -ESRCH;
	mem_max[ns] = (uint64_t)mib << (20 - PAGE_SHIFT);
	return 0;
}

long pidns_cpu(struct proc *p, int ns, long milli)
{
	if (p->pidns || p->cred.u.eff != 0)
		return -EPERM;
	if (ns <= 0 || ns >= KILN_PIDNS_MAX || milli < 0 || milli > 1000000)
		return -EINVAL;
	if (!proc_find(ns * KILN_PIDNS_SPAN + 1))
		return -ESRCH;
	nr_cpu_bounded += (milli != 0) - (cpu[ns].milli != 0);
	ktimer_del(&cpu[ns].tick);
	cpu[ns] = (struct cpu_bound){.milli = (uint32_t)milli};
	return 0;
}

long pidns_shares(struct proc *p, int ns, long shares)
{
	if (p->pidns || p->cred.u.eff != 0)
		return -EPERM;
	if (ns <= 0 || ns >= KILN_PIDNS_MAX || shares < FAIR_WEIGHT_MIN || shares > FAIR_WEIGHT_MAX)
		return -EINVAL;
	if (!proc_find(ns * KILN_PIDNS_SPAN + 1))
		return -ESRCH;
	return fair_set_weight(ns, (uint32_t)shares);
}

/* The CPU time ns's live processes used, the running one's slice too. */
static uint64_t cpu_used(int ns)
{
	uint64_t n = 0;

	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (p->pidns == ns && !p->zombie)
			n += p->user_ns;
	if (cur_thread() && cur_thread()->proc && cur_thread()->proc->pidns == ns)
		n += sched_ran_ns();
	return n;
}

static void cpu_tick(struct ktimer *kt)
{
}

uint64_t pidns_throttled(const struct thread *t)
{
	const uint64_t period = KILN_PIDNS_CPU_PERIOD_MS * 1000000ULL;
	struct cpu_bound *b = &cpu[t->proc->pidns];
	uint64_t now, used, left;

	if (!nr_cpu_bounded || !b->milli)
		return 0;
	now = time_monotonic_ns();
	used = cpu_used(t->proc->pidns);
	if (used < b->used_before) /* (a process ended: its time is gone) */
		b->used_before = used;
	if (now >= b->period_start + period) {
		b->period_start = now;
		b->used_before = used;
	}
	if (used - b->used_before >= period / 1000 * b->milli)
		return b->period_start + period;
	/* a program that neither sleeps nor calls is stopped by this interrupt
	 * (nothing may preempt it when it runs alone) */
	left = period / 1000 * b->milli - (used - b->used_before);
	if (!ktimer_pending(&b->tick) || b->tick.deadline > now + left)
		ktimer_add(&b->tick, now + MAX(left, 1000000ULL), cpu_tick);
	return 0;
}

uint64_t pidns_pages(int ns)
{
	uint64_t n = 0;

	/* (a vfork child's pages are its parent's) */
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (p->pidns == ns && p->as && !p->vfork_parent)
			n += p->as->nr_pages;
	return n;
}

bool pidns_mem_ok(size_t npages)
{
	struct thread *t = cur_thread();
	int ns = t && t->proc ? t->proc->pidns : 0;

	return !mem_max[ns] || pidns_pages(ns) + npages <= mem_max[ns];
}

static bool sigkilled(const struct thread *t)
{
	return ((t->pending | t->proc->shared_pending) & SIGBIT(SIGKILL)) || t->proc->exiting;
}

/* (a vfork child is not held: its parent, the agent, waits for its exec) */
bool pidns_frozen(const struct thread *t)
{
	const struct proc *p = t->proc;

	return nr_frozen && frozen[p->pidns] && !p->vfork_parent && !sigkilled(t);
}

void pidns_freeze_wait(struct thread *t)
{
	t->frozen = true;
	while (pidns_frozen(t)) {
		t->state = T_BLOCKED;
		schedule();
	}
	t->frozen = false;
}

void pidns_init_exit(struct proc *init)
{
	if (!init->pidns)
		return;
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (p != init && p->pidns == init->pidns && !p->zombie)
			signal_send_proc(p, SIGKILL, NULL);
}
