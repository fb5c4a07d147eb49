/* SPDX-License-Identifier: MIT */
/* The event log: what happened in each sandbox (lifecycle, exec, pty, envd
 * processes, file writes and removals), who asked, and the details of it.
 * Kept in kilnd's SQLite database past the sandbox's end
 * (--events-keep, --events-max), written in batches off the request path,
 * served paged (GET /sandboxes/{id}/events), live as Server-Sent Events
 * (GET /events, sse.c) and POSTed to a webhook (webhook.c). The JSON of
 * an event is in control/API.md, "Events". */
#ifndef KILND_EVENTS_H
#define KILND_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#define EVENTS_WHO_LEN  24   /* a key's id (auth/auth.h), "admin", "envd", "kilnd" */
#define EVENTS_TEXT_MAX 1024 /* a command line or path kept in an event */

struct kilnd;
struct sandbox;
struct http_req;
struct http_conn;
struct buf;

/* After the store is open: the event table, the webhook (dies with a
 * message on a bad --webhook). 0 or -errno. */
int events_init(struct kilnd *kd);
/* Writes what is pending, ends SSE streams and deliveries. */
void events_free(struct kilnd *kd);
/* Housekeeping: events past --events-keep go. */
void events_prune(struct kilnd *kd);

/* Who sent req: its key's id (auth/auth.h: "admin" for the operator's key
 * and the unix socket), or "envd" for the envd API (a sandbox's token). */
void events_who(struct kilnd *kd, const struct http_req *req, char out[EVENTS_WHO_LEN]);

/* Record an event of sandbox id `sandbox` of `type`, caused by `who`, with
 * details (an object whose reference is taken, or NULL). sb, when given,
 * names the event's owner (its tenant) and has its secrets' values
 * blotted out of the event; without it the event is the operator's only.
 * Never blocks. */
void events_add(struct kilnd *kd, const char *sandbox, const struct sandbox *sb, const char *type,
                const char *who, json_t *details);
/* The same for sb, by sb->actor (the last request that acted on it). */
void events_sb(struct sandbox *sb, const char *type, json_t *details);
/* From sb_save: a state change becomes an event (created, paused,
 * resumed, error). */
void events_sb_saved(struct sandbox *sb);

/* argv as one line an sh would read back, cut at EVENTS_TEXT_MAX. */
char *events_cmdline(const char *const *argv);
/* A path cut at EVENTS_TEXT_MAX, as a JSON string. */
json_t *events_text(const char *s);

/* Write the pending events now (before a query). 0 or -EIO. */
int events_flush(struct kilnd *kd);

/* GET /sandboxes/{id}/events (events_api.c). */
void events_api_list(struct kilnd *kd, struct http_conn *c, struct http_req *req,
                     const char *sandbox);
/* GET /events (sse.c). */
void events_sse(struct kilnd *kd, struct http_conn *c, struct http_req *req);
/* GET /metrics' lines of the event log, SSE and webhooks. */
void events_metrics(struct kilnd *kd, struct buf *b);

#endif
