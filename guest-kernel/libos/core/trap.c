/* SPDX-License-Identifier: MIT */
/*
 * Exceptions from CPL3, forwarded by the supervisor, and the first run of a
 * syscall site. The kinds:
 *  - a syscall that has not been rewritten yet: rewrite the site, serve the
 *    call, return after it. On PVM hosts `syscall` stays at CPL3 and LSTAR is
 *    the library OS's lstar_entry (entry.S), which calls first_syscall_entry
 *    without the supervisor; on VMX hosts it enters CPL0 at the supervisor's
 *    sv_syscall_entry, which forwards it as a #PF at that address;
 *  - a rewritten syscall with a number outside the sled (`call *%rax` to a
 *    wild address): -ENOSYS;
 *  - a write to a page borrowed from the image, or the first touch of a
 *    lazily mapped page (vm.c): copy or allocate it, retry;
 *  - a fault inside the library OS's user-copy routines: -EFAULT;
 *  - anything else: the program's fault, which ends it with a signal.
 */
#include <asm/signal.h>

#include "kiln/boot.h"
#include "ktime.h"
#include "oom.h"
#include "printk.h"
#include "sched.h"
#include "signal_k.h"
#include "proc.h"
#include "syscall.h"
#include "trapframe.h"
#include "uaccess.h"
#include "vm.h"

extern bool kiln_stats;
extern char sv_syscall_entry[];
extern char __libos_text_start[], __libos_text_end[];

static bool in_libos(uint64_t rip)
{
	return rip >= KILN_VA_LIBOS_START && rip < KILN_VA_LIBOS_END;
}

/* The first run of a syscall site (RCX = return RIP, R11 = RFLAGS, as
 * `syscall` left them). Rewrite the site, then serve it like any syscall.
 * A site that cannot be rewritten (no memory, or no longer `0f 05`) is
 * served all the same, and comes here again next time. */
static void first_syscall(struct trapframe *tf)
{
	struct thread *t = cur_thread();

	vm_patch_syscall(t->proc->as, tf->rcx - 2);
	tf->rip = tf->rcx;
	tf->rflags = tf->r11;
	tf->vector = TF_SYSCALL;
	tf->error = tf->rax;
	t->syscall_tf = tf;
	tf->rax = (uint64_t)syscall_dispatch(tf);
}

/* PVM hosts: lstar_entry saved the program's context at CPL3 (RIP = RCX,
 * RFLAGS = R11, RSP untouched); it resumes with trap_resume. */
void first_syscall_entry(struct trapframe *tf)
{
	uint64_t t0 = kiln_stats ? rdtsc() : 0;

	first_syscall(tf);
	if (t0)
		stats_trap(STATS_TRAP_FIRST_SYSCALL, t0);
	exit_to_user(tf);
}

/* A rewritten syscall site's `call *%rax` went outside the sled (a number
 * over the sled's end, or a negative one): its return address follows one
 * of the sites we rewrote. A program's own `call *%rax` is not. */
static bool bad_syscall_number(struct trapframe *tf)
{
	uint64_t ret;

	if (tf->rip != tf->rax && tf->rip >= PAGE_SIZE)
		return false;
	if (copy_from_user(&ret, (void *)tf->rsp, 8) || ret < 2 ||
	    !vm_is_patched(cur_proc()->as, ret - 2))
		return false;
	syscall_count_enosys((long)tf->rax);
	tf->rax = (uint64_t)-ENOSYS;
	tf->rip = ret;
	tf->rsp += 8;
	return true;
}

static int signal_for(const struct trapframe *tf, const char **what)
{
	switch (tf->vector) {
	case 0:
		*what = "divide error";
		return SIGFPE;
	case 1:
		*what = "debug trap";
		return SIGTRAP;
	case 3:
		*what = "breakpoint";
		return SIGTRAP;
	case 4:
		*what = "overflow";
		return SIGSEGV;
	case 5:
		*what = "bound range exceeded";
		return SIGSEGV;
	case 6:
		*what = "invalid instruction";
		return SIGILL;
	case 7:
		*what = "FPU not available";
		return SIGSEGV;
	case 11:
		*what = "segment not present";
		return SIGBUS;
	case 12:
		*what = "stack segment fault";
		return SIGBUS;
	case 13:
		*what = "general protection fault";
		return SIGSEGV;
	case 14:
		*what = tf->error & 0x10 ? "page fault executing"
		        : tf->error & 2  ? "page fault writing"
		                         : "page fault reading";
		return SIGSEGV;
	case 16:
		*what = "x87 floating-point error";
		return SIGFPE;
	case 17:
		*what = "alignment check";
		return SIGBUS;
	case 19:
		*what = "SIMD floating-point error";
		return SIGFPE;
	default:
		*what = "unexpected exception";
		return SIGSEGV;
	}
}

/* A program fault: its handler runs if it has one; if not, or if the signal
 * is blocked, the process dies as on Linux (and init's death is reported). */
static void fault_signal(struct trapframe *tf, bool past_eof)
{
	struct thread *t = cur_thread();
	struct proc *p = t->proc;
	struct siginfo_k info;
	const char *what;
	char why[160];
	int sig = past_eof ? SIGBUS : signal_for(tf, &what);
	uint64_t h = p->sighand->action[sig].handler;

	if (past_eof)
		what = "access past the end of a mapped file:";
	memset(&info, 0, sizeof(info));
	info.signo = sig;
	/* SIGBUS BUS_ADRERR, SIGSEGV SEGV_MAPERR, or SI_KERNEL */
	info.code = past_eof ? 2 : tf->vector == 14 ? 1 : 0x80;
	info.fault.addr = tf->vector == 14 ? tf->cr2 : tf->rip;
	if (h > 1 && !(t->sigmask & SIGBIT(sig))) {
		signal_send_thread(t, sig, &info);
		return;
	}
	if (tf->vector == 14)
		ksnprintf(why, sizeof(why), "%s address %#lx at RIP %#lx", what,
		          (unsigned long)tf->cr2, (unsigned long)tf->rip);
	else
		ksnprintf(why, sizeof(why), "%s at RIP %#lx", what, (unsigned long)tf->rip);
	proc_kill_self(sig, why);
}

/* Memory ran out serving a page fault: like Linux's OOM killer, the
 * process that needed the page dies (once it leaves the kernel). */
static void out_of_memory(void)
{
	struct proc *p = cur_proc();

	kprintf("kiln: out of memory: killed pid %d (%s)\n", p->pid, p->comm);
	oom_note(p);
	signal_send_thread(cur_thread(), SIGKILL, NULL);
}

/* The kind of page fault we resolved at addr (for kiln.stats=1). */
static enum stats_trap fault_kind(uint64_t addr, uint32_t error)
{
	const struct vma *v = vm_find_vma(cur_proc()->as, addr);

	if (v && (v->flags & VMA_STACK))
		return STATS_TRAP_FAULT_STACK;
	return error & PF_PRESENT ? STATS_TRAP_FAULT_COPY : STATS_TRAP_FAULT_FILL;
}

void trap_handle(struct trapframe *tf)
{
	uint64_t t0 = kiln_stats ? rdtsc() : 0;
	enum stats_trap kind;
	int err = 0;

	if (in_libos(tf->rip)) {
		bool in_uaccess =
		    tf->rip >= (uint64_t)uaccess_start && tf->rip < (uint64_t)uaccess_end;

		if (in_uaccess && tf->vector == 14) {
			err = vm_fault(cur_proc()->as, tf->cr2, (uint32_t)tf->error);
			if (t0)
				stats_trap(STATS_TRAP_FAULT_KERNEL, t0);
			if (!err)
				trap_resume(tf); /* the copy goes on where it stopped */
			if (err == -ENOMEM)
				out_of_memory();
		}
		if (in_uaccess && (tf->vector == 14 || tf->vector == 13)) {
			tf->rip = (uint64_t)uaccess_fixup;
			tf->rax = (uint64_t)-EFAULT;
			/* Resume the library OS itself: no exit work. */
			trap_resume(tf);
		}
		kpanic("library OS fault: vector %lu error %#lx at RIP %#lx, address %#lx",
		       (unsigned long)tf->vector, (unsigned long)tf->error, (unsigned long)tf->rip,
		       (unsigned long)tf->cr2);
	}
	if (tf->vector == 14 && tf->rip == (uint64_t)sv_syscall_entry) { /* VMX hosts */
		kind = STATS_TRAP_FIRST_SYSCALL;
		first_syscall(tf);
	} else if ((tf->vector == 14 || tf->vector == 13) && bad_syscall_number(tf)) {
		kind = STATS_TRAP_BAD_SYSCALL; /* -ENOSYS is in place */
	} else if (tf->vector == 14 &&
	           (err = vm_fault(cur_proc()->as, tf->cr2, (uint32_t)tf->error)) != -EFAULT &&
	           err != -ERANGE) {
		kind = fault_kind(tf->cr2, (uint32_t)tf->error);
		if (err)
			out_of_memory();
		/* else retry on the new page */
	} else if (tf->vector == 14 && !(tf->error & PF_PRESENT) &&
	           vm_grow_stack(cur_proc()->as, tf->cr2) == 0) {
		kind = STATS_TRAP_FAULT_STACK; /* retry with the stack grown */
	} else {
		kind = STATS_TRAP_SIGNAL;
		fault_signal(tf, tf->vector == 14 && err == -ERANGE);
	}
	if (t0)
		stats_trap(kind, t0);
	exit_to_user(tf);
}

/* An interrupt hit program code (the supervisor forwarded it), or came on
 * the way back to it (entry.S, trap_resume_irq): serve the devices and
 * timers, then preempt if the time slice is over. */
void irq_handle(struct trapframe *tf)
{
	if (kiln_stats)
		stats_trap(STATS_TRAP_IRQ, rdtsc());
	irq_poll();
	exit_to_user(tf);
}
