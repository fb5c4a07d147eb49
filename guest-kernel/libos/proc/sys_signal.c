/* SPDX-License-Identifier: MIT */
/* Signal syscalls: actions, masks, sending, waiting, returning. */
#include <asm/signal.h>

#include "errno_k.h"
#include "pidns.h"
#include "proc.h"
#include "signal_k.h"
#include "syscall.h"
#include "uaccess.h"

static const uint64_t unblockable = SIGBIT(SIGKILL) | SIGBIT(SIGSTOP);

SYSCALL_DEFINE(rt_sigaction)
{
	struct sighand *sh = cur_proc()->sighand;
	struct k_sigaction nw, old;
	int sig = (int)a0;

	if (a3 != 8 || sig < 1 || sig > NSIG_KILN)
		return -EINVAL;
	old = sh->action[sig];
	if (a1) {
		if (sig == SIGKILL || sig == SIGSTOP)
			return -EINVAL;
		if (copy_from_user(&nw, (void *)a1, sizeof(nw)))
			return -EFAULT;
		nw.mask &= ~unblockable;
		sh->action[sig] = nw;
		/* Setting SIG_IGN discards what is pending (POSIX). */
		if (nw.handler == 1) {
			struct proc *p = cur_proc();
			p->shared_pending &= ~SIGBIT(sig);
			for (struct thread *t = p->threads; t; t = t->next_in_proc)
				t->pending &= ~SIGBIT(sig);
		}
	}
	if (a2 && copy_to_user((void *)a2, &old, sizeof(old)))
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE(rt_sigprocmask)
{
	struct thread *t = cur_thread();
	uint64_t old = t->sigmask, set;

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

SYSCALL_DEFINE(rt_sigpending)
{
	struct thread *t = cur_thread();
	uint64_t set = (t->pending | t->proc->shared_pending) & t->sigmask;

	if (a1 != 8)
		return -EINVAL;
	return copy_to_user((void *)a0, &set, 8);
}

/* Wait for a signal with a temporary mask; the old mask comes back once the
 * handler has run. */
SYSCALL_DEFINE(rt_sigsuspend)
{
	struct thread *t = cur_thread();
	uint64_t set;

	if (a1 != 8)
		return -EINVAL;
	if (copy_from_user(&set, (void *)a0, 8))
		return -EFAULT;
	t->saved_sigmask = t->sigmask;
	t->restore_sigmask = true;
	t->sigmask = set & ~unblockable;
	while (!signal_pending(t))
		wait_block(NULL, 0);
	return -ERESTARTNOHAND;
}

SYSCALL_DEFINE(pause)
{
	while (!signal_pending(cur_thread()))
		wait_block(NULL, 0);
	return -ERESTARTNOHAND;
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

/* The sender's pid as the receiver sees it (0 from outside its namespace). */
static void kill_info(struct siginfo_k *info, int sig, const struct proc *to)
{
	memset(info, 0, sizeof(*info));
	info->signo = sig;
	info->code = 0; /* SI_USER */
	info->kill.pid = pid_to_user(to, cur_proc()->pid);
}

/* kill(2): one process, a group, or everyone but init and ourselves; of
 * the caller's PID namespace only. */
SYSCALL_DEFINE(kill)
{
	struct proc *self = cur_proc();
	int upid = (int)a0, sig = (int)a1, found = 0, pid;
	struct siginfo_k info;

	if (sig < 0 || sig > NSIG_KILN)
		return -EINVAL;
	if (!pid_spec_from_user(self, upid, &pid))
		return -ESRCH;
	for (struct proc *p = proc_first(); p; p = p->next_all) {
		bool hit = pid > 0     ? p->pid == pid
		           : pid == 0  ? p->pgid == self->pgid
		           : pid == -1 ? pid_to_user(self, p->pid) > 1 && p != self
		                       : p->pgid == -pid;
		if (!hit || p->zombie || !pid_visible(self, p))
			continue;
		found++;
		kill_info(&info, sig, p);
		if (sig)
			signal_send_proc(p, sig, &info);
	}
	return found ? 0 : -ESRCH;
}

static long thread_kill(int utgid, int utid, int sig)
{
	struct proc *self = cur_proc();
	int tgid = utgid > 0 ? pid_from_user(self, utgid) : utgid;
	int tid = pid_from_user(self, utid);
	struct siginfo_k info;

	if (sig < 0 || sig > NSIG_KILN)
		return -EINVAL;
	if (!tgid || !tid)
		return -ESRCH;
	for (struct proc *p = proc_first(); p; p = p->next_all) {
		if (p->zombie || (tgid > 0 && p->pid != tgid) || !pid_visible(self, p))
			continue;
		for (struct thread *t = p->threads; t; t = t->next_in_proc)
			if (t->tid == tid) {
				kill_info(&info, sig, p);
				info.code = -6; /* SI_TKILL */
				if (sig)
					signal_send_thread(t, sig, &info);
				return 0;
			}
	}
	return -ESRCH;
}

SYSCALL_DEFINE(tgkill)
{
	if (a0 <= 0 || a1 <= 0)
		return -EINVAL;
	return thread_kill((int)a0, (int)a1, (int)a2);
}

SYSCALL_DEFINE(tkill)
{
	if (a0 <= 0)
		return -EINVAL;
	return thread_kill(-1, (int)a0, (int)a1);
}

SYSCALL_DEFINE(rt_sigreturn)
{
	return signal_return(cur_thread()->syscall_tf);
}

SYSCALL_DEFINE(exit)
{
	thread_exit((int)a0);
}

SYSCALL_DEFINE(exit_group)
{
	proc_exit(((int)a0 & 0xff) << 8);
}
