/* SPDX-License-Identifier: MIT */
/*
 * A virtio-mmio device's snapshot state (vmm/virtio/mmio_state.c): a saved
 * device restores onto a fresh one and goes on where it was; every blob
 * that is malformed or does not fit the device is refused with a message,
 * and the device is left untouched. KVM plumbing stubbed as in test_mmio.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <ev.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../../vmm/virtio/virtio.h"
#include "virtio_regs.h"

/* The persisted layout (a copy: the test also pins the format). */
struct vq_state {
	uint64_t desc_gpa, avail_gpa, used_gpa;
	uint16_t size, last_avail, used_idx, signalled_used;
	uint8_t ready, broken, event_idx, reserved[5];
};
struct dev_state {
	uint32_t device_id, nr_queues;
	uint64_t device_features, driver_features;
	uint32_t status, queue_sel, dev_features_sel, drv_features_sel;
	uint32_t interrupt_status, config_generation, dev_len, reserved;
	struct vq_state vq[8];
};
_Static_assert(sizeof(struct dev_state) == 376, "virtio_state layout");

#define QSZ      8
#define QAREA(q) (0x10000 + (q)*0x4000)

static struct vm vm;
static int notified;

static void d_notify(struct virtio_dev *dev, unsigned q)
{
	notified++;
}

static const struct virtio_dev_ops dummy_ops = {
    .name = "dummy",
    .device_id = 42,
    .features = 1ULL << VIRTIO_RING_F_EVENT_IDX,
    .nr_queues = 2,
    .queue_max = 16,
    .queue_notify = d_notify,
};

static const struct virtio_dev_ops other_ops = {
    .name = "other",
    .device_id = 43,
    .nr_queues = 2,
    .queue_max = 16,
    .queue_notify = d_notify,
};

static void setup(void)
{
	memset(&vm, 0, sizeof(vm));
	notified = 0;
	ck_assert_int_eq(mem_init(&vm.mem, 16 << 20), 0);
	vm.loop = ev_loop_new(0);
}

static void teardown(void)
{
	virtio_mmio_destroy_all(&vm);
	ev_loop_destroy(vm.loop);
	mem_destroy(&vm.mem);
}

static void wr(struct virtio_dev *dev, uint32_t off, uint32_t val)
{
	uint32_t le = htole32(val);

	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + off, (uint8_t *)&le, 4, true), 0);
}

static uint32_t rd(struct virtio_dev *dev, uint32_t off)
{
	uint32_t le = 0;

	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + off, (uint8_t *)&le, 4, false), 0);
	return le32toh(le);
}

static struct virtio_dev *configured(void)
{
	struct virtio_dev *dev = virtio_mmio_add(&vm, &dummy_ops, NULL);

	ck_assert_ptr_nonnull(dev);
	wr(dev, STATUS, 3);
	wr(dev, DRV_FEAT_SEL, 1);
	wr(dev, DRV_FEAT, 1);
	wr(dev, DRV_FEAT_SEL, 0);
	wr(dev, DRV_FEAT, 1u << VIRTIO_RING_F_EVENT_IDX);
	wr(dev, STATUS, 0xb);
	for (unsigned q = 0; q < 2; q++) {
		wr(dev, QSEL, q);
		wr(dev, QNUM, QSZ);
		wr(dev, QDESC, QAREA(q));
		wr(dev, QDRIVER, QAREA(q) + 0x1000);
		wr(dev, QDEVICE, QAREA(q) + 0x2000);
		wr(dev, QREADY, 1);
	}
	wr(dev, STATUS, 0xf);
	/* Some traffic: the indices must survive. */
	dev->vq[1].last_avail = 5;
	dev->vq[1].used_idx = 5;
	dev->vq[1].signalled_used = 4;
	return dev;
}

START_TEST(round_trip)
{
	struct virtio_dev *a = configured(), *b = virtio_mmio_add(&vm, &dummy_ops, NULL);
	uint8_t buf[VIRTIO_STATE_MAX];
	char why[256] = "";
	int n = virtio_mmio_save(a, buf, sizeof(buf));

	ck_assert_int_eq(n, (int)sizeof(struct dev_state));
	ck_assert_int_eq(
	    virtio_mmio_restore(b, buf, (uint32_t)n, VIRTIO_STATE_VERSION, true, why, sizeof(why)),
	    0);
	ck_assert_uint_eq(rd(b, STATUS), 0xf);
	wr(b, QSEL, 1);
	ck_assert_uint_eq(rd(b, QREADY), 1);
	ck_assert_uint_eq(b->vq[1].size, QSZ);
	ck_assert_uint_eq(b->vq[1].last_avail, 5);
	ck_assert_uint_eq(b->vq[1].used_idx, 5);
	ck_assert_uint_eq(b->vq[1].signalled_used, 4);
	ck_assert(b->vq[1].event_idx);
	ck_assert_uint_eq(b->vq[1].used_gpa, QAREA(1) + 0x2000);
	ck_assert_uint_eq(b->driver_features,
	                  (1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_RING_F_EVENT_IDX));
	/* Ready queues are kicked, so the device looks at what waits there. */
	virtio_mmio_restored_all(&vm);
	for (int i = 0; i < 8; i++)
		ev_run(vm.loop, EVRUN_NOWAIT);
	ck_assert_int_ge(notified, 2);
}
END_TEST

/* Restoring bad onto a fresh device fails naming want; the device stays
 * as it was (reset). */
static void refused(const struct dev_state *bad, uint32_t len, uint32_t version, const char *want,
                    const struct virtio_dev_ops *ops)
{
	struct virtio_dev *b = virtio_mmio_add(&vm, ops, NULL);
	char why[256] = "";

	ck_assert_int_eq(virtio_mmio_restore(b, bad, len, version, true, why, sizeof(why)),
	                 -EINVAL);
	ck_assert_msg(strstr(why, want), "message '%s' lacks '%s'", why, want);
	ck_assert_msg(strstr(why, "slot"), "message '%s' does not name the slot", why);
	ck_assert_uint_eq(rd(b, STATUS), 0);
	ck_assert(!b->vq[0].ready && !b->vq[1].ready);
}

START_TEST(refusals)
{
	struct virtio_dev *a = configured();
	struct dev_state good, s;

	ck_assert_int_eq(virtio_mmio_save(a, &good, sizeof(good)), (int)sizeof(good));
	refused(&good, sizeof(good), VIRTIO_STATE_VERSION + 1, "version", &dummy_ops);
	refused(&good, sizeof(good) - 1, VIRTIO_STATE_VERSION, "short", &dummy_ops);
	refused(&good, sizeof(good), VIRTIO_STATE_VERSION, "device type 42", &other_ops);

	s = good;
	s.driver_features |= 1ULL << 40;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "never offered", &dummy_ops);
	s = good;
	s.device_features |= 1;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "features differ", &dummy_ops);
	s = good;
	s.vq[0].size = 12;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "power of two", &dummy_ops);
	s = good;
	s.vq[1].size = 32;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "power of two", &dummy_ops);
	s = good;
	s.vq[0].used_gpa = (16 << 20) - 8;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "outside guest RAM", &dummy_ops);
	s = good;
	s.vq[1].desc_gpa += 4;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "misaligned", &dummy_ops);
	s = good;
	s.status = 0x7;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "FEATURES_OK", &dummy_ops);
	s = good;
	s.status |= 0x100;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "status", &dummy_ops);
	s = good;
	s.nr_queues = 3;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "queues", &dummy_ops);
	s = good;
	s.vq[5].size = 8;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "does not exist", &dummy_ops);
	s = good;
	s.dev_len = 4;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "header", &dummy_ops);
	s = good;
	s.vq[0].ready = 2;
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "malformed", &dummy_ops);
	s = good;
	s.driver_features &= ~(1ULL << VIRTIO_RING_F_EVENT_IDX);
	refused(&s, sizeof(s), VIRTIO_STATE_VERSION, "event index", &dummy_ops);
}
END_TEST

/* The console's own state: a terminal on one side only is refused, and a
 * transmit chain written in part is taken up again after what went out. */
START_TEST(console_state)
{
	struct virtio_dev *c;
	uint8_t buf[VIRTIO_STATE_MAX];
	char why[256] = "";
	int n;

	ck_assert_int_eq(console_create(&vm, -1, -1), 0);
	c = vm.devs[0];
	n = virtio_mmio_save(c, buf, sizeof(buf));
	ck_assert_int_eq(n, (int)sizeof(struct dev_state) + 16);
	ck_assert_int_eq(
	    virtio_mmio_restore(c, buf, (uint32_t)n, VIRTIO_STATE_VERSION, false, why, sizeof(why)),
	    0);
	buf[sizeof(struct dev_state) + 4] = 1; /* terminal */
	ck_assert_int_eq(
	    virtio_mmio_restore(c, buf, (uint32_t)n, VIRTIO_STATE_VERSION, false, why, sizeof(why)),
	    -EINVAL);
	ck_assert_msg(strstr(why, "terminal"), "%s", why);
	buf[sizeof(struct dev_state) + 4] = 0;
	buf[sizeof(struct dev_state) + 7] = 1; /* reserved */
	ck_assert_int_eq(
	    virtio_mmio_restore(c, buf, (uint32_t)n, VIRTIO_STATE_VERSION, false, why, sizeof(why)),
	    -EINVAL);
	ck_assert_int_eq(virtio_mmio_restore(c, buf, (uint32_t)n - 1, VIRTIO_STATE_VERSION, false,
	                                     why, sizeof(why)),
	                 -EINVAL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("virtio-state");
	TCase *t = tcase_create("state");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, round_trip);
	tcase_add_test(t, refusals);
	tcase_add_test(t, console_state);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
