/* SPDX-License-Identifier: MIT */
/* PID namespaces: translating numbers, and choosing a child's namespace. */
#include <asm/signal.h>

#include "pidns.h"
#include "proc.h"

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
			p->pidns_child = last;
			return last;
		}
	}
	return -EAGAIN;
}

void pidns_init_exit(struct proc *init)
{
	if (!init->pidns)
		return;
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (p != init && p->pidns == init->pidns && !p->zombie)
			signal_send_proc(p, SIGKILL, NULL);
}
