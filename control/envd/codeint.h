/* SPDX-License-Identifier: MIT */
/* The code interpreter (E2B's port 49999): codeint.c runs the Python
 * processes of code contexts, codeint_api.c serves the HTTP API. */
#ifndef KILND_CODEINT_H
#define KILND_CODEINT_H

#include <jansson.h>

#include "http/http.h"
#include "kilnd.h"
#include "sandbox/sandbox.h"

#define CI_PORT       49999
#define CI_DEFAULT_ID "default-python"

/* A request that envd_route() found addressed to port CI_PORT, for sb
 * (running or wakeable; the access token, if sent, checked). */
void codeint_route(struct http_conn *c, struct http_req *req, struct kilnd *kd, struct sandbox *sb);
/* The sandbox stopped: its contexts end. */
void codeint_sandbox_down(struct kilnd *kd, const char *sb_id);

/* codeint.c, for codeint_api.c; sb is running. Each returns 0 when c will
 * be answered, else the HTTP status to answer with (404 no such context,
 * 429 too many contexts or queued executions, 500 out of memory). */
/* line: the kernel's request (malloc'd, with its '\n'), taken on success. */
int ci_execute(struct kilnd *kd, struct sandbox *sb, struct http_conn *c, const char *ctx_id,
               char *line);
int ci_context_create(struct kilnd *kd, struct sandbox *sb, struct http_conn *c, const char *cwd);
int ci_context_restart(struct kilnd *kd, struct sandbox *sb, struct http_conn *c, const char *id);
int ci_context_remove(struct kilnd *kd, const char *sb_id, const char *id, struct http_conn *c);
bool ci_context_exists(struct kilnd *kd, const char *sb_id, const char *id);
json_t *ci_context_list(struct kilnd *kd, const char *sb_id);

#endif
