// SPDX-License-Identifier: MIT
/*
 * Unit tests for the guest's cpio newc parser. Archives are built by hand in
 * memory, and once by GNU cpio itself. Every parse runs on an exact-size heap
 * copy so that ASan catches any read past the end.
 */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "klib.h"
#include "../../guest-kernel/libos/fs/cpio.h"

enum {
	F_INO,
	F_MODE,
	F_UID,
	F_GID,
	F_NLINK,
	F_MTIME,
	F_FILESIZE,
	F_DEVMAJOR,
	F_DEVMINOR,
	F_RDEVMAJOR,
	F_RDEVMINOR,
	F_NAMESIZE,
	F_CHECK,
	F_COUNT
};

#define HDR_LEN      110
#define FIELD_OFF(f) (6 + 8 * (f))

/* ------------------------------------------------------------ archive builder */

struct ar {
	uint8_t b[16384];
	size_t len;
	uint32_t ino;
};

static void ar_pad(struct ar *a)
{
	while (a->len % 4)
		a->b[a->len++] = 0;
}

static void ar_bytes(struct ar *a, const void *p, size_t n)
{
	ck_assert_uint_le(a->len + n, sizeof(a->b));
	if (n)
		memcpy(a->b + a->len, p, n);
	a->len += n;
}

/* A member with every header field given; name and data are copied as is. */
static void ar_raw(struct ar *a, const char *magic, const uint32_t f[F_COUNT], const void *name,
                   size_t name_bytes, const void *data, size_t data_bytes)
{
	char hdr[HDR_LEN + 1];

	snprintf(hdr, sizeof(hdr), "%s%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", magic,
	         f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12]);
	ck_assert_uint_eq(strlen(hdr), HDR_LEN);
	ar_bytes(a, hdr, HDR_LEN);
	ar_bytes(a, name, name_bytes);
	ar_pad(a);
	ar_bytes(a, data, data_bytes);
	ar_pad(a);
}

static void ar_add(struct ar *a, const char *name, uint32_t mode, const void *data, size_t size)
{
	uint32_t f[F_COUNT] = {0};

	f[F_INO] = ++a->ino;
	f[F_MODE] = mode;
	f[F_NLINK] = 1;
	f[F_FILESIZE] = size;
	f[F_NAMESIZE] = strlen(name) + 1;
	ar_raw(a, "070701", f, name, strlen(name) + 1, data, size);
}

static void ar_file(struct ar *a, const char *name, const char *text)
{
	ar_add(a, name, 0100644, text, strlen(text));
}

static void ar_trailer(struct ar *a)
{
	ar_add(a, "TRAILER!!!", 0, NULL, 0);
}

/* ------------------------------------------------------------ collecting callback */

#define SEEN_MAX 32

struct seen {
	int n;
	int stop_at; /* return 42 when reaching this entry (1-based), 0 = never */
	char name[SEEN_MAX][256];
	struct cpio_entry e[SEEN_MAX];
	char data[SEEN_MAX][2048];
};

static int collect(void *ctx, const struct cpio_entry *e)
{
	struct seen *s = ctx;

	ck_assert_int_lt(s->n, SEEN_MAX);
	ck_assert_uint_gt(e->namelen, 0);
	ck_assert_uint_lt(e->namelen, sizeof(s->name[0]));
	ck_assert_int_eq(e->name[e->namelen], '\0');
	memcpy(s->name[s->n], e->name, e->namelen + 1);
	s->e[s->n] = *e;
	/* The buffer is freed after the parse: keep copies, not pointers. */
	s->e[s->n].name = s->name[s->n];
	memcpy(s->data[s->n], e->data, MIN(e->size, sizeof(s->data[0])));
	s->e[s->n].data = s->data[s->n];
	s->n++;
	return s->n == s->stop_at ? 42 : 0;
}

static int find(const struct seen *s, const char *name)
{
	for (int i = 0; i < s->n; i++) {
		if (strcmp(s->name[i], name) == 0)
			return i;
	}
	return -1;
}

/* Parses an exact-size heap copy of p[0, n). */
static int parse_copy(const void *p, size_t n, struct seen *s, const char **err, size_t *off)
{
	uint8_t *copy = malloc(n ? n : 1);
	int r;

	ck_assert_ptr_nonnull(copy);
	if (n)
		memcpy(copy, p, n);
	r = cpio_parse(copy, n, s ? collect : NULL, s, err, off);
	free(copy);
	return r;
}

/* Expects -EINVAL with a message containing want at offset want_off. */
static void expect_error(const struct ar *a, const char *want, size_t want_off)
{
	struct seen s = {0};
	const char *err = NULL;
	size_t off = (size_t)-1;

	ck_assert_int_eq(parse_copy(a->b, a->len, &s, &err, &off), -EINVAL);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(err, want), "error \"%s\" lacks \"%s\"", err, want);
	ck_assert_uint_eq(off, want_off);
	ck_assert_int_eq(s.n, 0);
}

static void small_archive(struct ar *a)
{
	memset(a, 0, sizeof(*a));
	ar_add(a, ".", 040755, NULL, 0);
	ar_add(a, "./dir", 040755, NULL, 0);
	ar_file(a, "./dir/file", "hello");
	ar_add(a, "link", 0120777, "dir/file", 8);
	ar_file(a, "empty", "");
	ar_trailer(a);
}

/* ------------------------------------------------------------ valid archives */

START_TEST(test_basic)
{
	struct ar a;
	struct seen s = {0};
	const char *err = "unset";

	small_archive(&a);
	ck_assert_int_eq(parse_copy(a.b, a.len, &s, &err, NULL), 0);
	ck_assert_ptr_null(err);
	ck_assert_int_eq(s.n, 5);
	ck_assert_str_eq(s.name[0], ".");
	ck_assert_str_eq(s.name[1], "dir");
	ck_assert_str_eq(s.name[2], "dir/file");
	ck_assert_str_eq(s.name[3], "link");
	ck_assert_str_eq(s.name[4], "empty");
	ck_assert_uint_eq(s.e[1].mode, 040755);
	ck_assert_uint_eq(s.e[2].mode, 0100644);
	ck_assert_uint_eq(s.e[2].size, 5);
	ck_assert_mem_eq(s.data[2], "hello", 5);
	ck_assert_uint_eq(s.e[3].mode, 0120777);
	ck_assert_uint_eq(s.e[3].size, 8);
	ck_assert_mem_eq(s.data[3], "dir/file", 8);
	ck_assert_uint_eq(s.e[4].size, 0);
	ck_assert_uint_eq(s.e[2].namelen, 8);
}
END_TEST

START_TEST(test_all_fields)
{
	struct ar a = {0};
	struct seen s = {0};
	uint32_t f[F_COUNT];

	for (int i = 0; i < F_COUNT; i++)
		f[i] = 0x11111111u * (i + 1);
	f[F_FILESIZE] = 3;
	f[F_NAMESIZE] = 2;
	f[F_CHECK] = 0xdeadbeef; /* 070701: c_check is ignored */
	f[F_INO] = 0xfedcba98;
	ar_raw(&a, "070701", f, "x", 2, "abc", 3);
	ar_trailer(&a);
	ck_assert_int_eq(parse_copy(a.b, a.len, &s, NULL, NULL), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_uint_eq(s.e[0].ino, 0xfedcba98);
	ck_assert_uint_eq(s.e[0].mode, 0x22222222);
	ck_assert_uint_eq(s.e[0].uid, 0x33333333);
	ck_assert_uint_eq(s.e[0].gid, 0x44444444);
	ck_assert_uint_eq(s.e[0].nlink, 0x55555555);
	ck_assert_uint_eq(s.e[0].mtime, 0x66666666);
	ck_assert_uint_eq(s.e[0].devmajor, 0x88888888);
	ck_assert_uint_eq(s.e[0].devminor, 0x99999999);
	ck_assert_uint_eq(s.e[0].rdevmajor, 0xaaaaaaaa);
	ck_assert_uint_eq(s.e[0].rdevminor, 0xbbbbbbbb);
	ck_assert_uint_eq(s.e[0].size, 3);
	ck_assert_str_eq(s.name[0], "x");
}
END_TEST

START_TEST(test_lowercase_hex)
{
	struct ar a = {0};
	struct seen s = {0};

	ar_add(&a, "f", 0x81a4, "z", 1);
	ar_trailer(&a);
	for (size_t i = 6; i < HDR_LEN; i++)
		a.b[i] = (char)tolower(a.b[i]);
	ck_assert_int_eq(parse_copy(a.b, a.len, &s, NULL, NULL), 0);
	ck_assert_uint_eq(s.e[0].mode, 0x81a4);
}
END_TEST

static void crc_archive(struct ar *a, uint32_t sum_delta)
{
	const char *text = "checksummed data\xff";
	uint32_t f[F_COUNT] = {0}, sum = 0;

	for (const char *p = text; *p; p++)
		sum += (uint8_t)*p;
	memset(a, 0, sizeof(*a));
	f[F_MODE] = 0100600;
	f[F_FILESIZE] = strlen(text);
	f[F_NAMESIZE] = 2;
	f[F_CHECK] = sum + sum_delta;
	ar_raw(a, "070702", f, "c", 2, text, strlen(text));
	memset(f, 0, sizeof(f));
	f[F_NAMESIZE] = 11;
	ar_raw(a, "070702", f, "TRAILER!!!", 11, NULL, 0);
}

START_TEST(test_crc_ok)
{
	struct ar a;
	struct seen s = {0};

	crc_archive(&a, 0);
	ck_assert_int_eq(parse_copy(a.b, a.len, &s, NULL, NULL), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_uint_eq(s.e[0].size, 17);
}
END_TEST

START_TEST(test_crc_bad)
{
	struct ar a;

	crc_archive(&a, 1);
	expect_error(&a, "checksum", FIELD_OFF(F_CHECK));
}
END_TEST

/* GNU cpio writes c_check 0 for symlinks: only regular files are summed. */
START_TEST(test_crc_symlink_unsummed)
{
	struct ar a = {0};
	struct seen s = {0};
	uint32_t f[F_COUNT] = {0};

	f[F_MODE] = 0120777;
	f[F_FILESIZE] = 6;
	f[F_NAMESIZE] = 2;
	ar_raw(&a, "070702", f, "l", 2, "target", 6);
	ar_trailer(&a);
	ck_assert_int_eq(parse_copy(a.b, a.len, &s, NULL, NULL), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_mem_eq(s.data[0], "target", 6);
}
END_TEST

START_TEST(test_callback_stop)
{
	struct ar a;
	struct seen s = {.stop_at = 2};
	const char *err = "unset";

	small_archive(&a);
	ck_assert_int_eq(parse_copy(a.b, a.len, &s, &err, NULL), 42);
	ck_assert_int_eq(s.n, 2);
	ck_assert_ptr_null(err);
}
END_TEST

/* A corrupt member late in the archive means no callback at all. */
START_TEST(test_no_partial_effect)
{
	struct ar a = {0};
	struct seen s = {0};

	size_t second;

	ar_file(&a, "good", "data");
	second = a.len;
	ar_file(&a, "bad", "data");
	ar_trailer(&a);
	a.b[second + FIELD_OFF(F_MODE)] = 'Z';
	ck_assert_int_eq(parse_copy(a.b, a.len, &s, NULL, NULL), -EINVAL);
	ck_assert_int_eq(s.n, 0);
}
END_TEST

START_TEST(test_validate_only)
{
	struct ar a;

	small_archive(&a);
	ck_assert_int_eq(parse_copy(a.b, a.len, NULL, NULL, NULL), 0);
}
END_TEST

START_TEST(test_trailing_zero_padding)
{
	struct ar a;
	struct seen s = {0};

	small_archive(&a);
	memset(a.b + a.len, 0, 512 - a.len % 512);
	a.len += 512 - a.len % 512;
	ck_assert_int_eq(parse_copy(a.b, a.len, &s, NULL, NULL), 0);
	ck_assert_int_eq(s.n, 5);
}
END_TEST

START_TEST(test_concatenated)
{
	struct ar a = {0};
	struct seen s = {0};

	ar_file(&a, "first", "1");
	ar_trailer(&a);
	memset(a.b + a.len, 0, 64);
	a.len += 64;
	ar_file(&a, "second", "2");
	ar_trailer(&a);
	ck_assert_int_eq(parse_copy(a.b, a.len, &s, NULL, NULL), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.name[0], "first");
	ck_assert_str_eq(s.name[1], "second");
}
END_TEST

/* ------------------------------------------------------------ malformed archives */

START_TEST(test_truncated_everywhere)
{
	struct ar a;

	small_archive(&a);
	for (size_t n = 0; n < a.len; n++) {
		struct seen s = {0};
		const char *err = NULL;
		size_t off = (size_t)-1;

		ck_assert_msg(parse_copy(a.b, n, &s, &err, &off) == -EINVAL, "len %zu accepted", n);
		ck_assert_ptr_nonnull(err);
		ck_assert_uint_le(off, n);
		ck_assert_int_eq(s.n, 0);
	}
}
END_TEST

START_TEST(test_bad_hex)
{
	static const char bad[] = {'g', 'G', ' ', 'x', '-', '\0', 0x80};
	static const char *const names[F_COUNT] = {
	    "c_ino",       "c_mode",     "c_uid",      "c_gid",      "c_nlink",
	    "c_mtime",     "c_filesize", "c_devmajor", "c_devminor", "c_rdevmajor",
	    "c_rdevminor", "c_namesize", "c_check",
	};

	for (int f = 0; f < F_COUNT; f++) {
		for (size_t b = 0; b < sizeof(bad); b++) {
			struct ar a;

			small_archive(&a);
			/* Second member, last digit of the field. */
			a.b[112 + FIELD_OFF(f) + 7] = bad[b];
			expect_error(&a, names[f], 112 + FIELD_OFF(f));
		}
	}
}
END_TEST

START_TEST(test_namesize_zero)
{
	struct ar a = {0};
	uint32_t f[F_COUNT] = {0};

	ar_raw(&a, "070701", f, "abc", 4, NULL, 0);
	ar_trailer(&a);
	expect_error(&a, "c_namesize is 0", FIELD_OFF(F_NAMESIZE));
}
END_TEST

START_TEST(test_name_without_nul)
{
	struct ar a = {0};
	uint32_t f[F_COUNT] = {0};

	f[F_NAMESIZE] = 3;
	ar_raw(&a, "070701", f, "abc", 3, NULL, 0);
	ar_trailer(&a);
	expect_error(&a, "not NUL-terminated", HDR_LEN);
}
END_TEST

START_TEST(test_name_with_inner_nul)
{
	struct ar a = {0};
	uint32_t f[F_COUNT] = {0};

	f[F_NAMESIZE] = 4;
	ar_raw(&a, "070701", f, "a\0b", 4, NULL, 0);
	ar_trailer(&a);
	expect_error(&a, "contains a NUL", HDR_LEN);
}
END_TEST

START_TEST(test_empty_names)
{
	struct ar a = {0};

	ar_file(&a, "", "x");
	ar_trailer(&a);
	expect_error(&a, "empty name", HDR_LEN);

	memset(&a, 0, sizeof(a));
	ar_file(&a, "./", "x");
	ar_trailer(&a);
	expect_error(&a, "empty name", HDR_LEN);
}
END_TEST

START_TEST(test_filesize_beyond_end)
{
	struct ar a = {0};
	uint32_t f[F_COUNT] = {0};

	f[F_NAMESIZE] = 2;
	f[F_FILESIZE] = 4096;
	ar_raw(&a, "070701", f, "f", 2, "short", 5);
	ar_trailer(&a);
	expect_error(&a, "file data extends past end", FIELD_OFF(F_FILESIZE));
}
END_TEST

START_TEST(test_huge_sizes)
{
	struct ar a = {0};
	uint32_t f[F_COUNT] = {0};

	f[F_NAMESIZE] = 2;
	f[F_FILESIZE] = 0xffffffff;
	ar_raw(&a, "070701", f, "f", 2, NULL, 0);
	ar_trailer(&a);
	expect_error(&a, "file data extends past end", FIELD_OFF(F_FILESIZE));

	memset(&a, 0, sizeof(a));
	f[F_NAMESIZE] = 0xffffffff;
	f[F_FILESIZE] = 0;
	ar_raw(&a, "070701", f, "f", 2, NULL, 0);
	ar_trailer(&a);
	expect_error(&a, "name extends past end", FIELD_OFF(F_NAMESIZE));

	memset(&a, 0, sizeof(a));
	memset(f, 0xff, sizeof(f));
	ar_raw(&a, "070702", f, "f", 2, NULL, 0);
	expect_error(&a, "name extends past end", FIELD_OFF(F_NAMESIZE));
}
END_TEST

START_TEST(test_padding_off_end)
{
	struct ar a = {0};

	/* 110 + 3 = 113 bytes: the name's padding would end at 116. */
	ar_file(&a, "ab", "");
	a.len = HDR_LEN + 3;
	expect_error(&a, "padding after name", HDR_LEN);

	/* Data ends at 117, its padding at 120. */
	memset(&a, 0, sizeof(a));
	ar_file(&a, "ab", "z");
	a.len = 116 + 1;
	expect_error(&a, "padding after file data", 116);
}
END_TEST

START_TEST(test_missing_trailer)
{
	struct ar a;

	small_archive(&a);
	a.len -= 124; /* drop the trailer: the archive now ends on a member boundary */
	expect_error(&a, "without TRAILER!!!", a.len);

	memset(&a, 0, sizeof(a));
	expect_error(&a, "without TRAILER!!!", 0);
}
END_TEST

START_TEST(test_bad_magic)
{
	struct ar a;

	small_archive(&a);
	memcpy(a.b, "070707", 6);
	expect_error(&a, "odc", 0);

	small_archive(&a);
	a.b[0] = 0x1f;
	a.b[1] = 0x8b;
	expect_error(&a, "gzip", 0);

	small_archive(&a);
	memcpy(a.b + 112, "07070X", 6); /* second member */
	expect_error(&a, "bad magic", 112);
}
END_TEST

START_TEST(test_garbage_after_trailer)
{
	struct ar a;

	/* Not zero, at an aligned offset: parsed as a member, so bad magic. */
	small_archive(&a);
	size_t end = a.len;
	memcpy(a.b + a.len, "junkjunk", 8);
	a.len += 8;
	expect_error(&a, "bad magic", end);

	/* Zeros then something at an unaligned offset. */
	small_archive(&a);
	memcpy(a.b + a.len, "\0\0\0x", 4);
	a.len += 4;
	expect_error(&a, "neither zero padding", end + 3);
}
END_TEST

/* Padding is skipped a word at a time: a stray byte anywhere in a long run
 * of zeros is still found, at its own offset, and the run's end too. */
START_TEST(test_long_padding_every_offset)
{
	for (size_t pad = 1; pad < 80; pad++) {
		struct ar a;
		size_t end;

		small_archive(&a);
		end = a.len;
		memset(a.b + end, 0, pad);
		a.b[end + pad - 1] = 'x';
		a.len = end + pad;
		if ((end + pad - 1) % 4)
			expect_error(&a, "neither zero padding", end + pad - 1);
		else /* parsed as the next member: a header cut short */
			expect_error(&a, "header truncated", end + pad - 1);

		small_archive(&a);
		memset(a.b + end, 0, pad);
		a.len = end + pad;
		ck_assert_int_eq(parse_copy(a.b, a.len, NULL, NULL, NULL), 0);
	}
}
END_TEST

/* Deterministic xorshift so failures reproduce. */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

START_TEST(test_random_garbage)
{
	uint32_t seed = 0x12345678;
	uint8_t buf[600];

	for (int iter = 0; iter < 2000; iter++) {
		size_t n = rnd(&seed) % sizeof(buf);
		const char *err = NULL;

		for (size_t i = 0; i < n; i++)
			buf[i] = rnd(&seed);
		/* Half the time start with a valid magic to get deeper. */
		if (iter % 2 && n >= 6)
			memcpy(buf, "070701", 6);
		ck_assert_int_eq(parse_copy(buf, n, NULL, &err, NULL), -EINVAL);
		ck_assert_ptr_nonnull(err);
	}
}
END_TEST

/* Every byte of a valid archive replaced by interesting values: no crash,
 * and an error always comes with a message. */
START_TEST(test_mutations)
{
	static const uint8_t vals[] = {0, '0', '7', 'f', 'F', 'g', 0xff, '/', '.'};
	struct ar a, m;

	small_archive(&a);
	for (size_t i = 0; i < a.len; i++) {
		for (size_t v = 0; v < sizeof(vals); v++) {
			struct seen s = {0};
			const char *err = NULL;
			int r;

			m = a;
			m.b[i] = vals[v];
			r = parse_copy(m.b, m.len, &s, &err, NULL);
			ck_assert(r == 0 || r == -EINVAL);
			ck_assert_int_eq(r == -EINVAL, err != NULL);
		}
	}
}
END_TEST

START_TEST(test_null_args)
{
	struct ar a;

	small_archive(&a);
	a.len -= 1;
	ck_assert_int_eq(parse_copy(a.b, a.len, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(cpio_parse(NULL, 0, NULL, NULL, NULL, NULL), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------ real GNU cpio */

static uint8_t *run_cpio(const char *dir, const char *format, size_t *len)
{
	char cmd[512];
	size_t cap = 65536, n = 0, got;
	uint8_t *buf = malloc(cap);
	FILE *p;

	snprintf(cmd, sizeof(cmd), "cd '%s' && find . | LC_ALL=C sort | cpio -o -H %s --quiet", dir,
	         format);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while ((got = fread(buf + n, 1, cap - n, p)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
	}
	ck_assert_int_eq(pclose(p), 0);
	*len = n;
	return buf;
}

static void write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

/* The tree GNU cpio archives; a checked fixture so that a failing test
 * still removes it. */
static char tree_dir[64];

static void make_tree(void)
{
	char *dir = tree_dir, path[512], target[512];
	uint8_t bin[1000];

	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (uint8_t)(i * 7);
	strcpy(tree_dir, "/tmp/kiln-test-cpio-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.txt", dir);
	write_file(path, "hello\n", 6);
	snprintf(path, sizeof(path), "%s/empty", dir);
	write_file(path, "", 0);
	snprintf(path, sizeof(path), "%s/sub", dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub/b.bin", dir);
	write_file(path, bin, sizeof(bin));
	snprintf(path, sizeof(path), "%s/link", dir);
	ck_assert_int_eq(symlink("a.txt", path), 0);
	snprintf(path, sizeof(path), "%s/sub/hard", dir);
	snprintf(target, sizeof(target), "%s/sub/b.bin", dir);
	ck_assert_int_eq(link(target, path), 0);
}

static void remove_tree(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree_dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void check_tree(const struct seen *s)
{
	int i;

	ck_assert_int_eq(s->n, 7);
	ck_assert_int_ge(find(s, "."), 0);
	ck_assert(S_ISDIR(s->e[find(s, ".")].mode));
	i = find(s, "a.txt");
	ck_assert_int_ge(i, 0);
	ck_assert(S_ISREG(s->e[i].mode));
	ck_assert_uint_eq(s->e[i].size, 6);
	ck_assert_mem_eq(s->data[i], "hello\n", 6);
	i = find(s, "empty");
	ck_assert_int_ge(i, 0);
	ck_assert_uint_eq(s->e[i].size, 0);
	i = find(s, "sub");
	ck_assert_int_ge(i, 0);
	ck_assert(S_ISDIR(s->e[i].mode));
	i = find(s, "link");
	ck_assert_int_ge(i, 0);
	ck_assert(S_ISLNK(s->e[i].mode));
	ck_assert_uint_eq(s->e[i].size, 5);
	ck_assert_mem_eq(s->data[i], "a.txt", 5);
	/* Hard links: newc stores the data once, with the last link. */
	int b = find(s, "sub/b.bin"), h = find(s, "sub/hard");
	ck_assert_int_ge(b, 0);
	ck_assert_int_ge(h, 0);
	ck_assert_uint_eq(s->e[b].nlink, 2);
	ck_assert_uint_eq(s->e[h].nlink, 2);
	ck_assert_uint_eq(s->e[b].ino, s->e[h].ino);
	ck_assert_uint_eq(s->e[b].size + s->e[h].size, 1000);
	const char *d = s->e[b].size ? s->data[b] : s->data[h];
	for (int k = 0; k < 1000; k++)
		ck_assert_uint_eq((uint8_t)d[k], (uint8_t)(k * 7));
}

START_TEST(test_real_cpio)
{
	static const char *const formats[] = {"newc", "crc"};

	for (size_t f = 0; f < ARRAY_SIZE(formats); f++) {
		struct seen s = {0};
		const char *err = NULL;
		size_t len;
		uint8_t *buf = run_cpio(tree_dir, formats[f], &len);

		ck_assert_uint_gt(len, 0);
		ck_assert_uint_eq(len % 512, 0); /* GNU cpio pads: trailing zeros */
		ck_assert_msg(parse_copy(buf, len, &s, &err, NULL) == 0, "%s: %s", formats[f],
		              err ? err : "?");
		check_tree(&s);
		if (f == 1) {
			/* Corrupt a data byte: only the checksum can notice. */
			uint8_t *p = memmem(buf, len, "hello\n", 6);

			ck_assert_ptr_nonnull(p);
			p[0] = 'j';
			ck_assert_int_eq(parse_copy(buf, len, NULL, &err, NULL), -EINVAL);
			ck_assert_ptr_nonnull(strstr(err, "checksum"));
		}
		free(buf);
	}
}
END_TEST

/* ------------------------------------------------------------ cpio_name_ok */

static bool name_ok(const char *s)
{
	return cpio_name_ok(s, strlen(s));
}

START_TEST(test_name_ok)
{
	static char longname[CPIO_NAME_MAX + 2];

	ck_assert(name_ok("a"));
	ck_assert(name_ok("."));
	ck_assert(name_ok("bin/sh"));
	ck_assert(name_ok("a/./b"));
	ck_assert(name_ok("dir/"));
	ck_assert(name_ok("..a/b.."));
	ck_assert(name_ok("...")); /* a legal (odd) file name */
	ck_assert(!name_ok(""));
	ck_assert(!name_ok(".."));
	ck_assert(!name_ok("../etc"));
	ck_assert(!name_ok("a/../b"));
	ck_assert(!name_ok("a/.."));
	ck_assert(!name_ok("a/../"));
	ck_assert(!name_ok("/abs"));
	ck_assert(!name_ok("/"));
	ck_assert(!name_ok("a//b"));
	ck_assert(!name_ok("dir//"));
	ck_assert(!cpio_name_ok("a\0b", 3));
	memset(longname, 'x', CPIO_NAME_MAX);
	ck_assert(cpio_name_ok(longname, CPIO_NAME_MAX));
	longname[CPIO_NAME_MAX] = 'x';
	ck_assert(!cpio_name_ok(longname, CPIO_NAME_MAX + 1));
}
END_TEST

/* ------------------------------------------------------------ index */

struct index {
	const uint8_t *archive;
	uint8_t b[16384];
	size_t len;
};

/* An index record per member, as the VMM writes them (vmm/initrd_index.c). */
static int index_member(void *ctx, const struct cpio_entry *e)
{
	struct index *x = ctx;
	const uint8_t *hdr = x->archive + e->hdr_off;
	size_t n = (size_t)((const uint8_t *)e->name + e->namelen + 1 - hdr);
	size_t target = (e->mode & 0170000) == 0120000 ? e->size : 0;
	uint64_t off = e->hdr_off;

	ck_assert_uint_le(x->len + CPIO_INDEX_OFF_LEN + n + target + CPIO_INDEX_ALIGN,
	                  sizeof(x->b));
	memcpy(x->b + x->len, &off, sizeof(off));
	memcpy(x->b + x->len + CPIO_INDEX_OFF_LEN, hdr, n);
	memcpy(x->b + x->len + CPIO_INDEX_OFF_LEN + n, e->data, target);
	x->len = ALIGN_UP(x->len + CPIO_INDEX_OFF_LEN + n + target, CPIO_INDEX_ALIGN);
	return 0;
}

static void make_index(const struct ar *a, struct index *x)
{
	memset(x, 0, sizeof(*x));
	x->archive = a->b;
	ck_assert_int_eq(cpio_parse(a->b, a->len, index_member, x, NULL, NULL), 0);
}

START_TEST(test_index_same_members)
{
	struct seen s1 = {0}, s2 = {0};
	struct index x;
	struct ar a;
	const char *err = "unset";

	small_archive(&a);
	a.len = ALIGN_UP(a.len, 512); /* zero padding, then a second archive */
	ar_file(&a, "second", "2");
	ar_trailer(&a);
	make_index(&a, &x);
	ck_assert_int_eq(cpio_parse(a.b, a.len, collect, &s1, NULL, NULL), 0);
	ck_assert_int_eq(cpio_parse_index(a.b, a.len, x.b, x.len, collect, &s2, &err, NULL), 0);
	ck_assert_ptr_null(err);
	ck_assert_int_eq(s2.n, 6);
	ck_assert_int_eq(s1.n, s2.n);
	for (int i = 0; i < s1.n; i++) {
		ck_assert_str_eq(s1.name[i], s2.name[i]);
		ck_assert_uint_eq(s1.e[i].mode, s2.e[i].mode);
		ck_assert_uint_eq(s1.e[i].size, s2.e[i].size);
		ck_assert_uint_eq(s1.e[i].hdr_off, s2.e[i].hdr_off);
		ck_assert_mem_eq(s1.data[i], s2.data[i], s1.e[i].size);
	}
	/* A link's target is read from the index, not the archive. */
	ck_assert_int_eq(find(&s1, "link"), 3);
	memset(a.b + ALIGN_UP(s1.e[3].hdr_off + HDR_LEN + sizeof("link"), 4), 'x', 8);
	s2.n = 0;
	ck_assert_int_eq(cpio_parse_index(a.b, a.len, x.b, x.len, collect, &s2, &err, NULL), 0);
	ck_assert_mem_eq(s2.data[3], "dir/file", 8);
}
END_TEST

START_TEST(test_index_bad)
{
	struct seen s = {0};
	struct index x;
	struct ar a;
	const char *err;
	uint64_t off;
	int boundaries = 0;

	small_archive(&a);
	make_index(&a, &x);
	/* Cut anywhere but between records: refused before any callback. */
	for (size_t n = 1; n < x.len; n++) {
		int r = cpio_parse_index(a.b, a.len, x.b, n, collect, &s, &err, NULL);
		ck_assert_msg(r == 0 || r == -EINVAL, "cut at %zu: %d", n, r);
		if (r)
			ck_assert_int_eq(s.n, 0);
		else
			boundaries++;
		s.n = 0;
	}
	ck_assert_int_eq(boundaries, 4); /* between the 5 records */
	/* A member outside the archive. */
	off = a.len - 10;
	memcpy(x.b, &off, sizeof(off));
	err = NULL;
	ck_assert_int_eq(cpio_parse_index(a.b, a.len, x.b, x.len, collect, &s, &err, NULL),
	                 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "outside the archive"));
	/* Data past the end of the archive: the first member made huge. */
	make_index(&a, &x);
	memcpy(x.b + CPIO_INDEX_OFF_LEN + FIELD_OFF(F_FILESIZE), "00100000", 8);
	ck_assert_int_eq(cpio_parse_index(a.b, a.len, x.b, x.len, collect, &s, &err, NULL),
	                 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "past end of archive"));
	/* A name longer than its record. */
	make_index(&a, &x);
	memcpy(x.b + CPIO_INDEX_OFF_LEN + FIELD_OFF(F_NAMESIZE), "00000100", 8);
	ck_assert_int_eq(cpio_parse_index(a.b, a.len, x.b, CPIO_INDEX_OFF_LEN + HDR_LEN + 8,
	                                  collect, &s, &err, NULL),
	                 -EINVAL);
	ck_assert_int_eq(s.n, 0);
	ck_assert_int_eq(cpio_parse_index(NULL, 0, x.b, x.len, NULL, NULL, &err, NULL), -EINVAL);
}
END_TEST

static Suite *cpio_suite(void)
{
	Suite *s = suite_create("cpio");
	TCase *ok = tcase_create("valid");
	TCase *bad = tcase_create("malformed");
	TCase *real = tcase_create("gnu-cpio");
	TCase *names = tcase_create("names");

	tcase_add_test(ok, test_basic);
	tcase_add_test(ok, test_all_fields);
	tcase_add_test(ok, test_lowercase_hex);
	tcase_add_test(ok, test_crc_ok);
	tcase_add_test(ok, test_crc_symlink_unsummed);
	tcase_add_test(ok, test_callback_stop);
	tcase_add_test(ok, test_validate_only);
	tcase_add_test(ok, test_trailing_zero_padding);
	tcase_add_test(ok, test_concatenated);
	tcase_add_test(bad, test_crc_bad);
	tcase_add_test(bad, test_no_partial_effect);
	tcase_add_test(bad, test_truncated_everywhere);
	tcase_add_test(bad, test_bad_hex);
	tcase_add_test(bad, test_namesize_zero);
	tcase_add_test(bad, test_name_without_nul);
	tcase_add_test(bad, test_name_with_inner_nul);
	tcase_add_test(bad, test_empty_names);
	tcase_add_test(bad, test_filesize_beyond_end);
	tcase_add_test(bad, test_huge_sizes);
	tcase_add_test(bad, test_padding_off_end);
	tcase_add_test(bad, test_missing_trailer);
	tcase_add_test(bad, test_bad_magic);
	tcase_add_test(bad, test_garbage_after_trailer);
	tcase_add_test(bad, test_long_padding_every_offset);
	tcase_add_test(bad, test_random_garbage);
	tcase_add_test(bad, test_mutations);
	tcase_add_test(bad, test_null_args);
	tcase_add_test(ok, test_index_same_members);
	tcase_add_test(bad, test_index_bad);
	tcase_add_checked_fixture(real, make_tree, remove_tree);
	tcase_add_test(real, test_real_cpio);
	tcase_set_timeout(real, 30);
	tcase_add_test(names, test_name_ok);
	suite_add_tcase(s, ok);
	suite_add_tcase(s, bad);
	suite_add_tcase(s, real);
	suite_add_tcase(s, names);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cpio_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
