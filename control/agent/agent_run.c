/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_client.h"
#include "agent_run.h"

struct agent_run {
	struct agent_conn *a;
	bool hello, started;
	char out[AGENT_RUN_KEEP + 1];
	size_t out_len;
	agent_run_fn cb;
	void *ctx;
};

static void finish(struct agent_run *r, struct agent_run_result *res, const char *err)
{
	agent_run_fn cb = r->cb;
	void *ctx = r->ctx;
	char out[AGENT_RUN_KEEP + 1];

	/* r goes first: the callback may well end the sandbox. */
	memcpy(out, r->out, r->out_len);
	out[r->out_len] = 0;
	if (res)
		res->output = out;
	agent_close(r->a);
	free(r);
	cb(ctx, res, err);
}

/* Keep the last AGENT_RUN_KEEP bytes. */
static void keep(struct agent_run *r, const uint8_t *p, uint32_t n)
{
	if (n >= AGENT_RUN_KEEP) {
		memcpy(r->out, p + n - AGENT_RUN_KEEP, AGENT_RUN_KEEP);
		r->out_len = AGENT_RUN_KEEP;
		return;
	}
	if (r->out_len + n > AGENT_RUN_KEEP) {
		size_t drop = r->out_len + n - AGENT_RUN_KEEP;

		memmove(r->out, r->out + drop, r->out_len - drop);
		r->out_len -= drop;
	}
	memcpy(r->out + r->out_len, p, n);
	r->out_len += n;
}

static void on_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct agent_run *r = ctx;
	struct agent_run_result res = {0};
	uint32_t v, kind, sig, flags, err, len;
	const char *msg;
	char text[400];
	int32_t code;

	switch (type) {
	case KILN_MSG_HELLO:
		if (r->hello || agent_parse_hello(p, n, &v, &kind) || v != KILN_AGENT_VERSION)
			break;
		r->hello = true;
		return;
	case KILN_MSG_STARTED:
		if (!r->hello || r->started)
			break;
		r->started = true;
		return;
	case KILN_MSG_STDOUT:
	case KILN_MSG_STDERR:
		if (!r->started)
			break;
		keep(r, p, n);
		return;
	case KILN_MSG_EXIT:
		if (!r->started || agent_parse_exit(p, n, &code, &sig, &flags))
			break;
		res.exit_code = code;
		res.signal = (int)sig;
		res.timed_out = flags & KILN_EXIT_TIMEOUT;
		finish(r, &res, NULL);
		return;
	case KILN_MSG_ERROR:
		if (agent_parse_error(p, n, &err, &msg, &len))
			break;
		if (!len) {
			msg = strerror((int)err);
			len = (uint32_t)strlen(msg);
		}
		snprintf(text, sizeof(text), "the agent: %.*s", (int)(len > 300 ? 300 : len), msg);
		finish(r, NULL, text);
		return;
	}
	finish(r, NULL, "the agent broke its protocol");
}

static void on_close(void *ctx, int err)
{
	struct agent_run *r = ctx;
	char text[128];

	r->a = NULL;
	snprintf(text, sizeof(text), "the agent stream ended without an exit status (%s)",
	         err ? strerror(-err) : "closed");
	finish(r, NULL, text);
}

static const struct agent_conn_ops ops = {
    .on_frame = on_frame,
    .on_close = on_close,
};

struct agent_run *agent_run(struct ev_loop *loop, const char *vsock_path, const char *const *argv,
                            const char *const *env, uint32_t timeout_ms, agent_run_fn cb, void *ctx)
{
	struct agent_run *r = calloc(1, sizeof(*r));
	struct agent_start st = {.argv = argv, .env = env, .timeout_ms = timeout_ms};

	if (!r)
		return NULL;
	r->cb = cb;
	r->ctx = ctx;
	r->a = agent_open(loop, vsock_path, KILN_AGENT_PORT, &ops, r);
	if (!r->a) {
		free(r);
		return NULL;
	}
	if (agent_msg_hello(agent_out(r->a), KILN_STREAM_EXEC, 0) ||
	    agent_msg_start(agent_out(r->a), &st) ||
	    agent_msg_empty(agent_out(r->a), KILN_MSG_STDIN_EOF)) {
		agent_close(r->a);
		free(r);
		errno = E2BIG;
		return NULL;
	}
	agent_flush(r->a);
	return r;
}

void agent_run_cancel(struct agent_run *r)
{
	if (!r)
		return;
	agent_close(r->a);
	free(r);
}
