/* SPDX-License-Identifier: MIT */
/* Unit tests for shim/cache.c: the rootfs image cache is pruned to its
 * size and age bounds, least recently used first, never an image a shim
 * holds (its shared flock), and a pack's stale temporary files go. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

void shim_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kiln-cache-test.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A file of kb KiB last used age_s ago. */
static void make(const char *name, int kb, int age_s)
{
	char path[256], buf[1024] = {1};
	struct timespec t[2];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < kb; i++)
		ck_assert_int_eq(write(fd, buf, sizeof(buf)), sizeof(buf));
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age_s;
	t[1] = t[0];
	ck_assert_int_eq(futimens(fd, t), 0);
	close(fd);
}

/* A file of the cache opened and flocked (how), kept by the caller. */
static int lock_file(const char *name, int how)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, how), 0);
	return fd;
}

static bool exists(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static int hold(const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(cache_use(path, &fd), 0);
	return fd;
}

START_TEST(size_bound_lru_first)
{
	make("rootfs-aaaaaaaa.erofs", 400, 300);
	make("rootfs-bbbbbbbb.erofs", 400, 200);
	make("rootfs-cccccccc.erofs", 400, 100);
	/* 1.2 MiB over a 1 MiB bound: the least recently used goes */
	ck_assert_int_eq(cache_prune(dir, 1 << 20, 86400), 1);
	ck_assert(!exists("rootfs-aaaaaaaa.erofs"));
	ck_assert(exists("rootfs-bbbbbbbb.erofs"));
	ck_assert(exists("rootfs-cccccccc.erofs"));
	/* under the bound: nothing more */
	ck_assert_int_eq(cache_prune(dir, 1 << 20, 86400), 0);
}
END_TEST

START_TEST(held_image_is_kept)
{
	make("rootfs-aaaaaaaa.erofs", 400, 300);
	make("rootfs-bbbbbbbb.erofs", 400, 200);
	make("rootfs-cccccccc.erofs", 400, 100);
	int fd = hold("rootfs-aaaaaaaa.erofs"); /* also makes it the newest */

	ck_assert_int_eq(cache_prune(dir, 0, 86400), 2);
	ck_assert(exists("rootfs-aaaaaaaa.erofs"));
	ck_assert(!exists("rootfs-bbbbbbbb.erofs"));
	close(fd);
	ck_assert_int_eq(cache_prune(dir, 0, 86400), 1);
	ck_assert(!exists("rootfs-aaaaaaaa.erofs"));
}
END_TEST

START_TEST(use_refreshes_age)
{
	make("rootfs-aaaaaaaa.erofs", 4, 10 * 86400);
	make("rootfs-bbbbbbbb.erofs", 4, 10 * 86400);
	close(hold("rootfs-aaaaaaaa.erofs"));
	/* older than 5 days: b; a was just used */
	ck_assert_int_eq(cache_prune(dir, 1 << 30, 5 * 86400), 1);
	ck_assert(exists("rootfs-aaaaaaaa.erofs"));
	ck_assert(!exists("rootfs-bbbbbbbb.erofs"));
}
END_TEST

START_TEST(pruned_under_a_user_is_a_miss)
{
	char path[256];
	int fd;

	make("rootfs-aaaaaaaa.erofs", 4, 0);
	snprintf(path, sizeof(path), "%s/rootfs-aaaaaaaa.erofs", dir);
	ck_assert_int_eq(cache_prune(dir, 0, 86400), 1);
	ck_assert_int_eq(cache_use(path, &fd), -ENOENT);
	ck_assert_int_eq(fd, -1);
	make("rootfs-bbbbbbbb.erofs", 0, 0); /* empty: not an image */
	snprintf(path, sizeof(path), "%s/rootfs-bbbbbbbb.erofs", dir);
	ck_assert_int_eq(cache_use(path, &fd), -ENOENT);
}
END_TEST

START_TEST(stale_tmp_and_others)
{
	int fd;

	make("rootfs-aaaaaaaa.erofs.77.tmp", 4, 7200); /* a pack that died */
	make("rootfs-bbbbbbbb.erofs.78.tmp", 4, 60);   /* a pack going on */
	make("rootfs-cccccccc.erofs.79.tmp", 4, 7200); /* old, but held */
	make("notes.txt", 4, 100 * 86400);             /* not the cache's */
	fd = lock_file("rootfs-cccccccc.erofs.79.tmp", LOCK_SH);
	ck_assert_int_eq(cache_prune(dir, 0, 0), 1);
	ck_assert(!exists("rootfs-aaaaaaaa.erofs.77.tmp"));
	ck_assert(exists("rootfs-bbbbbbbb.erofs.78.tmp"));
	ck_assert(exists("rootfs-cccccccc.erofs.79.tmp"));
	ck_assert(exists("notes.txt"));
	close(fd);
}
END_TEST

START_TEST(one_pruner_at_a_time)
{
	char path[256];
	int fd;

	make("rootfs-aaaaaaaa.erofs", 4, 0);
	fd = lock_file(".prune.lock", LOCK_EX);
	ck_assert_int_eq(cache_prune(dir, 0, 0), 0); /* another is at it */
	ck_assert(exists("rootfs-aaaaaaaa.erofs"));
	close(fd);
	ck_assert_int_eq(cache_prune(dir, 0, 0), 1);
	snprintf(path, sizeof(path), "%s/missing", dir);
	ck_assert_int_lt(cache_prune(path, 0, 0), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shim_cache");
	TCase *tc = tcase_create("prune");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, size_bound_lru_first);
	tcase_add_test(tc, held_image_is_kept);
	tcase_add_test(tc, use_refreshes_age);
	tcase_add_test(tc, pruned_under_a_user_is_a_miss);
	tcase_add_test(tc, stale_tmp_and_others);
	tcase_add_test(tc, one_pruner_at_a_time);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
