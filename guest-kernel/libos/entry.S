/* SPDX-License-Identifier: MIT */
/*
 * Library OS entry points (CPL3, native speed):
 *   libos_start       first CPL3 instruction after boot (RDI = FDT address)
 *   zpoline_entry     every rewritten syscall arrives here through the sled
 *   libos_trap_entry  exceptions forwarded by the supervisor
 *   trap_resume       return to any saved context without CPL0
 */
#include "kiln/boot.h"
#include "kcpu.h"
#include "trapframe.h"

	.section .text
	.globl	libos_start
libos_start:
	call	libos_main
	ud2

/*
 * A program executed `call *%rax` at a rewritten syscall site: RAX = number,
 * arguments in RDI RSI RDX R10 R8 R9, return address on the program's stack.
 * Like the kernel's syscall path we preserve every register but RAX, RCX and
 * R11, and touch no vector state (the library OS is built without it).
 * %gs:0 is the current thread's library-OS stack.
 */
	.section .text.zpoline_entry, "ax"
	.globl	zpoline_entry
zpoline_entry:
	movq	%rsp, %r11
	movq	%gs:0, %rsp
	pushq	%r11
	pushq	%r9
	pushq	%r8
	pushq	%r10
	pushq	%rdx
	pushq	%rsi
	pushq	%rdi
	pushq	%rax
	movq	%rsp, %rdi
	call	syscall_dispatch
	addq	$8, %rsp
	popq	%rdi
	popq	%rsi
	popq	%rdx
	popq	%r10
	popq	%r8
	popq	%r9
	popq	%rsp
	ret

	.section .text
/*
 * The supervisor forwarded an exception from CPL3. Every general register
 * still holds the interrupted context's value; the hardware frame is at the
 * top of the RSP0 stack and CR2 in kcpu0. Save it all, then let C decide.
 */
	.globl	libos_trap_entry
libos_trap_entry:
	subq	$TF_SIZE, %rsp
	movq	%r15, TF_R15(%rsp)
	movq	%r14, TF_R14(%rsp)
	movq	%r13, TF_R13(%rsp)
	movq	%r12, TF_R12(%rsp)
	movq	%r11, TF_R11(%rsp)
	movq	%r10, TF_R10(%rsp)
	movq	%r9, TF_R9(%rsp)
	movq	%r8, TF_R8(%rsp)
	movq	%rbp, TF_RBP(%rsp)
	movq	%rdi, TF_RDI(%rsp)
	movq	%rsi, TF_RSI(%rsp)
	movq	%rdx, TF_RDX(%rsp)
	movq	%rcx, TF_RCX(%rsp)
	movq	%rbx, TF_RBX(%rsp)
	movq	%rax, TF_RAX(%rsp)
	leaq	libos_rsp0_top-TRAP_FRAME_SIZE(%rip), %rsi
#define COPY(off) movq (off - TF_VECTOR)(%rsi), %rax; movq %rax, off(%rsp)
	COPY(TF_VECTOR)
	COPY(TF_ERROR)
	COPY(TF_RIP)
	COPY(TF_CS)
	COPY(TF_RFLAGS)
	COPY(TF_RSP)
	COPY(TF_SS)
#undef COPY
	movq	kcpu0+KCPU_TRAP_CR2(%rip), %rax
	movq	%rax, TF_CR2(%rsp)
	movq	%rsp, %rdi
	call	trap_handle
	movq	%rsp, %rdi
	jmp	trap_resume

/*
 * Resume the context in the trapframe at RDI, at CPL3 without a supervisor
 * call: RFLAGS and RIP are stored just below the target stack's 128-byte red
 * zone, then `popfq; ret $128` lands on the target RSP. The caller checked
 * that those 16 bytes are writable.
 */
	.globl	trap_resume
trap_resume:
	movq	TF_RSP(%rdi), %rax
	subq	$144, %rax
	movq	TF_RFLAGS(%rdi), %rcx
	movq	%rcx, 0(%rax)
	movq	TF_RIP(%rdi), %rcx
	movq	%rcx, 8(%rax)
	movq	%rax, TF_RESUME_SP(%rdi)
	movq	%rdi, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rbp
	popq	%rdi
	popq	%rsi
	popq	%rdx
	popq	%rcx
	popq	%rbx
	popq	%rax
	movq	(%rsp), %rsp
	popfq
	ret	$128

	.section .bss
	.balign	4096
	.skip	16384
	.globl	libos_boot_stack_top
libos_boot_stack_top:
	.skip	16384
	.globl	libos_trap_stack_top
libos_trap_stack_top:
	.skip	RSP0_STACK_SIZE
	.globl	libos_rsp0_top
libos_rsp0_top:
