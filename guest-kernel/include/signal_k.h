/* SPDX-License-Identifier: MIT */
/* The signal frame's register block and syscall restarts (signal.c). */
#ifndef KILN_SIGNAL_K_H
#define KILN_SIGNAL_K_H

#include "klib.h"

struct trapframe;

/* A trapframe that entered through a syscall has this vector; its error
 * field holds the syscall number (for restarts). */
#define TF_SYSCALL ((uint64_t)-1)

/* struct sigcontext of the x86-64 Linux ABI (uc_mcontext). */
struct sigcontext_k {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate; /* program address of the XSAVE area */
	uint64_t reserved[8];
};

void sigcontext_from_tf(struct sigcontext_k *sc, const struct trapframe *tf);
/* false if the saved context is not one a program may resume. */
bool sigcontext_to_tf(struct trapframe *tf, const struct sigcontext_k *sc);
/* Make tf re-execute its syscall. */
void syscall_restart(struct trapframe *tf);
/* rt_sigreturn: restore the context saved by the signal frame. */
long signal_return(struct trapframe *tf);

#endif
