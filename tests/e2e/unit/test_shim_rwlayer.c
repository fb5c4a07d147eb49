/* SPDX-License-Identifier: MIT */
/* Unit tests for shim/rwlayer_apply.c: a guest's change set replayed onto a
 * rootfs lands as written (files, modes, times, dirs, symlinks, removals)
 * and never outside it: "..", absolute and empty names, symlinked parents
 * (the image's or the guest's own), symlinks in the way, device nodes,
 * set-id bits, excluded mounts and the byte and entry bounds; hard links
 * (LINK) made beneath the root only, to files only; a pod container's
 * root keeps the fifos and device nodes its guest never had. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rwlayer.h"

static char dir[64], root[96], outside[96];

/* A shell command, each "@" in it the test's directory. */
static void sh(const char *fmt)
{
	char cmd[1024];
	size_t n = 0;

	for (const char *p = fmt; *p && n < sizeof(cmd) - 80; p++)
		if (*p == '@')
			n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s", dir);
		else
			cmd[n++] = *p;
	cmd[n] = 0;
	ck_assert_int_eq(system(cmd), 0);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kiln-rwl-test.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(root, sizeof(root), "%s/root", dir);
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	/* an image: /etc/{a,b}, merged /usr (lib -> usr/lib), /proc */
	sh("mkdir -p @/root/etc @/root/usr/lib @/root/proc/1 @/outside");
	sh("echo old > @/root/etc/a && echo b > @/root/etc/b && echo x > @/outside/x");
	sh("ln -s usr/lib @/root/lib && echo so > @/root/usr/lib/libc.so");
}

static void teardown(void)
{
	sh("rm -rf @");
}

static struct rwl_attr attr(uint32_t mode, uint64_t size)
{
	return (struct rwl_attr){.mode = mode,
	                         .uid = 1000,
	                         .gid = 1001,
	                         .mtime_s = 1000000,
	                         .mtime_ns = 5,
	                         .size = size};
}

static void file(struct rwl *w, const char *path, uint32_t mode, const char *text)
{
	struct rwl_attr a = attr(S_IFREG | mode, strlen(text));

	ck_assert_int_eq(rwl_node(w, path, &a, ""), 0);
	if (*text)
		ck_assert_int_eq(rwl_data(w, text, strlen(text)), 0);
}

static char *slurp(const char *rel)
{
	static char buf[256];
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static int lst(const char *rel, struct stat *st)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return lstat(path, st);
}

START_TEST(replays_a_change_set)
{
	struct rwl w;
	struct rwl_attr d = attr(S_IFDIR | 0750, 0), l = attr(S_IFLNK | 0777, 0);
	const char *names[] = {"a", "new"};
	char link[160], target[64];
	struct stat st;

	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 100, NULL, 0), 0);
	file(&w, "etc/a", 0600, "new bytes\n");
	file(&w, "etc/new", 0644, "");
	ck_assert_int_eq(rwl_names(&w, "etc", names, 2), 0);
	ck_assert_int_eq(rwl_node(&w, "data", &d, ""), 0);
	file(&w, "data/f", 0640, "f\n");
	ck_assert_int_eq(rwl_node(&w, "data/ln", &l, "../etc/a"), 0);
	ck_assert_int_eq(rwl_end(&w), 0);
	ck_assert_str_eq(slurp("root/etc/a"), "new bytes\n");
	ck_assert_int_eq(lst("root/etc/a", &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(st.st_uid, 1000);
	ck_assert_int_eq(st.st_gid, 1001);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1000000);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 5);
	ck_assert_int_ne(lst("root/etc/b", &st), 0); /* deleted */
	ck_assert_int_eq(lst("root/etc/new", &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(lst("root/data", &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0750);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1000000); /* set after its entries */
	ck_assert_str_eq(slurp("root/data/f"), "f\n");
	snprintf(link, sizeof(link), "%s/data/ln", root);
	ck_assert_int_eq(readlink(link, target, sizeof(target)), 8);
	ck_assert_int_eq(memcmp(target, "../etc/a", 8), 0);
	ck_assert_int_eq(w.removed, 1);
	rwl_free(&w);
}
END_TEST

START_TEST(types_replace_each_other)
{
	struct rwl w;
	struct rwl_attr d = attr(S_IFDIR | 0755, 0), l = attr(S_IFLNK | 0777, 0);
	struct stat st;

	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 100, NULL, 0), 0);
	file(&w, "usr", 0644, "was a tree\n");              /* a directory becomes a file */
	ck_assert_int_eq(rwl_node(&w, "etc/a", &d, ""), 0); /* a file, a dir */
	file(&w, "lib", 0644, "no link\n");                 /* a link becomes a file */
	ck_assert_int_eq(rwl_node(&w, "etc/b", &l, "/x"), 0);
	ck_assert_int_eq(rwl_end(&w), 0);
	ck_assert_str_eq(slurp("root/usr"), "was a tree\n");
	ck_assert_str_eq(slurp("root/lib"), "no link\n");
	ck_assert_int_eq(lst("root/etc/a", &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(lst("root/etc/b", &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	rwl_free(&w);
}
END_TEST

START_TEST(hostile_paths_stay_inside)
{
	static const char *const bad[] = {"../outside/x", "etc/../../outside/x",
	                                  "/etc/abs",     "etc//a",
	                                  "etc/./a",      "lib/evil",
	                                  "esc/x",        ".."};
	struct rwl w;
	struct rwl_attr l = attr(S_IFLNK | 0777, 0), dev = attr(S_IFCHR | 0666, 0);
	const char *none[] = {"z"};
	struct stat st;
	char out[128];

	snprintf(out, sizeof(out), "%s", outside);
	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 100, NULL, 0), 0);
	/* the guest's own symlink out, then writes through it */
	ck_assert_int_eq(rwl_node(&w, "esc", &l, out), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		file(&w, bad[i], 0644, "pwned\n");
	/* a symlink in the way of a file is replaced, not written through */
	ck_assert_int_eq(rwl_node(&w, "etc/x", &l, "../../outside/x"), 0);
	file(&w, "etc/x", 0644, "mine\n");
	/* removals through links or up */
	ck_assert_int_eq(rwl_names(&w, "esc", none, 1), 0);
	ck_assert_int_eq(rwl_names(&w, "lib", none, 1), 0);
	ck_assert_int_eq(rwl_names(&w, "..", none, 1), 0);
	ck_assert_int_eq(rwl_node(&w, "etc/tty", &dev, ""), 0);
	ck_assert_int_eq(rwl_end(&w), -EPERM);
	ck_assert_uint_eq(w.refused, sizeof(bad) / sizeof(bad[0]) + 4);
	ck_assert_ptr_nonnull(strstr(w.msg, "not saved to the snapshot"));
	ck_assert_str_eq(slurp("outside/x"), "x\n");
	ck_assert_int_ne(lst("outside/evil", &st), 0);
	ck_assert_int_ne(lst("root/usr/lib/evil", &st), 0);
	ck_assert_str_eq(slurp("root/usr/lib/libc.so"), "so\n");
	ck_assert_str_eq(slurp("root/etc/x"), "mine\n");
	ck_assert_int_ne(lst("root/etc/tty", &st), 0);
	ck_assert_str_eq(slurp("root/etc/a"), "old\n");
	rwl_free(&w);
}
END_TEST

START_TEST(setid_dropped_excluded_kept)
{
	static const char *const excl[] = {"/proc", "/etc/hosts"};
	struct rwl w;
	const char *names[] = {"etc", "usr", "lib"};
	struct stat st;

	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 100, excl, 2), 0);
	file(&w, "etc/suid", 04755, "x");
	file(&w, "proc/1/x", 0644, "skipped");
	file(&w, "etc/hosts", 0644, "skipped");
	ck_assert_int_eq(rwl_names(&w, "", names, 3), 0);     /* proc is not removed */
	ck_assert_int_eq(rwl_names(&w, "proc", names, 0), 0); /* nor what is in it */
	ck_assert_int_eq(rwl_end(&w), 0);
	ck_assert_int_eq(lst("root/etc/suid", &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(w.setid, 1);
	ck_assert_int_eq(lst("root/proc/1", &st), 0);
	ck_assert_int_ne(lst("root/proc/1/x", &st), 0);
	ck_assert_int_ne(lst("root/etc/hosts", &st), 0);
	rwl_free(&w);
}
END_TEST

START_TEST(bounds_and_broken_streams)
{
	struct rwl w;
	struct rwl_attr big = attr(S_IFREG | 0644, 2000), d = attr(S_IFDIR | 0755, 0);
	struct stat st;

	ck_assert_int_eq(rwl_begin(&w, root, 1000, 100, NULL, 0), 0);
	ck_assert_int_eq(rwl_node(&w, "big", &big, ""), -EFBIG);
	ck_assert_ptr_nonnull(strstr(w.msg, "KILN_SHIM_RW_MAX_MB"));
	rwl_free(&w);
	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 2, NULL, 0), 0);
	ck_assert_int_eq(rwl_node(&w, "d1", &d, ""), 0);
	ck_assert_int_eq(rwl_node(&w, "d2", &d, ""), 0);
	ck_assert_int_eq(rwl_node(&w, "d3", &d, ""), -E2BIG);
	rwl_free(&w);
	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 100, NULL, 0), 0);
	big.size = 4;
	ck_assert_int_eq(rwl_node(&w, "f", &big, ""), 0);
	ck_assert_int_eq(rwl_data(&w, "12345", 5), -EPROTO); /* beyond its size */
	rwl_free(&w);
	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 100, NULL, 0), 0);
	ck_assert_int_eq(rwl_node(&w, "g", &big, ""), 0);
	ck_assert_int_eq(rwl_data(&w, "12", 2), 0);
	ck_assert_int_eq(rwl_node(&w, "d4", &d, ""), -EPROTO); /* cut short */
	ck_assert_int_eq(rwl_end(&w), -EPROTO);
	rwl_free(&w);
	ck_assert_int_ne(lst("root/big", &st), 0);
	ck_assert_int_ne(lst("root/f", &st), 0); /* never half a file */
	ck_assert_int_ne(lst("root/g", &st), 0);
	sh("test -z \"$(ls -A @/root | grep kiln-rw)\""); /* no temporary left */
}
END_TEST

START_TEST(hard_links)
{
	static const char *const excl[] = {"/proc"};
	struct rwl w;
	struct rwl_attr l = attr(S_IFLNK | 0777, 0), d = attr(S_IFDIR | 0755, 0);
	struct stat a, b;
	char out[128];

	snprintf(out, sizeof(out), "%s", outside);
	sh("echo s > @/root/etc/suid && chmod 4755 @/root/etc/suid");
	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 100, excl, 1), 0);
	file(&w, "etc/first", 0640, "shared\n");
	ck_assert_int_eq(rwl_node(&w, "data", &d, ""), 0);
	ck_assert_int_eq(rwl_link(&w, "data/second", "etc/first"), 0);
	ck_assert_int_eq(rwl_link(&w, "etc/b", "etc/first"), 0); /* a file in the way goes */
	ck_assert_int_eq(rwl_link(&w, "etc/b", "etc/first"), 0); /* the same again: a no-op */
	ck_assert_int_eq(rwl_node(&w, "esc", &l, out), 0);
	/* refused: out of the root, through a symlink, to a directory, a
	 * set-id file, the root, an excluded file; a missing target */
	ck_assert_int_eq(rwl_link(&w, "etc/o1", "../outside/x"), 0);
	ck_assert_int_eq(rwl_link(&w, "etc/o2", "esc/x"), 0);
	ck_assert_int_eq(rwl_link(&w, "esc/o3", "etc/first"), 0);
	ck_assert_int_eq(rwl_link(&w, "etc/o4", "usr"), 0);
	ck_assert_int_eq(rwl_link(&w, "etc/o5", "etc/suid"), 0);
	ck_assert_int_eq(rwl_link(&w, "etc/o6", ""), 0);
	ck_assert_int_eq(rwl_link(&w, "etc/o7", "proc/1"), 0);
	ck_assert_int_eq(rwl_link(&w, "etc/o8", "etc/none"), 0);
	ck_assert_int_eq(rwl_link(&w, "proc/o9", "etc/first"), 0); /* excluded: left alone */
	ck_assert_int_eq(rwl_end(&w), -EPERM);
	ck_assert_uint_eq(w.refused, 8);
	ck_assert_uint_eq(w.links, 2);
	ck_assert_int_eq(lst("root/etc/first", &a), 0);
	ck_assert_int_eq(lst("root/data/second", &b), 0);
	ck_assert_int_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(a.st_nlink, 3);
	ck_assert_int_eq(lst("root/etc/b", &b), 0);
	ck_assert_int_eq(a.st_ino, b.st_ino);
	ck_assert_str_eq(slurp("root/data/second"), "shared\n");
	ck_assert_int_eq(lst("outside/x", &b), 0);
	ck_assert_int_eq(b.st_nlink, 1);
	sh("test \"$(ls @/root/etc | grep -c '^o')\" = 0 && test \"$(ls @/outside)\" = x");
	ck_assert_int_ne(lst("root/proc/o9", &b), 0);
	rwl_free(&w);
	/* a bound on entries holds for links too */
	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 1, NULL, 0), 0);
	ck_assert_int_eq(rwl_link(&w, "etc/l1", "etc/a"), 0);
	ck_assert_int_eq(rwl_link(&w, "etc/l2", "etc/a"), -E2BIG);
	rwl_free(&w);
}
END_TEST

START_TEST(copied_roots_keep_special_files)
{
	struct rwl w;
	const char *names[] = {"a"};

	sh("mkfifo @/root/etc/fifo @/root/usr/fifo");
	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 100, NULL, 0), 0);
	w.keep_special = true; /* a pod container's: its guest never had them */
	ck_assert_int_eq(rwl_names(&w, "etc", names, 1), 0);
	ck_assert_int_eq(rwl_end(&w), 0);
	sh("test -p @/root/etc/fifo && test -f @/root/etc/a && test ! -e @/root/etc/b");
	rwl_free(&w);
	/* the VM's own root had them: a name gone is a removal */
	ck_assert_int_eq(rwl_begin(&w, root, 1 << 20, 100, NULL, 0), 0);
	ck_assert_int_eq(rwl_names(&w, "usr", names, 0), 0);
	ck_assert_int_eq(rwl_end(&w), 0);
	sh("test ! -e @/root/usr/fifo && test ! -e @/root/usr/lib");
	rwl_free(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shim_rwlayer");
	TCase *tc = tcase_create("replay");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, replays_a_change_set);
	tcase_add_test(tc, types_replace_each_other);
	tcase_add_test(tc, hostile_paths_stay_inside);
	tcase_add_test(tc, setid_dropped_excluded_kept);
	tcase_add_test(tc, bounds_and_broken_streams);
	tcase_add_test(tc, hard_links);
	tcase_add_test(tc, copied_roots_keep_special_files);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
