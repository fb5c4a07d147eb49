/* SPDX-License-Identifier: MIT */
/* libFuzzer: kilnd's side of the agent protocol, on frames a hostile guest
 * agent sends: headers, then each payload through every parser kilnd has
 * for it. A string a parser returns must lie inside its payload. */
#include <stdlib.h>
#include <string.h>

#include "agent/agent_proto.h"

static void inside(const void *s, uint32_t n, const uint8_t *p, uint32_t len)
{
	if (s && ((const uint8_t *)s < p || (const uint8_t *)s + n > p + len))
		abort();
}

static void payload(uint16_t type, const uint8_t *p, uint32_t n)
{
	struct agent_stat st;
	struct agent_info info;
	struct agent_proc pr;
	uint32_t a, b, c;
	const char *msg;
	int32_t code;

	agent_msg_name(type);
	agent_parse_hello(p, n, &a, &b);
	if (agent_parse_error(p, n, &a, &msg, &b) == 0)
		inside(msg, b, p, n);
	agent_parse_u32(p, n, &a);
	agent_parse_exit(p, n, &code, &b, &c);
	if (agent_parse_stat(p, n, &st) == 0) {
		inside(st.name, st.name_len, p, n);
		inside(st.target, st.target_len, p, n);
	}
	if (agent_parse_info(p, n, &info) == 0)
		inside(info.version, info.version_len, p, n);
	/* a PROC it takes names a pid and a kind kilnd can use */
	if (agent_parse_proc(p, n, &pr) == 0 &&
	    (!pr.pid || pr.pid > INT32_MAX ||
	     (pr.kind != KILN_STREAM_EXEC && pr.kind != KILN_STREAM_PTY)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A stream of frames, as read from the connection. */
	while (size >= sizeof(struct kiln_frame)) {
		struct kiln_frame f;
		uint8_t *copy;

		if (agent_hdr_decode(data, &f))
			break;
		data += sizeof(f);
		size -= sizeof(f);
		if (f.len > size)
			break;
		copy = malloc(f.len ? f.len : 1);
		if (!copy)
			break;
		memcpy(copy, data, f.len);
		payload(f.type, copy, f.len);
		free(copy);
		data += f.len;
		size -= f.len;
	}
	return 0;
}
