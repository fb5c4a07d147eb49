/* SPDX-License-Identifier: MIT */
/* Unit tests of CONNECT's peer trailer both ways: kilnd's encoder
 * (control/agent/agent_proto.c agent_msg_connect) and the agent's parser
 * (initramfs/agent/proto.c rd_peer), which must agree on the layout and
 * refuse what a hostile host could send. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_proto.h"
#include "../initramfs/agent/proto.h"

static struct sockaddr_storage sa(int family, const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = {0};

	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		ck_assert_int_eq(inet_pton(AF_INET, ip, &a->sin_addr), 1);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		ck_assert_int_eq(inet_pton(AF_INET6, ip, &a->sin6_addr), 1);
	}
	return ss;
}

/* Encode a CONNECT with peer, then parse its payload as the agent does:
 * the parser's result (0 / errno), *out the address it read. */
static int round_trip(const struct sockaddr_storage *peer, uint32_t *payload_len,
                      struct sockaddr_storage *out, socklen_t *len)
{
	struct buf b = {0};
	struct kiln_frame f;
	struct rd r;
	char why[160];
	int err;

	ck_assert_int_eq(agent_msg_connect(&b, 8080, KILN_PORT_ANY, peer), 0);
	ck_assert_int_eq(agent_hdr_decode(buf_head(&b), &f), 0);
	ck_assert_uint_eq(f.type, KILN_MSG_CONNECT);
	*payload_len = f.len;
	rd_init(&r, (const uint8_t *)buf_head(&b) + AGENT_HDR_LEN, f.len);
	ck_assert_uint_eq(rd_u32(&r), 8080);
	ck_assert_uint_eq(rd_u32(&r), KILN_PORT_ANY);
	err = r.left ? rd_peer(&r, out, len, why, sizeof(why)) : -1;
	buf_free(&b);
	return err;
}

static const char *text(const struct sockaddr_storage *ss, char *buf, size_t n)
{
	const void *a = ss->ss_family == AF_INET
	                    ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
	                    : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;

	return inet_ntop(ss->ss_family, a, buf, (socklen_t)n);
}

START_TEST(v4_v6_and_mapped)
{
	static const struct {
		int family;
		const char *ip;
		int want_family;
		const char *want;
	} cases[] = {
	    {AF_INET, "203.0.113.7", AF_INET, "203.0.113.7"},
	    {AF_INET6, "2001:db8::7", AF_INET6, "2001:db8::7"},
	    {AF_INET6, "::ffff:198.51.100.3", AF_INET, "198.51.100.3"}, /* dual-stack */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage peer = sa(cases[i].family, cases[i].ip, 40000 + i), out;
		socklen_t len = 0;
		uint32_t n;
		char buf[64];

		ck_assert_int_eq(round_trip(&peer, &n, &out, &len), 0);
		ck_assert_uint_eq(n, 8 + KILN_PEER_LEN);
		ck_assert_int_eq(out.ss_family, cases[i].want_family);
		ck_assert_uint_eq(len, cases[i].want_family == AF_INET
		                           ? sizeof(struct sockaddr_in)
		                           : sizeof(struct sockaddr_in6));
		ck_assert_str_eq(text(&out, buf, sizeof(buf)), cases[i].want);
		ck_assert_uint_eq(ntohs(((struct sockaddr_in *)&out)->sin_port), 40000 + i);
	}
}
END_TEST

START_TEST(no_peer_no_trailer)
{
	struct sockaddr_storage unix_peer = {.ss_family = AF_UNIX}, out,
	                        no_port = sa(AF_INET, "203.0.113.7", 0);
	socklen_t len;
	uint32_t n;

	/* what agents from before the trailer take: port and family only */
	ck_assert_int_eq(round_trip(NULL, &n, &out, &len), -1);
	ck_assert_uint_eq(n, 8);
	ck_assert_int_eq(round_trip(&unix_peer, &n, &out, &len), -1);
	ck_assert_uint_eq(n, 8);
	ck_assert_int_eq(round_trip(&no_port, &n, &out, &len), -1);
	ck_assert_uint_eq(n, 8);
}
END_TEST

/* The trailer's bytes: version, family, 16 address bytes, port. */
static int parse(uint32_t version, uint32_t family, const uint8_t addr[16], uint32_t port,
                 size_t cut, size_t extra)
{
	uint8_t p[KILN_PEER_LEN + 4] = {0};
	struct sockaddr_storage ss;
	socklen_t len;
	char why[160];
	struct rd r;

	memcpy(p, &version, 4); /* little-endian host, as the protocol */
	memcpy(p + 4, &family, 4);
	memcpy(p + 8, addr, 16);
	memcpy(p + 24, &port, 4);
	rd_init(&r, p, KILN_PEER_LEN - cut + extra);
	return rd_peer(&r, &ss, &len, why, sizeof(why));
}

START_TEST(hostile_trailers)
{
	static const uint8_t v4[16] = {192, 0, 2, 1}, padded[16] = {192, 0, 2, 1, 0, 0, 0, 1};

	ck_assert_int_eq(parse(KILN_PEER_V1, 4, v4, 80, 0, 0), 0);
	ck_assert_int_eq(parse(KILN_PEER_V1, 6, padded, 65535, 0, 0), 0);
	ck_assert_int_eq(parse(2, 4, v4, 80, 0, 0), EINVAL);
	ck_assert_int_eq(parse(0, 4, v4, 80, 0, 0), EINVAL);
	ck_assert_int_eq(parse(KILN_PEER_V1, 0, v4, 80, 0, 0), EINVAL);
	ck_assert_int_eq(parse(KILN_PEER_V1, 10, v4, 80, 0, 0), EINVAL); /* AF_INET6, not 6 */
	ck_assert_int_eq(parse(KILN_PEER_V1, 4, v4, 0, 0, 0), EINVAL);
	ck_assert_int_eq(parse(KILN_PEER_V1, 4, v4, 65536, 0, 0), EINVAL);
	ck_assert_int_eq(parse(KILN_PEER_V1, 4, padded, 80, 0, 0), EINVAL);
	for (size_t cut = 1; cut <= KILN_PEER_LEN; cut++)
		ck_assert_int_eq(parse(KILN_PEER_V1, 4, v4, 80, cut, 0), EPROTO);
	ck_assert_int_eq(parse(KILN_PEER_V1, 4, v4, 80, 0, 1), EPROTO);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent_peer");
	TCase *tc = tcase_create("agent_peer");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, v4_v6_and_mapped);
	tcase_add_test(tc, no_peer_no_trailer);
	tcase_add_test(tc, hostile_trailers);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
