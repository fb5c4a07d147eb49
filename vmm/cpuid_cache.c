/* SPDX-License-Identifier: MIT */
/* Leaf 2 cache descriptors from leaf 4 (cpuid_cache.h). */
#include "cpuid_cache.h"

#include <stddef.h>
#include <string.h>

/* Descriptors with 64-byte lines (Intel SDM vol. 2A, table 3-12), each
 * level's and type's in order of size. glibc knows all of them. */
static const struct desc {
	uint8_t code, level, type; /* type as leaf 4's: 1 data, 2 instruction, 3 unified */
	uint32_t kib;
} descs[] = {
    {0x0d, 1, 1, 16},   {0x2c, 1, 1, 32},    {0x30, 1, 2, 32},    {0x80, 2, 3, 512},
    {0x87, 2, 3, 1024}, {0x7d, 2, 3, 2048},  {0x48, 2, 3, 3072},  {0x4e, 2, 3, 6144},
    {0xd0, 3, 3, 512},  {0xd1, 3, 3, 1024},  {0xd2, 3, 3, 2048},  {0xd8, 3, 3, 4096},
    {0xe4, 3, 3, 8192}, {0xea, 3, 3, 12288}, {0xeb, 3, 3, 18432}, {0xec, 3, 3, 24576},
};

static const struct kvm_cpuid_entry2 *find(const struct kvm_cpuid_entry2 *e, unsigned n,
                                           uint32_t fn, uint32_t idx)
{
	for (unsigned i = 0; i < n; i++)
		if (e[i].function == fn && e[i].index == idx)
			return &e[i];
	return NULL;
}

/* The descriptor for one leaf-4 cache (EAX, EBX, ECX), 0 if none fits. */
static uint8_t pick(uint32_t eax, uint32_t ebx, uint32_t ecx)
{
	uint32_t type = eax & 0x1f, level = (eax >> 5) & 7, line = (ebx & 0xfff) + 1;
	uint64_t bytes =
	    (uint64_t)((ebx >> 22) + 1) * (((ebx >> 12) & 0x3ff) + 1) * line * (ecx + 1ull);
	uint8_t code = 0;

	if (line != 64)
		return 0;
	for (size_t i = 0; i < sizeof(descs) / sizeof(descs[0]); i++)
		if (descs[i].level == level && descs[i].type == type &&
		    (uint64_t)descs[i].kib * 1024 <= bytes)
			code = descs[i].code;
	return code;
}

/* "GenuineIntel" with leaf 4: other vendors' libraries read other leaves. */
static bool intel_with_leaf4(const struct kvm_cpuid_entry2 *e, unsigned n)
{
	const struct kvm_cpuid_entry2 *v = find(e, n, 0, 0);

	return v && v->ebx == 0x756e6547 && v->edx == 0x49656e69 && v->ecx == 0x6c65746e &&
	       v->eax >= 4;
}

bool cpuid_cache_leaf2(const struct kvm_cpuid_entry2 *e, unsigned n, uint32_t regs[4])
{
	const struct kvm_cpuid_entry2 *l2 = find(e, n, 2, 0);
	uint8_t codes[15];
	unsigned nc = 0;
	bool see_leaf4 = false;

	if (!intel_with_leaf4(e, n) || !l2 || (l2->eax & 0xff) != 1)
		return false;
	uint32_t was[4] = {l2->eax, l2->ebx, l2->ecx, l2->edx};
	for (int r = 0; r < 4; r++)
		for (int b = r ? 0 : 1; b < 4 && !(was[r] >> 31); b++)
			see_leaf4 |= ((was[r] >> (8 * b)) & 0xff) == 0xff;
	if (!see_leaf4)
		return false;
	for (uint32_t i = 0;; i++) {
		const struct kvm_cpuid_entry2 *c = find(e, n, 4, i);

		if (!c || i >= 16)
			return false; /* a table without leaf 4's terminator */
		if ((c->eax & 0x1f) == 0)
			break;
		if (nc == sizeof(codes) || !(codes[nc++] = pick(c->eax, c->ebx, c->ecx)))
			return false;
	}
	if (!nc)
		return false;
	regs[0] = 1; /* one round of leaf 2, then the descriptors */
	regs[1] = regs[2] = regs[3] = 0;
	/* Bit 31 set says a register holds no descriptors (glibc then skips
	 * all four of its bytes): a code from 0x80 up never goes in a top
	 * byte, which stays a null descriptor then. */
	for (unsigned k = 0, slot = 1; k < nc; k++, slot++) {
		if (slot % 4 == 3 && (codes[k] & 0x80))
			slot++;
		if (slot >= 16)
			return false;
		regs[slot / 4] |= (uint32_t)codes[k] << (8 * (slot % 4));
	}
	return true;
}

bool cpuid_cache_leaf4_order(struct kvm_cpuid_entry2 *e, unsigned n)
{
	enum { MAX_SUB = 16 };
	struct kvm_cpuid_entry2 *sub[MAX_SUB], sorted[MAX_SUB];
	unsigned k = 0, m = 0;
	bool moved = false;

	if (!intel_with_leaf4(e, n))
		return false;
	for (;; k++) {
		struct kvm_cpuid_entry2 *c = (struct kvm_cpuid_entry2 *)find(e, n, 4, k);

		if (!c || k == MAX_SUB)
			return false; /* a table without leaf 4's terminator */
		if ((c->eax & 0x1f) == 0)
			break;
		sub[k] = c;
	}
	/* Pass 0 takes level 2, pass 1 level 3, pass 2 the others. */
	for (unsigned pass = 0; pass < 3; pass++)
		for (unsigned i = 0; i < k; i++) {
			unsigned level = (sub[i]->eax >> 5) & 7;

			if (pass == 2 ? level != 2 && level != 3 : level == pass + 2)
				sorted[m++] = *sub[i];
		}
	for (unsigned i = 0; i < k; i++) {
		sorted[i].index = i;
		moved |= memcmp(sub[i], &sorted[i], sizeof(sorted[i])) != 0;
		*sub[i] = sorted[i];
	}
	return moved;
}
