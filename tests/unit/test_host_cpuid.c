/* SPDX-License-Identifier: MIT */
/* Unit tests for vmm/host_cpuid.c: kilnd's host CPUID file is taken whole
 * and well-formed only; every damage is refused with a reason. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../snapshot/snap.h"
#include "../../vmm/host_cpuid.h"
#include "kiln/host_cpuid.h"

#define ESZ sizeof(struct kvm_cpuid_entry2)

static unsigned char file[sizeof(struct kiln_host_cpuid_hdr) + (KILN_HOST_CPUID_MAX + 1) * ESZ];
static struct kvm_cpuid2 *out;
static char why[200];

static struct kiln_host_cpuid_hdr *hdr(void)
{
	return (struct kiln_host_cpuid_hdr *)file;
}
static struct kvm_cpuid_entry2 *ent(void)
{
	return (struct kvm_cpuid_entry2 *)(hdr() + 1);
}

/* A file of n entries: leaf 0 (max basic leaf 0xd), basic leaves 1..,
 * 0x80000000 (max 0x80000008) and one extended leaf; the hash made last. */
static size_t make(unsigned n)
{
	struct kiln_host_cpuid_hdr *h = hdr();

	memset(file, 0, sizeof(file));
	memcpy(h->magic, KILN_HOST_CPUID_MAGIC, sizeof(h->magic));
	h->version = KILN_HOST_CPUID_VERSION;
	h->nent = n;
	h->entry_size = ESZ;
	for (unsigned i = 0; i < n; i++) {
		ent()[i].function = i < 2 ? 0 : i - 1; /* leaf 0 twice: indices 0 and 1 */
		ent()[i].index = i == 1;
		ent()[i].eax = 0x1000 + i;
	}
	ent()[0].eax = 0xd;
	if (n >= 4) {
		ent()[n - 2] = (struct kvm_cpuid_entry2){.function = 0x80000000, .eax = 0x80000008};
		ent()[n - 1] = (struct kvm_cpuid_entry2){.function = 0x80000008, .eax = 0x3030};
	}
	return sizeof(*h) + n * ESZ;
}

static void rehash(void)
{
	hdr()->hash = snap_xxh64(ent(), hdr()->nent * ESZ, 0);
}

static int parse(size_t len)
{
	return host_cpuid_parse(file, len, out, why, sizeof(why));
}

static void setup(void)
{
	out = calloc(1, sizeof(*out) + KILN_HOST_CPUID_MAX * ESZ);
	why[0] = 0;
}

static void teardown(void)
{
	free(out);
}

START_TEST(whole_file_is_taken)
{
	size_t len = make(8);

	rehash();
	ck_assert_int_eq(parse(len), 0);
	ck_assert_uint_eq(out->nent, 8);
	ck_assert_mem_eq(out->entries, ent(), 8 * ESZ);
}
END_TEST

START_TEST(a_one_entry_file_is_taken)
{
	size_t len = make(1);

	rehash();
	ck_assert_int_eq(parse(len), 0);
	ck_assert_uint_eq(out->nent, 1);
}
END_TEST

START_TEST(every_length_but_the_right_one_is_refused)
{
	size_t len = make(8);

	rehash();
	for (size_t l = 0; l <= len + ESZ; l++) {
		if (l == len)
			continue;
		ck_assert_int_eq(parse(l), -EINVAL);
		ck_assert(why[0]);
	}
}
END_TEST

START_TEST(header_damage_is_refused)
{
	size_t len = make(8);

	rehash();
	hdr()->magic[0] ^= 1;
	ck_assert_int_eq(parse(len), -EINVAL);
	ck_assert(strstr(why, "magic"));
	make(8);
	rehash();
	hdr()->version = 2;
	ck_assert_int_eq(parse(len), -EINVAL);
	ck_assert(strstr(why, "version 2"));
	make(8);
	rehash();
	hdr()->entry_size = ESZ + 4;
	ck_assert_int_eq(parse(len), -EINVAL);
	make(8);
	rehash();
	hdr()->reserved = 1;
	ck_assert_int_eq(parse(len), -EINVAL);
}
END_TEST

START_TEST(entry_counts_out_of_bounds_are_refused)
{
	size_t len = make(KILN_HOST_CPUID_MAX + 1);

	rehash();
	ck_assert_int_eq(parse(len), -EINVAL);
	ck_assert(strstr(why, "entries, expected 1 to"));
	len = make(0);
	ck_assert_int_eq(parse(len), -EINVAL);
	/* A count whose size would wrap a 32-bit product. */
	len = make(8);
	rehash();
	hdr()->nent = 0x80000000u;
	ck_assert_int_eq(parse(len), -EINVAL);
	len = make(KILN_HOST_CPUID_MAX);
	rehash();
	ck_assert_int_eq(parse(len), -EINVAL); /* leaves past leaf 0's 0xd */
	ck_assert(strstr(why, "past its range"));
}
END_TEST

START_TEST(a_flipped_bit_anywhere_in_the_entries_is_refused)
{
	size_t len = make(8);

	rehash();
	for (size_t b = sizeof(struct kiln_host_cpuid_hdr) * 8; b < len * 8; b += 37) {
		file[b / 8] ^= (unsigned char)(1u << (b % 8));
		ck_assert_int_eq(parse(len), -EINVAL);
		file[b / 8] ^= (unsigned char)(1u << (b % 8));
	}
	ck_assert_int_eq(parse(len), 0);
}
END_TEST

/* Entries with a good hash but contents KVM never gives. */
START_TEST(malformed_entries_are_refused)
{
	size_t len = make(8);

	ent()[3].padding[1] = 1;
	rehash();
	ck_assert_int_eq(parse(len), -EINVAL);
	ck_assert(strstr(why, "padding"));
	make(8);
	ent()[3].flags = 4;
	rehash();
	ck_assert_int_eq(parse(len), -EINVAL);
	ck_assert(strstr(why, "flags"));
	make(8);
	ent()[3] = ent()[2];
	rehash();
	ck_assert_int_eq(parse(len), -EINVAL);
	ck_assert(strstr(why, "same leaf"));
	make(8);
	ent()[0].function = 5;
	ent()[1].function = 6;
	rehash();
	ck_assert_int_eq(parse(len), -EINVAL);
	ck_assert(strstr(why, "no leaf 0"));
	make(8);
	ent()[7].function = 0x80000009;
	rehash();
	ck_assert_int_eq(parse(len), -EINVAL);
	ck_assert(strstr(why, "past its range"));
	make(8);
	ent()[6].function = 0x80000001; /* extended leaves without 0x80000000 */
	ent()[7].function = 0x80000002;
	rehash();
	ck_assert_int_eq(parse(len), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("host_cpuid");
	TCase *tc = tcase_create("host_cpuid");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, whole_file_is_taken);
	tcase_add_test(tc, a_one_entry_file_is_taken);
	tcase_add_test(tc, every_length_but_the_right_one_is_refused);
	tcase_add_test(tc, header_damage_is_refused);
	tcase_add_test(tc, entry_counts_out_of_bounds_are_refused);
	tcase_add_test(tc, a_flipped_bit_anywhere_in_the_entries_is_refused);
	tcase_add_test(tc, malformed_entries_are_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
