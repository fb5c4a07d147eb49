/* SPDX-License-Identifier: MIT */
/* GET /sandboxes/{id}/pty?cols=&rows=&cmd=&term= : a terminal over a
 * WebSocket. Binary frames carry terminal bytes both ways; text frames
 * carry JSON control messages: from the client {"resize":{"cols","rows"}},
 * {"signal":N} or {"eof":true}; from kilnd, last, {"type":"exit",
 * "exitCode":N,"signal":S} before the close frame. The 101 answer is sent
 * once the agent has started the command.
 *
 * GET /sandboxes/{id}/processes/{pid}/attach is the same WebSocket to a
 * process of kiln's exec or pty that a pause detached (procs.h): the agent
 * replays the output it kept, then the session goes on as it began (an
 * exec process's stderr comes as {"type":"stderr","data":"<base64>"}).
 *
 * The command outlives its stream: a pause ends the session with
 * {"type":"detached","pid":N,"message":...} and close 1001, and the
 * command goes on. A client that leaves a session it started ends the
 * command (the agent is told so); one that leaves an attached session
 * leaves the command detached again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "http/jsonutil.h"
#include "procs.h"
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
	bool attach;    /* ATTACH of a detached process, not START */
	bool exec_kind; /* (attach) the process is an exec's: stderr apart, no resize */
	char accept[29];
	char sb_id[SB_ID_LEN + 1];
	uint32_t pid;
	uint64_t tag;            /* START's, listed as starting until STARTED (procs.h) */
	char cmd[PROCS_CMD_MAX]; /* for the process table */
	/* for its pty.finished event (once the terminal was up) */
	char who[EVENTS_WHO_LEN];
	char *ev_cmd;
	int64_t t0;
	unsigned long long in_bytes, out_bytes;
	int exit_code; /* -1: not known */
	bool detached; /* a pause detached it: it runs on (procs.h) */
};

static void sess_free(struct pty_sess *s)
{
	if (s->upgraded && s->ev_cmd) { /* a terminal of pty_start's (not an attach) */
		json_t *d =
		    json_pack("{s:s,s:I,s:I,s:I}", "cmd", s->ev_cmd, "durationMs",
		              (json_int_t)(now_ms() - s->t0), "inBytes", (json_int_t)s->in_bytes,
		              "outBytes", (json_int_t)s->out_bytes);

		if (d && s->detached)
			json_object_set_new(d, "pid", json_integer(s->pid));
		else if (d)
			json_object_set_new(d, "exitCode",
			                    s->exit_code < 0 ? json_null()
			                                     : json_integer(s->exit_code));
		events_add(s->kd, s->sb_id, sb_find(s->kd, s->sb_id),
		           s->detached ? "pty.detached" : "pty.finished", s->who, d);
	}
	free(s->ev_cmd);
	agent_close(s->a);
	ws_free(&s->ws);
	free(s);
}

/* The client went away (or closed the WebSocket). */
static void client_gone(struct pty_sess *s)
{
	struct sandbox *sb = sb_find(s->kd, s->sb_id);
	struct kproc *kp = procs_lookup_sess(s->kd, s->sb_id, s->pid, s->tag);

	if (s->attach || (kp && s->kd->stopping)) {
		/* Detached again, or kilnd exits: the agent keeps it when its
		 * stream closes (the next kilnd lists it). */
		if (kp)
			kp->attached = false;
		sess_free(s);
		return;
	}
	procs_abort_stream(s->a);
	s->a = NULL;
	/* A pausing VM may not read the ERROR any more: then the command
	 * survives, and stays listed to be attached (or found gone). */
	if (kp && sb->state == SB_PAUSING)
		kp->attached = false;
	else
		procs_forget_sess(s->kd, s->sb_id, s->pid, s->tag);
	sess_free(s);
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
		else if (s->exec_kind)
			rc = 0; /* an exec process has no terminal to resize */
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
		s->in_bytes += n;
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
		client_gone(s);
	}
}

static void on_http_drain(void *ctx)
{
	struct pty_sess *s = ctx;

	agent_pause(s->a, false);
}

static void on_http_abort(void *ctx)
{
	client_gone(ctx);
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

static void send_stderr(struct pty_sess *s, const uint8_t *p, uint32_t n)
{
	struct buf b = {0};

	buf_puts(&b, "{\"type\":\"stderr\",\"data\":\"");
	b64_encode(&b, p, n);
	buf_puts(&b, "\"}");
	ws_send(&s->ws, WS_TEXT, buf_head(&b), buf_avail(&b));
	buf_free(&b);
}

/* ERROR before the 101: the command did not start, or (attach) the agent
 * has no such process waiting any more. */
static void agent_error_early(struct pty_sess *s, const uint8_t *p, uint32_t n)
{
	struct kproc *kp = procs_lookup_sess(s->kd, s->sb_id, s->pid, s->tag);
	const char *msg;
	uint32_t err, len;

	if (s->attach && !agent_parse_error(p, n, &err, &msg, &len) && err == ESRCH) {
		procs_forget_sess(s->kd, s->sb_id, s->pid, s->tag);
		http_respond_error(s->c, 404,
		                   "process %u of sandbox %s is gone: it did not survive (the "
		                   "sandbox was restored from an older snapshot, or its agent "
		                   "restarted), or it ended more than 10 minutes ago",
		                   s->pid, s->sb_id);
	} else {
		if (kp)
			kp->attached = false;
		proxy_respond_agent_error(s->c, s->attach ? "attach" : "pty", p, n);
	}
	sess_free(s);
}

static void on_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct pty_sess *s = ctx;
	uint32_t v, kind, sig, flags;
	int32_t code;
	char hdrs[256], msg[192];

	if (!s->hello) {
		if (type == KILN_MSG_ERROR) {
			agent_error_early(s, p, n);
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
		if (s->upgraded || agent_parse_u32(p, n, &v) || (s->attach && v != s->pid))
			break;
		if (!s->attach) {
			s->pid = v;
			procs_add(sb_find(s->kd, s->sb_id), v, true, s->cmd, s->tag);
		}
		snprintf(hdrs, sizeof(hdrs),
		         "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
		         "%s\r\n%s",
		         s->accept, api_ws_protocol_header(http_conn_req(s->c)));
		http_upgrade(s->c, hdrs);
		s->upgraded = true;
		return;
	case KILN_MSG_STDOUT:
	case KILN_MSG_STDERR:
		if (!s->upgraded)
			break;
		if (s->exec_kind && type == KILN_MSG_STDERR)
			send_stderr(s, p, n);
		else
			ws_send(&s->ws, WS_BINARY, p, n);
		s->out_bytes += n;
		if (http_out_pending(s->c) > HTTP_OUT_HIGH)
			agent_pause(s->a, true);
		return;
	case KILN_MSG_EXIT:
		if (!s->upgraded || agent_parse_exit(p, n, &code, &sig, &flags))
			break;
		snprintf(msg, sizeof(msg), "{\"type\":\"exit\",\"exitCode\":%d,\"signal\":%u%s}",
		         code, sig,
		         flags & KILN_EXIT_OOM
		             ? ",\"oom\":true,\"reason\":\"killed: the sandbox ran out of memory\""
		             : "");
		s->exit_code = code;
		ws_send(&s->ws, WS_TEXT, msg, strlen(msg));
		procs_forget_sess(s->kd, s->sb_id, s->pid, s->tag);
		end(s, WS_CLOSE_NORMAL, "exited");
		return;
	case KILN_MSG_ERROR:
		if (!s->upgraded) {
			agent_error_early(s, p, n);
			return;
		}
		procs_forget_sess(s->kd, s->sb_id, s->pid, s->tag);
		end(s, WS_CLOSE_INTERNAL, "agent error");
		return;
	}
	procs_forget_sess(s->kd, s->sb_id, s->pid, s->tag);
	end(s, WS_CLOSE_INTERNAL, "agent protocol error");
}

static void on_agent_close(void *ctx, int err)
{
	struct pty_sess *s = ctx;
	struct sandbox *sb = sb_find(s->kd, s->sb_id);
	struct kproc *kp = procs_lookup_sess(s->kd, s->sb_id, s->pid, s->tag);
	char msg[400];

	s->a = NULL;
	if (kp && kp->starting && (sb->state == SB_PAUSING || sb->state == SB_PAUSED)) {
		/* START went out, STARTED did not come back (procs_sync). */
		kp->attached = false;
		procs_starting_msg(msg, sizeof(msg), s->sb_id, s->tag);
		http_respond_error(s->c, 409, "%s", msg);
		sess_free(s);
		return;
	}
	if (kp && s->upgraded && (sb->state == SB_PAUSING || sb->state == SB_PAUSED)) {
		json_t *j;
		char *t;

		/* Its VMM stopped after the snapshot: the command goes on in the
		 * resumed VM, kept by the agent until someone attaches. */
		kp->attached = false;
		procs_detached_msg(msg, sizeof(msg), s->sb_id, s->pid);
		j = json_pack("{s:s,s:i,s:s}", "type", "detached", "pid", (json_int_t)s->pid,
		              "message", msg);
		t = j ? json_dumps(j, JSON_COMPACT) : NULL;
		if (t)
			ws_send(&s->ws, WS_TEXT, t, strlen(t));
		free(t);
		json_decref(j);
		log_info("sandbox %s: pty process %u detached by the pause", s->sb_id, s->pid);
		s->detached = true;
		end(s, WS_CLOSE_GOING_AWAY, "sandbox paused");
		return;
	}
	if (kp && s->attach && !s->upgraded)
		kp->attached = false; /* it may still be there: try again later */
	else
		procs_forget_sess(s->kd, s->sb_id, s->pid, s->tag);
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

int pty_ws_check(struct http_conn *c, struct http_req *req)
{
	const char *ver = http_header(req, "Sec-WebSocket-Version");

	if (!header_has_token(http_header(req, "Upgrade"), "websocket") ||
	    !header_has_token(http_header(req, "Connection"), "upgrade")) {
		http_respond_error(c, 426, "this endpoint speaks WebSocket only");
		return -1;
	}
	if (!ver || strcmp(ver, "13")) {
		static const char body[] =
		    "{\"code\":426,\"message\":\"WebSocket version 13 required\"}";

		http_respond(c, 426, "application/json", "Sec-WebSocket-Version: 13\r\n", body,
		             sizeof(body) - 1);
		return -1;
	}
	return 0;
}

/* A session with its accept key, or NULL with the request answered. */
static struct pty_sess *sess_new(struct kilnd *kd, struct http_conn *c, struct http_req *req,
                                 struct sandbox *sb)
{
	struct pty_sess *s;

	if (pty_ws_check(c, req))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		http_respond_error(c, 500, "out of memory");
		return NULL;
	}
	if (ws_accept_key(http_header(req, "Sec-WebSocket-Key"), s->accept)) {
		free(s);
		http_respond_error(c, 400, "bad Sec-WebSocket-Key");
		return NULL;
	}
	s->kd = kd;
	s->c = c;
	snprintf(s->sb_id, sizeof(s->sb_id), "%s", sb->rec.id);
	ws_init(&s->ws, false, &ws_ops, s);
	return s;
}

void pty_start(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb)
{
	char *cmd = NULL, *term = NULL, *termvar = NULL, *user = NULL, why[320];
	const char *argv[4] = {"/bin/sh", NULL, NULL, NULL};
	char **env = NULL;
	long cols = query_dim(req, "cols", 80), rows = query_dim(req, "rows", 24);
	struct pty_sess *s;
	json_t *extra;

	if (cols < 0 || rows < 0) {
		http_respond_error(c, 400, "cols and rows must be between 1 and %d", PTY_MAX_DIM);
		return;
	}
	user = http_query_param(req, "user");
	if (user && !agent_user_valid(user)) {
		http_respond_error(c, 400,
		                   "'user' must be a user name (letters, digits, '.', '_', '-')");
		free(user);
		return;
	}
	if (!sb_user_ok(sb, user, why, sizeof(why))) {
		http_respond_error(c, 400, "%s", why);
		free(user);
		return;
	}
	s = sess_new(kd, c, req, sb);
	if (!s) {
		free(user);
		return;
	}
	cmd = http_query_param(req, "cmd");
	term = http_query_param(req, "term");
	if (cmd && *cmd) {
		argv[1] = "-c";
		argv[2] = cmd;
	}
	events_who(kd, req, s->who);
	s->ev_cmd = events_cmdline(argv);
	s->t0 = now_ms();
	s->exit_code = -1;
	extra = json_object();
	if (asprintf(&termvar, "%s", term && *term ? term : "xterm-256color") >= 0)
		json_object_set_new(extra, "TERM", json_string(termvar));
	env = sb_env(sb, extra);
	json_decref(extra);
	procs_cmdline(s->cmd, sizeof(s->cmd), argv);
	s->a = proxy_open(kd, c, sb, KILN_STREAM_PTY, 0, &agent_ops, s);
	if (!s->a) {
		sess_free(s);
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
		    .keep = true,
		    .user = user,
		};

		if (sb_agent_procs(sb)) { /* listed before START: see exec.c */
			s->tag = procs_new_tag();
			if (procs_add_starting(sb, s->tag, true, s->cmd))
				s->tag = 0;
			st.tag = s->tag;
		}
		if (!env || agent_msg_start(agent_out(s->a), &st)) {
			procs_forget_sess(kd, s->sb_id, 0, s->tag);
			http_respond_error(c, 400, "command too large");
			sess_free(s);
			goto out;
		}
	}
	agent_flush(s->a);
	http_set_handler(c, &http_ops, s, 0);
out:
	free(user);
	free(cmd);
	free(term);
	free(termvar);
	sb_env_free(env);
}

void pty_attach(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb)
{
	struct kproc *kp;
	struct pty_sess *s;
	char pid_s[16];
	uint32_t pid;

	/* The route checked the pid before the sandbox was woken; while it
	 * was, the process may have gone, or another client come. */
	procs_path_pid(req->path, pid_s, sizeof(pid_s));
	if (procs_attach_check(c, sb, pid_s, &pid))
		return;
	kp = procs_find(sb, pid);
	s = sess_new(kd, c, req, sb);
	if (!s)
		return;
	s->attach = true;
	s->exec_kind = !kp->pty;
	s->pid = pid;
	s->a =
	    proxy_open(kd, c, sb, kp->pty ? KILN_STREAM_PTY : KILN_STREAM_EXEC, 0, &agent_ops, s);
	if (!s->a) {
		sess_free(s);
		return;
	}
	if (agent_msg_u32(agent_out(s->a), KILN_MSG_ATTACH, pid)) {
		http_respond_error(c, 500, "out of memory");
		sess_free(s);
		return;
	}
	kp->attached = true;
	agent_flush(s->a);
	http_set_handler(c, &http_ops, s, 0);
}
