/* SPDX-License-Identifier: MIT */
/* Who a request is: the operator, or a tenant by one of its API keys.
 *
 * The operator holds kilnd's own key (--api-key, DATA_DIR/api-key) and the
 * unix socket: it sees and controls everything and manages the tenants'
 * keys. A tenant's key (POST /keys) sees and controls only the sandboxes and
 * templates made with one of that tenant's keys, and uses the operator's
 * templates and every image. Keys are kept as SHA-256 hashes (they are 160
 * random bits: a slow hash adds nothing); the secret is shown once. */
#ifndef KILND_AUTH_H
#define KILND_AUTH_H

#include <stdbool.h>

#include <jansson.h>

#include "http/http.h"

#define AUTH_MAX_KEYS 1024
#define AUTH_ADMIN_ID "admin" /* the operator key's id in events and logs */

struct kilnd;

/* Load the tenants' keys from the store. 0, or -errno. */
int auth_load(struct kilnd *kd);
void auth_free(struct kilnd *kd);

/* Check req's key (X-API-Key or Authorization: Bearer); fill *who. */
bool auth_check(struct kilnd *kd, const struct http_req *req, struct http_who *who);
/* The same for a secret req presented otherwise (NULL: none), e.g. as a
 * WebSocket subprotocol (api/ws_auth.c). */
bool auth_check_secret(struct kilnd *kd, const struct http_req *req, const char *secret,
                       struct http_who *who);
/* A key kilnd knows (the operator's or a valid tenant's): kilnd's own
 * credentials are never passed on to a sandbox's servers. */
bool auth_is_key(const struct kilnd *kd, const char *secret);
/* who may see and control a thing owned by `tenant` (NULL: the operator). */
bool auth_owns(const struct http_who *who, const char *tenant);
/* who may start clones of a template owned by `tenant`. */
bool auth_may_use(const struct http_who *who, const char *tenant);
/* What a thing made by who is owned by: NULL for the operator. */
const char *auth_tenant_of(const struct http_who *who);
/* a == b for a secret b, in time that depends on b's length only */
bool auth_secret_equal(const char *a, const char *b);
/* Tenant names: 1-32 of [a-z0-9_-], starting with a letter or digit. */
bool auth_tenant_ok(const char *name);

/* POST /keys, GET /keys, DELETE /keys/ID (the operator only). */
void auth_route(struct kilnd *kd, struct http_conn *c, struct http_req *req, char **seg, int n);

#endif
