/* SPDX-License-Identifier: MIT */
/* Unit tests for control/util.c's name rule and rm_tree(): names that
 * become paths, and removals that never leave their parent; and
 * fsync_parent(), which syncs the directory a path is in. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static char root[64];

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/kiln-names.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

static void touch(const char *rel)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	fd = open(p, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void mkd(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	ck_assert_int_eq(mkdir(p, 0700), 0);
}

static bool exists(const char *rel)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	return !lstat(p, &st);
}

START_TEST(the_name_rule)
{
	static const char *good[] = {"a", "py", "base", "Z9", "my-template_2.1", "0abc"};
	static const char *bad[] = {"",     ".",    "..",  "...",   ".hidden", "-rf",  "_x",
	                            "a/b",  "/",    "a b", "a\nb",  "é",       "a\\b", "x:y",
	                            "../x", "a/..", "a*",  "$HOME", "a\x01"};
	char longest[NAME_MAX_LEN + 2];

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		ck_assert_msg(name_ok(good[i]), "%s should pass", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(!name_ok(bad[i]), "'%s' should be refused", bad[i]);
	memset(longest, 'a', NAME_MAX_LEN);
	longest[NAME_MAX_LEN] = 0;
	ck_assert(name_ok(longest));
	longest[NAME_MAX_LEN] = 'a';
	longest[NAME_MAX_LEN + 1] = 0;
	ck_assert(!name_ok(longest));
}
END_TEST

START_TEST(refuses_names_that_leave_the_parent)
{
	mkd("p");
	touch("p/keep");
	touch("keep-too");
	ck_assert_int_eq(rm_tree(root, ".."), -EINVAL);
	ck_assert_int_eq(rm_tree(root, "."), -EINVAL);
	ck_assert_int_eq(rm_tree(root, ""), -EINVAL);
	ck_assert_int_eq(rm_tree(root, "p/keep"), -EINVAL);
	ck_assert(exists("p/keep") && exists("keep-too"));
}
END_TEST

/* The directory of a file, of a relative name and of a top-level path is
 * synced; a path whose directory does not exist is an error, not a crash. */
START_TEST(syncs_the_parent)
{
	char p[256];

	touch("f");
	snprintf(p, sizeof(p), "%s/f", root);
	ck_assert_int_eq(fsync_parent(p), 0);
	ck_assert_int_eq(fsync_parent("relative-name"), 0);
	ck_assert_int_eq(fsync_parent("/tmp"), 0);
	snprintf(p, sizeof(p), "%s/no/such/f", root);
	ck_assert_int_eq(fsync_parent(p), -ENOENT);
	snprintf(p, sizeof(p), "%s/f/x", root);
	ck_assert_int_eq(fsync_parent(p), -ENOTDIR);
}
END_TEST

START_TEST(removes_a_tree)
{
	mkd("t");
	mkd("t/a");
	mkd("t/a/b");
	mkd("t/empty");
	touch("t/1");
	touch("t/a/2");
	touch("t/a/b/3");
	touch("sibling");
	ck_assert_int_eq(rm_tree(root, "t"), 0);
	ck_assert(!exists("t"));
	ck_assert(exists("sibling"));
	ck_assert_int_eq(rm_tree(root, "t"), 0); /* gone already: fine */
	touch("file");
	ck_assert_int_eq(rm_tree(root, "file"), 0);
	ck_assert(!exists("file"));
}
END_TEST

START_TEST(follows_no_links)
{
	char target[256], link[256];

	mkd("outside");
	touch("outside/precious");
	mkd("t");
	snprintf(target, sizeof(target), "%s/outside", root);
	snprintf(link, sizeof(link), "%s/t/link", root);
	ck_assert_int_eq(symlink(target, link), 0);
	ck_assert_int_eq(rm_tree(root, "t"), 0);
	ck_assert(!exists("t"));
	ck_assert(exists("outside/precious"));
	/* the named entry itself a link to a directory: the link goes */
	snprintf(link, sizeof(link), "%s/l", root);
	ck_assert_int_eq(symlink(target, link), 0);
	ck_assert_int_eq(rm_tree(root, "l"), 0);
	ck_assert(!exists("l"));
	ck_assert(exists("outside/precious"));
}
END_TEST

START_TEST(depth_is_bounded)
{
	char rel[4096] = "d";

	mkd("d");
	for (int i = 0; i < 80; i++) {
		strcat(rel, "/d");
		mkd(rel);
	}
	ck_assert_int_ne(rm_tree(root, "d"), 0); /* refused, no unbounded recursion */
	ck_assert(exists("d"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("names");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, the_name_rule);
	tcase_add_test(tc, refuses_names_that_leave_the_parent);
	tcase_add_test(tc, removes_a_tree);
	tcase_add_test(tc, syncs_the_parent);
	tcase_add_test(tc, follows_no_links);
	tcase_add_test(tc, depth_is_bounded);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
