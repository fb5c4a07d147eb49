/* SPDX-License-Identifier: MIT */
/* envd's directory watches, on the polling scans of envd_scan.c:
 *
 *   WatchDir          a server stream (WatchDirResponse: its oneof is not
 *                     nested, so {"start":{}}, {"filesystem":{...}},
 *                     {"keepalive":{}}): start once the directory
 *                     is watched, then each change as it is seen, and
 *                     keepalives; it ends at Connect-Timeout-Ms or when the
 *                     client goes away (the JS SDK and async Python SDK)
 *   CreateWatcher     the same changes, kept by kilnd (at most
 *   GetWatcherEvents  WATCHER_MAX_EVENTS) until the client collects them
 *   RemoveWatcher     (the synchronous Python SDK)
 *
 * Watchers belong to their sandbox: they end with it, and one not asked for
 * its events for WATCHER_IDLE seconds is dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/connectrpc.h"
#include "envd.h"
#include "envd_scan.h"
#include "util.h"

#define WATCHES_PER_SANDBOX 32
#define WATCHER_MAX_EVENTS  10000
#define WATCHER_IDLE        600.0 /* seconds */
#define WATCHER_ID_LEN      16

/* The request's fields; false (answered) if malformed. */
static bool parse(struct envd_req *r, bool stream, char **path, bool *recursive, bool *entry)
{
	json_t *p = json_object_get(r->msg, "path");
	json_t *rec = json_object_get(r->msg, "recursive");
	json_t *inc = crpc_field(r->msg, "includeEntry", "include_entry");
	const char *why = NULL;

	if (p && !json_is_string(p))
		why = "'path' must be a string";
	else if ((rec && !json_is_boolean(rec)) || (inc && !json_is_boolean(inc)))
		why = "'recursive' and 'includeEntry' must be booleans";
	else if (!(*path = envd_resolve_path_as(p ? json_string_value(p) : NULL, &r->user)))
		why = "'path' is too long";
	if (why) {
		if (stream)
			crpc_stream_fail(r->c, CRPC_INVALID_ARGUMENT, "%s", why);
		else
			crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT, "%s", why);
		return false;
	}
	*recursive = json_is_true(rec);
	*entry = json_is_true(inc);
	return true;
}

/* ---------------------------------------------------------------- watchers */

struct envd_watcher {
	struct envd_watcher *next;
	struct kilnd *kd;
	char sb_id[SB_ID_LEN + 1];
	char id[WATCHER_ID_LEN + 1];
	struct scan *s;
	json_t *events;
	char *error; /* the scan failed: the next Get reports it */
	int code;
	struct http_conn *c; /* CreateWatcher, until the first scan is done */
	ev_timer idle;       /* not asked for its events for WATCHER_IDLE s */
};

static unsigned count_streams(struct kilnd *kd, const char *sb_id);

static unsigned watchers_of(struct kilnd *kd, const char *sb_id)
{
	unsigned n = 0;

	for (struct envd_watcher *w = kd->watchers; w; w = w->next)
		n += !strcmp(w->sb_id, sb_id);
	return n;
}

static void watcher_free(struct envd_watcher *w)
{
	struct envd_watcher **pp = &w->kd->watchers;

	while (*pp && *pp != w)
		pp = &(*pp)->next;
	if (*pp)
		*pp = w->next;
	scan_free(w->s);
	ev_timer_stop(w->kd->loop, &w->idle);
	json_decref(w->events);
	free(w->error);
	free(w);
}

static void on_idle(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct envd_watcher *w = t->data;

	(void)loop;
	(void)revents;
	log_info("envd: watcher %s of sandbox %s dropped: not read for %.0f s", w->id, w->sb_id,
	         WATCHER_IDLE);
	watcher_free(w);
}

/* The client asked for the watcher: its idle time starts again. */
static void watcher_used(struct envd_watcher *w)
{
	ev_timer_stop(w->kd->loop, &w->idle);
	ev_timer_set(&w->idle, WATCHER_IDLE, 0);
	ev_timer_start(w->kd->loop, &w->idle);
}

static void cw_abort(void *ctx)
{
	watcher_free(ctx); /* the client never learnt its id */
}

static const struct http_handler cw_ops = {.on_abort = cw_abort};

static void w_ready(void *ctx)
{
	struct envd_watcher *w = ctx;
	struct http_conn *c = w->c;

	w->c = NULL;
	http_set_handler(c, NULL, NULL, 0);
	crpc_respond(c, json_pack("{s:s}", "watcherId", w->id));
	watcher_used(w);
}

static void w_events(void *ctx, json_t *evs)
{
	struct envd_watcher *w = ctx;

	if (json_array_size(w->events) + json_array_size(evs) > WATCHER_MAX_EVENTS) {
		w->code = CRPC_RESOURCE_EXHAUSTED;
		free(w->error);
		w->error = strdup("more than 10000 events were not collected: watch again");
		scan_free(w->s);
		w->s = NULL;
		return;
	}
	json_array_extend(w->events, evs);
}

static void w_fail(void *ctx, int code, const char *msg)
{
	struct envd_watcher *w = ctx;

	if (w->c) {
		http_set_handler(w->c, NULL, NULL, 0);
		crpc_respond_error(w->c, code, "%s", msg);
		watcher_free(w);
		return;
	}
	scan_free(w->s);
	w->s = NULL;
	w->code = code;
	free(w->error);
	w->error = strdup(msg);
}

static const struct scan_ops watcher_scan = {w_ready, w_events, w_fail};

void envd_watch_create(struct envd_req *r)
{
	struct envd_watcher *w;
	bool rec, inc;
	char *path;

	if (!parse(r, false, &path, &rec, &inc))
		return;
	if (watchers_of(r->kd, r->sb->rec.id) + count_streams(r->kd, r->sb->rec.id) >=
	    WATCHES_PER_SANDBOX) {
		free(path);
		crpc_respond_error(r->c, CRPC_RESOURCE_EXHAUSTED,
		                   "the sandbox has %d watches already: remove one first",
		                   WATCHES_PER_SANDBOX);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (w) {
		w->kd = r->kd;
		w->c = r->c;
		ev_init(&w->idle, on_idle);
		w->idle.data = w;
		w->events = json_array();
		snprintf(w->sb_id, sizeof(w->sb_id), "%s", r->sb->rec.id);
	}
	if (!w || !w->events || random_hex(w->id, WATCHER_ID_LEN / 2) ||
	    !(w->s = scan_start(r->sb, &r->user, path, rec, inc, &watcher_scan, w))) {
		free(path);
		if (w)
			json_decref(w->events);
		free(w);
		crpc_respond_error(r->c, CRPC_INTERNAL, "out of memory");
		return;
	}
	free(path);
	w->next = r->kd->watchers;
	r->kd->watchers = w;
	http_set_handler(r->c, &cw_ops, w, 0);
}

static struct envd_watcher *find(struct envd_req *r)
{
	json_t *id = crpc_field(r->msg, "watcherId", "watcher_id");

	if (!json_is_string(id)) {
		crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT,
		                   "'watcherId' (a string) is required");
		return NULL;
	}
	for (struct envd_watcher *w = r->kd->watchers; w; w = w->next)
		if (!w->c && !strcmp(w->sb_id, r->sb->rec.id) &&
		    !strcmp(w->id, json_string_value(id)))
			return w;
	crpc_respond_error(r->c, CRPC_NOT_FOUND, "watcher %s not found", json_string_value(id));
	return NULL;
}

void envd_watch_get_events(struct envd_req *r)
{
	struct envd_watcher *w = find(r);
	json_t *evs;

	if (!w)
		return;
	watcher_used(w);
	if (w->error && !json_array_size(w->events)) {
		crpc_respond_error(r->c, w->code, "%s", w->error);
		watcher_free(w);
		return;
	}
	evs = w->events;
	w->events = json_array();
	if (!w->events) {
		w->events = evs;
		crpc_respond_error(r->c, CRPC_INTERNAL, "out of memory");
		return;
	}
	crpc_respond(r->c, json_pack("{s:o}", "events", evs));
}

void envd_watch_remove(struct envd_req *r)
{
	struct envd_watcher *w = find(r);

	if (!w)
		return;
	watcher_free(w);
	crpc_respond(r->c, json_object());
}

/* ---------------------------------------------------------------- WatchDir */

struct watch_stream {
	struct watch_stream *next;
	struct kilnd *kd;
	char sb_id[SB_ID_LEN + 1];
	struct http_conn *c;
	struct scan *s;
	ev_timer tick;
	double ka;          /* keepalive interval, seconds */
	ev_tstamp last;     /* last message sent */
	ev_tstamp deadline; /* 0: none */
	bool streaming;
};

static unsigned count_streams(struct kilnd *kd, const char *sb_id)
{
	unsigned n = 0;

	for (struct watch_stream *ws = kd->watch_streams; ws; ws = ws->next)
		n += !strcmp(ws->sb_id, sb_id);
	return n;
}

static void ws_free(struct watch_stream *ws)
{
	struct watch_stream **pp = &ws->kd->watch_streams;

	while (*pp && *pp != ws)
		pp = &(*pp)->next;
	if (*pp)
		*pp = ws->next;
	scan_free(ws->s);
	ev_timer_stop(ws->kd->loop, &ws->tick);
	free(ws);
}

static void ws_end(struct watch_stream *ws, int code, const char *msg)
{
	http_set_handler(ws->c, NULL, NULL, 0);
	if (ws->streaming)
		crpc_stream_end(ws->c, code, msg);
	else
		crpc_stream_fail(ws->c, code, "%s", msg);
	ws_free(ws);
}

static void ws_send(struct watch_stream *ws, const char *json, size_t n)
{
	crpc_stream_msg(ws->c, json, n);
	ws->last = ev_now(ws->kd->loop);
}

static void arm_tick(struct watch_stream *ws)
{
	ev_tstamp now = ev_now(ws->kd->loop), at = ws->last + ws->ka;

	if (ws->deadline && ws->deadline < at)
		at = ws->deadline;
	ev_timer_stop(ws->kd->loop, &ws->tick);
	ev_timer_set(&ws->tick, at > now ? at - now : 0, 0);
	ev_timer_start(ws->kd->loop, &ws->tick);
}

static void on_tick(struct ev_loop *loop, ev_timer *t, int revents)
{
	static const char ka[] = "{\"keepalive\":{}}";
	struct watch_stream *ws = t->data;

	(void)revents;
	if (ws->deadline && ev_now(loop) >= ws->deadline) {
		ws_end(ws, CRPC_DEADLINE_EXCEEDED, "the watch reached its Connect-Timeout-Ms");
		return;
	}
	if (ev_now(loop) - ws->last >= ws->ka - 0.001)
		ws_send(ws, ka, sizeof(ka) - 1);
	arm_tick(ws);
}

static void ws_ready(void *ctx)
{
	static const char start[] = "{\"start\":{}}";
	struct watch_stream *ws = ctx;

	crpc_stream_start(ws->c);
	ws->streaming = true;
	ws_send(ws, start, sizeof(start) - 1);
	arm_tick(ws);
}

static void ws_events(void *ctx, json_t *evs)
{
	struct watch_stream *ws = ctx;
	size_t i;
	json_t *ev;

	if (http_out_pending(ws->c) > HTTP_OUT_HIGH) {
		ws_end(ws, CRPC_RESOURCE_EXHAUSTED, "the client does not read its watch events");
		return;
	}
	json_array_foreach(evs, i, ev)
	{
		json_t *msg = json_pack("{s:O}", "filesystem", ev);
		char *txt = msg ? json_dumps(msg, JSON_COMPACT) : NULL;

		json_decref(msg);
		if (!txt) {
			ws_end(ws, CRPC_INTERNAL, "out of memory");
			return;
		}
		ws_send(ws, txt, strlen(txt));
		free(txt);
	}
	arm_tick(ws);
}

static void ws_fail(void *ctx, int code, const char *msg)
{
	ws_end(ctx, code, msg);
}

static const struct scan_ops stream_scan = {ws_ready, ws_events, ws_fail};

static void ws_abort(void *ctx)
{
	ws_free(ctx); /* the client went away */
}

static const struct http_handler ws_ops = {.on_abort = ws_abort};

void envd_watch_dir(struct envd_req *r)
{
	struct watch_stream *ws;
	bool rec, inc;
	char *path;

	if (!parse(r, true, &path, &rec, &inc))
		return;
	if (watchers_of(r->kd, r->sb->rec.id) + count_streams(r->kd, r->sb->rec.id) >=
	    WATCHES_PER_SANDBOX) {
		free(path);
		crpc_stream_fail(r->c, CRPC_RESOURCE_EXHAUSTED,
		                 "the sandbox has %d watches already: end one first",
		                 WATCHES_PER_SANDBOX);
		return;
	}
	ws = calloc(1, sizeof(*ws));
	if (ws) {
		ws->kd = r->kd;
		ws->c = r->c;
		ws->ka = r->keepalive_s > 0 ? r->keepalive_s : 90;
		if (r->timeout_ms > 0)
			ws->deadline = ev_now(r->kd->loop) + (double)r->timeout_ms / 1000.0;
		snprintf(ws->sb_id, sizeof(ws->sb_id), "%s", r->sb->rec.id);
		ev_init(&ws->tick, on_tick);
		ws->tick.data = ws;
	}
	if (!ws || !(ws->s = scan_start(r->sb, &r->user, path, rec, inc, &stream_scan, ws))) {
		free(path);
		free(ws);
		crpc_stream_fail(r->c, CRPC_INTERNAL, "out of memory");
		return;
	}
	free(path);
	ws->next = r->kd->watch_streams;
	r->kd->watch_streams = ws;
	http_set_handler(r->c, &ws_ops, ws, 0);
}

void envd_watch_sandbox_down(struct kilnd *kd, const char *sb_id)
{
	struct envd_watcher *w = kd->watchers, *next;

	for (; w; w = next) {
		next = w->next;
		if (strcmp(w->sb_id, sb_id))
			continue;
		if (w->c) {
			http_set_handler(w->c, NULL, NULL, 0);
			crpc_respond_error(w->c, CRPC_UNAVAILABLE, "the sandbox stopped");
		}
		watcher_free(w);
	}
	for (struct watch_stream *ws = kd->watch_streams, *nx; ws; ws = nx) {
		nx = ws->next;
		if (!strcmp(ws->sb_id, sb_id))
			ws_end(ws, CRPC_UNAVAILABLE, "the sandbox stopped");
	}
}
