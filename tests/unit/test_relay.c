// SPDX-License-Identifier: MIT
/*
 * Unit tests for one direction of an egress connection (control/net/relay.c):
 * bytes carried from a source socket to a destination in order, the
 * source's end passed on as a shutdown (or left to the close that follows,
 * when the caller says one does), and the cache of freed buffers: reused,
 * never more than RELAY_CACHE kept.
 */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net_int.h"

/* A non-blocking socket pair: v[0] the relay's side, v[1] the peer's. */
static void pair(int v[2])
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, v), 0);
}

START_TEST(carries_bytes_in_order)
{
	int src[2], dst[2];
	struct relay r;
	uint64_t count = 0;
	char got[16] = {0};

	pair(src);
	pair(dst);
	relay_init(&r);
	ck_assert_int_eq(relay_alloc(&r), 0);
	ck_assert_int_eq(write(src[1], "hello, ", 7), 7);
	ck_assert_int_eq(relay_fill(&r, src[0]), 0);
	ck_assert_int_eq(write(src[1], "world", 5), 5);
	ck_assert_int_eq(relay_fill(&r, src[0]), 0);
	ck_assert_uint_eq(relay_held(&r), 12);
	ck_assert_int_eq(relay_drain(&r, dst[0], false, &count), 0);
	ck_assert_uint_eq(count, 12);
	ck_assert_uint_eq(relay_held(&r), 0);
	ck_assert_int_eq(read(dst[1], got, sizeof(got)), 12);
	ck_assert_str_eq(got, "hello, world");
	ck_assert(!r.shut);
	relay_free(&r);
	close(src[0]), close(src[1]), close(dst[0]), close(dst[1]);
}
END_TEST

/* The source's end: 'closing' false is a shutdown the peer reads as EOF
 * while the socket stays open; true sends nothing (the caller's close
 * will), and both mark the direction done. */
START_TEST(source_end_shuts_unless_closing)
{
	for (int closing = 0; closing < 2; closing++) {
		int src[2], dst[2];
		struct relay r;
		uint64_t count = 0;
		char c;

		pair(src);
		pair(dst);
		relay_init(&r);
		ck_assert_int_eq(relay_alloc(&r), 0);
		close(src[1]);
		ck_assert_int_eq(relay_fill(&r, src[0]), 0);
		ck_assert(r.eof);
		ck_assert_uint_eq(relay_room(&r), 0);
		ck_assert_int_eq(relay_drain(&r, dst[0], closing, &count), 0);
		ck_assert(r.shut);
		errno = 0;
		if (closing)
			ck_assert(read(dst[1], &c, 1) < 0 && errno == EAGAIN);
		else
			ck_assert_int_eq(read(dst[1], &c, 1), 0);
		close(dst[0]);
		ck_assert_int_eq(read(dst[1], &c, 1), 0); /* the close: EOF */
		relay_free(&r);
		close(src[0]), close(dst[1]);
	}
}
END_TEST

START_TEST(freed_buffers_are_reused_up_to_the_cache)
{
	struct relay r[RELAY_CACHE + 4];
	uint8_t *first;
	unsigned i, base = relay_cached();

	ck_assert_uint_le(base, RELAY_CACHE);
	relay_init(&r[0]);
	ck_assert_int_eq(relay_alloc(&r[0]), 0);
	first = r[0].buf;
	ck_assert_int_eq(relay_alloc(&r[0]), 0); /* has one: keeps it */
	ck_assert_ptr_eq(r[0].buf, first);
	relay_free(&r[0]);
	ck_assert_ptr_null(r[0].buf);
	/* (the alloc took a cached one if there was one: CK_FORK=no runs the
	 * tests in one process, an earlier test may have left some) */
	ck_assert_uint_eq(relay_cached(), base ? base : 1);
	for (i = 0; i < RELAY_CACHE + 4; i++) {
		relay_init(&r[i]);
		ck_assert_int_eq(relay_alloc(&r[i]), 0);
		memset(r[i].buf, (int)i, NET_BUF); /* each a whole buffer of its own */
	}
	ck_assert_uint_eq(relay_cached(), 0);
	for (i = 0; i < RELAY_CACHE + 4; i++)
		for (unsigned j = 0; j < i; j++)
			ck_assert_ptr_ne(r[i].buf, r[j].buf);
	for (i = 0; i < RELAY_CACHE + 4; i++)
		relay_free(&r[i]);
	ck_assert_uint_eq(relay_cached(), RELAY_CACHE);
	relay_init(&r[0]);
	ck_assert_int_eq(relay_alloc(&r[0]), 0);
	ck_assert_uint_eq(relay_cached(), RELAY_CACHE - 1);
	relay_free(&r[0]);
	relay_free(&r[0]); /* freed twice: nothing to put back */
	ck_assert_uint_eq(relay_cached(), RELAY_CACHE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("relay");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, carries_bytes_in_order);
	tcase_add_test(tc, source_end_shuts_unless_closing);
	tcase_add_test(tc, freed_buffers_are_reused_up_to_the_cache);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
