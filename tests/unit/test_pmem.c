/* SPDX-License-Identifier: MIT */
/*
 * virtio-pmem without KVM: the image mapping (sizes, the zero tail past the
 * end of the file, what is refused, what a huge sparse file costs) and the
 * device (config space, flush requests), driven with hand-built descriptors
 * as in test_blk.c.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "virtio_driver.h"

#define QSZ    16
#define QAREA  0x10000
#define REQ(s) (0x20000 + (s)*0x10) /* le32 type; le32 ret at +8 */
#define MIB    (1024ULL * 1024)
#define GIB    (1024 * MIB)

static char dir[64], path[100];
static uint16_t avail, used_seen;

static void make_file(const char *p, uint64_t size, const void *data, size_t len)
{
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	if (len)
		ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

/* Resident set in kB, from /proc/self/statm. */
static long rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%ld %ld", &pages, &rss), 2);
	fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void setup(void)
{
	memset(&vm, 0, sizeof(vm));
	ck_assert_int_eq(mem_init(&vm.mem, 16 * MIB), 0);
	vm.loop = ev_loop_new(0);
	ck_assert_ptr_nonnull(vm.loop);
	strcpy(dir, "/tmp/kiln-pmem-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/image", dir);
}

static void teardown(void)
{
	virtio_mmio_destroy_all(&vm);
	pmem_unmap(&vm.mem);
	unlink(path);
	ck_assert_int_eq(rmdir(dir), 0);
	ev_loop_destroy(vm.loop);
	mem_destroy(&vm.mem);
}

/* ------------------------------------------------------------ the mapping */

START_TEST(map_sizes)
{
	static const struct {
		uint64_t size, window;
	} c[] = {
	    {1, 2 * MIB},           {5000, 2 * MIB},           {2 * MIB, 2 * MIB},
	    {2 * MIB + 1, 4 * MIB}, {7 * MIB + 4096, 8 * MIB},
	};
	char data[5000];
	const char *why;

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (char)('a' + i % 26);
	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const uint8_t *p;
		size_t n = c[i].size < sizeof(data) ? c[i].size : sizeof(data);

		make_file(path, c[i].size, data, n);
		ck_assert_int_eq(pmem_map(&vm.mem, path, &why), 0);
		p = vm.mem.pmem;
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq(vm.mem.pmem_size, c[i].window);
		ck_assert_uint_eq(vm.mem.pmem_file_size, c[i].size);
		ck_assert_uint_eq((uintptr_t)p % (2 * MIB), 0);
		ck_assert_mem_eq(p, data, n);
		/* Past the end of the file, to the end of the window: zeros,
		 * readable without SIGBUS (this is what KVM will read). */
		for (uint64_t off = c[i].size; off < c[i].window; off += 1 + off % 4093)
			ck_assert_uint_eq(p[off], 0);
		ck_assert_uint_eq(p[c[i].window - 1], 0);
		pmem_unmap(&vm.mem);
		ck_assert_ptr_null(vm.mem.pmem);
	}
}
END_TEST

START_TEST(map_read_only_shared)
{
	char line[512], want[32];
	const char *why;
	bool found = false;
	FILE *f;

	make_file(path, 3 * MIB, "image", 5);
	ck_assert_int_eq(pmem_map(&vm.mem, path, &why), 0);
	snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)vm.mem.pmem);
	f = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(f);
	/* The file part: read-only and shared, so the page cache is shared by
	 * every VM. */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want))) {
			ck_assert_msg(strstr(line, " r--s ") && strstr(line, "/image"), "%s", line);
			found = true;
		}
	fclose(f);
	ck_assert(found);
}
END_TEST

START_TEST(map_errors)
{
	struct guest_mem big = {.size = 64 * GIB, .low_size = 3 * GIB};
	struct guest_mem ok = {.size = 63 * GIB, .low_size = 3 * GIB};
	const char *why;

	ck_assert_int_eq(pmem_map(&vm.mem, "/nonexistent/image", &why), -ENOENT);
	ck_assert_ptr_null(why);
	ck_assert_int_eq(pmem_map(&vm.mem, dir, &why), -EINVAL);
	ck_assert_str_eq(why, "not a regular file or block device");
	ck_assert_int_eq(pmem_map(&vm.mem, "/dev/null", &why), -EINVAL);
	ck_assert_str_eq(why, "not a regular file or block device");
	make_file(path, 0, NULL, 0);
	ck_assert_int_eq(pmem_map(&vm.mem, path, &why), -EINVAL);
	ck_assert_str_eq(why, "the image is empty");
	make_file(path, KILN_PMEM_MAX + 1, NULL, 0);
	ck_assert_int_eq(pmem_map(&vm.mem, path, &why), -EFBIG);
	ck_assert_ptr_nonnull(why);
	ck_assert_ptr_null(vm.mem.pmem);
	/* Guest RAM must stay below the window. */
	make_file(path, 4096, "x", 1);
	ck_assert_int_eq(pmem_map(&big, path, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "63G"));
	ck_assert_int_eq(pmem_map(&ok, path, &why), 0);
	pmem_unmap(&ok);
}
END_TEST

/* A huge sparse file is mapped, not read: no memory, no time. */
START_TEST(map_sparse_huge)
{
	long before;
	const char *why;
	double t;

	make_file(path, KILN_PMEM_MAX, "erofs?", 6);
	before = rss_kb();
	t = ev_time();
	ck_assert_int_eq(pmem_map(&vm.mem, path, &why), 0);
	ck_assert_double_lt(ev_time() - t, 0.5);
	ck_assert_uint_eq(vm.mem.pmem_size, KILN_PMEM_MAX);
	ck_assert_int_lt(rss_kb() - before, 1024);
	ck_assert_mem_eq(vm.mem.pmem, "erofs?", 6);
	ck_assert_uint_eq(vm.mem.pmem[10 * GIB], 0);
	ck_assert_int_lt(rss_kb() - before, 1024);
}
END_TEST

/* ------------------------------------------------------------ the device */

static void open_dev(void)
{
	const char *why;

	make_file(path, 5000, "kiln", 4);
	ck_assert_int_eq(pmem_map(&vm.mem, path, &why), 0);
	ck_assert_int_eq(pmem_create(&vm), 0);
	dev = vm.devs[0];
	memset(gp(QAREA, 0x3000), 0, 0x3000);
	avail = used_seen = 0;
	wr(STATUS, 1);
	wr(STATUS, 3);
	wr(DRV_FEAT_SEL, 1);
	wr(DRV_FEAT, 1); /* VIRTIO_F_VERSION_1 */
	wr(STATUS, 0xb);
	ck_assert_uint_eq(rd(STATUS), 0xb);
	wr(QSEL, 0);
	ck_assert_uint_eq(rd(QNUM_MAX), QSZ);
	wr(QNUM, QSZ);
	wr(QDESC, QAREA);
	wr(QDRIVER, QAREA + 0x1000);
	wr(QDEVICE, QAREA + 0x2000);
	wr(QREADY, 1);
	wr(STATUS, 0xf);
}

static void set_desc(unsigned i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	uint8_t *d = gp(QAREA + 16 * i, 16);

	addr = htole64(addr);
	len = htole32(len);
	flags = htole16(flags);
	next = htole16(next);
	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

/* Post request slot s (descriptors 2s, 2s + 1) with the given lengths of
 * its type (readable) and ret (writable) buffers; 0 leaves one out. */
static void post(unsigned s, uint32_t type, uint32_t out_len, uint32_t in_len)
{
	uint16_t *a = gp(QAREA + 0x1000, 6 + 2 * QSZ);
	uint32_t *r = gp(REQ(s), 12);
	unsigned head = out_len ? 2 * s : 2 * s + 1;

	r[0] = htole32(type);
	r[2] = 0xeeeeeeee;
	if (out_len)
		set_desc(2 * s, REQ(s), out_len, in_len ? D_NEXT : 0, 2 * s + 1);
	if (in_len)
		set_desc(2 * s + 1, REQ(s) + 8, in_len, D_WRITE, 0);
	a[2 + avail % QSZ] = htole16((uint16_t)head);
	avail++;
	__atomic_store_n(&a[1], htole16(avail), __ATOMIC_RELEASE);
}

static uint16_t used_idx(void)
{
	return le16toh(*(uint16_t *)gp(QAREA + 0x2002, 2));
}

static void run(void)
{
	for (int i = 0; i < 100 && used_idx() != avail; i++)
		ev_run(vm.loop, EVRUN_NOWAIT);
	ck_assert_uint_eq(used_idx(), avail);
}

/* Used length of the next used element. */
static uint32_t used_len(void)
{
	uint32_t e[2];

	memcpy(e, gp(QAREA + 0x2004 + 8 * (used_seen++ % QSZ), 8), 8);
	return le32toh(e[1]);
}

static uint32_t ret_of(unsigned s)
{
	return le32toh(((uint32_t *)gp(REQ(s), 12))[2]);
}

START_TEST(config_and_features)
{
	uint64_t v[2];
	uint32_t w;

	open_dev();
	ck_assert_uint_eq(rd(DEVICE_ID), 27);
	wr(DEV_FEAT_SEL, 0);
	ck_assert_uint_eq(rd(DEV_FEAT), 0);
	wr(DEV_FEAT_SEL, 1);
	ck_assert_uint_eq(rd(DEV_FEAT), 1);
	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + CONFIG, (uint8_t *)v, 16, false), 0);
	ck_assert_uint_eq(le64toh(v[0]), KILN_GPA_PMEM);
	ck_assert_uint_eq(le64toh(v[1]), 2 * MIB);
	/* 32-bit halves, as a driver may read them */
	w = rd(CONFIG + 4);
	ck_assert_uint_eq(w, (uint32_t)(KILN_GPA_PMEM >> 32));
	w = rd(CONFIG + 8);
	ck_assert_uint_eq(w, 2 * MIB);
	/* writes are ignored, reads past the end give zeros */
	wr(CONFIG, 0);
	ck_assert_uint_eq(rd(CONFIG + 4), (uint32_t)(KILN_GPA_PMEM >> 32));
	w = 0x55555555;
	virtio_mmio_access(&vm, dev->base + CONFIG + 14, (uint8_t *)&w, 4, false);
	ck_assert_uint_eq(w, 0);
}
END_TEST

START_TEST(requests)
{
	open_dev();
	post(0, 0, 4, 4); /* VIRTIO_PMEM_REQ_TYPE_FLUSH */
	post(1, 1, 4, 4); /* no such type */
	post(2, 0xffffffff, 4, 4);
	post(3, 0, 2, 4); /* type cut short */
	post(4, 0, 0, 4); /* no type at all */
	post(5, 0, 4, 0); /* nowhere to answer */
	post(6, 0, 4, 2); /* answer does not fit */
	post(7, 0, 4, 8); /* bigger answer buffer is fine */
	wr(QNOTIFY, 0);
	run();
	ck_assert_uint_eq(ret_of(0), 0);
	ck_assert_uint_eq(used_len(), 4);
	for (unsigned s = 1; s <= 4; s++) {
		ck_assert_uint_eq(ret_of(s), 1); /* VIRTIO_PMEM_RESP_TYPE_EIO */
		ck_assert_uint_eq(used_len(), 4);
	}
	ck_assert_uint_eq(used_len(), 0);
	ck_assert_uint_eq(ret_of(5), 0xeeeeeeee);
	ck_assert_uint_eq(used_len(), 0);
	ck_assert_uint_eq(ret_of(6), 0xeeeeeeee);
	ck_assert_uint_eq(used_len(), 4);
	ck_assert_uint_eq(ret_of(7), 0);
	ck_assert_uint_eq(rd(STATUS), 0xf);
}
END_TEST

/* More requests than the queue holds, over several kicks. */
START_TEST(many_flushes)
{
	open_dev();
	for (unsigned round = 0; round < 10; round++) {
		for (unsigned s = 0; s < QSZ / 2; s++)
			post(s, 0, 4, 4);
		wr(QNOTIFY, 0);
		run();
		for (unsigned s = 0; s < QSZ / 2; s++) {
			ck_assert_uint_eq(ret_of(s), 0);
			ck_assert_uint_eq(used_len(), 4);
		}
	}
}
END_TEST

START_TEST(create_without_image)
{
	ck_assert_int_eq(pmem_create(&vm), -EINVAL);
	ck_assert_int_eq(vm.nr_devs, 0);
}
END_TEST

static Suite *pmem_suite(void)
{
	Suite *s = suite_create("virtio-pmem");
	TCase *t = tcase_create("pmem");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, map_sizes);
	tcase_add_test(t, map_read_only_shared);
	tcase_add_test(t, map_errors);
	tcase_add_test(t, map_sparse_huge);
	tcase_add_test(t, config_and_features);
	tcase_add_test(t, requests);
	tcase_add_test(t, many_flushes);
	tcase_add_test(t, create_without_image);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pmem_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
