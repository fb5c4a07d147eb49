// SPDX-License-Identifier: MIT
/*
 * Unit tests for the guest's erofs reader (guest-kernel/libos/fs/erofs.c).
 * Images come from the real mkfs.erofs (erofs-utils), made from a directory
 * tree with files of many sizes, nested and large directories, long and odd
 * names, symlinks, special files, hard links and xattrs, in the layouts
 * mkfs can write: flat with and without inline tails, chunk-based,
 * compressed (refused). Everything read back is compared with the tree.
 * Then the image is damaged: truncated, wrong magic, bad directory blocks,
 * nids and block addresses out of range, symlinks longer than their data,
 * and random byte flips. Every image is an exact-size heap copy, so ASan
 * (make unit runs the tests under it too) catches any read past its end.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "klib.h"
#include "../../guest-kernel/libos/fs/erofs.h"

static char work[200], tree[256], img_path[256];

struct image {
	uint8_t *buf;
	size_t len;
	struct erofs fs;
};

/* ------------------------------------------------------------ the source tree */

static void put_file(const char *rel, size_t size, unsigned seed)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	f = fopen(path, "wb");
	ck_assert_msg(f, "create %s: %s", path, strerror(errno));
	for (size_t i = 0; i < size; i++)
		fputc((int)((i * 2654435761u + seed * 40503u) >> 13 & 0xff), f);
	ck_assert_int_eq(fclose(f), 0);
}

static void put_dir(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	ck_assert_msg(mkdir(path, 0755) == 0, "mkdir %s: %s", path, strerror(errno));
}

static void put_link(const char *target, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	ck_assert_msg(symlink(target, path) == 0, "symlink %s: %s", path, strerror(errno));
}

static void chmod_rel(const char *rel, mode_t mode)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void make_tree(void)
{
	static const size_t sizes[] = {
	    0,    1,    2,     100,   511,   512,    4095,    4096,          4097,          8191,
	    8192, 8193, 12345, 65535, 65536, 100000, 1 << 20, (1 << 20) + 3, (3 << 20) + 17};
	static const char *odd[] = {"sp ace",
	                            "tab\there",
	                            "new\nline",
	                            "quote\"'",
	                            "back\\slash",
	                            "ünïcödé-名前",
	                            "star*?[]",
	                            "-dash",
	                            ".hidden",
	                            "..dots",
	                            "...",
	                            "#hash%pct",
	                            "emoji-\xf0\x9f\x99\x82",
	                            "!bang",
	                            "+plus",
	                            "~tilde",
	                            "a=b;c&d|e"};
	char name[PATH_MAX], target[4096];
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(work, sizeof(work), "%s/kiln-erofs.XXXXXX", tmp ? tmp : "/tmp");
	ck_assert(mkdtemp(work));
	snprintf(tree, sizeof(tree), "%s/tree", work);
	snprintf(img_path, sizeof(img_path), "%s/image.erofs", work);
	ck_assert_int_eq(mkdir(tree, 0755), 0);

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		snprintf(name, sizeof(name), "size-%zu", sizes[i]);
		put_file(name, sizes[i], (unsigned)i);
	}
	/* Nested directories, a file at every level. */
	strcpy(name, "nest");
	put_dir(name);
	for (int d = 0; d < 12; d++) {
		char f[PATH_MAX + 16];

		snprintf(f, sizeof(f), "%s/file%d", name, d);
		put_file(f, (size_t)d * 1000, 100 + (unsigned)d);
		snprintf(name + strlen(name), sizeof(name) - strlen(name), "/d%d", d);
		put_dir(name);
	}
	put_dir("empty-dir");
	/* A directory of many blocks. */
	put_dir("big");
	for (int i = 0; i < 700; i++) {
		snprintf(name, sizeof(name), "big/entry-%04d-%.*s", i, i % 40,
		         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN");
		put_file(name, (size_t)(i % 7) * 300, 200 + (unsigned)i);
	}
	/* Longest names (erofs-utils 1.5 fails on 255 bytes). */
	memset(name, 'L', 254);
	name[254] = 0;
	put_file(name, 77, 7);
	/* (erofs-utils 1.5 cannot pack much longer paths.) */
	memset(name, 'D', 100);
	name[100] = 0;
	put_dir(name);
	strcat(name, "/");
	memset(name + 101, 'f', 150);
	name[251] = 0;
	put_file(name, 4097, 8);
	for (size_t i = 0; i < ARRAY_SIZE(odd); i++)
		put_file(odd[i], i * 333, 300 + (unsigned)i);
	/* Symlinks: short, absolute, dangling, to a directory, long ones. */
	put_link("size-100", "link-short");
	put_link("/etc/passwd", "link-abs");
	put_link("does/not/exist", "link-dangling");
	put_link("nest/d0", "link-dir");
	memset(target, 'p', 1000);
	target[1000] = 0;
	put_link(target, "link-1000");
	for (int i = 0; i < 4090; i += 2)
		target[i] = 'q', target[i + 1] = '/';
	target[4090] = 0;
	put_link(target, "link-4090");
	/* Special files (device nodes need root: best effort). */
	snprintf(name, sizeof(name), "%s/fifo", tree);
	ck_assert_int_eq(mkfifo(name, 0644), 0);
	snprintf(name, sizeof(name), "%s/chardev", tree);
	(void)!mknod(name, S_IFCHR | 0600, makedev(1, 3));
	snprintf(name, sizeof(name), "%s/blockdev", tree);
	(void)!mknod(name, S_IFBLK | 0600, makedev(259, 70000 & 0xfffff));
	/* A hard link pair, odd permissions, a sparse file, xattrs. */
	put_file("hard-a", 5000, 9);
	snprintf(name, sizeof(name), "%s/hard-a", tree);
	snprintf(target, sizeof(target), "%s/hard-b", tree);
	ck_assert_int_eq(link(name, target), 0);
	put_file("mode-0000", 10, 10);
	chmod_rel("mode-0000", 0);
	put_file("mode-4755", 10, 11);
	chmod_rel("mode-4755", 04755);
	put_dir("sticky");
	chmod_rel("sticky", 01777);
	snprintf(name, sizeof(name), "%s/sparse", tree);
	fd = open(name, O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "middle", 6, 300000), 6);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
	snprintf(name, sizeof(name), "%s/size-100", tree);
	(void)!setxattr(name, "user.kiln", "a value", 7, 0);
	(void)!setxattr(name, "user.kiln.second", "another, longer value", 21, 0);
	snprintf(name, sizeof(name), "%s/big", tree);
	(void)!setxattr(name, "user.dir", "x", 1, 0);
	/* Files that are not root's (extended inodes for a large uid). */
	snprintf(name, sizeof(name), "%s/owned", tree);
	put_file("owned", 123, 12);
	(void)!chown(name, 70000, 70001);
	snprintf(name, sizeof(name), "%s/owned-small", tree);
	put_file("owned-small", 12, 13);
	(void)!chown(name, 1000, 1000);
}

static void remove_tree(void)
{
	char cmd[PATH_MAX + 32];

	if (getenv("KILN_KEEP_TREE"))
		return; /* for a look after a failure */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
	(void)!system(cmd);
}

/* ------------------------------------------------------------ images */

static void mkfs(const char *opts)
{
	char cmd[3 * PATH_MAX];

	/* From inside the tree: erofs-utils 1.5 fails on source paths longer
	 * than 256 bytes, so keep them short. */
	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && mkfs.erofs --quiet %s ../image.erofs . >../mkfs.log 2>&1", tree, opts);
	if (system(cmd) != 0) {
		char log[512] = "";
		FILE *f;

		snprintf(cmd, sizeof(cmd), "%s/mkfs.log", work);
		f = fopen(cmd, "r");
		if (f) {
			log[fread(log, 1, sizeof(log) - 1, f)] = 0;
			fclose(f);
		}
		ck_abort_msg("mkfs.erofs %s failed: %s", opts, log);
	}
}

static void load(struct image *im)
{
	struct stat st;
	const char *why = NULL;
	int fd = open(img_path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	im->len = (size_t)st.st_size;
	im->buf = malloc(im->len);
	ck_assert_ptr_nonnull(im->buf);
	ck_assert_int_eq(pread(fd, im->buf, im->len, 0), (ssize_t)im->len);
	close(fd);
	ck_assert_msg(erofs_mount(&im->fs, im->buf, im->len, &why) == 0, "mount: %s", why);
}

static void unload(struct image *im)
{
	free(im->buf);
	im->buf = NULL;
}

/* An exact-size copy of im with its first len bytes, remounted. */
static int copy_image(const struct image *im, size_t len, struct image *out, const char **why)
{
	out->len = len;
	out->buf = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(out->buf);
	memcpy(out->buf, im->buf, len);
	return erofs_mount(&out->fs, out->buf, len, why);
}

static int remount(struct image *im)
{
	const char *why;

	return erofs_mount(&im->fs, im->buf, im->len, &why);
}

static uint64_t lookup_path(const struct image *im, const char *path, struct erofs_inode *out)
{
	struct erofs_inode dir;
	char buf[PATH_MAX];
	uint64_t nid = im->fs.root_nid;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		ck_assert_int_eq(erofs_iget(&im->fs, nid, &dir), 0);
		ck_assert_msg(erofs_lookup(&im->fs, &dir, c, strlen(c), &nid) == 0, "lookup %s", c);
	}
	ck_assert_int_eq(erofs_iget(&im->fs, nid, out), 0);
	return nid;
}

/* Image offset of a file's first data byte. */
static size_t data_off(const struct image *im, const struct erofs_inode *ip)
{
	const uint8_t *p;
	uint64_t len;

	ck_assert_int_eq(erofs_map(&im->fs, ip, 0, &p, &len), 0);
	ck_assert_ptr_nonnull(p);
	return (size_t)(p - im->buf);
}

static size_t inode_off(const struct image *im, uint64_t nid)
{
	return (size_t)(im->fs.meta_off + nid * 32);
}

/* ------------------------------------------------------------ comparing */

struct expect {
	bool all_root, mtime_zero, mtime_exact, flat_plain;
};

struct counter {
	int n;
};

static int count_one(void *ctx, const char *name, size_t len, uint64_t nid, unsigned type)
{
	((struct counter *)ctx)->n++;
	ck_assert(len >= 1 && len <= 255);
	ck_assert_ptr_null(memchr(name, '/', len));
	ck_assert_ptr_null(memchr(name, 0, len));
	return 0;
}

static unsigned ft_of(mode_t m)
{
	return S_ISREG(m)    ? EROFS_FT_REG
	       : S_ISDIR(m)  ? EROFS_FT_DIR
	       : S_ISLNK(m)  ? EROFS_FT_LNK
	       : S_ISCHR(m)  ? EROFS_FT_CHR
	       : S_ISBLK(m)  ? EROFS_FT_BLK
	       : S_ISFIFO(m) ? EROFS_FT_FIFO
	                     : EROFS_FT_SOCK;
}

struct type_check {
	const char *name;
	unsigned type;
	bool found;
};

static int check_type(void *ctx, const char *name, size_t len, uint64_t nid, unsigned type)
{
	struct type_check *t = ctx;

	if (len == strlen(t->name) && !memcmp(name, t->name, len)) {
		t->found = true;
		ck_assert_uint_eq(type, t->type);
	}
	return 0;
}

static char *slurp(const char *path, size_t size)
{
	char *b = malloc(size ? size : 1);
	int fd = open(path, O_RDONLY);

	ck_assert_ptr_nonnull(b);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, b, size), (ssize_t)size);
	close(fd);
	return b;
}

static void compare_file(const struct image *im, const char *path, const struct stat *st,
                         const struct erofs_inode *ei, const struct expect *x)
{
	size_t size = (size_t)st->st_size;
	char *want = slurp(path, size), *got = malloc(size + 1);
	size_t done = 0, step = 1000 + size % 997;

	ck_assert_int_eq(erofs_read(&im->fs, ei, got, size + 1, 0), (long)size);
	ck_assert_msg(!memcmp(want, got, size), "%s: content differs", path);
	/* Odd-sized pieces across block boundaries. */
	memset(got, 0, size);
	while (done < size) {
		long n = erofs_read(&im->fs, ei, got + done, step, done);

		ck_assert_int_gt(n, 0);
		done += (size_t)n;
	}
	ck_assert_msg(!memcmp(want, got, size), "%s: content differs (pieces)", path);
	ck_assert_int_eq(erofs_read(&im->fs, ei, got, 10, size), 0);
	if (x->flat_plain && size) {
		/* What kiln maps into programs in place: whole 4 KiB-aligned
		 * blocks, one run. */
		const uint8_t *p;
		uint64_t len;

		ck_assert_uint_eq(ei->layout, EROFS_LAYOUT_FLAT_PLAIN);
		ck_assert_int_eq(erofs_map(&im->fs, ei, 0, &p, &len), 0);
		ck_assert_uint_eq(len, size);
		ck_assert_uint_eq((size_t)(p - im->buf) % 4096, 0);
	}
	free(want);
	free(got);
}

static void compare_dir(const struct image *im, const char *path, const struct erofs_inode *dir,
                        const struct expect *x, int *entries)
{
	DIR *d = opendir(path);
	struct dirent *e;
	struct counter c = {0};
	int host_n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char sub[PATH_MAX], target[4097];
		struct erofs_inode ei;
		struct type_check tc;
		struct stat st;
		uint64_t nid;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		host_n++;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		ck_assert_int_eq(lstat(sub, &st), 0);
		ck_assert_msg(erofs_lookup(&im->fs, dir, e->d_name, strlen(e->d_name), &nid) == 0,
		              "%s: not in the image", sub);
		ck_assert_int_eq(erofs_iget(&im->fs, nid, &ei), 0);
		ck_assert_msg(ei.mode == st.st_mode, "%s: mode %o, want %o", sub, ei.mode,
		              st.st_mode);
		ck_assert_uint_eq(ei.uid, x->all_root ? 0 : st.st_uid);
		ck_assert_uint_eq(ei.gid, x->all_root ? 0 : st.st_gid);
		if (x->mtime_zero)
			ck_assert_int_eq(ei.mtime_ns, 0);
		if (x->mtime_exact)
			ck_assert_int_eq(ei.mtime_ns / 1000000000, st.st_mtim.tv_sec);
		tc = (struct type_check){e->d_name, ft_of(st.st_mode), false};
		ck_assert_int_eq(erofs_readdir(&im->fs, dir, check_type, &tc), 0);
		ck_assert(tc.found);
		if (!S_ISDIR(st.st_mode))
			ck_assert_uint_eq(ei.nlink, st.st_nlink);
		(*entries)++;
		if (S_ISREG(st.st_mode)) {
			ck_assert_uint_eq(ei.size, (uint64_t)st.st_size);
			compare_file(im, sub, &st, &ei, x);
		} else if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(sub, target, sizeof(target));
			char got[4097];

			ck_assert_int_gt(n, 0);
			ck_assert_uint_eq(ei.size, (uint64_t)n);
			ck_assert_int_eq(erofs_readlink(&im->fs, &ei, got, sizeof(got)), n);
			ck_assert(!memcmp(got, target, (size_t)n) && got[n] == 0);
			ck_assert_int_eq(erofs_readlink(&im->fs, &ei, got, (size_t)n),
			                 -ENAMETOOLONG);
		} else if (S_ISDIR(st.st_mode)) {
			compare_dir(im, sub, &ei, x, entries);
		} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
			unsigned ma = major(st.st_rdev), mi = minor(st.st_rdev);

			/* Linux's new_encode_dev() */
			ck_assert_uint_eq(ei.rdev, (mi & 0xff) | (ma << 8) | ((mi & ~0xffu) << 12));
			ck_assert_uint_eq(ei.size, 0);
		}
	}
	closedir(d);
	ck_assert_int_eq(erofs_readdir(&im->fs, dir, count_one, &c), 0);
	ck_assert_int_eq(c.n, host_n);
	ck_assert_int_eq(erofs_dir_empty(&im->fs, dir), host_n == 0);
	ck_assert_int_eq(erofs_lookup(&im->fs, dir, "no such name", 12, &(uint64_t){0}), -ENOENT);
}

static void compare_image(const char *opts, const struct expect *x)
{
	struct image im;
	struct erofs_inode root;
	int entries = 0;

	mkfs(opts);
	load(&im);
	ck_assert_uint_eq(im.fs.blkbits, 12);
	ck_assert_int_eq(erofs_iget(&im.fs, im.fs.root_nid, &root), 0);
	ck_assert(S_ISDIR(root.mode));
	compare_dir(&im, tree, &root, x, &entries);
	ck_assert_int_ge(entries, 780);
	unload(&im);
}

START_TEST(test_kiln_layout)
{
	/* What tools/mkimage writes. */
	struct expect x = {.all_root = true, .mtime_zero = true, .flat_plain = true};

	compare_image("-Enoinline_data -T0 --all-root -x-1", &x);
}
END_TEST

START_TEST(test_inline_layout)
{
	/* mkfs's default: inline tails, xattrs, owners kept. */
	struct expect x = {0};

	compare_image("", &x);
}
END_TEST

START_TEST(test_extended_inodes)
{
	struct expect x = {.mtime_exact = true};

	compare_image("--preserve-mtime", &x);
}
END_TEST

START_TEST(test_chunked_layout)
{
	struct expect x = {.all_root = true, .mtime_zero = true};

	compare_image("--chunksize=4096 -T0 --all-root", &x);
}
END_TEST

struct refused {
	const struct image *im;
	int compressed, ok;
};

static int note_refused(void *ctx, const char *name, size_t len, uint64_t nid, unsigned type)
{
	struct refused *r = ctx;
	struct erofs_inode ei;
	int err = erofs_iget(&r->im->fs, nid, &ei);

	if (err == -EOPNOTSUPP)
		r->compressed++;
	else if (!err)
		r->ok++;
	else
		ck_abort_msg("iget: %d", err);
	return 0;
}

START_TEST(test_compressed_refused)
{
	struct image im;
	struct erofs_inode root;
	struct refused r = {&im, 0, 0};

	mkfs("-zlz4 -T0");
	load(&im);
	ck_assert_int_eq(erofs_iget(&im.fs, im.fs.root_nid, &root), 0);
	ck_assert_int_eq(erofs_readdir(&im.fs, &root, note_refused, &r), 0);
	ck_assert_int_gt(r.compressed, 0);
	ck_assert_int_gt(r.ok, 0);
	unload(&im);
}
END_TEST

/* ------------------------------------------------------------ damage */

/* Everything a walk can touch, checked only for not crashing; returns the
 * number of errors met. depth and the entry budget bound loops. */
struct walk {
	const struct image *im;
	int depth, errors, budget;
	char *scratch;
};

static void walk_nid(struct walk *w, uint64_t nid);

static int walk_one(void *ctx, const char *name, size_t len, uint64_t nid, unsigned type)
{
	struct walk *w = ctx;

	if (--w->budget < 0)
		return 1;
	walk_nid(w, nid);
	return 0;
}

static void walk_nid(struct walk *w, uint64_t nid)
{
	struct erofs_inode ei;
	char link[EROFS_LINK_MAX + 1];
	int err = erofs_iget(&w->im->fs, nid, &ei);

	if (err) {
		w->errors++;
		return;
	}
	switch (ei.mode & S_IFMT) {
	case S_IFREG:
		/* The start and the end: where damage shows. */
		if (erofs_read(&w->im->fs, &ei, w->scratch, 1u << 16, 0) < 0 ||
		    (ei.size > (1u << 16) &&
		     erofs_read(&w->im->fs, &ei, w->scratch, 1u << 16, ei.size - (1u << 16)) < 0))
			w->errors++;
		break;
	case S_IFLNK:
		if (erofs_readlink(&w->im->fs, &ei, link, sizeof(link)) < 0)
			w->errors++;
		break;
	case S_IFDIR:
		if (erofs_dir_empty(&w->im->fs, &ei) < 0)
			w->errors++;
		if (w->depth >= 20)
			break;
		w->depth++;
		if (erofs_readdir(&w->im->fs, &ei, walk_one, w) < 0)
			w->errors++;
		w->depth--;
		break;
	}
}

static int walk_image(const struct image *im)
{
	struct walk w = {.im = im, .budget = 5000, .scratch = malloc(1u << 16)};

	ck_assert_ptr_nonnull(w.scratch);
	walk_nid(&w, im->fs.root_nid);
	free(w.scratch);
	return w.errors;
}

START_TEST(test_good_image_walks_clean)
{
	struct image im;

	mkfs("-Enoinline_data -T0 --all-root -x-1");
	load(&im);
	ck_assert_int_eq(walk_image(&im), 0);
	unload(&im);
}
END_TEST

START_TEST(test_bad_magic)
{
	struct image im, bad;
	const char *why = NULL;

	mkfs("-T0");
	load(&im);
	ck_assert_int_eq(copy_image(&im, im.len, &bad, &why), 0);
	bad.buf[1024] ^= 1;
	ck_assert_int_eq(erofs_mount(&bad.fs, bad.buf, bad.len, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "magic"));
	unload(&bad);
	for (size_t len = 0; len < 1024 + 128; len += 97) {
		why = NULL;
		ck_assert_int_eq(copy_image(&im, len, &bad, &why), -EINVAL);
		ck_assert_ptr_nonnull(why);
		unload(&bad);
	}
	unload(&im);
}
END_TEST

START_TEST(test_superblock_checksum)
{
	struct image im;
	const char *why = NULL;

	mkfs("-T0");
	load(&im);
	im.buf[1024 + 64] ^= 0x40; /* the volume name */
	ck_assert_int_eq(erofs_mount(&im.fs, im.buf, im.len, &why), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(why, "checksum"));
	im.buf[1024 + 64] ^= 0x40;
	im.buf[1024 + 12] = 16; /* 64 KiB blocks */
	ck_assert_int_eq(erofs_mount(&im.fs, im.buf, im.len, &why), -EOPNOTSUPP);
	unload(&im);
}
END_TEST

START_TEST(test_truncated)
{
	struct image im, t;
	const char *why;
	int mounted = 0, damaged = 0;

	mkfs("-Enoinline_data -T0 --all-root -x-1");
	load(&im);
	for (size_t len = 0; len < im.len; len += len < 8192 ? 61 : im.len / 97) {
		if (copy_image(&im, len, &t, &why) == 0) {
			mounted++;
			damaged += walk_image(&t) > 0;
		}
		unload(&t);
	}
	/* Most of the image is file data: cut there, the metadata is fine
	 * but the files are not. */
	ck_assert_int_gt(mounted, 0);
	ck_assert_int_eq(damaged, mounted);
	unload(&im);
}
END_TEST

static int put_le16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	return 0;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int never(void *ctx, const char *name, size_t len, uint64_t nid, unsigned type)
{
	ck_abort_msg("callback on a corrupt directory");
	return 0;
}

/* Damage the directory block at off by fn, expect -EUCLEAN with no callback. */
static void expect_corrupt_dir(struct image *im, const struct erofs_inode *dir, size_t off,
                               void (*fn)(uint8_t *blk, size_t len), size_t len)
{
	uint8_t *save = malloc(len);

	memcpy(save, im->buf + off, len);
	fn(im->buf + off, len);
	ck_assert_int_eq(erofs_readdir(&im->fs, dir, never, NULL), -EUCLEAN);
	ck_assert_int_eq(erofs_lookup(&im->fs, dir, "x", 1, &(uint64_t){0}), -EUCLEAN);
	memcpy(im->buf + off, save, len);
	ck_assert_int_eq(erofs_readdir(&im->fs, dir, NULL, NULL), 0);
	free(save);
}

static void nameoff0_zero(uint8_t *b, size_t len)
{
	put_le16(b + 8, 0);
}
static void nameoff0_odd(uint8_t *b, size_t len)
{
	put_le16(b + 8, 13);
}
static void nameoff0_huge(uint8_t *b, size_t len)
{
	put_le16(b + 8, 0xfff0);
}
static void nameoff1_back(uint8_t *b, size_t len)
{
	put_le16(b + 12 + 8, 3);
}
static void nameoff1_past(uint8_t *b, size_t len)
{
	put_le16(b + 12 + 8, (unsigned)len + 5);
}
static void name_slash(uint8_t *b, size_t len)
{
	unsigned n = b[8] | b[9] << 8;

	b[n + 4] = '/';
}
static void name_nul(uint8_t *b, size_t len)
{
	unsigned n = b[8] | b[9] << 8;

	b[n + 4] = 0;
}
static void names_unsorted(uint8_t *b, size_t len)
{
	unsigned fifth = b[4 * 12 + 8] | b[4 * 12 + 9] << 8;

	b[fifth] = 'z'; /* "entry-..." sorts after its successor now */
}
static void bad_type(uint8_t *b, size_t len)
{
	b[12 + 10] = 9;
}
static void all_ones(uint8_t *b, size_t len)
{
	memset(b, 0xff, len);
}
static void all_zero(uint8_t *b, size_t len)
{
	memset(b, 0, len);
}

START_TEST(test_corrupt_dir_blocks)
{
	struct image im;
	struct erofs_inode big;
	size_t off;

	mkfs("-Enoinline_data -T0 --all-root -x-1");
	load(&im);
	lookup_path(&im, "big", &big);
	ck_assert_uint_gt(big.size, 8192);
	/* The second block of "big": 4 KiB of dirents and names. */
	off = data_off(&im, &big) + 4096;
	expect_corrupt_dir(&im, &big, off, nameoff0_zero, 4096);
	expect_corrupt_dir(&im, &big, off, nameoff0_odd, 4096);
	expect_corrupt_dir(&im, &big, off, nameoff0_huge, 4096);
	expect_corrupt_dir(&im, &big, off, nameoff1_back, 4096);
	expect_corrupt_dir(&im, &big, off, nameoff1_past, 4096);
	expect_corrupt_dir(&im, &big, off, name_slash, 4096);
	expect_corrupt_dir(&im, &big, off, name_nul, 4096);
	expect_corrupt_dir(&im, &big, off, names_unsorted, 4096);
	expect_corrupt_dir(&im, &big, off, bad_type, 4096);
	expect_corrupt_dir(&im, &big, off, all_ones, 4096);
	expect_corrupt_dir(&im, &big, off, all_zero, 4096);
	/* The first block too (erofs_dir_empty reads only that one). */
	off = data_off(&im, &big);
	expect_corrupt_dir(&im, &big, off, nameoff0_odd, 4096);
	unload(&im);
}
END_TEST

struct first_entry {
	char name[256];
	uint64_t nid;
	bool got;
};

START_TEST(test_inline_dir_tail_corrupt)
{
	struct image im;
	struct erofs_inode d;
	size_t off;

	/* Inline tails: a small directory lives right after its inode. */
	mkfs("-T0");
	load(&im);
	lookup_path(&im, "nest/d0", &d);
	ck_assert_uint_eq(d.layout, EROFS_LAYOUT_FLAT_INLINE);
	off = data_off(&im, &d);
	ck_assert_uint_eq(off, d.meta_end);
	expect_corrupt_dir(&im, &d, off, nameoff0_odd, (size_t)d.size);
	expect_corrupt_dir(&im, &d, off, nameoff1_past, (size_t)d.size);
	/* A size that puts the tail past its block. */
	put_le32(im.buf + inode_off(&im, d.nid) + 8, 4000);
	ck_assert_int_eq(erofs_iget(&im.fs, d.nid, &d), -EUCLEAN);
	unload(&im);
}
END_TEST

START_TEST(test_nid_out_of_range)
{
	struct image im;
	struct erofs_inode root, f;
	uint64_t nid;

	mkfs("-Enoinline_data -T0 --all-root -x-1");
	load(&im);
	ck_assert_int_eq(erofs_iget(&im.fs, ~0ULL, &f), -EUCLEAN);
	ck_assert_int_eq(erofs_iget(&im.fs, im.len / 32, &f), -EUCLEAN);
	ck_assert_int_eq(erofs_iget(&im.fs, im.fs.root_nid, &root), 0);
	/* A dirent naming a nid past the end: the listing is fine (nids are
	 * the inode's business), the inode is not. */
	nid = lookup_path(&im, "size-100", &f);
	for (size_t off = data_off(&im, &root); off < data_off(&im, &root) + 4096; off += 1) {
		uint64_t v = 0;

		memcpy(&v, im.buf + off, 8);
		if (v == nid) {
			put_le64(im.buf + off, 1ULL << 50);
			break;
		}
	}
	ck_assert_int_eq(erofs_lookup(&im.fs, &root, "size-100", 8, &nid), 0);
	ck_assert_uint_eq(nid, 1ULL << 50);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), -EUCLEAN);
	unload(&im);
}
END_TEST

START_TEST(test_blkaddr_beyond_end)
{
	struct image im;
	struct erofs_inode f;
	uint64_t nid;
	uint8_t *ino;

	mkfs("-Enoinline_data -T0 --all-root -x-1");
	load(&im);
	nid = lookup_path(&im, "size-12345", &f);
	ino = im.buf + inode_off(&im, nid);
	put_le32(ino + 16, (uint32_t)(im.len / 4096)); /* just past the end */
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), -EUCLEAN);
	put_le32(ino + 16, 0xffffffff);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), -EUCLEAN);
	/* A size that runs past the end. */
	put_le32(ino + 16, 1);
	put_le32(ino + 8, (uint32_t)im.len);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), -EUCLEAN);
	/* Unknown layout, unknown format bits, bad type. */
	put_le32(ino + 8, 10);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), 0);
	put_le16(ino, 7 << 1);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), -EUCLEAN);
	put_le16(ino, 1 << 1);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), -EOPNOTSUPP);
	put_le16(ino, 1 << 5);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), -EOPNOTSUPP);
	put_le16(ino, 0);
	put_le16(ino + 4, 0170644);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), -EUCLEAN);
	/* The last 32 bytes of the image as an extended (64-byte) inode, or
	 * with inline xattrs: both run past the end. */
	nid = (im.len - im.fs.meta_off) / 32 - 1;
	ino = im.buf + inode_off(&im, nid);
	memset(ino, 0, 32);
	put_le16(ino + 4, 0100644);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), 0);
	put_le16(ino, 1);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), -EUCLEAN);
	put_le16(ino, 0);
	put_le16(ino + 2, 1);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &f), -EUCLEAN);
	unload(&im);
}
END_TEST

START_TEST(test_symlink_beyond_data)
{
	struct image im;
	struct erofs_inode l;
	char buf[EROFS_LINK_MAX + 1];
	uint64_t nid;
	uint8_t *ino;

	mkfs("-Enoinline_data -T0 --all-root -x-1");
	load(&im);
	nid = lookup_path(&im, "link-short", &l);
	ck_assert_int_eq(erofs_readlink(&im.fs, &l, buf, sizeof(buf)), 8);
	ino = im.buf + inode_off(&im, nid);
	/* Longer than its inline tail can be. */
	put_le32(ino + 8, 5000);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &l), -EUCLEAN);
	/* Longer than the data: the tail runs over the block end. */
	put_le32(ino + 8, 4096 - (unsigned)(l.meta_end % 4096) + 1);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &l), -EUCLEAN);
	/* Empty, or with a NUL inside. */
	put_le32(ino + 8, 0);
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &l), 0);
	ck_assert_int_eq(erofs_readlink(&im.fs, &l, buf, sizeof(buf)), -EUCLEAN);
	put_le32(ino + 8, 8);
	im.buf[l.meta_end + 3] = 0;
	ck_assert_int_eq(erofs_iget(&im.fs, nid, &l), 0);
	ck_assert_int_eq(erofs_readlink(&im.fs, &l, buf, sizeof(buf)), -EUCLEAN);
	/* Not a symlink. */
	lookup_path(&im, "size-100", &l);
	ck_assert_int_eq(erofs_readlink(&im.fs, &l, buf, sizeof(buf)), -EINVAL);
	unload(&im);
}
END_TEST

START_TEST(test_random_damage)
{
	struct image im, d;
	const char *why;
	unsigned seed = 12345;
	size_t meta_end;

	mkfs("-T0");
	load(&im);
	/* Damage where the metadata is: the superblock's block, the inodes
	 * and directories (mkfs puts them before the big files). */
	meta_end = MIN(im.len, (size_t)64 << 10);
	for (int iter = 0; iter < 400; iter++) {
		ck_assert_int_eq(copy_image(&im, im.len, &d, &why), 0);
		for (int k = 0; k < 1 + iter % 8; k++) {
			size_t at;

			seed = seed * 1103515245 + 12345;
			at = 1024 + 128 + (seed >> 8) % (meta_end - 1024 - 128);
			seed = seed * 1103515245 + 12345;
			d.buf[at] ^= (uint8_t)(1 + (seed >> 16) % 255);
		}
		if (!remount(&d))
			walk_image(&d);
		unload(&d);
	}
	unload(&im);
}
END_TEST

static Suite *erofs_suite(void)
{
	Suite *s = suite_create("erofs");
	TCase *good = tcase_create("mkfs.erofs images"), *bad = tcase_create("damaged images");

	/* One tree for all the tests (they only read it). */
	tcase_add_unchecked_fixture(good, make_tree, remove_tree);
	tcase_add_unchecked_fixture(bad, make_tree, remove_tree);
	tcase_set_timeout(good, 120);
	tcase_set_timeout(bad, 300);
	tcase_add_test(good, test_kiln_layout);
	tcase_add_test(good, test_inline_layout);
	tcase_add_test(good, test_extended_inodes);
	tcase_add_test(good, test_chunked_layout);
	tcase_add_test(good, test_compressed_refused);
	tcase_add_test(good, test_good_image_walks_clean);
	tcase_add_test(bad, test_bad_magic);
	tcase_add_test(bad, test_superblock_checksum);
	tcase_add_test(bad, test_truncated);
	tcase_add_test(bad, test_corrupt_dir_blocks);
	tcase_add_test(bad, test_inline_dir_tail_corrupt);
	tcase_add_test(bad, test_nid_out_of_range);
	tcase_add_test(bad, test_blkaddr_beyond_end);
	tcase_add_test(bad, test_symlink_beyond_data);
	tcase_add_test(bad, test_random_damage);
	suite_add_tcase(s, good);
	suite_add_tcase(s, bad);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(erofs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
