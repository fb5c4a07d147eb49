/* SPDX-License-Identifier: MIT */
/* Scheduling hints: nice values (get/setpriority), CPU affinity and
 * membarrier. The guest has one vCPU and a round-robin scheduler, so a nice
 * value is kept and reported but does not change who runs, an affinity mask
 * must include CPU 0, and every memory barrier is already global: a syscall
 * on the only CPU orders everything before it against everything after. */
#include <linux/membarrier.h>
#include <linux/resource.h>

#include "pidns.h"
#include "proc.h"
#include "syscall.h"
#include "uaccess.h"

#define NICE_MIN (-20)
#define NICE_MAX 19

/* The process that thread (or process) id utid (the caller's number) has,
 * or NULL. */
static struct proc *proc_of_tid(int utid)
{
	int tid = pid_from_user(cur_proc(), utid);

	for (struct proc *p = proc_first(); p && tid; p = p->next_all)
		for (struct thread *t = p->threads; t; t = t->next_in_proc)
			if (t->tid == tid)
				return p;
	return NULL;
}

/* Does p fall under (which, who)? */
static bool prio_match(const struct proc *p, int which, int who)
{
	const struct proc *me = cur_proc();

	if (p->zombie)
		return false;
	switch (which) {
	case PRIO_PROCESS:
		return p == (who ? proc_of_tid(who) : me);
	case PRIO_PGRP:
		return p->pgid == (who ? pid_from_user(me, who) : me->pgid);
	default: /* PRIO_USER: everyone is root */
		return who == 0;
	}
}

SYSCALL_DEFINE(getpriority)
{
	int which = (int)a0, who = (int)a1, best = NICE_MAX + 1;

	if (which < PRIO_PROCESS || which > PRIO_USER || who < 0)
		return -EINVAL;
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (prio_match(p, which, who))
			best = MIN(best, p->nice);
	/* The raw syscall returns 20 - nice, so that it is never negative. */
	return best > NICE_MAX ? -ESRCH : 20 - best;
}

SYSCALL_DEFINE(setpriority)
{
	int which = (int)a0, who = (int)a1, nice = (int)MIN(MAX(a2, NICE_MIN), NICE_MAX);
	bool found = false;

	if (which < PRIO_PROCESS || which > PRIO_USER || who < 0)
		return -EINVAL;
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (prio_match(p, which, who)) {
			p->nice = nice;
			found = true;
		}
	return found ? 0 : -ESRCH;
}

SYSCALL_DEFINE(sched_setaffinity)
{
	uint8_t first;

	if (a0 < 0 || (a0 && !proc_of_tid((int)a0)))
		return a0 < 0 ? -EINVAL : -ESRCH;
	if (a1 < 1)
		return -EINVAL;
	if (copy_from_user(&first, (void *)a2, 1))
		return -EFAULT;
	return first & 1 ? 0 : -EINVAL; /* no CPU of the mask is online */
}

#define MB_SUPPORTED                                                                              \
	(MEMBARRIER_CMD_GLOBAL | MEMBARRIER_CMD_GLOBAL_EXPEDITED |                                \
	 MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED | MEMBARRIER_CMD_PRIVATE_EXPEDITED |            \
	 MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED | MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE | \
	 MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE)

SYSCALL_DEFINE(membarrier)
{
	struct proc *p = cur_proc();
	unsigned int cmd = (unsigned int)a0;

	if (a1 || (cmd & (cmd - 1)))
		return -EINVAL;
	switch (cmd) {
	case MEMBARRIER_CMD_QUERY:
		return MB_SUPPORTED;
	case MEMBARRIER_CMD_GLOBAL:
	case MEMBARRIER_CMD_GLOBAL_EXPEDITED:
		return 0;
	case MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED:
	case MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED:
	case MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE:
		p->membarrier |= cmd;
		return 0;
	case MEMBARRIER_CMD_PRIVATE_EXPEDITED:
	case MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE:
		/* Linux: only after the matching registration. */
		return p->membarrier & (cmd << 1) ? 0 : -EPERM;
	default:
		return -EINVAL;
	}
}
