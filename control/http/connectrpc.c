/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "connectrpc.h"

static const struct {
	const char *name;
	int status;
} codes[] = {
    [CRPC_OK] = {"ok", 200},
    [CRPC_CANCELED] = {"canceled", 499},
    [CRPC_UNKNOWN] = {"unknown", 500},
    [CRPC_INVALID_ARGUMENT] = {"invalid_argument", 400},
    [CRPC_DEADLINE_EXCEEDED] = {"deadline_exceeded", 504},
    [CRPC_NOT_FOUND] = {"not_found", 404},
    [CRPC_ALREADY_EXISTS] = {"already_exists", 409},
    [CRPC_PERMISSION_DENIED] = {"permission_denied", 403},
    [CRPC_RESOURCE_EXHAUSTED] = {"resource_exhausted", 429},
    [CRPC_FAILED_PRECONDITION] = {"failed_precondition", 400},
    [CRPC_ABORTED] = {"aborted", 409},
    [CRPC_OUT_OF_RANGE] = {"out_of_range", 400},
    [CRPC_UNIMPLEMENTED] = {"unimplemented", 501},
    [CRPC_INTERNAL] = {"internal", 500},
    [CRPC_UNAVAILABLE] = {"unavailable", 503},
    [CRPC_DATA_LOSS] = {"data_loss", 500},
    [CRPC_UNAUTHENTICATED] = {"unauthenticated", 401},
};

const char *crpc_code_name(int code)
{
	if (code < 0 || code > CRPC_UNAUTHENTICATED)
		code = CRPC_UNKNOWN;
	return codes[code].name;
}

int crpc_code_status(int code)
{
	if (code < 0 || code > CRPC_UNAUTHENTICATED)
		code = CRPC_UNKNOWN;
	return codes[code].status;
}

int crpc_code_from_errno(int err)
{
	switch (err) {
	case ENOENT:
		return CRPC_NOT_FOUND;
	case EEXIST:
		return CRPC_ALREADY_EXISTS;
	case EACCES:
	case EPERM:
	case EROFS:
		return CRPC_PERMISSION_DENIED;
	case EISDIR:
	case ENOTDIR:
	case EINVAL:
	case ENAMETOOLONG:
	case ELOOP:
	case EXDEV:
	case ENOTEMPTY:
		return CRPC_INVALID_ARGUMENT;
	case EBUSY:
	case ENOSPC:
	case EDQUOT:
	case E2BIG:
	case EFBIG:
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		return CRPC_RESOURCE_EXHAUSTED;
	case ETIMEDOUT:
		return CRPC_DEADLINE_EXCEEDED;
	default:
		return CRPC_INTERNAL;
	}
}

static bool ctype_is(const char *ctype, const char *want)
{
	size_t wl = strlen(want);
	const char *rest;

	if (!ctype || strncasecmp(ctype, want, wl))
		return false;
	rest = ctype + wl;
	if (!*rest)
		return true;
	/* "; charset=utf-8" is allowed, nothing else */
	if (*rest++ != ';')
		return false;
	while (*rest == ' ')
		rest++;
	return !strcasecmp(rest, "charset=utf-8") || !strcasecmp(rest, "charset=utf8");
}

bool crpc_is_unary_json(const char *ctype)
{
	return ctype_is(ctype, "application/json");
}

bool crpc_is_stream_json(const char *ctype)
{
	return ctype_is(ctype, "application/connect+json");
}

void crpc_respond(struct http_conn *c, json_t *msg)
{
	char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;

	json_decref(msg);
	if (!s) {
		crpc_respond_error(c, CRPC_INTERNAL, "out of memory");
		return;
	}
	http_respond(c, 200, "application/json", NULL, s, strlen(s));
	free(s);
}

static json_t *error_json(int code, const char *msg)
{
	return json_pack("{s:s,s:s}", "code", crpc_code_name(code), "message", msg);
}

void crpc_respond_error(struct http_conn *c, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	json_t *j;
	char *s;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	j = error_json(code, msg);
	s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!s) {
		http_respond(c, 500, "application/json", NULL,
		             "{\"code\":\"internal\",\"message\":\"out of memory\"}", 46);
		return;
	}
	http_respond(c, crpc_code_status(code), "application/json", NULL, s, strlen(s));
	free(s);
}

int crpc_envelope(struct buf *b, unsigned flags, const char *payload, size_t n)
{
	unsigned char hdr[5] = {(unsigned char)flags, (unsigned char)(n >> 24),
	                        (unsigned char)(n >> 16), (unsigned char)(n >> 8),
	                        (unsigned char)n};

	if (n > UINT32_MAX)
		return -1;
	return buf_append(b, hdr, sizeof(hdr)) || buf_append(b, payload, n) ? -1 : 0;
}

void crpc_stream_start(struct http_conn *c)
{
	http_stream_start(c, 200, "application/connect+json", "Cache-Control: no-store\r\n");
}

void crpc_stream_msg(struct http_conn *c, const char *json, size_t n)
{
	struct buf b = {0};

	if (!crpc_envelope(&b, 0, json, n))
		http_stream_write(c, buf_head(&b), buf_avail(&b));
	buf_free(&b);
}

void crpc_stream_end(struct http_conn *c, int code, const char *msg)
{
	struct buf b = {0};
	char *s = NULL;

	if (code != CRPC_OK) {
		json_t *j = json_pack("{s:o}", "error", error_json(code, msg ? msg : ""));

		s = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
	}
	if (!crpc_envelope(&b, CRPC_ENVELOPE_END, s ? s : "{}", s ? strlen(s) : 2))
		http_stream_write(c, buf_head(&b), buf_avail(&b));
	buf_free(&b);
	free(s);
	http_stream_end(c);
}

void crpc_stream_fail(struct http_conn *c, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	crpc_stream_start(c);
	crpc_stream_end(c, code, msg);
}

json_t *crpc_parse_envelope(const char *p, size_t n, char *err, size_t errlen)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t len;
	json_t *j;
	json_error_t je;

	if (n < 5) {
		snprintf(err, errlen, "the request is not a Connect envelope");
		return NULL;
	}
	if (u[0] & 0x01) {
		snprintf(err, errlen, "compressed messages are not supported");
		return NULL;
	}
	if (u[0]) {
		snprintf(err, errlen, "unexpected envelope flags 0x%02x", u[0]);
		return NULL;
	}
	len = (size_t)u[1] << 24 | (size_t)u[2] << 16 | (size_t)u[3] << 8 | u[4];
	if (len != n - 5) {
		snprintf(err, errlen, "a server-streaming request holds exactly one message");
		return NULL;
	}
	j = json_loadb(p + 5, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(err, errlen, "malformed JSON: %s", je.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		snprintf(err, errlen, "the message must be a JSON object");
		return NULL;
	}
	return j;
}

long long crpc_timeout_ms(const struct http_req *req)
{
	const char *v = http_header(req, "Connect-Timeout-Ms");
	unsigned long long ms = 0;
	size_t n;

	if (!v)
		return 0;
	n = strlen(v);
	/* the spec allows at most 10 digits */
	if (!n || n > 10)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)v[i]))
			return -1;
		ms = ms * 10 + (unsigned)(v[i] - '0');
	}
	return ms > UINT32_MAX ? UINT32_MAX : (long long)ms;
}

json_t *crpc_field(json_t *obj, const char *camel, const char *snake)
{
	json_t *v = json_object_get(obj, camel);

	if (!v && snake)
		v = json_object_get(obj, snake);
	return json_is_null(v) ? NULL : v;
}

int crpc_get_u32(json_t *obj, const char *key, unsigned long long max, unsigned long long def,
                 unsigned long long *out)
{
	json_t *v = json_object_get(obj, key);

	*out = def;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0 || (unsigned long long)i > max)
			return -1;
		*out = (unsigned long long)i;
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;
		unsigned long long u;

		if (!*s || !isdigit((unsigned char)*s))
			return -1;
		errno = 0;
		u = strtoull(s, &end, 10);
		if (*end || errno || u > max)
			return -1;
		*out = u;
		return 0;
	}
	return -1;
}
