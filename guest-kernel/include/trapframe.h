/* SPDX-License-Identifier: MIT */
/* A saved CPL3 context: general registers in the order trap_resume pops
 * them, then the hardware frame of the trap. Offsets are used by entry.S. */
#ifndef KILN_TRAPFRAME_H
#define KILN_TRAPFRAME_H

#define TF_R15    0
#define TF_R14    8
#define TF_R13    16
#define TF_R12    24
#define TF_R11    32
#define TF_R10    40
#define TF_R9     48
#define TF_R8     56
#define TF_RBP    64
#define TF_RDI    72
#define TF_RSI    80
#define TF_RDX    88
#define TF_RCX    96
#define TF_RBX    104
#define TF_RAX    112
#define TF_PAD    120
#define TF_VECTOR 128
#define TF_ERROR  136
#define TF_RIP    144
#define TF_CS     152
#define TF_RFLAGS 160
#define TF_RSP    168
#define TF_SS     176
#define TF_CR2    184
#define TF_SIZE   192

#ifndef __ASSEMBLER__
#include <stdint.h>

struct trapframe {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t pad; /* (keeps TF_SIZE a multiple of 16: the stack alignment) */
	uint64_t vector, error, rip, cs, rflags, rsp, ss;
	uint64_t cr2;
};

_Static_assert(sizeof(struct trapframe) == TF_SIZE, "trapframe layout");

/* Resume a saved context (entry.S); a program's after serving any interrupt
 * that came before its first instruction. */
__attribute__((noreturn)) void trap_resume(struct trapframe *tf);
#endif

#endif
