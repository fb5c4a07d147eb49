/* SPDX-License-Identifier: MIT */
/* The event log's queue and writer: an event gets its id at once, goes to
 * the SSE streams and the webhook at once, and to SQLite in a batch (one
 * transaction) EVENTS_FLUSH_S later, so a request never waits for a disk
 * write of its event. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events_int.h"
#include "http/buf.h"
#include "kilnd.h"
#include "sandbox/sandbox.h"
#include "util.h"

static void item_free(struct ev_item *it)
{
	free(it->body);
	free(it);
}

/* What --events-max allows: the oldest go, counted. */
static void bound(struct events *e)
{
	int64_t n;

	if (e->count <= (int64_t)e->kd->cfg.events_max)
		return;
	if (ev_db_keep_newest(e->db, (int64_t)e->kd->cfg.events_max, &n)) {
		log_warn("events: cannot drop the oldest events: %s", ev_db_error(e->db));
		return;
	}
	e->count -= n;
	e->dropped += (unsigned long long)n;
}

int events_flush(struct kilnd *kd)
{
	struct events *e = kd->events;
	struct ev_item *it;
	unsigned n = 0;

	if (!e || !e->head)
		return 0;
	ev_timer_stop(kd->loop, &e->flush_w);
	if (ev_db_begin(e->db))
		goto fail;
	for (it = e->head; it; it = it->next, n++)
		if (ev_db_insert(e->db, it->id, it->sandbox, it->tenant[0] ? it->tenant : NULL,
		                 it->time_ms, it->type, it->body))
			goto rollback;
	if (ev_db_commit(e->db))
		goto rollback;
	e->count += n;
	while ((it = e->head)) {
		e->head = it->next;
		item_free(it);
	}
	e->tail = NULL;
	e->npending = 0;
	if (e->failing)
		log_info("events: the event log is written again");
	e->failing = false;
	bound(e);
	return 0;
rollback:
	ev_db_rollback(e->db);
fail:
	/* Kept (up to EVENTS_PENDING_MAX) and tried again with the next one. */
	e->write_errors++;
	if (!e->failing)
		log_warn("events: cannot write %u events to the state store: %s (kept in memory, "
		         "up to %d, and tried again)",
		         e->npending, ev_db_error(e->db), EVENTS_PENDING_MAX);
	e->failing = true;
	return -EIO;
}

static void on_flush(struct ev_loop *loop, ev_timer *w, int revents)
{
	events_flush(w->data);
}

/* A secret's value, as it appears inside a JSON string, becomes [secret].
 * NULL (body freed) when memory runs out: the event is lost, not leaked. */
static char *redact(char *body, const char *value)
{
	json_t *j = json_string(value);
	char *enc = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL, *out;
	const char *needle, *p, *hit;
	struct buf b = {0};
	size_t nlen;

	json_decref(j);
	if (!enc) {
		free(body);
		return NULL;
	}
	nlen = strlen(enc);
	enc[nlen - 1] = 0; /* without its quotes */
	needle = enc + 1;
	nlen -= 2;
	/* too short to blot out without mangling the event's own words */
	if (nlen < 4 || !strstr(body, needle)) {
		free(enc);
		return body;
	}
	for (p = body; (hit = strstr(p, needle)); p = hit + nlen) {
		buf_append(&b, p, (size_t)(hit - p));
		buf_puts(&b, "[secret]");
	}
	buf_puts(&b, p);
	out = buf_strdup(&b);
	buf_free(&b);
	free(enc);
	free(body);
	return out;
}

static char *blot_secrets(char *body, const struct sandbox *sb)
{
	const char *k;
	json_t *v;

	if (!sb || !sb->secrets)
		return body;
	json_object_foreach(sb->secrets, k, v)
	{
		if (!body)
			break;
		body = redact(body, json_string_value(v));
	}
	return body;
}

void events_add(struct kilnd *kd, const char *sandbox, const struct sandbox *sb, const char *type,
                const char *who, json_t *details)
{
	struct events *e = kd->events;
	struct ev_item *it;
	char when[32];
	json_t *j;

	if (!e) {
		json_decref(details);
		return;
	}
	it = calloc(1, sizeof(*it));
	j = json_pack("{s:I,s:s,s:s,s:s,s:s}", "id", (json_int_t)e->next_id, "time", "", "sandbox",
	              sandbox, "type", type, "key", who && *who ? who : "kilnd");
	if (!it || !j) {
		free(it);
		json_decref(j);
		json_decref(details);
		e->dropped++;
		return;
	}
	it->id = e->next_id++;
	it->time_ms = now_ms();
	iso8601(it->time_ms, when);
	json_object_set_new(j, "time", json_string(when));
	if (details)
		json_object_update_missing(j, details);
	json_decref(details);
	snprintf(it->sandbox, sizeof(it->sandbox), "%s", sandbox);
	snprintf(it->tenant, sizeof(it->tenant), "%s", sb && sb->rec.tenant ? sb->rec.tenant : "");
	snprintf(it->type, sizeof(it->type), "%s", type);
	it->body = blot_secrets(json_dumps(j, JSON_COMPACT), sb);
	json_decref(j);
	if (!it->body) {
		free(it);
		e->dropped++;
		return;
	}
	e->recorded++;
	sse_push(e, it);
	webhook_push(e, it);
	if (e->npending >= EVENTS_PENDING_MAX) {
		struct ev_item *old = e->head;

		e->head = old->next;
		item_free(old);
		e->npending--;
		e->dropped++;
	}
	if (e->tail)
		e->tail->next = it;
	else
		e->head = it;
	e->tail = it;
	e->npending++;
	if (!ev_is_active(&e->flush_w)) {
		ev_timer_set(&e->flush_w, EVENTS_FLUSH_S, 0);
		ev_timer_start(kd->loop, &e->flush_w);
	}
}

int events_init(struct kilnd *kd)
{
	struct events *e = calloc(1, sizeof(*e));
	int64_t max_id;
	int rc;

	if (!e)
		return -ENOMEM;
	e->kd = kd;
	rc = ev_db_open(store_db(kd->store), &e->db);
	if (rc || ev_db_stats(e->db, &max_id, &e->count)) {
		log_err("events: cannot read the event log: %s",
		        e->db ? ev_db_error(e->db) : store_error(kd->store));
		ev_db_close(e->db);
		free(e);
		return -EIO;
	}
	e->next_id = max_id + 1;
	ev_init(&e->flush_w, on_flush);
	e->flush_w.data = kd;
	kd->events = e;
	rc = webhook_init(e);
	if (rc) {
		kd->events = NULL;
		ev_db_close(e->db);
		free(e);
		return rc;
	}
	events_prune(kd);
	return 0;
}

void events_prune(struct kilnd *kd)
{
	struct events *e = kd->events;
	int64_t n;

	if (!e)
		return;
	events_flush(kd);
	if (ev_db_drop_before(e->db, now_ms() - kd->cfg.events_keep_s * 1000, &n)) {
		log_warn("events: cannot drop old events: %s", ev_db_error(e->db));
		return;
	}
	e->count -= n;
	bound(e);
}

void events_free(struct kilnd *kd)
{
	struct events *e = kd->events;
	struct ev_item *it;

	if (!e)
		return;
	events_flush(kd);
	ev_timer_stop(kd->loop, &e->flush_w);
	sse_free_all(e);
	webhook_free(e);
	while ((it = e->head)) {
		e->head = it->next;
		item_free(it);
	}
	ev_db_close(e->db);
	free(e);
	kd->events = NULL;
}

static void put(struct buf *b, const char *name, const char *type, const char *help,
                unsigned long long v)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

void events_metrics(struct kilnd *kd, struct buf *b)
{
	struct events *e = kd->events;

	if (!e)
		return;
	put(b, "kiln_events_recorded_total", "counter", "Events recorded since kilnd started.",
	    e->recorded);
	put(b, "kiln_events_dropped_total", "counter",
	    "Events dropped: the oldest past --events-max, or not written in time.", e->dropped);
	put(b, "kiln_events_write_errors_total", "counter",
	    "Batches of events the state store refused (kept and tried again).", e->write_errors);
	put(b, "kiln_events_stored", "gauge", "Events in the event log.",
	    (unsigned long long)(e->count + e->npending));
	put(b, "kiln_sse_clients", "gauge", "Clients of GET /events.", e->nsse);
	put(b, "kiln_sse_dropped_total", "counter",
	    "GET /events clients dropped because they did not read (--sse-max-buffer).",
	    e->sse_dropped);
	webhook_metrics(e, b);
}
