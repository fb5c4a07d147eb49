/* SPDX-License-Identifier: MIT */
/*
 * State shared between the supervisor (CPL0) and the library OS (CPL3) on
 * one CPU: it lives in the library OS's data (user pages) so that both can
 * read and write it with plain loads and stores. Offsets are fixed for the
 * supervisor's assembly.
 */
#ifndef KILN_KCPU_H
#define KILN_KCPU_H

#define KCPU_IRQ_PENDING 0  /* bit i: device i interrupted; bit 63: timer */
#define KCPU_TRAP_CR2    8  /* CR2 at the last trap forwarded to the library OS */
#define KCPU_SCRATCH     16 /* supervisor scratch (syscall entry on VMX hosts) */
#define KCPU_SAVE_RAX    24 /* supervisor scratch (trap forwarding) */
#define KCPU_KSTACK      32 /* kernel stack top of the running thread */
#define KCPU_LSTAR_RSP   40 /* library OS scratch: the program's RSP at lstar_entry */
#define KCPU_RESUME_RIP  48 /* where trap_resume jumps (libos/core/entry.S) */
#define KCPU_IRQ_FRAME   64 /* 7-word frame of an interrupt forwarded to the library OS */
/* The quiesce point (kiln/boot.h, KILN_PORT_QUIESCE): the handler's TSC just
 * before it stopped, and what the VMM handed it when it went on. resume_seq
 * counts quiesces; it is written last, so a reader that sees it unchanged
 * around its reads of the other fields saw one consistent set. */
#define KCPU_QUIESCE_TSC     128
#define KCPU_RESUME_REALTIME 136 /* RDI */
#define KCPU_RESUME_TSC      144 /* RSI */
#define KCPU_RESUME_FLAGS    152 /* RDX: KILN_RESUME_* */
#define KCPU_RESUME_SEED     160 /* R8-R11 */
#define KCPU_RESUME_SEQ      192
#define KCPU_SIZE            256

#define KCPU_IRQ_TIMER_BIT 63
/* Set with the timer bit by the quiesce handler: the library OS reads the
 * resume fields (clock step, reseeding). The timer bit goes with it because
 * the TSC may have moved under the armed deadline: re-arming as if it had
 * fired puts it back in terms of the new TSC. */
#define KCPU_IRQ_RESUME_BIT 62

/* The hardware trap frame of the last trap from CPL3 sits at the top of the
 * RSP0 stack: vector, error code, RIP, CS, RFLAGS, RSP, SS (pushed by the CPU
 * and the supervisor's stub). */
#define TRAP_FRAME_SIZE 56
#define RSP0_STACK_SIZE 4096

/* Supervisor calls: `int3` from library-OS code with RDI = op and RSI, RDX,
 * RCX = arguments (sv/entry.S). All caller-saved registers are clobbered.
 * A load of CR3 has an `int3` of its own instead (sv.h, sv_load_cr3). */
#define SV_HALT    1 /* RSI = TSC deadline, 0 = keep (RDX != 0: disarm): sleep till an irq */
#define SV_MMIO    2 /* RSI = kiln_mmio_op array, RDX = count, RCX = base (all physical) */
#define SV_SET_CR3 4 /* RDX = new page-table root (physical), RSI = TSC deadline, not 0 */
#define SV_TIMER   5 /* RSI = TSC deadline, 0 = disarm */
#define SV_INVLPG  6 /* RSI = virtual address whose translation changed */
#define SV_OP_MASK 7 /* the supervisor takes RDI & SV_OP_MASK */

/* Bytes between the device interrupt stubs (sv/entry.S, sv/note.c). */
#define SV_IRQ_STUB_SIZE 64

#ifndef __ASSEMBLER__
#include <stdint.h>

struct kcpu {
	volatile uint64_t irq_pending;
	uint64_t trap_cr2;
	uint64_t scratch;
	uint64_t save_rax;
	uint64_t kstack_top;
	uint64_t lstar_rsp;
	uint64_t resume_rip;
	uint64_t pad[1];
	uint64_t irq_frame[7]; /* vector, 0, RIP, CS, RFLAGS, RSP, SS */
	uint64_t pad2[1];
	volatile uint64_t quiesce_tsc;
	volatile uint64_t resume_realtime, resume_tsc, resume_flags;
	volatile uint64_t resume_seed[4];
	volatile uint64_t resume_seq;
	uint64_t pad3[7];
};

_Static_assert(sizeof(struct kcpu) == KCPU_SIZE, "kcpu layout");
_Static_assert(__builtin_offsetof(struct kcpu, lstar_rsp) == KCPU_LSTAR_RSP, "kcpu layout");
_Static_assert(__builtin_offsetof(struct kcpu, resume_rip) == KCPU_RESUME_RIP, "kcpu layout");
_Static_assert(__builtin_offsetof(struct kcpu, quiesce_tsc) == KCPU_QUIESCE_TSC, "kcpu layout");
_Static_assert(__builtin_offsetof(struct kcpu, resume_seq) == KCPU_RESUME_SEQ, "kcpu layout");

struct trap_hw_frame {
	uint64_t vector, error, rip, cs, rflags, rsp, ss;
};

extern struct kcpu kcpu0;
#endif

#endif
