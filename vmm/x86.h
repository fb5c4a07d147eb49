/* SPDX-License-Identifier: MIT */
#ifndef KILN_VMM_X86_H
#define KILN_VMM_X86_H

#include "vm.h"

/* Page tables, GDT, TSS and IDT in the boot area (after kernel_load). */
int x86_build_boot_area(struct vm *vm);
uint64_t x86_pml4_pa(void);
/* The guest's XCR0, and the host's CPUID table kept in vm->supported_cpuid
 * for every vCPU's. */
void x86_pick_xcr0(struct vm *vm);
/* Registers, MSRs, LAPIC and CPUID of one vCPU, ready to enter the kernel. */
int x86_setup_vcpu(struct vcpu *c, uint64_t fdt_pa);
/* The CPUID table every vCPU gets (x86.c), and a hash naming it in
 * snapshots: a snapshot restores only where the table is the same. */
int x86_set_cpuid(struct vcpu *c);
int x86_cpuid_hash(struct vm *vm, uint64_t *hash);

#endif
