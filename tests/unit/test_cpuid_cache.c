/* SPDX-License-Identifier: MIT */
/* Unit tests for vmm/cpuid_cache.c: leaf 2's cache descriptors from leaf 4,
 * on this project's Intel Xeon hosts' table and on ones it must leave be. */
#include <check.h>
#include <string.h>

#include "../../vmm/cpuid_cache.h"

/* Leaves 0, 2 and 4 as an Intel Xeon kvm_pvm host reports them (12-02):
 * 48 KiB 12-way L1d, 32 KiB 8-way L1i, 2 MiB 16-way L2, 105 MiB 15-way L3. */
static struct kvm_cpuid_entry2 t[8];
static unsigned nt;

static void add(uint32_t fn, uint32_t idx, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	t[nt++] = (struct kvm_cpuid_entry2){
	    .function = fn, .index = idx, .eax = a, .ebx = b, .ecx = c, .edx = d};
}

static void setup(void)
{
	nt = 0;
	add(0, 0, 0x1f, 0x756e6547, 0x6c65746e, 0x49656e69); /* GenuineIntel */
	add(2, 0, 0x00feff01, 0xf0, 0, 0);
	add(4, 0, 0x04000121, 0x02c0003f, 0x3f, 0);
	add(4, 1, 0x04000122, 0x01c0003f, 0x3f, 0);
	add(4, 2, 0x04000143, 0x03c0003f, 0x7ff, 0);
	add(4, 3, 0x04004163, 0x0380003f, 0x1bfff, 4);
	add(4, 4, 0, 0, 0, 0);
}

START_TEST(xeon_gets_one_descriptor_per_cache)
{
	uint32_t r[4];

	ck_assert(cpuid_cache_leaf2(t, nt, r));
	/* One round; then L1d 32 KiB (0x2c: none of 48), L1i 32 KiB (0x30),
	 * L2 2 MiB (0x7d), L3 24 MiB (0xec: the largest there is). */
	ck_assert_uint_eq(r[0], 0x7d302c01);
	ck_assert_uint_eq(r[1], 0xec);
	ck_assert_uint_eq(r[2], 0);
	ck_assert_uint_eq(r[3], 0);
}
END_TEST

START_TEST(smaller_caches_get_smaller_descriptors)
{
	uint32_t r[4];

	t[2].ebx = 0x00c0003f; /* L1d 4-way: 16 KiB (0x0d) */
	t[5].ebx = 0x0000003f; /* L3 1-way, 114688 sets: 7 MiB -> 4 MiB (0xd8) */
	ck_assert(cpuid_cache_leaf2(t, nt, r));
	ck_assert_uint_eq(r[0], 0x7d300d01);
	ck_assert_uint_eq(r[1], 0xd8);
}
END_TEST

START_TEST(no_descriptor_sets_a_registers_bit_31)
{
	uint32_t r[4];

	/* This host's L2: 1.25 MiB 10-way -> 1 MiB (0x87), the third code,
	 * which would be EAX's top byte: EAX's bit 31 would void L1d, L1i
	 * and L2 alike. It goes to EBX instead, before L3. */
	t[4].ebx = 0x0240003f;
	t[4].ecx = 0x7ff;
	ck_assert(cpuid_cache_leaf2(t, nt, r));
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(r[i] >> 31, 0);
	ck_assert_uint_eq(r[0], 0x00302c01);
	ck_assert_uint_eq(r[1], 0xec87);
}
END_TEST

START_TEST(left_alone)
{
	uint32_t r[4];

	t[0].ebx = 0x68747541; /* "Auth"enticAMD */
	ck_assert(!cpuid_cache_leaf2(t, nt, r));
	setup();
	t[1].eax = 0x7d302c01; /* descriptors already */
	ck_assert(!cpuid_cache_leaf2(t, nt, r));
	setup();
	t[1].eax = 0x80feff01; /* EAX's descriptors not valid */
	ck_assert(!cpuid_cache_leaf2(t, nt, r));
	setup();
	t[4].ebx = 0x01c0007f; /* 128-byte lines: no descriptor */
	ck_assert(!cpuid_cache_leaf2(t, nt, r));
	setup();
	t[2].ebx = 0x0000003f; /* a 4 KiB L1d: none that small */
	ck_assert(!cpuid_cache_leaf2(t, nt, r));
	setup();
	t[5].eax = 0x04004183; /* a level-4 cache */
	ck_assert(!cpuid_cache_leaf2(t, nt, r));
	setup();
	ck_assert(!cpuid_cache_leaf2(t, nt - 1, r)); /* no terminator */
	ck_assert(!cpuid_cache_leaf2(t, 2, r));      /* no leaf 4 */
	t[0].eax = 3;                                /* leaf 4 not there */
	ck_assert(!cpuid_cache_leaf2(t, nt, r));
}
END_TEST

/* Subleaf i of leaf 4 in t, as KVM_SET_CPUID2 will see it. */
static const struct kvm_cpuid_entry2 *leaf4(unsigned i)
{
	for (unsigned j = 0; j < nt; j++)
		if (t[j].function == 4 && t[j].index == i)
			return &t[j];
	return NULL;
}

START_TEST(leaf4_levels_2_and_3_first)
{
	struct kvm_cpuid_entry2 l1d = t[2], l1i = t[3], l2 = t[4], l3 = t[5];

	ck_assert(cpuid_cache_leaf4_order(t, nt));
	/* glibc's walk for L2 and L3 stops after subleaf 1 now. */
	ck_assert_uint_eq(leaf4(0)->eax, l2.eax);
	ck_assert_uint_eq(leaf4(0)->ebx, l2.ebx);
	ck_assert_uint_eq(leaf4(0)->ecx, l2.ecx);
	ck_assert_uint_eq(leaf4(1)->eax, l3.eax);
	ck_assert_uint_eq(leaf4(1)->edx, l3.edx);
	ck_assert_uint_eq(leaf4(2)->eax, l1d.eax);
	ck_assert_uint_eq(leaf4(2)->ebx, l1d.ebx);
	ck_assert_uint_eq(leaf4(3)->eax, l1i.eax);
	ck_assert_uint_eq(leaf4(4)->eax, 0); /* the terminator stays last */
	ck_assert_uint_eq(nt, 7);
	/* In that order already: nothing to do. */
	ck_assert(!cpuid_cache_leaf4_order(t, nt));
	ck_assert_uint_eq(leaf4(0)->eax, l2.eax);
}
END_TEST

START_TEST(leaf4_left_alone)
{
	struct kvm_cpuid_entry2 was[8];

	memcpy(was, t, sizeof(t));
	t[0].ebx = 0x68747541; /* "Auth"enticAMD */
	ck_assert(!cpuid_cache_leaf4_order(t, nt));
	t[0].ebx = was[0].ebx;
	ck_assert(!cpuid_cache_leaf4_order(t, nt - 1)); /* no terminator */
	ck_assert(!cpuid_cache_leaf4_order(t, 2));      /* no leaf 4 */
	t[0].eax = 3;                                   /* leaf 4 not there */
	ck_assert(!cpuid_cache_leaf4_order(t, nt));
	t[0].eax = was[0].eax;
	ck_assert(!memcmp(was, t, sizeof(t)));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cpuid_cache");
	TCase *tc = tcase_create("cpuid_cache");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, xeon_gets_one_descriptor_per_cache);
	tcase_add_test(tc, smaller_caches_get_smaller_descriptors);
	tcase_add_test(tc, left_alone);
	tcase_add_test(tc, no_descriptor_sets_a_registers_bit_31);
	tcase_add_test(tc, leaf4_levels_2_and_3_first);
	tcase_add_test(tc, leaf4_left_alone);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
