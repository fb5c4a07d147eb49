// SPDX-License-Identifier: MIT
/*
 * Unit tests for the ids an exec gives a program (exec_cred.c): set-user-ID
 * and set-group-ID files, the group x bit, no_new_privs, AT_SECURE.
 */
#include <check.h>
#include <stdlib.h>

#include "exec.h"

static struct cred user(void)
{
	struct cred c = {.u = {1000, 1000, 1000, 1000}, .g = {1000, 1000, 1000, 1000}};

	c.ngroups = 1;
	c.groups[0] = 1000;
	return c;
}

START_TEST(plain_file_keeps_the_ids)
{
	struct cred c = user(), out;

	c.u.saved = 0; /* an exec makes the saved id the effective one */
	c.u.fs = 5;
	ck_assert(!exec_creds(&c, false, 0755, 0, 0, &out));
	ck_assert_uint_eq(out.u.real, 1000);
	ck_assert_uint_eq(out.u.eff, 1000);
	ck_assert_uint_eq(out.u.saved, 1000);
	ck_assert_uint_eq(out.u.fs, 1000);
	ck_assert_uint_eq(out.ngroups, 1);
}
END_TEST

START_TEST(setuid_root_for_a_user)
{
	struct cred c = user(), out;

	ck_assert(exec_creds(&c, false, 04755, 0, 7, &out));
	ck_assert_uint_eq(out.u.real, 1000);
	ck_assert_uint_eq(out.u.eff, 0);
	ck_assert_uint_eq(out.u.saved, 0);
	ck_assert_uint_eq(out.u.fs, 0);
	ck_assert_uint_eq(out.g.eff, 1000); /* no S_ISGID: the group stays */
	ck_assert_uint_eq(out.groups[0], 1000);
}
END_TEST

START_TEST(setgid_needs_the_group_x_bit)
{
	struct cred c = user(), out;

	ck_assert(exec_creds(&c, false, 02755, 0, 50, &out));
	ck_assert_uint_eq(out.g.eff, 50);
	ck_assert_uint_eq(out.g.saved, 50);
	ck_assert_uint_eq(out.g.fs, 50);
	ck_assert_uint_eq(out.u.eff, 1000);
	ck_assert(!exec_creds(&c, false, 02745, 0, 50, &out)); /* mandatory locking's mark */
	ck_assert_uint_eq(out.g.eff, 1000);
}
END_TEST

START_TEST(no_new_privs_ignores_both)
{
	struct cred c = user(), out;

	ck_assert(!exec_creds(&c, true, 06755, 0, 0, &out));
	ck_assert_uint_eq(out.u.eff, 1000);
	ck_assert_uint_eq(out.g.eff, 1000);
}
END_TEST

START_TEST(root_running_setuid_root_is_not_secure)
{
	struct cred root = {0}, out;

	ck_assert(!exec_creds(&root, false, 04755, 0, 0, &out));
	ck_assert(exec_creds(&root, false, 04755, 1000, 0, &out)); /* set-uid-1000 */
	ck_assert_uint_eq(out.u.real, 0);
	ck_assert_uint_eq(out.u.eff, 1000);
	/* euid 0 left from a set-uid-root program: the next exec is secure too */
	root.u.real = 1000;
	ck_assert(exec_creds(&root, false, 0755, 0, 0, &out));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exec_cred");
	TCase *t = tcase_create("ids");
	SRunner *sr;
	int failed;

	tcase_add_test(t, plain_file_keeps_the_ids);
	tcase_add_test(t, setuid_root_for_a_user);
	tcase_add_test(t, setgid_needs_the_group_x_bit);
	tcase_add_test(t, no_new_privs_ignores_both);
	tcase_add_test(t, root_running_setuid_root_is_not_secure);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
