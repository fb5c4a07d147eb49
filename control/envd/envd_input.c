/* SPDX-License-Identifier: MIT */
/* process.Process/StreamInput: client streaming stdin. The request body is
 * a stream of Connect envelopes, read as it arrives: first
 * {"start":{"process":{"pid"|"tag"}}}, then {"data":{"input":{"stdin"|
 * "pty": base64}}} and {"keepalive":{}} messages in any number; each
 * input goes to the process as it comes (like SendInput). When the client
 * ends its stream the answer is one {} message and the end of the stream,
 * as envd's; an error ends it at once. While the agent holds more than
 * AGENT_OUT_HIGH of input kilnd stops reading the request: the client
 * slows down. The process is looked up again for every message, so one
 * that ends meanwhile is not_found, never a dangling pointer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_client.h"
#include "envd.h"
#include "envd_proc.h"
#include "http/connectrpc.h"
#include "http/jsonutil.h"
#include "sandbox/sandbox.h"

#define ENVELOPE_MAX (4u << 20) /* one input message */
#define WAIT_POLL    0.005      /* seconds between looks at a full agent queue */

struct sin {
	struct kilnd *kd;
	struct http_conn *c;
	char id[SB_ID_LEN + 1];
	struct buf in; /* what has come of the next envelope */
	json_t *start; /* {"process": selector} */
	ev_timer wait; /* reads paused until the agent took the input */
};

static void sin_free(struct sin *s)
{
	ev_timer_stop(s->kd->loop, &s->wait);
	buf_free(&s->in);
	json_decref(s->start);
	free(s);
}

/* End the call with an error (and free s): the rest of the body is dropped. */
static void sin_fail(struct sin *s, int code, const char *msg)
{
	http_set_handler(s->c, NULL, NULL, 0);
	http_pause_read(s->c, false);
	crpc_stream_fail(s->c, code, "%s", msg);
	sin_free(s);
}

/* The process the start message names, running now; NULL with err. */
static struct envd_proc *sin_proc(struct sin *s, int *code, char *err, size_t n)
{
	struct sandbox *sb = sb_find(s->kd, s->id);
	struct envd_proc *p;

	if (!sb || sb->state != SB_RUNNING) {
		snprintf(err, n, "sandbox %s is not running", s->id);
		*code = CRPC_UNAVAILABLE;
		return NULL;
	}
	p = envd_proc_find(sb, s->start, err, n);
	if (!p)
		*code = strstr(err, "not found") ? CRPC_NOT_FOUND : CRPC_INVALID_ARGUMENT;
	return p;
}

/* One message; false when the call failed (s is freed). */
static bool sin_message(struct sin *s, json_t *msg)
{
	json_t *start = json_object_get(msg, "start"), *data = json_object_get(msg, "data");
	struct envd_proc *p;
	char err[256];
	int code = CRPC_OK;

	if (json_is_object(start)) {
		if (s->start) {
			sin_fail(s, CRPC_INVALID_ARGUMENT, "a second start message");
			return false;
		}
		s->start = json_incref(start);
		if (!sin_proc(s, &code, err, sizeof(err))) {
			sin_fail(s, code, err);
			return false;
		}
		return true;
	}
	if (json_is_object(data)) {
		if (!s->start) {
			sin_fail(s, CRPC_INVALID_ARGUMENT,
			         "the first message must be start (the process to write to)");
			return false;
		}
		p = sin_proc(s, &code, err, sizeof(err));
		if (p)
			code = envd_proc_put_input(p, json_object_get(data, "input"), err,
			                           sizeof(err));
		if (code != CRPC_OK) {
			sin_fail(s, code, err);
			return false;
		}
		return true;
	}
	if (json_is_object(json_object_get(msg, "keepalive")))
		return true;
	sin_fail(s, CRPC_INVALID_ARGUMENT, "a message must be start, data or keepalive");
	return false;
}

/* Does the agent hold too much of the process's input? */
static bool backed_up(struct sin *s)
{
	char err[256];
	int code;
	struct envd_proc *p = s->start ? sin_proc(s, &code, err, sizeof(err)) : NULL;

	return p && p->a && agent_pending(p->a) > AGENT_OUT_HIGH;
}

static void on_wait(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sin *s = w->data;

	if (backed_up(s))
		return; /* (a repeating timer) */
	ev_timer_stop(loop, w);
	http_pause_read(s->c, false);
}

static int sin_body(void *ctx, const char *p, size_t n)
{
	struct sin *s = ctx;

	if (buf_append(&s->in, p, n)) {
		sin_fail(s, CRPC_INTERNAL, "out of memory");
		return 0;
	}
	while (buf_avail(&s->in) >= 5) {
		const unsigned char *h = (const unsigned char *)buf_head(&s->in);
		uint32_t len =
		    (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
		char err[JSON_ERR_LEN] = "";
		json_t *msg;
		bool ok;

		if (len > ENVELOPE_MAX) {
			sin_fail(s, CRPC_RESOURCE_EXHAUSTED, "a message larger than 4 MiB");
			return 0;
		}
		if (buf_avail(&s->in) < 5 + (size_t)len)
			break;
		msg = crpc_parse_envelope(buf_head(&s->in), 5 + (size_t)len, err, sizeof(err));
		buf_consume(&s->in, 5 + (size_t)len);
		if (!msg) {
			sin_fail(s, CRPC_INVALID_ARGUMENT, err);
			return 0;
		}
		ok = sin_message(s, msg);
		json_decref(msg);
		if (!ok)
			return 0;
	}
	if (backed_up(s) && !ev_is_active(&s->wait)) {
		http_pause_read(s->c, true);
		ev_timer_again(s->kd->loop, &s->wait);
	}
	return 0;
}

static void sin_complete(void *ctx)
{
	struct sin *s = ctx;

	if (buf_avail(&s->in)) {
		sin_fail(s, CRPC_INVALID_ARGUMENT, "the stream ended inside a message");
		return;
	}
	if (!s->start) {
		sin_fail(s, CRPC_INVALID_ARGUMENT, "no start message");
		return;
	}
	http_set_handler(s->c, NULL, NULL, 0);
	crpc_stream_start(s->c);
	crpc_stream_msg(s->c, "{}", 2);
	crpc_stream_end(s->c, CRPC_OK, NULL);
	sin_free(s);
}

static void sin_abort(void *ctx)
{
	sin_free(ctx);
}

static const struct http_handler sin_ops = {
    .on_body = sin_body,
    .on_complete = sin_complete,
    .on_abort = sin_abort,
};

void envd_proc_stream_input(struct kilnd *kd, struct http_conn *c, struct sandbox *sb)
{
	struct sin *s = calloc(1, sizeof(*s));

	if (!s) {
		crpc_stream_fail(c, CRPC_INTERNAL, "out of memory");
		return;
	}
	s->kd = kd;
	s->c = c;
	snprintf(s->id, sizeof(s->id), "%s", sb->rec.id);
	ev_init(&s->wait, on_wait);
	s->wait.repeat = WAIT_POLL;
	s->wait.data = s;
	http_set_handler(c, &sin_ops, s, 0);
}
