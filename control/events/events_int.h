/* SPDX-License-Identifier: MIT */
/* Inside the event log: its state, shared by events.c, sse.c, webhook.c. */
#ifndef KILND_EVENTS_INT_H
#define KILND_EVENTS_INT_H

#include <ev.h>

#include "auth/auth.h"
#include "events.h"
#include "events_db.h"
#include "sandbox/store.h"

#define EVENTS_PENDING_MAX 4096 /* not yet written; past it the oldest go */
#define EVENTS_FLUSH_S     0.05

struct ev_item {
	struct ev_item *next;
	int64_t id, time_ms;
	char sandbox[SB_ID_LEN + 1];
	char tenant[33]; /* its owner (auth/auth.h), "" for the operator */
	char type[32];
	char *body; /* the event's JSON */
};

struct sse_client;
struct webhook;

struct events {
	struct kilnd *kd;
	struct ev_db *db;
	int64_t next_id, count;
	unsigned long long recorded, dropped, write_errors;
	struct ev_item *head, *tail;
	unsigned npending;
	ev_timer flush_w;
	bool failing; /* the last write failed (logged once) */

	struct sse_client *sse; /* sse.c */
	unsigned nsse;
	unsigned long long sse_dropped, sse_served;
	ev_timer heartbeat;

	struct webhook *wh; /* webhook.c, NULL without --webhook */
};

/* sse.c */
void sse_push(struct events *e, const struct ev_item *it);
void sse_free_all(struct events *e);
/* Does the event of `type` pass a comma-separated list (NULL: all)? */
bool events_type_in(const char *types, const char *type);
/* A ?type= list: names of [a-z._], at most 16 of them; else NULL and err. */
int events_types_ok(const char *types, char *err, size_t n);

/* webhook.c */
int webhook_init(struct events *e);
void webhook_push(struct events *e, const struct ev_item *it);
void webhook_free(struct events *e);
void webhook_metrics(struct events *e, struct buf *b);

#endif
