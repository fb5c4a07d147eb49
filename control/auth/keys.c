/* SPDX-License-Identifier: MIT */
/* The operator's key and the tenants' keys (auth.h): checking a request's
 * key, and POST/GET/DELETE /keys. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/sha2.h>

#include "auth.h"
#include "http/jsonutil.h"
#include "kilnd.h"
#include "sandbox/store.h"
#include "util.h"

struct auth_key {
	struct auth_key *next;
	char id[24];
	char tenant[33];
	char *name;
	uint8_t hash[SHA256_DIGEST_SIZE];
	int64_t created_ms, revoked_ms, used_ms;
};

static void sha256_of(const char *s, uint8_t out[SHA256_DIGEST_SIZE])
{
	struct sha256_ctx h;

	sha256_init(&h);
	sha256_update(&h, strlen(s), (const uint8_t *)s);
	sha256_digest(&h, SHA256_DIGEST_SIZE, out);
}

static void hex_of(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static int unhex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

bool auth_tenant_ok(const char *name)
{
	size_t n = strlen(name);

	if (n < 1 || n > 32 ||
	    !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '-' || name[i] == '_'))
			return false;
	return true;
}

static int load_one(void *ctx, struct key_record *r)
{
	struct kilnd *kd = ctx;
	struct auth_key *k;

	if (strlen(r->id) >= sizeof(k->id) || !auth_tenant_ok(r->tenant)) {
		log_warn("store: API key %.40s: bad id or tenant, ignored", r->id);
		return 0;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	if (unhex(r->hash, k->hash, sizeof(k->hash))) {
		log_warn("store: API key %s: bad hash, ignored", r->id);
		free(k);
		return 0;
	}
	strcpy(k->id, r->id);
	strcpy(k->tenant, r->tenant);
	k->name = r->name ? strdup(r->name) : NULL;
	k->created_ms = r->created_ms;
	k->revoked_ms = r->revoked_ms;
	k->next = kd->keys;
	kd->keys = k;
	kd->nkeys++;
	return 0;
}

int auth_load(struct kilnd *kd)
{
	return store_key_load(kd->store, load_one, kd);
}

void auth_free(struct kilnd *kd)
{
	while (kd->keys) {
		struct auth_key *k = kd->keys;

		kd->keys = k->next;
		free(k->name);
		free(k);
	}
	kd->nkeys = 0;
}

bool auth_secret_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	/* constant time in the length of the secret */
	for (size_t i = 0; i < lb; i++)
		d |= (unsigned char)(a[i < la ? i : 0] ^ b[i]);
	return d == 0;
}

static struct auth_key *tenant_key(const struct kilnd *kd, const char *secret)
{
	uint8_t h[SHA256_DIGEST_SIZE];

	if (!kd->keys || strlen(secret) > 256)
		return NULL;
	sha256_of(secret, h);
	for (struct auth_key *k = kd->keys; k; k = k->next)
		if (!k->revoked_ms && !memcmp(k->hash, h, sizeof(h)))
			return k;
	return NULL;
}

static const char *presented(const struct http_req *req)
{
	const char *k = http_header(req, "X-API-Key"), *auth;

	if (k)
		return k;
	auth = http_header(req, "Authorization");
	return auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL;
}

bool auth_check(struct kilnd *kd, const struct http_req *req, struct http_who *who)
{
	return auth_check_secret(kd, req, presented(req), who);
}

bool auth_check_secret(struct kilnd *kd, const struct http_req *req, const char *secret,
                       struct http_who *who)
{
	struct auth_key *k;

	memset(who, 0, sizeof(*who));
	if (!req->tcp ||
	    (secret && kd->cfg.api_key && auth_secret_equal(secret, kd->cfg.api_key))) {
		/* the unix socket is guarded by its file mode */
		who->known = who->admin = true;
		strcpy(who->key_id, AUTH_ADMIN_ID);
		return true;
	}
	k = secret ? tenant_key(kd, secret) : NULL;
	if (!k)
		return false;
	k->used_ms = now_ms();
	who->known = true;
	strcpy(who->tenant, k->tenant);
	strcpy(who->key_id, k->id);
	return true;
}

bool auth_is_key(const struct kilnd *kd, const char *secret)
{
	return (kd->cfg.api_key && auth_secret_equal(secret, kd->cfg.api_key)) ||
	       tenant_key(kd, secret);
}

bool auth_owns(const struct http_who *who, const char *tenant)
{
	if (!who->known)
		return false;
	return who->admin || (tenant && !strcmp(tenant, who->tenant));
}

bool auth_may_use(const struct http_who *who, const char *tenant)
{
	return who->known && (!tenant || auth_owns(who, tenant));
}

const char *auth_tenant_of(const struct http_who *who)
{
	return who->admin || !who->tenant[0] ? NULL : who->tenant;
}

/* ---------------------------------------------------------------- /keys */

static json_t *key_json(const struct auth_key *k)
{
	char ts[32];
	json_t *j = json_pack("{s:s,s:s,s:s?}", "id", k->id, "tenant", k->tenant, "name", k->name);

	if (!j)
		return NULL;
	iso8601(k->created_ms, ts);
	json_object_set_new(j, "createdAt", json_string(ts));
	if (k->revoked_ms) {
		iso8601(k->revoked_ms, ts);
		json_object_set_new(j, "revokedAt", json_string(ts));
	} else {
		json_object_set_new(j, "revokedAt", json_null());
	}
	if (k->used_ms) {
		iso8601(k->used_ms, ts);
		json_object_set_new(j, "lastUsedAt", json_string(ts));
	} else {
		json_object_set_new(j, "lastUsedAt", json_null()); /* since kilnd started */
	}
	return j;
}

static int key_save(struct kilnd *kd, const struct auth_key *k)
{
	char hex[2 * SHA256_DIGEST_SIZE + 1];
	struct key_record r = {
	    .id = (char *)k->id,
	    .tenant = (char *)k->tenant,
	    .name = k->name,
	    .hash = hex,
	    .created_ms = k->created_ms,
	    .revoked_ms = k->revoked_ms,
	};

	hex_of(k->hash, sizeof(k->hash), hex);
	return store_key_put(kd->store, &r);
}

static void key_create(struct kilnd *kd, struct http_conn *c, json_t *body)
{
	char err[JSON_ERR_LEN] = "", secret[4 + 41], idhex[17];
	const char *tenant = NULL, *name = NULL;
	struct auth_key *k;
	json_t *j;

	if (json_get_str(body, "tenant", 32, &tenant, err) ||
	    json_get_str(body, "name", 128, &name, err)) {
		http_respond_error(c, 400, "%s", err);
		return;
	}
	if (!tenant || !auth_tenant_ok(tenant)) {
		http_respond_error(c, 400,
		                   "'tenant' is required: 1 to 32 of a-z, 0-9, '-' and '_', "
		                   "starting with a letter or digit");
		return;
	}
	if (kd->nkeys >= AUTH_MAX_KEYS) {
		http_respond_error(c, 507,
		                   "kilnd holds %d API keys, its limit: delete revoked ones "
		                   "(DELETE /keys/ID?purge=1) first",
		                   AUTH_MAX_KEYS);
		return;
	}
	k = calloc(1, sizeof(*k));
	if (!k || random_hex(secret + 4, 20) || random_hex(idhex, 8)) {
		free(k);
		http_respond_error(c, 500, "no randomness for a key");
		return;
	}
	/* the e2b_ prefix keeps E2B SDKs that check the key's format happy */
	memcpy(secret, "e2b_", 4);
	snprintf(k->id, sizeof(k->id), "key_%s", idhex);
	strcpy(k->tenant, tenant);
	k->name = name && *name ? strdup(name) : NULL;
	k->created_ms = now_ms();
	sha256_of(secret, k->hash);
	if (key_save(kd, k)) {
		http_respond_error(c, 500, "cannot store the key: %s", store_error(kd->store));
		free(k->name);
		free(k);
		return;
	}
	k->next = kd->keys;
	kd->keys = k;
	kd->nkeys++;
	log_info("API key %s created for tenant %s", k->id, k->tenant);
	j = key_json(k);
	if (j)
		json_object_set_new(j, "key", json_string(secret));
	http_respond_json(c, 201, j);
}

static void key_revoke(struct kilnd *kd, struct http_conn *c, const char *id, bool purge)
{
	struct auth_key **pp, *k;

	for (pp = &kd->keys; *pp && strcmp((*pp)->id, id); pp = &(*pp)->next)
		;
	k = *pp;
	if (!k) {
		http_respond_error(c, 404, "API key %.40s not found (kiln key ls)", id);
		return;
	}
	if (purge) {
		if (!k->revoked_ms) {
			http_respond_error(c, 409, "API key %s is valid: revoke it first", id);
			return;
		}
		if (store_key_delete(kd->store, k->id)) {
			http_respond_error(c, 500, "cannot delete the key: %s",
			                   store_error(kd->store));
			return;
		}
		*pp = k->next;
		kd->nkeys--;
		free(k->name);
		free(k);
		http_respond(c, 204, NULL, NULL, NULL, 0);
		return;
	}
	if (!k->revoked_ms) {
		k->revoked_ms = now_ms();
		if (key_save(kd, k)) {
			k->revoked_ms = 0;
			http_respond_error(c, 500, "cannot store the revocation: %s",
			                   store_error(kd->store));
			return;
		}
		log_info("API key %s of tenant %s revoked", k->id, k->tenant);
	}
	http_respond(c, 204, NULL, NULL, NULL, 0);
}

struct key_req {
	struct kilnd *kd;
	struct http_conn *c;
};

static void key_body(void *ctx)
{
	struct key_req *r = ctx;
	char err[JSON_ERR_LEN] = "";
	json_t *body;

	http_set_handler(r->c, NULL, NULL, 0);
	body = json_body(http_conn_req(r->c), err);
	if (!body)
		http_respond_error(r->c, 400, "%s", err);
	else
		key_create(r->kd, r->c, body);
	json_decref(body);
	free(r);
}

static void key_abort(void *ctx)
{
	free(ctx);
}

static const struct http_handler key_ops = {.on_complete = key_body, .on_abort = key_abort};

void auth_route(struct kilnd *kd, struct http_conn *c, struct http_req *req, char **seg, int n)
{
	int m = req->method;

	if (!req->who.admin) {
		http_respond_error(c, 403, "only the operator's key manages API keys");
		return;
	}
	if (n == 1 && m == HTTP_GET) {
		json_t *arr = json_array();

		for (struct auth_key *k = kd->keys; k && arr; k = k->next)
			json_array_append_new(arr, key_json(k));
		http_respond_json(c, 200, arr);
	} else if (n == 1 && m == HTTP_POST) {
		struct key_req *r = calloc(1, sizeof(*r));

		if (!r) {
			http_respond_error(c, 500, "out of memory");
			return;
		}
		r->kd = kd;
		r->c = c;
		http_set_handler(c, &key_ops, r, 4096);
	} else if (n == 2 && m == HTTP_DELETE) {
		char *purge = http_query_param(req, "purge");

		key_revoke(kd, c, seg[1], purge && !strcmp(purge, "1"));
		free(purge);
	} else if (n <= 2) {
		http_respond(c, 405, "application/json",
		             n == 1 ? "Allow: GET, POST\r\n" : "Allow: DELETE\r\n",
		             "{\"code\":405,\"message\":\"method not allowed\"}", 43);
	} else {
		http_respond_error(c, 404, "no such endpoint");
	}
}
