// SPDX-License-Identifier: MIT
/*
 * CPU shares between PID namespaces (guest-kernel/libos/proc/fair.c), on
 * the host: a run queue of busy threads is taken as sched.c takes it (the
 * first of the namespace least ahead, to the back after its slice), and
 * the CPU time each namespace got is compared with its weight.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "fair.h"
#include "kiln/pidns.h"

#define SLICE 10000000ULL /* sched.c's SLICE_NS */

struct sim {
	int ns[8]; /* the queue: each busy thread's namespace */
	int n;
	uint64_t got[KILN_PIDNS_MAX];
};

/* One pick: the slice goes to the first thread of the namespace least
 * ahead, which goes to the back of the queue. */
static int run_slice(struct sim *s, uint64_t slice)
{
	int best = 0, ns;

	for (int i = 1; i < s->n; i++)
		if (fair_before(s->ns[i], s->ns[best]))
			best = i;
	ns = s->ns[best];
	fair_picked(ns);
	fair_charge(ns, slice);
	s->got[ns] += slice;
	for (int i = best; i + 1 < s->n; i++)
		s->ns[i] = s->ns[i + 1];
	s->ns[s->n - 1] = ns;
	return ns;
}

static double ratio(const struct sim *s, int a, int b)
{
	return (double)s->got[a] / (double)s->got[b];
}

/* (CK_FORK=no runs every test in one process) */
static void setup(void)
{
	for (int ns = 0; ns < KILN_PIDNS_MAX; ns++)
		fair_reset(ns);
}

START_TEST(weights_checked)
{
	ck_assert_int_eq(fair_weight(1), FAIR_WEIGHT_DEFAULT);
	ck_assert_int_eq(fair_set_weight(1, 1), -EINVAL);
	ck_assert_int_eq(fair_set_weight(1, 262145), -EINVAL);
	ck_assert_int_eq(fair_set_weight(-1, 512), -EINVAL);
	ck_assert_int_eq(fair_set_weight(KILN_PIDNS_MAX, 512), -EINVAL);
	ck_assert_int_eq(fair_weight(1), FAIR_WEIGHT_DEFAULT);
	ck_assert_int_eq(fair_set_weight(1, FAIR_WEIGHT_MIN), 0);
	ck_assert_int_eq(fair_weight(1), FAIR_WEIGHT_MIN);
	ck_assert_int_eq(fair_set_weight(2, FAIR_WEIGHT_MAX), 0);
	ck_assert_int_eq(fair_weight(2), FAIR_WEIGHT_MAX);
	ck_assert_int_eq(fair_weight(KILN_PIDNS_MAX), FAIR_WEIGHT_DEFAULT);
	/* (no crash on a bad namespace) */
	fair_charge(-1, SLICE);
	fair_picked(KILN_PIDNS_MAX);
	fair_reset(-5);
}
END_TEST

START_TEST(shares_in_proportion)
{
	struct sim s = {.ns = {1, 2}, .n = 2};

	ck_assert_int_eq(fair_set_weight(1, 512), 0);
	ck_assert_int_eq(fair_set_weight(2, 1536), 0);
	for (int i = 0; i < 400; i++)
		run_slice(&s, SLICE);
	ck_assert_double_eq_tol(ratio(&s, 2, 1), 3.0, 0.05);
	/* equal again (an Update): from then on, half each */
	ck_assert_int_eq(fair_set_weight(2, 512), 0);
	s.got[1] = s.got[2] = 0;
	for (int i = 0; i < 400; i++)
		run_slice(&s, SLICE);
	ck_assert_double_eq_tol(ratio(&s, 2, 1), 1.0, 0.05);
}
END_TEST

START_TEST(extremes)
{
	struct sim s = {.ns = {1, 2}, .n = 2};

	ck_assert_int_eq(fair_set_weight(1, FAIR_WEIGHT_MIN), 0);
	ck_assert_int_eq(fair_set_weight(2, FAIR_WEIGHT_MAX), 0);
	for (int i = 0; i < 262146; i++)
		run_slice(&s, SLICE);
	/* 131072 : 1, give or take the one slice the light one starts with */
	ck_assert_uint_ge(s.got[1], SLICE);
	ck_assert_uint_le(s.got[1], 3 * SLICE);
	/* a long run (18 minutes alone) at weight 2 counts in full */
	s.got[1] = fair_vtime(1);
	fair_charge(1, 1ULL << 40);
	ck_assert_uint_eq(fair_vtime(1) - s.got[1], (1ULL << 40) * 512);
}
END_TEST

START_TEST(namespaces_not_threads)
{
	/* three threads in 1, one in 2, equal weights: half each, as between
	 * cgroups; threads of one namespace take turns */
	struct sim s = {.ns = {1, 1, 1, 2}, .n = 4};
	int last = -1, streak = 0, longest = 0;

	for (int i = 0; i < 600; i++) {
		int ns = run_slice(&s, SLICE);

		streak = ns == last ? streak + 1 : 1;
		longest = streak > longest ? streak : longest;
		last = ns;
	}
	ck_assert_double_eq_tol(ratio(&s, 1, 2), 1.0, 0.02);
	ck_assert_int_le(longest, 2);
	/* one namespace alone: the queue's order, its head first */
	fair_reset(3);
	ck_assert(!fair_before(3, 3));
}
END_TEST

START_TEST(sleeper_no_credit)
{
	struct sim s = {.ns = {1}, .n = 1};
	int in_a_row = 0;

	/* 2 idles while 1 runs 10 s */
	for (int i = 0; i < 1000; i++)
		run_slice(&s, SLICE);
	/* 2 wakes: it goes first, but only for two slices at most (the lag,
	 * and the slice 1 ran since it was last picked), in 1 ms steps */
	s.ns[1] = 2;
	s.n = 2;
	while (run_slice(&s, SLICE / 10) == 2 && in_a_row < 1000)
		in_a_row++;
	ck_assert_int_ge(in_a_row, 1);
	ck_assert_int_le(in_a_row, 21);
	/* a number given out anew starts level with the others */
	fair_set_weight(3, 2);
	fair_charge(3, 100 * SLICE);
	fair_reset(3);
	ck_assert_int_eq(fair_weight(3), FAIR_WEIGHT_DEFAULT);
	ck_assert_uint_le(fair_vtime(3), fair_vtime(1));
	ck_assert_uint_ge(fair_vtime(3) + FAIR_LAG_NS, fair_vtime(1));
}
END_TEST

/* pidnstest's shares step, where a VM hung (a busy loop ran on alone, the
 * parent never woke): a namespace at weight 2 runs a slice (5 s of virtual
 * time) and ends; its number, given out again, and a new one at 1024 run
 * beside the parent's (0), which wakes from its sleep. None waits more than
 * two slices, so a hang there is not the picker's (it was an interrupt
 * lost on the way back to the program: libos/core/entry.S, trap_resume). */
START_TEST(reused_number_not_starved)
{
	struct sim s = {.ns = {0, 1}, .n = 2};
	int last_run[3] = {0, 0, 0};

	ck_assert_int_eq(fair_set_weight(1, 2), 0);
	for (int i = 0; i < 4; i++)
		run_slice(&s, SLICE);
	fair_reset(1); /* it ended */
	s.ns[0] = 0;
	s.ns[1] = 1; /* its number again: the default weight */
	s.ns[2] = 2;
	s.n = 3;
	for (int i = 1; i <= 300; i++) {
		int ns = run_slice(&s, SLICE);

		last_run[ns] = i;
		for (int k = 0; k < 3; k++)
			ck_assert_int_le(i - last_run[k], 3);
	}
	ck_assert_double_eq_tol(ratio(&s, 1, 2), 1.0, 0.05);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fair");
	TCase *t = tcase_create("all");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(t, setup, NULL);
	tcase_add_test(t, weights_checked);
	tcase_add_test(t, shares_in_proportion);
	tcase_add_test(t, extremes);
	tcase_add_test(t, namespaces_not_threads);
	tcase_add_test(t, sleeper_no_credit);
	tcase_add_test(t, reused_number_not_starved);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
