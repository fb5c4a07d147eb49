/* SPDX-License-Identifier: MIT */
/* GET /sandboxes/{id}/pty?cols=&rows=&cmd=&term= : a terminal over a
 * WebSocket. Binary frames carry terminal bytes both ways; text frames
 * carry JSON control messages: from the client {"resize":{"cols","rows"}},
 * {"signal":N} or {"eof":true}; from kilnd, last, {"type":"exit",
 * "exitCode":N,"signal":S} before the close frame. The 101 answer is sent
 * once the agent has started the command. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/jsonutil.h"
#include "proxy.h"
#include "util.h"
#include "http/ws.h"

#define PTY_MAX_DIM 4096

struct pty_sess {
	struct kilnd *kd;
	struct http_conn *c;
	struct agent_conn *a;
	struct ws ws;
	bool hello, upgraded, ending;
	char accept[29];
};

static void sess_free(struct pty_sess *s)
{
	agent_close(s->a);
	ws_free(&s->ws);
	free(s);
}

/* End the session: close frame (if upgraded), then close the connection
 * once it is written. */
static void end(struct pty_sess *s, uint16_t code, const char *why)
{
	if (!s->upgraded) {
		http_respond_error(s->c, 502, "pty: %s", why);
	} else {
		ws_send_close(&s->ws, code, why);
		http_close(s->c);
	}
	sess_free(s);
}

static int ws_write(void *ctx, const void *p, size_t n)
{
	struct pty_sess *s = ctx;

	http_write_raw(s->c, p, n);
	return 0;
}

static int control_message(struct pty_sess *s, const uint8_t *p, size_t n)
{
	json_t *j = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES, NULL), *v;
	struct buf *out = agent_out(s->a);
	int rc = 0;

	if (!json_is_object(j)) {
		json_decref(j);
		return -1;
	}
	if ((v = json_object_get(j, "resize"))) {
		json_int_t cols = json_integer_value(json_object_get(v, "cols"));
		json_int_t rows = json_integer_value(json_object_get(v, "rows"));

		if (cols < 1 || rows < 1 || cols > PTY_MAX_DIM || rows > PTY_MAX_DIM)
			rc = -1;
		else
			rc = agent_msg_resize(out, (uint16_t)cols, (uint16_t)rows);
	}
	if (!rc && (v = json_object_get(j, "signal"))) {
		json_int_t sig = json_integer_value(v);

		rc =
		    sig >= 1 && sig <= 64 ? agent_msg_u32(out, KILN_MSG_SIGNAL, (uint32_t)sig) : -1;
	}
	if (!rc && json_is_true(json_object_get(j, "eof")))
		rc = agent_msg_empty(out, KILN_MSG_STDIN_EOF);
	json_decref(j);
	agent_flush(s->a);
	return rc;
}

static int on_ws_message(void *ctx, int opcode, uint8_t *p, size_t n, bool fin)
{
	struct pty_sess *s = ctx;

	if (s->ending)
		return 0;
	if (opcode == WS_TEXT) {
		if (control_message(s, p, n)) {
			s->ending = true;
			return -1;
		}
		return 0;
	}
	if (n) {
		if (agent_msg_data(agent_out(s->a), KILN_MSG_STDIN, p, n))
			return -1;
		agent_flush(s->a);
		/* A client typing faster than the guest reads waits. */
		if (agent_pending(s->a) > AGENT_OUT_HIGH)
			http_pause_read(s->c, true);
	}
	return 0;
}

static void on_ws_close(void *ctx, uint16_t code)
{
	struct pty_sess *s = ctx;

	s->ending = true;
}

static const struct ws_ops ws_ops = {
    .on_message = on_ws_message,
    .on_close = on_ws_close,
    .write = ws_write,
};

static void on_raw(void *ctx, uint8_t *p, size_t n)
{
	struct pty_sess *s = ctx;
	int rc = ws_feed(&s->ws, p, n);

	if (rc || s->ending) {
		/* ws_feed already sent the close frame that fits the error. */
		if (rc && !s->ws.close_sent)
			ws_send_close(&s->ws, WS_CLOSE_POLICY, "bad control message");
		http_close(s->c);
		sess_free(s);
	}
}

static void on_http_drain(void *ctx)
{
	struct pty_sess *s = ctx;

	agent_pause(s->a, false);
}

static void on_http_abort(void *ctx)
{
	sess_free(ctx);
}

static const struct http_handler http_ops = {
    .on_raw = on_raw,
    .on_drain = on_http_drain,
    .on_abort = on_http_abort,
};

static void on_agent_drain(void *ctx)
{
	struct pty_sess *s = ctx;

	http_pause_read(s->c, false);
}

static void on_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct pty_sess *s = ctx;
	uint32_t v, kind, sig, flags;
	int32_t code;
	char hdrs[256], msg[128];

	if (!s->hello) {
		if (type == KILN_MSG_ERROR) {
			proxy_respond_agent_error(s->c, "pty", p, n);
			sess_free(s);
			return;
		}
		if (type != KILN_MSG_HELLO || agent_parse_hello(p, n, &v, &kind) ||
		    v != KILN_AGENT_VERSION) {
			end(s, WS_CLOSE_INTERNAL, "agent protocol mismatch");
			return;
		}
		s->hello = true;
		return;
	}
	switch (type) {
	case KILN_MSG_STARTED:
		if (s->upgraded)
			break;
		snprintf(
		    hdrs, sizeof(hdrs),
		    "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n",
		    s->accept);
		http_upgrade(s->c, hdrs);
		s->upgraded = true;
		return;
	case KILN_MSG_STDOUT:
	case KILN_MSG_STDERR:
		if (!s->upgraded)
			break;
		ws_send(&s->ws, WS_BINARY, p, n);
		if (http_out_pending(s->c) > HTTP_OUT_HIGH)
			agent_pause(s->a, true);
		return;
	case KILN_MSG_EXIT:
		if (!s->upgraded || agent_parse_exit(p, n, &code, &sig, &flags))
			break;
		snprintf(msg, sizeof(msg), "{\"type\":\"exit\",\"exitCode\":%d,\"signal\":%u}",
		         code, sig);
		ws_send(&s->ws, WS_TEXT, msg, strlen(msg));
		end(s, WS_CLOSE_NORMAL, "exited");
		return;
	case KILN_MSG_ERROR:
		if (!s->upgraded) {
			proxy_respond_agent_error(s->c, "pty", p, n);
			sess_free(s);
			return;
		}
		end(s, WS_CLOSE_INTERNAL, "agent error");
		return;
	}
	end(s, WS_CLOSE_INTERNAL, "agent protocol error");
}

static void on_agent_close(void *ctx, int err)
{
	struct pty_sess *s = ctx;

	s->a = NULL;
	end(s, WS_CLOSE_INTERNAL, "the agent stream ended");
}

static const struct agent_conn_ops agent_ops = {
    .on_frame = on_frame,
    .on_close = on_agent_close,
    .on_drain = on_agent_drain,
};

static bool header_has_token(const char *v, const char *token)
{
	size_t tl = strlen(token);

	while (v && *v) {
		while (*v == ' ' || *v == '\t' || *v == ',')
			v++;
		if (!strncasecmp(v, token, tl) && (v[tl] == 0 || v[tl] == ',' || v[tl] == ' '))
			return true;
		v = strchr(v, ',');
	}
	return false;
}

static long query_dim(struct http_req *req, const char *name, long def)
{
	char *v = http_query_param(req, name), *end;
	long n;

	if (!v)
		return def;
	n = strtol(v, &end, 10);
	if (*end || n < 1 || n > PTY_MAX_DIM)
		n = -1;
	free(v);
	return n;
}

void pty_start(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb)
{
	const char *ver = http_header(req, "Sec-WebSocket-Version");
	char *cmd = NULL, *term = NULL, *termvar = NULL;
	const char *argv[4] = {"/bin/sh", NULL, NULL, NULL};
	char **env = NULL;
	long cols = query_dim(req, "cols", 80), rows = query_dim(req, "rows", 24);
	struct pty_sess *s;
	json_t *extra;

	if (!header_has_token(http_header(req, "Upgrade"), "websocket") ||
	    !header_has_token(http_header(req, "Connection"), "upgrade")) {
		http_respond_error(c, 426, "this endpoint speaks WebSocket only");
		return;
	}
	if (!ver || strcmp(ver, "13")) {
		static const char body[] =
		    "{\"code\":426,\"message\":\"WebSocket version 13 required\"}";

		http_respond(c, 426, "application/json", "Sec-WebSocket-Version: 13\r\n", body,
		             sizeof(body) - 1);
		return;
	}
	if (cols < 0 || rows < 0) {
		http_respond_error(c, 400, "cols and rows must be between 1 and %d", PTY_MAX_DIM);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	if (ws_accept_key(http_header(req, "Sec-WebSocket-Key"), s->accept)) {
		free(s);
		http_respond_error(c, 400, "bad Sec-WebSocket-Key");
		return;
	}
	s->kd = kd;
	s->c = c;
	ws_init(&s->ws, false, &ws_ops, s);
	cmd = http_query_param(req, "cmd");
	term = http_query_param(req, "term");
	if (cmd && *cmd) {
		argv[1] = "-c";
		argv[2] = cmd;
	}
	extra = json_object();
	if (asprintf(&termvar, "%s", term && *term ? term : "xterm-256color") >= 0)
		json_object_set_new(extra, "TERM", json_string(termvar));
	env = sb_env(sb, extra);
	json_decref(extra);
	s->a = proxy_open(kd, c, sb, KILN_STREAM_PTY, 0, &agent_ops, s);
	if (!s->a) {
		ws_free(&s->ws);
		free(s);
		goto out;
	}
	{
		struct agent_start st = {
		    .argv = argv,
		    .env = (const char *const *)env,
		    .cwd = sb_defaults(sb)->cwd,
		    .uid = sb_defaults(sb)->uid,
		    .cols = (uint16_t)cols,
		    .rows = (uint16_t)rows,
		};

		if (!env || agent_msg_start(agent_out(s->a), &st)) {
			http_respond_error(c, 400, "command too large");
			sess_free(s);
			goto out;
		}
	}
	agent_flush(s->a);
	http_set_handler(c, &http_ops, s, 0);
out:
	free(cmd);
	free(term);
	free(termvar);
	sb_env_free(env);
}
