/* SPDX-License-Identifier: MIT */
/*
 * snapbench: snapshot library speed and size on a synthetic guest image.
 *
 * A 256 MiB memfd (like kiln-vmm's guest RAM) gets 40 MiB of guest-like
 * content: code (the host's python3 and libpython ELF files), text (python
 * sources), a pointer-rich heap, page tables, random bytes (keys, compressed
 * data), and stack-like pages used only at the top. Layout: "gappy"
 * (default) follows kiln-kernel's next-fit page allocator, which fills RAM
 * from the bottom, with small gaps where freed pages were; "packed" has no
 * gaps; "scattered" puts every extent and page table at a random place,
 * which touches nearly every chunk (the worst case).
 * Then, per chunk size and zstd level: write time and file size (the pause
 * cost), eager restore into a fresh memfd with all threads, template
 * restore, and the latency of restoring one chunk (lazy restore's fault),
 * with the page cache warm and cold. Medians of --reps runs.
 *
 * usage: snapbench [--mem MiB] [--touched MiB] [--reps N] [--threads N]
 *                  [--dir DIR] [--shifts 16,18,20,21] [--levels -1,1,3]
 *                  [--layout gappy|packed|scattered]
 */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../../snapshot/snap.h"

#define MIB (1ULL << 20)

struct opts {
	uint64_t mem, touched;
	int reps;
	unsigned threads;
	const char *dir;
	int shifts[8], nshifts;
	int levels[8], nlevels;
	int layout; /* 0 gappy, 1 packed, 2 scattered */
};

static const char *const layout_name[3] = {"gappy", "packed", "scattered"};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median_ms(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return (double)v[n / 2] / 1e6;
}

/* Append up to len bytes of file path to buf. */
static size_t slurp(const char *path, uint8_t *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, len);

	if (fd >= 0)
		close(fd);
	return n > 0 ? (size_t)n : 0;
}

/* Source material: real code and real text from the host, when present. */
static size_t load_code(uint8_t *buf, size_t len)
{
	static const char *const files[] = {"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
	                                    "/usr/bin/python3.11",
	                                    "/usr/lib/x86_64-linux-gnu/libc.so.6"};
	size_t got = 0;

	for (unsigned i = 0; i < 3 && got < len; i++)
		got += slurp(files[i], buf + got, len - got);
	return got;
}

static size_t load_text(uint8_t *buf, size_t len)
{
	DIR *d = opendir("/usr/lib/python3.11");
	struct dirent *e;
	size_t got = 0;
	char path[512];

	while (d && (e = readdir(d)) && got < len) {
		size_t n = strlen(e->d_name);

		if (n < 4 || strcmp(e->d_name + n - 3, ".py"))
			continue;
		snprintf(path, sizeof(path), "/usr/lib/python3.11/%s", e->d_name);
		got += slurp(path, buf + got, len - got);
	}
	if (d)
		closedir(d);
	return got;
}

/* Fill [p, p+len) with content of the given kind. */
static void fill(uint8_t *p, size_t len, int kind, const uint8_t *code, size_t ncode,
                 const uint8_t *text, size_t ntext)
{
	size_t i;

	switch (kind) {
	case 0: /* code */
	case 1: /* text */
		if ((kind ? ntext : ncode) < len) {
			for (i = 0; i < len; i++)
				p[i] = (uint8_t)(kind ? 'a' + rnd() % 26 : rnd() % 8);
			break;
		}
		memcpy(p, (kind ? text : code) + rnd() % ((kind ? ntext : ncode) - len + 1), len);
		break;
	case 2: /* heap: object headers, pointers, small ints, floats */
		for (i = 0; i + 32 <= len; i += 32) {
			uint64_t w[4] = {1 + rnd() % 8, 0x7f0000a01000ULL + (rnd() % 40) * 0x100,
			                 0x7f0001000000ULL + (rnd() % 0x100000) * 16, rnd() % 1000};

			if (rnd() % 4 == 0)
				w[3] = rnd();
			memcpy(p + i, w, 32);
		}
		break;
	case 3: /* page tables: present entries to mostly sequential frames */
		for (i = 0; i + 8 <= len; i += 8) {
			uint64_t pte = rnd() % 3 ? (0x1000000ULL + i * 512) | 0x67 : 0;

			memcpy(p + i, &pte, 8);
		}
		break;
	case 4: /* random */
		for (i = 0; i + 8 <= len; i += 8) {
			uint64_t r = rnd();

			memcpy(p + i, &r, 8);
		}
		break;
	default: /* stack-like: the top few hundred bytes of each page */
		for (i = 0; i + 4096 <= len; i += 4096)
			for (size_t k = 4096 - 512; k < 4096; k++)
				p[i + k] = (uint8_t)(rnd() % 4 ? 0 : rnd());
	}
}

/* Shares of the touched memory per kind, in 1/40ths. */
static const int share[6] = {12, 8, 10, 4, 4, 2};
static const char *const kind_name[6] = {"code", "text", "heap", "page tables", "random", "stack"};

static uint64_t build_image(uint8_t *mem, const struct opts *o)
{
	size_t ncode = 16 * MIB, ntext = 16 * MIB;
	uint8_t *code = malloc(ncode), *text = malloc(ntext);
	uint64_t npages = o->mem / 4096, touched = 0, next = 0;
	uint8_t *used = calloc(npages, 1);

	ncode = load_code(code, ncode);
	ntext = load_text(text, ntext);
	fprintf(stderr, "source material: %zu KiB of host ELF code, %zu KiB of python text\n",
	        ncode >> 10, ntext >> 10);
	for (int k = 0; k < 6; k++) {
		uint64_t want = o->touched * (uint64_t)share[k] / 40, done = 0;

		while (done < want) {
			uint64_t len = k >= 3 && k != 4 ? 4096 : (4 + rnd() % 253) * 4096;
			uint64_t pg;

			if (len > want - done)
				len = (want - done + 4095) & ~4095ULL;
			if (o->layout == 2)
				pg = rnd() % (npages - len / 4096);
			else
				pg = next + (o->layout == 0 ? rnd() % 16 : 0);
			next = pg + len / 4096;
			fill(mem + pg * 4096, len, k, code, ncode, text, ntext);
			for (uint64_t q = pg; q < pg + len / 4096; q++)
				touched += !used[q], used[q] = 1;
			done += len;
		}
	}
	while (touched * 4096 < o->touched) { /* extents overlapped: top up with heap */
		uint64_t pg = o->layout == 2 ? rnd() % (npages - 16) : next;

		fill(mem + pg * 4096, 16 * 4096, 2, code, ncode, text, ntext);
		for (uint64_t q = pg; q < pg + 16; q++)
			touched += !used[q], used[q] = 1;
		next = pg + 16;
	}
	free(code);
	free(text);
	free(used);
	return touched * 4096;
}

static int image_fd(uint64_t size, uint8_t **map)
{
	int fd = memfd_create("snapbench", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		exit(1);
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map == MAP_FAILED)
		exit(1);
	return fd;
}

static void die(const struct snap_err *err)
{
	fprintf(stderr, "snapbench: %s\n", err->msg);
	exit(1);
}

/* Latency of one chunk, over up to 200 data chunks: median and p99 (us). */
static void chunk_latency(const struct snap *s, const char *path, int cold, double *med,
                          double *p99)
{
	struct snap_chunk_ctx *ctx = snap_chunk_ctx_new(s);
	struct snap_mem_info mi;
	uint8_t *buf;
	uint64_t t[200];
	struct snap_err err;
	int n = 0, fd = open(path, O_RDONLY);

	snap_mem_info(s, &mi);
	buf = malloc(mi.chunk_size);
	if (cold)
		fdatasync(fd); /* dirty pages cannot be dropped */
	for (uint64_t i = 0; i < mi.nchunks && n < 200; i += 1 + mi.nchunks / 400) {
		uint64_t t0;
		int ret;

		if (cold)
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		t0 = now();
		ret = snap_read_chunk(s, ctx, i, buf, &err);
		if (ret < 0)
			die(&err);
		if (ret == SNAP_CHUNK_DATA)
			t[n++] = now() - t0;
	}
	qsort(t, (size_t)n, sizeof(t[0]), cmp_u64);
	*med = n ? (double)t[n / 2] / 1e3 : 0;
	*p99 = n ? (double)t[n * 99 / 100] / 1e3 : 0;
	close(fd);
	free(buf);
	snap_chunk_ctx_free(ctx);
}

static void run(const struct opts *o, uint8_t *mem, int memfd, uint64_t touched, int shift,
                int level, const struct snap_vm_config *cfg, const struct snap_save *base)
{
	uint64_t tw[16], cw[16], te[16], ts[16], cs[16], tt[16], tv[16], sync_ns = 0;
	struct snap_write_stats st;
	struct snap_save in = *base;
	struct snap_err err;
	char path[512];
	double med, p99, cmed, cp99;
	struct snap *s;

	snprintf(path, sizeof(path), "%s/snapbench-%d-%d.snap", o->dir, shift, level);
	in.chunk_shift = (unsigned)shift;
	in.level = level;
	for (int r = 0; r < o->reps; r++) {
		uint64_t c0 = cpu_now();

		in.no_fsync = r != 0; /* one run with fsync, for the sync cost */
		if (snap_write(path, &in, &st, &err) < 0)
			die(&err);
		cw[r] = cpu_now() - c0;
		tw[r] = st.total_ns - st.sync_ns;
		if (r == 0)
			sync_ns = st.sync_ns;
	}
	if (snap_open(path, &s, &err) < 0)
		die(&err);
	for (int r = 0; r < o->reps; r++) {
		uint8_t *dst;
		int fd = image_fd(o->mem, &dst);
		uint64_t t0 = now(), c0;

		if (snap_restore_mem(s, dst, o->mem, o->threads, 0, &err) < 0)
			die(&err);
		te[r] = now() - t0;
		if (r == 0 && memcmp(dst, mem, o->mem))
			fprintf(stderr, "snapbench: restored memory differs!\n"), exit(1);
		munmap(dst, o->mem);
		close(fd);
		fd = image_fd(o->mem, &dst);
		t0 = now();
		c0 = cpu_now();
		if (snap_restore_mem(s, dst, o->mem, o->threads, SNAP_RESTORE_SPARSE, &err) < 0)
			die(&err);
		ts[r] = now() - t0;
		cs[r] = cpu_now() - c0;
		munmap(dst, o->mem);
		close(fd);
		fd = memfd_create("tmpl", MFD_CLOEXEC);
		t0 = now();
		if (snap_restore_template(s, fd, o->threads, false, &err) < 0)
			die(&err);
		tt[r] = now() - t0;
		close(fd);
		t0 = now();
		if (snap_verify(s, o->threads, &err) < 0)
			die(&err);
		tv[r] = now() - t0;
	}
	chunk_latency(s, path, 0, &med, &p99);
	chunk_latency(s, path, 1, &cmed, &cp99);
	printf("%4llu KiB %2d | %6.1f %6.1f %6.1f | %6.2f %5.3f %5llu | %6.1f %6.1f %6.1f %6.1f "
	       "%6.1f | %5.0f %5.0f %6.0f %6.0f\n",
	       (unsigned long long)(1ULL << shift) >> 10, level, median_ms(tw, o->reps),
	       median_ms(cw, o->reps), (double)sync_ns / 1e6, (double)st.file_size / (double)MIB,
	       (double)st.file_size / (double)touched, (unsigned long long)st.ndata,
	       median_ms(te, o->reps), median_ms(ts, o->reps), median_ms(cs, o->reps),
	       median_ms(tt, o->reps), median_ms(tv, o->reps), med, p99, cmed, cp99);
	fflush(stdout);
	snap_close(s);
	unlink(path);
	(void)memfd;
	(void)cfg;
}

static int parse_list(const char *s, int *out)
{
	int n = 0;

	for (char *end; *s && n < 8; s = *end ? end + 1 : end)
		out[n++] = (int)strtol(s, &end, 10);
	return n;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"mem", 1, 0, 'm'},     {"touched", 1, 0, 't'}, {"reps", 1, 0, 'r'},
	    {"threads", 1, 0, 'j'}, {"dir", 1, 0, 'd'},     {"shifts", 1, 0, 's'},
	    {"levels", 1, 0, 'l'},  {"layout", 1, 0, 'p'},  {0, 0, 0, 0},
	};
	struct opts o = {.mem = 256 * MIB,
	                 .touched = 40 * MIB,
	                 .reps = 5,
	                 .dir = "/tmp",
	                 .shifts = {16, 18, 20, 21},
	                 .nshifts = 4,
	                 .levels = {-1, 1, 3},
	                 .nlevels = 3};
	struct snap_vm_config cfg = {0};
	struct snap_vcpu_state vcpu = {.nmsrs = 41, .xsave_size = 4096};
	struct snap_vm_state vm = {.flags = SNAP_VM_HAS_PIT2};
	struct snap_save in = {0};
	uint64_t touched;
	uint8_t *mem;
	int c, fd;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			o.mem = strtoull(optarg, NULL, 0) * MIB;
			break;
		case 't':
			o.touched = strtoull(optarg, NULL, 0) * MIB;
			break;
		case 'r':
			o.reps = atoi(optarg) < 1 ? 1 : atoi(optarg) > 16 ? 16 : atoi(optarg);
			break;
		case 'j':
			o.threads = (unsigned)atoi(optarg);
			break;
		case 'd':
			o.dir = optarg;
			break;
		case 's':
			o.nshifts = parse_list(optarg, o.shifts);
			break;
		case 'l':
			o.nlevels = parse_list(optarg, o.levels);
			break;
		case 'p':
			for (o.layout = 2; o.layout > 0 && strcmp(optarg, layout_name[o.layout]);
			     o.layout--)
				;
			break;
		default:
			fprintf(stderr, "usage: see the comment at the top of snapbench.c\n");
			return 2;
		}
	}
	fd = image_fd(o.mem, &mem);
	touched = build_image(mem, &o);
	cfg.mem_size = cfg.mem_low_size = o.mem;
	cfg.mem_high_gpa = 0x100000000ULL;
	cfg.nr_vcpus = 1;
	in = (struct snap_save){.config = &cfg,
	                        .vcpus = &vcpu,
	                        .vm = &vm,
	                        .mem = mem,
	                        .mem_fd = fd,
	                        .threads = o.threads};
	printf("guest %llu MiB, touched %.1f MiB (%s; code %d/40, text %d, heap %d, page tables "
	       "%d, random %d, stack %d), %u threads, dir %s\n",
	       (unsigned long long)(o.mem / MIB), (double)touched / (double)MIB,
	       layout_name[o.layout], share[0], share[1], share[2], share[3], share[4], share[5],
	       o.threads ? o.threads : snap_default_threads(), o.dir);
	(void)kind_name;
	printf("             |  write (ms)          |  file size         |  restore (ms)           "
	       "           | one chunk (us)\n");
	printf("chunk    lvl |  wall    cpu  fsync |   MiB  /touch data |  eager sparse s.cpu  "
	       "tmpl  verify | warm med p99  cold med p99\n");
	for (int i = 0; i < o.nshifts; i++)
		for (int j = 0; j < o.nlevels; j++)
			run(&o, mem, fd, touched, o.shifts[i], o.levels[j], &cfg, &in);
	munmap(mem, o.mem);
	close(fd);
	return 0;
}
