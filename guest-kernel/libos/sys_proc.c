/* SPDX-License-Identifier: MIT */
/* Process identity, limits, signals sent to oneself, and thread setup. */
#include <asm/prctl.h>
#include <asm/signal.h>
#include <linux/prctl.h>
#include <linux/resource.h>
#include <linux/utsname.h>

#include "proc.h"
#include "syscall.h"
#include "uaccess.h"

const char *signal_name(int sig);

/* Limits as a default Linux login would have them; setrlimit stores. */
struct klimit {
	uint64_t cur, max;
};

static struct klimit limits[RLIM_NLIMITS] = {
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

SYSCALL_DEFINE(getpid)
{
	return cur_proc()->pid;
}

SYSCALL_DEFINE(getppid)
{
	return cur_proc()->ppid;
}

SYSCALL_DEFINE(gettid)
{
	return cur_thread()->tid;
}

/* Everything in a kiln guest runs as root. */
SYSCALL_DEFINE(getuid)
{
	return 0;
}
SYSCALL_ALIAS(geteuid, getuid);
SYSCALL_ALIAS(getgid, getuid);
SYSCALL_ALIAS(getegid, getuid);

SYSCALL_DEFINE(getresuid)
{
	uint32_t z[3] = {0, 0, 0};

	if (copy_to_user((void *)a0, &z[0], 4) || copy_to_user((void *)a1, &z[1], 4) ||
	    copy_to_user((void *)a2, &z[2], 4))
		return -EFAULT;
	return 0;
}
SYSCALL_ALIAS(getresgid, getresuid);

SYSCALL_DEFINE(getgroups)
{
	return 0;
}

SYSCALL_DEFINE(getpgrp)
{
	return cur_proc()->pgid;
}

SYSCALL_DEFINE(getpgid)
{
	if (a0 && a0 != cur_proc()->pid)
		return -ESRCH;
	return cur_proc()->pgid;
}

SYSCALL_DEFINE(getsid)
{
	if (a0 && a0 != cur_proc()->pid)
		return -ESRCH;
	return cur_proc()->sid;
}

SYSCALL_DEFINE(exit_group)
{
	proc_exit_group((int)a0);
}
SYSCALL_ALIAS(exit, exit_group);

SYSCALL_DEFINE(set_tid_address)
{
	cur_thread()->clear_child_tid = (uint64_t)a0;
	return cur_thread()->tid;
}

SYSCALL_DEFINE(set_robust_list)
{
	return a1 == 24 ? 0 : -EINVAL;
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
	struct klimit old, nw;

	if (a0 && a0 != cur_proc()->pid)
		return -ESRCH;
	if (res >= RLIM_NLIMITS)
		return -EINVAL;
	old = limits[res];
	if (a2) {
		if (copy_from_user(&nw, (void *)a2, sizeof(nw)))
			return -EFAULT;
		if (nw.cur > nw.max)
			return -EINVAL;
		limits[res] = nw;
	}
	if (a3 && copy_to_user((void *)a3, &old, sizeof(old)))
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE(getrlimit)
{
	if ((unsigned long)a0 >= RLIM_NLIMITS)
		return -EINVAL;
	return copy_to_user((void *)a1, &limits[a0], sizeof(limits[0]));
}

SYSCALL_DEFINE(setrlimit)
{
	struct klimit nw;

	if ((unsigned long)a0 >= RLIM_NLIMITS)
		return -EINVAL;
	if (copy_from_user(&nw, (void *)a1, sizeof(nw)))
		return -EFAULT;
	if (nw.cur > nw.max)
		return -EINVAL;
	limits[a0] = nw;
	return 0;
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

/* Signals aimed at ourselves: the default action of the fatal ones. Signal
 * handlers and delivery to other processes arrive with the process work. */
static long signal_self(int sig)
{
	if (sig < 0 || sig > NSIG_KILN)
		return -EINVAL;
	if (sig && cur_proc()->sigact[sig].handler == 1 /* SIG_IGN */ && sig != SIGKILL)
		return 0;
	switch (sig) {
	case 0:
	case SIGCHLD:
	case SIGCONT:
	case SIGURG:
	case SIGWINCH:
		return 0;
	default:
		proc_kill_self(sig, NULL);
	}
}

SYSCALL_DEFINE(kill)
{
	if (a0 != cur_proc()->pid && a0 != 0 && a0 != -1 && a0 != -cur_proc()->pgid)
		return -ESRCH;
	return signal_self((int)a1);
}

SYSCALL_DEFINE(tgkill)
{
	if (a0 != cur_proc()->pid || a1 != cur_thread()->tid)
		return -ESRCH;
	return signal_self((int)a2);
}

SYSCALL_DEFINE(tkill)
{
	if (a0 != cur_thread()->tid)
		return -ESRCH;
	return signal_self((int)a1);
}

SYSCALL_DEFINE(rt_sigaction)
{
	struct proc *p = cur_proc();
	struct k_sigaction nw, old;
	int sig = (int)a0;

	if (a3 != 8 || sig < 1 || sig > NSIG_KILN)
		return -EINVAL;
	old = p->sigact[sig];
	if (a1) {
		if (sig == SIGKILL || sig == SIGSTOP)
			return -EINVAL;
		if (copy_from_user(&nw, (void *)a1, sizeof(nw)))
			return -EFAULT;
		p->sigact[sig] = nw;
	}
	if (a2 && copy_to_user((void *)a2, &old, sizeof(old)))
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE(rt_sigprocmask)
{
	struct thread *t = cur_thread();
	uint64_t old = t->sigmask, set;
	const uint64_t unblockable = (1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1));

	if (a3 != 8)
		return -EINVAL;
	if (a1) {
		if (copy_from_user(&set, (void *)a1, 8))
			return -EFAULT;
		switch (a0) {
		case SIG_BLOCK:
			t->sigmask |= set;
			break;
		case SIG_UNBLOCK:
			t->sigmask &= ~set;
			break;
		case SIG_SETMASK:
			t->sigmask = set;
			break;
		default:
			return -EINVAL;
		}
		t->sigmask &= ~unblockable;
	}
	if (a2 && copy_to_user((void *)a2, &old, 8))
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE(sigaltstack)
{
	struct thread *t = cur_thread();
	uint64_t old[3], nw[3];

	memcpy(old, t->altstack, sizeof(old));
	if (!old[2])
		old[1] = 2; /* SS_DISABLE */
	if (a0) {
		if (copy_from_user(nw, (void *)a0, sizeof(nw)))
			return -EFAULT;
		if (nw[1] & ~(uint64_t)2)
			return -EINVAL;
		if (nw[1] & 2)
			memset(t->altstack, 0, sizeof(t->altstack));
		else if (nw[2] < 2048)
			return -ENOMEM;
		else
			memcpy(t->altstack, nw, sizeof(nw));
	}
	if (a1 && copy_to_user((void *)a1, old, sizeof(old)))
		return -EFAULT;
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
		return 1;
	case PR_SET_DUMPABLE:
	case PR_SET_NO_NEW_PRIVS:
	case PR_SET_CHILD_SUBREAPER:
		return 0;
	case PR_GET_NO_NEW_PRIVS:
		return 0;
	case PR_CAPBSET_READ:
		return (unsigned long)a1 <= 40 ? 1 : -EINVAL;
	default:
		return -EINVAL;
	}
}
