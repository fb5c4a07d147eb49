/* SPDX-License-Identifier: MIT */
/* Finding the sandbox's browser, and starting it (cdp.h). One start per
 * sandbox at a time: requests that arrive meanwhile wait for it. A start
 * asks the DevTools port for /json/version; if nothing listens it runs the
 * launcher as a kept process, then asks again every PROBE_EVERY seconds
 * until the answer comes, the launcher fails, or CDP_START_TIMEOUT passes.
 * While it waits, kilnd holds the launcher's stream (its output is the
 * error message if it fails); closing the stream after leaves the browser
 * running on its own (KILN_FRAME_KEEP). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <http_parser.h>

#include "agent/agent_client.h"
#include "agent/agent_port.h"
#include "agent/spare.h"
#include "cdp.h"
#include "envd/envd.h"
#include "util.h"

#define PROBE_EVERY  0.1
#define VERSION_MAX  (64u << 10) /* /json/version's body */
#define OUTPUT_TAIL  1024        /* of the launcher's output, for messages */
#define NAME_FOR(sb) ((sb)->rec.template_id ? (sb)->rec.template_id : "busybox")

struct cdp_waiter {
	struct cdp_waiter *next;
	struct cdp_start *st;
	cdp_ready_fn fn;
	void *ctx;
};

struct cdp_start {
	struct cdp_start *next;
	struct kilnd *kd;
	char sb_id[SB_ID_LEN + 1];
	struct cdp_waiter *waiters;
	struct aport *probe;
	struct agent_conn *launcher; /* while waiting for the port */
	bool launched, hello;
	ev_timer tick, limit; /* the next probe; the whole start */
	ev_tstamp deadline;
	http_parser rp;
	http_parser_settings rs;
	struct buf body, tail;
	bool complete, too_big;
};

static void start_free(struct cdp_start *st)
{
	struct cdp_start **pp = &st->kd->cdp_starts;

	while (*pp && *pp != st)
		pp = &(*pp)->next;
	if (*pp)
		*pp = st->next;
	ev_timer_stop(st->kd->loop, &st->tick);
	ev_timer_stop(st->kd->loop, &st->limit);
	aport_close(st->probe);
	agent_close(st->launcher); /* the browser keeps running: KILN_FRAME_KEEP */
	buf_free(&st->body);
	buf_free(&st->tail);
	free(st);
}

/* Tell every waiter, then go. */
static void finish(struct cdp_start *st, int status, const char *msg, json_t *version)
{
	struct cdp_waiter *w = st->waiters, *next;

	st->waiters = NULL;
	for (; w; w = next) {
		next = w->next;
		w->fn(w->ctx, status, msg, version);
		free(w);
	}
	start_free(st);
}

static void failf(struct cdp_start *st, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void failf(struct cdp_start *st, int status, const char *fmt, ...)
{
	char msg[1536];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_info("sandbox %s: browser: %s", st->sb_id, msg);
	finish(st, status, msg, NULL);
}

/* ---------------------------------------------------------------- the launcher */

static void launch(struct cdp_start *st, struct sandbox *sb);

static void on_launcher_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct cdp_start *st = ctx;
	struct sandbox *sb = sb_find(st->kd, st->sb_id);
	const char *msg;
	uint32_t err, len, sig, flags;
	int32_t code;

	switch (type) {
	case KILN_MSG_HELLO:
	case KILN_MSG_STARTED:
		return;
	case KILN_MSG_STDOUT:
	case KILN_MSG_STDERR:
		buf_append(&st->tail, p, n);
		if (buf_avail(&st->tail) > OUTPUT_TAIL)
			buf_consume(&st->tail, buf_avail(&st->tail) - OUTPUT_TAIL);
		return;
	case KILN_MSG_ERROR:
		if (agent_parse_error(p, n, &err, &msg, &len))
			break;
		if (err == ENOENT)
			failf(st, 409,
			      "sandbox %s has no browser: %s is not in its image '%s'; create the "
			      "sandbox from an image that has one (kiln create --image browser)",
			      st->sb_id, st->kd->cfg.browser_launcher, sb ? NAME_FOR(sb) : "?");
		else
			failf(st, 502, "sandbox %s: cannot start %s: %.*s", st->sb_id,
			      st->kd->cfg.browser_launcher, (int)(len > 300 ? 300 : len), msg);
		return;
	case KILN_MSG_EXIT:
		if (agent_parse_exit(p, n, &code, &sig, &flags))
			break;
		agent_close(st->launcher);
		st->launcher = NULL;
		if (!sig && !code)
			return; /* it started the browser and left: keep asking */
		failf(st, 502, "sandbox %s: %s %s %d before the browser listened on port %u%s%.*s",
		      st->sb_id, st->kd->cfg.browser_launcher,
		      sig ? "was killed by signal" : "exited with status", sig ? (int)sig : code,
		      st->kd->cfg.browser_port, buf_avail(&st->tail) ? "; its output ends: " : "",
		      (int)buf_avail(&st->tail), buf_head(&st->tail));
		return;
	}
	failf(st, 502, "sandbox %s: the browser launcher's stream broke", st->sb_id);
}

static void on_launcher_close(void *ctx, int err)
{
	struct cdp_start *st = ctx;

	st->launcher = NULL; /* freed by the client */
	failf(st, 502, "sandbox %s: the browser launcher's stream ended (%s)", st->sb_id,
	      err ? strerror(-err) : "early");
}

static const struct agent_conn_ops launcher_ops = {
    .on_frame = on_launcher_frame,
    .on_close = on_launcher_close,
};

static void launch(struct cdp_start *st, struct sandbox *sb)
{
	const char *argv[] = {st->kd->cfg.browser_launcher, NULL};
	char port_env[40];
	const char *env[] = {port_env, NULL};
	struct envd_user user;
	struct agent_start start = {.argv = argv, .env = env, .keep = true};

	/* As E2B runs it: as the image's unprivileged user (the browser
	 * image's "user", uid 1000, HOME /home/user), root only where the
	 * image has no such user or its agent predates users. */
	envd_user_default(sb, &user);
	start.user = envd_user_name(&user);
	start.user_flags = user.flags;
	snprintf(port_env, sizeof(port_env), "KILN_BROWSER_PORT=%u", st->kd->cfg.browser_port);
	log_info("sandbox %s: starting the browser (%s, as %s)", st->sb_id,
	         st->kd->cfg.browser_launcher, user.name);
	st->launched = true;
	st->deadline = ev_now(st->kd->loop) + CDP_START_TIMEOUT;
	st->launcher = spare_take(sb, &launcher_ops, st);
	if (!st->launcher) {
		failf(st, 503, "cannot reach the agent of sandbox %s: %s", st->sb_id,
		      strerror(errno));
		return;
	}
	if (agent_msg_hello(agent_out(st->launcher), KILN_STREAM_EXEC, 0) ||
	    agent_msg_start(agent_out(st->launcher), &start)) {
		failf(st, 500, "out of memory");
		return;
	}
	agent_flush(st->launcher);
	ev_timer_set(&st->tick, PROBE_EVERY, 0);
	ev_timer_start(st->kd->loop, &st->tick);
}

/* ---------------------------------------------------------------- /json/version */

static void probe(struct cdp_start *st, struct sandbox *sb);

static int rp_body(http_parser *rp, const char *p, size_t n)
{
	struct cdp_start *st = rp->data;

	if (buf_avail(&st->body) + n > VERSION_MAX) {
		st->too_big = true;
		return -1;
	}
	return buf_append(&st->body, p, n);
}

static int rp_complete(http_parser *rp)
{
	struct cdp_start *st = rp->data;

	st->complete = true;
	http_parser_pause(rp, 1);
	return 0;
}

static void version_answered(struct cdp_start *st)
{
	json_t *v = json_loadb(buf_head(&st->body), buf_avail(&st->body), 0, NULL);
	const char *ws = json_string_value(json_object_get(v, "webSocketDebuggerUrl"));

	if (st->rp.status_code != 200 || !ws)
		failf(st, 502,
		      "sandbox %s: port %u answered /json/version with %u and no "
		      "webSocketDebuggerUrl: not Chromium's DevTools",
		      st->sb_id, st->kd->cfg.browser_port, st->rp.status_code);
	else
		finish(st, 200, NULL, v);
	json_decref(v);
}

static void on_probe_data(void *ctx, const uint8_t *p, size_t n)
{
	struct cdp_start *st = ctx;

	http_parser_execute(&st->rp, &st->rs, (const char *)p, n);
	if (st->complete) {
		version_answered(st);
	} else if (HTTP_PARSER_ERRNO(&st->rp) != HPE_OK) {
		failf(st, 502, "sandbox %s: port %u answered /json/version %s", st->sb_id,
		      st->kd->cfg.browser_port,
		      st->too_big ? "with more than 64 KiB" : "with something that is not HTTP");
	}
}

static void on_probe_eof(void *ctx)
{
	struct cdp_start *st = ctx;

	http_parser_execute(&st->rp, &st->rs, NULL, 0); /* a body that ends with the connection */
	if (st->complete)
		version_answered(st);
	else
		failf(st, 502,
		      "sandbox %s: port %u closed the connection before answering "
		      "/json/version",
		      st->sb_id, st->kd->cfg.browser_port);
}

static void on_probe_end(void *ctx)
{
	struct cdp_start *st = ctx;

	st->probe = NULL; /* freed by agent_port.c */
	on_probe_eof(st);
}

static void on_probe_error(void *ctx, int status, int err, const char *msg)
{
	struct cdp_start *st = ctx;
	struct sandbox *sb = sb_find(st->kd, st->sb_id);

	st->probe = NULL;
	if (err != ECONNREFUSED || !sb || sb->state != SB_RUNNING) {
		failf(st, status, "%s", msg);
	} else if (!st->launched) {
		launch(st, sb);
	} else if (ev_now(st->kd->loop) > st->deadline) {
		failf(st, 504,
		      "sandbox %s: the browser did not listen on port %u within %.0f s%s%.*s",
		      st->sb_id, st->kd->cfg.browser_port, CDP_START_TIMEOUT,
		      buf_avail(&st->tail) ? "; its output ends: " : "", (int)buf_avail(&st->tail),
		      buf_head(&st->tail));
	} else {
		ev_timer_set(&st->tick, PROBE_EVERY, 0);
		ev_timer_start(st->kd->loop, &st->tick);
	}
}

static const struct aport_ops probe_ops = {
    .on_data = on_probe_data,
    .on_eof = on_probe_eof,
    .on_end = on_probe_end,
    .on_error = on_probe_error,
};

static void probe(struct cdp_start *st, struct sandbox *sb)
{
	char req[128];

	buf_reset(&st->body);
	st->complete = st->too_big = false;
	http_parser_init(&st->rp, HTTP_RESPONSE);
	st->rp.data = st;
	st->probe = aport_open(sb, st->kd->cfg.browser_port, &probe_ops, st);
	if (!st->probe) {
		failf(st, 503, "cannot reach the agent of sandbox %s: %s", st->sb_id,
		      strerror(errno));
		return;
	}
	/* Chromium answers only a Host that is an address or localhost */
	snprintf(req, sizeof(req),
	         "GET /json/version HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n\r\n",
	         st->kd->cfg.browser_port);
	if (aport_write(st->probe, req, strlen(req)))
		failf(st, 500, "out of memory");
}

static void on_tick(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct cdp_start *st = t->data;
	struct sandbox *sb = sb_find(st->kd, st->sb_id);

	if (!sb || sb->state != SB_RUNNING) {
		failf(st, 409, "sandbox %s stopped while its browser started", st->sb_id);
		return;
	}
	probe(st, sb);
}

static void on_limit(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct cdp_start *st = t->data;

	failf(st, 504, "sandbox %s: the browser's DevTools port did not answer within %.0f s",
	      st->sb_id, CDP_START_TIMEOUT + 5);
}

/* ---------------------------------------------------------------- waiters */

struct cdp_waiter *cdp_browser(struct kilnd *kd, struct sandbox *sb, cdp_ready_fn fn, void *ctx)
{
	struct cdp_waiter *w = calloc(1, sizeof(*w));
	struct cdp_start *st;

	if (!w)
		return NULL;
	for (st = kd->cdp_starts; st && strcmp(st->sb_id, sb->rec.id); st = st->next)
		;
	if (!st) {
		st = calloc(1, sizeof(*st));
		if (!st) {
			free(w);
			return NULL;
		}
		st->kd = kd;
		snprintf(st->sb_id, sizeof(st->sb_id), "%s", sb->rec.id);
		/* the first probe from the loop: fn never runs before this returns */
		ev_timer_init(&st->tick, on_tick, 0, 0);
		st->tick.data = st;
		ev_timer_start(kd->loop, &st->tick);
		ev_timer_init(&st->limit, on_limit, CDP_START_TIMEOUT + 5, 0);
		st->limit.data = st;
		ev_timer_start(kd->loop, &st->limit);
		http_parser_settings_init(&st->rs);
		st->rs.on_body = rp_body;
		st->rs.on_message_complete = rp_complete;
		st->next = kd->cdp_starts;
		kd->cdp_starts = st;
	}
	*w = (struct cdp_waiter){.next = st->waiters, .st = st, .fn = fn, .ctx = ctx};
	st->waiters = w;
	return w;
}

void cdp_cancel(struct cdp_waiter *w)
{
	struct cdp_waiter **pp;

	if (!w)
		return;
	for (pp = &w->st->waiters; *pp && *pp != w; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = w->next;
	free(w);
	/* the start goes on: the browser will be there for the next client */
}
