/* SPDX-License-Identifier: MIT */
/* The proxies that join a client's HTTP request to one agent stream:
 * exec (NDJSON over chunked HTTP), pty (WebSocket) and files (raw bytes
 * both ways, JSON for the metadata operations). Each relays with
 * backpressure: when the far side's queue is above its high mark, the near
 * side stops reading until it drains. */
#ifndef KILND_PROXY_H
#define KILND_PROXY_H

#include <jansson.h>

#include "agent/agent_client.h"
#include "http/http.h"
#include "kilnd.h"
#include "sandbox/sandbox.h"

/* Open a stream to the sandbox's agent and queue HELLO (with hello_flags:
 * 0, or KILN_FRAME_REUSE for a stream that hands its connection back with
 * spare_reuse()). On failure the error is answered (409 not running, 503
 * unreachable) and NULL returned. */
struct agent_conn *proxy_open(struct kilnd *kd, struct http_conn *c, struct sandbox *sb,
                              uint32_t kind, uint16_t hello_flags, const struct agent_conn_ops *ops,
                              void *ctx);
/* HTTP status for an errno reported by the agent. */
int proxy_errno_status(uint32_t err);
/* Answer an agent ERROR frame (before any response was started): its text,
 * or "what: strerror(errno)" when it has none. */
void proxy_respond_agent_error(struct http_conn *c, const char *what, const uint8_t *p, uint32_t n);

void exec_start(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, json_t *body);
void pty_start(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb);
/* A WebSocket upgrade (version 13) is asked for: 0, else answered 426. */
int pty_ws_check(struct http_conn *c, struct http_req *req);
/* GET .../processes/{pid}/attach on a running sandbox (procs.h). */
void pty_attach(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb);

/* Called at headers time: the body is streamed to the agent. */
void files_put(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb);
void files_get(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb);
/* GET of an absolute path (also envd's GET /files). */
void files_read(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, const char *path);
/* The same as user (NULL: root) with KILN_USER_* flags (agent.h), for
 * envd: a user the sandbox does not have is a 401, as envd answers it. */
void files_read_as(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, const char *path,
                   const char *user, uint32_t user_flags);
void files_list(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb,
                bool stat_only);
/* op: KILN_FILE_MKDIR, _REMOVE or _RENAME, with its JSON body. */
void files_op(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, uint32_t op, json_t *body);

#endif
