/* SPDX-License-Identifier: MIT */
/* Calls from the library OS into the supervisor (see kcpu.h). Each costs a
 * CPL3 -> CPL0 -> CPL3 round trip (12-25 us on PVM hosts): batch work. */
#ifndef KILN_SV_H
#define KILN_SV_H

#include <stdint.h>

#include "kcpu.h"

static inline void sv_call4(uint64_t op, uint64_t a, uint64_t b, uint64_t c)
{
	register uint64_t rdi asm("rdi") = op;
	register uint64_t rsi asm("rsi") = a;
	register uint64_t rdx asm("rdx") = b;
	register uint64_t rcx asm("rcx") = c;

	asm volatile("int3"
	             : "+r"(rdi), "+r"(rsi), "+r"(rdx), "+r"(rcx)
	             :
	             : "rax", "r8", "r9", "r10", "r11", "memory");
}

static inline void sv_call3(uint64_t op, uint64_t a, uint64_t b)
{
	sv_call4(op, a, b, 0);
}

static inline void sv_halt(uint64_t tsc_deadline)
{
	sv_call3(SV_HALT, tsc_deadline, 0);
}

/* As sv_halt, but the deadline replaces the armed one even when 0 (which
 * disarms the timer: an idle CPU with nothing timed sleeps until a device
 * interrupt). */
static inline void sv_halt_rearm(uint64_t tsc_deadline)
{
	sv_call3(SV_HALT, tsc_deadline, 1);
}

/* ops_pa: n (<= KILN_MMIO_BATCH_MAX) struct kiln_mmio_op in guest RAM,
 * physically contiguous; base_pa: a device's virtio-mmio window. */
static inline void sv_mmio(uint64_t base_pa, uint64_t ops_pa, unsigned n)
{
	sv_call4(SV_MMIO, ops_pa, n, base_pa);
}

static inline void sv_set_timer(uint64_t tsc_deadline)
{
	sv_call3(SV_TIMER, tsc_deadline, 0);
}

/* Load CR3 with root (physical): the root in use (a TLB flush) or another
 * (a switch). A call of its own (libos/core/entry.S), which the supervisor
 * serves without the dispatch of the others. */
void sv_load_cr3(uint64_t root);

/* root: the page-table root in use. */
static inline void sv_flush_tlb(uint64_t root)
{
	sv_load_cr3(root);
}

/* One page's translation changed: cheaper than a whole flush, which makes
 * a shadow MMU fault every page in again. */
static inline void sv_invlpg(uint64_t va)
{
	sv_call3(SV_INVLPG, va, 0);
}

/* tsc_deadline: the timer's new deadline, 0 to leave it as it is (a
 * switch and a timer in one call: a process starts, its parent wakes).
 * Without a deadline the switch is a load of CR3 alone, as a flush is:
 * every instruction the supervisor runs is emulated on PVM hosts. */
static inline void sv_set_cr3(uint64_t root, uint64_t tsc_deadline)
{
	if (tsc_deadline)
		sv_call3(SV_SET_CR3, tsc_deadline, root);
	else
		sv_load_cr3(root);
}

/* kiln's ports are open to CPL3 in the TSS I/O bitmap. */
static inline void port_out_regs(uint16_t port, uint64_t rdi, uint64_t rsi)
{
	asm volatile("outb %%al, %%dx" ::"d"(port), "a"(0), "D"(rdi), "S"(rsi) : "memory");
}

#endif
