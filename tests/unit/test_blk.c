/* SPDX-License-Identifier: MIT */
/*
 * virtio-blk without KVM: the KVM plumbing is stubbed with eventfds (as in
 * test_mmio.c), the test plays the guest driver with hand-built descriptor
 * chains over a real temporary disk file, and runs the device's libev loop
 * while its worker thread does the I/O.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "virtio_driver.h"

#define T_IN     0
#define T_OUT    1
#define T_FLUSH  4
#define T_GET_ID 8
#define S_OK     0
#define S_IOERR  1
#define S_UNSUPP 2

#define QSZ    128
#define QAREA  0x10000                  /* desc; avail +0x1000; used +0x2000 */
#define HDR(s) (0x20000 + (s)*0x20)     /* header; status byte at +16 */
#define BUF(s) (0x100000 + (s)*0x10000) /* small data buffers */
#define BIG    0x1000000                /* 16 MiB.. for huge requests */
#define MIB    (1024 * 1024)

#define DISK_SIZE (MIB + 100) /* 2048 sectors and a partial one */
#define CAPACITY  2048

static char dir[64], path[100];
static int disk_fd; /* the test's own view of the disk file */
static uint16_t avail, used_seen;
static unsigned next_desc;

struct seg {
	uint64_t gpa;
	uint32_t len;
	bool w;
};

static void drv_init(bool event_idx)
{
	memset(gp(QAREA, 0x3000), 0, 0x3000);
	avail = used_seen = 0;
	next_desc = 0;
	wr(STATUS, 0);
	wr(STATUS, 1);
	wr(STATUS, 3);
	wr(DRV_FEAT_SEL, 1);
	wr(DRV_FEAT, 1); /* VIRTIO_F_VERSION_1 */
	wr(DRV_FEAT_SEL, 0);
	wr(DRV_FEAT, (1u << 9) | (event_idx ? 1u << 29 : 0)); /* FLUSH, EVENT_IDX */
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
	ck_assert_uint_eq(rd(STATUS), 0xf);
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

/* Make a chain available (not kicked); returns its head. Descriptors are
 * handed out round the table: callers keep fewer than QSZ in flight. */
static uint16_t post(const struct seg *s, unsigned n)
{
	uint16_t *a = gp(QAREA + 0x1000, 6 + 2 * QSZ);
	uint16_t head = next_desc % QSZ;

	for (unsigned i = 0; i < n; i++)
		set_desc((next_desc + i) % QSZ, s[i].gpa, s[i].len,
		         (s[i].w ? D_WRITE : 0) | (i + 1 < n ? D_NEXT : 0),
		         (next_desc + i + 1) % QSZ);
	next_desc += n;
	a[2 + avail % QSZ] = htole16(head);
	avail++;
	__atomic_store_n(&a[1], htole16(avail), __ATOMIC_RELEASE);
	return head;
}

static uint16_t used_idx(void)
{
	return le16toh(__atomic_load_n((uint16_t *)gp(QAREA + 0x2002, 2), __ATOMIC_ACQUIRE));
}

/* Run the device until the driver has got back everything it posted. */
static void wait_all(void)
{
	for (int i = 0; i < 100000 && used_idx() != avail; i++) {
		ev_run(vm.loop, EVRUN_NOWAIT);
		if (used_idx() != avail)
			usleep(100);
	}
	ck_assert_uint_eq(used_idx(), avail);
}

/* The next used element: its head, and its length in *len. */
static uint16_t used_next(uint32_t *len)
{
	uint32_t e[2];

	ck_assert_uint_ne(used_seen, used_idx());
	memcpy(e, gp(QAREA + 0x2004 + 8 * (used_seen % QSZ), 8), 8);
	used_seen++;
	*len = le32toh(e[1]);
	return (uint16_t)le32toh(e[0]);
}

static void put_hdr(unsigned slot, uint32_t type, uint64_t sector)
{
	uint8_t *h = gp(HDR(slot), 17);

	type = htole32(type);
	sector = htole64(sector);
	memset(h, 0, 8);
	memcpy(h, &type, 4);
	memcpy(h + 8, &sector, 8);
	h[16] = 0xee; /* status, overwritten by the device */
}

static uint8_t status_of(unsigned slot)
{
	return *(uint8_t *)gp(HDR(slot) + 16, 1);
}

/* Post header, one data buffer (none if len is 0) and status in slot. */
static void submit(unsigned slot, uint32_t type, uint64_t sector, uint64_t data, uint32_t len,
                   bool data_w)
{
	struct seg s[3];
	unsigned n = 0;

	put_hdr(slot, type, sector);
	s[n++] = (struct seg){HDR(slot), 16, false};
	if (len)
		s[n++] = (struct seg){data, len, data_w};
	s[n++] = (struct seg){HDR(slot) + 16, 1, true};
	post(s, n);
}

/* One request, waited for; returns its status, used length in *used. */
static int request(uint32_t type, uint64_t sector, uint64_t data, uint32_t len, uint32_t *used)
{
	uint32_t ulen;

	submit(0, type, sector, data, len, type == T_IN || type == T_GET_ID);
	wr(QNOTIFY, 0);
	wait_all();
	used_next(&ulen);
	if (used)
		*used = ulen;
	return status_of(0);
}

/* A posted chain of arbitrary segments, waited for. */
static uint32_t chain(const struct seg *s, unsigned n)
{
	uint32_t len;

	post(s, n);
	wr(QNOTIFY, 0);
	wait_all();
	used_next(&len);
	return len;
}

static void fill(uint64_t gpa, uint32_t len, unsigned seed)
{
	uint8_t *p = gp(gpa, len);

	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

static void file_read(uint64_t off, void *buf, size_t len)
{
	ck_assert_int_eq(pread(disk_fd, buf, len, (off_t)off), (ssize_t)len);
}

static void make_disk(uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

static void open_dev(bool ro)
{
	const char *why = "unset";

	ck_assert_int_eq(blk_create(&vm, path, ro, &why), 0);
	ck_assert_ptr_null(why);
	dev = vm.devs[vm.nr_devs - 1];
	drv_init(false);
}

static void setup(void)
{
	memset(&vm, 0, sizeof(vm));
	ck_assert_int_eq(mem_init(&vm.mem, 64 * MIB), 0);
	vm.loop = ev_loop_new(0);
	ck_assert_ptr_nonnull(vm.loop);
	strcpy(dir, "/tmp/kiln-blk-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/disk.img", dir);
	make_disk(DISK_SIZE);
	disk_fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(disk_fd, 0);
}

static void teardown(void)
{
	virtio_mmio_destroy_all(&vm);
	close(disk_fd);
	unlink(path);
	ck_assert_int_eq(rmdir(dir), 0);
	ev_loop_destroy(vm.loop);
	mem_destroy(&vm.mem);
}

/* ------------------------------------------------------------ tests */

START_TEST(config_and_features)
{
	uint8_t cfg[40];
	uint64_t cap;
	uint32_t v;

	open_dev(false);
	ck_assert_uint_eq(rd(DEVICE_ID), 2);
	wr(DEV_FEAT_SEL, 0);
	v = rd(DEV_FEAT);
	ck_assert_uint_eq(v, (1u << 1) | (1u << 2) | (1u << 6) | (1u << 9) | (1u << 29));
	wr(DEV_FEAT_SEL, 1);
	ck_assert_uint_eq(rd(DEV_FEAT), 1); /* VERSION_1 */
	for (unsigned i = 0; i < 36; i++)
		ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + CONFIG + i, cfg + i, 1, false),
		                 0);
	memcpy(&cap, cfg, 8);
	ck_assert_uint_eq(le64toh(cap), CAPACITY);
	memcpy(&v, cfg + 8, 4);
	ck_assert_uint_eq(le32toh(v), MIB); /* size_max */
	memcpy(&v, cfg + 12, 4);
	ck_assert_uint_eq(le32toh(v), QSZ - 2); /* seg_max */
	memcpy(&v, cfg + 20, 4);
	ck_assert_uint_eq(le32toh(v), 512); /* blk_size */
	/* Past the config space: zeros, never host memory. */
	memset(cfg, 0x55, 8);
	virtio_mmio_access(&vm, dev->base + CONFIG + 34, cfg, 4, false);
	ck_assert_uint_eq(cfg[0] | cfg[1] | cfg[2] | cfg[3], 0);
}
END_TEST

START_TEST(read_write_round_trip)
{
	static const uint64_t sectors[] = {0, 1, 7, 1000, CAPACITY - 1};
	uint8_t back[2048], file[2048];
	uint32_t used;

	open_dev(false);
	for (unsigned i = 0; i < sizeof(sectors) / sizeof(sectors[0]); i++) {
		uint32_t len = sectors[i] == CAPACITY - 1 ? 512 : 2048;

		fill(BUF(1), len, i);
		ck_assert_int_eq(request(T_OUT, sectors[i], BUF(1), len, &used), S_OK);
		ck_assert_uint_eq(used, 1);
		file_read(sectors[i] * 512, file, len);
		ck_assert_mem_eq(file, gp(BUF(1), len), len);
		memset(gp(BUF(2), len), 0, len);
		ck_assert_int_eq(request(T_IN, sectors[i], BUF(2), len, &used), S_OK);
		ck_assert_uint_eq(used, len + 1);
		memcpy(back, gp(BUF(2), len), len);
		ck_assert_mem_eq(back, gp(BUF(1), len), len);
	}
	/* The partial sector past capacity is never touched. */
	ck_assert_int_eq(request(T_IN, CAPACITY - 1, BUF(2), 1024, NULL), S_IOERR);
}
END_TEST

START_TEST(segments)
{
	/* 8 KiB in odd-sized pieces, header split in two, data and status
	 * sharing the last descriptor on the read. */
	struct seg w[] = {
	    {HDR(0), 8, false},         {HDR(0) + 8, 8, false},      {BUF(1), 100, false},
	    {BUF(1) + 100, 412, false}, {BUF(1) + 512, 3000, false}, {BUF(1) + 3512, 4680, false},
	    {HDR(0) + 16, 1, true},
	};
	struct seg r[] = {
	    {HDR(1), 16, false},
	    {BUF(2), 1, true},
	    {BUF(2) + 1, 5000, true},
	    {BUF(2) + 5001, 8192 - 5001 + 1, true}, /* last byte is the status */
	};
	uint8_t file[8192];

	open_dev(false);
	fill(BUF(1), 8192, 9);
	put_hdr(0, T_OUT, 100);
	ck_assert_uint_eq(chain(w, 7), 1);
	ck_assert_uint_eq(status_of(0), S_OK);
	file_read(100 * 512, file, 8192);
	ck_assert_mem_eq(file, gp(BUF(1), 8192), 8192);
	put_hdr(1, T_IN, 100);
	*(uint8_t *)gp(BUF(2) + 8192, 1) = 0xee;
	ck_assert_uint_eq(chain(r, 4), 8193);
	ck_assert_uint_eq(*(uint8_t *)gp(BUF(2) + 8192, 1), S_OK);
	ck_assert_mem_eq(gp(BUF(2), 8192), file, 8192);
}
END_TEST

START_TEST(out_of_range)
{
	uint8_t zero[512] = {0}, file[512];

	open_dev(false);
	fill(BUF(1), 1024, 3);
	ck_assert_int_eq(request(T_OUT, CAPACITY, BUF(1), 512, NULL), S_IOERR);
	ck_assert_int_eq(request(T_OUT, CAPACITY - 1, BUF(1), 1024, NULL), S_IOERR);
	ck_assert_int_eq(request(T_IN, CAPACITY + 1, BUF(1), 512, NULL), S_IOERR);
	ck_assert_int_eq(request(T_OUT, 1ULL << 63, BUF(1), 512, NULL), S_IOERR);
	ck_assert_int_eq(request(T_IN, 1ULL << 63, BUF(1), 512, NULL), S_IOERR);
	/* sector + length wraps round 2^64 */
	ck_assert_int_eq(request(T_OUT, UINT64_MAX, BUF(1), 1024, NULL), S_IOERR);
	ck_assert_int_eq(request(T_IN, UINT64_MAX - 1, BUF(1), 1024, NULL), S_IOERR);
	/* length must be whole sectors */
	ck_assert_int_eq(request(T_OUT, 0, BUF(1), 100, NULL), S_IOERR);
	ck_assert_int_eq(request(T_IN, 0, BUF(1), 513, NULL), S_IOERR);
	file_read(0, file, 512);
	ck_assert_mem_eq(file, zero, 512);
	file_read((CAPACITY - 1) * 512ULL, file, 512);
	ck_assert_mem_eq(file, zero, 512);
	/* zero-length requests at or before the end are fine */
	ck_assert_int_eq(request(T_IN, 0, 0, 0, NULL), S_OK);
	ck_assert_int_eq(request(T_OUT, CAPACITY, 0, 0, NULL), S_OK);
	ck_assert_int_eq(request(T_IN, CAPACITY + 1, 0, 0, NULL), S_IOERR);
}
END_TEST

START_TEST(malformed)
{
	uint8_t zero[512] = {0}, file[512];
	uint32_t len;

	open_dev(false);
	fill(BUF(1), 512, 4);
	/* no status byte: returned unanswered, with nothing written */
	put_hdr(0, T_IN, 0);
	{
		struct seg s[] = {{HDR(0), 16, false}};
		ck_assert_uint_eq(chain(s, 1), 0);
	}
	{
		struct seg s[] = {{HDR(0), 16, false}, {BUF(1), 512, false}};
		put_hdr(0, T_OUT, 0);
		ck_assert_uint_eq(chain(s, 2), 0);
	}
	ck_assert_uint_eq(status_of(0), 0xee);
	/* header too short */
	{
		struct seg s[] = {{HDR(0), 8, false}, {HDR(0) + 16, 1, true}};
		put_hdr(0, T_IN, 0);
		ck_assert_uint_eq(chain(s, 2), 1);
		ck_assert_uint_eq(status_of(0), S_IOERR);
	}
	/* header in a writable buffer */
	{
		struct seg s[] = {{HDR(0), 17, true}};
		put_hdr(0, T_IN, 0);
		ck_assert_uint_eq(chain(s, 1), 17);
		ck_assert_uint_eq(status_of(0), S_IOERR);
	}
	/* read with data for the device; write with writable data */
	{
		struct seg s[] = {
		    {HDR(0), 16, false}, {BUF(1), 512, false}, {HDR(0) + 16, 1, true}};
		put_hdr(0, T_IN, 0);
		chain(s, 3);
		ck_assert_uint_eq(status_of(0), S_IOERR);
	}
	{
		struct seg s[] = {{HDR(0), 16, false}, {BUF(1), 512, true}, {HDR(0) + 16, 1, true}};
		put_hdr(0, T_OUT, 0);
		len = chain(s, 3);
		ck_assert_uint_eq(len, 513);
		ck_assert_uint_eq(status_of(0), S_IOERR);
	}
	file_read(0, file, 512);
	ck_assert_mem_eq(file, zero, 512);
	/* unknown types */
	ck_assert_int_eq(request(11, 0, BUF(1), 512, NULL), S_UNSUPP); /* DISCARD */
	ck_assert_int_eq(request(0xffffffff, 0, 0, 0, NULL), S_UNSUPP);
	/* and the device still works */
	ck_assert_int_eq(request(T_OUT, 0, BUF(1), 512, NULL), S_OK);
	ck_assert_uint_eq(rd(STATUS), 0xf);
}
END_TEST

START_TEST(flush_and_id)
{
	uint32_t used;
	char *id;

	open_dev(false);
	ck_assert_int_eq(request(T_FLUSH, 0, 0, 0, &used), S_OK);
	ck_assert_uint_eq(used, 1);
	memset(gp(BUF(1), 64), 'x', 64);
	ck_assert_int_eq(request(T_GET_ID, 0, BUF(1), 20, &used), S_OK);
	ck_assert_uint_eq(used, 21);
	id = gp(BUF(1), 20);
	ck_assert_mem_eq(id, "disk.img\0\0\0\0\0\0\0\0\0\0\0\0", 20);
	/* a short id buffer gets a prefix */
	memset(gp(BUF(1), 64), 'x', 64);
	ck_assert_int_eq(request(T_GET_ID, 0, BUF(1), 4, NULL), S_OK);
	ck_assert_mem_eq(gp(BUF(1), 5), "diskx", 5);
}
END_TEST

START_TEST(read_only)
{
	uint8_t zero[1024] = {0}, file[1024];
	struct stat st;

	open_dev(true);
	wr(DEV_FEAT_SEL, 0);
	ck_assert_uint_eq(rd(DEV_FEAT) & (1u << 5), 1u << 5); /* VIRTIO_BLK_F_RO */
	fill(BUF(1), 1024, 5);
	ck_assert_int_eq(request(T_OUT, 0, BUF(1), 1024, NULL), S_IOERR);
	file_read(0, file, 1024);
	ck_assert_mem_eq(file, zero, 1024);
	ck_assert_int_eq(pwrite(disk_fd, "hello", 5, 512), 5);
	ck_assert_int_eq(request(T_IN, 1, BUF(2), 512, NULL), S_OK);
	ck_assert_mem_eq(gp(BUF(2), 5), "hello", 5);
	ck_assert_int_eq(request(T_FLUSH, 0, 0, 0, NULL), S_OK);
	ck_assert_int_eq(fstat(disk_fd, &st), 0);
	ck_assert_int_eq(st.st_size, DISK_SIZE);
}
END_TEST

START_TEST(many_segments)
{
	struct seg s[QSZ + 1];
	unsigned n = 0;

	open_dev(false);
	ck_assert_int_eq(pwrite(disk_fd, "0123456789", 10, 0), 10);
	/* seg_max data segments: the most a chain in this queue can hold */
	put_hdr(0, T_IN, 0);
	s[n++] = (struct seg){HDR(0), 16, false};
	for (unsigned i = 0; i < QSZ - 2; i++)
		s[n++] = (struct seg){BUF(1) + i * 512, 512, true};
	s[n++] = (struct seg){HDR(0) + 16, 1, true};
	ck_assert_uint_eq(chain(s, n), (QSZ - 2) * 512 + 1);
	ck_assert_uint_eq(status_of(0), S_OK);
	ck_assert_mem_eq(gp(BUF(1), 10), "0123456789", 10);
	/* A driver that ignores seg_max is still served: the whole table as
	 * one chain, the status byte at the end of the last data buffer. */
	drv_init(false);
	n = 0;
	s[n++] = (struct seg){HDR(0), 16, false};
	for (unsigned i = 0; i < QSZ - 1; i++)
		s[n++] = (struct seg){BUF(2) + i * 512, i == QSZ - 2 ? 513 : 512, true};
	ck_assert_uint_eq(chain(s, n), (QSZ - 1) * 512 + 1);
	ck_assert_uint_eq(*(uint8_t *)gp(BUF(2) + (QSZ - 1) * 512, 1), S_OK);
	ck_assert_mem_eq(gp(BUF(2), 10), "0123456789", 10);
}
END_TEST

START_TEST(huge_requests)
{
	uint8_t *big;

	make_disk(1ULL << 30); /* sparse 1 GiB */
	open_dev(false);
	/* a 48 MiB read, up to the end of guest RAM; past the disk's end */
	ck_assert_int_eq(request(T_IN, 0, BIG, 48 * MIB, NULL), S_OK);
	ck_assert_int_eq(request(T_IN, (1ULL << 21) - 1, BIG, 1024, NULL), S_IOERR);
	{
		struct seg s[] = {
		    {HDR(0), 16, false}, {BIG, 0xfffffe00u, true}, {HDR(0) + 16, 1, true}};
		put_hdr(0, T_IN, 0);
		post(s, 3);
		wr(QNOTIFY, 0);
		for (int i = 0; i < 100; i++)
			ev_run(vm.loop, EVRUN_NOWAIT);
		/* a buffer outside guest RAM breaks the ring, nothing more */
		ck_assert_uint_eq(rd(STATUS) & 0x40, 0x40);
		ck_assert_uint_eq(used_idx(), (uint16_t)(avail - 1));
	}
	drv_init(false);
	/* four 16 MiB writes at once, more than one batch's worth of bytes */
	fill(BIG, 16 * MIB, 7);
	for (unsigned i = 0; i < 4; i++)
		submit(i, T_OUT, i * 32768ULL, BIG, 16 * MIB, false);
	wr(QNOTIFY, 0);
	wait_all();
	big = malloc(16 * MIB);
	ck_assert_ptr_nonnull(big);
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_uint_eq(status_of(i), S_OK);
		file_read(i * 16ULL * MIB, big, 16 * MIB);
		ck_assert(memcmp(big, gp(BIG, 16 * MIB), 16 * MIB) == 0);
	}
	free(big);
}
END_TEST

/* More requests than one batch, interleaved writes and reads. */
START_TEST(many_requests)
{
	const unsigned n = 40;

	open_dev(false);
	drv_init(_i == 1); /* with and without VIRTIO_RING_F_EVENT_IDX */
	for (unsigned i = 0; i < n; i++) {
		fill(BUF(i % 16) + (i / 16) * 4096, 1024, i);
		submit(i, T_OUT, 2 * i, BUF(i % 16) + (i / 16) * 4096, 1024, false);
	}
	wr(QNOTIFY, 0);
	wait_all();
	for (unsigned i = 0; i < n; i++) {
		uint8_t file[1024];

		ck_assert_uint_eq(status_of(i), S_OK);
		file_read(2 * i * 512ULL, file, 1024);
		ck_assert_mem_eq(file, gp(BUF(i % 16) + (i / 16) * 4096, 1024), 1024);
	}
	next_desc = 0;
	for (unsigned i = 0; i < n; i++)
		submit(i, T_IN, 2 * i, BUF(20) + i * 1024, 1024, true);
	wr(QNOTIFY, 0);
	wait_all();
	for (unsigned i = 0; i < n; i++) {
		ck_assert_uint_eq(status_of(i), S_OK);
		ck_assert_mem_eq(gp(BUF(20) + i * 1024, 1024),
		                 gp(BUF(i % 16) + (i / 16) * 4096, 1024), 1024);
	}
}
END_TEST

START_TEST(host_errors)
{
	struct rlimit old, rl;

	open_dev(false);
	fill(BUF(1), 1024, 1);
	/* a write the host refuses (file size limit: EFBIG). The limit is
	 * the whole process's: Check's own message file (each passing assert
	 * appends to it) must stay below it, so it is 512 KiB, not a page */
	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	rl = old;
	rl.rlim_cur = 512 * 1024;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	ck_assert_int_eq(request(T_OUT, 1100, BUF(1), 1024, NULL), S_IOERR);
	ck_assert_int_eq(request(T_OUT, 0, BUF(1), 1024, NULL), S_OK);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	/* the file shrank under the device: reads past its end fail */
	ck_assert_int_eq(ftruncate(disk_fd, 4096), 0);
	ck_assert_int_eq(request(T_IN, 0, BUF(2), 1024, NULL), S_OK);
	ck_assert_mem_eq(gp(BUF(2), 1024), gp(BUF(1), 1024), 1024);
	ck_assert_int_eq(request(T_IN, 100, BUF(2), 1024, NULL), S_IOERR);
}
END_TEST

START_TEST(reset_and_drain)
{
	uint8_t file[1024];

	open_dev(false);
	/* reset with a batch in flight: must wait for it, then work again */
	for (unsigned i = 0; i < 40; i++)
		submit(i, T_OUT, 2 * i, BUF(1), 1024, false);
	fill(BUF(1), 1024, 2);
	wr(QNOTIFY, 0);
	ev_run(vm.loop, EVRUN_NOWAIT);
	wr(STATUS, 0);
	ck_assert_uint_eq(rd(STATUS), 0);
	drv_init(false);
	ck_assert_int_eq(request(T_IN, 0, BUF(2), 512, NULL), S_OK);
	/* drain at VM stop finishes what was posted, even unkicked */
	for (unsigned i = 0; i < 40; i++)
		submit(i, T_OUT, 100 + 2 * i, BUF(1), 1024, false);
	virtio_mmio_drain_all(&vm);
	ck_assert_uint_eq(used_idx(), avail);
	for (unsigned i = 0; i < 40; i++) {
		ck_assert_uint_eq(status_of(i), S_OK);
		file_read((100 + 2 * i) * 512ULL, file, 1024);
		ck_assert_mem_eq(file, gp(BUF(1), 1024), 1024);
	}
}
END_TEST

START_TEST(create_errors)
{
	const char *why;
	char p[128];

	ck_assert_int_eq(blk_create(&vm, "/nonexistent/disk", false, &why), -ENOENT);
	ck_assert_ptr_null(why);
	ck_assert_int_eq(blk_create(&vm, dir, true, &why), -EINVAL);
	ck_assert_str_eq(why, "not a regular file or block device");
	ck_assert_int_eq(blk_create(&vm, "/dev/null", false, &why), -EINVAL);
	snprintf(p, sizeof(p), "%s/small", dir);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	ck_assert_int_eq(blk_create(&vm, p, false, &why), -EINVAL);
	ck_assert_str_eq(why, "smaller than one 512-byte sector");
	ck_assert_int_eq(truncate(p, 511), 0);
	ck_assert_int_eq(blk_create(&vm, p, false, &why), -EINVAL);
	unlink(p);
	ck_assert_int_eq(vm.nr_devs, 0);
	/* one writer, or any number of readers */
	ck_assert_int_eq(blk_create(&vm, path, false, &why), 0);
	ck_assert_int_eq(blk_create(&vm, path, false, &why), -EWOULDBLOCK);
	ck_assert_str_eq(why, "in use by another process");
	ck_assert_int_eq(blk_create(&vm, path, true, &why), -EWOULDBLOCK);
	virtio_mmio_destroy_all(&vm);
	ck_assert_int_eq(blk_create(&vm, path, true, &why), 0);
	ck_assert_int_eq(blk_create(&vm, path, true, &why), 0);
	ck_assert_int_eq(blk_create(&vm, path, false, &why), -EWOULDBLOCK);
	ck_assert_int_eq(vm.nr_devs, 2);
}
END_TEST

static Suite *blk_suite(void)
{
	Suite *s = suite_create("virtio-blk");
	TCase *t = tcase_create("blk");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, config_and_features);
	tcase_add_test(t, read_write_round_trip);
	tcase_add_test(t, segments);
	tcase_add_test(t, out_of_range);
	tcase_add_test(t, malformed);
	tcase_add_test(t, flush_and_id);
	tcase_add_test(t, read_only);
	tcase_add_test(t, many_segments);
	tcase_add_test(t, huge_requests);
	tcase_add_loop_test(t, many_requests, 0, 2);
	tcase_add_test(t, host_errors);
	tcase_add_test(t, reset_and_drain);
	tcase_add_test(t, create_errors);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(blk_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
