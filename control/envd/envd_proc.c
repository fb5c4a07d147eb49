/* SPDX-License-Identifier: MIT */
/* envd's process.Process service on top of the agent's exec and pty streams.
 *
 * Every process the SDK starts is one agent stream that kilnd keeps open
 * until the process ends, listed in a per-sandbox table by the pid the
 * agent reported. HTTP streams (the Start call itself, then any number of
 * Connect calls) subscribe to it: each gets a start event, the output as
 * data events, and the end event. A subscriber that goes away leaves the
 * process running (like envd); output that nobody is subscribed to is
 * dropped. While a subscriber's queue is above HTTP_OUT_HIGH the agent
 * stream is paused, so the process waits for its slowest reader.
 *
 * Connect-Timeout-Ms of Start is the process's lifetime (envd's meaning):
 * the agent SIGKILLs its process group at the deadline, and the streams end
 * with deadline_exceeded after the end event. Keepalive events go out after
 * Keepalive-Ping-Interval seconds without other events.
 *
 * Processes outlive a pause (E2B's background commands): they are started
 * with KILN_FRAME_KEEP, so when the VMM stops after its snapshot and their
 * agent streams end, the agent of the restored VM keeps them (its vsock
 * connections were reset). Meanwhile they stay in the table, suspended (no
 * agent stream, no subscribers); once the sandbox runs again each is
 * ATTACHed by pid, and Connect, List, SendInput... find it as before. */
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
#include "util.h"

#define PTY_MAX_DIM    4096
#define INPUT_MAX_HELD (8u << 20) /* stdin queued towards the agent */
#define TAG_MAX        256

struct envd_proc;

struct sub {
	struct envd_proc *p;
	struct sub *next;
	struct http_conn *c;
	ev_timer tick;
	double ka;          /* keepalive interval, seconds */
	ev_tstamp last;     /* last event sent */
	ev_tstamp deadline; /* 0: none */
	bool streaming;
};

struct waiter {
	struct waiter *next;
	struct envd_proc *p;
	struct http_conn *c;
};

struct envd_proc {
	struct envd_sb *es;
	struct envd_proc *next;
	struct agent_conn *a;
	uint32_t pid;
	bool hello, started, pty, stdin_open, fell_back;
	bool reuse;     /* the agent keeps the connection after EXIT */
	bool suspended; /* the sandbox paused: no agent stream until it resumes */
	bool attaching; /* ATTACH sent, STARTED awaited */
	char *tag;
	json_t *config; /* {cmd, args, envs, cwd} as List reports it */
	char **argv, **env;
	char *cwd;
	uint32_t timeout_ms;
	uint16_t cols, rows;
	struct sub *subs;
	unsigned nsubs;
	struct waiter *waiters;
};

struct envd_sb {
	struct sandbox *sb;
	struct envd_proc *procs;
	unsigned nprocs;
	/* after a resume: ATTACHes not answered yet, and who waits for them */
	unsigned attaching;
	void (*reattached)(struct sandbox *sb);
	ev_timer settle;
};

static void attach_settled(struct envd_sb *es);
static void on_settle(struct ev_loop *loop, ev_timer *w, int revents);

static struct ev_loop *loop_of(struct envd_proc *p)
{
	return p->es->sb->kd->loop;
}

/* ---------------------------------------------------------------- subscribers */

static void sub_free(struct sub *s)
{
	struct envd_proc *p = s->p;
	struct sub **pp = &p->subs;

	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = s->next;
		p->nsubs--;
	}
	ev_timer_stop(loop_of(p), &s->tick);
	free(s);
}

/* Pause the agent while any subscriber is backed up. */
static void flow(struct envd_proc *p)
{
	bool high = false;

	for (struct sub *s = p->subs; s; s = s->next)
		if (s->streaming && http_out_pending(s->c) > HTTP_OUT_HIGH)
			high = true;
	if (p->a)
		agent_pause(p->a, high);
}

static void sub_send(struct sub *s, const char *json, size_t n)
{
	crpc_stream_msg(s->c, json, n);
	s->last = ev_now(loop_of(s->p));
}

static void broadcast(struct envd_proc *p, const char *json, size_t n)
{
	for (struct sub *s = p->subs; s; s = s->next)
		if (s->streaming)
			sub_send(s, json, n);
	flow(p);
}

/* End one subscriber's stream (it has started) and forget it. */
static void sub_end(struct sub *s, int code, const char *msg)
{
	crpc_stream_end(s->c, code, msg);
	sub_free(s);
}

static void arm_tick(struct sub *s)
{
	ev_tstamp now = ev_now(loop_of(s->p)), at = s->last + s->ka;

	if (s->deadline && s->deadline < at)
		at = s->deadline;
	ev_timer_stop(loop_of(s->p), &s->tick);
	ev_timer_set(&s->tick, at > now ? at - now : 0, 0);
	ev_timer_start(loop_of(s->p), &s->tick);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	static const char ka[] = "{\"event\":{\"keepalive\":{}}}";
	struct sub *s = w->data;
	ev_tstamp now = ev_now(loop);

	if (s->deadline && now >= s->deadline) {
		struct envd_proc *p = s->p;

		/* Connect-Timeout-Ms of a Connect call: the stream ends, the
		 * process goes on. */
		sub_end(s, CRPC_DEADLINE_EXCEEDED, "the stream reached its Connect-Timeout-Ms");
		flow(p);
		return;
	}
	if (now - s->last >= s->ka - 0.001)
		sub_send(s, ka, sizeof(ka) - 1);
	arm_tick(s);
}

static void sub_drain(void *ctx)
{
	struct sub *s = ctx;

	flow(s->p);
}

static void sub_abort(void *ctx)
{
	struct sub *s = ctx;
	struct envd_proc *p = s->p;

	/* The client went away: the process keeps running. */
	sub_free(s);
	flow(p);
}

static const struct http_handler sub_ops = {
    .on_drain = sub_drain,
    .on_abort = sub_abort,
};

static struct sub *sub_new(struct envd_proc *p, struct http_conn *c, double ka,
                           long long timeout_ms)
{
	struct sub *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->p = p;
	s->c = c;
	s->ka = ka > 0 ? ka : 90;
	if (timeout_ms > 0)
		s->deadline = ev_now(loop_of(p)) + (double)timeout_ms / 1000.0;
	ev_init(&s->tick, on_tick);
	s->tick.data = s;
	s->next = p->subs;
	p->subs = s;
	p->nsubs++;
	http_set_handler(c, &sub_ops, s, 0);
	return s;
}

/* The stream begins: the start event first (the SDK requires it). */
static void sub_begin(struct sub *s)
{
	char msg[64];
	int n = snprintf(msg, sizeof(msg), "{\"event\":{\"start\":{\"pid\":%u}}}", s->p->pid);

	crpc_stream_start(s->c);
	s->streaming = true;
	sub_send(s, msg, (size_t)n);
	arm_tick(s);
}

/* ---------------------------------------------------------------- input waiters */

static void waiter_unlink(struct waiter *w)
{
	struct waiter **pp = &w->p->waiters;

	while (*pp && *pp != w)
		pp = &(*pp)->next;
	if (*pp)
		*pp = w->next;
}

static void waiter_abort(void *ctx)
{
	struct waiter *w = ctx;

	waiter_unlink(w);
	free(w);
}

static const struct http_handler waiter_ops = {.on_abort = waiter_abort};

static void waiters_release(struct envd_proc *p, int code, const char *msg)
{
	while (p->waiters) {
		struct waiter *w = p->waiters;

		p->waiters = w->next;
		if (code == CRPC_OK)
			crpc_respond(w->c, json_object());
		else
			crpc_respond_error(w->c, code, "%s", msg);
		free(w);
	}
}

/* ---------------------------------------------------------------- processes */

static void proc_free(struct envd_proc *p)
{
	struct envd_sb *es = p->es;
	struct envd_proc **pp = &es->procs;

	while (*pp && *pp != p)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = p->next;
		es->nprocs--;
	}
	if (p->attaching)
		attach_settled(es);
	agent_close(p->a);
	while (p->subs) {
		struct sub *s = p->subs;

		/* whoever is still attached learns why */
		if (s->streaming)
			sub_end(s, CRPC_UNAVAILABLE, "the process stream ended");
		else {
			crpc_stream_fail(s->c, CRPC_UNAVAILABLE, "the process stream ended");
			sub_free(s);
		}
	}
	waiters_release(p, CRPC_NOT_FOUND, "the process ended");
	json_decref(p->config);
	sb_env_free(p->argv);
	sb_env_free(p->env);
	free(p->cwd);
	free(p->tag);
	free(p);
}

/* The process is over for everyone: end every stream with (code, msg). */
static void proc_end(struct envd_proc *p, int code, const char *msg)
{
	while (p->subs) {
		struct sub *s = p->subs;

		if (s->streaming) {
			sub_end(s, code, msg);
		} else {
			crpc_stream_fail(s->c, code == CRPC_OK ? CRPC_INTERNAL : code, "%s", msg);
			sub_free(s);
		}
	}
	proc_free(p);
}

/* Go's os.ProcessState.String() for a signal, which envd reports. */
static const char *signal_text(uint32_t sig, char *tmp, size_t n)
{
	switch (sig) {
	case SIGHUP:
		return "hangup";
	case SIGINT:
		return "interrupt";
	case SIGQUIT:
		return "quit";
	case SIGILL:
		return "illegal instruction";
	case SIGTRAP:
		return "trace/breakpoint trap";
	case SIGABRT:
		return "aborted";
	case SIGBUS:
		return "bus error";
	case SIGFPE:
		return "floating point exception";
	case SIGKILL:
		return "killed";
	case SIGUSR1:
		return "user defined signal 1";
	case SIGSEGV:
		return "segmentation fault";
	case SIGUSR2:
		return "user defined signal 2";
	case SIGPIPE:
		return "broken pipe";
	case SIGALRM:
		return "alarm clock";
	case SIGTERM:
		return "terminated";
	default:
		snprintf(tmp, n, "signal %u", sig);
		return tmp;
	}
}

static int spawn(struct envd_proc *p);

static const struct agent_conn_ops agent_ops;

static void on_frame(void *ctx, uint16_t type, const uint8_t *f, uint32_t n)
{
	struct envd_proc *p = ctx;
	uint32_t v, kind, sig, flags, err, len;
	const char *emsg;
	int32_t code;
	char text[512], tmp[32];

	if (!p->hello) {
		if (type == KILN_MSG_HELLO && !agent_parse_hello(f, n, &v, &kind) &&
		    v == KILN_AGENT_VERSION) {
			p->hello = true;
			p->reuse = kind & KILN_HELLO_REUSE; /* the answer's flags */
			return;
		}
		if (type != KILN_MSG_ERROR) {
			proc_end(p, CRPC_INTERNAL, "agent protocol mismatch");
			return;
		}
	}
	switch (type) {
	case KILN_MSG_STARTED:
		if (p->attaching && !agent_parse_u32(f, n, &v) && v == p->pid) {
			/* Back after the pause; new subscribers are streaming. */
			p->attaching = false;
			attach_settled(p->es);
			for (struct sub *s = p->subs; s; s = s->next)
				if (!s->streaming)
					sub_begin(s);
			flow(p);
			return;
		}
		if (p->started || agent_parse_u32(f, n, &v))
			break;
		p->started = true;
		p->pid = v;
		for (struct sub *s = p->subs; s; s = s->next)
			sub_begin(s);
		flow(p);
		return;
	case KILN_MSG_STDOUT:
	case KILN_MSG_STDERR: {
		struct buf b = {0};

		if (!p->started)
			break;
		if (!p->subs)
			return; /* nobody listens: dropped, like envd */
		buf_printf(&b, "{\"event\":{\"data\":{\"%s\":\"",
		           p->pty                    ? "pty"
		           : type == KILN_MSG_STDOUT ? "stdout"
		                                     : "stderr");
		b64_encode(&b, f, n);
		buf_puts(&b, "\"}}}");
		broadcast(p, buf_head(&b), buf_avail(&b));
		buf_free(&b);
		return;
	}
	case KILN_MSG_EXIT: {
		char msg[200];
		int m;

		if (!p->started || agent_parse_exit(f, n, &code, &sig, &flags))
			break;
		if (sig)
			m = snprintf(msg, sizeof(msg),
			             "{\"event\":{\"end\":{\"exitCode\":-1,\"exited\":false,"
			             "\"status\":\"signal: %s\"}}}",
			             signal_text(sig, tmp, sizeof(tmp)));
		else
			m = snprintf(msg, sizeof(msg),
			             "{\"event\":{\"end\":{\"exitCode\":%d,\"exited\":true,"
			             "\"status\":\"exit status %d\"}}}",
			             code, code);
		broadcast(p, msg, (size_t)m);
		spare_release(&p->a, p->reuse);
		if (flags & KILN_EXIT_TIMEOUT) {
			snprintf(text, sizeof(text),
			         "the process was killed at its timeout (Connect-Timeout-Ms %u)",
			         p->timeout_ms);
			proc_end(p, CRPC_DEADLINE_EXCEEDED, text);
		} else {
			proc_end(p, CRPC_OK, NULL);
		}
		return;
	}
	case KILN_MSG_ERROR:
		if (agent_parse_error(f, n, &err, &emsg, &len))
			break;
		if (!len) {
			emsg = strerror((int)err);
			len = (uint32_t)strlen(emsg);
		}
		if (p->attaching) {
			snprintf(text, sizeof(text), "process %u did not survive the pause: %.*s",
			         p->pid, (int)(len > 300 ? 300 : len), emsg);
			proc_end(p, CRPC_NOT_FOUND, text);
			return;
		}
		if (!p->started && err == ENOENT && !p->fell_back &&
		    !strcmp(p->argv[0], "/bin/bash")) {
			/* The SDK always runs /bin/bash; a guest without bash
			 * (kiln's busybox image) gets its /bin/sh. */
			char *sh = strdup("/bin/sh");

			if (sh) {
				free(p->argv[0]);
				p->argv[0] = sh;
				p->fell_back = true;
				agent_close(p->a);
				p->a = NULL;
				p->hello = false;
				if (!spawn(p))
					return;
				proc_end(p, CRPC_UNAVAILABLE, "cannot reach the sandbox's agent");
				return;
			}
		}
		snprintf(text, sizeof(text), "%s: %.*s", p->started ? "process" : "cannot start",
		         (int)(len > 300 ? 300 : len), emsg);
		proc_end(p, p->started ? CRPC_INTERNAL : crpc_code_from_errno((int)err), text);
		return;
	}
	log_debug("envd: unexpected %s frame", agent_msg_name(type));
	proc_end(p, CRPC_INTERNAL, "agent protocol error");
}

/* The sandbox is pausing: its VMM stops once the snapshot is written, and
 * the process with it, until the resume (envd_sandbox_resumed). */
static void proc_suspend(struct envd_proc *p)
{
	static const char why[] = "the sandbox was paused; the process goes on when it is "
	                          "resumed (process.Connect finds it then)";

	p->suspended = true;
	p->hello = false;
	while (p->subs) {
		struct sub *s = p->subs;

		if (s->streaming) {
			sub_end(s, CRPC_UNAVAILABLE, why);
		} else {
			crpc_stream_fail(s->c, CRPC_UNAVAILABLE, why);
			sub_free(s);
		}
	}
	waiters_release(p, CRPC_UNAVAILABLE, why);
	log_debug("sandbox %s: envd process %u suspended", p->es->sb->rec.id, p->pid);
}

static void on_agent_close(void *ctx, int err)
{
	struct envd_proc *p = ctx;
	struct sandbox *sb = p->es->sb;
	char msg[160];

	p->a = NULL;
	if (p->attaching) {
		snprintf(msg, sizeof(msg),
		         "process %u did not survive the pause (the agent closed its stream)",
		         p->pid);
		proc_end(p, CRPC_NOT_FOUND, msg);
		return;
	}
	if (p->started && (sb->state == SB_PAUSING || sb->state == SB_PAUSED)) {
		proc_suspend(p); /* its VMM stopped after the snapshot */
		return;
	}
	snprintf(msg, sizeof(msg), "the sandbox's agent stream ended without an exit status (%s)",
	         err ? strerror(-err) : "closed");
	proc_end(p, CRPC_UNAVAILABLE, msg);
}

static void on_agent_drain(void *ctx)
{
	struct envd_proc *p = ctx;

	waiters_release(p, CRPC_OK, NULL);
}

static const struct agent_conn_ops agent_ops = {
    .on_frame = on_frame,
    .on_close = on_agent_close,
    .on_drain = on_agent_drain,
};

/* Open the agent stream and send HELLO, START (and the end of stdin when
 * the caller wants none). */
static int spawn(struct envd_proc *p)
{
	struct sandbox *sb = p->es->sb;
	struct agent_start st = {
	    .argv = (const char *const *)p->argv,
	    .env = (const char *const *)p->env,
	    .cwd = p->cwd,
	    .timeout_ms = p->timeout_ms,
	    .cols = p->cols,
	    .rows = p->rows,
	    .keep = true,
	};

	p->a = spare_take(sb, &agent_ops, p);
	if (!p->a)
		return -errno;
	if (agent_msg_hello(agent_out(p->a), p->pty ? KILN_STREAM_PTY : KILN_STREAM_EXEC,
	                    KILN_FRAME_REUSE) ||
	    agent_msg_start(agent_out(p->a), &st) ||
	    (!p->stdin_open && agent_msg_empty(agent_out(p->a), KILN_MSG_STDIN_EOF))) {
		agent_close(p->a);
		p->a = NULL;
		return -E2BIG;
	}
	agent_flush(p->a);
	return 0;
}

static struct envd_sb *envd_sb_get(struct sandbox *sb)
{
	if (!sb->envd) {
		sb->envd = calloc(1, sizeof(*sb->envd));
		if (sb->envd) {
			sb->envd->sb = sb;
			ev_init(&sb->envd->settle, on_settle);
			sb->envd->settle.data = sb->envd;
		}
	}
	return sb->envd;
}

/* Open a stream to the suspended process again: HELLO, ATTACH pid. */
static int reattach(struct envd_proc *p)
{
	struct sandbox *sb = p->es->sb;

	p->a = agent_open(sb->kd->loop, sb->vsock_path, KILN_AGENT_PORT, &agent_ops, p);
	if (!p->a)
		return -errno;
	if (agent_msg_hello(agent_out(p->a), p->pty ? KILN_STREAM_PTY : KILN_STREAM_EXEC, 0) ||
	    agent_msg_u32(agent_out(p->a), KILN_MSG_ATTACH, p->pid)) {
		agent_close(p->a);
		p->a = NULL;
		return -ENOMEM;
	}
	agent_flush(p->a);
	p->suspended = false;
	p->attaching = true;
	return 0;
}

static void on_settle(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct envd_sb *es = w->data;
	void (*done)(struct sandbox * sb) = es->reattached;

	es->reattached = NULL;
	if (done)
		done(es->sb); /* may free es */
}

/* One ATTACH was answered (or its process is gone). */
static void attach_settled(struct envd_sb *es)
{
	if (es->attaching && --es->attaching == 0 && es->reattached) {
		/* From the loop: the caller may be inside a callback of the
		 * stream, and done() may delete the sandbox. */
		ev_timer_stop(es->sb->kd->loop, &es->settle);
		ev_timer_set(&es->settle, 0, 0);
		ev_timer_start(es->sb->kd->loop, &es->settle);
	}
}

bool envd_sandbox_reattach(struct sandbox *sb, void (*done)(struct sandbox *sb))
{
	struct envd_sb *es = sb->envd;
	struct envd_proc *p, *next;
	char msg[160];
	int rc;

	if (!es)
		return false;
	for (p = es->procs; p; p = next) {
		next = p->next;
		if (!p->suspended)
			continue;
		rc = reattach(p);
		if (rc) {
			snprintf(msg, sizeof(msg), "cannot reach the sandbox's agent: %s",
			         strerror(-rc));
			proc_end(p, CRPC_UNAVAILABLE, msg);
			continue;
		}
		es->attaching++;
	}
	if (!es->attaching)
		return false;
	log_info("sandbox %s: attaching its %u envd process(es) again", sb->rec.id, es->attaching);
	es->reattached = done;
	ev_timer_stop(sb->kd->loop, &es->settle);
	ev_timer_set(&es->settle, ENVD_REATTACH_LIMIT, 0);
	ev_timer_start(sb->kd->loop, &es->settle);
	return true;
}

void envd_reattach_cancel(struct sandbox *sb)
{
	if (!sb->envd)
		return;
	sb->envd->reattached = NULL;
	ev_timer_stop(sb->kd->loop, &sb->envd->settle);
}

void envd_sandbox_down(struct sandbox *sb)
{
	struct envd_sb *es = sb->envd;

	envd_watch_sandbox_down(sb->kd, sb->rec.id);
	codeint_sandbox_down(sb->kd, sb->rec.id);
	if (!es)
		return;
	es->reattached = NULL;
	while (es->procs)
		proc_end(es->procs, CRPC_UNAVAILABLE, "the sandbox stopped");
	ev_timer_stop(sb->kd->loop, &es->settle);
	free(es);
	sb->envd = NULL;
}

/* ---------------------------------------------------------------- selectors */

static struct envd_proc *find(struct sandbox *sb, json_t *msg, char *err, size_t errlen)
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
static const char *parse_start(struct envd_proc *p, struct sandbox *sb, json_t *msg)
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
	cwd_abs = envd_resolve_path(json_is_string(cwd) ? json_string_value(cwd) : NULL);
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
	if (es->nprocs >= ENVD_MAX_PROCS) {
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
	why = parse_start(p, r->sb, r->msg);
	if (why) {
		crpc_stream_fail(r->c, CRPC_INVALID_ARGUMENT, "%s", why);
		proc_free(p);
		return;
	}
	p->timeout_ms = (uint32_t)r->timeout_ms;
	if (!sub_new(p, r->c, r->keepalive_s, 0)) {
		crpc_stream_fail(r->c, CRPC_INTERNAL, "out of memory");
		proc_free(p);
		return;
	}
	rc = spawn(p);
	if (rc) {
		proc_end(p, rc == -E2BIG ? CRPC_INVALID_ARGUMENT : CRPC_UNAVAILABLE,
		         rc == -E2BIG ? "command or environment too large"
		                      : "cannot reach the sandbox's agent");
		return;
	}
}

/* ---------------------------------------------------------------- Connect */

void envd_proc_connect(struct envd_req *r)
{
	char err[200];
	struct envd_proc *p = find(r->sb, r->msg, err, sizeof(err));
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
	s = sub_new(p, r->c, r->keepalive_s, r->timeout_ms);
	if (!s) {
		crpc_stream_fail(r->c, CRPC_INTERNAL, "out of memory");
		return;
	}
	sub_begin(s);
	flow(p);
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
	struct envd_proc *p = find(r->sb, r->msg, err, sizeof(err));

	if (!p)
		crpc_respond_error(
		    r->c, strstr(err, "not found") ? CRPC_NOT_FOUND : CRPC_INVALID_ARGUMENT, "%s",
		    err);
	return p;
}

void envd_proc_send_input(struct envd_req *r)
{
	struct envd_proc *p = find_or_fail(r);
	json_t *in, *data;
	struct buf b = {0};
	bool pty_in;

	if (!p)
		return;
	in = json_object_get(r->msg, "input");
	if (!json_is_object(in)) {
		crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT, "'input' is required");
		return;
	}
	data = json_object_get(in, "pty");
	pty_in = data != NULL;
	if (!data)
		data = json_object_get(in, "stdin");
	if (!json_is_string(data) ||
	    b64_decode(&b, json_string_value(data), json_string_length(data))) {
		buf_free(&b);
		crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT,
		                   "'input.stdin' or 'input.pty' must be base64 bytes");
		return;
	}
	if (pty_in != p->pty) {
		buf_free(&b);
		crpc_respond_error(r->c, CRPC_FAILED_PRECONDITION,
		                   p->pty ? "process %u is a pty: send input.pty"
		                          : "process %u has no pty: send input.stdin",
		                   p->pid);
		return;
	}
	if (!p->stdin_open) {
		buf_free(&b);
		crpc_respond_error(r->c, CRPC_FAILED_PRECONDITION,
		                   "the stdin of process %u is closed (start it with stdin: true)",
		                   p->pid);
		return;
	}
	if (agent_pending(p->a) > INPUT_MAX_HELD) {
		buf_free(&b);
		crpc_respond_error(r->c, CRPC_RESOURCE_EXHAUSTED,
		                   "process %u is not reading its input", p->pid);
		return;
	}
	if (buf_avail(&b) &&
	    agent_msg_data(agent_out(p->a), KILN_MSG_STDIN, buf_head(&b), buf_avail(&b))) {
		buf_free(&b);
		crpc_respond_error(r->c, CRPC_INTERNAL, "out of memory");
		return;
	}
	buf_free(&b);
	agent_flush(p->a);
	if (agent_pending(p->a) > AGENT_OUT_HIGH) {
		/* answer once the agent took it: the client slows down */
		struct waiter *w = calloc(1, sizeof(*w));

		if (w) {
			w->p = p;
			w->c = r->c;
			w->next = p->waiters;
			p->waiters = w;
			http_set_handler(r->c, &waiter_ops, w, 0);
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
