/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "jsonutil.h"

json_t *json_body(const struct http_req *req, char *err)
{
	json_error_t je;
	json_t *j;

	if (!buf_avail(&req->body))
		return json_object();
	j = json_loadb(buf_head(&req->body), buf_avail(&req->body), JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(err, JSON_ERR_LEN, "malformed JSON: %s (line %d, column %d)", je.text,
		         je.line, je.column);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		snprintf(err, JSON_ERR_LEN, "the request body must be a JSON object");
		return NULL;
	}
	return j;
}

void http_respond_json(struct http_conn *c, int status, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!s) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	http_respond(c, status, "application/json", NULL, s, strlen(s));
	free(s);
}

int json_get_int(json_t *obj, const char *key, long long min, long long max, long long def,
                 long long *out, char *err)
{
	json_t *v = json_object_get(obj, key);
	long long n;

	*out = def;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v))
		n = json_integer_value(v);
	else if (json_is_real(v) && json_real_value(v) > -9.2e18 && json_real_value(v) < 9.2e18 &&
	         json_real_value(v) == (double)(long long)json_real_value(v))
		n = (long long)json_real_value(
		    v); /* (the range first: the cast of a larger one is UB) */
	else {
		snprintf(err, JSON_ERR_LEN, "'%s' must be an integer", key);
		return -1;
	}
	if (n < min || n > max) {
		snprintf(err, JSON_ERR_LEN, "'%s' must be between %lld and %lld", key, min, max);
		return -1;
	}
	*out = n;
	return 0;
}

int json_get_str(json_t *obj, const char *key, size_t max_len, const char **out, char *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		snprintf(err, JSON_ERR_LEN, "'%s' must be a string", key);
		return -1;
	}
	if (json_string_length(v) > max_len ||
	    memchr(json_string_value(v), 0, json_string_length(v))) {
		snprintf(err, JSON_ERR_LEN, "'%s' is too long or holds a NUL byte", key);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

int json_get_bool(json_t *obj, const char *key, bool def, bool *out, char *err)
{
	json_t *v = json_object_get(obj, key);

	*out = def;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(err, JSON_ERR_LEN, "'%s' must be true or false", key);
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

int json_get_str_map(json_t *obj, const char *key, size_t max_entries, size_t max_bytes,
                     json_t **out, char *err)
{
	json_t *v = json_object_get(obj, key), *val;
	const char *k;
	size_t bytes = 0;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v)) {
		snprintf(err, JSON_ERR_LEN, "'%s' must be an object of strings", key);
		return -1;
	}
	if (json_object_size(v) > max_entries) {
		snprintf(err, JSON_ERR_LEN, "'%s' has more than %zu entries", key, max_entries);
		return -1;
	}
	json_object_foreach(v, k, val)
	{
		if (!json_is_string(val) ||
		    memchr(json_string_value(val), 0, json_string_length(val))) {
			snprintf(err, JSON_ERR_LEN, "'%s.%s' must be a string without NUL bytes",
			         key, k);
			return -1;
		}
		bytes += strlen(k) + json_string_length(val) + 2;
	}
	if (bytes > max_bytes) {
		snprintf(err, JSON_ERR_LEN, "'%s' is larger than %zu bytes", key, max_bytes);
		return -1;
	}
	*out = v;
	return 0;
}

/* Length of the valid UTF-8 sequence at p (n bytes left), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t len;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* no overlong forms, surrogates or code points past U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

json_t *json_lossy(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	struct buf b = {0};
	json_t *j;

	for (size_t i = 0; i < n; i++)
		if (!p[i])
			goto copy; /* jansson's strings may hold NUL; keep them as U+FFFD too */
	j = json_stringn(s, n);
	if (j)
		return j;
copy:
	for (size_t i = 0; i < n;) {
		size_t l = p[i] ? utf8_seq(p + i, n - i) : 0;

		if (l ? buf_append(&b, p + i, l) : buf_append(&b, "\xef\xbf\xbd", 3)) {
			buf_free(&b);
			return NULL;
		}
		i += l ? l : 1;
	}
	j = json_stringn(buf_avail(&b) ? buf_head(&b) : "", buf_avail(&b));
	buf_free(&b);
	return j;
}
