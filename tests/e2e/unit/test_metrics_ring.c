/* SPDX-License-Identifier: MIT */
/* Unit tests for control/api/metrics_ring.c: CPU use between readings of
 * one VMM, new baselines where the VMM or the clock changed, the ring's
 * bound and order, and its JSON. */
#include <check.h>
#include <stdlib.h>

#include "api/metrics_hist.h"

START_TEST(cpu_between_readings)
{
	struct mhist_ring *r = mhist_ring_new("sb1", 8);

	ck_assert_ptr_nonnull(r);
	mhist_ring_read(r, 100, 10000, 5.0, 1000);
	ck_assert_ptr_null(mhist_ring_last(r)); /* the first is the baseline */
	mhist_ring_read(r, 100, 20000, 7.5, 2000);
	ck_assert_uint_eq(r->count, 1);
	ck_assert_float_eq_tol(mhist_ring_last(r)->cpu_pct, 25.0, 1e-4);
	ck_assert_uint_eq(mhist_ring_last(r)->rss, 2000);
	ck_assert_int_eq(mhist_ring_last(r)->t_ms, 20000);
	mhist_ring_free(r);
}
END_TEST

START_TEST(new_vmm_or_clock_back_is_a_baseline)
{
	struct mhist_ring *r = mhist_ring_new("sb1", 8);

	mhist_ring_read(r, 100, 10000, 5.0, 1000);
	mhist_ring_read(r, 100, 20000, 6.0, 1000);
	mhist_ring_read(r, 200, 30000, 0.1, 1000); /* resumed: a new VMM */
	ck_assert_uint_eq(r->count, 1);
	mhist_ring_read(r, 200, 40000, 0.6, 1000);
	ck_assert_uint_eq(r->count, 2);
	ck_assert_float_eq_tol(mhist_ring_last(r)->cpu_pct, 5.0, 1e-4);
	mhist_ring_read(r, 200, 35000, 0.7, 1000); /* the clock went back */
	mhist_ring_read(r, 200, 36000, 0.5, 1000); /* CPU time shrank */
	ck_assert_uint_eq(r->count, 2);
	mhist_ring_free(r);
}
END_TEST

START_TEST(bounded_and_ordered)
{
	struct mhist_ring *r = mhist_ring_new("sb1", 4);
	json_t *j;

	for (int i = 0; i <= 10; i++)
		mhist_ring_read(r, 1, 1000 * (i + 1), i * 0.5, (uint64_t)i);
	ck_assert_uint_eq(r->count, 4);
	j = mhist_ring_json(r, 0);
	ck_assert_uint_eq(json_array_size(j), 4);
	for (size_t i = 0; i < 4; i++) {
		json_t *s = json_array_get(j, i);

		ck_assert_int_eq(json_integer_value(json_object_get(s, "timestampMs")),
		                 1000 * (int)(i + 8));
		ck_assert_int_eq(json_integer_value(json_object_get(s, "rssBytes")), (int)(i + 7));
		ck_assert_float_eq_tol(json_real_value(json_object_get(s, "cpuUsedPct")), 50.0,
		                       1e-4);
	}
	json_decref(j);
	j = mhist_ring_json(r, 10000); /* since: the last two */
	ck_assert_uint_eq(json_array_size(j), 2);
	json_decref(j);
	mhist_ring_free(r);
}
END_TEST

START_TEST(no_empty_ring)
{
	ck_assert_ptr_null(mhist_ring_new("sb1", 0));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics_ring");
	TCase *tc = tcase_create("metrics_ring");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, cpu_between_readings);
	tcase_add_test(tc, new_vmm_or_clock_back_is_a_baseline);
	tcase_add_test(tc, bounded_and_ordered);
	tcase_add_test(tc, no_empty_ring);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
