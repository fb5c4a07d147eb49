/* SPDX-License-Identifier: MIT */
/* envd's process.Process calls (Start, Connect, List, SendInput,
 * SendSignal, CloseStdin, Update) over the process table of envd_proc.c. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_client.h"
#include "codeint.h"
#include "http/connectrpc.h"
#include "envd.h"
#include "agent/spare.h"
#include "envd_proc.h"
#include "util.h"

#define PTY_MAX_DIM    4096
#define INPUT_MAX_HELD (8u << 20) /* stdin queued towards the agent */
#define TAG_MAX        256

/* ---------------------------------------------------------------- selectors */

struct envd_proc *envd_proc_find(struct sandbox *sb, json_t *msg, char *err, size_t errlen)
{
	json_t *sel = json_object_get(msg, "process"), *tag;
	unsigned long long pid;

	if (!json_is_object(sel)) {
		snprintf(err, errlen, "'process' (a ProcessSelector) is required");
		return NULL;
	}
	tag = json_object_get(sel, "tag");
	if (crpc_get_u32(sel, "pid", UINT32_MAX, 0, &pid) || (tag && !json_is_string(tag))) {
		snprintf(err, errlen, "malformed ProcessSelector");
		return NULL;
	}
	if (!json_object_get(sel, "pid") && !tag) {
		snprintf(err, errlen, "the ProcessSelector names no pid or tag");
		return NULL;
	}
	for (struct envd_proc *p = sb->envd ? sb->envd->procs : NULL; p; p = p->next) {
		if (!p->started || p->suspended)
			continue;
		if (tag ? p->tag && !strcmp(p->tag, json_string_value(tag)) : p->pid == pid)
			return p;
	}
	if (tag)
		snprintf(err, errlen, "process with tag '%.100s' not found",
		         json_string_value(tag));
	else
		snprintf(err, errlen, "process with pid %llu not found", pid);
	return NULL;
}

/* ---------------------------------------------------------------- Start */

static int get_size(json_t *pty, uint16_t *cols, uint16_t *rows)
{
	json_t *size = json_object_get(pty, "size");
	unsigned long long c, r;

	*cols = 80;
	*rows = 24;
	if (!size || json_is_null(size))
		return 0;
	if (!json_is_object(size) || crpc_get_u32(size, "cols", PTY_MAX_DIM, 80, &c) ||
	    crpc_get_u32(size, "rows", PTY_MAX_DIM, 24, &r) || !c || !r)
		return -1;
	*cols = (uint16_t)c;
	*rows = (uint16_t)r;
	return 0;
}

static bool str_ok(json_t *v, size_t max)
{
	return json_is_string(v) && json_string_length(v) <= max &&
	       !memchr(json_string_value(v), 0, json_string_length(v));
}

/* Parse StartRequest into p; an error message on failure. */
static const char *parse_start(struct envd_proc *p, struct sandbox *sb, json_t *msg,
                               const struct envd_user *u)
{
	json_t *proc = json_object_get(msg, "process"), *cmd, *args, *envs, *cwd, *v, *pty, *tag;
	json_t *stdin_v;
	const char *k;
	size_t i, nargs;
	char *cwd_abs;

	if (!json_is_object(proc))
		return "'process' (a ProcessConfig) is required";
	cmd = json_object_get(proc, "cmd");
	args = json_object_get(proc, "args");
	envs = json_object_get(proc, "envs");
	cwd = json_object_get(proc, "cwd");
	if (!str_ok(cmd, KILN_MAX_STRING) || !json_string_length(cmd))
		return "'process.cmd' must be a non-empty string";
	if (args && !json_is_null(args) &&
	    (!json_is_array(args) || json_array_size(args) >= KILN_MAX_ARGS))
		return "'process.args' must be an array of strings";
	nargs = json_is_array(args) ? json_array_size(args) : 0;
	if (envs && !json_is_null(envs)) {
		if (!json_is_object(envs) || json_object_size(envs) > KILN_MAX_ARGS / 2)
			return "'process.envs' must be an object of strings";
		json_object_foreach(envs, k, v)
		{
			if (!*k || strchr(k, '=') || strlen(k) > 1024 ||
			    !str_ok(v, KILN_MAX_STRING))
				return "'process.envs' must map names (without '=') to strings";
		}
	} else {
		envs = NULL;
	}
	if (cwd && !json_is_null(cwd) && !str_ok(cwd, ENVD_PATH_MAX))
		return "'process.cwd' must be a string";
	p->argv = calloc(nargs + 2, sizeof(*p->argv));
	if (!p->argv || !(p->argv[0] = strdup(json_string_value(cmd))))
		return "out of memory";
	for (i = 0; i < nargs; i++) {
		v = json_array_get(args, i);
		if (!str_ok(v, KILN_MAX_STRING))
			return "'process.args' must be an array of strings";
		p->argv[i + 1] = strdup(json_string_value(v));
		if (!p->argv[i + 1])
			return "out of memory";
	}
	p->env = sb_env(sb, envs);
	if (!p->env)
		return "out of memory";
	/* none: the user's home, which the agent knows when it is told a user
	 * (root's if the default user is missing); root's is /root */
	p->user = *u;
	if (json_string_length(cwd))
		cwd_abs = envd_resolve_path_as(json_string_value(cwd), u);
	else
		cwd_abs = strdup(envd_user_name(u) ? "" : u->home);
	if (!cwd_abs)
		return "'process.cwd' is too long";
	p->cwd = cwd_abs;

	pty = json_object_get(msg, "pty");
	if (pty && !json_is_null(pty)) {
		if (!json_is_object(pty) || get_size(pty, &p->cols, &p->rows))
			return "'pty.size' must have cols and rows between 1 and 4096";
		p->pty = true;
	}
	tag = json_object_get(msg, "tag");
	if (tag && !json_is_null(tag)) {
		if (!str_ok(tag, TAG_MAX))
			return "'tag' must be a string of at most 256 bytes";
		p->tag = strdup(json_string_value(tag));
	}
	stdin_v = json_object_get(msg, "stdin");
	if (stdin_v && !json_is_null(stdin_v) && !json_is_boolean(stdin_v))
		return "'stdin' must be a boolean";
	/* envd keeps stdin open unless told otherwise; a pty always has input */
	p->stdin_open = p->pty || !stdin_v || json_is_null(stdin_v) || json_is_true(stdin_v);

	p->config = json_pack("{s:O,s:o,s:o}", "cmd", cmd, "args",
	                      json_is_array(args) ? json_deep_copy(args) : json_array(), "envs",
	                      envs ? json_deep_copy(envs) : json_object());
	if (!p->config)
		return "out of memory";
	if (json_is_string(cwd))
		json_object_set(p->config, "cwd", cwd);
	return NULL;
}

/* The processes that count against ENVD_MAX_PROCS: a SIGKILLed one is on
 * its way out (its EXIT may come after SendSignal's answer, and after the
 * client's next Start: the SDK's kill() then run() must not find its slot
 * taken). */
static unsigned live_procs(const struct envd_sb *es)
{
	unsigned n = 0;

	for (const struct envd_proc *p = es->procs; p; p = p->next)
		n += !p->killed;
	return n;
}

void envd_proc_start(struct envd_req *r)
{
	struct envd_sb *es = envd_sb_get(r->sb);
	struct envd_proc *p;
	const char *why;
	int rc;

	if (!es) {
		crpc_stream_fail(r->c, CRPC_INTERNAL, "out of memory");
		return;
	}
	if (live_procs(es) >= ENVD_MAX_PROCS || es->nprocs >= ENVD_MAX_ENTRIES) {
		crpc_stream_fail(r->c, CRPC_RESOURCE_EXHAUSTED,
		                 "too many processes in this sandbox (limit %d)", ENVD_MAX_PROCS);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		crpc_stream_fail(r->c, CRPC_INTERNAL, "out of memory");
		return;
	}
	p->es = es;
	p->next = es->procs;
	es->procs = p;
	es->nprocs++;
	why = parse_start(p, r->sb, r->msg, &r->user);
	if (why) {
		crpc_stream_fail(r->c, CRPC_INVALID_ARGUMENT, "%s", why);
		envd_proc_free(p);
		return;
	}
	p->timeout_ms = (uint32_t)r->timeout_ms;
	if (!envd_sub_new(p, r->c, r->keepalive_s, 0)) {
		crpc_stream_fail(r->c, CRPC_INTERNAL, "out of memory");
		envd_proc_free(p);
		return;
	}
	rc = envd_proc_spawn(p);
	if (rc) {
		envd_proc_end(p, rc == -E2BIG ? CRPC_INVALID_ARGUMENT : CRPC_UNAVAILABLE,
		              rc == -E2BIG ? "command or environment too large"
		                           : "cannot reach the sandbox's agent");
		return;
	}
}

/* ---------------------------------------------------------------- Connect */

void envd_proc_connect(struct envd_req *r)
{
	char err[200];
	struct envd_proc *p = envd_proc_find(r->sb, r->msg, err, sizeof(err));
	struct sub *s;

	if (!p) {
		crpc_stream_fail(r->c,
		                 strstr(err, "not found") ? CRPC_NOT_FOUND : CRPC_INVALID_ARGUMENT,
		                 "%s", err);
		return;
	}
	if (p->nsubs >= ENVD_MAX_SUBS) {
		crpc_stream_fail(r->c, CRPC_RESOURCE_EXHAUSTED,
		                 "too many streams attached to process %u", p->pid);
		return;
	}
	s = envd_sub_new(p, r->c, r->keepalive_s, r->timeout_ms);
	if (!s) {
		crpc_stream_fail(r->c, CRPC_INTERNAL, "out of memory");
		return;
	}
	envd_sub_begin(s);
	envd_proc_flow(p);
}

/* ---------------------------------------------------------------- unary calls */

void envd_proc_list(struct envd_req *r)
{
	json_t *arr = json_array();

	for (struct envd_proc *p = r->sb->envd ? r->sb->envd->procs : NULL; p && arr; p = p->next) {
		json_t *e;

		if (!p->started)
			continue;
		e = json_pack("{s:O,s:I}", "config", p->config, "pid", (json_int_t)p->pid);
		if (e && p->tag)
			json_object_set_new(e, "tag", json_string(p->tag));
		json_array_append_new(arr, e);
	}
	crpc_respond(r->c, json_pack("{s:o}", "processes", arr ? arr : json_array()));
}

static struct envd_proc *find_or_fail(struct envd_req *r)
{
	char err[200];
	struct envd_proc *p = envd_proc_find(r->sb, r->msg, err, sizeof(err));

	if (!p)
		crpc_respond_error(
		    r->c, strstr(err, "not found") ? CRPC_NOT_FOUND : CRPC_INVALID_ARGUMENT, "%s",
		    err);
	return p;
}

int envd_proc_put_input(struct envd_proc *p, json_t *in, char *err, size_t n)
{
	json_t *data;
	struct buf b = {0};
	bool pty_in;
	int code = CRPC_OK;

	if (!json_is_object(in)) {
		snprintf(err, n, "'input' is required");
		return CRPC_INVALID_ARGUMENT;
	}
	data = json_object_get(in, "pty");
	pty_in = data != NULL;
	if (!data)
		data = json_object_get(in, "stdin");
	if (!json_is_string(data) ||
	    b64_decode(&b, json_string_value(data), json_string_length(data))) {
		snprintf(err, n, "'input.stdin' or 'input.pty' must be base64 bytes");
		code = CRPC_INVALID_ARGUMENT;
	} else if (pty_in != p->pty) {
		snprintf(err, n,
		         p->pty ? "process %u is a pty: send input.pty"
		                : "process %u has no pty: send input.stdin",
		         p->pid);
		code = CRPC_FAILED_PRECONDITION;
	} else if (!p->stdin_open) {
		snprintf(err, n, "the stdin of process %u is closed (start it with stdin: true)",
		         p->pid);
		code = CRPC_FAILED_PRECONDITION;
	} else if (agent_pending(p->a) > INPUT_MAX_HELD) {
		snprintf(err, n, "process %u is not reading its input", p->pid);
		code = CRPC_RESOURCE_EXHAUSTED;
	} else if (buf_avail(&b) &&
	           agent_msg_data(agent_out(p->a), KILN_MSG_STDIN, buf_head(&b), buf_avail(&b))) {
		snprintf(err, n, "out of memory");
		code = CRPC_INTERNAL;
	}
	buf_free(&b);
	if (code == CRPC_OK)
		agent_flush(p->a);
	return code;
}

void envd_proc_send_input(struct envd_req *r)
{
	struct envd_proc *p = find_or_fail(r);
	char err[200];
	int code;

	if (!p)
		return;
	code = envd_proc_put_input(p, json_object_get(r->msg, "input"), err, sizeof(err));
	if (code != CRPC_OK) {
		crpc_respond_error(r->c, code, "%s", err);
		return;
	}
	if (agent_pending(p->a) > AGENT_OUT_HIGH) {
		/* answer once the agent took it: the client slows down */
		struct waiter *w = calloc(1, sizeof(*w));

		if (w) {
			w->p = p;
			w->c = r->c;
			w->next = p->waiters;
			p->waiters = w;
			http_set_handler(r->c, &envd_waiter_ops, w, 0);
			return;
		}
	}
	crpc_respond(r->c, json_object());
}

void envd_proc_send_signal(struct envd_req *r)
{
	struct envd_proc *p = find_or_fail(r);
	json_t *sig;
	long long n = 0;

	if (!p)
		return;
	sig = json_object_get(r->msg, "signal");
	if (json_is_string(sig)) {
		const char *s = json_string_value(sig);

		n = !strcmp(s, "SIGNAL_SIGKILL")   ? SIGKILL
		    : !strcmp(s, "SIGNAL_SIGTERM") ? SIGTERM
		                                   : 0;
	} else if (json_is_integer(sig)) {
		n = json_integer_value(sig);
	}
	if (n < 1 || n > 64) {
		crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT,
		                   "'signal' must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
		return;
	}
	if (agent_msg_u32(agent_out(p->a), KILN_MSG_SIGNAL, (uint32_t)n)) {
		crpc_respond_error(r->c, CRPC_INTERNAL, "out of memory");
		return;
	}
	agent_flush(p->a);
	if (n == SIGKILL)
		p->killed = true;
	crpc_respond(r->c, json_object());
}

void envd_proc_close_stdin(struct envd_req *r)
{
	struct envd_proc *p = find_or_fail(r);

	if (!p)
		return;
	if (p->stdin_open) {
		if (agent_msg_empty(agent_out(p->a), KILN_MSG_STDIN_EOF)) {
			crpc_respond_error(r->c, CRPC_INTERNAL, "out of memory");
			return;
		}
		agent_flush(p->a);
		p->stdin_open = false;
	}
	crpc_respond(r->c, json_object());
}

void envd_proc_update(struct envd_req *r)
{
	struct envd_proc *p = find_or_fail(r);
	json_t *pty;
	uint16_t cols, rows;

	if (!p)
		return;
	pty = json_object_get(r->msg, "pty");
	if (!pty || json_is_null(pty)) {
		crpc_respond(r->c, json_object()); /* nothing to change */
		return;
	}
	if (!json_is_object(pty) || get_size(pty, &cols, &rows)) {
		crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT,
		                   "'pty.size' must have cols and rows between 1 and 4096");
		return;
	}
	if (!p->pty) {
		crpc_respond_error(r->c, CRPC_FAILED_PRECONDITION, "process %u has no pty", p->pid);
		return;
	}
	if (agent_msg_resize(agent_out(p->a), cols, rows)) {
		crpc_respond_error(r->c, CRPC_INTERNAL, "out of memory");
		return;
	}
	agent_flush(p->a);
	crpc_respond(r->c, json_object());
}
