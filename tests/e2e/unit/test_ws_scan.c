/* SPDX-License-Identifier: MIT */
/* Unit tests for control/browser/ws_scan.c: following WebSocket frames in
 * passing, against frames that control/http/ws.c encodes. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "browser/ws_scan.h"
#include "http/ws.h"

static struct buf out;

static int grab(void *ctx, const void *p, size_t n)
{
	return buf_append(&out, p, n);
}

static int none(void *ctx, int op, uint8_t *p, size_t n, bool fin)
{
	return 0;
}

static const struct ws_ops ops = {.on_message = none, .write = grab};

/* Frames as a client (masked) or a server sends them, into out. */
static void frames(bool client, int op, size_t n, int count)
{
	struct ws ws;
	uint8_t *p = calloc(1, n + 1);

	buf_reset(&out);
	ws_init(&ws, client, &ops, NULL);
	ws.max_frame = 1u << 30;
	for (int i = 0; i < count; i++)
		ck_assert_int_eq(ws_send(&ws, op, p, n), 0);
	ws_free(&ws);
	free(p);
}

START_TEST(frames_of_every_length_byte_by_byte)
{
	static const size_t lens[] = {0, 1, 125, 126, 65535, 65536, 200000};

	for (int client = 0; client < 2; client++) {
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			struct ws_scan s;

			frames(client, WS_BINARY, lens[i], 3);
			ws_scan_init(&s, client, 1u << 20);
			for (size_t k = 0; k < buf_avail(&out); k++)
				ck_assert_int_eq(ws_scan_feed(&s, (uint8_t *)buf_head(&out) + k, 1),
				                 0);
			ck_assert(!s.left && !s.hlen); /* between frames at the end */
			ws_scan_init(&s, client, 1u << 20);
			ck_assert_int_eq(
			    ws_scan_feed(&s, (uint8_t *)buf_head(&out), buf_avail(&out)), 0);
		}
	}
}
END_TEST

START_TEST(wrong_masking_is_refused)
{
	struct ws_scan s;

	frames(false, WS_TEXT, 5, 1); /* a server's frame where a client's belongs */
	ws_scan_init(&s, true, 1u << 20);
	ck_assert_int_eq(ws_scan_feed(&s, (uint8_t *)buf_head(&out), buf_avail(&out)),
	                 WS_CLOSE_PROTOCOL);
	frames(true, WS_TEXT, 5, 1);
	ws_scan_init(&s, false, 1u << 20);
	ck_assert_int_eq(ws_scan_feed(&s, (uint8_t *)buf_head(&out), buf_avail(&out)),
	                 WS_CLOSE_PROTOCOL);
}
END_TEST

START_TEST(limits_and_bad_headers)
{
	static const uint8_t rsv[] = {0xc1, 0x80, 0, 0, 0, 0};       /* RSV1 (compression) */
	static const uint8_t op3[] = {0x83, 0x80, 0, 0, 0, 0};       /* a reserved opcode */
	static const uint8_t ping_frag[] = {0x09, 0x80, 0, 0, 0, 0}; /* a control frame, no FIN */
	static const uint8_t ping_long[] = {0x89, 0xfe, 0, 200, 0, 0, 0, 0}; /* 200-byte ping */
	static const uint8_t huge[] = {0x82, 0xff, 0, 0, 0, 0x40, 0,
	                               0,    0,    0, 1, 2, 3,    4}; /* 256 GiB */
	const struct {
		const uint8_t *p;
		size_t n;
		int code;
	} cases[] = {
	    {rsv, sizeof(rsv), WS_CLOSE_PROTOCOL},
	    {op3, sizeof(op3), WS_CLOSE_PROTOCOL},
	    {ping_frag, sizeof(ping_frag), WS_CLOSE_PROTOCOL},
	    {ping_long, sizeof(ping_long), WS_CLOSE_PROTOCOL},
	    {huge, sizeof(huge), WS_CLOSE_TOO_BIG},
	};
	struct ws_scan s;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ws_scan_init(&s, true, 1u << 20);
		ck_assert_int_eq(ws_scan_feed(&s, cases[i].p, cases[i].n), cases[i].code);
	}
	frames(true, WS_BINARY, (1u << 20) + 1, 1); /* one byte over the limit */
	ws_scan_init(&s, true, 1u << 20);
	ck_assert_int_eq(ws_scan_feed(&s, (uint8_t *)buf_head(&out), 14), WS_CLOSE_TOO_BIG);
}
END_TEST

START_TEST(close_frames_are_noticed)
{
	struct ws_scan s;
	struct ws ws;

	buf_reset(&out);
	ws_init(&ws, false, &ops, NULL);
	ws_send_close(&ws, WS_CLOSE_NORMAL, "bye");
	ws_free(&ws);
	ws_scan_init(&s, false, 1u << 20);
	ck_assert(!s.closed);
	ck_assert_int_eq(ws_scan_feed(&s, (uint8_t *)buf_head(&out), buf_avail(&out)), 0);
	ck_assert(s.closed);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("ws_scan");
	TCase *tc = tcase_create("ws_scan");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, frames_of_every_length_byte_by_byte);
	tcase_add_test(tc, wrong_masking_is_refused);
	tcase_add_test(tc, limits_and_bad_headers);
	tcase_add_test(tc, close_frames_are_noticed);
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	buf_free(&out);
	return failed ? 1 : 0;
}
