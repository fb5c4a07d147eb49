/* SPDX-License-Identifier: MIT */
/* JSON request parsing and response helpers on top of jansson. Each getter
 * checks the type and range of one optional field and writes a message for
 * a 400 answer into err. */
#ifndef KILND_JSONUTIL_H
#define KILND_JSONUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "http.h"

#define JSON_ERR_LEN 256

/* The body as a JSON object ({} if empty). NULL and err set if malformed. */
json_t *json_body(const struct http_req *req, char *err);
/* A JSON string of n bytes that may not be UTF-8 (file names, paths and
 * messages from the guest or a client): each byte of an invalid sequence
 * becomes U+FFFD. NULL only when out of memory. */
json_t *json_lossy(const char *s, size_t n);
/* Send j (reference stolen) as the response. */
void http_respond_json(struct http_conn *c, int status, json_t *j);

/* 0 on success (and when the key is absent: *out = def), -1 with err set. */
int json_get_int(json_t *obj, const char *key, long long min, long long max, long long def,
                 long long *out, char *err);
int json_get_str(json_t *obj, const char *key, size_t max_len, const char **out, char *err);
int json_get_bool(json_t *obj, const char *key, bool def, bool *out, char *err);
/* An object whose values are strings, bounded in entries and total bytes. */
int json_get_str_map(json_t *obj, const char *key, size_t max_entries, size_t max_bytes,
                     json_t **out, char *err);

#endif
