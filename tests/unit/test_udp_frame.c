// SPDX-License-Identifier: MIT
/*
 * Unit tests for the frames of a guest's UDP stream (control/net/udp_frame.c,
 * the header rules of include/kiln/net.h): what a hostile guest may send
 * (lengths past the limit or the bytes, truncated frames, bad families,
 * ports, reserved fields and statuses), and frames written back.
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../control/net/udp_frame.h"

#define HDR sizeof(struct kiln_net_dgram)

static size_t mk(uint8_t *out, uint8_t family, const char *addr, uint16_t port, size_t len)
{
	struct kiln_net_dgram h = {.len = (uint16_t)len, .family = family, .port = htons(port)};

	if (family == KILN_NET_IPV4)
		inet_pton(AF_INET, addr, h.addr);
	else if (family == KILN_NET_IPV6)
		inet_pton(AF_INET6, addr, h.addr);
	memcpy(out, &h, HDR);
	memset(out + HDR, 'x', len);
	return HDR + len;
}

START_TEST(parses_whole_frames)
{
	static uint8_t buf[2 * (HDR + KILN_NET_DGRAM_MAX)];
	struct udp_frame f;
	size_t n = mk(buf, KILN_NET_IPV4, "203.0.113.1", 7, 5);
	size_t m = mk(buf + n, KILN_NET_IPV6, "2001:db8::1", 443, 0);

	ck_assert_int_eq(udp_frame_parse(buf, n + m, &f), (long)n);
	ck_assert_uint_eq(f.port, 7);
	ck_assert_uint_eq(f.len, 5);
	ck_assert_uint_eq(f.family, KILN_NET_IPV4);
	ck_assert(f.payload == buf + HDR);
	ck_assert_uint_eq(f.addr[10], 0xff);
	ck_assert_uint_eq(f.addr[11], 0xff);
	ck_assert_uint_eq(f.addr[12], 203);
	ck_assert_uint_eq(f.addr[15], 1);
	/* an empty datagram is a datagram */
	ck_assert_int_eq(udp_frame_parse(buf + n, m, &f), (long)HDR);
	ck_assert_uint_eq(f.len, 0);
	ck_assert_uint_eq(f.addr[0], 0x20);
	ck_assert_uint_eq(f.port, 443);
	/* the largest there is */
	n = mk(buf, KILN_NET_IPV6, "2001:db8::2", 9, KILN_NET_DGRAM_MAX);
	ck_assert_int_eq(udp_frame_parse(buf, n, &f), (long)n);
	ck_assert_uint_eq(f.len, KILN_NET_DGRAM_MAX);
}
END_TEST

START_TEST(truncated_frames_wait)
{
	uint8_t buf[HDR + 100];
	struct udp_frame f;
	size_t n = mk(buf, KILN_NET_IPV4, "203.0.113.1", 53, 100);

	for (size_t k = 0; k < n; k++)
		ck_assert_msg(udp_frame_parse(buf, k, &f) == 0, "%zu bytes of %zu", k, n);
	ck_assert_int_eq(udp_frame_parse(buf, n, &f), (long)n);
}
END_TEST

START_TEST(hostile_headers_refused)
{
	uint8_t buf[HDR + 8];
	struct kiln_net_dgram *h = (struct kiln_net_dgram *)buf;
	struct udp_frame f;

	/* longer than UDP allows, even with all the bytes there */
	mk(buf, KILN_NET_IPV4, "203.0.113.1", 7, 0);
	h->len = KILN_NET_DGRAM_MAX + 1;
	ck_assert_int_eq(udp_frame_parse(buf, HDR, &f), -1);
	h->len = 0xffff;
	ck_assert_int_eq(udp_frame_parse(buf, HDR, &f), -1);
	/* families: 0 is reserved, others unknown */
	for (int fam = 0; fam < 256; fam++) {
		mk(buf, KILN_NET_IPV6, "2001:db8::1", 7, 0);
		h->family = (uint8_t)fam;
		ck_assert_int_eq(udp_frame_parse(buf, HDR, &f) > 0,
		                 fam == KILN_NET_IPV4 ? 0 : fam == KILN_NET_IPV6);
	}
	/* IPv4 with bytes past its four */
	mk(buf, KILN_NET_IPV4, "203.0.113.1", 7, 0);
	h->addr[4] = 1;
	ck_assert_int_eq(udp_frame_parse(buf, HDR, &f), -1);
	/* port 0, reserved bits, a status from the guest (even kilnd's EACCES) */
	mk(buf, KILN_NET_IPV4, "203.0.113.1", 0, 0);
	ck_assert_int_eq(udp_frame_parse(buf, HDR, &f), -1);
	mk(buf, KILN_NET_IPV4, "203.0.113.1", 7, 0);
	h->reserved = 1;
	ck_assert_int_eq(udp_frame_parse(buf, HDR, &f), -1);
	mk(buf, KILN_NET_IPV4, "203.0.113.1", 7, 0);
	h->status = KILN_NET_EACCES;
	ck_assert_int_eq(udp_frame_parse(buf, HDR, &f), -1);
	/* the guest's side of the same rules: kilnd's refusal is len 0 only */
	ck_assert_int_eq(kiln_net_dgram_len(h, 1), 0);
	h->len = 1;
	ck_assert_int_eq(kiln_net_dgram_len(h, 1), -1);
	h->len = 0;
	h->status = 1;
	ck_assert_int_eq(kiln_net_dgram_len(h, 1), -1);
}
END_TEST

START_TEST(frames_written_parse_back)
{
	uint8_t buf[HDR + 4], a[16] = {0};
	struct udp_frame f;
	size_t n;

	a[10] = a[11] = 0xff;
	a[12] = 10;
	a[15] = 2;
	n = udp_frame_put(buf, a, KILN_NET_IPV4, 5353, 0, "ping", 4);
	ck_assert_uint_eq(n, HDR + 4);
	ck_assert_int_eq(udp_frame_parse(buf, n, &f), (long)n);
	ck_assert_mem_eq(f.addr, a, 16);
	ck_assert_uint_eq(f.port, 5353);
	ck_assert_mem_eq(f.payload, "ping", 4);
	/* a refusal: the guest reads it, kilnd would not take it back */
	n = udp_frame_put(buf, a, KILN_NET_IPV4, 5353, KILN_NET_EACCES, NULL, 0);
	ck_assert_int_eq(kiln_net_dgram_len((struct kiln_net_dgram *)buf, 1), 0);
	ck_assert_int_eq(udp_frame_parse(buf, n, &f), -1);
}
END_TEST

START_TEST(random_bytes_never_overrun)
{
	uint8_t *buf = malloc(4096);
	struct udp_frame f;

	srand(20);
	for (int i = 0; i < 20000; i++) {
		size_t n = (size_t)rand() % 4096;
		long k;

		for (size_t j = 0; j < n; j++)
			buf[j] = (uint8_t)rand();
		if (i & 1 && n >= HDR) /* often a plausible header */
			buf[2] = (uint8_t)(i & 2 ? KILN_NET_IPV4 : KILN_NET_IPV6);
		k = udp_frame_parse(buf, n, &f);
		ck_assert(k >= -1 && k <= (long)n);
		if (k > 0) {
			ck_assert_uint_eq((size_t)k, HDR + f.len);
			ck_assert(f.len <= KILN_NET_DGRAM_MAX && f.port);
		}
	}
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("udp_frame");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, parses_whole_frames);
	tcase_add_test(tc, truncated_frames_wait);
	tcase_add_test(tc, hostile_headers_refused);
	tcase_add_test(tc, frames_written_parse_back);
	tcase_add_test(tc, random_bytes_never_overrun);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
