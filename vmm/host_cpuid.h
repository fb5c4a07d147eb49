/* SPDX-License-Identifier: MIT */
/* kiln-vmm --host-cpuid FILE: the host's CPUID table from kilnd's file
 * (format in include/kiln/host_cpuid.h) instead of KVM_GET_SUPPORTED_CPUID. */
#ifndef KILN_VMM_HOST_CPUID_H
#define KILN_VMM_HOST_CPUID_H

#include <linux/kvm.h>
#include <stddef.h>

/*
 * Check a whole file's bytes and fill out (room for KILN_HOST_CPUID_MAX
 * entries) with its table: 0, or -EINVAL with why filled in. Checked: the
 * size against the header, magic, version, entry size, count (1 to the
 * maximum), the entries' hash, zero padding, known flags only, no entry
 * twice, leaf 0 present and no leaf past its range's maximum.
 */
int host_cpuid_parse(const void *buf, size_t len, struct kvm_cpuid2 *out, char *why, size_t wlen);
/* Read and check path: a table to put in vm->supported_cpuid (room for
 * KILN_HOST_CPUID_MAX entries, the caller frees it), or NULL with why. */
struct kvm_cpuid2 *host_cpuid_read(const char *path, char *why, size_t wlen);

#endif
