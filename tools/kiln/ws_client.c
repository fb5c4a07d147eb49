/* SPDX-License-Identifier: MIT */
/* The client's side of a WebSocket handshake with kilnd (kiln shell,
 * port-forward, browser). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <http_parser.h>

#include "http/ws.h"
#include "kiln.h"

struct hs {
	int status;
	bool done;
	char field[64];
	int flen;
	bool is_accept;
	char accept[64];
	int alen;
};

static int hs_field(http_parser *p, const char *at, size_t n)
{
	struct hs *h = p->data;

	if (h->flen + (int)n < (int)sizeof(h->field)) {
		memcpy(h->field + h->flen, at, n);
		h->flen += (int)n;
	}
	h->field[h->flen] = 0;
	return 0;
}

static int hs_value(http_parser *p, const char *at, size_t n)
{
	struct hs *h = p->data;

	if (h->flen) {
		h->is_accept = !strcasecmp(h->field, "Sec-WebSocket-Accept");
		h->flen = 0;
	}
	if (h->is_accept && h->alen + (int)n < (int)sizeof(h->accept)) {
		memcpy(h->accept + h->alen, at, n);
		h->alen += (int)n;
		h->accept[h->alen] = 0;
	}
	return 0;
}

static int hs_done(http_parser *p)
{
	struct hs *h = p->data;

	h->status = p->status_code;
	h->done = true;
	return 1; /* no body for 101; for errors we read it below */
}

int kc_ws_handshake(struct kc *k, int fd, struct ws *ws, const char *path, const char *what)
{
	static http_parser_settings settings = {
	    .on_header_field = hs_field,
	    .on_header_value = hs_value,
	    .on_headers_complete = hs_done,
	};
	char key[25], want[29], req[2048], buf[16384];
	struct hs h = {0};
	http_parser parser;
	size_t have = 0, used = 0;
	int n;

	if (ws_client_key(key) || ws_accept_key(key, want))
		return -1;
	n = snprintf(req, sizeof(req),
	             "GET %s HTTP/1.1\r\nHost: kilnd\r\n"
	             "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
	             "Sec-WebSocket-Key: %s\r\n%s%s%s%s\r\n",
	             path, key, k->api_key ? "X-API-Key: " : "", k->api_key ? k->api_key : "",
	             k->api_key ? "\r\n" : "", k->ws_headers ? k->ws_headers : "");
	if (n < 0 || (size_t)n >= sizeof(req) || kc_send_all(fd, req, (size_t)n))
		return -1;
	while (!h.done) {
		ssize_t r = recv(fd, buf + have, sizeof(buf) - have, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (have += (size_t)r) == sizeof(buf)) {
			fprintf(stderr, "kiln: kilnd closed the connection during the handshake\n");
			return -1;
		}
		http_parser_init(&parser, HTTP_RESPONSE);
		parser.data = &h;
		memset(&h, 0, sizeof(h));
		used = http_parser_execute(&parser, &settings, buf, have);
		if (!h.done && HTTP_PARSER_ERRNO(&parser) != HPE_OK) {
			fprintf(stderr, "kiln: bad handshake answer from kilnd\n");
			return -1;
		}
	}
	if (h.status != 101) {
		char *body;
		json_t *j = NULL;

		buf[have < sizeof(buf) ? have : sizeof(buf) - 1] = 0;
		body = strstr(buf, "\r\n\r\n");
		if (body)
			j = json_loads(body + 4, JSON_DISABLE_EOF_CHECK, NULL);
		if (!k->quiet_errors)
			fprintf(stderr, "kiln: %s\n",
			        json_string_value(json_object_get(j, "message"))
			            ?: what ? what
			                    : "kilnd refused the WebSocket");
		json_decref(j);
		return -1;
	}
	if (strcmp(h.accept, want)) {
		fprintf(stderr, "kiln: bad Sec-WebSocket-Accept from kilnd\n");
		return -1;
	}
	if (used < have && ws_feed(ws, (uint8_t *)buf + used, have - used))
		return -1;
	return 0;
}
