/* SPDX-License-Identifier: MIT */
/*
 * Snapshot library: round trips of a 256 MiB sparse guest image (eager,
 * per-chunk, template), diff snapshots against a parent, config
 * compatibility, and a file damaged in every way we can think of (flipped
 * bytes, truncation, crafted tables with valid checksums, random damage),
 * each of which must be refused with the right message and never crash.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../snapshot/snap.h"
#include "../../control/sandbox/pause_base.h"

#define MIB       (1ULL << 20)
#define MEM_SIZE  (256 * MIB)
#define NVCPUS    2
#define NDEVS     3
#define CHUNK     (1ULL << SNAP_DEFAULT_CHUNK_SHIFT)
#define ZERO_HOLE 1000 /* a chunk that is written, then zeroed: allocated but zero */

struct image {
	int fd;
	uint8_t *mem;
	uint64_t size;
};

/* Shared by all tests of a tcase (built once, in the unchecked fixture). */
static char dir[64];
static char base_path[128];
static char old_path[128]; /* base_path's memory and state in format version 2 */
static struct image img;
static struct snap_vm_config cfg;
static struct snap_vcpu_state vcpus[NVCPUS];
static struct snap_vm_state vmst;
static uint8_t devdata[NDEVS][3000];
static struct snap_dev_blob devs[NDEVS];
static struct snap_write_stats base_stats;
static uint64_t rng_state = 0x1234567887654321ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static void fill_random(void *p, size_t len)
{
	uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)rnd();
}

static void image_new(struct image *im, uint64_t size)
{
	im->size = size;
	im->fd = memfd_create("snap-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ck_assert_int_ge(im->fd, 0);
	ck_assert_int_eq(ftruncate(im->fd, (off_t)size), 0);
	im->mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, im->fd, 0);
	ck_assert_ptr_ne(im->mem, MAP_FAILED);
}

static void image_free(struct image *im)
{
	munmap(im->mem, im->size);
	close(im->fd);
}

/* Guest-like content: text, pointer-rich heap, random bytes, short pages. */
static void fill_extent(uint8_t *p, size_t len, int kind)
{
	static const char *const words[] = {"the ", "import ", "numpy ", "def ", "return ", "self",
	                                    ".",    "(",       ")\n",    "    ", "kiln ",   "= "};
	size_t i = 0;

	switch (kind) {
	case 0:
		while (i < len) {
			const char *w = words[rnd() % 12];
			size_t n = strlen(w) < len - i ? strlen(w) : len - i;

			memcpy(p + i, w, n);
			i += n;
		}
		break;
	case 1:
		for (; i + 16 <= len; i += 16) {
			uint64_t ptr = 0xffff888000000000ULL + (rnd() % 0x10000000) * 16,
			         cnt = rnd() % 64;

			memcpy(p + i, &ptr, 8);
			memcpy(p + i + 8, &cnt, 8);
		}
		break;
	case 2:
		fill_random(p, len);
		break;
	default:
		for (; i < len; i += 4096)
			fill_random(p + i, 200);
	}
}

static void fill_image(struct image *im, uint64_t touched)
{
	for (uint64_t done = 0; done < touched;) {
		uint64_t len = (1 + rnd() % 128) * 16384;

		if (len > im->size / 4)
			len = im->size / 4;
		uint64_t off = (rnd() % ((im->size - len) / 4096)) * 4096;

		fill_extent(im->mem + off, len, (int)(rnd() % 4));
		done += len;
	}
}

static void make_state(void)
{
	static const uint32_t types[NDEVS] = {3, 4, 19};
	static const uint32_t lens[NDEVS] = {100, 0, 3000};

	memset(&cfg, 0, sizeof(cfg));
	cfg.mem_size = MEM_SIZE;
	cfg.mem_low_size = MEM_SIZE;
	cfg.mem_high_gpa = 0x100000000ULL;
	cfg.nr_vcpus = NVCPUS;
	cfg.nr_devices = NDEVS;
	cfg.boot_version = 1;
	cfg.cpuid_hash = 0xc0ffee;
	cfg.xcr0 = 7;
	snap_image_id_from_buf(&cfg.kernel, "kernel image", 12);
	for (int d = 0; d < NDEVS; d++) {
		cfg.devices[d].type = types[d];
		cfg.devices[d].slot = (uint32_t)d;
		fill_random(devdata[d], sizeof(devdata[d]));
		devs[d] =
		    (struct snap_dev_blob){.version = 7 + d, .data = devdata[d], .len = lens[d]};
	}
	for (int v = 0; v < NVCPUS; v++) {
		fill_random(&vcpus[v], sizeof(vcpus[v]));
		vcpus[v].id = (uint32_t)v;
		vcpus[v].nmsrs = 41;
		vcpus[v].xsave_size = 4096;
		vcpus[v].reserved = vcpus[v].pad = 0;
		for (int m = 0; m < SNAP_MAX_MSRS; m++) {
			vcpus[v].msrs[m].pad = 0;
			if (m >= 41)
				vcpus[v].msrs[m].index = 0, vcpus[v].msrs[m].data = 0;
		}
	}
	fill_random(&vmst, sizeof(vmst));
	vmst.flags = SNAP_VM_HAS_PIT2;
	vmst.late_ram_mib = 0;
}

static struct snap_save save_of(const struct image *im)
{
	return (struct snap_save){.config = &cfg,
	                          .vcpus = vcpus,
	                          .vm = &vmst,
	                          .devs = devs,
	                          .mem = im->mem,
	                          .mem_fd = im->fd,
	                          .no_fsync = true};
}

static void write_ok(const char *path, const struct snap_save *in, struct snap_write_stats *st)
{
	struct snap_err err = {{0}};
	int ret = snap_write(path, in, st, &err);

	ck_assert_msg(ret == 0, "snap_write: %s", err.msg);
}

static struct snap *open_ok(const char *path)
{
	struct snap_err err = {{0}};
	struct snap *s;

	ck_assert_msg(snap_open(path, &s, &err) == 0, "snap_open: %s", err.msg);
	return s;
}

static void big_setup(void)
{
	strcpy(dir, "/tmp/kiln-snaptest-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(base_path, sizeof(base_path), "%s/base.snap", dir);
	make_state();
	image_new(&img, MEM_SIZE);
	fill_image(&img, 40 * MIB);
	memset(img.mem + ZERO_HOLE * CHUNK, 0x5a, CHUNK);
	memset(img.mem + ZERO_HOLE * CHUNK, 0, CHUNK);
	struct snap_save in = save_of(&img);
	struct stat before, after;

	fstat(img.fd, &before);
	write_ok(base_path, &in, &base_stats);
	/* Holes were not read: reading them would have allocated them. */
	fstat(img.fd, &after);
	ck_assert_int_eq(before.st_blocks, after.st_blocks);
	snprintf(old_path, sizeof(old_path), "%s/old.snap", dir);
	in.format = SNAP_FORMAT_V2;
	write_ok(old_path, &in, NULL);
}

static void big_teardown(void)
{
	char cmd[128];

	image_free(&img);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* ------------------------------------------------------------------ basics */

START_TEST(xxh64_vectors)
{
	uint8_t b[100];

	for (int i = 0; i < 100; i++)
		b[i] = (uint8_t)i;
	ck_assert_uint_eq(snap_xxh64("", 0, 0), 0xef46db3751d8e999ULL);
	ck_assert_uint_eq(snap_xxh64("abc", 3, 0), 0x44bc2cf5ad770999ULL);
	ck_assert_uint_eq(snap_xxh64(b, 100, 0), 0x6ac1e58032166597ULL);
	ck_assert_uint_eq(snap_xxh64(b, 100, 1), 0x3d19a3a2098a7023ULL);
	ck_assert_uint_eq(snap_xxh64(b, 31, 0x9E3779B185EBCA87ULL), 0xa3c5ec38a60b7ea1ULL);
}
END_TEST

/* Any cut of the input into pieces hashes like the whole. */
START_TEST(xxh64_pieces)
{
	static const size_t cuts[][3] = {{0, 0, 100},  {1, 30, 100}, {31, 32, 33},
	                                 {32, 64, 96}, {5, 5, 99},   {63, 64, 65}};
	uint8_t b[100];

	for (int i = 0; i < 100; i++)
		b[i] = (uint8_t)(i * 7 + 3);
	for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		struct snap_xxh64_state st;
		size_t prev = 0;

		snap_xxh64_init(&st, 5);
		for (int k = 0; k < 3; k++) {
			snap_xxh64_update(&st, b + prev, cuts[c][k] - prev);
			prev = cuts[c][k];
		}
		ck_assert_uint_eq(snap_xxh64_digest(&st), snap_xxh64(b, prev, 5));
	}
}
END_TEST

START_TEST(chunks_from_pages)
{
	uint64_t pages[4] = {0}, chunks[1] = {0};

	pages[0] = 1ULL << 3;                              /* page 3 -> byte 12 KiB -> chunk 0 */
	pages[1] = 1ULL << 0;                              /* page 64 -> 256 KiB -> chunk 1 */
	pages[3] = 1ULL << 63;                             /* page 255 -> chunk 3 */
	snap_chunks_from_pages(chunks, 18, pages, 250, 0); /* page 255 is past npages */
	ck_assert_uint_eq(chunks[0], 0x3);
	snap_chunks_from_pages(chunks, 18, pages, 256, 1ULL << 30); /* + 4096 chunks */
	ck_assert_uint_eq(chunks[0], 0x3);
	chunks[0] = 0;
	snap_chunks_from_pages(chunks, 18, pages, 256, 0);
	ck_assert_uint_eq(chunks[0], 0xb);
}
END_TEST

/* ------------------------------------------------------------------ round trips */

START_TEST(round_trip_state)
{
	struct snap *s = open_ok(base_path);
	const void *blob;
	uint32_t len, version, type;

	ck_assert(!snap_is_diff(s));
	ck_assert_uint_eq(snap_id(s), base_stats.id);
	ck_assert_int_eq(memcmp(snap_config(s), &cfg, sizeof(cfg)), 0);
	for (unsigned v = 0; v < NVCPUS; v++)
		ck_assert_int_eq(memcmp(snap_vcpu(s, v), &vcpus[v], sizeof(vcpus[v])), 0);
	ck_assert_ptr_null(snap_vcpu(s, NVCPUS));
	ck_assert_int_eq(memcmp(snap_vm(s), &vmst, sizeof(vmst)), 0);
	for (unsigned d = 0; d < NDEVS; d++) {
		ck_assert_int_eq(snap_device(s, d, &blob, &len, &version, &type), 0);
		ck_assert_uint_eq(len, devs[d].len);
		ck_assert_uint_eq(version, devs[d].version);
		ck_assert_uint_eq(type, cfg.devices[d].type);
		ck_assert_int_eq(memcmp(blob, devdata[d], len), 0);
	}
	ck_assert_int_eq(snap_device(s, 5, &blob, &len, NULL, NULL), -ENOENT);
	ck_assert_int_eq(snap_check_compat(s, &cfg, NULL), 0);
	snap_close(s);
}
END_TEST

START_TEST(round_trip_eager)
{
	struct snap *s = open_ok(base_path);
	struct snap_mem_info mi;
	struct snap_err err = {{0}};
	struct image out;

	snap_mem_info(s, &mi);
	ck_assert_uint_eq(mi.nchunks, MEM_SIZE / CHUNK);
	ck_assert_uint_eq(mi.nzero + mi.ndata, mi.nchunks);
	ck_assert_uint_eq(mi.ndata, base_stats.ndata);
	ck_assert_uint_gt(base_stats.nholes, 0);
	ck_assert_uint_gt(base_stats.nzero, base_stats.nholes); /* ZERO_HOLE was read */
	ck_assert_uint_gt(base_stats.nraw, 0);                  /* random extents */
	ck_assert_uint_lt(base_stats.file_size, 30 * MIB);

	image_new(&out, MEM_SIZE);
	ck_assert_msg(snap_restore_mem(s, out.mem, MEM_SIZE, 2, 0, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem, img.mem, MEM_SIZE), 0);
	ck_assert_int_eq(snap_restore_mem(s, out.mem, MEM_SIZE - 1, 2, 0, &err), -EINVAL);
	ck_assert_msg(snap_verify(s, 0, &err) == 0, "%s", err.msg);
	ck_assert_msg(snap_check_chunks(s, 2, &err) == 0, "%s", err.msg);
	image_free(&out);
	snap_close(s);
}
END_TEST

/* SPARSE leaves untouched pages unallocated: the memfd holds about what the
 * guest had, not whole chunks. So does a restore straight into the (empty)
 * memfd with pwrite (_i 1), which writes only non-zero pages. */
START_TEST(round_trip_sparse)
{
	struct snap *s = open_ok(base_path);
	struct snap_err err = {{0}};
	struct stat a, b;
	struct image out;
	int ret;

	image_new(&out, MEM_SIZE);
	if (_i == 0)
		ret = snap_restore_mem(s, out.mem, MEM_SIZE, 0, SNAP_RESTORE_SPARSE, &err);
	else
		ret = snap_restore_file(s, out.fd, 2, &err);
	ck_assert_msg(ret == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem, img.mem, MEM_SIZE), 0);
	fstat(img.fd, &a);
	fstat(out.fd, &b);
	ck_assert_int_le(b.st_blocks, a.st_blocks);
	image_free(&out);
	snap_close(s);
}
END_TEST

START_TEST(round_trip_chunks)
{
	struct snap *s = open_ok(base_path);
	struct snap_chunk_ctx *ctx = snap_chunk_ctx_new(s);
	struct snap_err err = {{0}};
	uint8_t *buf = malloc(CHUNK);

	for (uint64_t i = 0; i < MEM_SIZE / CHUNK; i++) {
		int ret = snap_read_chunk(s, i % 7 ? ctx : NULL, i, buf, &err);

		ck_assert_msg(ret >= 0, "%s", err.msg);
		if (ret == SNAP_CHUNK_ZERO)
			ck_assert(snap_xxh64(img.mem + i * CHUNK, CHUNK, 0) ==
			          snap_xxh64(memset(buf, 0, CHUNK), CHUNK, 0));
		else
			ck_assert_int_eq(memcmp(buf, img.mem + i * CHUNK, CHUNK), 0);
	}
	ck_assert_int_eq(snap_read_chunk(s, ctx, ZERO_HOLE, buf, &err), SNAP_CHUNK_ZERO);
	ck_assert_int_eq(snap_read_chunk(s, ctx, MEM_SIZE / CHUNK, buf, &err), -EINVAL);
	free(buf);
	snap_chunk_ctx_free(ctx);
	snap_close(s);
}
END_TEST

/* A sealed template memfd: clones map it MAP_PRIVATE and write privately. */
START_TEST(template_memfd)
{
	struct snap *s = open_ok(base_path);
	struct snap_err err = {{0}};
	int fd = memfd_create("tmpl", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	uint8_t *clone, *again;

	ck_assert_msg(snap_restore_template(s, fd, 0, true, &err) == 0, "%s", err.msg);
	clone = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ck_assert_ptr_ne(clone, MAP_FAILED);
	ck_assert_int_eq(memcmp(clone, img.mem, MEM_SIZE), 0);
	clone[12345] ^= 0xff; /* copy-on-write, the template is untouched */
	again = mmap(NULL, MEM_SIZE, PROT_READ, MAP_PRIVATE, fd, 0);
	ck_assert_uint_eq(again[12345], img.mem[12345]);
	ck_assert_ptr_eq(mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
	                 MAP_FAILED);
	munmap(clone, MEM_SIZE);
	munmap(again, MEM_SIZE);
	close(fd);
	snap_close(s);
}
END_TEST

/* Odd sizes: a short last chunk, other chunk sizes, no memfd. */
START_TEST(odd_sizes)
{
	static const unsigned shifts[] = {16, 22};
	struct snap_vm_config saved = cfg;
	struct snap_err err = {{0}};
	char path[160];

	for (unsigned k = 0; k < 2; k++) {
		struct image in, out;
		struct snap_save sv;
		struct snap *s;

		image_new(&in, MIB + 3 * 4096);
		fill_image(&in, 300 * 1024);
		cfg = saved;
		cfg.mem_size = cfg.mem_low_size = in.size;
		cfg.nr_devices = k; /* 0: the smallest snapshot, 4 sections */
		memset(&cfg.devices[k], 0, sizeof(cfg.devices) - k * sizeof(cfg.devices[0]));
		cfg.nr_vcpus = 1;
		sv = save_of(&in);
		sv.mem_fd = -1;
		sv.chunk_shift = shifts[k];
		sv.threads = 3;
		snprintf(path, sizeof(path), "%s/odd%u.snap", dir, k);
		write_ok(path, &sv, NULL);
		s = open_ok(path);
		ck_assert_uint_eq(snap_chunk_len(s, (in.size - 1) >> shifts[k]),
		                  in.size % (1ULL << shifts[k]));
		image_new(&out, in.size);
		ck_assert_msg(snap_restore_mem(s, out.mem, in.size, 2, 0, &err) == 0, "%s",
		              err.msg);
		ck_assert_int_eq(memcmp(out.mem, in.mem, in.size), 0);
		snap_close(s);
		image_free(&in);
		image_free(&out);
	}
	cfg = saved;
}
END_TEST

/* ------------------------------------------------------------------ diffs */

/* Anonymous memory (kiln-vmm --mem-backing thp): the caller's bitmap says
 * which pages may hold data; the others are known zero and never read. */
START_TEST(page_bitmap)
{
	struct snap_vm_config saved = cfg;
	uint64_t pages[(4 * MIB / 4096 + 63) / 64] = {0};
	struct snap_write_stats st;
	struct snap_err err = {{0}};
	struct image in, out;
	struct snap_save sv;
	struct snap *s;
	char path[160];

	image_new(&in, 4 * MIB);
	fill_random(in.mem + 5 * 4096, 4096);
	fill_random(in.mem + 700 * 4096, 3 * 4096);
	memset(in.mem + 300 * 4096, 0x77, 4096); /* not in the bitmap */
	pages[0] = 1ULL << 5;
	pages[700 / 64] = 7ULL << (700 % 64);
	cfg.mem_size = cfg.mem_low_size = in.size;
	sv = save_of(&in);
	sv.mem_fd = -1;
	sv.mem_pages = pages;
	sv.chunk_shift = 16;
	snprintf(path, sizeof(path), "%s/bitmap.snap", dir);
	write_ok(path, &sv, &st);
	ck_assert_uint_eq(st.ndata, 2);
	ck_assert_uint_eq(st.nholes, 4 * MIB / 65536 - 2);
	s = open_ok(path);
	image_new(&out, in.size);
	ck_assert_msg(snap_restore_mem(s, out.mem, in.size, 2, 0, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem + 5 * 4096, in.mem + 5 * 4096, 4096), 0);
	ck_assert_int_eq(memcmp(out.mem + 700 * 4096, in.mem + 700 * 4096, 3 * 4096), 0);
	ck_assert_int_eq(out.mem[300 * 4096], 0);
	snap_close(s);
	image_free(&in);
	image_free(&out);
	cfg = saved;
}
END_TEST

static uint64_t *dirty_chunks_of(const uint64_t *pages)
{
	uint64_t *chunks = calloc(MEM_SIZE / CHUNK / 64 + 1, 8);

	snap_chunks_from_pages(chunks, SNAP_DEFAULT_CHUNK_SHIFT, pages, MEM_SIZE / 4096, 0);
	return chunks;
}

/* Change a few pages of src into dst: new data, and one data chunk zeroed. */
static uint64_t *mutate(struct image *dst, const struct image *src, uint64_t seed_chunk)
{
	uint64_t *pages = calloc(MEM_SIZE / 4096 / 64, 8);

	memcpy(dst->mem, src->mem, MEM_SIZE);
	for (int k = 0; k < 6; k++) {
		uint64_t pg = rnd() % (MEM_SIZE / 4096);

		fill_random(dst->mem + pg * 4096, 4096);
		pages[pg / 64] |= 1ULL << (pg % 64);
	}
	for (uint64_t c = seed_chunk; c < MEM_SIZE / CHUNK; c++) {
		if (snap_xxh64(dst->mem + c * CHUNK, CHUNK, 0) ==
		    snap_xxh64(img.mem + ZERO_HOLE * CHUNK, CHUNK, 0))
			continue; /* already zero */
		memset(dst->mem + c * CHUNK, 0, CHUNK);
		for (uint64_t pg = c * CHUNK / 4096; pg < (c + 1) * CHUNK / 4096; pg++)
			pages[pg / 64] |= 1ULL << (pg % 64);
		break;
	}
	return pages;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	return p[0] == 0 && memcmp(p, p + 1, n - 1) == 0;
}

/* A second snapshot of memory that changed a little, with the first as
 * ref: unchanged chunks are copied, not compressed, and it restores to the
 * new memory; the same memory again reuses every data chunk. */
START_TEST(reuse_ref)
{
	struct snap *base = open_ok(base_path), *s;
	struct snap_write_stats st, st2;
	struct snap_err err = {{0}};
	struct image now, out;
	struct snap_save sv;
	char path[160], path2[160];
	uint64_t *pages;

	image_new(&now, MEM_SIZE);
	pages = mutate(&now, &img, 300);
	free(pages);
	sv = save_of(&now);
	sv.ref = base;
	snprintf(path, sizeof(path), "%s/reuse.snap", dir);
	write_ok(path, &sv, &st);
	ck_assert_uint_gt(st.nreused, st.ndata - 8);
	ck_assert_uint_lt(st.nreused, st.ndata);
	s = open_ok(path);
	image_new(&out, MEM_SIZE);
	ck_assert_msg(snap_restore_file(s, out.fd, 2, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem, now.mem, MEM_SIZE), 0);
	ck_assert_msg(snap_verify(s, 0, &err) == 0, "%s", err.msg);
	/* The same memory against the new file: everything reused. */
	sv.ref = s;
	snprintf(path2, sizeof(path2), "%s/reuse2.snap", dir);
	write_ok(path2, &sv, &st2);
	ck_assert_uint_eq(st2.nreused, st2.ndata);
	ck_assert_uint_eq(st2.file_size, st.file_size);
	image_free(&out);
	image_free(&now);
	snap_close(s);
	snap_close(base);
	unlink(path);
	unlink(path2);
}
END_TEST

/* With the pages written since ref (snap_save.written), the chunks none
 * of them touch are ref's, copied unread; the file restores to the new
 * memory. A write the bitmap leaves out is refused under check_written,
 * and without the check it is what the caller vouched for: ref's chunk. */
START_TEST(written_pages)
{
	struct snap *base = open_ok(base_path), *s;
	struct snap_write_stats st;
	struct snap_err err = {{0}};
	struct image now, out;
	struct snap_save sv;
	char path[160];
	uint64_t *pages, *chunks, nwritten = 0, pg;

	image_new(&now, MEM_SIZE);
	pages = mutate(&now, &img, 300);
	chunks = dirty_chunks_of(pages);
	for (uint64_t c = 0; c < MEM_SIZE / CHUNK; c++)
		nwritten += (chunks[c / 64] >> (c % 64)) & 1;
	sv = save_of(&now);
	sv.ref = base;
	sv.written = pages;
	snprintf(path, sizeof(path), "%s/written.snap", dir);
	write_ok(path, &sv, &st);
	ck_assert_uint_eq(st.nunwritten, MEM_SIZE / CHUNK - nwritten);
	s = open_ok(path);
	image_new(&out, MEM_SIZE);
	ck_assert_msg(snap_restore_file(s, out.fd, 2, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem, now.mem, MEM_SIZE), 0);
	snap_close(s);
	/* Checked: every chunk is read, none is taken unread. */
	sv.check_written = true;
	write_ok(path, &sv, &st);
	ck_assert_uint_eq(st.nunwritten, 0);
	/* A page changed behind the bitmap's back, in a data chunk no marked
	 * page touches. */
	for (pg = 0; pg < MEM_SIZE / 4096; pg++)
		if (!((chunks[pg * 4096 / CHUNK / 64] >> (pg * 4096 / CHUNK % 64)) & 1) &&
		    !all_zero(now.mem + pg * 4096, 4096))
			break;
	ck_assert_uint_lt(pg, MEM_SIZE / 4096);
	now.mem[pg * 4096] ^= 0x5a;
	ck_assert_int_lt(snap_write(path, &sv, &st, &err), 0);
	ck_assert_msg(strstr(err.msg, "though no write to it was tracked"), "%s", err.msg);
	image_free(&out);
	image_free(&now);
	free(chunks);
	free(pages);
	snap_close(base);
	unlink(path);
}
END_TEST

/* A lazy restore still loading: the memfd holds some of the base's chunks
 * (loaded), pages of others (touched), and pages the guest wrote since;
 * the rest are holes that are the base's memory, not zero. The snapshot
 * must be that memory, and must not touch a single hole (through the
 * mapping that would fault on userfaultfd; here it would allocate it). */
START_TEST(lazy_holes)
{
	struct snap *base = open_ok(base_path), *s;
	struct snap_write_stats st;
	struct snap_err err = {{0}};
	struct image lazy, want, out;
	struct stat before, after;
	struct snap_save sv;
	uint64_t *loaded = calloc(MEM_SIZE / CHUNK / 64 + 1, 8);
	char path[160];
	uint64_t n = 0;

	image_new(&lazy, MEM_SIZE);
	image_new(&want, MEM_SIZE);
	memcpy(want.mem, img.mem, MEM_SIZE);
	for (uint64_t c = 0; c < MEM_SIZE / CHUNK; c++) {
		uint64_t o = c * CHUNK;

		if (all_zero(img.mem + o, CHUNK) && c % 5)
			continue;
		switch (n++ % 5) {
		case 0: /* loaded whole */
			ck_assert_int_eq(pwrite(lazy.fd, img.mem + o, CHUNK, (off_t)o),
			                 (ssize_t)CHUNK);
			break;
		case 4: /* loaded without its zero pages, and said so: a hole
		         * there is zero, whatever ref holds (page 0 is left
		         * out, and zero in want) */
			memset(want.mem + o, 0, 4096);
			for (uint64_t p = 4096; p < CHUNK; p += 4096)
				if (!all_zero(img.mem + o + p, 4096))
					ck_assert_int_eq(
					    pwrite(lazy.fd, img.mem + o + p, 4096, (off_t)(o + p)),
					    4096);
			loaded[c / 64] |= 1ULL << (c % 64);
			break;
		case 1: /* two pages touched, one of them written since */
			ck_assert_int_eq(
			    pwrite(lazy.fd, img.mem + o + 8192, 8192, (off_t)(o + 8192)), 8192);
			fill_random(want.mem + o + 12288, 100);
			ck_assert_int_eq(
			    pwrite(lazy.fd, want.mem + o + 12288, 4096, (off_t)(o + 12288)), 4096);
			break;
		case 2: /* not loaded */
			break;
		default: /* loaded, then a page zeroed by the guest */
			memset(want.mem + o + 4096, 0, 4096);
			ck_assert_int_eq(pwrite(lazy.fd, want.mem + o, CHUNK, (off_t)o),
			                 (ssize_t)CHUNK);
		}
	}
	sv = save_of(&lazy);
	sv.ref = base;
	sv.holes_from_ref = true;
	sv.loaded = loaded;
	snprintf(path, sizeof(path), "%s/lazy.snap", dir);
	fstat(lazy.fd, &before);
	write_ok(path, &sv, &st);
	fstat(lazy.fd, &after);
	ck_assert_int_eq(before.st_blocks, after.st_blocks);
	ck_assert_uint_gt(st.nreused, 0);
	s = open_ok(path);
	image_new(&out, MEM_SIZE);
	ck_assert_msg(snap_restore_file(s, out.fd, 2, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem, want.mem, MEM_SIZE), 0);
	ck_assert_msg(snap_verify(s, 0, &err) == 0, "%s", err.msg);
	/* Without the memfd or with another chunk size it is refused. */
	sv.mem_fd = -1;
	ck_assert_int_eq(snap_write(path, &sv, NULL, &err), -EINVAL);
	sv.mem_fd = lazy.fd;
	sv.chunk_shift = 16;
	ck_assert_int_eq(snap_write(path, &sv, NULL, &err), -EINVAL);
	image_free(&out);
	image_free(&want);
	image_free(&lazy);
	free(loaded);
	snap_close(s);
	snap_close(base);
	unlink(path);
}
END_TEST

/* A template clone: a private mapping of the template's memory, with the
 * pages it wrote in a bitmap; the others are the template snapshot's and
 * are taken from it, never read (reading would allocate the template
 * file's holes). */
START_TEST(clone_pages)
{
	struct snap *base = open_ok(base_path), *s;
	uint64_t *own = calloc(MEM_SIZE / 4096 / 64, 8);
	struct snap_write_stats st;
	struct snap_err err = {{0}};
	struct stat before, after;
	struct snap_save sv;
	struct image out;
	uint8_t *clone;
	char path[160];

	clone = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, img.fd, 0);
	ck_assert_ptr_ne(clone, MAP_FAILED);
	for (int k = 0; k < 40; k++) {
		uint64_t pg = rnd() % (MEM_SIZE / 4096);

		fill_random(clone + pg * 4096, k % 3 ? 4096 : 100);
		own[pg / 64] |= 1ULL << (pg % 64);
	}
	sv = save_of(&img);
	sv.mem = clone;
	sv.mem_fd = -1;
	sv.mem_pages = own;
	sv.ref = base;
	sv.holes_from_ref = true;
	snprintf(path, sizeof(path), "%s/clone.snap", dir);
	fstat(img.fd, &before);
	write_ok(path, &sv, &st);
	fstat(img.fd, &after);
	ck_assert_int_eq(before.st_blocks, after.st_blocks);
	ck_assert_uint_gt(st.nreused, st.ndata / 2);
	s = open_ok(path);
	image_new(&out, MEM_SIZE);
	ck_assert_msg(snap_restore_file(s, out.fd, 2, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem, clone, MEM_SIZE), 0);
	image_free(&out);
	munmap(clone, MEM_SIZE);
	free(own);
	snap_close(s);
	snap_close(base);
	unlink(path);
}
END_TEST

START_TEST(diff_round_trip)
{
	struct snap_err err = {{0}};
	struct snap_write_stats st;
	struct image child, out, child2;
	struct snap *parent = open_ok(base_path), *d, *d2;
	uint64_t *pages = NULL, *chunks, *pages2, *chunks2;
	char path[160], path2[160];
	uint8_t *buf = malloc(CHUNK);
	struct snap_save sv;
	uint64_t absent = 0;

	image_new(&child, MEM_SIZE);
	pages = mutate(&child, &img, 300);
	chunks = dirty_chunks_of(pages);
	sv = save_of(&child);
	sv.dirty_chunks = chunks;
	ck_assert_int_eq(snap_write("/nonexistent", &sv, NULL, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "needs both parent and dirty map"));
	sv.parent = parent;
	snprintf(path, sizeof(path), "%s/diff.snap", dir);
	write_ok(path, &sv, &st);
	ck_assert_uint_ge(st.nabsent, MEM_SIZE / CHUNK - 7);
	ck_assert_uint_lt(st.file_size, 2 * MIB);

	d = open_ok(path);
	ck_assert(snap_is_diff(d));
	ck_assert_uint_eq(snap_header(d)->parent_id, snap_id(parent));
	/* Without its parent: refused, absent chunks are -ENOENT. */
	image_new(&out, MEM_SIZE);
	ck_assert_int_eq(snap_restore_mem(d, out.mem, MEM_SIZE, 0, 0, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "needs its parent attached"));
	for (uint64_t i = 0; i < MEM_SIZE / CHUNK; i++)
		absent += snap_read_chunk(d, NULL, i, buf, &err) == -ENOENT;
	ck_assert_uint_eq(absent, st.nabsent);
	/* Onto the parent's memory, only its own chunks. */
	memcpy(out.mem, img.mem, MEM_SIZE);
	ck_assert_msg(snap_restore_mem(d, out.mem, MEM_SIZE, 0, SNAP_RESTORE_PRESENT_ONLY, &err) ==
	                  0,
	              "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem, child.mem, MEM_SIZE), 0);
	memcpy(out.mem, img.mem, MEM_SIZE);
	ck_assert_int_eq(snap_restore_mem(d, out.mem, MEM_SIZE, 0,
	                                  SNAP_RESTORE_PRESENT_ONLY | SNAP_RESTORE_SPARSE, &err),
	                 0);
	ck_assert_int_eq(memcmp(out.mem, child.mem, MEM_SIZE), 0);
	image_free(&out);
	/* Attached: the chain resolves every chunk. */
	ck_assert_msg(snap_attach_parent(d, parent, &err) == 0, "%s", err.msg);
	image_new(&out, MEM_SIZE);
	ck_assert_msg(snap_restore_mem(d, out.mem, MEM_SIZE, 0, 0, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem, child.mem, MEM_SIZE), 0);
	image_free(&out);
	for (uint64_t i = 0; i < MEM_SIZE / CHUNK; i++)
		if (snap_read_chunk(d, NULL, i, buf, &err) == SNAP_CHUNK_DATA)
			ck_assert_int_eq(memcmp(buf, child.mem + i * CHUNK, CHUNK), 0);

	/* A diff of the diff: a chain of three. */
	image_new(&child2, MEM_SIZE);
	pages2 = mutate(&child2, &child, 700);
	chunks2 = dirty_chunks_of(pages2);
	sv = save_of(&child2);
	sv.parent = d;
	sv.dirty_chunks = chunks2;
	snprintf(path2, sizeof(path2), "%s/diff2.snap", dir);
	write_ok(path2, &sv, NULL);
	d2 = open_ok(path2);
	ck_assert_int_eq(snap_attach_parent(d2, parent, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "parent mismatch"));
	ck_assert_int_eq(snap_attach_parent(parent, d, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "not a diff snapshot"));
	ck_assert_int_eq(snap_attach_parent(d2, d, &err), 0);
	image_new(&out, MEM_SIZE);
	ck_assert_msg(snap_restore_template(d2, out.fd, 2, false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem, child2.mem, MEM_SIZE), 0);

	image_free(&out);
	image_free(&child);
	image_free(&child2);
	snap_close(d2);
	snap_close(d);
	snap_close(parent);
	free(pages);
	free(pages2);
	free(chunks);
	free(chunks2);
	free(buf);
}
END_TEST

/* ------------------------------------------------------------------ compat */

START_TEST(compat)
{
	struct snap *s = open_ok(base_path);
	struct snap_err err = {{0}};
	struct snap_vm_config want = cfg;

	ck_assert_int_eq(snap_check_compat(s, &want, &err), 0);
	snap_image_id_from_buf(&want.kernel, "another kernel", 14);
	ck_assert_int_eq(snap_check_compat(s, &want, &err), -EINVAL);
	ck_assert_msg(
	    strstr(err.msg, "kernel image differs: snapshot was taken with 12 bytes, xxh64:"), "%s",
	    err.msg);
	ck_assert_ptr_nonnull(strstr(err.msg, base_path));
	want = cfg;
	snap_image_id_from_buf(&want.initrd, "cpio", 4);
	ck_assert_int_eq(snap_check_compat(s, &want, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "initramfs differs"));
	want = cfg;
	want.mem_size = want.mem_low_size = 512 * MIB;
	ck_assert_int_eq(snap_check_compat(s, &want, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "memory differs: snapshot has 256 MiB"), "%s", err.msg);
	want = cfg;
	want.nr_vcpus = 4;
	ck_assert_int_eq(snap_check_compat(s, &want, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "vCPUs differ: snapshot has 2, this VM 4"));
	want = cfg;
	want.devices[2].type = 2;
	ck_assert_int_eq(snap_check_compat(s, &want, &err), -EINVAL);
	ck_assert_msg(
	    strstr(err.msg, "device slot 2 differs: snapshot has vsock (type 19), this VM blk"),
	    "%s", err.msg);
	want = cfg;
	want.cpuid_hash++;
	ck_assert_int_eq(snap_check_compat(s, &want, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "CPU differs"));
	snap_close(s);
}
END_TEST

/* ------------------------------------------------------------------ damage */

struct fbuf {
	uint8_t *p;
	size_t len;
};

static struct fbuf load_file(const char *path)
{
	struct fbuf f;
	struct stat st;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	fstat(fd, &st);
	f.len = (size_t)st.st_size;
	f.p = malloc(f.len + 16);
	ck_assert_int_eq(pread(fd, f.p, f.len, 0), (ssize_t)f.len);
	close(fd);
	return f;
}

static void store_file(const char *path, const void *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, p, len), (ssize_t)len);
	close(fd);
}

static struct snap_header *hdr_of(struct fbuf *f)
{
	return (struct snap_header *)f->p;
}

static struct snap_section *sec_of(struct fbuf *f, uint32_t type, uint32_t instance)
{
	struct snap_section *t = (struct snap_section *)(f->p + hdr_of(f)->section_table_offset);

	for (uint32_t i = 0; i < hdr_of(f)->nsections; i++)
		if (t[i].type == type && t[i].instance == instance)
			return &t[i];
	ck_abort_msg("no section %u/%u", type, instance);
	return NULL;
}

/* Recompute the checksums a crafted change broke: payload, table, header. */
static void reseal(struct fbuf *f, struct snap_section *sec)
{
	struct snap_header *h = hdr_of(f);

	if (sec)
		sec->checksum = snap_xxh64(f->p + sec->offset, sec->length, 0);
	h->table_checksum =
	    snap_xxh64(f->p + h->section_table_offset, h->nsections * sizeof(*sec), 0);
	h->checksum = 0;
	h->checksum = snap_xxh64(h, sizeof(*h), 0);
}

static void expect_refused(const char *path, const char *want)
{
	struct snap_err err = {{0}};
	struct snap *s = NULL;
	int ret = snap_open(path, &s, &err);

	if (ret == 0)
		snap_close(s);
	ck_assert_msg(ret < 0, "%s: opened, expected \"%s\"", path, want);
	ck_assert_msg(strstr(err.msg, want) && strstr(err.msg, path), "got \"%s\", want \"%s\"",
	              err.msg, want);
	if (getenv("SNAP_TEST_VERBOSE"))
		printf("  refused: %s\n", err.msg);
}

/* One damaged copy of the base snapshot per case. */
enum {
	D_MAGIC,
	D_VERSION,
	D_OLD_VERSION,
	D_ARCH,
	D_HDR_BYTE,
	D_HDR_CONFIG,
	D_HDR_CSUM,
	D_TABLE,
	D_VCPU,
	D_VM,
	D_DEVICE,
	D_INDEX,
	D_TRUNC_0,
	D_TRUNC_HDR,
	D_TRUNC_TABLE,
	D_TRUNC_VCPU,
	D_TRUNC_DATA,
	D_TRUNC_INDEX,
	D_TRAILING,
	D_C_TYPE,
	D_C_OVERLAP,
	D_C_DUP_VCPU,
	D_C_DEV_SLOT,
	D_C_VCPU_VERSION,
	D_C_NVCPUS,
	D_C_NMSRS,
	D_C_DIFF,
	D_C_FILESIZE,
	D_C_CHUNK_OUT,
	D_C_CHUNK_ORDER,
	D_C_ZERO_BIT,
	D_C_NCHUNKS,
	D_COUNT
};

static const char *const damage_msg[D_COUNT] = {
    [D_MAGIC] = "not a kiln snapshot (bad magic)",
    [D_VERSION] = "format version 4 not supported (this build reads versions 2 and 3): a "
                  "newer kiln",
    [D_OLD_VERSION] = "format version 1 not supported (this build reads versions 2 and 3): an "
                      "older kiln wrote it",
    [D_ARCH] = "architecture 2 is not x86-64",
    [D_HDR_BYTE] = "header checksum mismatch",
    [D_HDR_CONFIG] = "header checksum mismatch",
    [D_HDR_CSUM] = "header checksum mismatch",
    [D_TABLE] = "section table checksum mismatch",
    [D_VCPU] = "section 1 (vcpu 1): checksum mismatch",
    [D_VM] = "section 2 (vm): checksum mismatch",
    [D_DEVICE] = "section 5 (device 2): checksum mismatch",
    [D_INDEX] = "section 7 (memory index): checksum mismatch",
    [D_TRUNC_0] = "truncated at byte 0: header needs 608 bytes",
    [D_TRUNC_HDR] = "truncated at byte 300: header needs 608 bytes",
    [D_TRUNC_TABLE] = "truncated at byte 700: section table needs 928 bytes",
    [D_TRUNC_VCPU] = ": section 0 (vcpu 0) needs bytes [",
    [D_TRUNC_DATA] = ": section 6 (memory data) needs bytes [",
    [D_TRUNC_INDEX] = ": section 7 (memory index) needs bytes [",
    [D_TRAILING] = "trailing data",
    [D_C_TYPE] = "section 3: unknown type 9",
    [D_C_OVERLAP] = "section 1 (vcpu 1): bytes [",
    [D_C_DUP_VCPU] = "section 1 (vcpu 0): unexpected",
    [D_C_DEV_SLOT] = "section 5 (device 7): unexpected",
    [D_C_VCPU_VERSION] = "section 0 (vcpu 0): version 2 not supported (this build reads 1)",
    [D_C_NVCPUS] = "config: 0 vCPUs",
    [D_C_NMSRS] = "vcpu 0: 65 MSRs (max 64)",
    [D_C_DIFF] = "diff flag and parent id disagree",
    [D_C_FILESIZE] = ": file should be ",
    [D_C_CHUNK_OUT] = "outside the memory data section",
    [D_C_CHUNK_ORDER] = "overlaps or precedes the chunk before it",
    [D_C_ZERO_BIT] = "has an entry but no data",
    [D_C_NCHUNKS] = "memory index: 1025 chunks, memory needs 1024",
};

/* The index's parts inside the buffer. */
static struct snap_chunk *chunk_entries(struct fbuf *f, struct snap_mem_index **mi, uint64_t **zero)
{
	struct snap_section *ix = sec_of(f, SNAP_SEC_MEM_INDEX, 0);
	uint64_t words = (MEM_SIZE / CHUNK + 63) / 64;

	*mi = (struct snap_mem_index *)(f->p + ix->offset);
	*zero = (uint64_t *)(f->p + ix->offset + sizeof(**mi) + words * 8);
	return (struct snap_chunk *)(f->p + ix->offset + sizeof(**mi) + 2 * words * 8);
}

/* Index of the k-th data chunk. */
static uint64_t data_chunk(struct snap_chunk *c, int k)
{
	for (uint64_t i = 0; i < MEM_SIZE / CHUNK; i++)
		if (c[i].stored_len && k-- == 0)
			return i;
	ck_abort_msg("no data chunk");
	return 0;
}

/* The cases on a version 2 file (what kiln wrote before): still read, and
 * still checked as strictly. */
START_TEST(damaged)
{
	struct fbuf f = load_file(old_path);
	struct snap_header *h = hdr_of(&f);
	struct snap_section *sec;
	struct snap_mem_index *mi;
	struct snap_chunk *ch;
	uint64_t *zero, i;
	size_t len = f.len;
	char path[160];

	switch (_i) {
	case D_MAGIC:
		f.p[3] ^= 0x20;
		break;
	case D_VERSION:
		h->version = 4;
		break;
	case D_OLD_VERSION:
		h->version = 1;
		break;
	case D_ARCH:
		h->arch = 2;
		reseal(&f, NULL);
		break;
	case D_HDR_BYTE:
		f.p[40] ^= 1;
		break;
	case D_HDR_CONFIG:
		h->config.kernel.digest[3] ^= 0x80;
		break;
	case D_HDR_CSUM:
		f.p[offsetof(struct snap_header, checksum)] ^= 1;
		break;
	case D_TABLE:
		f.p[sizeof(*h) + 40 + 9] ^= 4;
		break;
	case D_VCPU:
		f.p[sec_of(&f, SNAP_SEC_VCPU, 1)->offset + 5000] ^= 1;
		break;
	case D_VM:
		f.p[sec_of(&f, SNAP_SEC_VM, 0)->offset + 100] ^= 1;
		break;
	case D_DEVICE:
		f.p[sec_of(&f, SNAP_SEC_DEVICE, 2)->offset + 2999] ^= 1;
		break;
	case D_INDEX:
		f.p[sec_of(&f, SNAP_SEC_MEM_INDEX, 0)->offset + 9000] ^= 1;
		break;
	case D_TRUNC_0:
		len = 0;
		break;
	case D_TRUNC_HDR:
		len = 300;
		break;
	case D_TRUNC_TABLE:
		len = 700;
		break;
	case D_TRUNC_VCPU:
		len = sec_of(&f, SNAP_SEC_VCPU, 0)->offset + 77;
		break;
	case D_TRUNC_DATA:
		len = sec_of(&f, SNAP_SEC_MEM_DATA, 0)->offset + 5 * MIB;
		break;
	case D_TRUNC_INDEX:
		len = f.len - 10;
		break;
	case D_TRAILING:
		f.p[len++] = 0;
		break;
	case D_C_TYPE:
		sec_of(&f, SNAP_SEC_DEVICE, 0)->type = 9;
		reseal(&f, NULL);
		break;
	case D_C_OVERLAP:
		sec_of(&f, SNAP_SEC_VCPU, 1)->offset -= 64;
		reseal(&f, NULL);
		break;
	case D_C_DUP_VCPU:
		sec_of(&f, SNAP_SEC_VCPU, 1)->instance = 0;
		reseal(&f, NULL);
		break;
	case D_C_DEV_SLOT:
		sec_of(&f, SNAP_SEC_DEVICE, 2)->instance = 7;
		reseal(&f, NULL);
		break;
	case D_C_VCPU_VERSION:
		sec_of(&f, SNAP_SEC_VCPU, 0)->version = 2;
		reseal(&f, NULL);
		break;
	case D_C_NVCPUS:
		h->config.nr_vcpus = 0;
		reseal(&f, NULL);
		break;
	case D_C_NMSRS:
		sec = sec_of(&f, SNAP_SEC_VCPU, 0);
		((struct snap_vcpu_state *)(f.p + sec->offset))->nmsrs = 65;
		reseal(&f, sec);
		break;
	case D_C_DIFF:
		h->flags |= SNAP_F_DIFF;
		reseal(&f, NULL);
		break;
	case D_C_FILESIZE:
		h->file_size += 4096;
		reseal(&f, NULL);
		break;
	case D_C_CHUNK_OUT:
	case D_C_CHUNK_ORDER:
	case D_C_ZERO_BIT:
	case D_C_NCHUNKS:
		ch = chunk_entries(&f, &mi, &zero);
		i = data_chunk(ch, 10);
		if (_i == D_C_CHUNK_OUT)
			ch[i].offset = f.len - 100;
		else if (_i == D_C_CHUNK_ORDER)
			ch[i].offset = ch[data_chunk(ch, 9)].offset + 1;
		else if (_i == D_C_ZERO_BIT)
			zero[i / 64] |= 1ULL << (i % 64);
		else
			mi->nchunks++;
		reseal(&f, sec_of(&f, SNAP_SEC_MEM_INDEX, 0));
		break;
	}
	snprintf(path, sizeof(path), "%s/damaged-%d.snap", dir, _i);
	store_file(path, f.p, len);
	expect_refused(path, damage_msg[_i]);
	unlink(path);
	free(f.p);
}
END_TEST

/* Late RAM the guest never asked for (SNAP_VM_LATE_RAM): kept as written
 * where it fits the RAM, refused where it does not, or when the VM state
 * is of version 1, which had no such flag. */
enum { L_OK, L_ZERO, L_ODD, L_ALL, L_NOFLAG, L_V1, L_COUNT };

START_TEST(late_ram)
{
	static const uint32_t mib[L_COUNT] = {68, 0, 67, MEM_SIZE / MIB, 68, 68};
	struct snap_vm_state keep = vmst;
	struct snap_save in = save_of(&img);
	char path[160];
	struct fbuf f;
	struct snap *s;

	vmst.flags = _i == L_NOFLAG ? 0 : SNAP_VM_LATE_RAM;
	vmst.late_ram_mib = mib[_i];
	in.format = SNAP_FORMAT_V2;
	snprintf(path, sizeof(path), "%s/late-%d.snap", dir, _i);
	write_ok(path, &in, NULL);
	if (_i == L_V1) {
		f = load_file(path);
		sec_of(&f, SNAP_SEC_VM, 0)->version = SNAP_VM_STATE_V1;
		reseal(&f, NULL);
		store_file(path, f.p, f.len);
		free(f.p);
	}
	if (_i == L_OK) {
		s = open_ok(path);
		ck_assert_uint_eq(snap_vm(s)->flags, SNAP_VM_LATE_RAM);
		ck_assert_uint_eq(snap_vm(s)->late_ram_mib, 68);
		snap_close(s);
	} else {
		expect_refused(path, _i == L_V1 ? "unknown flags" : "late RAM");
	}
	unlink(path);
	vmst = keep;
}
END_TEST

/* A flipped chunk byte passes open (chunks are read lazily) but nothing
 * that reads the chunk accepts it. */
START_TEST(damaged_chunk)
{
	struct fbuf f = load_file(base_path);
	struct snap_err err = {{0}};
	struct snap_mem_index *mi;
	struct snap_chunk *ch;
	struct image out;
	uint64_t *zero, i;
	struct snap *s;
	char path[160], want[64];
	uint8_t *buf = malloc(CHUNK);

	ch = chunk_entries(&f, &mi, &zero);
	i = data_chunk(ch, 20);
	f.p[ch[i].offset + ch[i].stored_len / 2] ^= 0x10;
	snprintf(path, sizeof(path), "%s/badchunk.snap", dir);
	store_file(path, f.p, f.len);
	snprintf(want, sizeof(want), "chunk %llu: checksum mismatch", (unsigned long long)i);

	s = open_ok(path);
	ck_assert_int_eq(snap_verify(s, 0, &err), -EIO);
	ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
	ck_assert_int_eq(snap_check_chunks(s, 2, &err), -EIO);
	ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
	image_new(&out, MEM_SIZE);
	ck_assert_int_eq(snap_restore_mem(s, out.mem, MEM_SIZE, 2, 0, &err), -EIO);
	ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
	ck_assert_int_eq(snap_read_chunk(s, NULL, i, buf, &err), -EIO);
	ck_assert_int_eq(snap_read_chunk(s, NULL, data_chunk(ch, 19), buf, &err), SNAP_CHUNK_DATA);
	if (getenv("SNAP_TEST_VERBOSE"))
		printf("  refused: %s\n", err.msg);
	image_free(&out);
	snap_close(s);
	unlink(path);
	free(f.p);
	free(buf);
}
END_TEST

/* With the pages written since ref known, only the written chunks' extents
 * of the memfd are looked up; a chunk nothing wrote whose copy in ref is
 * damaged is then read from memory after all (the whole memfd scanned, the
 * memory written again): the snapshot is the memory, not the damage. */
START_TEST(written_damaged_ref)
{
	struct fbuf f = load_file(base_path);
	struct snap_write_stats st;
	struct snap_err err = {{0}};
	struct snap_mem_index *mi;
	struct snap_chunk *ch;
	struct image now, out;
	struct snap_save sv;
	struct snap *ref, *s;
	uint64_t *zero, *pages, *chunks, i = 0, nwritten = 0;
	char rpath[160], path[160];

	image_new(&now, MEM_SIZE);
	pages = mutate(&now, &img, 300);
	chunks = dirty_chunks_of(pages);
	for (uint64_t c = 0; c < MEM_SIZE / CHUNK; c++)
		nwritten += (chunks[c / 64] >> (c % 64)) & 1;
	ch = chunk_entries(&f, &mi, &zero);
	for (int k = 0; k < 40; k++) {
		i = data_chunk(ch, k);
		if (!((chunks[i / 64] >> (i % 64)) & 1))
			break;
	}
	ck_assert(!((chunks[i / 64] >> (i % 64)) & 1));
	f.p[ch[i].offset + ch[i].stored_len / 2] ^= 0x10;
	snprintf(rpath, sizeof(rpath), "%s/badref.snap", dir);
	store_file(rpath, f.p, f.len);
	ref = open_ok(rpath);
	sv = save_of(&now);
	sv.ref = ref;
	sv.written = pages;
	snprintf(path, sizeof(path), "%s/from-badref.snap", dir);
	write_ok(path, &sv, &st);
	ck_assert_uint_eq(st.nunwritten, MEM_SIZE / CHUNK - nwritten - 1);
	s = open_ok(path);
	ck_assert_msg(snap_verify(s, 0, &err) == 0, "%s", err.msg);
	image_new(&out, MEM_SIZE);
	ck_assert_msg(snap_restore_file(s, out.fd, 2, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(out.mem, now.mem, MEM_SIZE), 0);
	snap_close(s);
	snap_close(ref);
	image_free(&out);
	image_free(&now);
	free(chunks);
	free(pages);
	free(f.p);
	unlink(rpath);
	unlink(path);
}
END_TEST

/* Random damage to a small snapshot: every outcome is a refusal, unless the
 * byte hit was alignment padding that no reader looks at. */
START_TEST(random_damage)
{
	struct snap_vm_config saved = cfg;
	struct snap_err err = {{0}};
	struct image in;
	struct snap_save sv;
	struct fbuf f;
	char good[160], bad[160];
	int refused = 0, padding = 0;

	image_new(&in, 2 * MIB);
	fill_image(&in, 600 * 1024);
	cfg.mem_size = cfg.mem_low_size = in.size;
	sv = save_of(&in);
	sv.chunk_shift = 16;
	snprintf(good, sizeof(good), "%s/small.snap", dir);
	snprintf(bad, sizeof(bad), "%s/small-bad.snap", dir);
	write_ok(good, &sv, NULL);
	f = load_file(good);
	for (int n = 0; n < 400; n++) {
		size_t off = rnd() % f.len, len = f.len;
		uint8_t old = f.p[off];
		struct snap *s;
		int ret;

		if (n % 4 == 3)
			len = rnd() % f.len; /* truncate instead */
		else
			f.p[off] ^= (uint8_t)(1 + rnd() % 255);
		store_file(bad, f.p, len);
		f.p[off] = old;
		ret = snap_open(bad, &s, &err);
		if (ret == 0) {
			ret = snap_verify(s, 2, &err);
			snap_close(s);
		}
		if (ret < 0) {
			refused++;
			continue;
		}
		ck_assert_msg(len == f.len, "truncated to %zu and accepted", len);
		padding++;
	}
	ck_assert_int_gt(refused, 350);
	ck_assert_int_lt(padding, 50);
	free(f.p);
	image_free(&in);
	cfg = saved;
}
END_TEST

/* ------------------------------------------------------------------ writer failures */

static int count_files(void)
{
	char cmd[160];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

START_TEST(write_failures)
{
	struct snap_err err = {{0}};
	struct snap_save sv = save_of(&img);
	struct snap_vm_config bad = cfg;
	struct rlimit old, lim = {.rlim_cur = 2 << 20, .rlim_max = RLIM_INFINITY};
	char path[160];
	int files = count_files();
	struct snap *s;

	bad.nr_vcpus = 0;
	sv.config = &bad;
	ck_assert_int_eq(snap_write(base_path, &sv, NULL, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "0 vCPUs (1..256)"), "%s", err.msg);
	sv.config = &cfg;
	snprintf(path, sizeof(path), "%s/no/such/dir.snap", dir);
	ck_assert_int_lt(snap_write(path, &sv, NULL, &err), 0);
	ck_assert_msg(strstr(err.msg, "cannot create"), "%s", err.msg);

	/* The disk fills up halfway: the old snapshot stays, nothing is left over. */
	getrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_IGN);
	lim.rlim_max = old.rlim_max;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	ck_assert_int_lt(snap_write(base_path, &sv, NULL, &err), 0);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);
	ck_assert_msg(strstr(err.msg, "File too large"), "%s", err.msg);
	ck_assert_int_eq(count_files(), files);
	s = open_ok(base_path);
	ck_assert_uint_eq(snap_id(s), base_stats.id);
	snap_close(s);
}
END_TEST

/* ------------------------------------------------------------------ generations */

static uint64_t generation_of(const char *path)
{
	struct snap *s = open_ok(path);
	uint64_t g = snap_header(s)->generation;

	snap_close(s);
	return g;
}

/* path restores to exactly im's memory, through every chunk's checksum. */
static void restores_to(const char *path, const struct image *im)
{
	struct snap_err err = {{0}};
	struct snap *s = open_ok(path);
	struct image out;

	ck_assert_msg(snap_verify(s, 0, &err) == 0, "%s", err.msg);
	image_new(&out, im->size);
	ck_assert_msg(snap_restore_file(s, out.fd, 2, &err) == 0, "%s", err.msg);
	ck_assert_msg(memcmp(out.mem, im->mem, im->size) == 0, "%s: memory differs", path);
	image_free(&out);
	snap_close(s);
}

/* src's memory into dst, without reading src's holes through its mapping
 * (that would allocate them, and later tests count src's blocks). */
static void copy_image(struct image *dst, const struct image *src)
{
	ck_assert_int_eq(pread(src->fd, dst->mem, src->size, 0), (ssize_t)src->size);
}

static void copy_file(const char *from, const char *to)
{
	struct fbuf f = load_file(from);

	store_file(to, f.p, f.len);
	free(f.p);
}

/* A later snapshot to the file of the one before adds a generation: only
 * the changed chunks are written, the file grows by about them, and each
 * generation restores to its memory. Whatever cuts a generation short (a
 * torn header slot, bytes missing from its end, garbage after it) leaves
 * the one before. Another file, or a version 2 one, is written anew. */
START_TEST(append_generations)
{
	struct snap_write_stats st;
	struct image cur, prev;
	struct snap_save sv;
	struct stat before, after;
	struct fbuf f;
	char path[160], other[160];
	uint64_t *pages, g;
	struct snap *ref;

	snprintf(path, sizeof(path), "%s/gen.snap", dir);
	snprintf(other, sizeof(other), "%s/gen-other.snap", dir);
	copy_file(base_path, path);
	ck_assert_uint_eq(generation_of(path), 1);
	image_new(&cur, MEM_SIZE);
	image_new(&prev, MEM_SIZE);
	copy_image(&cur, &img);
	for (g = 2; g <= 6; g++) {
		memcpy(prev.mem, cur.mem, MEM_SIZE);
		pages = mutate(&cur, &prev, 300 + g);
		ref = open_ok(path);
		sv = save_of(&cur);
		sv.ref = ref;
		sv.written = pages;
		sv.append = true;
		stat(path, &before);
		write_ok(path, &sv, &st);
		stat(path, &after);
		snap_close(ref);
		free(pages);
		ck_assert(st.appended);
		ck_assert_uint_eq(st.generation, g);
		/* 6 random pages and a zeroed chunk: at most 7 chunks change. */
		ck_assert_uint_ge(st.nkept, st.ndata - 7);
		ck_assert_uint_eq(st.nkept, st.nreused);
		ck_assert_int_lt(after.st_size - before.st_size, 7 * CHUNK + 64 * 1024);
		ck_assert_uint_eq(generation_of(path), g);
		restores_to(path, &cur);
	}
	/* Garbage past the end (a generation whose header never came). */
	f = load_file(path);
	fill_random(f.p + f.len, 16);
	store_file(other, f.p, f.len + 16);
	ck_assert_uint_eq(generation_of(other), 6);
	/* The newest header slot torn: the generation before. */
	f.p[(6 % 2 ? 0 : SNAP_SLOT_SIZE) + 100] ^= 1;
	store_file(other, f.p, f.len);
	ck_assert_uint_eq(generation_of(other), 5);
	restores_to(other, &prev);
	f.p[(6 % 2 ? 0 : SNAP_SLOT_SIZE) + 100] ^= 1;
	/* The newest generation's end missing. */
	store_file(other, f.p, f.len - 100);
	ck_assert_uint_eq(generation_of(other), 5);
	restores_to(other, &prev);
	free(f.p);

	/* ref is another file (a copy): a new file, not an append. */
	ref = open_ok(path);
	sv = save_of(&cur);
	sv.ref = ref;
	sv.append = true;
	copy_file(path, other);
	write_ok(other, &sv, &st);
	ck_assert(!st.appended);
	ck_assert_uint_eq(st.generation, 1);
	ck_assert_uint_eq(st.nreused, st.ndata);
	restores_to(other, &cur);
	snap_close(ref);
	/* A version 2 file: the next snapshot is a new version 3 one. */
	copy_file(old_path, other);
	ref = open_ok(other);
	ck_assert_uint_eq(snap_header(ref)->version, SNAP_FORMAT_V2);
	copy_image(&prev, &img);
	restores_to(other, &prev);
	sv = save_of(&img);
	sv.ref = ref;
	sv.append = true;
	write_ok(other, &sv, &st);
	ck_assert(!st.appended);
	snap_close(ref);
	ref = open_ok(other);
	ck_assert_uint_eq(snap_header(ref)->version, SNAP_FORMAT_VERSION);
	snap_close(ref);
	restores_to(other, &prev);
	image_free(&cur);
	image_free(&prev);
	unlink(path);
	unlink(other);
}
END_TEST

/* kilnd's pause base (control/sandbox/pause_base.h): a file still at the
 * generation it held when a pause started is not that pause's, also with
 * the next generation's bytes appended and its header slot torn; the
 * generation appended, or another file renamed into place, is. */
START_TEST(pause_base_of_generations)
{
	const uint64_t max = PAUSE_BASE_MAX(MEM_SIZE >> 20);
	struct snap_write_stats st;
	struct pause_base b, again;
	struct image cur;
	struct snap_save sv;
	struct snap *ref;
	char path[160], other[160], *text;
	unsigned slot;
	int fd;

	snprintf(path, sizeof(path), "%s/pb.snap", dir);
	snprintf(other, sizeof(other), "%s/pb-other.snap", dir);
	copy_file(base_path, path);
	pause_base_read(path, max, &b);
	ck_assert(b.file && b.id);
	ck_assert(!pause_base_passed(path, max, &b));
	/* the store's text, back */
	text = pause_base_dump(&b);
	ck_assert(text && pause_base_load(text, &again));
	ck_assert(again.file && again.dev == b.dev && again.ino == b.ino && again.id == b.id);
	free(text);
	ck_assert(!pause_base_load("12 x 34", &again) && !again.file);
	ck_assert(pause_base_load("none", &again) && !again.file);
	ck_assert(pause_base_passed(path, max, &again)); /* no base: any file */
	/* Bytes of a next generation and a torn slot for it: still the base. */
	ref = open_ok(path);
	slot = snap_slot(ref);
	snap_close(ref);
	fd = open(path, O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, path, 100), 100);
	ck_assert_int_eq(pwrite(fd, path, 64, (1 - slot) * SNAP_SLOT_SIZE), 64);
	close(fd);
	ck_assert(!pause_base_passed(path, max, &b));
	/* Too large to be this VM's: not read, so never taken for newer. */
	ck_assert(!pause_base_passed(path, 4096, &b));
	/* The generation appended to the same file: passed. */
	copy_file(base_path, path);
	pause_base_read(path, max, &b);
	image_new(&cur, MEM_SIZE);
	copy_image(&cur, &img);
	memset(cur.mem + 5 * CHUNK, 0x5a, 4096); /* (not rnd(): later tests' sequence stays) */
	ref = open_ok(path);
	sv = save_of(&cur);
	sv.ref = ref;
	sv.append = true;
	write_ok(path, &sv, &st);
	snap_close(ref);
	ck_assert(st.appended);
	pause_base_read(path, max, &again);
	ck_assert(again.ino == b.ino && again.id != b.id);
	ck_assert(pause_base_passed(path, max, &b));
	/* Another file renamed over it (a new one written whole): passed. */
	pause_base_read(path, max, &b);
	copy_file(base_path, other);
	ck_assert_int_eq(rename(other, path), 0);
	ck_assert(pause_base_passed(path, max, &b));
	/* Gone, a link, a fifo: not a pause's file. */
	unlink(path);
	ck_assert(!pause_base_passed(path, max, &b));
	ck_assert_int_eq(symlink(base_path, path), 0);
	ck_assert(!pause_base_passed(path, max, &b));
	unlink(path);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert(!pause_base_passed(path, max, &b));
	unlink(path);
	image_free(&cur);
}
END_TEST

/* A small guest whose memory after k snapshots is known: random bytes
 * (stored as they are: the live bytes that generations are held against),
 * the first 8 bytes k, and part of chunk i % 32 set to i for i <= k. */
#define SMALL_SIZE  (2 * MIB)
#define SMALL_SHIFT 16

static uint8_t small_base[SMALL_SIZE];

static void small_memory(struct image *im, uint64_t k)
{
	if (!small_base[0] && !small_base[1])
		fill_random(small_base, SMALL_SIZE);
	memcpy(im->mem, small_base, SMALL_SIZE);
	for (uint64_t i = 1; i <= k; i++)
		memset(im->mem + (i % 32) * (SMALL_SIZE / 32) + 8, (int)(i * 7 % 251 + 1),
		       3000 + i);
	memcpy(im->mem, &k, sizeof(k));
}

/* Which small_memory() im holds: its k, or 0 if none. */
static uint64_t small_which(struct image *im, struct image *scratch)
{
	uint64_t k;

	memcpy(&k, im->mem, sizeof(k));
	if (k > 1000)
		return 0;
	small_memory(scratch, k);
	return memcmp(im->mem, scratch->mem, SMALL_SIZE) ? 0 : k;
}

static void small_write(const char *path, const struct image *im, struct snap *ref, bool sync,
                        struct snap_write_stats *st)
{
	struct snap_save sv = save_of(im);

	sv.chunk_shift = SMALL_SHIFT;
	sv.ref = ref;
	sv.append = true;
	sv.no_fsync = !sync;
	write_ok(path, &sv, st);
}

/* Generations that change much of memory: the file is rewritten (compacted)
 * before its dead bytes pass 1/8 of the live ones, and keeps restoring right. */
START_TEST(append_compaction)
{
	struct snap_vm_config saved = cfg;
	struct snap_write_stats st;
	struct image im;
	struct stat fs;
	char path[160];
	int appended = 0, rewritten = 0;

	cfg.mem_size = cfg.mem_low_size = SMALL_SIZE;
	image_new(&im, SMALL_SIZE);
	snprintf(path, sizeof(path), "%s/compact.snap", dir);
	fill_image(&im, SMALL_SIZE / 2);
	small_write(path, &im, NULL, false, &st);
	for (int n = 0; n < 40; n++) {
		struct snap *ref = open_ok(path);
		uint64_t live = st.data_out;

		fill_extent(im.mem + (rnd() % 24) * 65536, 4 * 65536, 3);
		small_write(path, &im, ref, false, &st);
		snap_close(ref);
		appended += st.appended;
		rewritten += !st.appended;
		stat(path, &fs);
		/* The live bytes and state, 1/8 of them dead at most, and the
		 * generation just added (4 chunks and state). */
		ck_assert_int_lt(fs.st_size,
		                 (live > st.data_out ? live : st.data_out) * 9 / 8 + 400 * 1024);
		restores_to(path, &im);
	}
	ck_assert_int_gt(appended, 10);
	ck_assert_int_gt(rewritten, 3);
	image_free(&im);
	unlink(path);
	cfg = saved;
}
END_TEST

/* kill -9 of a writer adding generations (fsync on), at random moments:
 * the file always opens, and holds exactly the memory of the snapshot the
 * writer had last finished or the one it was writing. */
START_TEST(append_killed)
{
	struct snap_vm_config saved = cfg;
	struct snap_err err = {{0}};
	struct snap_write_stats st;
	struct image im, out;
	char path[160];
	uint64_t done = 1;
	int pipefd[2], appended = 0;

	cfg.mem_size = cfg.mem_low_size = SMALL_SIZE;
	image_new(&im, SMALL_SIZE);
	image_new(&out, SMALL_SIZE);
	snprintf(path, sizeof(path), "%s/killed.snap", dir);
	small_memory(&im, 1);
	small_write(path, &im, NULL, true, &st);
	/* At least 12 kills; more (at most 200) while a loaded host has let the
	 * writer finish too few snapshots for the checks below. */
	for (int round = 0; round < 200 && (round < 12 || done <= 12 || appended <= 6); round++) {
		struct snap *s;
		pid_t pid;
		uint64_t k, got = done;

		ck_assert_int_eq(pipe(pipefd), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(pipefd[0]);
			for (k = done + 1;; k++) {
				struct snap *ref = open_ok(path);
				uint64_t msg;

				small_memory(&im, k);
				small_write(path, &im, ref, true, &st);
				snap_close(ref);
				msg = k | (uint64_t)st.appended << 63;
				if (write(pipefd[1], &msg, sizeof(msg)) != sizeof(msg))
					_exit(1);
			}
		}
		close(pipefd[1]);
		usleep((useconds_t)(rnd() % 40000));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		while (read(pipefd[0], &k, sizeof(k)) == sizeof(k)) {
			appended += (int)(k >> 63);
			got = k & ~(1ULL << 63);
		}
		close(pipefd[0]);
		s = open_ok(path);
		ck_assert_msg(snap_verify(s, 0, &err) == 0, "%s", err.msg);
		ck_assert_msg(snap_restore_file(s, out.fd, 1, &err) == 0, "%s", err.msg);
		snap_close(s);
		k = small_which(&out, &im);
		ck_assert_msg(k == got || k == got + 1,
		              "memory of snapshot %llu, the writer had finished %llu",
		              (unsigned long long)k, (unsigned long long)got);
		done = k;
		ck_assert_int_eq(ftruncate(out.fd, 0), 0);
		ck_assert_int_eq(ftruncate(out.fd, SMALL_SIZE), 0);
	}
	ck_assert_uint_gt(done, 12);
	ck_assert_int_gt(appended, 6);
	image_free(&im);
	image_free(&out);
	unlink(path);
	cfg = saved;
}
END_TEST

/* SNAP_TEST_SEED_DIR: a small file of two generations for the fuzzer's
 * seeds (tests/fuzz/corpus/fuzz_snapshot): 1 MiB of memory, 256 KiB of it
 * random. */
static void dump_seed(const char *dir_path, struct image *im)
{
	struct snap_write_stats st;
	char seed[300];
	struct snap *ref;

	cfg.mem_size = cfg.mem_low_size = MIB;
	im->size = MIB;
	snprintf(seed, sizeof(seed), "%s/gen2-1m.snap", dir_path);
	memset(im->mem, 0, MIB);
	/* Enough live bytes for the state of a second generation (1/8). */
	fill_random(im->mem + 65536, 4 * 65536);
	fill_random(im->mem + 5 * 65536, 3000);
	small_write(seed, im, NULL, false, &st);
	ref = open_ok(seed);
	fill_random(im->mem + 9 * 65536, 2000);
	small_write(seed, im, ref, false, &st);
	snap_close(ref);
	ck_assert(st.appended);
	im->size = SMALL_SIZE;
}

/* Random damage to a file of several generations: refused, or it restores
 * to exactly one of the generations' memory. */
START_TEST(random_damage_generations)
{
	struct snap_vm_config saved = cfg;
	struct snap_write_stats st;
	struct image im, out;
	struct fbuf f;
	char good[160], bad[160];
	int refused = 0, older = 0;

	cfg.mem_size = cfg.mem_low_size = SMALL_SIZE;
	image_new(&im, SMALL_SIZE);
	image_new(&out, SMALL_SIZE);
	snprintf(good, sizeof(good), "%s/gens.snap", dir);
	snprintf(bad, sizeof(bad), "%s/gens-bad.snap", dir);
	small_memory(&im, 1);
	small_write(good, &im, NULL, false, &st);
	ck_assert_uint_eq(st.generation, 1);
	for (uint64_t g = 2; g <= 3; g++) {
		struct snap *ref = open_ok(good);

		small_memory(&im, g);
		small_write(good, &im, ref, false, &st);
		snap_close(ref);
		ck_assert(st.appended);
	}
	f = load_file(good);
	for (int n = 0; n < 400; n++) {
		size_t off = rnd() % f.len, len = f.len;
		uint8_t old = f.p[off];
		struct snap_err err = {{0}};
		struct snap *s;
		uint64_t g;
		int ret;

		if (n % 4 == 3)
			len = rnd() % f.len;
		else
			f.p[off] ^= (uint8_t)(1 + rnd() % 255);
		store_file(bad, f.p, len);
		f.p[off] = old;
		if (snap_open(bad, &s, &err) < 0) {
			refused++;
			continue;
		}
		memset(out.mem, 0, SMALL_SIZE);
		ret = snap_restore_mem(s, out.mem, SMALL_SIZE, 1, SNAP_RESTORE_ZERO_FILL, &err);
		snap_close(s);
		if (ret < 0) {
			refused++;
			continue;
		}
		g = small_which(&out, &im);
		ck_assert_msg(g >= 1 && g <= 3, "damage at %zu (length %zu): restored wrong", off,
		              len);
		older += g < 3;
	}
	ck_assert_int_gt(refused, 100);
	ck_assert_int_gt(older, 3);
	if (getenv("SNAP_TEST_SEED_DIR"))
		dump_seed(getenv("SNAP_TEST_SEED_DIR"), &im);
	free(f.p);
	image_free(&im);
	image_free(&out);
	unlink(good);
	unlink(bad);
	cfg = saved;
}
END_TEST

static void add_diff_tests(TCase *tc)
{
	tcase_add_test(tc, append_generations);
	tcase_add_test(tc, append_compaction);
	tcase_add_test(tc, append_killed);
	tcase_add_test(tc, reuse_ref);
	tcase_add_test(tc, written_pages);
	tcase_add_test(tc, lazy_holes);
	tcase_add_test(tc, clone_pages);
	tcase_add_test(tc, diff_round_trip);
	tcase_add_test(tc, compat);
}

static void add_corrupt_tests(TCase *tc)
{
	tcase_add_loop_test(tc, damaged, 0, D_COUNT);
	tcase_add_test(tc, damaged_chunk);
	tcase_add_loop_test(tc, late_ram, 0, L_COUNT);
	tcase_add_test(tc, written_damaged_ref);
	tcase_add_test(tc, random_damage);
	tcase_add_test(tc, write_failures);
	tcase_add_test(tc, random_damage_generations);
	tcase_add_test(tc, pause_base_of_generations);
}

int main(void)
{
	Suite *s = suite_create("snapshot");
	TCase *basics = tcase_create("basics"), *big = tcase_create("big");
	SRunner *sr;
	int failed;

	tcase_add_test(basics, xxh64_vectors);
	tcase_add_test(basics, xxh64_pieces);
	tcase_add_test(basics, chunks_from_pages);
	suite_add_tcase(s, basics);

	tcase_set_timeout(big, 120);
	tcase_add_unchecked_fixture(big, big_setup, big_teardown);
	tcase_add_test(big, round_trip_state);
	tcase_add_test(big, round_trip_eager);
	tcase_add_loop_test(big, round_trip_sparse, 0, 2);
	tcase_add_test(big, round_trip_chunks);
	tcase_add_test(big, template_memfd);
	tcase_add_test(big, odd_sizes);
	tcase_add_test(big, page_bitmap);
	add_diff_tests(big);
	add_corrupt_tests(big);
	suite_add_tcase(s, big);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
