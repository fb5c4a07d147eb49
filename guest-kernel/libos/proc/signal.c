/* SPDX-License-Identifier: MIT */
/*
 * Signal delivery: pending sets, default actions, and the x86-64 Linux
 * signal frame (struct rt_sigframe) that handlers and rt_sigreturn expect.
 */
#include <asm/signal.h>

#include "errno_k.h"
#include "printk.h"
#include "pidns.h"
#include "proc.h"
#include "sched.h"
#include "signal_k.h"
#include "trapframe.h"
#include "mm.h"

#define USER_TOP_K USER_TOP
#include "uaccess.h"

#define KSIG_DFL         0
#define KSIG_IGN         1
#define UC_FP_XSTATE     0x1
#define FP_XSTATE_MAGIC1 0x46505853U
#define FP_XSTATE_MAGIC2 0x46505845U

static const uint64_t sig_ignore_default =
    SIGBIT(SIGCHLD) | SIGBIT(SIGURG) | SIGBIT(SIGWINCH) | SIGBIT(SIGCONT);
static const uint64_t sig_stop_default =
    SIGBIT(SIGSTOP) | SIGBIT(SIGTSTP) | SIGBIT(SIGTTIN) | SIGBIT(SIGTTOU);
static const uint64_t sig_core =
    SIGBIT(SIGQUIT) | SIGBIT(SIGILL) | SIGBIT(SIGTRAP) | SIGBIT(SIGABRT) | SIGBIT(SIGBUS) |
    SIGBIT(SIGFPE) | SIGBIT(SIGSEGV) | SIGBIT(SIGXCPU) | SIGBIT(SIGXFSZ) | SIGBIT(SIGSYS);
static const uint64_t sig_unblockable = SIGBIT(SIGKILL) | SIGBIT(SIGSTOP);

static bool ignored(struct proc *p, int sig)
{
	uint64_t h = p->sighand->action[sig].handler;

	return h == KSIG_IGN || (h == KSIG_DFL && (sig_ignore_default & SIGBIT(sig)));
}

bool signal_pending(struct thread *t)
{
	struct proc *p = t->proc;

	return p->exiting || ((t->pending | p->shared_pending) & ~(t->sigmask & ~sig_unblockable));
}

static void continue_proc(struct proc *p)
{
	if (!p->stopped)
		return;
	p->stopped = false;
	p->cont_reported = false;
	for (struct thread *t = p->threads; t; t = t->next_in_proc)
		if (t->state == T_STOPPED) {
			t->state = T_BLOCKED;
			sched_make_runnable(t);
		}
	if (p->parent)
		wake_all(&p->parent->child_wait);
}

/* init gets from other processes only the signals it has a handler for:
 * nobody can kill the guest's PID 1 by accident (a kill(0, ...) from a child
 * in its process group, say). Unlike Linux, its own signals (abort, raise)
 * and faults act normally: init is the user's program. A namespace's pid 1
 * is protected so from its own namespace only (the sender's pid as p sees
 * it is not 0): the agent outside still stops a container with SIGTERM. */
static bool init_protected(struct proc *p, int sig, const struct siginfo_k *info)
{
	return pidns_is_init(p) && p->sighand->action[sig].handler == KSIG_DFL && info &&
	       info->code <= 0 && info->kill.pid != 1 && (!p->pidns || info->kill.pid != 0);
}

/* SIGCONT and SIGKILL act when sent, not when delivered. */
static bool send_side_effects(struct proc *p, int sig)
{
	if (sig == SIGCONT || sig == SIGKILL) {
		p->shared_pending &= ~sig_stop_default;
		for (struct thread *t = p->threads; t; t = t->next_in_proc)
			t->pending &= ~sig_stop_default;
		continue_proc(p);
	}
	if (sig_stop_default & SIGBIT(sig)) {
		p->shared_pending &= ~SIGBIT(SIGCONT);
		for (struct thread *t = p->threads; t; t = t->next_in_proc)
			t->pending &= ~SIGBIT(SIGCONT);
	}
	return sig != SIGKILL && ignored(p, sig);
}

static void fill_default_info(struct siginfo_k *to, int sig, const struct siginfo_k *info)
{
	if (info) {
		*to = *info;
	} else {
		memset(to, 0, sizeof(*to));
		to->code = 0x80; /* SI_KERNEL */
	}
	to->signo = sig;
}

void signal_send_thread(struct thread *t, int sig, const struct siginfo_k *info)
{
	if (sig < 1 || sig > NSIG_KILN || t->state == T_DEAD || !t->proc->sighand ||
	    init_protected(t->proc, sig, info))
		return;
	if (send_side_effects(t->proc, sig))
		return;
	if (!(t->pending & SIGBIT(sig)))
		fill_default_info(&t->info[sig], sig, info);
	t->pending |= SIGBIT(sig);
	if (signal_pending(t)) {
		if (t->state == T_STOPPED && sig == SIGKILL) {
			t->state = T_BLOCKED;
			sched_make_runnable(t);
		}
		wake_thread(t);
	}
}

void signal_send_proc(struct proc *p, int sig, const struct siginfo_k *info)
{
	if (sig < 1 || sig > NSIG_KILN || p->zombie || !p->sighand || init_protected(p, sig, info))
		return;
	if (send_side_effects(p, sig))
		return;
	if (!(p->shared_pending & SIGBIT(sig)))
		fill_default_info(&p->shared_info[sig], sig, info);
	p->shared_pending |= SIGBIT(sig);
	/* Wake one thread that can take it. */
	for (struct thread *t = p->threads; t; t = t->next_in_proc)
		if (!(t->sigmask & SIGBIT(sig)) || sig == SIGKILL) {
			if (t->state == T_STOPPED && sig == SIGKILL) {
				t->state = T_BLOCKED;
				sched_make_runnable(t);
			}
			wake_thread(t);
			break;
		}
}

/* Take the lowest deliverable signal (synchronous faults first). */
static int dequeue(struct thread *t, struct siginfo_k *info)
{
	struct proc *p = t->proc;
	uint64_t allowed = ~(t->sigmask & ~sig_unblockable);
	uint64_t mine = t->pending & allowed, shared = p->shared_pending & allowed;
	int sig;

	if (mine) {
		sig = __builtin_ctzll(mine) + 1;
		t->pending &= ~SIGBIT(sig);
		*info = t->info[sig];
		return sig;
	}
	if (shared) {
		sig = __builtin_ctzll(shared) + 1;
		p->shared_pending &= ~SIGBIT(sig);
		*info = p->shared_info[sig];
		return sig;
	}
	return 0;
}

/* Job control: every thread of the process stops until SIGCONT. */
static void stop_proc(struct proc *p, int sig)
{
	struct thread *self = cur_thread();
	struct siginfo_k info;

	p->stopped = true;
	p->stop_sig = sig;
	p->stop_reported = false;
	if (p->parent &&
	    !(p->parent->sighand && (p->parent->sighand->action[SIGCHLD].flags & SA_NOCLDSTOP))) {
		memset(&info, 0, sizeof(info));
		info.signo = SIGCHLD;
		info.code = 5; /* CLD_STOPPED */
		info.chld.pid = pid_to_user(p->parent, p->pid);
		info.chld.status = sig;
		signal_send_proc(p->parent, SIGCHLD, &info);
	}
	if (p->parent)
		wake_all(&p->parent->child_wait);
	while (p->stopped && !p->exiting && !(self->pending & SIGBIT(SIGKILL))) {
		self->state = T_STOPPED;
		schedule();
	}
}

struct rt_sigframe {
	uint64_t pretcode;
	/* struct ucontext */
	uint64_t uc_flags, uc_link;
	uint64_t ss_sp;
	int32_t ss_flags, ss_pad;
	uint64_t ss_size;
	struct sigcontext_k mc;
	uint64_t uc_sigmask;
	struct siginfo_k info;
};

_Static_assert(sizeof(struct sigcontext_k) == 256, "sigcontext layout");

static bool on_altstack(struct thread *t, uint64_t sp)
{
	return t->altstack[2] && sp > t->altstack[0] && sp <= t->altstack[0] + t->altstack[2];
}

/* Build the handler's frame on the program's stack and point tf at it.
 * Returns false if the stack cannot take it (then the program dies). */
static bool setup_frame(struct trapframe *tf, int sig, const struct k_sigaction *act,
                        const struct siginfo_k *info)
{
	struct thread *t = cur_thread();
	size_t xsize = sched_xsave_size();
	uint64_t sp = tf->rsp, fp, frame_at;
	struct rt_sigframe frame;
	uint32_t magic2 = FP_XSTATE_MAGIC2;
	uint8_t *legacy = t->fpu;

	if ((act->flags & SA_ONSTACK) && t->altstack[2] && !on_altstack(t, sp))
		sp = t->altstack[0] + t->altstack[2];
	else
		sp -= 128; /* the red zone */
	fp = ALIGN_DOWN(sp - xsize - 4, 64);
	frame_at = ALIGN_DOWN(fp - sizeof(frame), 16) - 8;

	/* The vector state, as XSAVE leaves it plus the software bytes that
	 * tell a reader it is extended. */
	sched_fpu_save_current();
	{
		uint32_t sw[12] = {FP_XSTATE_MAGIC1, (uint32_t)xsize + 4};
		uint64_t mask = sched_xsave_mask();
		memcpy(&sw[2], &mask, 8);
		sw[4] = (uint32_t)xsize;
		memcpy(legacy + 464, sw, sizeof(sw));
	}
	if (copy_to_user((void *)fp, t->fpu, xsize) ||
	    copy_to_user((void *)(fp + xsize), &magic2, 4))
		return false;

	memset(&frame, 0, sizeof(frame));
	frame.pretcode = act->restorer;
	frame.uc_flags = UC_FP_XSTATE;
	frame.ss_sp = t->altstack[0];
	frame.ss_flags = t->altstack[2] ? (on_altstack(t, tf->rsp) ? 1 : 0) : 2 /* SS_DISABLE */;
	frame.ss_size = t->altstack[2];
	sigcontext_from_tf(&frame.mc, tf);
	frame.mc.fpstate = fp;
	frame.uc_sigmask = t->restore_sigmask ? t->saved_sigmask : t->sigmask;
	frame.info = *info;
	if (copy_to_user((void *)frame_at, &frame, sizeof(frame)))
		return false;

	tf->rdi = (uint64_t)sig;
	tf->rsi = frame_at + offsetof(struct rt_sigframe, info);
	tf->rdx = frame_at + offsetof(struct rt_sigframe, uc_flags);
	tf->rax = 0;
	tf->rsp = frame_at;
	tf->rip = act->handler;
	tf->rflags &= ~(0x100UL | 0x400UL); /* TF, DF */
	return true;
}

/* A syscall interrupted by a signal: restart it or report EINTR. */
static void fix_restart(struct trapframe *tf, const struct k_sigaction *act, bool handler)
{
	long ret = (long)tf->rax;

	if (tf->vector != TF_SYSCALL)
		return;
	switch (ret) {
	case -ERESTARTNOHAND:
	case -ERESTART_RESTARTBLOCK:
		if (handler) {
			tf->rax = (uint64_t)-EINTR;
			return;
		}
		break;
	case -ERESTARTSYS:
		if (handler && !(act->flags & SA_RESTART)) {
			tf->rax = (uint64_t)-EINTR;
			return;
		}
		break;
	case -ERESTARTNOINTR:
		break;
	default:
		return;
	}
	syscall_restart(tf);
}

void signal_deliver(struct trapframe *tf)
{
	struct thread *t = cur_thread();
	struct proc *p = t->proc;
	struct siginfo_k info;
	struct k_sigaction act;
	int sig;

	while ((sig = dequeue(t, &info))) {
		act = p->sighand->action[sig];
		if (act.handler == KSIG_IGN)
			continue;
		if (act.handler == KSIG_DFL) {
			if (sig_ignore_default & SIGBIT(sig))
				continue;
			if (sig_stop_default & SIGBIT(sig)) {
				stop_proc(p, sig);
				continue;
			}
			proc_exit((sig & 0x7f) | ((sig_core & SIGBIT(sig)) ? 0x80 : 0));
		}
		fix_restart(tf, &act, true);
		if (!setup_frame(tf, sig, &act, &info)) {
			kprintf("kiln: %s (pid %d): cannot deliver %s: bad stack\n", p->comm,
			        p->pid, signal_name(sig));
			proc_exit(SIGSEGV);
		}
		t->sigmask |= act.mask | ((act.flags & SA_NODEFER) ? 0 : SIGBIT(sig));
		t->sigmask &= ~sig_unblockable;
		t->restore_sigmask = false;
		t->restart_deadline = 0; /* the interrupted sleep is over */
		if (act.flags & SA_RESETHAND)
			p->sighand->action[sig].handler = KSIG_DFL;
		t->tf_dirty = true;
		return;
	}
	/* No handler ran: a syscall that asked to be restarted is. */
	fix_restart(tf, NULL, false);
}

long signal_return(struct trapframe *tf)
{
	struct thread *t = cur_thread();
	uint64_t frame_at = tf->rsp - 8; /* the handler's `ret` popped pretcode */
	struct rt_sigframe frame;
	size_t xsize = sched_xsave_size();

	if (copy_from_user(&frame, (void *)frame_at, sizeof(frame)) ||
	    !sigcontext_to_tf(tf, &frame.mc))
		goto bad;
	if (frame.mc.fpstate) {
		if (copy_from_user(t->fpu, (void *)frame.mc.fpstate, xsize) ||
		    !sched_fpu_check(t->fpu))
			goto bad;
		sched_fpu_restore_current();
	}
	t->sigmask = frame.uc_sigmask & ~sig_unblockable;
	if (!(frame.ss_flags & 2) && frame.ss_size >= 2048) {
		t->altstack[0] = frame.ss_sp;
		t->altstack[2] = frame.ss_size;
	}
	t->tf_dirty = true;
	return (long)tf->rax;
bad:
	kprintf("kiln: %s (pid %d): bad signal frame in rt_sigreturn\n", t->proc->comm,
	        t->proc->pid);
	proc_exit(SIGSEGV);
}

void sigcontext_from_tf(struct sigcontext_k *sc, const struct trapframe *tf)
{
	sc->r8 = tf->r8;
	sc->r9 = tf->r9;
	sc->r10 = tf->r10;
	sc->r11 = tf->r11;
	sc->r12 = tf->r12;
	sc->r13 = tf->r13;
	sc->r14 = tf->r14;
	sc->r15 = tf->r15;
	sc->rdi = tf->rdi;
	sc->rsi = tf->rsi;
	sc->rbp = tf->rbp;
	sc->rbx = tf->rbx;
	sc->rdx = tf->rdx;
	sc->rax = tf->rax;
	sc->rcx = tf->rcx;
	sc->rsp = tf->rsp;
	sc->rip = tf->rip;
	sc->eflags = tf->rflags;
	sc->cs = 0x33;
	sc->ss = 0x2b;
	sc->err = tf->vector == TF_SYSCALL ? 0 : tf->error;
	sc->trapno = tf->vector == TF_SYSCALL ? 0 : tf->vector;
	sc->cr2 = tf->cr2;
}

bool sigcontext_to_tf(struct trapframe *tf, const struct sigcontext_k *sc)
{
	/* The flags a program may change (Linux's FIX_EFLAGS), interrupts on. */
	const uint64_t user_flags = 0x40dd5 | 0x200000;

	if (sc->rip >= USER_TOP_K || sc->rsp >= USER_TOP_K)
		return false;
	tf->r8 = sc->r8;
	tf->r9 = sc->r9;
	tf->r10 = sc->r10;
	tf->r11 = sc->r11;
	tf->r12 = sc->r12;
	tf->r13 = sc->r13;
	tf->r14 = sc->r14;
	tf->r15 = sc->r15;
	tf->rdi = sc->rdi;
	tf->rsi = sc->rsi;
	tf->rbp = sc->rbp;
	tf->rbx = sc->rbx;
	tf->rdx = sc->rdx;
	tf->rax = sc->rax;
	tf->rcx = sc->rcx;
	tf->rsp = sc->rsp;
	tf->rip = sc->rip;
	tf->rflags = (sc->eflags & user_flags) | 0x202;
	tf->vector = 0; /* no longer a syscall: never restarted */
	return true;
}

void syscall_restart(struct trapframe *tf)
{
	tf->rip -= 2; /* back onto the `call *%rax` (or `syscall`) */
	tf->rax = tf->error;
	tf->vector = 0;
}
