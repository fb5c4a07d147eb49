/* SPDX-License-Identifier: MIT */
/* Process identity, limits, signals sent to oneself, and thread setup. */
#include <asm/prctl.h>
#include <asm/signal.h>
#include <linux/prctl.h>
#include <linux/resource.h>
#include <linux/utsname.h>

#include "pidns.h"
#include "proc.h"
#include "syscall.h"
#include "uaccess.h"
#include "vfs.h"
#include "kiln/rootchg.h"

/* Limits as a default Linux login would have them, for init. */
static const struct klimit limits_default[RLIM_NLIMITS] = {
    [RLIMIT_CPU] = {~0ULL, ~0ULL},
    [RLIMIT_FSIZE] = {~0ULL, ~0ULL},
    [RLIMIT_DATA] = {~0ULL, ~0ULL},
    [RLIMIT_STACK] = {8UL << 20, ~0ULL},
    [RLIMIT_CORE] = {0, ~0ULL},
    [RLIMIT_RSS] = {~0ULL, ~0ULL},
    [RLIMIT_NPROC] = {4096, 4096},
    [RLIMIT_NOFILE] = {1024, 1024},
    [RLIMIT_MEMLOCK] = {8UL << 20, 8UL << 20},
    [RLIMIT_AS] = {~0ULL, ~0ULL},
    [RLIMIT_LOCKS] = {~0ULL, ~0ULL},
    [RLIMIT_SIGPENDING] = {4096, 4096},
    [RLIMIT_MSGQUEUE] = {819200, 819200},
    [RLIMIT_NICE] = {0, 0},
    [RLIMIT_RTPRIO] = {0, 0},
    [RLIMIT_RTTIME] = {~0ULL, ~0ULL},
};
_Static_assert(RLIM_NLIMITS == PROC_NLIMITS, "struct proc's rlim");

void proc_limits_init(struct proc *p)
{
	memcpy(p->rlim, limits_default, sizeof(p->rlim));
}

/* As Linux: a soft limit above the hard one is EINVAL, raising the hard
 * limit needs root (CAP_SYS_RESOURCE), NOFILE stops at nr_open. */
static long limit_set(struct proc *p, unsigned res, const struct klimit *nw)
{
	if (nw->cur > nw->max)
		return -EINVAL;
	if (nw->max > p->rlim[res].max && cur_proc()->cred.u.eff != 0)
		return -EPERM;
	if (res == RLIMIT_NOFILE && nw->max > FILES_MAX)
		return -EPERM;
	p->rlim[res] = *nw;
	return 0;
}

/* Numbers as the caller sees them (pidns.h). */
static int user_pid(int pid)
{
	return pid_to_user(cur_proc(), pid);
}

SYSCALL_DEFINE(getpid)
{
	return user_pid(cur_proc()->pid);
}

SYSCALL_DEFINE(getppid)
{
	return user_pid(cur_proc()->ppid);
}

SYSCALL_DEFINE(gettid)
{
	return user_pid(cur_thread()->tid);
}

SYSCALL_DEFINE(getpgrp)
{
	return user_pid(cur_proc()->pgid);
}

static struct proc *pid_or_self(long pid)
{
	if (pid < 0 || pid > INT32_MAX)
		return NULL;
	return pid ? proc_find_user(cur_proc(), (int)pid) : cur_proc();
}

SYSCALL_DEFINE(getpgid)
{
	struct proc *p = pid_or_self(a0);
	return p ? user_pid(p->pgid) : -ESRCH;
}

SYSCALL_DEFINE(getsid)
{
	struct proc *p = pid_or_self(a0);
	return p ? user_pid(p->sid) : -ESRCH;
}

static bool pgrp_in_session(int pgid, int sid)
{
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (!p->zombie && p->pgid == pgid && p->sid == sid)
			return true;
	return false;
}

/* setpgid: a process may move itself or a child (in its session) into a
 * new group or an existing group of the same session. */
SYSCALL_DEFINE(setpgid)
{
	struct proc *self = cur_proc(), *p = pid_or_self(a0);
	int pgid;

	if (a1 < 0 || a1 > INT32_MAX)
		return -EINVAL;
	pgid = a1 ? pid_from_user(self, (int)a1) : (p ? p->pid : 0);
	if (!pgid)
		return -EPERM; /* a group of another namespace */
	if (!p || (p != self && p->parent != self))
		return -ESRCH;
	if (p->sid != self->sid || p->pid == p->sid)
		return -EPERM;
	if (pgid != p->pid && !pgrp_in_session(pgid, self->sid))
		return -EPERM;
	p->pgid = pgid;
	return 0;
}

SYSCALL_DEFINE(setsid)
{
	struct proc *p = cur_proc();

	if (p->pgid == p->pid)
		return -EPERM;
	p->sid = p->pgid = p->pid;
	return user_pid(p->sid);
}

SYSCALL_DEFINE(set_tid_address)
{
	cur_thread()->clear_child_tid = (uint64_t)a0;
	return user_pid(cur_thread()->tid);
}

SYSCALL_DEFINE(set_robust_list)
{
	if (a1 != 24)
		return -EINVAL;
	cur_thread()->robust_list = (uint64_t)a0;
	return 0;
}

SYSCALL_DEFINE(arch_prctl)
{
	struct thread *t = cur_thread();
	uint64_t v;

	switch (a0) {
	case ARCH_SET_FS:
		if (!user_range_ok((uint64_t)a1, 0))
			return -EPERM;
		asm volatile("wrfsbase %0" ::"r"(a1) : "memory");
		t->fs_base = (uint64_t)a1;
		return 0;
	case ARCH_GET_FS:
		asm volatile("rdfsbase %0" : "=r"(v));
		return copy_to_user((void *)a1, &v, 8);
	case ARCH_SET_GS:
		/* %gs is the library OS's thread pointer: remember, don't load. */
		t->gs_base_user = (uint64_t)a1;
		return 0;
	case ARCH_GET_GS:
		return copy_to_user((void *)a1, &t->gs_base_user, 8);
	default:
		return -EINVAL;
	}
}

SYSCALL_DEFINE(uname)
{
	struct new_utsname u;

	memset(&u, 0, sizeof(u));
	memcpy(u.sysname, "Linux", 6);
	memcpy(u.nodename, "kiln", 5);
	memcpy(u.release, "6.1.0-kiln", 11);
	memcpy(u.version, "#1 SMP kiln", 12);
	memcpy(u.machine, "x86_64", 7);
	memcpy(u.domainname, "(none)", 7);
	return copy_to_user((void *)a0, &u, sizeof(u));
}

SYSCALL_DEFINE(prlimit64)
{
	unsigned res = (unsigned)a1;
	struct proc *p = pid_or_self(a0);
	struct klimit old, nw;
	long err;

	if (!p)
		return -ESRCH;
	/* another's limits: its real uid must be ours, or we are root */
	if (p != cur_proc() && cur_proc()->cred.u.eff != 0 &&
	    p->cred.u.real != cur_proc()->cred.u.real)
		return -EPERM;
	if (res >= RLIM_NLIMITS)
		return -EINVAL;
	old = p->rlim[res];
	if (a2) {
		if (copy_from_user(&nw, (void *)a2, sizeof(nw)))
			return -EFAULT;
		if ((err = limit_set(p, res, &nw)))
			return err;
	}
	if (a3 && copy_to_user((void *)a3, &old, sizeof(old)))
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE(getrlimit)
{
	if ((unsigned long)a0 >= RLIM_NLIMITS)
		return -EINVAL;
	return copy_to_user((void *)a1, &cur_proc()->rlim[a0], sizeof(struct klimit));
}

SYSCALL_DEFINE(setrlimit)
{
	struct klimit nw;

	if ((unsigned long)a0 >= RLIM_NLIMITS)
		return -EINVAL;
	if (copy_from_user(&nw, (void *)a1, sizeof(nw)))
		return -EFAULT;
	return limit_set(cur_proc(), (unsigned)a0, &nw);
}

SYSCALL_DEFINE(sched_getaffinity)
{
	uint64_t mask = 1;

	if (a1 < 8)
		return -EINVAL;
	if (clear_user((void *)a2, (size_t)a1) || copy_to_user((void *)a2, &mask, 8))
		return -EFAULT;
	return 8;
}

SYSCALL_DEFINE(sched_yield)
{
	return 0;
}

SYSCALL_DEFINE(prctl)
{
	struct proc *p = cur_proc();
	char name[16];

	switch (a0) {
	case PR_SET_NAME:
		if (strncpy_from_user(name, (const char *)a1, sizeof(name)) == -EFAULT)
			return -EFAULT;
		name[15] = 0;
		memcpy(p->comm, name, sizeof(name));
		return 0;
	case PR_GET_NAME:
		return copy_to_user((void *)a1, p->comm, sizeof(p->comm));
	case PR_SET_PDEATHSIG:
		return (unsigned long)a1 <= NSIG_KILN ? 0 : -EINVAL;
	case PR_GET_PDEATHSIG:
		return clear_user((void *)a1, sizeof(int));
	case PR_GET_DUMPABLE:
		return !p->nodump;
	case PR_SET_DUMPABLE:
		if ((unsigned long)a1 > 1)
			return -EINVAL;
		p->nodump = !a1;
		return 0;
	case PR_SET_NO_NEW_PRIVS:
		/* For good: it cannot be unset, as on Linux. */
		if (a1 != 1 || a2 || a3 || a4)
			return -EINVAL;
		p->no_new_privs = true;
		return 0;
	case PR_SET_CHILD_SUBREAPER:
		return 0;
	case PR_GET_NO_NEW_PRIVS:
		return p->no_new_privs;
	case KILN_PR_PIDNS_CPU:
		return pidns_cpu(p, (int)a1, (long)a2);
	case KILN_PR_PIDNS_SHARES:
		return pidns_shares(p, (int)a1, (long)a2);
	case KILN_PR_PIDNS_MEMORY:
		return pidns_memory(p, (int)a1, (long)a2);
	case KILN_PR_PIDNS_FREEZE:
		return pidns_freeze(p, (int)a1, (int)a2);
	case KILN_PR_PIDNS:
		return pidns_prctl(p, (int)a1); /* (an int: prctl is variadic) */
	case KILN_PR_ROOTCHG_TRACK:
		return vfs_rootchg_track();
	case KILN_PR_ROOTCHG_GET:
		return vfs_rootchg_get((int)a1, (const char *)a2);
	case KILN_PR_ROOTCHG_CLEAR:
		return vfs_rootchg_clear((int)a1, (const char *)a2);
	case KILN_PR_ROOTCHG_CLEAR_TREE:
		return vfs_rootchg_clear_tree((int)a1, (const char *)a2);
	case PR_CAPBSET_READ:
		return (unsigned long)a1 <= 40 ? 1 : -EINVAL;
	default:
		return -EINVAL;
	}
}
