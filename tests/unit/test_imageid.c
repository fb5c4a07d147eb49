/* SPDX-License-Identifier: MIT */
/* Unit tests for vmm/imageid.c's cache: it names a file as a kernel, so it
 * is used only in a directory that is ours and never through a link. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../snapshot/snap.h"
#include "../../vmm/imageid.h"

static char root[64], file[128], ids[128];
static struct snap_image_id real;

static void setup(void)
{
	static const char content[] = "a kernel, as far as the cache knows";
	int fd;

	snprintf(root, sizeof(root), "/tmp/kiln-imageid.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(file, sizeof(file), "%s/kernel", root);
	snprintf(ids, sizeof(ids), "%s/cache/image-ids", root);
	fd = open(file, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, sizeof(content)), (int)sizeof(content));
	close(fd);
	snap_image_id_from_buf(&real, content, sizeof(content));
	{
		char cache[128];

		snprintf(cache, sizeof(cache), "%s/cache", root);
		setenv("KILN_CACHE", cache, 1);
	}
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* The cache entry's path for the file. */
static void entry(char *out, size_t n)
{
	struct stat st;

	ck_assert_int_eq(stat(file, &st), 0);
	snprintf(out, n, "%s/%llx-%llx", ids, (unsigned long long)st.st_dev,
	         (unsigned long long)st.st_ino);
}

/* Overwrite the entry with the same key and another digest. */
static void poison(void)
{
	char path[256];
	uint8_t buf[4096];
	int fd;
	ssize_t n;

	entry(path, sizeof(path));
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf));
	ck_assert_int_gt(n, 32);
	buf[n - 1] ^= 0xff; /* the digest ends the entry */
	ck_assert_int_eq(pwrite(fd, buf, (size_t)n, 0), n);
	close(fd);
}

static void check_real(void)
{
	struct snap_image_id id;
	struct stat st;

	ck_assert_int_eq(image_id_of_path(file, &st, &id), 0);
	ck_assert_mem_eq(id.digest, real.digest, sizeof(id.digest));
}

START_TEST(cached_in_a_directory_of_ours)
{
	char path[256];
	struct stat st;

	check_real();
	entry(path, sizeof(path));
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 077, 0);
	check_real(); /* from the cache */
	poison();
	{
		struct snap_image_id id;

		ck_assert_int_eq(image_id_of_path(file, &st, &id), 0);
		ck_assert_mem_ne(id.digest, real.digest, sizeof(id.digest)); /* it is used */
	}
}
END_TEST

START_TEST(not_in_a_directory_others_can_write)
{
	check_real();
	poison();
	ck_assert_int_eq(chmod(ids, 0777), 0);
	check_real(); /* the poisoned entry is not believed */
}
END_TEST

START_TEST(not_through_a_link)
{
	char path[256], other[256];
	struct stat st;

	check_real();
	poison();
	entry(path, sizeof(path));
	snprintf(other, sizeof(other), "%s/planted", root);
	ck_assert_int_eq(rename(path, other), 0);
	ck_assert_int_eq(symlink(other, path), 0);
	check_real();
	ck_assert_int_eq(lstat(path, &st), 0);
}
END_TEST

START_TEST(not_in_a_directory_that_is_a_link)
{
	char cache[128], elsewhere[128];

	snprintf(cache, sizeof(cache), "%s/cache", root);
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", root);
	ck_assert_int_eq(mkdir(cache, 0700), 0);
	ck_assert_int_eq(mkdir(elsewhere, 0700), 0);
	ck_assert_int_eq(symlink(elsewhere, ids), 0);
	check_real();
	{
		char cmd[256];

		/* nothing was written through the link */
		snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", elsewhere);
		ck_assert_int_eq(system(cmd), 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("imageid");
	TCase *tc = tcase_create("imageid");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, cached_in_a_directory_of_ours);
	tcase_add_test(tc, not_in_a_directory_others_can_write);
	tcase_add_test(tc, not_through_a_link);
	tcase_add_test(tc, not_in_a_directory_that_is_a_link);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
