/* SPDX-License-Identifier: MIT */
/*
 * Supervisor calls: the few things the library OS cannot do at CPL3.
 * Reached from sv_bp_entry (`int3` in library-OS code) with interrupts off.
 * Each instruction here costs ~0.3-1 us on PVM hosts; keep it short.
 */
#include <stdint.h>

#include "kcpu.h"
#include "kiln/boot.h"

#define MSR_TSC_DEADLINE 0x6e0

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	asm volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

/* Sleep until an interrupt. `sti; hlt` is atomic (sti's one-instruction
 * shadow), so an interrupt that arrives after the check still wakes us. */
static void halt(uint64_t deadline)
{
	if (deadline)
		wrmsr(MSR_TSC_DEADLINE, deadline);
	if (!kcpu0.irq_pending)
		asm volatile("sti; hlt; cli" ::: "memory");
}

/* A batch of device-register accesses, done by the VMM in one exit (an
 * exit from CPL0 is several times cheaper than one from CPL3). */
static void mmio(uint64_t ops_pa, uint64_t n, uint64_t base_pa)
{
	asm volatile("outb %%al, %%dx" ::"d"(KILN_PORT_MMIO), "a"(0), "S"(ops_pa), "c"(n),
	             "D"(base_pa)
	             : "memory");
}

uint64_t sv_call(uint64_t op, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t cr3;

	switch (op) {
	case SV_HALT:
		halt(a);
		return 0;
	case SV_MMIO:
		mmio(a, b, c);
		return 0;
	case SV_FLUSH_TLB:
		asm volatile("mov %%cr3, %0; mov %0, %%cr3" : "=r"(cr3)::"memory");
		return 0;
	case SV_TIMER:
		wrmsr(MSR_TSC_DEADLINE, a);
		return 0;
	case SV_INVLPG:
		asm volatile("invlpg (%0)" ::"r"(a) : "memory");
		return 0;
	case SV_SET_CR3:
		asm volatile("mov %0, %%cr3" ::"r"(a) : "memory");
		if (b)
			wrmsr(MSR_TSC_DEADLINE, b);
		return 0;
	}
	return (uint64_t)-1;
}
