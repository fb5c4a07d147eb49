/* SPDX-License-Identifier: MIT */
/* wait4 and waitid: reaping children and reporting job-control changes. */
#include <linux/wait.h>

#include "errno_k.h"
#include "pidns.h"
#include "proc.h"
#include "syscall.h"
#include "uaccess.h"

struct wait_result {
	int pid;
	int status; /* wait(2) status word */
	int code;   /* CLD_* for waitid */
	int sig_or_exit;
};

static bool matches(const struct proc *c, int pid, const struct proc *self)
{
	if (pid > 0)
		return c->pid == pid;
	if (pid == 0)
		return c->pgid == self->pgid;
	if (pid < -1)
		return c->pgid == -pid;
	return true;
}

/* One pass over the children. 1: found an event, 0: nothing yet but there
 * are candidates, -ECHILD: no such children. */
static int scan(int pid, int options, bool reap, struct wait_result *r)
{
	struct proc *self = cur_proc();
	bool any = false;

	for (struct proc *c = self->children; c; c = c->sibling) {
		if (!matches(c, pid, self))
			continue;
		any = true;
		if (c->zombie && (options & WEXITED)) {
			int st = c->exit_code;
			r->pid = c->pid;
			r->status = st;
			r->code =
			    (st & 0x7f) ? ((st & 0x80) ? 3 : 2) : 1; /* DUMPED, KILLED, EXITED */
			r->sig_or_exit = (st & 0x7f) ? (st & 0x7f) : (st >> 8) & 0xff;
			if (reap)
				proc_free(c);
			return 1;
		}
		if (c->stopped && !c->stop_reported && (options & WSTOPPED)) {
			r->pid = c->pid;
			r->status = (c->stop_sig << 8) | 0x7f;
			r->code = 5; /* CLD_STOPPED */
			r->sig_or_exit = c->stop_sig;
			if (reap)
				c->stop_reported = true;
			return 1;
		}
		if (!c->stopped && c->stop_reported && !c->cont_reported &&
		    (options & WCONTINUED)) {
			r->pid = c->pid;
			r->status = 0xffff;
			r->code = 6; /* CLD_CONTINUED */
			r->sig_or_exit = 18;
			if (reap)
				c->cont_reported = true;
			return 1;
		}
	}
	return any ? 0 : -ECHILD;
}

/* upid, r->pid: numbers of the caller's PID namespace (children always
 * are in it, or the caller is in the VM's, which sees all). */
static long do_wait(int upid, int options, bool reap, struct wait_result *r)
{
	struct proc *self = cur_proc();
	int pid;

	if (!pid_spec_from_user(self, upid, &pid))
		return -ECHILD;
	for (;;) {
		int found = scan(pid, options, reap, r);
		long err;
		if (found > 0)
			r->pid = pid_to_user(self, r->pid);
		if (found)
			return found < 0 ? found : r->pid;
		if (options & WNOHANG)
			return 0;
		err = wait_block(&self->child_wait, 0);
		if (err == -EINTR)
			return -ERESTARTSYS;
	}
}

SYSCALL_DEFINE(wait4)
{
	int options = (int)a2;
	struct wait_result r;
	long ret;

	if (options & ~(WNOHANG | WUNTRACED | WCONTINUED | __WALL | __WCLONE | __WNOTHREAD))
		return -EINVAL;
	if ((int)a0 == INT32_MIN)
		return -ESRCH;
	options |= WEXITED;
	ret = do_wait((int)a0, options, true, &r);
	if (ret > 0) {
		if (a1 && copy_to_user((void *)a1, &r.status, 4))
			return -EFAULT;
		if (a3 && clear_user((void *)a3, 144))
			return -EFAULT;
	}
	return ret;
}

SYSCALL_DEFINE(waitid)
{
	int which = (int)a0, id = (int)a1, options = (int)a3, pid;
	struct siginfo_k info;
	struct wait_result r;
	long ret;

	if (options & ~(WNOHANG | WEXITED | WSTOPPED | WCONTINUED | WNOWAIT | __WALL | __WCLONE |
	                __WNOTHREAD))
		return -EINVAL;
	if (!(options & (WEXITED | WSTOPPED | WCONTINUED)))
		return -EINVAL;
	switch (which) {
	case P_ALL:
		pid = -1;
		break;
	case P_PID:
		pid = id > 0 ? id : INT32_MIN;
		break;
	case P_PGID:
		pid = id > 0 ? -id : 0;
		break;
	default:
		return -EINVAL;
	}
	if (pid == INT32_MIN)
		return -EINVAL;
	ret = do_wait(pid, options, !(options & WNOWAIT), &r);
	if (ret < 0)
		return ret;
	memset(&info, 0, sizeof(info));
	if (ret > 0) {
		info.signo = 17; /* SIGCHLD */
		info.code = r.code;
		info.chld.pid = r.pid;
		info.chld.status = r.sig_or_exit;
	}
	if (a2 && copy_to_user((void *)a2, &info, sizeof(info)))
		return -EFAULT;
	if (a4 && clear_user((void *)a4, 144))
		return -EFAULT;
	return 0;
}
