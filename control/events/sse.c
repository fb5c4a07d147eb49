/* SPDX-License-Identifier: MIT */
/* GET /events: the events as Server-Sent Events. A client that names a
 * Last-Event-ID is first sent what the store kept after it (a batch at a
 * time, as its connection drains), then goes live; a live client whose
 * unread output passes --sse-max-buffer is dropped (it may reconnect with
 * Last-Event-ID), never buffered without bound. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events_int.h"
#include "http/http.h"
#include "kilnd.h"
#include "util.h"

#define SSE_MAX_CLIENTS  256
#define SSE_REPLAY_BATCH 256
#define SSE_TYPES_MAX    16
#define SSE_SNDBUF       (32 << 10)
#define LIT_KEEPALIVE    ": keep-alive\n\n"

struct sse_client {
	struct sse_client *next;
	struct events *e;
	struct http_conn *c;
	char sandbox[SB_ID_LEN + 1]; /* "" for all */
	char *types;                 /* NULL for all */
	struct http_who who;         /* sees what it owns */
	int64_t cursor;              /* the last event id sent or passed over */
	bool live;
};

bool events_type_in(const char *types, const char *type)
{
	size_t n = strlen(type);

	if (!types)
		return true;
	for (const char *p = types; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && !memcmp(p, type, n))
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

int events_types_ok(const char *types, char *err, size_t n)
{
	unsigned count = 1;

	for (const char *p = types; *p; p++) {
		if (*p == ',')
			count++;
		else if (!strchr("abcdefghijklmnopqrstuvwxyz._", *p))
			goto bad;
	}
	if (*types && count <= SSE_TYPES_MAX && strlen(types) <= 512)
		return 0;
bad:
	snprintf(err, n,
	         "'type' must be a comma-separated list of at most %d event types, such as "
	         "exec.finished,sandbox.paused",
	         SSE_TYPES_MAX);
	return -1;
}

static bool wants(const struct sse_client *cl, const char *sandbox, const char *tenant,
                  const char *type)
{
	return (!cl->sandbox[0] || !strcmp(cl->sandbox, sandbox)) &&
	       events_type_in(cl->types, type) && auth_owns(&cl->who, tenant);
}

static void send_event(struct sse_client *cl, int64_t id, const char *body)
{
	char head[48];
	int n = snprintf(head, sizeof(head), "id: %lld\ndata: ", (long long)id);

	http_stream_write(cl->c, head, (size_t)n);
	http_stream_write(cl->c, body, strlen(body));
	http_stream_write(cl->c, "\n\n", 2);
}

static void client_free(struct sse_client *cl)
{
	struct events *e = cl->e;

	for (struct sse_client **pp = &e->sse; *pp; pp = &(*pp)->next) {
		if (*pp == cl) {
			*pp = cl->next;
			e->nsse--;
			break;
		}
	}
	if (!e->sse)
		ev_timer_stop(e->kd->loop, &e->heartbeat);
	free(cl->types);
	free(cl);
}

static bool replay_row(void *ctx, const struct ev_row *r)
{
	struct sse_client *cl = ctx;

	if (wants(cl, r->sandbox, r->tenant, r->type))
		send_event(cl, r->id, r->body);
	return http_out_pending(cl->c) >= HTTP_OUT_HIGH;
}

/* Catch up from the store while the connection takes it; then live. */
static void pump(void *ctx)
{
	struct sse_client *cl = ctx;
	struct events *e = cl->e;
	int64_t last;

	while (!cl->live && http_out_pending(cl->c) < HTTP_OUT_HIGH) {
		events_flush(e->kd);
		if (ev_db_after(e->db, cl->cursor, SSE_REPLAY_BATCH, replay_row, cl, &last)) {
			log_warn("events: cannot read the event log for GET /events: %s",
			         ev_db_error(e->db));
			http_stream_end(cl->c);
			client_free(cl);
			return;
		}
		if (last == cl->cursor) {
			/* the store has no more: what is not written yet, then live */
			for (struct ev_item *it = e->head; it; it = it->next)
				if (it->id > cl->cursor &&
				    wants(cl, it->sandbox, it->tenant[0] ? it->tenant : NULL,
				          it->type))
					send_event(cl, it->id, it->body);
			cl->cursor = e->next_id - 1;
			cl->live = true;
			break;
		}
		cl->cursor = last;
	}
}

static void drop(struct sse_client *cl)
{
	log_info("events: dropping a GET /events client: %zu bytes unread, more than "
	         "--sse-max-buffer (%llu); it may reconnect with Last-Event-ID: %lld",
	         http_out_pending(cl->c), cl->e->kd->cfg.sse_max_buf, (long long)cl->cursor);
	cl->e->sse_dropped++;
	http_abort(cl->c); /* its handler is not called: freed here */
	client_free(cl);
}

void sse_push(struct events *e, const struct ev_item *it)
{
	struct sse_client *cl, *next;

	for (cl = e->sse; cl; cl = next) {
		next = cl->next;
		if (!cl->live || it->id <= cl->cursor)
			continue; /* catching up: the store has it */
		cl->cursor = it->id;
		if (!wants(cl, it->sandbox, it->tenant[0] ? it->tenant : NULL, it->type))
			continue;
		send_event(cl, it->id, it->body);
		if (http_out_pending(cl->c) > e->kd->cfg.sse_max_buf)
			drop(cl);
	}
}

static void on_heartbeat(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct events *e = w->data;
	struct sse_client *cl, *next;

	for (cl = e->sse; cl; cl = next) {
		next = cl->next;
		http_stream_write(cl->c, LIT_KEEPALIVE, sizeof(LIT_KEEPALIVE) - 1);
		if (cl->live && http_out_pending(cl->c) > e->kd->cfg.sse_max_buf)
			drop(cl);
	}
}

static void on_abort(void *ctx)
{
	client_free(ctx);
}

static const struct http_handler sse_ops = {.on_drain = pump, .on_abort = on_abort};

/* Last-Event-ID (the header EventSource sends) or ?lastEventId=; -1: none. */
static int last_event_id(struct http_req *req, int64_t *out)
{
	const char *h = http_header(req, "Last-Event-ID");
	char *q = h ? NULL : http_query_param(req, "lastEventId"), *end;
	const char *v = h ? h : q;
	long long x;

	*out = -1;
	if (!v)
		return 0;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < 0) {
		free(q);
		return -1;
	}
	free(q);
	*out = x;
	return 0;
}

void events_sse(struct kilnd *kd, struct http_conn *c, struct http_req *req)
{
	struct events *e = kd->events;
	struct sse_client *cl;
	char *sandbox = http_query_param(req, "sandbox"), *types = http_query_param(req, "type");
	char err[160];
	int64_t last;

	if (!e) {
		http_respond_error(c, 503, "the event log is not open");
		goto out;
	}
	if (sandbox && !name_ok(sandbox)) {
		http_respond_error(c, 400, "'sandbox' must be a sandbox id");
		goto out;
	}
	if (types && events_types_ok(types, err, sizeof(err))) {
		http_respond_error(c, 400, "%s", err);
		goto out;
	}
	if (last_event_id(req, &last)) {
		http_respond_error(c, 400, "Last-Event-ID must be the id of an event (an integer)");
		goto out;
	}
	if (e->nsse >= SSE_MAX_CLIENTS) {
		static const char busy[] =
		    "{\"code\":503,\"message\":\"too many GET /events streams "
		    "(256); try again later\"}";

		http_respond(c, 503, "application/json", "Retry-After: 1\r\n", busy,
		             sizeof(busy) - 1);
		goto out;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		http_respond_error(c, 500, "out of memory");
		goto out;
	}
	cl->e = e;
	cl->c = c;
	cl->who = req->who;
	snprintf(cl->sandbox, sizeof(cl->sandbox), "%s", sandbox ? sandbox : "");
	cl->types = types;
	types = NULL;
	cl->live = last < 0;
	cl->cursor = last < 0 ? e->next_id - 1 : last;
	cl->next = e->sse;
	e->sse = cl;
	e->nsse++;
	e->sse_served++;
	if (!ev_is_active(&e->heartbeat)) {
		ev_timer_init(&e->heartbeat, on_heartbeat, kd->cfg.sse_heartbeat,
		              kd->cfg.sse_heartbeat);
		e->heartbeat.data = e;
		ev_timer_start(kd->loop, &e->heartbeat);
	}
	/* what a client leaves unread is ours to count, not the kernel's */
	http_conn_sndbuf(c, SSE_SNDBUF);
	http_stream_start(c, 200, "text/event-stream; charset=utf-8",
	                  "Cache-Control: no-store\r\nX-Accel-Buffering: no\r\n");
	/* the stream is open even before the first event */
	http_stream_write(c, "retry: 2000\n\n", 13);
	http_set_handler(c, &sse_ops, cl, 0);
	pump(cl);
out:
	free(sandbox);
	free(types);
}

void sse_free_all(struct events *e)
{
	while (e->sse) {
		struct sse_client *cl = e->sse;

		http_stream_end(cl->c);
		client_free(cl);
	}
	ev_timer_stop(e->kd->loop, &e->heartbeat);
}
