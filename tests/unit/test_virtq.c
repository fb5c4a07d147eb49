/* SPDX-License-Identifier: MIT */
/* Split virtqueue parsing against a hostile driver: rings laid out by hand. */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../vmm/virtio/virtio.h"

#define SZ    8
#define DESC  0x1000
#define AVAIL 0x2000
#define USED  0x3000
#define BUF   0x10000

#define F_NEXT     1
#define F_WRITE    2
#define F_INDIRECT 4

struct tdesc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

static struct guest_mem mem;
static struct virtq q;
static struct virtq_chain ch;

static void setup_size(uint64_t size)
{
	ck_assert_int_eq(mem_init(&mem, size), 0);
	memset(&q, 0, sizeof(q));
	q.size = q.max = SZ;
	q.desc_gpa = DESC;
	q.avail_gpa = AVAIL;
	q.used_gpa = USED;
	q.ready = true;
}

static void setup(void)
{
	setup_size(16 << 20);
}

/* 3 GiB below the hole and 1 MiB above 4 GiB; MAP_NORESERVE keeps it cheap. */
static void setup_big(void)
{
	setup_size(KILN_GPA_HOLE_START + (1 << 20));
}

static void teardown(void)
{
	mem_destroy(&mem);
}

static uint16_t *avail(void)
{
	return gpa_ptr(&mem, AVAIL, 6 + 2 * SZ);
}

static uint8_t *used(void)
{
	return gpa_ptr(&mem, USED, 6 + 8 * SZ);
}

static void desc(unsigned i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	struct tdesc d = {htole64(addr), htole32(len), htole16(flags), htole16(next)};

	memcpy(gpa_ptr(&mem, DESC + 16 * i, 16), &d, 16);
}

static void avail_add(uint16_t head)
{
	uint16_t idx = le16toh(avail()[1]);

	avail()[2 + idx % SZ] = htole16(head);
	avail()[1] = htole16(idx + 1);
}

static uint32_t used_word(unsigned byte_off)
{
	uint32_t v;

	memcpy(&v, used() + byte_off, 4);
	return le32toh(v);
}

static uint16_t used_idx(void)
{
	return le16toh(((uint16_t *)used())[1]);
}

START_TEST(normal_chain)
{
	desc(0, BUF, 16, F_NEXT, 1);
	desc(1, BUF + 16, 32, F_NEXT, 2);
	desc(2, BUF + 64, 100, F_WRITE, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	ck_assert_uint_eq(ch.head, 0);
	ck_assert_uint_eq(ch.n_out, 2);
	ck_assert_uint_eq(ch.n_in, 1);
	ck_assert_uint_eq(ch.out_len, 48);
	ck_assert_uint_eq(ch.in_len, 100);
	ck_assert_ptr_eq(ch.iov[0].iov_base, mem.host + BUF);
	ck_assert_ptr_eq(ch.iov[2].iov_base, mem.host + BUF + 64);
	ck_assert_uint_eq(ch.iov[2].iov_len, 100);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 0);
	ck_assert_uint_eq(q.last_avail, 1);
	ck_assert(!q.broken);
}
END_TEST

START_TEST(loop_two)
{
	desc(0, BUF, 16, F_NEXT, 1);
	desc(1, BUF, 16, F_NEXT, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
	ck_assert(q.broken);
	ck_assert_ptr_nonnull(q.error);
	/* Broken stays broken, even once the ring looks sane again. */
	desc(1, BUF, 16, 0, 0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(loop_self)
{
	desc(3, BUF, 0, F_NEXT, 3);
	avail_add(3);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(chain_of_queue_size)
{
	unsigned i;

	for (i = 0; i < SZ; i++)
		desc(i, BUF + i * 8, 8, i + 1 < SZ ? F_NEXT : 0, i + 1);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	ck_assert_uint_eq(ch.n_out, SZ);
	ck_assert_uint_eq(ch.out_len, SZ * 8);
}
END_TEST

START_TEST(bad_head)
{
	avail_add(SZ);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(bad_next)
{
	desc(0, BUF, 8, F_NEXT, 0xffff);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(addr_range)
{
	desc(0, mem.size - 16, 16, 0, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	desc(0, mem.size - 8, 16, 0, 0); /* straddles the end of RAM */
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(addr_beyond_ram)
{
	desc(0, mem.size, 1, 0, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(addr_wraps)
{
	desc(0, 0xffffffffffffff00ULL, 0xffffffff, F_WRITE, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(huge_len)
{
	desc(0, BUF, 0xffffffff, 0, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(zero_len)
{
	desc(0, 0xdead00000000ULL, 0, F_NEXT, 1);
	desc(1, BUF, 16, F_NEXT, 2);
	desc(2, 0xffffffffffffffffULL, 0, F_WRITE | F_NEXT, 3);
	desc(3, BUF + 32, 8, F_WRITE, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	ck_assert_uint_eq(ch.n_out, 1);
	ck_assert_uint_eq(ch.n_in, 1);
	ck_assert_ptr_eq(ch.iov[0].iov_base, mem.host + BUF);
	ck_assert_ptr_eq(ch.iov[1].iov_base, mem.host + BUF + 32);
	ck_assert_uint_eq(ch.iov[1].iov_len, 8);
	desc(4, 0, 0, 0, 0);
	avail_add(4);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	ck_assert_uint_eq(ch.n_out + ch.n_in, 0);
}
END_TEST

START_TEST(total_over_4g)
{
	desc(0, 0, 0x80000000, F_NEXT, 1);
	desc(1, 0x1000, 0x7fffffff, F_WRITE, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1); /* exactly 2^32 - 1 */
	ck_assert_uint_eq(ch.out_len + ch.in_len, 0xffffffffULL);
	desc(1, 0x1000, 0x80000000, F_WRITE, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(hole)
{
	desc(0, KILN_GPA_HIGH_RAM, 0x1000, 0, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	ck_assert_ptr_eq(ch.iov[0].iov_base, mem.host + mem.low_size);
	desc(0, KILN_GPA_HOLE_START - 0x1000, 0x2000, 0, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(hole_inside)
{
	desc(0, KILN_GPA_MMIO_BASE, 4, 0, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(high_end)
{
	desc(0, KILN_GPA_HIGH_RAM + (1 << 20) - 0x1000, 0x2000, 0, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(avail_jump)
{
	desc(0, BUF, 8, 0, 0);
	avail()[1] = htole16(SZ + 1);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(avail_full)
{
	unsigned i;

	desc(0, BUF, 8, 0, 0);
	for (i = 0; i < SZ; i++)
		avail_add(0);
	for (i = 0; i < SZ; i++)
		ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 0);
}
END_TEST

START_TEST(avail_wrap)
{
	desc(5, BUF, 8, 0, 0);
	q.last_avail = 0xffff;
	avail()[2 + 0xffff % SZ] = htole16(5);
	avail()[1] = htole16(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	ck_assert_uint_eq(ch.head, 5);
	ck_assert_uint_eq(q.last_avail, 0);
}
END_TEST

START_TEST(indirect)
{
	desc(0, BUF, 16, F_INDIRECT, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(write_before_read)
{
	desc(0, BUF, 16, F_WRITE | F_NEXT, 1);
	desc(1, BUF + 16, 16, 0, 0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(not_ready)
{
	desc(0, BUF, 16, 0, 0);
	avail_add(0);
	q.ready = false;
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 0);
	virtq_push(&mem, &q, 0, 1);
	ck_assert_uint_eq(used_idx(), 0);
}
END_TEST

START_TEST(rings_outside_ram)
{
	q.avail_gpa = mem.size - 2;
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), -EIO);
}
END_TEST

START_TEST(unpop)
{
	desc(2, BUF, 16, 0, 0);
	avail_add(2);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	virtq_unpop(&q);
	ch.head = 0;
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	ck_assert_uint_eq(ch.head, 2);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 0);
}
END_TEST

START_TEST(push)
{
	virtq_push(&mem, &q, 3, 42);
	ck_assert_uint_eq(used_idx(), 1);
	ck_assert_uint_eq(used_word(4), 3);
	ck_assert_uint_eq(used_word(8), 42);
	q.used_idx = 0xffff;
	virtq_push(&mem, &q, 6, 7);
	ck_assert_uint_eq(used_idx(), 0);
	ck_assert_uint_eq(used_word(4 + 8 * (SZ - 1)), 6);
	ck_assert_uint_eq(used_word(8 + 8 * (SZ - 1)), 7);
}
END_TEST

START_TEST(irq_plain)
{
	ck_assert(!virtq_need_irq(&mem, &q));
	virtq_push(&mem, &q, 0, 0);
	ck_assert(virtq_need_irq(&mem, &q));
	ck_assert(!virtq_need_irq(&mem, &q)); /* nothing new */
	avail()[0] = htole16(1);              /* VIRTQ_AVAIL_F_NO_INTERRUPT */
	virtq_push(&mem, &q, 0, 0);
	ck_assert(!virtq_need_irq(&mem, &q));
	avail()[0] = 0;
	virtq_push(&mem, &q, 0, 0);
	ck_assert(virtq_need_irq(&mem, &q));
}
END_TEST

START_TEST(irq_event_idx)
{
	uint16_t *used_event = &avail()[2 + SZ];

	q.event_idx = true;
	*used_event = 0;
	virtq_push(&mem, &q, 0, 0); /* used 1 */
	ck_assert(virtq_need_irq(&mem, &q));
	*used_event = htole16(3);
	virtq_push(&mem, &q, 0, 0); /* used 2 */
	ck_assert(!virtq_need_irq(&mem, &q));
	virtq_push(&mem, &q, 0, 0); /* used 3 */
	ck_assert(!virtq_need_irq(&mem, &q));
	virtq_push(&mem, &q, 0, 0); /* used 4: passes used_event */
	ck_assert(virtq_need_irq(&mem, &q));
	/* With event idx the flag is ignored (2.7.7.2). */
	avail()[0] = htole16(1);
	*used_event = htole16(4);
	virtq_push(&mem, &q, 0, 0);
	ck_assert(virtq_need_irq(&mem, &q));
	/* Batched pushes crossing used_event still interrupt once. */
	*used_event = htole16(6);
	virtq_push(&mem, &q, 0, 0);
	virtq_push(&mem, &q, 0, 0);
	virtq_push(&mem, &q, 0, 0);
	ck_assert(virtq_need_irq(&mem, &q));
	ck_assert(!virtq_need_irq(&mem, &q));
}
END_TEST

START_TEST(avail_event)
{
	uint16_t ev;

	q.event_idx = true;
	desc(0, BUF, 8, 0, 0);
	memset(used() + 4 + 8 * SZ, 0xaa, 2);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 0);
	memcpy(&ev, used() + 4 + 8 * SZ, 2);
	ck_assert_uint_eq(le16toh(ev), 0);
	avail_add(0);
	avail_add(0);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	memcpy(&ev, used() + 4 + 8 * SZ, 2);
	ck_assert_uint_eq(le16toh(ev), 1);
	ck_assert_int_eq(virtq_pop(&mem, &q, &ch), 1);
	memcpy(&ev, used() + 4 + 8 * SZ, 2);
	ck_assert_uint_eq(le16toh(ev), 2);
}
END_TEST

START_TEST(layout)
{
	struct virtq l = q;

	ck_assert_int_eq(virtq_check_layout(&mem, &l), 0);
	l.desc_gpa = DESC + 8;
	ck_assert_int_eq(virtq_check_layout(&mem, &l), -EINVAL);
	l = q;
	l.avail_gpa = AVAIL + 1;
	ck_assert_int_eq(virtq_check_layout(&mem, &l), -EINVAL);
	l = q;
	l.used_gpa = USED + 2;
	ck_assert_int_eq(virtq_check_layout(&mem, &l), -EINVAL);
	l = q;
	l.used_gpa = mem.size - 8 * SZ;
	ck_assert_int_eq(virtq_check_layout(&mem, &l), -EINVAL);
	l = q;
	l.desc_gpa = KILN_GPA_MMIO_BASE;
	ck_assert_int_eq(virtq_check_layout(&mem, &l), -EINVAL);
	l = q;
	l.size = 6;
	ck_assert_int_eq(virtq_check_layout(&mem, &l), -EINVAL);
	l = q;
	l.size = 2 * SZ; /* more than QueueNumMax */
	ck_assert_int_eq(virtq_check_layout(&mem, &l), -EINVAL);
	l.size = 0;
	ck_assert_int_eq(virtq_check_layout(&mem, &l), -EINVAL);
}
END_TEST

static Suite *virtq_suite(void)
{
	Suite *s = suite_create("virtq");
	TCase *t = tcase_create("small");
	TCase *big = tcase_create("big");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, normal_chain);
	tcase_add_test(t, loop_two);
	tcase_add_test(t, loop_self);
	tcase_add_test(t, chain_of_queue_size);
	tcase_add_test(t, bad_head);
	tcase_add_test(t, bad_next);
	tcase_add_test(t, addr_range);
	tcase_add_test(t, addr_beyond_ram);
	tcase_add_test(t, addr_wraps);
	tcase_add_test(t, huge_len);
	tcase_add_test(t, zero_len);
	tcase_add_test(t, avail_jump);
	tcase_add_test(t, avail_full);
	tcase_add_test(t, avail_wrap);
	tcase_add_test(t, indirect);
	tcase_add_test(t, write_before_read);
	tcase_add_test(t, not_ready);
	tcase_add_test(t, rings_outside_ram);
	tcase_add_test(t, unpop);
	tcase_add_test(t, push);
	tcase_add_test(t, irq_plain);
	tcase_add_test(t, irq_event_idx);
	tcase_add_test(t, avail_event);
	tcase_add_test(t, layout);
	suite_add_tcase(s, t);
	tcase_add_checked_fixture(big, setup_big, teardown);
	tcase_add_test(big, total_over_4g);
	tcase_add_test(big, hole);
	tcase_add_test(big, hole_inside);
	tcase_add_test(big, high_end);
	suite_add_tcase(s, big);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(virtq_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
