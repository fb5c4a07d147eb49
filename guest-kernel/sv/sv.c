/* SPDX-License-Identifier: MIT */
/*
 * Supervisor calls: the few things the library OS cannot do at CPL3.
 * Reached from sv_bp_entry (`int3` in library-OS code) with interrupts off.
 * Each instruction here costs ~0.3-1 us on PVM hosts; keep it short.
 */
#include <stdint.h>

#include "kcpu.h"

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

static void mmio(uint64_t base, struct sv_mmio_op *op, uint64_t n)
{
	for (; n; n--, op++) {
		uint64_t w = *(volatile uint64_t *)op;
		volatile uint32_t *reg = (volatile uint32_t *)(base + (w & 0xfff));

		if (w & SV_MMIO_WRITE)
			*reg = (uint32_t)(w >> 32);
		else
			op->value = *reg;
	}
}

uint64_t sv_call(uint64_t op, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t cr3;

	switch (op) {
	case SV_HALT:
		halt(a);
		return 0;
	case SV_MMIO:
		mmio(c, (struct sv_mmio_op *)a, b);
		return 0;
	case SV_FLUSH_TLB:
		asm volatile("mov %%cr3, %0; mov %0, %%cr3" : "=r"(cr3)::"memory");
		return 0;
	case SV_TIMER:
		wrmsr(MSR_TSC_DEADLINE, a);
		return 0;
	case SV_SET_CR3:
		asm volatile("mov %0, %%cr3" ::"r"(a) : "memory");
		return 0;
	}
	return (uint64_t)-1;
}
