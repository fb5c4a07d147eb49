/* SPDX-License-Identifier: MIT */
/* POST /sandboxes/{id}/exec: run a command through the agent's exec stream
 * and stream its output as newline-delimited JSON events over a chunked
 * response:
 *   {"type":"start","pid":N}
 *   {"type":"stdout"|"stderr","data":"<base64>"}   in the order produced
 *   {"type":"exit","exitCode":N,"signal":S,"timedOut":bool}
 *   {"type":"detached","pid":N,"message":"..."}   the sandbox was paused
 *   {"type":"error","message":"..."}               the stream broke
 * The response starts when the agent reports the command started; a
 * command that cannot start gets an HTTP error with the agent's errno.
 *
 * The command is started to outlive its stream (procs.h): a pause ends the
 * response with "detached" and the command goes on, to be attached again;
 * a client that goes away ends it (the agent is told so). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/jsonutil.h"
#include "procs.h"
#include "proxy.h"
#include "agent/spare.h"
#include "util.h"

#define EXEC_MAX_ARGS 4096

struct exec_sess {
	struct kilnd *kd;
	struct http_conn *c;
	struct agent_conn *a;
	bool hello, started;
	bool reuse; /* the agent keeps the connection after EXIT */
	struct buf line;
	char sb_id[SB_ID_LEN + 1];
	uint32_t pid;
	uint64_t tag;            /* START's, listed as starting until STARTED (procs.h) */
	char cmd[PROCS_CMD_MAX]; /* for the process table */
	/* for its exec.finished event */
	char who[EVENTS_WHO_LEN];
	char *ev_cmd;
	int64_t t0;
	unsigned long long out_bytes, err_bytes;
	json_t *exit;  /* {"exitCode","signal",...} once known */
	bool detached; /* a pause detached it: it runs on (procs.h) */
};

/* exec.finished: how it ended (exit NULL: it did not, error says why). */
static void record(struct exec_sess *s, const char *error)
{
	struct sandbox *sb = sb_find(s->kd, s->sb_id);
	json_t *d = json_pack("{s:s,s:I,s:I,s:I}", "cmd", s->ev_cmd ? s->ev_cmd : "", "durationMs",
	                      (json_int_t)(now_ms() - s->t0), "stdoutBytes",
	                      (json_int_t)s->out_bytes, "stderrBytes", (json_int_t)s->err_bytes);

	if (d && s->detached)
		json_object_set_new(d, "pid", json_integer(s->pid));
	else if (d && s->exit)
		json_object_update(d, s->exit);
	else if (d)
		json_object_set_new(d, "exitCode", json_null());
	if (d && error)
		json_object_set_new(d, "error", events_text(error));
	events_add(s->kd, s->sb_id, sb, s->detached ? "exec.detached" : "exec.finished", s->who, d);
}

static void sess_free(struct exec_sess *s)
{
	agent_close(s->a);
	buf_free(&s->line);
	free(s->ev_cmd);
	json_decref(s->exit);
	free(s);
}

static void emit(struct exec_sess *s)
{
	http_stream_write(s->c, buf_head(&s->line), buf_avail(&s->line));
	buf_reset(&s->line);
	if (s->a && http_out_pending(s->c) > HTTP_OUT_HIGH)
		agent_pause(s->a, true);
}

static void emit_error(struct exec_sess *s, const char *msg)
{
	json_t *j = json_pack("{s:s,s:s}", "type", "error", "message", msg);
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (t) {
		buf_printf(&s->line, "%s\n", t);
		free(t);
		emit(s);
	}
}

/* The session ends: finish the HTTP side, drop the agent side. */
static void finish(struct exec_sess *s, const char *error)
{
	record(s, s->started ? error : error ? error : "agent closed the stream");
	if (!s->started) {
		http_respond_error(s->c, 502, "exec: %s",
		                   error ? error : "agent closed the stream");
	} else {
		if (error)
			emit_error(s, error);
		http_stream_end(s->c);
	}
	sess_free(s);
}

static void on_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct exec_sess *s = ctx;
	uint32_t v, kind, sig, flags;
	int32_t code;

	if (!s->hello) {
		if (type == KILN_MSG_ERROR && !s->started) {
			procs_forget_sess(s->kd, s->sb_id, 0, s->tag);
			record(s, "the command did not start");
			proxy_respond_agent_error(s->c, "exec", p, n);
			sess_free(s);
			return;
		}
		if (type != KILN_MSG_HELLO || agent_parse_hello(p, n, &v, &kind) ||
		    v != KILN_AGENT_VERSION) {
			finish(s, "agent protocol mismatch");
			return;
		}
		s->hello = true;
		s->reuse = kind & KILN_HELLO_REUSE; /* the answer's flags */
		return;
	}
	switch (type) {
	case KILN_MSG_STARTED:
		if (s->started || agent_parse_u32(p, n, &v))
			break;
		s->started = true;
		s->pid = v;
		procs_add(sb_find(s->kd, s->sb_id), v, false, s->cmd, s->tag);
		http_stream_start(s->c, 200, "application/x-ndjson", "Cache-Control: no-store\r\n");
		buf_printf(&s->line, "{\"type\":\"start\",\"pid\":%u}\n", v);
		emit(s);
		return;
	case KILN_MSG_STDOUT:
	case KILN_MSG_STDERR:
		if (!s->started)
			break;
		if (type == KILN_MSG_STDOUT)
			s->out_bytes += n;
		else
			s->err_bytes += n;
		buf_printf(&s->line, "{\"type\":\"%s\",\"data\":\"",
		           type == KILN_MSG_STDOUT ? "stdout" : "stderr");
		b64_encode(&s->line, p, n);
		buf_puts(&s->line, "\"}\n");
		emit(s);
		return;
	case KILN_MSG_EXIT:
		if (!s->started || agent_parse_exit(p, n, &code, &sig, &flags))
			break;
		buf_printf(
		    &s->line,
		    "{\"type\":\"exit\",\"exitCode\":%d,\"signal\":%u,\"timedOut\":%s%s}\n", code,
		    sig, flags & KILN_EXIT_TIMEOUT ? "true" : "false",
		    flags & KILN_EXIT_OOM
		        ? ",\"oom\":true,\"reason\":\"killed: the sandbox ran out of memory\""
		        : "");
		s->exit = json_pack("{s:i,s:i,s:b,s:b}", "exitCode", code, "signal", (int)sig,
		                    "timedOut", (flags & KILN_EXIT_TIMEOUT) != 0, "oom",
		                    (flags & KILN_EXIT_OOM) != 0);
		emit(s);
		spare_release(&s->a, s->reuse);
		procs_forget(s->kd, s->sb_id, s->pid);
		finish(s, NULL);
		return;
	case KILN_MSG_ERROR:
		if (!s->started) {
			procs_forget_sess(s->kd, s->sb_id, 0, s->tag);
			record(s, "the command did not start");
			proxy_respond_agent_error(s->c, "exec", p, n);
			sess_free(s);
			return;
		} else {
			const char *msg;
			uint32_t err, len;
			char text[400];

			if (agent_parse_error(p, n, &err, &msg, &len))
				break;
			snprintf(text, sizeof(text), "agent: %.*s", (int)(len > 300 ? 300 : len),
			         msg);
			procs_forget(s->kd, s->sb_id, s->pid);
			finish(s, text);
			return;
		}
	}
	log_debug("exec: unexpected %s frame", agent_msg_name(type));
	procs_forget_sess(s->kd, s->sb_id, s->pid, s->tag);
	finish(s, "agent protocol error");
}

static void on_agent_close(void *ctx, int err)
{
	struct exec_sess *s = ctx;
	struct sandbox *sb = sb_find(s->kd, s->sb_id);
	struct kproc *kp = procs_lookup_sess(s->kd, s->sb_id, s->pid, s->tag);
	char msg[400];

	s->a = NULL;
	if (kp && kp->starting && (sb->state == SB_PAUSING || sb->state == SB_PAUSED)) {
		/* START went out, STARTED did not come back: the agent may run
		 * it. Listed as starting until the resume tells (procs_sync). */
		kp->attached = false;
		procs_starting_msg(msg, sizeof(msg), s->sb_id, s->tag);
		log_info("sandbox %s: exec %" PRIx64 " was starting at the pause", s->sb_id,
		         s->tag);
		record(s, msg);
		http_respond_error(s->c, 409, "%s", msg);
		sess_free(s);
		return;
	}
	if (kp && (sb->state == SB_PAUSING || sb->state == SB_PAUSED)) {
		/* Its VMM stopped after the snapshot: the command goes on in the
		 * resumed VM, kept by the agent until someone attaches. */
		kp->attached = false;
		procs_detached_msg(msg, sizeof(msg), s->sb_id, s->pid);
		buf_printf(&s->line, "{\"type\":\"detached\",\"pid\":%u,\"message\":\"%s\"}\n",
		           s->pid, msg);
		emit(s);
		log_info("sandbox %s: exec process %u detached by the pause", s->sb_id, s->pid);
		s->detached = true;
		finish(s, NULL);
		return;
	}
	procs_forget_sess(s->kd, s->sb_id, s->pid, s->tag);
	snprintf(msg, sizeof(msg), "the agent stream ended without an exit status (%s)",
	         err ? strerror(-err) : "closed");
	finish(s, msg);
}

static void on_http_drain(void *ctx)
{
	struct exec_sess *s = ctx;

	agent_pause(s->a, false);
}

static void on_http_abort(void *ctx)
{
	struct exec_sess *s = ctx;
	struct sandbox *sb = sb_find(s->kd, s->sb_id);
	struct kproc *kp = procs_lookup_sess(s->kd, s->sb_id, s->pid, s->tag);

	/* The client went away: the command ends with it (the agent kills its
	 * process group on our ERROR). A pausing VM may not read the ERROR any
	 * more: then the command survives, and stays listed to be attached
	 * (or found gone). */
	if (kp && s->kd->stopping) {
		/* kilnd exits: not the client's doing. Its stream closes, the
		 * agent keeps the command, the next kilnd lists it. */
		kp->attached = false;
		sess_free(s);
		return;
	}
	procs_abort_stream(s->a);
	s->a = NULL;
	if (kp && sb->state == SB_PAUSING)
		kp->attached = false;
	else {
		/* the agent kills the command */
		procs_forget_sess(s->kd, s->sb_id, s->pid, s->tag);
		record(s, "the client went away: the command was killed");
	}
	sess_free(s);
}

static const struct agent_conn_ops agent_ops = {
    .on_frame = on_frame,
    .on_close = on_agent_close,
};

static const struct http_handler http_ops = {
    .on_drain = on_http_drain,
    .on_abort = on_http_abort,
};

/* argv from "cmd": an array of strings, or a string run by /bin/sh -c. */
static char **parse_cmd(json_t *body, char *err)
{
	json_t *cmd = json_object_get(body, "cmd"), *v;
	char **argv;
	size_t i;

	if (json_is_string(cmd)) {
		argv = calloc(4, sizeof(*argv));
		if (!argv)
			return NULL;
		argv[0] = strdup("/bin/sh");
		argv[1] = strdup("-c");
		argv[2] = strdup(json_string_value(cmd));
		return argv;
	}
	if (!cmd) {
		snprintf(err, JSON_ERR_LEN,
		         "'cmd' is missing and the sandbox's image has no Entrypoint or Cmd "
		         "to run instead");
		return NULL;
	}
	if (!json_is_array(cmd) || json_array_size(cmd) == 0 ||
	    json_array_size(cmd) > EXEC_MAX_ARGS) {
		snprintf(err, JSON_ERR_LEN,
		         "'cmd' must be a non-empty array of strings (or a string)");
		return NULL;
	}
	argv = calloc(json_array_size(cmd) + 1, sizeof(*argv));
	if (!argv)
		return NULL;
	json_array_foreach(cmd, i, v)
	{
		if (!json_is_string(v) || json_string_length(v) > KILN_MAX_STRING ||
		    memchr(json_string_value(v), 0, json_string_length(v))) {
			snprintf(err, JSON_ERR_LEN, "'cmd[%zu]' must be a string without NUL bytes",
			         i);
			sb_env_free(argv);
			return NULL;
		}
		argv[i] = strdup(json_string_value(v));
	}
	return argv;
}

/* A copy of the image's default command (sb_env_free() frees it). */
static char **args_dup(char *const *args)
{
	size_t n = 0;
	char **argv;

	while (args[n])
		n++;
	argv = calloc(n + 1, sizeof(*argv));
	for (size_t i = 0; argv && i < n; i++)
		if (!(argv[i] = strdup(args[i]))) {
			sb_env_free(argv);
			return NULL;
		}
	return argv;
}

void exec_start(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, json_t *body)
{
	char err[JSON_ERR_LEN] = "";
	const char *cwd = NULL, *in = NULL, *enc = NULL, *user = NULL;
	long long timeout_ms;
	json_t *env_extra;
	char **argv = NULL, **env = NULL;
	struct buf stdin_buf = {0};
	const struct img_defaults *def;
	struct agent_start st;
	struct exec_sess *s;

	def = sb_defaults(sb);
	argv =
	    json_object_get(body, "cmd") || !def->argv ? parse_cmd(body, err) : args_dup(def->argv);
	if (!argv)
		goto bad;
	if (json_get_str(body, "cwd", 4096, &cwd, err) ||
	    json_get_str(body, "user", AGENT_USER_MAX, &user, err) ||
	    json_get_str(body, "stdin", SIZE_MAX, &in, err) ||
	    json_get_str(body, "stdinEncoding", 16, &enc, err) ||
	    json_get_int(body, "timeoutMs", 0, UINT32_MAX, 0, &timeout_ms, err) ||
	    json_get_str_map(body, "env", KILN_MAX_ARGS / 2, 1u << 20, &env_extra, err))
		goto bad;
	if (user && !agent_user_valid(user)) {
		snprintf(err, sizeof(err),
		         "'user' must be a user name (letters, digits, '.', '_', '-')");
		goto bad;
	}
	if (!sb_user_ok(sb, user, err, sizeof(err)))
		goto bad;
	if (enc && strcmp(enc, "base64") && strcmp(enc, "text")) {
		snprintf(err, sizeof(err), "'stdinEncoding' must be \"text\" or \"base64\"");
		goto bad;
	}
	if (in && enc && !strcmp(enc, "base64")) {
		if (b64_decode(&stdin_buf, in, strlen(in))) {
			snprintf(err, sizeof(err), "'stdin' is not valid base64");
			goto bad;
		}
	} else if (in) {
		buf_append(&stdin_buf, in, strlen(in));
	}
	env = sb_env(sb, env_extra);
	if (!env) {
		http_respond_error(c, 500, "out of memory");
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		http_respond_error(c, 500, "out of memory");
		goto out;
	}
	s->kd = kd;
	s->c = c;
	snprintf(s->sb_id, sizeof(s->sb_id), "%s", sb->rec.id);
	events_who(kd, http_conn_req(c), s->who);
	s->ev_cmd = events_cmdline((const char *const *)argv);
	s->t0 = now_ms();
	s->a = proxy_open(kd, c, sb, KILN_STREAM_EXEC, KILN_FRAME_REUSE, &agent_ops, s);
	if (!s->a) {
		free(s->ev_cmd);
		free(s);
		goto out;
	}
	st = (struct agent_start){
	    .argv = (const char *const *)argv,
	    .env = (const char *const *)env,
	    .cwd = cwd ? cwd : def->cwd,
	    .uid = def->uid,
	    .timeout_ms = (uint32_t)timeout_ms,
	    .keep = true,
	    .user = user,
	};
	procs_cmdline(s->cmd, sizeof(s->cmd), (const char *const *)argv);
	/* Listed before START goes out: a pause or a restart of kilnd before
	 * its STARTED leaves it findable (procs_sync). */
	if (sb_agent_procs(sb)) {
		s->tag = procs_new_tag();
		if (procs_add_starting(sb, s->tag, false, s->cmd))
			s->tag = 0;
		st.tag = s->tag;
	}
	/* Everything goes out at once: HELLO, START, the input, its end. */
	if (agent_msg_start(agent_out(s->a), &st) ||
	    agent_msg_data(agent_out(s->a), KILN_MSG_STDIN, buf_head(&stdin_buf),
	                   buf_avail(&stdin_buf)) ||
	    agent_msg_empty(agent_out(s->a), KILN_MSG_STDIN_EOF)) {
		http_respond_error(c, 400, "command, environment or input too large for the agent");
		procs_forget_sess(kd, s->sb_id, 0, s->tag);
		sess_free(s);
		goto out;
	}
	agent_flush(s->a);
	http_set_handler(c, &http_ops, s, 0);
	goto out;
bad:
	http_respond_error(c, 400, "%s", err[0] ? err : "out of memory");
out:
	sb_env_free(argv);
	sb_env_free(env);
	buf_free(&stdin_buf);
}
