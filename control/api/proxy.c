/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "http/jsonutil.h"
#include "proxy.h"
#include "agent/spare.h"
#include "util.h"

struct agent_conn *proxy_open(struct kilnd *kd, struct http_conn *c, struct sandbox *sb,
                              uint32_t kind, uint16_t hello_flags, const struct agent_conn_ops *ops,
                              void *ctx)
{
	struct agent_conn *a;

	if (sb->state != SB_RUNNING) {
		char msg[256];

		sb_not_running(sb, msg, sizeof(msg));
		http_respond_error(c, 409, "%s", msg);
		return NULL;
	}
	a = spare_take(sb, ops, ctx);
	if (!a) {
		http_respond_error(c, 503, "cannot reach the agent of sandbox %s: %s", sb->rec.id,
		                   strerror(errno));
		return NULL;
	}
	if (agent_msg_hello(agent_out(a), kind, hello_flags)) {
		agent_close(a);
		http_respond_error(c, 500, "out of memory");
		return NULL;
	}
	return a;
}

int proxy_errno_status(uint32_t err)
{
	switch (err) {
	case ENOENT:
		return 404;
	case ESRCH: /* the agent: no such user in the sandbox */
		return 400;
	case EACCES:
	case EPERM:
		return 403;
	case EEXIST:
	case ENOTEMPTY:
	case EBUSY:
		return 409;
	case EISDIR:
	case ENOTDIR:
	case EINVAL:
	case ENAMETOOLONG:
	case ELOOP:
	case EXDEV:
		return 400;
	case E2BIG:
	case EFBIG:
		return 413;
	case ENOSPC:
	case EDQUOT:
		return 507;
	default:
		return 500;
	}
}

void proxy_respond_agent_error(struct http_conn *c, const char *what, const uint8_t *p, uint32_t n)
{
	const char *msg;
	uint32_t err, len;

	if (agent_parse_error(p, n, &err, &msg, &len)) {
		http_respond_error(c, 502, "%s: malformed error from the agent", what);
		return;
	}
	if (len > 300)
		len = 300;
	{
		int status = proxy_errno_status(err);
		char text[400];

		/* The agent's text names the operation and the path already. */
		if (len)
			snprintf(text, sizeof(text), "%.*s", (int)len, msg);
		else
			snprintf(text, sizeof(text), "%s: %s", what, strerror((int)err));
		/* errno lets clients tell "not found" (127) from "not runnable". */
		http_respond_json(
		    c, status,
		    json_pack("{s:i,s:s,s:i}", "code", status, "message", text, "errno", (int)err));
	}
}
