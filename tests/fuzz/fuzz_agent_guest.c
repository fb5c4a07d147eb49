/* SPDX-License-Identifier: MIT */
/* libFuzzer: the guest agent's frame reader on what a host sends: the
 * header check, then a payload read as the agent reads a START (argv, env,
 * strings, integers); everything it returns must be inside the payload or
 * a bounded copy of it. */
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (size >= sizeof(struct kiln_frame)) {
		struct frame_hdr h;
		uint8_t *copy;
		char **argv, **env, *cwd;
		uint32_t argc;
		struct rd r;

		frame_decode(data, &h);
		if (frame_check(&h))
			break;
		data += sizeof(struct kiln_frame);
		size -= sizeof(struct kiln_frame);
		if (h.len > size)
			break;
		copy = malloc(h.len ? h.len : 1);
		if (!copy)
			break;
		memcpy(copy, data, h.len);
		rd_init(&r, copy, h.len);
		argv = rd_strlist(&r, 1, &argc);
		env = rd_strlist(&r, 0, NULL);
		cwd = rd_str(&r);
		rd_u32(&r);
		rd_u16(&r);
		rd_u64(&r);
		if (rd_ok(&r) && (!argv || !env || !cwd || argc < 1))
			abort();
		strv_free(argv);
		strv_free(env);
		free(cwd);
		free(copy);
		data += h.len;
		size -= h.len;
	}
	return 0;
}
