/* SPDX-License-Identifier: MIT */
/*
 * Exceptions from CPL3, forwarded by the supervisor. Four kinds:
 *  - a syscall that has not been rewritten yet (PVM: #PF at the supervisor
 *    LSTAR page): rewrite the site, serve the call, return after it;
 *  - a rewritten syscall with a number outside the sled (`call *%rax` to a
 *    wild address): -ENOSYS;
 *  - a fault inside the library OS's user-copy routines: -EFAULT;
 *  - anything else: the program's fault, which ends it with a signal.
 */
#include <asm/signal.h>

#include "kiln/boot.h"
#include "printk.h"
#include "proc.h"
#include "syscall.h"
#include "trapframe.h"
#include "uaccess.h"
#include "vm.h"

extern char sv_syscall_entry[];
extern char __libos_text_start[], __libos_text_end[];

static bool in_libos(uint64_t rip)
{
	return rip >= KILN_VA_LIBOS_START && rip < KILN_VA_LIBOS_END;
}

static void first_syscall(struct trapframe *tf)
{
	struct syscall_args a = {
	    .nr = (long)tf->rax,
	    .a0 = (long)tf->rdi,
	    .a1 = (long)tf->rsi,
	    .a2 = (long)tf->rdx,
	    .a3 = (long)tf->r10,
	    .a4 = (long)tf->r8,
	    .a5 = (long)tf->r9,
	    .user_rsp = tf->rsp,
	};
	uint64_t ret_rip = tf->rcx, ret_flags = tf->r11;

	/* Rewrite first: the call may not return (exit, exec). */
	vm_patch_syscall(cur_proc()->as, ret_rip - 2);
	tf->rax = (uint64_t)syscall_dispatch(&a);
	tf->rip = ret_rip;
	tf->rflags = ret_flags;
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

void trap_handle(struct trapframe *tf)
{
	char why[160];
	const char *what;
	int sig;

	if (in_libos(tf->rip)) {
		if (tf->rip >= (uint64_t)uaccess_start && tf->rip < (uint64_t)uaccess_end &&
		    (tf->vector == 14 || tf->vector == 13)) {
			tf->rip = (uint64_t)uaccess_fixup;
			return;
		}
		kpanic("library OS fault: vector %lu error %#lx at RIP %#lx, address %#lx",
		       (unsigned long)tf->vector, (unsigned long)tf->error, (unsigned long)tf->rip,
		       (unsigned long)tf->cr2);
	}
	if (tf->vector == 14 && tf->rip == (uint64_t)sv_syscall_entry) {
		first_syscall(tf);
		return;
	}
	if ((tf->vector == 14 || tf->vector == 13) && bad_syscall_number(tf))
		return;
	if (tf->vector == 14 && !(tf->error & 1) && vm_grow_stack(cur_proc()->as, tf->cr2) == 0)
		return;
	sig = signal_for(tf, &what);
	if (tf->vector == 14)
		ksnprintf(why, sizeof(why), "%s address %#lx at RIP %#lx", what,
		          (unsigned long)tf->cr2, (unsigned long)tf->rip);
	else
		ksnprintf(why, sizeof(why), "%s at RIP %#lx", what, (unsigned long)tf->rip);
	proc_kill_self(sig, why);
}
