/* SPDX-License-Identifier: MIT */
/* libFuzzer: kilnd's host CPUID file as kiln-vmm --host-cpuid reads it
 * (vmm/host_cpuid.c). The input's hash is made right when its first byte
 * is odd, so the checks after the hash are reached too; a table taken must
 * have 1 to KILN_HOST_CPUID_MAX entries, each as the input has it. */
#include <stdlib.h>
#include <string.h>

#include "host_cpuid.h"
#include "kiln/host_cpuid.h"
#include "snap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t esz = sizeof(struct kvm_cpuid_entry2), hsz = sizeof(struct kiln_host_cpuid_hdr);
	uint8_t *copy = malloc(size ? size : 1);
	struct kvm_cpuid2 *out = malloc(sizeof(*out) + KILN_HOST_CPUID_MAX * esz);
	char why[200];

	if (!copy || !out)
		abort();
	memcpy(copy, data, size); /* exact size: ASan sees any read past it */
	if (size >= hsz && (data[0] & 1)) {
		uint64_t h = snap_xxh64(copy + hsz, size - hsz, 0);

		memcpy(copy + offsetof(struct kiln_host_cpuid_hdr, hash), &h, sizeof(h));
	}
	if (!host_cpuid_parse(copy, size, out, why, sizeof(why)) &&
	    (out->nent < 1 || out->nent > KILN_HOST_CPUID_MAX || size != hsz + out->nent * esz ||
	     memcmp(out->entries, copy + hsz, out->nent * esz)))
		abort();
	free(copy);
	free(out);
	return 0;
}
