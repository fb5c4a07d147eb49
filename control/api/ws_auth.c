/* SPDX-License-Identifier: MIT */
/* The API key on a browser's WebSocket. A page's JavaScript cannot set
 * headers on a WebSocket, and the console keeps no cookie (a cookie alone
 * would let any other site's page open the terminal: WebSockets are not
 * held to the same-origin policy). So the console offers two subprotocols,
 * "kiln" and "kiln-key.HEX" (the key in hex, which any key fits in as a
 * header token); kilnd takes the second as the key and answers the first. */
#include <ctype.h>
#include <string.h>

#include "api.h"

#define WS_PROTO      "kiln"
#define WS_KEY_PREFIX "kiln-key."

/* A hex digit's value, or -1 (lower or upper case). */
static int hexdigit(char ch)
{
	static const char digits[] = "0123456789abcdef";
	const char *p = ch ? memchr(digits, tolower((unsigned char)ch), 16) : NULL;

	return p ? (int)(p - digits) : -1;
}

/* Calls fn on each token of the comma-separated header value until it
 * returns true. */
static bool each_token(const char *v, bool (*fn)(const char *t, size_t n, void *ctx), void *ctx)
{
	while (v && *v) {
		size_t n;

		v += strspn(v, " \t,");
		n = strcspn(v, " \t,");
		if (n && fn(v, n, ctx))
			return true;
		v += n;
	}
	return false;
}

struct key_out {
	char *key;
	size_t size;
};

static bool key_token(const char *t, size_t n, void *ctx)
{
	struct key_out *o = ctx;
	size_t plen = strlen(WS_KEY_PREFIX), hlen = n - plen;

	if (n <= plen || strncmp(t, WS_KEY_PREFIX, plen) || hlen % 2 || hlen / 2 >= o->size)
		return false;
	t += plen;
	for (size_t i = 0; i < hlen / 2; i++) {
		int hi = hexdigit(t[2 * i]), lo = hexdigit(t[2 * i + 1]);

		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return false;
		o->key[i] = (char)(hi << 4 | lo);
	}
	o->key[hlen / 2] = 0;
	return true;
}

bool api_ws_offered_key(const struct http_req *req, char *key, size_t size)
{
	struct key_out o = {key, size};

	if (!req->upgrade || size == 0)
		return false;
	return each_token(http_header(req, "Sec-WebSocket-Protocol"), key_token, &o);
}

static bool proto_token(const char *t, size_t n, void *ctx)
{
	return n == strlen(WS_PROTO) && !strncmp(t, WS_PROTO, n);
}

const char *api_ws_protocol_header(const struct http_req *req)
{
	if (req && each_token(http_header(req, "Sec-WebSocket-Protocol"), proto_token, NULL))
		return "Sec-WebSocket-Protocol: " WS_PROTO "\r\n";
	return "";
}
