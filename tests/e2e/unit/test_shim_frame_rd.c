/* SPDX-License-Identifier: MIT */
/* Unit tests for shim/frame_rd.c: frames read through its buffer are the
 * frames sent, however the stream cuts them (many in one write, one split
 * across writes, the largest, an empty one); a bad header is EPROTO, the
 * stream's end EPIPE (mid-frame too), silence ETIMEDOUT. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frame_rd.h"

static int sv[2];
static struct frame_rd rd;

static void setup(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(frame_rd_init(&rd, sv[0]), 0);
}

static void teardown(void)
{
	frame_rd_free(&rd);
	close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
}

/* A frame of type and len bytes (byte i is seed + i) at p: its size. */
static size_t frame(uint8_t *p, uint16_t type, uint32_t len, uint8_t seed)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(len >> (8 * i));
	p[4] = (uint8_t)type;
	p[5] = (uint8_t)(type >> 8);
	p[6] = p[7] = 0;
	for (uint32_t i = 0; i < len; i++)
		p[AGENT_HDR_LEN + i] = (uint8_t)(seed + i);
	return AGENT_HDR_LEN + len;
}

static void expect(uint16_t type, uint32_t len, uint8_t seed)
{
	struct kiln_frame f;
	const uint8_t *pl;

	ck_assert_int_eq(frame_rd_next(&rd, &f, &pl, 2000), 0);
	ck_assert_uint_eq(f.type, type);
	ck_assert_uint_eq(f.len, len);
	for (uint32_t i = 0; i < len; i++)
		ck_assert_uint_eq(pl[i], (uint8_t)(seed + i));
}

static void put(const void *p, size_t n)
{
	ck_assert_int_eq(write(sv[1], p, n), (ssize_t)n);
}

START_TEST(many_in_one_write)
{
	uint8_t b[64 * 40];
	size_t n = 0;

	for (int i = 0; i < 40; i++)
		n += frame(b + n, i % 2 ? KILN_MSG_DATA : KILN_MSG_CHANGE, (uint32_t)(i % 7) * 8,
		           (uint8_t)i);
	put(b, n);
	for (int i = 0; i < 40; i++)
		expect(i % 2 ? KILN_MSG_DATA : KILN_MSG_CHANGE, (uint32_t)(i % 7) * 8, (uint8_t)i);
}
END_TEST

START_TEST(split_and_largest)
{
	size_t big = AGENT_HDR_LEN + KILN_FRAME_MAX;
	uint8_t *b = malloc(2 * big + 64);
	size_t n, m;
	pid_t pid;
	int st;

	ck_assert_ptr_nonnull(b);
	/* a small frame first, so that the largest one does not start at the
	 * buffer's front: its bytes must be moved there */
	n = frame(b, KILN_MSG_DONE, 0, 0);
	n += frame(b + n, KILN_MSG_DATA, 5, 9);
	m = n;
	n += frame(b + n, KILN_MSG_DATA, KILN_FRAME_MAX, 3);
	n += frame(b + n, KILN_MSG_CHANGE, 3, 1);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) { /* the writer, a few bytes at a time at the cuts */
		size_t cut[] = {3, AGENT_HDR_LEN + 1, m + 2, m + 4000, n - 1, n};
		size_t at = 0;

		for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
			for (size_t left = cut[i] - at; left;) {
				ssize_t w = write(sv[1], b + at, left);

				if (w <= 0)
					_exit(1);
				at += (size_t)w;
				left -= (size_t)w;
			}
			usleep(20000);
		}
		_exit(0);
	}
	expect(KILN_MSG_DONE, 0, 0);
	expect(KILN_MSG_DATA, 5, 9);
	expect(KILN_MSG_DATA, KILN_FRAME_MAX, 3);
	expect(KILN_MSG_CHANGE, 3, 1);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(st, 0);
	free(b);
}
END_TEST

START_TEST(bad_header_end_silence)
{
	uint8_t b[64];
	struct kiln_frame f;
	const uint8_t *pl;
	size_t n;

	/* silence: ETIMEDOUT, and the stream goes on */
	ck_assert_int_eq(frame_rd_next(&rd, &f, &pl, 50), -ETIMEDOUT);
	n = frame(b, KILN_MSG_DATA, 4, 0);
	put(b, n - 2); /* half a frame, then silence */
	ck_assert_int_eq(frame_rd_next(&rd, &f, &pl, 50), -ETIMEDOUT);
	put(b + n - 2, 2);
	expect(KILN_MSG_DATA, 4, 0);
	/* a header with flags: EPROTO */
	n = frame(b, KILN_MSG_DATA, 0, 0);
	b[6] = 1;
	put(b, n);
	ck_assert_int_eq(frame_rd_next(&rd, &f, &pl, 2000), -EPROTO);
}
END_TEST

START_TEST(too_long_and_end)
{
	uint8_t b[64];
	struct kiln_frame f;
	const uint8_t *pl;
	size_t n = frame(b, KILN_MSG_DATA, 0, 0);

	b[0] = 1, b[1] = 0, b[2] = 0x10, b[3] = 0; /* KILN_FRAME_MAX + 1 */
	put(b, n);
	ck_assert_int_eq(frame_rd_next(&rd, &f, &pl, 2000), -EPROTO);
	teardown();
	setup();
	n = frame(b, KILN_MSG_DATA, 10, 0);
	put(b, n - 3); /* the end mid-frame */
	close(sv[1]);
	sv[1] = -1;
	ck_assert_int_eq(frame_rd_next(&rd, &f, &pl, 2000), -EPIPE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("frame_rd");
	TCase *tc = tcase_create("all");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, many_in_one_write);
	tcase_add_test(tc, split_and_largest);
	tcase_add_test(tc, bad_header_end_silence);
	tcase_add_test(tc, too_long_and_end);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
