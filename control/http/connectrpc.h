/* SPDX-License-Identifier: MIT */
/* The Connect protocol (connectrpc.com/docs/protocol), JSON codec only, as
 * the E2B SDK speaks it to envd over HTTP/1.1:
 *
 *  - unary: POST with Content-Type application/json and a JSON body; the
 *    answer is 200 application/json, or an error status with
 *    {"code":"not_found","message":"..."};
 *  - server streaming: POST application/connect+json whose body is one
 *    envelope; the answer is 200 application/connect+json carrying
 *    envelopes (1 byte flags, 4 bytes big-endian length, payload), the last
 *    with flags 0x02 and {} or {"error":{...}}. Errors of a streaming call,
 *    even before its first message, go into that last envelope. */
#ifndef KILND_CONNECTRPC_H
#define KILND_CONNECTRPC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "http.h"

enum crpc_code {
	CRPC_OK = 0,
	CRPC_CANCELED,
	CRPC_UNKNOWN,
	CRPC_INVALID_ARGUMENT,
	CRPC_DEADLINE_EXCEEDED,
	CRPC_NOT_FOUND,
	CRPC_ALREADY_EXISTS,
	CRPC_PERMISSION_DENIED,
	CRPC_RESOURCE_EXHAUSTED,
	CRPC_FAILED_PRECONDITION,
	CRPC_ABORTED,
	CRPC_OUT_OF_RANGE,
	CRPC_UNIMPLEMENTED,
	CRPC_INTERNAL,
	CRPC_UNAVAILABLE,
	CRPC_DATA_LOSS,
	CRPC_UNAUTHENTICATED,
};

#define CRPC_ENVELOPE_END 0x02

const char *crpc_code_name(int code);
/* The HTTP status the Connect spec pairs with a code. */
int crpc_code_status(int code);
/* The code for an errno the agent reported. */
int crpc_code_from_errno(int err);

/* Content-Type checks: unary JSON, streaming JSON. */
bool crpc_is_unary_json(const char *ctype);
bool crpc_is_stream_json(const char *ctype);

/* Unary answers. */
void crpc_respond(struct http_conn *c, json_t *msg); /* steals msg */
void crpc_respond_error(struct http_conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Streaming answers. */
void crpc_stream_start(struct http_conn *c);
/* One message (a JSON text). */
void crpc_stream_msg(struct http_conn *c, const char *json, size_t n);
/* The end-of-stream envelope (code CRPC_OK: no error), then the end of the
 * HTTP response. */
void crpc_stream_end(struct http_conn *c, int code, const char *msg);
/* A streaming call that fails before its first message. */
void crpc_stream_fail(struct http_conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Append one envelope to b. */
int crpc_envelope(struct buf *b, unsigned flags, const char *payload, size_t n);

/* The request message of a streaming call: exactly one uncompressed
 * envelope holding a JSON object. NULL with err set otherwise. */
json_t *crpc_parse_envelope(const char *p, size_t n, char *err, size_t errlen);

/* Connect-Timeout-Ms: 0 if absent, -1 if malformed, else milliseconds
 * (capped at UINT32_MAX). */
long long crpc_timeout_ms(const struct http_req *req);

/* proto3 JSON helpers. A uint32 field given as a number or a decimal
 * string; absent: def. -1 if present and malformed. */
int crpc_get_u32(json_t *obj, const char *key, unsigned long long max, unsigned long long def,
                 unsigned long long *out);
/* A field by its JSON name or its proto name (lowerCamelCase or
 * snake_case, both allowed by the proto3 JSON mapping). */
json_t *crpc_field(json_t *obj, const char *camel, const char *snake);

#endif
