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
#include "api/procs.h"
#include "codeint.h"
#include "http/connectrpc.h"
#include "envd.h"
#include "envd_proc.h"
#include "agent/spare.h"
#include "util.h"

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
void envd_proc_flow(struct envd_proc *p)
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
	envd_proc_flow(p);
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
		envd_proc_flow(p);
		return;
	}
	if (now - s->last >= s->ka - 0.001)
		sub_send(s, ka, sizeof(ka) - 1);
	arm_tick(s);
}

static void sub_drain(void *ctx)
{
	struct sub *s = ctx;

	envd_proc_flow(s->p);
}

static void sub_abort(void *ctx)
{
	struct sub *s = ctx;
	struct envd_proc *p = s->p;

	/* The client went away: the process keeps running. */
	sub_free(s);
	envd_proc_flow(p);
}

static const struct http_handler sub_ops = {
    .on_drain = sub_drain,
    .on_abort = sub_abort,
};

struct sub *envd_sub_new(struct envd_proc *p, struct http_conn *c, double ka, long long timeout_ms)
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
void envd_sub_begin(struct sub *s)
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

const struct http_handler envd_waiter_ops = {.on_abort = waiter_abort};

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

void envd_proc_free(struct envd_proc *p)
{
	struct envd_sb *es = p->es;
	struct envd_proc **pp = &es->procs;

	while (*pp && *pp != p)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = p->next;
		es->nprocs--;
	}
	if (p->started || p->htag)
		procs_changed(es->sb);
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
void envd_proc_end(struct envd_proc *p, int code, const char *msg)
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
	envd_proc_free(p);
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

static const struct agent_conn_ops agent_ops;

/* envd's code for a process that could not start (a missing cwd, program,
 * ...): invalid_argument, the request is bad; resource_exhausted for what
 * may pass (the SDK's retries key on it); unauthenticated for a user the
 * sandbox does not have. */
static int start_error_code(uint32_t err)
{
	switch (err) {
	case EAGAIN:
	case ENOMEM:
	case EMFILE:
	case ENFILE:
	case ENOSPC:
		return CRPC_RESOURCE_EXHAUSTED;
	case ESRCH: /* no such user: envd's authentication fails */
		return CRPC_UNAUTHENTICATED;
	default:
		return CRPC_INVALID_ARGUMENT;
	}
}

/* process.started/finished, with the command line. */
static void proc_event(struct envd_proc *p, const char *type, json_t *d)
{
	struct sandbox *sb = p->es->sb;
	char *cmd = events_cmdline((const char *const *)p->argv);

	if (d && cmd)
		json_object_set_new(d, "cmd", json_string(cmd));
	free(cmd);
	events_add(sb->kd, sb->rec.id, sb, type, "envd", d);
}

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
			envd_proc_end(p, CRPC_INTERNAL, "agent protocol mismatch");
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
					envd_sub_begin(s);
			envd_proc_flow(p);
			return;
		}
		if (p->started || agent_parse_u32(f, n, &v))
			break;
		p->started = true;
		p->pid = v;
		p->started_ms = now_ms();
		procs_changed(p->es->sb); /* listed on disk (api/procs_store.c) */
		proc_event(p, "process.started", json_pack("{s:i}", "pid", (int)v));
		for (struct sub *s = p->subs; s; s = s->next)
			envd_sub_begin(s);
		envd_proc_flow(p);
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
		/* envd's `error` is Go's cmd.Wait() error, the status again for
		 * anything but exit status 0: the SDK's CommandExitError.message. */
		if (sig) {
			const char *st = signal_text(sig, tmp, sizeof(tmp));

			m = snprintf(msg, sizeof(msg),
			             "{\"event\":{\"end\":{\"exitCode\":-1,\"exited\":false,"
			             "\"status\":\"signal: %s\",\"error\":\"signal: %s\"}}}",
			             st, st);
		} else if (code)
			m = snprintf(
			    msg, sizeof(msg),
			    "{\"event\":{\"end\":{\"exitCode\":%d,\"exited\":true,"
			    "\"status\":\"exit status %d\",\"error\":\"exit status %d\"}}}",
			    code, code, code);
		else
			m = snprintf(msg, sizeof(msg),
			             "{\"event\":{\"end\":{\"exitCode\":0,\"exited\":true,"
			             "\"status\":\"exit status 0\"}}}");
		broadcast(p, msg, (size_t)m);
		proc_event(p, "process.finished",
		           json_pack("{s:i,s:i,s:i,s:I}", "pid", (int)p->pid, "exitCode",
		                     sig ? -1 : code, "signal", (int)sig, "durationMs",
		                     (json_int_t)(now_ms() - p->started_ms)));
		spare_release(&p->a, p->reuse);
		if (flags & KILN_EXIT_TIMEOUT) {
			snprintf(text, sizeof(text),
			         "the process was killed at its timeout (Connect-Timeout-Ms %u)",
			         p->timeout_ms);
			envd_proc_end(p, CRPC_DEADLINE_EXCEEDED, text);
		} else {
			envd_proc_end(p, CRPC_OK, NULL);
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
			envd_proc_end(p, CRPC_NOT_FOUND, text);
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
				if (!envd_proc_spawn(p))
					return;
				envd_proc_end(p, CRPC_UNAVAILABLE,
				              "cannot reach the sandbox's agent");
				return;
			}
		}
		snprintf(text, sizeof(text), "%s: %.*s", p->started ? "process" : "cannot start",
		         (int)(len > 300 ? 300 : len), emsg);
		envd_proc_end(p, p->started ? CRPC_INTERNAL : start_error_code(err), text);
		return;
	}
	log_debug("envd: unexpected %s frame", agent_msg_name(type));
	envd_proc_end(p, CRPC_INTERNAL, "agent protocol error");
}

/* The sandbox is pausing: its VMM stops once the snapshot is written, and
 * the process with it, until the resume (envd_sandbox_resumed). One that
 * was starting is looked up by its tag then (procs_sync). */
static void proc_suspend(struct envd_proc *p)
{
	const char *why = p->started ? "the sandbox was paused; the process goes on when it is "
	                               "resumed (process.Connect finds it then)"
	                             : "the sandbox was paused while the process was starting: "
	                               "if it started, it goes on when the sandbox is resumed "
	                               "(process.List has it then, with its tag)";

	p->suspended = true;
	p->hello = false;
	while (p->subs) {
		struct sub *s = p->subs;

		if (s->streaming) {
			sub_end(s, CRPC_UNAVAILABLE, why);
		} else {
			crpc_stream_fail(s->c, CRPC_UNAVAILABLE, "%s", why);
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
		envd_proc_end(p, CRPC_NOT_FOUND, msg);
		return;
	}
	if ((p->started || p->htag) && (sb->state == SB_PAUSING || sb->state == SB_PAUSED)) {
		proc_suspend(p); /* its VMM stopped after the snapshot */
		return;
	}
	snprintf(msg, sizeof(msg), "the sandbox's agent stream ended without an exit status (%s)",
	         err ? strerror(-err) : "closed");
	envd_proc_end(p, CRPC_UNAVAILABLE, msg);
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
int envd_proc_spawn(struct envd_proc *p)
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
	    .user = envd_user_name(&p->user),
	    .user_flags = p->user.flags,
	};

	if (!p->htag && sb_agent_procs(sb)) {
		p->htag = procs_new_tag(); /* written out as starting */
		procs_changed(sb);
	}
	st.tag = p->htag;

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

struct envd_sb *envd_sb_get(struct sandbox *sb)
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

int envd_proc_restore(struct sandbox *sb, uint32_t pid, bool pty, bool stdin_open, const char *tag,
                      json_t *config, uint64_t htag)
{
	struct envd_sb *es = envd_sb_get(sb);
	json_t *cmd = json_object_get(config, "cmd"), *args = json_object_get(config, "args"),
	       *cwd = json_object_get(config, "cwd");
	struct envd_proc *p;

	if (!es || es->nprocs >= ENVD_MAX_PROCS || !json_is_string(cmd) ||
	    json_string_length(cmd) > 4096 || !json_is_array(args) ||
	    json_array_size(args) > 4096 || (cwd && !json_is_string(cwd)) ||
	    (tag && strlen(tag) > 256))
		return -EINVAL;
	for (size_t i = 0; i < json_array_size(args); i++)
		if (!json_is_string(json_array_get(args, i)))
			return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->es = es;
	p->pid = pid;
	p->pty = pty;
	p->stdin_open = stdin_open;
	p->htag = htag;
	/* The agent keeps it: attached once it runs; pid 0: it was starting,
	 * procs_sync finds out */
	p->suspended = true;
	p->started = pid != 0;
	p->started_ms = now_ms();
	p->tag = tag ? strdup(tag) : NULL;
	p->config = json_pack("{s:O,s:O,s:{}}", "cmd", cmd, "args", args, "envs");
	if (!p->config || (tag && !p->tag)) {
		json_decref(p->config);
		free(p->tag);
		free(p);
		return -ENOMEM;
	}
	if (cwd)
		json_object_set(p->config, "cwd", cwd);
	p->next = es->procs;
	es->procs = p;
	es->nprocs++;
	return 0;
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
		if (!p->suspended || !p->started)
			continue; /* (starting: procs_sync could not tell yet) */
		rc = reattach(p);
		if (rc) {
			snprintf(msg, sizeof(msg), "cannot reach the sandbox's agent: %s",
			         strerror(-rc));
			envd_proc_end(p, CRPC_UNAVAILABLE, msg);
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
	procs_sandbox_down(sb);
	if (!es)
		return;
	es->reattached = NULL;
	while (es->procs)
		envd_proc_end(es->procs, CRPC_UNAVAILABLE, "the sandbox stopped");
	ev_timer_stop(sb->kd->loop, &es->settle);
	free(es);
	sb->envd = NULL;
}
