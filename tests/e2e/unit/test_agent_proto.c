/* SPDX-License-Identifier: MIT */
/* Unit tests for control/agent/agent_proto.c: frame headers, message layouts,
 * bounds; and CONNECT's peer trailer both ways, with the agent's parser
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

static struct kiln_frame hdr_of(const struct buf *b, size_t at)
{
	struct kiln_frame f;

	ck_assert_int_eq(agent_hdr_decode(buf_head(b) + at, &f), 0);
	return f;
}

START_TEST(header_bounds)
{
	uint8_t h[8] = {0, 0, 0x10, 0, KILN_MSG_DATA, 0, 0, 0}; /* len 1 MiB exactly */
	struct kiln_frame f;

	ck_assert_int_eq(agent_hdr_decode(h, &f), 0);
	ck_assert_uint_eq(f.len, KILN_FRAME_MAX);
	h[0] = 1; /* one past */
	ck_assert_int_eq(agent_hdr_decode(h, &f), -EPROTO);
	h[0] = 0;
	h[4] = KILN_MSG_INVALID;
	ck_assert_int_eq(agent_hdr_decode(h, &f), -EPROTO);
	h[4] = KILN_MSG_MAX;
	ck_assert_int_eq(agent_hdr_decode(h, &f), -EPROTO);
	h[4] = KILN_MSG_DATA;
	h[6] = 1; /* flags are reserved */
	ck_assert_int_eq(agent_hdr_decode(h, &f), -EPROTO);
}
END_TEST

START_TEST(hello_round_trip)
{
	struct buf b = {0};
	uint32_t v, k;
	struct kiln_frame f;

	ck_assert_int_eq(agent_msg_hello(&b, KILN_STREAM_EXEC, 0), 0);
	ck_assert_uint_eq(buf_avail(&b), AGENT_HDR_LEN + 8);
	f = hdr_of(&b, 0);
	ck_assert_uint_eq(f.type, KILN_MSG_HELLO);
	ck_assert_int_eq(agent_parse_hello(buf_head(&b) + 8, f.len, &v, &k), 0);
	ck_assert_uint_eq(v, KILN_AGENT_VERSION);
	ck_assert_uint_eq(k, KILN_STREAM_EXEC);
	ck_assert_int_eq(agent_parse_hello(buf_head(&b) + 8, f.len - 1, &v, &k), -EPROTO);
	buf_free(&b);
}
END_TEST

START_TEST(data_is_split)
{
	struct buf b = {0};
	size_t n = 3 * KILN_DATA_CHUNK + 5, at = 0, total = 0;
	char *src = malloc(n);
	int frames = 0;

	memset(src, 'z', n);
	ck_assert_int_eq(agent_msg_data(&b, KILN_MSG_DATA, src, n), 0);
	while (at < buf_avail(&b)) {
		struct kiln_frame f = hdr_of(&b, at);

		ck_assert_uint_le(f.len, KILN_DATA_CHUNK);
		total += f.len;
		at += AGENT_HDR_LEN + f.len;
		frames++;
	}
	ck_assert_int_eq(frames, 4);
	ck_assert_uint_eq(total, n);
	free(src);
	buf_free(&b);
}
END_TEST

START_TEST(frames_survive_buffer_compaction)
{
	/* A consumed prefix lets buf_reserve() slide data down mid-frame:
	 * the builder must not keep absolute offsets. */
	struct buf b = {0};
	char junk[8192] = {0}, *data = malloc(200000);
	size_t at;

	memset(data, 'q', 200000);
	buf_append(&b, junk, sizeof(junk));
	buf_consume(&b, 6000);
	at = buf_avail(&b);
	ck_assert_int_eq(agent_msg_data(&b, KILN_MSG_STDIN, data, 200000), 0);
	ck_assert_uint_eq(hdr_of(&b, at).len, KILN_DATA_CHUNK);
	free(data);
	buf_free(&b);
}
END_TEST

START_TEST(start_layout)
{
	const char *argv[] = {"/bin/sh", "-c", "echo hi", NULL}, *env[] = {"A=1", NULL};
	struct agent_start st = {
	    .argv = argv, .env = env, .cwd = "/tmp", .timeout_ms = 5, .cols = 100, .rows = 30};
	struct buf b = {0};
	struct agent_rd r;
	struct kiln_frame f;
	const char *s;
	uint32_t n;

	ck_assert_int_eq(agent_msg_start(&b, &st), 0);
	f = hdr_of(&b, 0);
	ck_assert_uint_eq(f.type, KILN_MSG_START);
	agent_rd_init(&r, buf_head(&b) + 8, f.len);
	ck_assert_uint_eq(agent_get_u32(&r), 3);
	agent_get_str(&r, &s, &n);
	ck_assert(n == 7 && !memcmp(s, "/bin/sh", 7));
	agent_get_str(&r, &s, &n);
	agent_get_str(&r, &s, &n);
	ck_assert(n == 7 && !memcmp(s, "echo hi", 7));
	ck_assert_uint_eq(agent_get_u32(&r), 1);
	agent_get_str(&r, &s, &n);
	ck_assert(n == 3 && !memcmp(s, "A=1", 3));
	agent_get_str(&r, &s, &n);
	ck_assert(n == 4 && !memcmp(s, "/tmp", 4));
	ck_assert_uint_eq(agent_get_u32(&r), 0); /* uid */
	ck_assert_uint_eq(agent_get_u32(&r), 5);
	ck_assert_uint_eq(agent_get_u16(&r), 100);
	ck_assert_uint_eq(agent_get_u16(&r), 30);
	ck_assert_int_eq(agent_rd_done(&r), 0);
	buf_free(&b);
}
END_TEST

/* The user trailer goes after the fields, only when a user is named. */
START_TEST(user_trailer)
{
	const char *argv[] = {"id", NULL};
	struct agent_start st = {.argv = argv, .user = "user", .user_flags = KILN_USER_OR_ROOT};
	struct buf b = {0};
	struct agent_rd r;
	struct kiln_frame f;
	const char *s;
	uint32_t n;

	ck_assert_int_eq(agent_msg_start(&b, &st), 0);
	f = hdr_of(&b, 0);
	agent_rd_init(&r, buf_head(&b) + 8, f.len);
	ck_assert_uint_eq(agent_get_u32(&r), 1);
	agent_get_str(&r, &s, &n);
	ck_assert_uint_eq(agent_get_u32(&r), 0); /* env */
	agent_get_str(&r, &s, &n);               /* cwd */
	agent_get_u32(&r);
	agent_get_u32(&r);
	agent_get_u16(&r);
	agent_get_u16(&r);
	agent_get_str(&r, &s, &n);
	ck_assert(n == 4 && !memcmp(s, "user", 4));
	ck_assert_uint_eq(agent_get_u32(&r), KILN_USER_OR_ROOT);
	ck_assert_int_eq(agent_rd_done(&r), 0);
	buf_reset(&b);
	ck_assert_int_eq(agent_msg_file_as(&b, KILN_FILE_STAT, "/x", 0, NULL, "u", 0), 0);
	f = hdr_of(&b, 0);
	ck_assert_uint_eq(f.len, 4 + 4 + 2 + 4 + 1 + 4);
	buf_reset(&b);
	ck_assert_int_eq(agent_msg_file_as(&b, KILN_FILE_STAT, "/x", 0, NULL, NULL, 0), 0);
	ck_assert_uint_eq(hdr_of(&b, 0).len, 4 + 4 + 2); /* no user: as before */
	ck_assert(agent_user_valid("user") && agent_user_valid("a.b_c-1"));
	ck_assert(!agent_user_valid("") && !agent_user_valid("-x") && !agent_user_valid("a:b") &&
	          !agent_user_valid("a/b") &&
	          !agent_user_valid("012345678901234567890123456789012"));
	buf_free(&b);
}
END_TEST

START_TEST(oversized_string_is_refused_cleanly)
{
	char *big = malloc(KILN_MAX_STRING + 2);
	const char *argv[] = {big, NULL};
	struct agent_start st = {.argv = argv};
	struct buf b = {0};

	memset(big, 'a', KILN_MAX_STRING + 1);
	big[KILN_MAX_STRING + 1] = 0;
	buf_append(&b, "keep", 4);
	ck_assert_int_lt(agent_msg_start(&b, &st), 0);
	ck_assert_uint_eq(buf_avail(&b), 4); /* the half-built frame is gone */
	argv[0] = NULL;
	ck_assert_int_eq(agent_msg_start(&b, &st), -EINVAL); /* argv must not be empty */
	ck_assert_int_lt(agent_msg_file(&b, KILN_FILE_MAX, "/x", 0, NULL), 0);
	ck_assert_int_lt(agent_msg_file(&b, KILN_FILE_RENAME, "/x", 0, NULL), 0);
	free(big);
	/* SHARES (14, after CHANGES' 12) carries its u32 as FREEZE does */
	buf_reset(&b);
	ck_assert_int_eq(KILN_FILE_SHARES, 14);
	ck_assert_int_eq(agent_msg_file(&b, KILN_FILE_SHARES, "/r", 1536, NULL), 0);
	{
		struct kiln_frame f = hdr_of(&b, 0);
		struct agent_rd r;
		const char *s;
		uint32_t n;

		agent_rd_init(&r, buf_head(&b) + 8, f.len);
		ck_assert_uint_eq(agent_get_u32(&r), KILN_FILE_SHARES);
		agent_get_str(&r, &s, &n);
		ck_assert(n == 2 && !memcmp(s, "/r", 2));
		ck_assert_uint_eq(agent_get_u32(&r), 1536);
		ck_assert_int_eq(agent_rd_done(&r), 0);
	}
	buf_free(&b);
}
END_TEST

/* nsec < 0: without the optional mtime nanoseconds (older agents). */
static struct buf stat_payload(uint32_t name_len, const char *name, uint32_t tlen, long long nsec)
{
	struct buf b = {0};
	struct agent_wr w;

	agent_begin(&w, &b, KILN_MSG_STAT);
	agent_put_u32(&w, 0100644);
	agent_put_u64(&w, 12345);
	agent_put_u64(&w, (uint64_t)-1);
	agent_put_u32(&w, name_len);
	agent_put_bytes(&w, name, strlen(name));
	agent_put_u32(&w, tlen);
	if (nsec >= 0)
		agent_put_u32(&w, (uint32_t)nsec);
	ck_assert_int_eq(agent_end(&w), 0);
	return b;
}

START_TEST(stat_parsing)
{
	struct agent_stat st;
	struct buf b = stat_payload(4, "file", 0, -1);

	ck_assert_int_eq(agent_parse_stat(buf_head(&b) + 8, (uint32_t)buf_avail(&b) - 8, &st), 0);
	ck_assert_uint_eq(st.size, 12345);
	ck_assert_int_eq(st.mtime, -1);
	ck_assert_uint_eq(st.mtime_ns, 0);
	ck_assert(st.name_len == 4 && !memcmp(st.name, "file", 4));
	/* trailing garbage, truncation, a name longer than the payload */
	ck_assert_int_eq(agent_parse_stat(buf_head(&b) + 8, (uint32_t)buf_avail(&b) - 7, &st),
	                 -EPROTO);
	ck_assert_int_eq(agent_parse_stat(buf_head(&b) + 8, (uint32_t)buf_avail(&b) - 9, &st),
	                 -EPROTO);
	buf_free(&b);
	b = stat_payload(0xffffffffu, "file", 0, -1);
	ck_assert_int_eq(agent_parse_stat(buf_head(&b) + 8, (uint32_t)buf_avail(&b) - 8, &st),
	                 -EPROTO);
	buf_free(&b);
	b = stat_payload(4, "fi\0e", 0, -1);
	ck_assert_int_eq(agent_parse_stat(buf_head(&b) + 8, (uint32_t)buf_avail(&b) - 8, &st),
	                 -EPROTO);
	buf_free(&b);
	/* with the mtime's nanoseconds; out of range, or cut short */
	b = stat_payload(4, "file", 0, 999999999);
	ck_assert_int_eq(agent_parse_stat(buf_head(&b) + 8, (uint32_t)buf_avail(&b) - 8, &st), 0);
	ck_assert_uint_eq(st.mtime_ns, 999999999);
	ck_assert_int_eq(agent_parse_stat(buf_head(&b) + 8, (uint32_t)buf_avail(&b) - 9, &st),
	                 -EPROTO);
	buf_free(&b);
	b = stat_payload(4, "file", 0, 1000000000);
	ck_assert_int_eq(agent_parse_stat(buf_head(&b) + 8, (uint32_t)buf_avail(&b) - 8, &st),
	                 -EPROTO);
	buf_free(&b);
}
END_TEST

START_TEST(exit_and_error)
{
	struct buf b = {0};
	struct agent_wr w;
	int32_t code;
	uint32_t sig, flags, err, len;
	const char *msg;

	agent_begin(&w, &b, KILN_MSG_EXIT);
	agent_put_u32(&w, (uint32_t)-1);
	agent_put_u32(&w, 9);
	agent_put_u32(&w, KILN_EXIT_TIMEOUT);
	ck_assert_int_eq(agent_end(&w), 0);
	ck_assert_int_eq(agent_parse_exit(buf_head(&b) + 8, 12, &code, &sig, &flags), 0);
	ck_assert_int_eq(code, -1);
	ck_assert_uint_eq(sig, 9);
	ck_assert_uint_eq(flags, KILN_EXIT_TIMEOUT);
	buf_reset(&b);
	agent_begin(&w, &b, KILN_MSG_ERROR);
	agent_put_u32(&w, ENOENT);
	agent_put_str(&w, "nope", 4);
	ck_assert_int_eq(agent_end(&w), 0);
	ck_assert_int_eq(agent_parse_error(buf_head(&b) + 8, 12, &err, &msg, &len), 0);
	ck_assert(err == ENOENT && len == 4 && !memcmp(msg, "nope", 4));
	buf_free(&b);
}
END_TEST

/* A START of one argv and no env, read up to its trailers. */
static void start_head(struct agent_rd *r, struct buf *b)
{
	const char *s;
	uint32_t n;

	agent_rd_init(r, buf_head(b) + 8, hdr_of(b, 0).len);
	agent_get_u32(r);
	agent_get_str(r, &s, &n);
	agent_get_u32(r);
	agent_get_str(r, &s, &n);
	agent_get_u32(r);
	agent_get_u32(r);
	agent_get_u16(r);
	agent_get_u16(r);
}

/* START's tag trailer: after (empty) user, rlimits and root trailers. */
START_TEST(tag_trailer)
{
	const char *argv[] = {"true", NULL};
	struct agent_start st = {.argv = argv, .tag = 0x123456789abcdefULL};
	struct buf b = {0};
	struct agent_rd r;
	const char *s;
	uint32_t n;

	ck_assert_int_eq(agent_msg_start(&b, &st), 0);
	start_head(&r, &b);
	agent_get_str(&r, &s, &n);
	ck_assert_uint_eq(n, 0); /* no user */
	ck_assert_uint_eq(agent_get_u32(&r), 0);
	ck_assert_uint_eq(agent_get_u32(&r), 0); /* no rlimits */
	agent_get_str(&r, &s, &n);
	ck_assert_uint_eq(n, 0); /* root: the guest's */
	ck_assert(agent_get_u64(&r) == 0x123456789abcdefULL);
	ck_assert_int_eq(agent_rd_done(&r), 0);
	/* without a tag, no trailers: what agents before the flag take */
	buf_reset(&b);
	st.tag = 0;
	ck_assert_int_eq(agent_msg_start(&b, &st), 0);
	ck_assert_uint_eq(hdr_of(&b, 0).len, 4 + 4 + 4 + 4 + 4 + 4 + 4 + 2 + 2);
	buf_free(&b);
}
END_TEST

/* START's pidns trailer: after a (zero) tag trailer. */
START_TEST(pidns_trailer)
{
	const char *argv[] = {"true", NULL};
	struct agent_start st = {.argv = argv, .root = "/run/x", .pidns = "/"};
	struct buf b = {0};
	struct agent_rd r;
	const char *s;
	uint32_t n;

	ck_assert_int_eq(agent_msg_start(&b, &st), 0);
	start_head(&r, &b);
	agent_get_str(&r, &s, &n); /* no user */
	agent_get_u32(&r);
	ck_assert_uint_eq(agent_get_u32(&r), 0); /* no rlimits */
	agent_get_str(&r, &s, &n);
	ck_assert(n == 6 && !memcmp(s, "/run/x", 6));
	ck_assert(agent_get_u64(&r) == 0); /* no tag */
	agent_get_str(&r, &s, &n);
	ck_assert(n == 1 && s[0] == '/');
	ck_assert_int_eq(agent_rd_done(&r), 0);
	buf_free(&b);
}
END_TEST

static int proc_of(uint32_t pid, uint64_t tag, uint32_t kind, uint32_t state, uint32_t flags,
                   size_t extra, struct agent_proc *pr)
{
	struct buf b = {0};
	struct agent_wr w;
	int rc;

	agent_begin(&w, &b, KILN_MSG_PROC);
	agent_put_u32(&w, pid);
	agent_put_u64(&w, tag);
	agent_put_u32(&w, kind);
	agent_put_u32(&w, state);
	agent_put_u32(&w, flags);
	for (size_t i = 0; i < extra; i++)
		agent_put_bytes(&w, "", 1);
	ck_assert_int_eq(agent_end(&w), 0);
	rc = agent_parse_proc(buf_head(&b) + 8, hdr_of(&b, 0).len, pr);
	buf_free(&b);
	return rc;
}

START_TEST(proc_parsing)
{
	struct agent_proc pr;

	ck_assert_int_eq(
	    proc_of(42, 7, KILN_STREAM_PTY, KILN_PROC_EXITED, KILN_PROC_DETACHED, 0, &pr), 0);
	ck_assert(pr.pid == 42 && pr.tag == 7 && pr.kind == KILN_STREAM_PTY &&
	          pr.state == KILN_PROC_EXITED && pr.flags == KILN_PROC_DETACHED);
	ck_assert_int_eq(proc_of(1, 0, KILN_STREAM_EXEC, KILN_PROC_STARTING, 0, 0, &pr), 0);
	/* what a hostile agent may send instead */
	ck_assert_int_eq(proc_of(0, 1, KILN_STREAM_EXEC, KILN_PROC_RUNNING, 0, 0, &pr), -EPROTO);
	ck_assert_int_eq(proc_of(0x80000000u, 1, KILN_STREAM_EXEC, KILN_PROC_RUNNING, 0, 0, &pr),
	                 -EPROTO);
	ck_assert_int_eq(proc_of(1, 1, KILN_STREAM_FILE, KILN_PROC_RUNNING, 0, 0, &pr), -EPROTO);
	ck_assert_int_eq(proc_of(1, 1, KILN_STREAM_EXEC, 0, 0, 0, &pr), -EPROTO);
	ck_assert_int_eq(proc_of(1, 1, KILN_STREAM_EXEC, KILN_PROC_EXITED + 1, 0, 0, &pr), -EPROTO);
	ck_assert_int_eq(proc_of(1, 1, KILN_STREAM_EXEC, KILN_PROC_RUNNING, 2, 0, &pr), -EPROTO);
	ck_assert_int_eq(proc_of(1, 1, KILN_STREAM_EXEC, KILN_PROC_RUNNING, 0, 1, &pr), -EPROTO);
	ck_assert_int_eq(agent_parse_proc("\1\0\0\0", 4, &pr), -EPROTO);
	ck_assert_str_eq(agent_msg_name(KILN_MSG_PROC), "PROC");
}
END_TEST

START_TEST(frame_size_cap)
{
	struct buf b = {0};
	struct agent_wr w;
	char *big = calloc(1, KILN_FRAME_MAX + 1);

	agent_begin(&w, &b, KILN_MSG_DATA);
	agent_put_bytes(&w, big, KILN_FRAME_MAX);
	ck_assert_int_eq(agent_end(&w), 0);
	agent_begin(&w, &b, KILN_MSG_DATA);
	agent_put_bytes(&w, big, KILN_FRAME_MAX + 1);
	ck_assert_int_eq(agent_end(&w), -E2BIG);
	ck_assert_uint_eq(buf_avail(&b), AGENT_HDR_LEN + KILN_FRAME_MAX);
	free(big);
	buf_free(&b);
}
END_TEST

/* ---------------------------------------------------------------- CONNECT's peer trailer */

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

static const char *peer_text(const struct sockaddr_storage *ss, char *buf, size_t n)
{
	const void *a = ss->ss_family == AF_INET
	                    ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
	                    : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;

	return inet_ntop(ss->ss_family, a, buf, (socklen_t)n);
}

START_TEST(peer_v4_v6_and_mapped)
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
		ck_assert_str_eq(peer_text(&out, buf, sizeof(buf)), cases[i].want);
		ck_assert_uint_eq(ntohs(((struct sockaddr_in *)&out)->sin_port), 40000 + i);
	}
}
END_TEST

START_TEST(peer_none_no_trailer)
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
static int peer_parse(uint32_t version, uint32_t family, const uint8_t addr[16], uint32_t port,
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

START_TEST(peer_hostile_trailers)
{
	static const uint8_t v4[16] = {192, 0, 2, 1}, padded[16] = {192, 0, 2, 1, 0, 0, 0, 1};

	ck_assert_int_eq(peer_parse(KILN_PEER_V1, 4, v4, 80, 0, 0), 0);
	ck_assert_int_eq(peer_parse(KILN_PEER_V1, 6, padded, 65535, 0, 0), 0);
	ck_assert_int_eq(peer_parse(2, 4, v4, 80, 0, 0), EINVAL);
	ck_assert_int_eq(peer_parse(0, 4, v4, 80, 0, 0), EINVAL);
	ck_assert_int_eq(peer_parse(KILN_PEER_V1, 0, v4, 80, 0, 0), EINVAL);
	ck_assert_int_eq(peer_parse(KILN_PEER_V1, 10, v4, 80, 0, 0), EINVAL); /* AF_INET6, not 6 */
	ck_assert_int_eq(peer_parse(KILN_PEER_V1, 4, v4, 0, 0, 0), EINVAL);
	ck_assert_int_eq(peer_parse(KILN_PEER_V1, 4, v4, 65536, 0, 0), EINVAL);
	ck_assert_int_eq(peer_parse(KILN_PEER_V1, 4, padded, 80, 0, 0), EINVAL);
	for (size_t cut = 1; cut <= KILN_PEER_LEN; cut++)
		ck_assert_int_eq(peer_parse(KILN_PEER_V1, 4, v4, 80, cut, 0), EPROTO);
	ck_assert_int_eq(peer_parse(KILN_PEER_V1, 4, v4, 80, 0, 1), EPROTO);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent_proto");
	TCase *tc = tcase_create("agent_proto");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, header_bounds);
	tcase_add_test(tc, hello_round_trip);
	tcase_add_test(tc, data_is_split);
	tcase_add_test(tc, frames_survive_buffer_compaction);
	tcase_add_test(tc, start_layout);
	tcase_add_test(tc, user_trailer);
	tcase_add_test(tc, oversized_string_is_refused_cleanly);
	tcase_add_test(tc, stat_parsing);
	tcase_add_test(tc, exit_and_error);
	tcase_add_test(tc, frame_size_cap);
	tcase_add_test(tc, tag_trailer);
	tcase_add_test(tc, pidns_trailer);
	tcase_add_test(tc, proc_parsing);
	tcase_add_test(tc, peer_v4_v6_and_mapped);
	tcase_add_test(tc, peer_none_no_trailer);
	tcase_add_test(tc, peer_hostile_trailers);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
