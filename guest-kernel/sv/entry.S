/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's entry points: boot, exceptions, interrupts, supervisor
 * calls and the VMX syscall entry. Every instruction here is emulated on PVM
 * hosts (0.3-1 us each), so paths are as short as the job allows:
 *
 *  - exceptions from CPL3 are forwarded to the library OS, which reads the
 *    hardware frame left at the top of the RSP0 stack (a user page);
 *  - device and timer interrupts set a bit in kcpu0.irq_pending and EOI;
 *  - the snapshot quiesce interrupt stops at a port exit while the VMM
 *    pauses or snapshots the VM (sv_quiesce_entry);
 *  - `int3` from library-OS code is a supervisor call (sv_bp_entry).
 */
#include "kiln/boot.h"
#include "kcpu.h"

#define EOI_MSR 0x80b
#define TSC_DEADLINE_MSR 0x6e0

	.section .text
	.code64

/* Boot: RDI = FDT address, kept for libos_start. Drop to CPL3. */
	.globl sv_entry
sv_entry:
	pushq	$KILN_SEL_UDATA
	pushq	$libos_boot_stack_top
	pushq	$0x202
	pushq	$KILN_SEL_UCODE
	pushq	$libos_start
	iretq

/* Exception stubs, 16 bytes apart so sv/note.c can compute their addresses.
 * Each pushes a dummy error code where the CPU does not, then the vector. */
	.balign	16
	.globl	sv_exc_stubs
sv_exc_stubs:
	vec = 0
	.rept	32
	.balign	16
	.if	vec == 8 || (vec >= 10 && vec <= 14) || vec == 17 || vec == 21 || vec == 29 || vec == 30
	pushq	$vec
	.else
	pushq	$0
	pushq	$vec
	.endif
	.if	vec == 1
	jmp	exc_db
	.else
	jmp	exc_common
	.endif
	vec = vec + 1
	.endr

/* A program that resumes with TF set (it set it itself) takes its
 * single-step trap after the instruction that follows trap_resume's popfq:
 * at trap_resume_jmp, whose jump is the one to the program, with every
 * other register the program's (libos/core/entry.S). It is the program's
 * trap at its first instruction, as Linux gives it. */
exc_db:
	cmpq	$trap_resume_jmp, 16(%rsp)
	jne	exc_common
	movq	%rax, kcpu0+KCPU_SAVE_RAX(%rip)
	movq	kcpu0+KCPU_RESUME_RIP(%rip), %rax
	movq	%rax, 16(%rsp)
	movq	kcpu0+KCPU_SAVE_RAX(%rip), %rax

/* Stack: vector, error, RIP, CS, RFLAGS, RSP, SS. */
exc_common:
	testb	$3, 24(%rsp)
	jz	sv_fatal
exc_user:
	movq	%rax, kcpu0+KCPU_SAVE_RAX(%rip)
	movq	%cr2, %rax
	movq	%rax, kcpu0+KCPU_TRAP_CR2(%rip)
	/* The frame stays where it is for the library OS; return to CPL3 at
	 * its trap entry: on the running thread's kernel stack for a program's
	 * fault, or below the interrupted stack's red zone when the library OS
	 * itself faulted (a user-copy fault, possibly while handling a trap). */
	movq	kcpu0+KCPU_KSTACK(%rip), %rax
	cmpq	$KILN_VA_LIBOS_START, 16(%rsp)
	jb	1f
	movq	40(%rsp), %rax
	subq	$256, %rax
	andq	$-16, %rax
1:	pushq	$KILN_SEL_UDATA
	pushq	%rax
	pushq	$0x202
	pushq	$KILN_SEL_UCODE
	pushq	$libos_trap_entry
	movq	kcpu0+KCPU_SAVE_RAX(%rip), %rax
	iretq

/* Nothing sensible can continue: report through the FATAL port. */
	.globl	sv_fatal
sv_fatal:
	movq	0(%rsp), %rdi
	movq	8(%rsp), %rsi
	movq	16(%rsp), %r8
	movq	24(%rsp), %r9
	movq	32(%rsp), %r10
	movq	40(%rsp), %r11
	movq	%cr2, %r12
	movw	$KILN_PORT_FATAL, %dx
	outb	%al, %dx
1:	cli
	hlt
	jmp	1b

/* TSC deadline = RSI (0 disarms); clobbers RAX, RCX, RDX. */
.macro wrdeadline
	movl	%esi, %eax
	movq	%rsi, %rdx
	shrq	$32, %rdx
	movl	$TSC_DEADLINE_MSR, %ecx
	wrmsr
.endm

/* #BP: from library-OS code it is a supervisor call; from a program it is a
 * breakpoint trap like any other. Library-OS code is the only code above
 * KILN_VA_LIBOS_START that runs at CPL3.
 *
 * Supervisor calls (kcpu.h: RDI = op, RSI, RDX, RCX = arguments) are the
 * commonest CPL0 path, so each op is a few instructions reached through one
 * table jump, and returns straight from the trap frame (the op is taken
 * modulo the table's size, a mask rather than a compare and a branch: an
 * op outside SV_* does nothing). The commonest of them, a load of CR3
 * (RDI = root), comes from one `int3` of its own (libos/core/entry.S) and
 * is told by its return address alone. */
	.balign	16
	.globl	sv_bp_entry
sv_bp_entry:
	cmpq	$sv_load_cr3_ret, (%rsp)
	jne	1f
	movq	%rdi, %cr3
	iretq
1:	cmpq	$KILN_VA_LIBOS_START, (%rsp)
	jb	2f
	andl	$SV_OP_MASK, %edi	/* (zero-extends: RDI < 8) */
	jmpq	*sv_ops(, %rdi, 8)
2:	pushq	$0
	pushq	$3
	jmp	exc_user

/* RDX = new root, RSI = TSC deadline, not 0 (a switch and a timer in one
 * call: a process starts, its parent wakes; a switch alone is a load of
 * CR3, see sv_bp_entry). */
sv_set_cr3:
	movq	%rdx, %cr3
	/* fall through */

/* RSI = TSC deadline, 0 disarms. */
sv_timer:
	wrdeadline
sv_ret:
	iretq

/* RSI = TSC deadline, or 0 to leave it as it is unless RDX != 0 (then 0
 * disarms). Sleep until an interrupt: `sti; hlt` is atomic (sti's
 * one-instruction shadow), so an interrupt that arrives after the check
 * still wakes us. Its handler returns to the iretq with interrupts on, and
 * another one taken there is handled like any other at CPL0. */
sv_halt:
	orq	%rsi, %rdx
	jz	1f
	wrdeadline
1:	cmpq	$0, kcpu0+KCPU_IRQ_PENDING(%rip)
	jne	sv_ret
	sti
	hlt
	iretq

/* RSI = kiln_mmio_op array, RDX = count, RCX = device window (physical): a
 * batch of device-register accesses done by the VMM in one exit (an exit
 * from CPL0 is several times cheaper than one from CPL3). The port's
 * registers: RSI = ops, RCX = count, RDI = window. */
sv_mmio:
	movq	%rcx, %rdi
	movq	%rdx, %rcx
	movl	$KILN_PORT_MMIO, %edx
	xorl	%eax, %eax
	outb	%al, %dx
	iretq

/* RSI = virtual address whose translation changed. */
sv_invlpg:
	invlpg	(%rsi)
	iretq

	.globl	sv_timer_entry
sv_timer_entry:
	lock btsq $KCPU_IRQ_TIMER_BIT, kcpu0+KCPU_IRQ_PENDING(%rip)
irq_eoi:
	/* Stack: RIP, CS, RFLAGS, RSP, SS. */
	testb	$3, 8(%rsp)
	jz	irq_eoi_halted
irq_eoi_cpl3:
	pushq	%rax
	pushq	%rcx
	pushq	%rdx
	movl	$EOI_MSR, %ecx
	xorl	%eax, %eax
	xorl	%edx, %edx
	wrmsr
	/* Stack: RDX, RCX, RAX, then RIP, CS, RFLAGS, RSP, SS. The library OS
	 * polls the bits itself; an interrupt that hit program code is
	 * forwarded, so the library OS can preempt. So is one that came on the
	 * library OS's way back to a program after its last look at the bits
	 * (libos/core/entry.S, trap_resume): it is restarted at trap_resume_irq
	 * or, at the final jump, forwarded as the program's. */
	movq	24(%rsp), %rax
	cmpq	$KILN_VA_LIBOS_START, %rax
	jb	irq_forward
	cmpq	$trap_resume_jmp, %rax
	ja	irq_pop
	je	irq_at_jmp
	cmpq	$trap_resume_window, %rax
	jb	irq_pop
	cmpq	$trap_resume_sp, %rax
	jne	1f
	subq	$8, 48(%rsp)	/* the popfq ran: back to tf + TF_RFLAGS */
1:	movq	$trap_resume_irq, 24(%rsp)
	movq	$0x202, 40(%rsp)
	jmp	irq_pop
irq_at_jmp:
	movq	kcpu0+KCPU_RESUME_RIP(%rip), %rax
irq_forward:
	movq	%rax, kcpu0+KCPU_IRQ_FRAME+16(%rip)
	movq	40(%rsp), %rax
	movq	%rax, kcpu0+KCPU_IRQ_FRAME+32(%rip)
	movq	48(%rsp), %rax
	movq	%rax, kcpu0+KCPU_IRQ_FRAME+40(%rip)
	movq	kcpu0+KCPU_KSTACK(%rip), %rax
	movq	%rax, 48(%rsp)
	movq	$libos_irq_entry, 24(%rsp)
	movq	$0x202, 40(%rsp)
irq_pop:
	popq	%rdx
	popq	%rcx
	popq	%rax
	iretq

/* The CPU was halted: only sv_halt runs at CPL0 with interrupts on, and
 * RAX, RCX and RDX are dead there. The woken CPU returns to the library OS,
 * which polls the bits. This is the path of every request to an idle guest. */
irq_eoi_halted:
	movl	$EOI_MSR, %ecx
	xorl	%eax, %eax
	xorl	%edx, %edx
	wrmsr
	iretq

/* Device interrupts: vector KILN_VEC_DEVICE0 + n sets bit n, SV_IRQ_STUB_SIZE
 * bytes apart. Each ends itself an interrupt that woke the halted CPU (as
 * irq_eoi_halted: the path of every request to an idle guest), without a
 * jump to the common code. */
	.balign	SV_IRQ_STUB_SIZE
	.globl	sv_irq_stubs
sv_irq_stubs:
	irq = 0
	.rept	KILN_MMIO_MAX_DEVICES
	lock btsq $irq, kcpu0+KCPU_IRQ_PENDING(%rip)
	testb	$3, 8(%rsp)
	jnz	irq_eoi_cpl3
	movl	$EOI_MSR, %ecx
	xorl	%eax, %eax
	xorl	%edx, %edx
	wrmsr
	iretq
	irq = irq + 1
	.org	sv_irq_stubs + SV_IRQ_STUB_SIZE * irq, 0xcc /* (fails if longer) */
	.endr

	.globl	sv_spurious_entry
sv_spurious_entry:
	iretq

/*
 * The snapshot quiesce point (kiln/boot.h, KILN_PORT_QUIESCE): stop at the
 * `out` for as long as the VMM holds the VM paused, perhaps to wake up in
 * another VM, then keep what the VMM handed over in registers for the
 * library OS and finish like any other interrupt. The `out` is the only
 * exit: the state a snapshot saves is always this one.
 */
	.globl	sv_quiesce_entry
sv_quiesce_entry:
	pushq	%rax
	pushq	%rdx
	pushq	%rdi
	pushq	%rsi
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	rdtsc
	movl	%eax, kcpu0+KCPU_QUIESCE_TSC(%rip)
	movl	%edx, kcpu0+KCPU_QUIESCE_TSC+4(%rip)
	movw	$KILN_PORT_QUIESCE, %dx
	outb	%al, %dx
	movq	%rdi, kcpu0+KCPU_RESUME_REALTIME(%rip)
	movq	%rsi, kcpu0+KCPU_RESUME_TSC(%rip)
	movq	%rdx, kcpu0+KCPU_RESUME_FLAGS(%rip)
	movq	%r8, kcpu0+KCPU_RESUME_SEED(%rip)
	movq	%r9, kcpu0+KCPU_RESUME_SEED+8(%rip)
	movq	%r10, kcpu0+KCPU_RESUME_SEED+16(%rip)
	movq	%r11, kcpu0+KCPU_RESUME_SEED+24(%rip)
	incq	kcpu0+KCPU_RESUME_SEQ(%rip)
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rsi
	popq	%rdi
	popq	%rdx
	popq	%rax
	lock btsq $KCPU_IRQ_RESUME_BIT, kcpu0+KCPU_IRQ_PENDING(%rip)
	lock btsq $KCPU_IRQ_TIMER_BIT, kcpu0+KCPU_IRQ_PENDING(%rip)
	jmp	irq_eoi

/*
 * LSTAR on VMX hosts, where `syscall` enters CPL0 here with the program's
 * stack: build the frame of a #PF at this address, which the library OS
 * treats as a syscall. (On PVM hosts `syscall` stays at CPL3 and LSTAR is
 * the library OS's own lstar_entry instead: kiln/boot.h.)
 */
	.balign	16
	.globl	sv_syscall_entry
sv_syscall_entry:
	movq	%rsp, kcpu0+KCPU_SCRATCH(%rip)
	movq	$libos_rsp0_top, %rsp
	pushq	$KILN_SEL_UDATA
	pushq	kcpu0+KCPU_SCRATCH(%rip)
	pushq	%r11
	pushq	$KILN_SEL_UCODE
	pushq	$sv_syscall_entry
	pushq	$0x15
	pushq	$14
	jmp	exc_user

	.section .rodata
	.balign	8
sv_ops:	/* indexed by SV_*, SV_OP_MASK + 1 entries (the last ones do nothing) */
	.quad	sv_ret, sv_halt, sv_mmio, sv_ret, sv_set_cr3, sv_timer, sv_invlpg, sv_ret
	.if	. - sv_ops != 8 * (SV_OP_MASK + 1)
	.error	"sv_ops needs SV_OP_MASK + 1 entries"
	.endif

	.section .bss
	.balign	4096
sv_ist1:
	.skip	4096
	.globl	sv_ist1_top
sv_ist1_top:
sv_ist2:
	.skip	4096
	.globl	sv_ist2_top
sv_ist2_top:
sv_boot_stack:
	.skip	256
	.globl	sv_boot_stack_top
sv_boot_stack_top:
