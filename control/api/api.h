/* SPDX-License-Identifier: MIT */
/* The HTTP endpoints outside api.c: the list (api_list.c), create (api_create.c), pause, resume
 * and fork (api_pause.c), templates (template.c), and what they share with
 * api.c. Each answers the request on c, now or later. */
#ifndef KILND_API_H
#define KILND_API_H

#include <stdbool.h>

#include <jansson.h>

#include "http/http.h"
#include "kilnd.h"
#include "sandbox/sandbox.h"

/* Does the request carry a key kilnd knows (X-API-Key or a bearer token;
 * auth/auth.h) that may reach sb: the operator's, or sb's tenant's?
 * Requests on the unix socket need none (its file mode guards it). */
bool api_sb_key_ok(struct kilnd *kd, const struct http_req *req, const struct sandbox *sb);
/* The sandbox `id` if the router's authenticated req (req->who) may see it:
 * not a pool clone, and the caller's tenant's; else NULL (a 404). */
struct sandbox *api_sb_find(struct kilnd *kd, const struct http_req *req, const char *id);
/* Who req is (auth_check), by its key header or by the key its WebSocket
 * offers as a subprotocol (below): for the routes whose WebSocket kilnd
 * answers itself (the router's, CDP), never for those that pass the
 * request's headers on into the sandbox (ports). */
bool api_auth_ws(struct kilnd *kd, const struct http_req *req, struct http_who *who);
/* ws_auth.c: the key a browser's WebSocket offers as the subprotocol
 * "kiln-key.HEX" (into key, NUL-terminated; false if none fits), and the
 * header line that answers its "kiln" ("" when not offered). */
bool api_ws_offered_key(const struct http_req *req, char *key, size_t size);
const char *api_ws_protocol_header(const struct http_req *req);
/* The sandbox as create, connect and get answer it: with its envd access
 * token (the SDK sends it as X-Access-Token to the envd API) and traffic
 * token (E2B-Traffic-Access-Token, to the code interpreter's port). */
json_t *api_sandbox_json(struct kilnd *kd, const struct sandbox *sb);

/* GET /metrics, Prometheus's text format (metrics.c). */
void api_metrics(struct kilnd *kd, struct http_conn *c);
/* metrics.c, of a VMM process: utime + stime in seconds (< 0 if it cannot
 * be read); Rss and Pss in bytes (smaps_rollup; false if unreadable). */
double api_proc_cpu_seconds(int pid);
bool api_proc_memory(int pid, unsigned long long *rss, unsigned long long *pss);
/* The HTTP server's observer: a tagged request (enum api_op) was answered. */
void api_observe(void *kd, unsigned tag, int status, double seconds);
/* GET /sandboxes (v2: /v2/sandboxes, with its paging) (api_list.c). */
void api_list(struct kilnd *kd, struct http_conn *c, struct http_req *req, bool v2);
/* POST /sandboxes (api_create.c): 201 and the sandbox once it runs. */
void api_create(struct kilnd *kd, struct http_conn *c, json_t *body);
/* POST /sandboxes/{id}/pause: 204 once paused. */
void api_pause(struct kilnd *kd, struct http_conn *c, struct sandbox *sb);
/* POST /sandboxes/{id}/resume and .../connect: 201 and the sandbox once
 * resumed; connect answers 200 for a running one (and extends its
 * lifetime to at least "timeout"). */
void api_resume(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, json_t *body,
                bool connect);
/* POST /sandboxes/{id}/fork {"count","timeout"}: E2B's array of
 * {"sandbox"} or {"error"}, one per clone. */
void api_fork(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, json_t *body);

/* template.c: POST /templates, GET /templates[/{name}], DELETE. */
void api_template_create(struct kilnd *kd, struct http_conn *c, json_t *body);
void api_template_list(struct kilnd *kd, struct http_conn *c);
void api_template_get(struct kilnd *kd, struct http_conn *c, const char *name);
void api_template_delete(struct kilnd *kd, struct http_conn *c, const char *name);

#endif
