/* SPDX-License-Identifier: MIT */
#ifndef KILN_VMM_CPUID_CACHE_H
#define KILN_VMM_CPUID_CACHE_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * CPUID leaf 2 for an Intel table whose leaf 2 says only "see leaf 4"
 * (descriptor 0xff): the legacy one-byte cache descriptors of the caches
 * leaf 4 lists, each the largest one of that level, type and line size no
 * larger than the cache. glibc's start-up asks for about a dozen cache
 * parameters, each one leaf 2 and, on 0xff, a walk of leaf 4: ~74 CPUIDs
 * per process where ~41 do with descriptors. A CPUID is a host exit (tens
 * of us on Intel PVM hosts). True and regs = EAX..EDX if every cache has a
 * descriptor; false (leave leaf 2 as it is) otherwise or on other vendors.
 */
bool cpuid_cache_leaf2(const struct kvm_cpuid_entry2 *e, unsigned n, uint32_t regs[4]);

#endif
