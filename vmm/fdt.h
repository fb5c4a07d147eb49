/* SPDX-License-Identifier: MIT */
#ifndef KILN_VMM_FDT_H
#define KILN_VMM_FDT_H

#include <stddef.h>
#include <stdint.h>

#include "vm.h"

struct fdt_params {
	uint32_t tsc_khz;
	uint64_t boot_tsc;         /* guest TSC ... */
	uint64_t boot_realtime_ns; /* ... at this CLOCK_REALTIME */
	uint64_t pml4_pa;
};

/* Build the device tree for vm into buf (at most size bytes, of which it
 * clears only about what the tree needs). Devices, memory and the loaded
 * images must already be in place. */
int fdt_build(struct vm *vm, const struct fdt_params *p, void *buf, size_t size);

#endif
