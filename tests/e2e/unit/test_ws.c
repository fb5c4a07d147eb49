/* SPDX-License-Identifier: MIT */
/* Unit tests for control/http/ws.c: RFC 6455 framing, limits and errors. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "http/ws.h"

struct rec {
	struct buf out; /* bytes the codec sent */
	struct buf msg; /* message bytes received */
	int opcode, nmsg, fin_count;
	int close_code;
};

static int rec_msg(void *ctx, int op, uint8_t *p, size_t n, bool fin)
{
	struct rec *r = ctx;

	r->opcode = op;
	buf_append(&r->msg, p, n);
	r->nmsg++;
	r->fin_count += fin;
	return 0;
}

static void rec_close(void *ctx, uint16_t code)
{
	((struct rec *)ctx)->close_code = code;
}

static int rec_write(void *ctx, const void *p, size_t n)
{
	return buf_append(&((struct rec *)ctx)->out, p, n);
}

static const struct ws_ops ops = {.on_message = rec_msg, .on_close = rec_close, .write = rec_write};

static struct rec r;
static struct ws ws;

static void server(void)
{
	memset(&r, 0, sizeof(r));
	ws_init(&ws, false, &ops, &r);
}

static void teardown(void)
{
	ws_free(&ws);
	buf_free(&r.out);
	buf_free(&r.msg);
}

/* The close code in the last frame we sent, or -1. */
static int sent_close(void)
{
	const uint8_t *p = (const uint8_t *)buf_head(&r.out);
	size_t n = buf_avail(&r.out);

	if (n < 4 || (p[0] & 0x0f) != WS_CLOSE)
		return -1;
	return p[2] << 8 | p[3];
}

static int feed(const void *p, size_t n)
{
	uint8_t tmp[512];

	memcpy(tmp, p, n);
	return ws_feed(&ws, tmp, n);
}

START_TEST(accept_key_rfc_example)
{
	char out[29];

	ck_assert_int_eq(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
	ck_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	ck_assert_int_lt(ws_accept_key("short", out), 0);
	ck_assert_int_lt(ws_accept_key(NULL, out), 0);
	ck_assert_int_lt(ws_accept_key("!!!!!!!!!!!!!!!!!!!!!!!!", out), 0);
	/* base64 of 17 bytes does not fit 24 characters with padding */
	ck_assert_int_lt(ws_accept_key("AAAAAAAAAAAAAAAAAAAAAAA=", out), 0);
}
END_TEST

START_TEST(masked_text_rfc_example)
{
	static const uint8_t f[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
	                            0x7f, 0x9f, 0x4d, 0x51, 0x58};

	server();
	ck_assert_int_eq(feed(f, sizeof(f)), 0);
	ck_assert_int_eq(r.opcode, WS_TEXT);
	ck_assert_int_eq(buf_avail(&r.msg), 5);
	ck_assert(!memcmp(buf_head(&r.msg), "Hello", 5));
}
END_TEST

START_TEST(byte_at_a_time)
{
	static const uint8_t f[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
	                            0x7f, 0x9f, 0x4d, 0x51, 0x58};

	server();
	for (size_t i = 0; i < sizeof(f); i++)
		ck_assert_int_eq(feed(f + i, 1), 0);
	ck_assert_int_eq(r.nmsg, 1);
	ck_assert(!memcmp(buf_head(&r.msg), "Hello", 5));
}
END_TEST

START_TEST(client_round_trip_and_fragments)
{
	struct rec cr = {0};
	struct ws client;
	uint8_t big[70000];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	ws_init(&client, true, &ops, &cr);
	ck_assert_int_eq(ws_send(&client, WS_BINARY, big, sizeof(big)), 0);
	server();
	/* 64-bit length form, masked: the server unmasks to the original */
	ck_assert_int_eq(ws_feed(&ws, (uint8_t *)buf_head(&cr.out), buf_avail(&cr.out)), 0);
	ck_assert_int_eq(buf_avail(&r.msg), sizeof(big));
	ck_assert(!memcmp(buf_head(&r.msg), big, sizeof(big)));
	ck_assert_int_eq(r.fin_count, 1);
	buf_free(&cr.out);
	ws_free(&client);
}
END_TEST

START_TEST(fragmented_text_with_ping_between)
{
	/* "Hel" + ping + "lo", masked with a zero key */
	static const uint8_t f[] = {0x01, 0x83, 0, 0, 0, 0,   'H', 'e', 'l',
	                            0x89, 0x82, 0, 0, 0, 0,   'p', 'q', 0x80,
	                            0x82, 0,    0, 0, 0, 'l', 'o'};

	server();
	ck_assert_int_eq(feed(f, sizeof(f)), 0);
	ck_assert_int_eq(r.nmsg, 1);
	ck_assert(!memcmp(buf_head(&r.msg), "Hello", 5));
	/* the pong */
	ck_assert_int_eq((uint8_t)buf_head(&r.out)[0], 0x80 | WS_PONG);
	ck_assert(!memcmp(buf_head(&r.out) + 2, "pq", 2));
}
END_TEST

START_TEST(close_is_answered)
{
	static const uint8_t f[] = {0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8};

	server();
	ck_assert_int_eq(feed(f, sizeof(f)), 0);
	ck_assert_int_eq(r.close_code, 1000);
	ck_assert_int_eq(sent_close(), 1000);
	ck_assert(ws.close_received);
}
END_TEST

struct bad {
	const char *name;
	uint8_t f[16];
	size_t n;
	int code;
};

static const struct bad bads[] = {
    {"unmasked to server", {0x82, 0x01, 'a'}, 3, WS_CLOSE_PROTOCOL},
    {"reserved bits", {0xc2, 0x81, 0, 0, 0, 0, 'a'}, 7, WS_CLOSE_PROTOCOL},
    {"unknown opcode", {0x83, 0x81, 0, 0, 0, 0, 'a'}, 7, WS_CLOSE_PROTOCOL},
    {"fragmented ping", {0x09, 0x80, 0, 0, 0, 0}, 6, WS_CLOSE_PROTOCOL},
    {"long ping", {0x89, 0xfe, 0x00, 0x7e, 0, 0, 0, 0}, 8, WS_CLOSE_PROTOCOL},
    {"lone continuation", {0x80, 0x81, 0, 0, 0, 0, 'a'}, 7, WS_CLOSE_PROTOCOL},
    {"new message inside a message",
     {0x01, 0x81, 0, 0, 0, 0, 'a', 0x81, 0x81, 0, 0, 0, 0, 'b'},
     14,
     WS_CLOSE_PROTOCOL},
    /* masked frames: the header ends after the 4 mask bytes */
    {"64-bit length with its top bit",
     {0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
     14,
     WS_CLOSE_PROTOCOL},
    {"non-minimal 16-bit length", {0x82, 0xfe, 0x00, 0x05, 0, 0, 0, 0}, 8, WS_CLOSE_PROTOCOL},
    {"frame over max_frame",
     {0x82, 0xff, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0},
     14,
     WS_CLOSE_TOO_BIG},
    {"invalid UTF-8 text", {0x81, 0x82, 0, 0, 0, 0, 0xc0, 0x80}, 8, WS_CLOSE_BAD_DATA},
    {"close with one byte", {0x88, 0x81, 0, 0, 0, 0, 0x03}, 7, WS_CLOSE_PROTOCOL},
    {"close with a reserved code", {0x88, 0x82, 0, 0, 0, 0, 0x03, 0xed}, 8, WS_CLOSE_PROTOCOL},
};

START_TEST(protocol_errors)
{
	const struct bad *b = &bads[_i];

	server();
	ck_assert_msg(feed(b->f, b->n) < 0, "%s accepted", b->name);
	ck_assert_msg(sent_close() == b->code, "%s: close %d, want %d", b->name, sent_close(),
	              b->code);
	teardown();
}
END_TEST

START_TEST(text_message_limit)
{
	uint8_t f[6 + 100];

	server();
	ws.max_text = 150;
	memset(f, 'a', sizeof(f));
	f[0] = WS_TEXT;
	f[1] = 0x80 | 100;
	memset(f + 2, 0, 4);
	ck_assert_int_eq(ws_feed(&ws, f, sizeof(f)), 0);
	f[0] = WS_CONT; /* another 100: over the 150 limit */
	ck_assert_int_lt(ws_feed(&ws, f, sizeof(f)), 0);
	ck_assert_int_eq(sent_close(), WS_CLOSE_TOO_BIG);
}
END_TEST

START_TEST(nothing_after_close)
{
	static const uint8_t f[] = {0x88, 0x80, 0, 0, 0, 0, 0x82, 0x81, 0, 0, 0, 0, 'x'};

	server();
	ck_assert_int_eq(feed(f, sizeof(f)), 0);
	ck_assert_int_eq(r.nmsg, 0);
	ck_assert_int_lt(ws_send(&ws, WS_BINARY, "x", 1), 0);
}
END_TEST

START_TEST(utf8)
{
	ck_assert(utf8_valid((const uint8_t *)"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15));
	ck_assert(!utf8_valid((const uint8_t *)"\xc0\xaf", 2));         /* overlong */
	ck_assert(!utf8_valid((const uint8_t *)"\xed\xa0\x80", 3));     /* surrogate */
	ck_assert(!utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	ck_assert(!utf8_valid((const uint8_t *)"\xe2\x82", 2));         /* truncated */
	ck_assert(!utf8_valid((const uint8_t *)"\x80", 1));             /* lone continuation */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ws");
	TCase *tc = tcase_create("ws");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, accept_key_rfc_example);
	tcase_add_test(tc, masked_text_rfc_example);
	tcase_add_test(tc, byte_at_a_time);
	tcase_add_test(tc, client_round_trip_and_fragments);
	tcase_add_test(tc, fragmented_text_with_ping_between);
	tcase_add_test(tc, close_is_answered);
	tcase_add_loop_test(tc, protocol_errors, 0, sizeof(bads) / sizeof(bads[0]));
	tcase_add_test(tc, text_message_limit);
	tcase_add_test(tc, nothing_after_close);
	tcase_add_test(tc, utf8);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
