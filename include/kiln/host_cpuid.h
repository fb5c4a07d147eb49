/* SPDX-License-Identifier: MIT */
/*
 * The host's KVM_GET_SUPPORTED_CPUID table in a file: kilnd asks KVM once
 * at start and writes DATA_DIR/.host-cpuid (control/sandbox/host_cpuid.c);
 * every VMM it starts reads the table from there (kiln-vmm --host-cpuid,
 * vmm/host_cpuid.c) instead of asking KVM itself, which costs each VMM
 * start a few hundred microseconds of host CPU. To the VMM the file is
 * hostile input: it checks all of it and asks KVM when anything is off.
 *
 * Layout: this header, then nent struct kvm_cpuid_entry2 as KVM returned
 * them, nothing after. Host byte order (x86 hosts only), version 1.
 */
#ifndef KILN_HOST_CPUID_H
#define KILN_HOST_CPUID_H

#include <stdint.h>

#define KILN_HOST_CPUID_MAGIC   "KILNCPUI" /* 8 bytes, no terminator */
#define KILN_HOST_CPUID_VERSION 1
/* Entries KVM is asked for (and a file may hold): the VMM's vCPU tables
 * have room for this many. */
#define KILN_HOST_CPUID_MAX 128

struct kiln_host_cpuid_hdr {
	char magic[8];
	uint32_t version;
	uint32_t nent;       /* 1 .. KILN_HOST_CPUID_MAX */
	uint32_t entry_size; /* sizeof(struct kvm_cpuid_entry2), 40 */
	uint32_t reserved;   /* 0 */
	uint64_t hash;       /* XXH64, seed 0, of the nent entries */
};

#endif
