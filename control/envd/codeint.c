/* SPDX-License-Identifier: MIT */
/* The code interpreter: E2B's port 49999 API (the @e2b/code-interpreter
 * SDK's runCode and code contexts), served by kilnd for the sandbox.
 *
 * Each code context is one Python process in the sandbox running
 * codeint_kernel.py (embedded in kilnd), started through the agent with
 * KILN_FRAME_KEEP so that it survives a pause. kilnd writes each execution
 * to its stdin as one JSON line and relays the JSON lines it answers, up to
 * "end_of_execution", as the NDJSON body of POST /execute. Executions of
 * one context run one after another, in arrival order. A client that goes
 * away interrupts its execution (SIGINT).
 *
 *   POST /execute                {code, context_id?, language?, env_vars?}
 *   POST /contexts               {language?, cwd?} -> {id, language, cwd}
 *   GET /contexts                [{id, language, cwd}]
 *   DELETE /contexts/{id}
 *   POST /contexts/{id}/restart
 *
 * Only Python runs (language "python", or none). The first execution
 * without a context uses the sandbox's default context, made on demand.
 * After a pause the process is attached again (its variables are kept); the
 * pause fails the executions under way and queued, and the one it cut is
 * interrupted on attach. A process that died is started afresh by the next
 * execution, which then begins with a "KernelRestarted" note on stderr. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_client.h"
#include "agent/agent_proto.h"
#include "codeint.h"
#include "envd.h"
#include "codeint_kernel.h" /* generated: codeint_kernel_py */
#include "http/jsonutil.h"
#include "agent/spare.h"
#include "util.h"
#include "sandbox/wake.h"

#define CI_MAX_CONTEXTS 16
#define CI_MAX_QUEUED   64
#define CI_MAX_BODY     (16u << 20)
#define CI_DEFAULT_CWD  "/home/user"
#define CI_ID_LEN       32

struct ci_exec {
	struct ci_exec *next;
	struct ci_ctx *x;
	struct http_conn *c; /* NULL once the client went away */
	char *line;          /* the request for the kernel, with its '\n' */
	bool running;
};

struct ci_ctx {
	struct ci_ctx *next;
	struct kilnd *kd;
	char sb_id[SB_ID_LEN + 1];
	char id[CI_ID_LEN + 1];
	char *cwd;
	struct agent_conn *a;
	uint32_t pid;
	bool hello, started, ready;
	bool suspended;    /* the sandbox paused: attach again when used */
	bool syncing;      /* after an attach: lines dropped up to "pong" */
	bool restarted;    /* the process was started afresh: say so */
	bool cut;          /* a pause cut an execution: interrupt it on attach */
	bool fresh;        /* made by POST /contexts, not ready yet */
	bool skip;         /* dropping an answer line too long to relay */
	struct buf in;     /* a partial answer line */
	struct buf err;    /* the kernel's own stderr, for messages */
	struct ci_exec *q; /* executions, the running one first */
	unsigned nq;
	struct http_conn *wait; /* POST /contexts or restart, until ready */
};

static void ctx_start(struct ci_ctx *x, struct sandbox *sb);
static bool ctx_reap(struct ci_ctx *x, struct http_conn *c);
static void kick(struct ci_ctx *x);

/* ---------------------------------------------------------------- executions */

static void exec_free(struct ci_exec *e)
{
	if (e->c)
		http_set_handler(e->c, NULL, NULL, 0);
	free(e->line);
	free(e);
}

/* Unlink the first execution of x and free it. Its client's backpressure
 * ends with it: the next execution's output must flow. */
static void pop(struct ci_ctx *x)
{
	struct ci_exec *e = x->q;

	x->q = e->next;
	x->nq--;
	if (e->running && x->a)
		agent_pause(x->a, false);
	exec_free(e);
}

static void exec_write(struct ci_exec *e, const char *p, size_t n)
{
	if (e->c)
		http_stream_write(e->c, p, n);
}

/* End the running (or waiting) execution e with an error line. */
static void exec_fail(struct ci_exec *e, const char *name, const char *why)
{
	json_t *j;
	char *txt;

	if (!e->c)
		return;
	if (!e->running) {
		http_set_handler(e->c, NULL, NULL, 0);
		http_respond_error(e->c, 502, "%s", why);
		e->c = NULL;
		return;
	}
	j = json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", name, "value", why, "traceback",
	              why);
	txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (txt) {
		exec_write(e, txt, strlen(txt));
		exec_write(e, "\n", 1);
		free(txt);
	}
	exec_write(e, "{\"type\":\"unexpected_end_of_execution\"}\n", 39);
	http_set_handler(e->c, NULL, NULL, 0);
	http_stream_end(e->c);
	e->c = NULL;
}

static void exec_abort(void *ctx)
{
	struct ci_exec *e = ctx;

	e->c = NULL;
	if (e->running) {
		/* interrupted; its remaining output is dropped, so it must
		 * flow again (a paused kernel could not even be interrupted) */
		if (e->x->a && e->x->started) {
			agent_pause(e->x->a, false);
			agent_msg_u32(agent_out(e->x->a), KILN_MSG_SIGNAL, SIGINT);
			agent_flush(e->x->a);
		}
		return;
	}
	for (struct ci_exec **pp = &e->x->q; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			e->x->nq--;
			break;
		}
	free(e->line);
	free(e);
}

static void exec_drain(void *ctx)
{
	struct ci_exec *e = ctx;

	if (e->x->a)
		agent_pause(e->x->a, false);
}

static const struct http_handler exec_ops = {.on_abort = exec_abort, .on_drain = exec_drain};

/* ---------------------------------------------------------------- contexts */

static void ctx_answer(struct ci_ctx *x, struct http_conn *c)
{
	http_respond_json(
	    c, 200, json_pack("{s:s,s:s,s:s}", "id", x->id, "language", "python", "cwd", x->cwd));
}

static void ctx_close_agent(struct ci_ctx *x, bool kill)
{
	if (!x->a)
		return;
	if (kill && x->started) {
		/* KEEP: closing alone would leave it running */
		agent_msg_u32(agent_out(x->a), KILN_MSG_SIGNAL, SIGKILL);
		agent_flush(x->a);
	}
	agent_close(x->a);
	x->a = NULL;
}

/* The process is gone (or will be): everything waiting on it fails. */
static void ctx_down(struct ci_ctx *x, const char *name, const char *why)
{
	x->hello = x->started = x->ready = x->syncing = x->skip = false;
	x->pid = 0;
	buf_reset(&x->in);
	if (x->wait) {
		http_set_handler(x->wait, NULL, NULL, 0);
		http_respond_error(x->wait, 500, "%s", why);
		x->wait = NULL;
	}
	if (x->q && x->q->running) {
		exec_fail(x->q, name, why);
		pop(x);
	}
}

/* Forget x; c, if given, is answered 204 once its process is gone. */
static void ctx_free_answer(struct ci_ctx *x, const char *why, struct http_conn *c)
{
	struct ci_ctx **pp = &x->kd->ci_ctxs;

	while (*pp && *pp != x)
		pp = &(*pp)->next;
	if (*pp)
		*pp = x->next;
	ctx_close_agent(x, true);
	if (!ctx_reap(x, c) && c)
		http_respond(c, 204, NULL, NULL, NULL, 0);
	ctx_down(x, "ContextRemoved", why);
	while (x->q) {
		exec_fail(x->q, "ContextRemoved", why);
		pop(x);
	}
	buf_free(&x->in);
	buf_free(&x->err);
	free(x->cwd);
	free(x);
}

static void ctx_free(struct ci_ctx *x, const char *why)
{
	ctx_free_answer(x, why, NULL);
}

static void on_line(struct ci_ctx *x, const char *p, size_t n)
{
	json_t *j = json_loadb(p, n, JSON_ALLOW_NUL, NULL);
	const char *type = json_string_value(json_object_get(j, "type"));
	struct ci_exec *e = x->q;

	if (!type) {
		log_warn("sandbox %s: code context %s: not an answer line", x->sb_id, x->id);
	} else if (x->syncing) {
		if (!strcmp(type, "pong")) {
			x->syncing = false;
			x->ready = true;
		}
	} else if (!strcmp(type, "ready")) {
		x->ready = true;
		x->fresh = false;
		if (x->wait) {
			http_set_handler(x->wait, NULL, NULL, 0);
			ctx_answer(x, x->wait);
			x->wait = NULL;
		}
	} else if (e && e->running) {
		exec_write(e, p, n);
		exec_write(e, "\n", 1);
		if (e->c && http_out_pending(e->c) > HTTP_OUT_HIGH)
			agent_pause(x->a, true);
		if (!strcmp(type, "end_of_execution")) {
			if (e->c) {
				http_set_handler(e->c, NULL, NULL, 0);
				http_stream_end(e->c);
				e->c = NULL;
			}
			pop(x);
		}
	} /* else: output of a background thread between executions */
	json_decref(j);
	kick(x);
}

/* The longest answer line relayed: what a client's connection can queue on
 * top of the output at which the kernel is paused and one more frame. */
static size_t line_max(const struct kilnd *kd)
{
	size_t out = kd->cfg.http.max_out, room = HTTP_OUT_HIGH + KILN_FRAME_MAX;

	return out > room + (64u << 10) ? out - room : 64u << 10;
}

static void on_stdout(struct ci_ctx *x, const uint8_t *p, size_t n)
{
	while (n) {
		const uint8_t *nl = memchr(p, '\n', n);
		size_t k = nl ? (size_t)(nl - p) : n;

		if (!x->skip && buf_avail(&x->in) + k > line_max(x->kd)) {
			/* a result (stdout/stderr come in small pieces) */
			static const char note[] =
			    "{\"type\":\"stderr\",\"text\":\"kiln: an output too big to relay "
			    "(a result of more than a few MiB) was dropped\\n\"}\n";

			if (x->q && x->q->running)
				exec_write(x->q, note, sizeof(note) - 1);
			buf_reset(&x->in);
			x->skip = true;
		}
		if (!x->skip && buf_append(&x->in, p, k)) {
			ctx_close_agent(x, true);
			ctx_down(x, "KernelError", "out of memory");
			return;
		}
		if (!nl)
			return;
		if (x->skip)
			x->skip = false;
		else
			on_line(x, buf_head(&x->in), buf_avail(&x->in));
		buf_reset(&x->in);
		p += k + 1;
		n -= k + 1;
		if (!x->a)
			return;
	}
}

static void on_frame(void *ctx, uint16_t type, const uint8_t *f, uint32_t n)
{
	struct ci_ctx *x = ctx;
	uint32_t v, kind, sig, flags, err, len;
	const char *emsg;
	int32_t code;
	char why[600];

	if (!x->hello) {
		if (type == KILN_MSG_HELLO && !agent_parse_hello(f, n, &v, &kind) &&
		    v == KILN_AGENT_VERSION) {
			x->hello = true;
			return;
		}
		if (type != KILN_MSG_ERROR)
			goto proto;
	}
	switch (type) {
	case KILN_MSG_STARTED:
		if (agent_parse_u32(f, n, &v) || (x->started && v != x->pid))
			goto proto;
		x->started = true;
		x->pid = v;
		return;
	case KILN_MSG_STDOUT:
		on_stdout(x, f, n);
		return;
	case KILN_MSG_STDERR:
		/* the kernel's own complaints (user output comes as lines) */
		buf_append(&x->err, f, n);
		if (buf_avail(&x->err) > 4096)
			buf_consume(&x->err, buf_avail(&x->err) - 4096);
		return;
	case KILN_MSG_EXIT:
		if (agent_parse_exit(f, n, &code, &sig, &flags))
			goto proto;
		snprintf(why, sizeof(why), "the Python process of the context %s (%s %d)%s%.*s",
		         sig ? "was killed" : "exited", sig ? "signal" : "status",
		         sig ? (int)sig : code, buf_avail(&x->err) ? ": " : "",
		         (int)(buf_avail(&x->err) > 400 ? 400 : buf_avail(&x->err)),
		         buf_head(&x->err) +
		             (buf_avail(&x->err) > 400 ? buf_avail(&x->err) - 400 : 0));
		agent_close(x->a);
		x->a = NULL;
		x->restarted = true;
		ctx_down(x, "KernelDied", why);
		if (x->fresh) /* its creation failed with why: not kept */
			ctx_free(x, why);
		else
			kick(x);
		return;
	case KILN_MSG_ERROR:
		if (agent_parse_error(f, n, &err, &emsg, &len))
			goto proto;
		snprintf(why, sizeof(why), "cannot run python3 in the sandbox: %.*s",
		         (int)(len > 300 ? 300 : len), len ? emsg : strerror((int)err));
		agent_close(x->a);
		x->a = NULL;
		if (x->suspended || x->syncing) {
			/* the process did not survive the pause: afresh */
			x->restarted = true;
			ctx_down(x, "KernelDied", "the Python process did not survive the pause");
			kick(x);
			return;
		}
		ctx_down(x, "KernelError", why);
		if (x->fresh) {
			ctx_free(x, why);
			return;
		}
		while (x->q) {
			exec_fail(x->q, "KernelError", why);
			pop(x);
		}
		return;
	}
proto:
	log_warn("sandbox %s: code context %s: agent protocol error (frame %s)", x->sb_id, x->id,
	         agent_msg_name(type));
	ctx_close_agent(x, true);
	ctx_down(x, "KernelError", "agent protocol error");
}

static void on_close(void *ctx, int err)
{
	struct ci_ctx *x = ctx;
	struct sandbox *sb = sb_find(x->kd, x->sb_id);

	(void)err;
	x->a = NULL;
	if (!sb || (sb->state != SB_PAUSING && sb->state != SB_PAUSED)) {
		ctx_down(x, "KernelError", "the agent stream of the code context ended");
		return;
	}
	/* paused: nobody waits for a resume that may never come */
	while (x->q) {
		x->cut |= x->q->running;
		exec_fail(x->q, "SandboxPaused", "the sandbox was paused before the code finished");
		pop(x);
	}
	if (x->wait) {
		http_set_handler(x->wait, NULL, NULL, 0);
		if (x->started)
			ctx_answer(x, x->wait); /* its process is attached on first use */
		else
			http_respond_error(x->wait, 503,
			                   "the sandbox was paused before the process of the code "
			                   "context started; ask again");
		x->wait = NULL;
	}
	if (x->started) {
		/* the process stays in the guest (KEEP): attached on next use */
		x->suspended = true;
		x->hello = x->ready = x->skip = false;
		buf_reset(&x->in);
		return;
	}
	if (x->fresh) {
		ctx_free(x, "the sandbox was paused");
		return;
	}
	ctx_down(x, "SandboxPaused", "the sandbox was paused");
}

static const struct agent_conn_ops agent_ops = {
    .on_frame = on_frame,
    .on_close = on_close,
};

/* A guest that never ends a reap stream does not hold its request longer. */
#define CI_REAP_TIMEOUT 10.0

/* A kill of a kept process, and the request waiting for it, if any. */
struct ci_reap {
	struct http_conn *c;
	struct agent_conn *a;
	struct ev_loop *loop;
	ev_timer timer;
	uint32_t pid;
	bool exited;
};

static void reap_abort(void *ctx)
{
	struct ci_reap *r = ctx;

	r->c = NULL;
}

static void reap_end(struct ci_reap *r)
{
	ev_timer_stop(r->loop, &r->timer);
	if (r->c) {
		http_set_handler(r->c, NULL, NULL, 0);
		http_respond(r->c, 204, NULL, NULL, NULL, 0);
	}
	free(r);
}

static void reap_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ci_reap *r = w->data;

	(void)loop;
	(void)revents;
	log_warn("code context process %u: the agent did not end it within %.0f s", r->pid,
	         CI_REAP_TIMEOUT);
	agent_close(r->a);
	reap_end(r);
}

static const struct http_handler reap_http = {.on_abort = reap_abort};

static void reap_frame(void *ctx, uint16_t type, const uint8_t *f, uint32_t n)
{
	struct ci_reap *r = ctx;

	(void)f;
	(void)n;
	r->exited |= type == KILN_MSG_EXIT;
}

static void reap_close(void *ctx, int err)
{
	struct ci_reap *r = ctx;

	(void)err;
	if (!r->exited)
		log_warn("code context process %u: its stream ended before its exit", r->pid);
	reap_end(r);
}

static const struct agent_conn_ops reap_ops = {
    .on_frame = reap_frame,
    .on_close = reap_close,
};

/* The process was kept over a pause (KEEP) but will not be attached again
 * (restart, removal): it is killed through a stream of its own, which the
 * agent ends after its EXIT; c, if given, is answered then (true: it will
 * be). The API resumes a paused sandbox before a restart or removal; a
 * sandbox that is killed takes its processes along. */
static bool ctx_reap(struct ci_ctx *x, struct http_conn *c)
{
	struct sandbox *sb = sb_find(x->kd, x->sb_id);
	struct ci_reap *r;
	struct agent_conn *a;

	if (!x->suspended || !x->pid || !sb || sb->state != SB_RUNNING)
		return false;
	x->suspended = false;
	r = calloc(1, sizeof(*r));
	a = r ? agent_open(sb->kd->loop, sb->vsock_path, KILN_AGENT_PORT, &reap_ops, r) : NULL;
	if (!a) {
		log_warn("sandbox %s: code context %s: cannot end its Python process %u", x->sb_id,
		         x->id, x->pid);
		free(r);
		return false;
	}
	r->pid = x->pid;
	if (agent_msg_hello(agent_out(a), KILN_STREAM_EXEC, 0) ||
	    agent_msg_u32(agent_out(a), KILN_MSG_ATTACH, x->pid) ||
	    agent_msg_u32(agent_out(a), KILN_MSG_SIGNAL, SIGKILL)) {
		agent_close(a);
		free(r);
		return false;
	}
	agent_flush(a);
	r->a = a;
	r->loop = sb->kd->loop;
	ev_timer_init(&r->timer, reap_timeout, CI_REAP_TIMEOUT, 0.);
	r->timer.data = r;
	ev_timer_start(r->loop, &r->timer);
	r->c = c;
	if (c)
		http_set_handler(c, &reap_http, r, 0);
	return c != NULL;
}

static void ctx_start(struct ci_ctx *x, struct sandbox *sb)
{
	const char *argv[] = {"python3", "-u", "-c", codeint_kernel_py, NULL};
	char cwd_env[ENVD_PATH_MAX + 16];
	const char *env[] = {"MPLBACKEND=Agg", cwd_env, NULL};
	struct agent_start st = {.argv = argv, .env = env, .cwd = "/", .keep = true};
	bool attach = x->suspended && x->pid;
	struct envd_user u;

	/* as the sandbox's default user, like envd's commands */
	envd_user_default(sb, &u);
	st.user = envd_user_name(&u);
	st.user_flags = u.flags;
	snprintf(cwd_env, sizeof(cwd_env), "KILN_CI_CWD=%s", x->cwd);
	x->hello = x->started = x->ready = x->skip = false;
	buf_reset(&x->in);
	buf_reset(&x->err);
	x->a = attach ? agent_open(sb->kd->loop, sb->vsock_path, KILN_AGENT_PORT, &agent_ops, x)
	              : spare_take(sb, &agent_ops, x);
	if (!x->a) {
		ctx_down(x, "KernelError", "cannot reach the sandbox's agent");
		return;
	}
	if (attach) {
		/* an execution cut by the pause is interrupted (the ping
		 * waits for it); what it still prints is dropped up to the
		 * answer to the ping */
		x->started = true;
		x->syncing = true;
		if (agent_msg_hello(agent_out(x->a), KILN_STREAM_EXEC, 0) ||
		    agent_msg_u32(agent_out(x->a), KILN_MSG_ATTACH, x->pid) ||
		    (x->cut && agent_msg_u32(agent_out(x->a), KILN_MSG_SIGNAL, SIGINT)) ||
		    agent_msg_data(agent_out(x->a), KILN_MSG_STDIN, "{\"ping\":true}\n", 14))
			goto nomem;
		x->cut = false;
	} else {
		x->pid = 0;
		x->cut = false;
		if (agent_msg_hello(agent_out(x->a), KILN_STREAM_EXEC, 0) ||
		    agent_msg_start(agent_out(x->a), &st))
			goto nomem;
	}
	x->suspended = false;
	agent_flush(x->a);
	return;
nomem:
	ctx_close_agent(x, false);
	ctx_down(x, "KernelError", "out of memory");
}

/* Start the next execution if the kernel is ready for it. */
static void kick(struct ci_ctx *x)
{
	struct ci_exec *e;
	struct sandbox *sb;

	while (x->q && !x->q->c && !x->q->running)
		pop(x); /* clients that went away while waiting */
	e = x->q;
	if (!e || e->running)
		return;
	sb = sb_find(x->kd, x->sb_id);
	if (!x->a && sb && sb->state == SB_RUNNING)
		ctx_start(x, sb);
	if (!x->a || !x->ready)
		return;
	e->running = true;
	http_stream_start(e->c, 200, "application/x-ndjson", NULL);
	if (x->restarted) {
		static const char note[] =
		    "{\"type\":\"stderr\",\"text\":\"KernelRestarted: the context's Python "
		    "process was started afresh; earlier variables are gone\\n\"}\n";

		x->restarted = false;
		exec_write(e, note, sizeof(note) - 1);
	}
	if (agent_msg_data(agent_out(x->a), KILN_MSG_STDIN, e->line, strlen(e->line))) {
		exec_fail(e, "KernelError", "out of memory");
		pop(x);
		return;
	}
	agent_flush(x->a);
}

static struct ci_ctx *ctx_new(struct kilnd *kd, struct sandbox *sb, const char *id, const char *cwd)
{
	struct ci_ctx *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->kd = kd;
	snprintf(x->sb_id, sizeof(x->sb_id), "%s", sb->rec.id);
	x->cwd = strdup(cwd);
	if (!x->cwd || (id ? (snprintf(x->id, sizeof(x->id), "%s", id), 0)
	                   : random_hex(x->id, CI_ID_LEN / 2))) {
		free(x->cwd);
		free(x);
		return NULL;
	}
	x->next = kd->ci_ctxs;
	kd->ci_ctxs = x;
	return x;
}

static struct ci_ctx *ctx_find(struct kilnd *kd, const char *sb_id, const char *id)
{
	for (struct ci_ctx *x = kd->ci_ctxs; x; x = x->next)
		if (!strcmp(x->sb_id, sb_id) && !strcmp(x->id, id))
			return x;
	return NULL;
}

static unsigned ctx_count(struct kilnd *kd, const char *sb_id)
{
	unsigned n = 0;

	for (struct ci_ctx *x = kd->ci_ctxs; x; x = x->next)
		n += !strcmp(x->sb_id, sb_id);
	return n;
}

void codeint_sandbox_down(struct kilnd *kd, const char *sb_id)
{
	struct ci_ctx *x = kd->ci_ctxs, *next;

	for (; x; x = next) {
		next = x->next;
		if (!strcmp(x->sb_id, sb_id))
			ctx_free(x, "the sandbox stopped");
	}
}

/* ---------------------------------------------------------------- for codeint_api.c */

int ci_execute(struct kilnd *kd, struct sandbox *sb, struct http_conn *c, const char *ctx_id,
               char *line)
{
	struct ci_ctx *x = ctx_find(kd, sb->rec.id, ctx_id ? ctx_id : CI_DEFAULT_ID);
	struct ci_exec *e, **pp;

	if (!x && ctx_id)
		return 404;
	if (!x && ctx_count(kd, sb->rec.id) >= CI_MAX_CONTEXTS)
		return 429;
	if (!x && !(x = ctx_new(kd, sb, CI_DEFAULT_ID, CI_DEFAULT_CWD)))
		return 500;
	if (x->nq >= CI_MAX_QUEUED)
		return 429;
	e = calloc(1, sizeof(*e));
	if (!e)
		return 500;
	e->x = x;
	e->c = c;
	e->line = line;
	for (pp = &x->q; *pp; pp = &(*pp)->next)
		;
	*pp = e;
	x->nq++;
	http_set_handler(c, &exec_ops, e, 0);
	kick(x);
	return 0;
}

static void wait_abort(void *ctx)
{
	struct ci_ctx *x = ctx;

	x->wait = NULL;
}

static const struct http_handler wait_ops = {.on_abort = wait_abort};

/* Answer c once x's process is ready (restarting it first if asked). */
static void ctx_wait(struct ci_ctx *x, struct sandbox *sb, struct http_conn *c, bool restart)
{
	if (restart) {
		ctx_close_agent(x, true);
		ctx_reap(x, NULL);
		x->suspended = false;
		ctx_down(x, "KernelRestarted", "the context was restarted");
	}
	if (x->ready) {
		ctx_answer(x, c);
		return;
	}
	if (x->wait) {
		http_respond_error(c, 409, "the context %s is starting for another request", x->id);
		return;
	}
	x->wait = c;
	http_set_handler(c, &wait_ops, x, 0);
	if (!x->a)
		ctx_start(x, sb);
}

int ci_context_create(struct kilnd *kd, struct sandbox *sb, struct http_conn *c, const char *cwd)
{
	struct ci_ctx *x;

	if (ctx_count(kd, sb->rec.id) >= CI_MAX_CONTEXTS)
		return 429;
	x = ctx_new(kd, sb, NULL, cwd ? cwd : CI_DEFAULT_CWD);
	if (!x)
		return 500;
	x->fresh = true;
	ctx_wait(x, sb, c, false);
	return 0;
}

int ci_context_restart(struct kilnd *kd, struct sandbox *sb, struct http_conn *c, const char *id)
{
	struct ci_ctx *x = ctx_find(kd, sb->rec.id, id);

	if (!x)
		return 404;
	ctx_wait(x, sb, c, true);
	return 0;
}

int ci_context_remove(struct kilnd *kd, const char *sb_id, const char *id, struct http_conn *c)
{
	struct ci_ctx *x = ctx_find(kd, sb_id, id);

	if (!x)
		return 404;
	ctx_free_answer(x, "the context was removed", c);
	return 0;
}

bool ci_context_exists(struct kilnd *kd, const char *sb_id, const char *id)
{
	return ctx_find(kd, sb_id, id) != NULL;
}

json_t *ci_context_list(struct kilnd *kd, const char *sb_id)
{
	json_t *a = json_array();

	for (struct ci_ctx *x = kd->ci_ctxs; a && x; x = x->next)
		if (!strcmp(x->sb_id, sb_id))
			json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "id", x->id, "language",
			                                   "python", "cwd", x->cwd));
	return a;
}
