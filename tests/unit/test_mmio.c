/* SPDX-License-Identifier: MIT */
/*
 * virtio-mmio register semantics, and the console and rng devices end to end,
 * without KVM: the KVM plumbing is stubbed with plain eventfds, so an
 * "interrupt" is a count on irq_fd and a kick is a write to a kick eventfd.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../../vmm/virtio/virtio.h"
#include "virtio_regs.h"

#define QSZ      8
#define QAREA(q) (0x10000 + (q)*0x4000)
#define BUFA     0x100000
#define BUFB     0x200000

static struct vm vm;

struct dummy {
	int notified[2], activated, resets, destroyed, config_writes;
};
static struct dummy dummy;

static void d_config_read(struct virtio_dev *dev, uint32_t off, void *buf, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		((uint8_t *)buf)[i] = (uint8_t)(0xa0 + off + i);
}

static void d_config_write(struct virtio_dev *dev, uint32_t off, const void *buf, uint32_t len)
{
	dummy.config_writes++;
}

static void d_notify(struct virtio_dev *dev, unsigned q)
{
	dummy.notified[q]++;
}

static void d_activate(struct virtio_dev *dev)
{
	dummy.activated++;
}

static void d_reset(struct virtio_dev *dev)
{
	dummy.resets++;
}

static void d_destroy(struct virtio_dev *dev)
{
	dummy.destroyed++;
}

static const struct virtio_dev_ops dummy_ops = {
    .name = "dummy",
    .device_id = 42,
    .features = 1ULL << VIRTIO_RING_F_EVENT_IDX,
    .nr_queues = 2,
    .queue_max = 16,
    .config_size = 8,
    .config_read = d_config_read,
    .config_write = d_config_write,
    .queue_notify = d_notify,
    .activate = d_activate,
    .reset = d_reset,
    .destroy = d_destroy,
};

static void setup(void)
{
	memset(&vm, 0, sizeof(vm));
	memset(&dummy, 0, sizeof(dummy));
	ck_assert_int_eq(mem_init(&vm.mem, 16 << 20), 0);
	vm.loop = ev_loop_new(0);
	ck_assert_ptr_nonnull(vm.loop);
}

static void teardown(void)
{
	virtio_mmio_destroy_all(&vm);
	ev_loop_destroy(vm.loop);
	mem_destroy(&vm.mem);
}

static struct virtio_dev *add_dummy(void)
{
	struct virtio_dev *dev = virtio_mmio_add(&vm, &dummy_ops, &dummy);

	ck_assert_ptr_nonnull(dev);
	return dev;
}

static void wr(struct virtio_dev *dev, uint32_t off, uint32_t val)
{
	uint32_t le = htole32(val);

	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + off, (uint8_t *)&le, 4, true), 0);
}

static uint32_t rd(struct virtio_dev *dev, uint32_t off)
{
	uint32_t le = 0xdeadbeef;

	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + off, (uint8_t *)&le, 4, false), 0);
	return le32toh(le);
}

static uint64_t count(int fd)
{
	uint64_t n = 0;

	return read(fd, &n, sizeof(n)) == sizeof(n) ? n : 0;
}

static void spin(void)
{
	int i;

	for (i = 0; i < 8; i++)
		ev_run(vm.loop, EVRUN_NOWAIT);
}

static void *gp(uint64_t gpa, uint64_t len)
{
	void *p = gpa_ptr(&vm.mem, gpa, len);

	ck_assert_ptr_nonnull(p);
	return p;
}

/* A minimal driver: features, queues, then DRIVER_OK separately. */
static void drv_setup(struct virtio_dev *dev, unsigned nq)
{
	unsigned q;

	wr(dev, STATUS, 1);
	wr(dev, STATUS, 3);
	wr(dev, DRV_FEAT_SEL, 1);
	wr(dev, DRV_FEAT, 1); /* VIRTIO_F_VERSION_1 */
	wr(dev, STATUS, 0xb);
	ck_assert_uint_eq(rd(dev, STATUS), 0xb);
	for (q = 0; q < nq; q++) {
		wr(dev, QSEL, q);
		wr(dev, QNUM, QSZ);
		wr(dev, QDESC, QAREA(q));
		wr(dev, QDRIVER, QAREA(q) + 0x1000);
		wr(dev, QDEVICE, QAREA(q) + 0x2000);
		wr(dev, QREADY, 1);
		ck_assert_uint_eq(rd(dev, QREADY), 1);
	}
}

static void drv_ok(struct virtio_dev *dev)
{
	wr(dev, STATUS, 0xf);
	ck_assert_uint_eq(rd(dev, STATUS), 0xf);
}

static void desc(unsigned q, unsigned i, uint64_t addr, uint32_t len, uint16_t flags)
{
	uint8_t *d = gp(QAREA(q) + 16 * i, 16);
	uint16_t next = htole16(i + 1);

	addr = htole64(addr);
	len = htole32(len);
	flags = htole16(flags);
	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

static void avail_add(unsigned q, uint16_t head)
{
	uint16_t *a = gp(QAREA(q) + 0x1000, 6 + 2 * QSZ);
	uint16_t idx = le16toh(a[1]);

	a[2 + idx % QSZ] = htole16(head);
	a[1] = htole16(idx + 1);
}

/* Post a one-descriptor chain whose index is its avail slot. */
static void post(unsigned q, uint64_t addr, uint32_t len, bool writable)
{
	uint16_t *a = gp(QAREA(q) + 0x1000, 6 + 2 * QSZ);
	uint16_t i = le16toh(a[1]) % QSZ;

	desc(q, i, addr, len, writable ? 2 : 0);
	avail_add(q, i);
}

static uint16_t used_idx(unsigned q)
{
	return le16toh(((uint16_t *)gp(QAREA(q) + 0x2000, 4))[1]);
}

static uint32_t used_len(unsigned q, unsigned i)
{
	uint32_t v;

	memcpy(&v, gp(QAREA(q) + 0x2000 + 8 + 8 * (i % QSZ), 4), 4);
	return le32toh(v);
}

START_TEST(ids_and_slots)
{
	struct virtio_dev *a = add_dummy(), *b = add_dummy();
	uint8_t buf[4];

	ck_assert_uint_eq(rd(a, MAGIC), 0x74726976);
	ck_assert_uint_eq(rd(a, VERSION), 2);
	ck_assert_uint_eq(rd(a, DEVICE_ID), 42);
	ck_assert_uint_eq(rd(a, VENDOR_ID), 0x4e4c494b);
	ck_assert_uint_eq(a->base, KILN_GPA_MMIO_BASE);
	ck_assert_uint_eq(b->base, KILN_GPA_MMIO_BASE + KILN_MMIO_SIZE);
	ck_assert_uint_eq(b->vector, KILN_VEC_DEVICE0 + 1);
	ck_assert_uint_eq(rd(a, SHM_LEN), 0xffffffff);
	ck_assert_int_eq(virtio_mmio_access(&vm, b->base + KILN_MMIO_SIZE, buf, 4, false), -ENOENT);
	ck_assert_int_eq(virtio_mmio_access(&vm, KILN_GPA_MMIO_BASE - 4, buf, 4, false), -ENOENT);
}
END_TEST

START_TEST(bad_width)
{
	struct virtio_dev *dev = add_dummy();
	uint8_t buf[4] = {1, 2, 3, 4};

	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + MAGIC, buf, 2, false), 0);
	ck_assert_uint_eq(buf[0] | buf[1], 0);
	memset(buf, 0xff, 4);
	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + MAGIC + 2, buf, 4, false), 0);
	ck_assert_uint_eq(buf[0] | buf[3], 0);
	buf[0] = 1;
	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + STATUS, buf, 1, true), 0);
	ck_assert_uint_eq(rd(dev, STATUS), 0);
}
END_TEST

START_TEST(features)
{
	struct virtio_dev *dev = add_dummy();

	ck_assert_uint_eq(rd(dev, DEV_FEAT), 1u << VIRTIO_RING_F_EVENT_IDX);
	wr(dev, DEV_FEAT_SEL, 1);
	ck_assert_uint_eq(rd(dev, DEV_FEAT), 1);
	wr(dev, DEV_FEAT_SEL, 2);
	ck_assert_uint_eq(rd(dev, DEV_FEAT), 0);
	wr(dev, STATUS, 3);
	/* VERSION_1 missing: refused. */
	wr(dev, STATUS, 0xb);
	ck_assert_uint_eq(rd(dev, STATUS), 3);
	/* Not offered (bit 5): refused. */
	wr(dev, DRV_FEAT_SEL, 1);
	wr(dev, DRV_FEAT, 1);
	wr(dev, DRV_FEAT_SEL, 0);
	wr(dev, DRV_FEAT, 1u << 5);
	wr(dev, STATUS, 0xb);
	ck_assert_uint_eq(rd(dev, STATUS), 3);
	wr(dev, DRV_FEAT, 1u << VIRTIO_RING_F_EVENT_IDX);
	wr(dev, STATUS, 0xb);
	ck_assert_uint_eq(rd(dev, STATUS), 0xb);
	/* Frozen after FEATURES_OK. */
	wr(dev, DRV_FEAT, 0);
	ck_assert_uint_eq(dev->driver_features, (1ULL << 32) | (1u << VIRTIO_RING_F_EVENT_IDX));
}
END_TEST

START_TEST(queue_regs)
{
	struct virtio_dev *dev = add_dummy();

	drv_setup(dev, 0);
	wr(dev, QSEL, 5);
	ck_assert_uint_eq(rd(dev, QNUM_MAX), 0);
	wr(dev, QSEL, 1);
	ck_assert_uint_eq(rd(dev, QNUM_MAX), 16);
	wr(dev, QNUM, 6);
	wr(dev, QNUM, 32);
	ck_assert_uint_eq(dev->vq[1].size, 16);
	wr(dev, QNUM, QSZ);
	ck_assert_uint_eq(dev->vq[1].size, QSZ);
	wr(dev, QDESC, QAREA(1) + 8); /* misaligned */
	wr(dev, QDRIVER, QAREA(1) + 0x1000);
	wr(dev, QDEVICE, QAREA(1) + 0x2000);
	wr(dev, QREADY, 1);
	ck_assert_uint_eq(rd(dev, QREADY), 0);
	wr(dev, QDESC + 4, 1); /* high half: 4 GiB up, not RAM */
	wr(dev, QDESC, QAREA(1));
	ck_assert_uint_eq(dev->vq[1].desc_gpa, 0x100000000ULL + QAREA(1));
	wr(dev, QREADY, 1);
	ck_assert_uint_eq(rd(dev, QREADY), 0);
	wr(dev, QDESC + 4, 0);
	wr(dev, QREADY, 1);
	ck_assert_uint_eq(rd(dev, QREADY), 1);
	ck_assert(dev->vq[1].event_idx == false);
	/* Locked while ready. */
	wr(dev, QNUM, 4);
	wr(dev, QDESC, 0);
	ck_assert_uint_eq(dev->vq[1].size, QSZ);
	ck_assert_uint_eq(dev->vq[1].desc_gpa, QAREA(1));
}
END_TEST

START_TEST(status_and_reset)
{
	struct virtio_dev *dev = add_dummy();

	wr(dev, STATUS, 7); /* DRIVER_OK before FEATURES_OK */
	ck_assert_uint_eq(rd(dev, STATUS), 3);
	ck_assert_int_eq(dummy.activated, 0);
	drv_setup(dev, 2);
	drv_ok(dev);
	ck_assert_int_eq(dummy.activated, 1);
	wr(dev, STATUS, 1); /* bits cannot be cleared but by reset */
	ck_assert_uint_eq(rd(dev, STATUS), 0xf);
	wr(dev, STATUS, 0);
	ck_assert_int_eq(dummy.resets, 1);
	ck_assert_uint_eq(rd(dev, STATUS), 0);
	ck_assert_uint_eq(rd(dev, QREADY), 0);
	ck_assert_uint_eq(dev->driver_features, 0);
}
END_TEST

START_TEST(kicks)
{
	struct virtio_dev *dev = add_dummy();

	drv_setup(dev, 2);
	wr(dev, QNOTIFY, 1); /* before DRIVER_OK: dropped */
	spin();
	ck_assert_int_eq(dummy.notified[1], 0);
	drv_ok(dev); /* ...but owed: replayed on every ready queue */
	spin();
	ck_assert_int_eq(dummy.notified[0], 1);
	ck_assert_int_eq(dummy.notified[1], 1);
	wr(dev, QNOTIFY, 1);
	wr(dev, QNOTIFY, 7);
	spin();
	ck_assert_int_eq(dummy.notified[0], 1);
	ck_assert_int_eq(dummy.notified[1], 2);
	virtio_dev_kick(dev, 0); /* what an ioeventfd hit looks like */
	spin();
	ck_assert_int_eq(dummy.notified[0], 2);
	dev->vq[0].broken = true;
	virtio_dev_kick(dev, 0);
	spin();
	ck_assert_int_eq(dummy.notified[0], 2);
}
END_TEST

START_TEST(interrupts)
{
	struct virtio_dev *dev = add_dummy();

	drv_setup(dev, 1);
	virtio_dev_push(dev, 0, 0, 0); /* no DRIVER_OK: no interrupt */
	ck_assert_uint_eq(count(dev->irq_fd), 0);
	drv_ok(dev);
	virtio_dev_push(dev, 0, 0, 0);
	ck_assert_uint_eq(count(dev->irq_fd), 1);
	ck_assert_uint_eq(rd(dev, INT_STATUS), 1);
	wr(dev, INT_ACK, 1);
	ck_assert_uint_eq(rd(dev, INT_STATUS), 0);
	((uint16_t *)gp(QAREA(0) + 0x1000, 2))[0] = htole16(1); /* NO_INTERRUPT */
	virtio_dev_push(dev, 0, 0, 0);
	ck_assert_uint_eq(count(dev->irq_fd), 0);
	ck_assert_uint_eq(used_idx(0), 3);
	virtio_dev_fail(dev, "test");
	ck_assert_uint_eq(rd(dev, STATUS) & 0x40, 0x40);
	ck_assert_uint_eq(rd(dev, INT_STATUS), 2);
	ck_assert_uint_eq(count(dev->irq_fd), 1);
}
END_TEST

START_TEST(config)
{
	struct virtio_dev *dev = add_dummy();
	uint8_t buf[4];

	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + CONFIG + 1, buf, 2, false), 0);
	ck_assert_uint_eq(buf[0], 0xa1);
	ck_assert_uint_eq(buf[1], 0xa2);
	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + CONFIG + 4, buf, 4, false), 0);
	ck_assert_uint_eq(buf[3], 0xa7);
	memset(buf, 0xff, 4);
	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + CONFIG + 6, buf, 4, false), 0);
	ck_assert_uint_eq(buf[0] | buf[1] | buf[2] | buf[3], 0);
	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + 0xffc, buf, 4, true), 0);
	ck_assert_int_eq(dummy.config_writes, 0);
	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + CONFIG, buf, 1, true), 0);
	ck_assert_int_eq(dummy.config_writes, 1);
}
END_TEST

START_TEST(destroy)
{
	add_dummy();
	add_dummy();
	virtio_mmio_destroy_all(&vm);
	ck_assert_int_eq(vm.nr_devs, 0);
	ck_assert_int_eq(dummy.destroyed, 2);
}
END_TEST

static int in[2], out[2];

static struct virtio_dev *add_console(bool with_input)
{
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	ck_assert_int_eq(console_create(&vm, with_input ? in[0] : -1, out[1]), 0);
	return vm.devs[vm.nr_devs - 1];
}

static void close_pipes(void)
{
	close(in[0]);
	close(in[1]);
	close(out[0]);
	close(out[1]);
}

START_TEST(console_rx)
{
	struct virtio_dev *dev = add_console(true);

	drv_setup(dev, 2);
	post(0, BUFA, 64, true);
	drv_ok(dev);
	spin();
	ck_assert_uint_eq(used_idx(0), 0);
	ck_assert_int_eq(write(in[1], "hi", 2), 2);
	spin();
	ck_assert_uint_eq(used_idx(0), 1);
	ck_assert_uint_eq(used_len(0, 0), 2);
	ck_assert_mem_eq(gp(BUFA, 2), "hi", 2);
	ck_assert_uint_ge(count(dev->irq_fd), 1);
	close(in[1]);
	in[1] = -1;
	spin(); /* no buffer posted: end of file waits */
	ck_assert_uint_eq(used_idx(0), 1);
	post(0, BUFA, 64, true);
	wr(dev, QNOTIFY, 0);
	spin();
	ck_assert_uint_eq(used_idx(0), 2);
	ck_assert_uint_eq(used_len(0, 1), 0);
	post(0, BUFA, 64, true); /* exactly one end of file */
	wr(dev, QNOTIFY, 0);
	spin();
	ck_assert_uint_eq(used_idx(0), 2);
	close_pipes();
}
END_TEST

START_TEST(console_no_input)
{
	struct virtio_dev *dev = add_console(false);

	drv_setup(dev, 2);
	drv_ok(dev);
	post(0, BUFA, 64, true);
	post(0, BUFA, 64, true);
	wr(dev, QNOTIFY, 0);
	spin();
	ck_assert_uint_eq(used_idx(0), 1);
	ck_assert_uint_eq(used_len(0, 0), 0);
	close_pipes();
}
END_TEST

START_TEST(console_tx)
{
	struct virtio_dev *dev = add_console(true);
	char buf[16];

	drv_setup(dev, 2);
	drv_ok(dev);
	memcpy(gp(BUFB, 5), "hello", 5);
	post(1, BUFB, 5, false);
	wr(dev, QNOTIFY, 1);
	spin();
	ck_assert_int_eq(read(out[0], buf, sizeof(buf)), 5);
	ck_assert_mem_eq(buf, "hello", 5);
	ck_assert_uint_eq(used_idx(1), 1);
	close_pipes();
}
END_TEST

#define BIG (16 * 1024)

static void *reader(void *arg)
{
	static char got[BIG + 5];
	size_t n = 0;
	ssize_t r;

	while (n < sizeof(got) && (r = read(out[0], got + n, sizeof(got) - n)) > 0)
		n += (size_t)r;
	return n == sizeof(got) && !memcmp(got + BIG, "tail!", 5) ? got : NULL;
}

/* out_fd full: the first chain is held, the second not even taken. */
static struct virtio_dev *console_stuck(void)
{
	struct virtio_dev *dev = add_console(true);

	ck_assert_int_ge(fcntl(out[1], F_SETPIPE_SZ, 4096), 4096);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	drv_setup(dev, 2);
	drv_ok(dev);
	memset(gp(BUFB, BIG), 'x', BIG);
	memcpy(gp(BUFA, 5), "tail!", 5);
	post(1, BUFB, BIG, false);
	post(1, BUFA, 5, false);
	wr(dev, QNOTIFY, 1);
	spin();
	ck_assert_uint_eq(used_idx(1), 0);
	ck_assert_uint_eq(dev->vq[1].last_avail, 1);
	return dev;
}

START_TEST(console_backpressure)
{
	struct virtio_dev *dev = console_stuck();
	char buf[4096];
	size_t total = 0;
	ssize_t r;
	int i;

	for (i = 0; i < 100 && used_idx(1) < 2; i++) {
		while ((r = read(out[0], buf, sizeof(buf))) > 0)
			total += (size_t)r;
		spin();
	}
	while ((r = read(out[0], buf, sizeof(buf))) > 0)
		total += (size_t)r;
	ck_assert_uint_eq(used_idx(1), 2);
	ck_assert_uint_eq(total, BIG + 5);
	(void)dev;
	close_pipes();
}
END_TEST

START_TEST(console_drain)
{
	struct virtio_dev *dev = console_stuck();
	pthread_t t;
	void *ok;

	fcntl(out[0], F_SETFL, 0);
	ck_assert_int_eq(pthread_create(&t, NULL, reader, NULL), 0);
	virtio_mmio_drain_all(&vm);
	ck_assert_int_eq(pthread_join(t, &ok), 0);
	ck_assert_ptr_nonnull(ok);
	ck_assert_uint_eq(used_idx(1), 2);
	(void)dev;
	close_pipes();
}
END_TEST

START_TEST(rng)
{
	struct virtio_dev *dev;
	const uint8_t *a, *b;
	unsigned i, nz = 0, untouched = 0;

	ck_assert_int_eq(rng_create(&vm), 0);
	dev = vm.devs[0];
	drv_setup(dev, 1);
	drv_ok(dev);
	desc(0, 0, BUFA, 32, 2 | 1); /* WRITE | NEXT */
	desc(0, 1, BUFB, 100000, 2);
	avail_add(0, 0);
	desc(0, 2, BUFA + 64, 16, 0); /* nothing writable: used length 0 */
	avail_add(0, 2);
	wr(dev, QNOTIFY, 0);
	spin();
	ck_assert_uint_eq(used_idx(0), 2);
	ck_assert_uint_eq(used_len(0, 0), 64 * 1024);
	ck_assert_uint_eq(used_len(0, 1), 0);
	a = gp(BUFA, 32);
	b = gp(BUFB, 100000);
	for (i = 0; i < 32; i++)
		nz += a[i] != 0;
	ck_assert_uint_gt(nz, 0);
	for (i = 64 * 1024 - 32; i < 100000; i++)
		untouched += b[i] == 0;
	ck_assert_uint_eq(untouched, 100000 - (64 * 1024 - 32));
}
END_TEST

static Suite *mmio_suite(void)
{
	Suite *s = suite_create("virtio-mmio");
	TCase *t = tcase_create("transport");
	TCase *d = tcase_create("devices");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, ids_and_slots);
	tcase_add_test(t, bad_width);
	tcase_add_test(t, features);
	tcase_add_test(t, queue_regs);
	tcase_add_test(t, status_and_reset);
	tcase_add_test(t, kicks);
	tcase_add_test(t, interrupts);
	tcase_add_test(t, config);
	tcase_add_test(t, destroy);
	suite_add_tcase(s, t);
	tcase_add_checked_fixture(d, setup, teardown);
	tcase_add_test(d, console_rx);
	tcase_add_test(d, console_no_input);
	tcase_add_test(d, console_tx);
	tcase_add_test(d, console_backpressure);
	tcase_add_test(d, console_drain);
	tcase_add_test(d, rng);
	suite_add_tcase(s, d);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mmio_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
