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

/*
 * Leaf 4's caches reordered in place, level 2 and level 3 first, each in
 * its old order, the others after them, the terminator last: glibc's
 * start-up walks leaf 4 (one CPUID, one host exit, each) until it has
 * seen both, 4 subleaves on Intel hosts where 2 do. Nothing promises an
 * order (the SDM has software walk the subleaves to the null one, and
 * glibc's leaf-4 readers match level and type). Intel tables only, and
 * only whole, well-formed ones (subleaves 0..k contiguous, then null):
 * true if it reordered anything. After cpuid_cache_leaf2, which keeps
 * leaf 4's order for its descriptors.
 */
bool cpuid_cache_leaf4_order(struct kvm_cpuid_entry2 *e, unsigned n);

#endif
