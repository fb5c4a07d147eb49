/* SPDX-License-Identifier: MIT */
/*
 * Library OS entry points (CPL3, native speed):
 *   libos_start       first CPL3 instruction after boot (RDI = FDT address)
 *   zpoline_entry     every rewritten syscall arrives here through the sled
 *   lstar_entry       a syscall site's first run on PVM hosts (LSTAR)
 *   libos_trap_entry  exceptions forwarded by the supervisor
 *   trap_resume       return to any saved context without CPL0
 *   sv_load_cr3       the supervisor call that loads CR3
 */
#include "kiln/boot.h"
#include "kcpu.h"
#include "trapframe.h"

#define SAVE_GPRS \
	movq %r15, TF_R15(%rsp); movq %r14, TF_R14(%rsp); movq %r13, TF_R13(%rsp); \
	movq %r12, TF_R12(%rsp); movq %r11, TF_R11(%rsp); movq %r10, TF_R10(%rsp); \
	movq %r9, TF_R9(%rsp); movq %r8, TF_R8(%rsp); movq %rbp, TF_RBP(%rsp); \
	movq %rdi, TF_RDI(%rsp); movq %rsi, TF_RSI(%rsp); movq %rdx, TF_RDX(%rsp); \
	movq %rcx, TF_RCX(%rsp); movq %rbx, TF_RBX(%rsp); movq %rax, TF_RAX(%rsp)

/* Copy the 7-word hardware frame at RSI into the trapframe at RSP. */
#define COPY1(off) movq (off - TF_VECTOR)(%rsi), %rax; movq %rax, off(%rsp)
#define COPY_HW_FRAME \
	COPY1(TF_VECTOR); COPY1(TF_ERROR); COPY1(TF_RIP); COPY1(TF_CS); \
	COPY1(TF_RFLAGS); COPY1(TF_RSP); COPY1(TF_SS)

	.section .text
	.globl	libos_start
libos_start:
	call	libos_main
	ud2

/*
 * RDI = a page-table root: load it into CR3 (the root in use: a TLB flush;
 * another: a switch). The commonest supervisor call (a fork and exec takes
 * four), so the supervisor knows it by the address of its `int3` and skips
 * the dispatch of the others (sv/entry.S, sv_bp_entry): two emulated
 * instructions fewer on PVM hosts.
 */
	.globl	sv_load_cr3
sv_load_cr3:
	int3
	.globl	sv_load_cr3_ret
sv_load_cr3_ret:
	ret

/*
 * A program executed `call *%rax` at a rewritten syscall site: RAX = number,
 * arguments in RDI RSI RDX R10 R8 R9, return address on the program's stack.
 * Like the kernel's syscall path we preserve every register but RAX, RCX and
 * R11, and touch no vector state (the library OS is built without it). Unlike
 * it, the `call` has stored the return address in the word below the
 * program's stack pointer (its red zone), R11 is not the flags and DF comes
 * back clear: the price of a plain call (zpoline's known limit: a program
 * keeping data in its red zone across a `syscall` loses that word).
 *
 * The whole context goes into a trapframe on the thread's kernel stack
 * (%gs:0), so that a signal, a fork or a context switch can use it. Most
 * syscalls then return by the short path: restore the argument registers and
 * `ret` on the program's stack.
 */
	.section .text.zpoline_entry, "ax"
	.globl	zpoline_entry
zpoline_entry:
	movq	%rsp, %r11
	movq	%gs:0, %rsp
	subq	$TF_SIZE, %rsp
	movq	%r15, TF_R15(%rsp)
	movq	%r14, TF_R14(%rsp)
	movq	%r13, TF_R13(%rsp)
	movq	%r12, TF_R12(%rsp)
	movq	%r10, TF_R10(%rsp)
	movq	%r9, TF_R9(%rsp)
	movq	%r8, TF_R8(%rsp)
	movq	%rbp, TF_RBP(%rsp)
	movq	%rdi, TF_RDI(%rsp)
	movq	%rsi, TF_RSI(%rsp)
	movq	%rdx, TF_RDX(%rsp)
	movq	%rbx, TF_RBX(%rsp)
	movq	%rax, TF_RAX(%rsp)
	movq	(%r11), %rcx
	movq	%rcx, TF_RIP(%rsp)
	movq	%rcx, TF_RCX(%rsp)		/* RCX and R11 as `syscall` leaves them */
	movq	$0x202, TF_R11(%rsp)
	addq	$8, %r11
	movq	%r11, TF_RSP(%rsp)
	movq	$0x202, TF_RFLAGS(%rsp)
	movq	$-1, TF_VECTOR(%rsp)
	cld				/* the C code's assumption; a program may set DF */
	movq	%rsp, %rdi
	call	syscall_entry
	movq	%rsp, %rdi
	jmp	trap_resume

	.section .text
/*
 * LSTAR on PVM hosts (kiln/boot.h: syscall_entry_cpl3): a `syscall` that has
 * not been rewritten yet. PVM reflects it here without a privilege change:
 * still at CPL3, RCX = return RIP, R11 = RFLAGS, FMASK (TF DF AC) applied,
 * IF set. RSP is still the program's and its 128-byte red zone may hold live
 * data: nothing is stored on that stack (trap_resume stores none either).
 * The program's RSP waits in kcpu0 while the stack
 * switches (one CPU; an interrupt meanwhile only sets a bit, see the
 * supervisor's irq_eoi). first_syscall_entry (trap.c) takes RIP and RFLAGS
 * from RCX and R11, rewrites the site and serves the call; the return
 * restores every register, RCX and R11 as `syscall` leaves them.
 */
	.globl	lstar_entry
lstar_entry:
	cld
	movq	%rsp, kcpu0+KCPU_LSTAR_RSP(%rip)
	movq	%gs:0, %rsp
	subq	$TF_SIZE, %rsp
	SAVE_GPRS
	movq	kcpu0+KCPU_LSTAR_RSP(%rip), %rax
	movq	%rax, TF_RSP(%rsp)
	movq	$0, TF_CR2(%rsp)
	movq	%rsp, %rdi
	call	first_syscall_entry
	movq	%rsp, %rdi
	jmp	trap_resume

/*
 * The supervisor forwarded an exception from CPL3. Every general register
 * still holds the interrupted context's value; the hardware frame is at the
 * top of the RSP0 stack and CR2 in kcpu0. Save it all, then let C decide.
 */
	.globl	libos_trap_entry
libos_trap_entry:
	subq	$TF_SIZE, %rsp
	SAVE_GPRS
	leaq	libos_rsp0_top-TRAP_FRAME_SIZE(%rip), %rsi
	COPY_HW_FRAME
	movq	kcpu0+KCPU_TRAP_CR2(%rip), %rax
	movq	%rax, TF_CR2(%rsp)
	movq	%rsp, %rdi
	call	trap_handle
	movq	%rsp, %rdi
	jmp	trap_resume

/* An interrupt hit program code; the supervisor copied its frame (vector,
 * 0, RIP, CS, RFLAGS, RSP, SS) into kcpu0.irq_frame. */
	.globl	libos_irq_entry
libos_irq_entry:
	subq	$TF_SIZE, %rsp
	SAVE_GPRS
	leaq	kcpu0+KCPU_IRQ_FRAME(%rip), %rsi
	COPY_HW_FRAME
	movq	$0, TF_CR2(%rsp)
	movq	%rsp, %rdi
	call	irq_handle
	movq	%rsp, %rdi
	jmp	trap_resume

/* A new thread's first run: its trapframe sits at the top of its stack. */
	.globl	ret_from_fork
ret_from_fork:
	movq	%rsp, %rdi
	call	fork_child_start
	movq	%rsp, %rdi
	jmp	trap_resume

/* void switch_to(uint64_t *save_ksp, uint64_t ksp): callee-saved registers
 * on the old stack, then the new stack's. */
	.globl	switch_to
switch_to:
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	ret

/*
 * Resume the context in the trapframe at RDI, at CPL3 without a supervisor
 * call: RFLAGS by `popfq` from the trapframe, RSP by a load, RIP by a jump
 * through kcpu0.resume_rip (one CPU; RIP-relative, so no register is needed
 * once the context's are back). Nothing is stored on the context's stack.
 *
 * Interrupts stay enabled here and only set a bit in kcpu0.irq_pending while
 * library-OS code runs: the library OS looks at the bits when it chooses.
 * Returning to a program, the last look is the `cmpq` at trap_resume_window;
 * an interrupt that came before it is served (trap_resume_irq). One that
 * comes after it, before the program's first instruction, is caught by the
 * supervisor (sv/entry.S, irq_eoi_cpl3), which knows this window:
 *  - RIP in [trap_resume_window, trap_resume_jmp): the trapframe is intact
 *    and RSP is tf + TF_RFLAGS (tf + TF_RSP once the `popfq` has run, which
 *    the supervisor undoes), so it restarts the library OS at
 *    trap_resume_irq, as if the bit had been seen at the `cmpq`;
 *  - RIP = trap_resume_jmp: every register but RIP is the program's, so it
 *    forwards the interrupt as one that hit the program at
 *    kcpu0.resume_rip, before its first instruction.
 * Every instruction of the way back is in one case or the other, so no
 * interrupt waits for the program's next entry. A library-OS context (a
 * user-copy that faulted, going on) polls the bits itself: it resumes by
 * trap_resume_libos, outside the window.
 */
#define RESTORE_GPRS(b) \
	movq (TF_R15 - b)(%rsp), %r15; movq (TF_R14 - b)(%rsp), %r14; \
	movq (TF_R13 - b)(%rsp), %r13; movq (TF_R12 - b)(%rsp), %r12; \
	movq (TF_R11 - b)(%rsp), %r11; movq (TF_R10 - b)(%rsp), %r10; \
	movq (TF_R9 - b)(%rsp), %r9; movq (TF_R8 - b)(%rsp), %r8; \
	movq (TF_RBP - b)(%rsp), %rbp; movq (TF_RDI - b)(%rsp), %rdi; \
	movq (TF_RSI - b)(%rsp), %rsi; movq (TF_RDX - b)(%rsp), %rdx; \
	movq (TF_RCX - b)(%rsp), %rcx; movq (TF_RBX - b)(%rsp), %rbx; \
	movq (TF_RAX - b)(%rsp), %rax

	.globl	trap_resume
trap_resume:
	movq	TF_RIP(%rdi), %rax
	movq	%rax, kcpu0+KCPU_RESUME_RIP(%rip)
	leaq	TF_RFLAGS(%rdi), %rsp
	cmpq	$KILN_VA_LIBOS_START, %rax
	jae	trap_resume_libos
	.globl	trap_resume_window
trap_resume_window:
	cmpq	$0, kcpu0+KCPU_IRQ_PENDING(%rip)
	jne	trap_resume_irq
	RESTORE_GPRS(TF_RFLAGS)
	popfq
	.globl	trap_resume_sp
trap_resume_sp:
	movq	(%rsp), %rsp
	.globl	trap_resume_jmp
trap_resume_jmp:
	jmpq	*kcpu0+KCPU_RESUME_RIP(%rip)

/* The window's look found a bit, or the supervisor restarted it here (RSP =
 * tf + TF_RFLAGS, RFLAGS 0x202): serve the interrupts as if they had hit the
 * program where it resumes, then try again. */
	.globl	trap_resume_irq
trap_resume_irq:
	leaq	-TF_RFLAGS(%rsp), %rdi
	movq	%rdi, %rsp
	call	irq_handle
	movq	%rsp, %rdi
	jmp	trap_resume

trap_resume_libos:
	RESTORE_GPRS(TF_RFLAGS)
	popfq
	movq	(%rsp), %rsp
	jmpq	*kcpu0+KCPU_RESUME_RIP(%rip)

	.section .bss
	.balign	4096
	.skip	16384
	.globl	libos_boot_stack_top
libos_boot_stack_top:
	.skip	RSP0_STACK_SIZE
	.globl	libos_rsp0_top
libos_rsp0_top:
