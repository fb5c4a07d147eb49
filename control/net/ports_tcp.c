/* SPDX-License-Identifier: MIT */
/* GET /sandboxes/{id}/tcp/{port}: a raw TCP connection to a port of the
 * sandbox, over a WebSocket (what `kiln port-forward` speaks). Binary
 * messages carry the bytes, both ways. The text message "eof" is a
 * half-close, both ways: the client has no more to send (the guest's
 * socket is shut for writing), or the guest's side sent all it will. The
 * connection closes (1000) once both sides are done, or on any failure
 * (1011 with the reason; 1014 if the port is closed). The 101 answer
 * comes once the guest's port has accepted the connection, so a closed
 * port is a plain 502 answer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_port.h"
#include "http/ws.h"
#include "ports.h"
#include "util.h"

#define WS_CLOSE_BAD_GATEWAY 1014

struct tcp_sess {
	struct http_conn *c;
	struct aport *p;
	struct ws ws;
	bool upgraded, client_eof, guest_eof;
	char accept[29];
};

static void sess_free(struct tcp_sess *s)
{
	aport_close(s->p);
	ws_free(&s->ws);
	free(s);
}

static void sess_end(struct tcp_sess *s, uint16_t code, const char *why)
{
	ws_send_close(&s->ws, code, why);
	http_close(s->c);
	sess_free(s);
}

static int ws_write(void *ctx, const void *p, size_t n)
{
	struct tcp_sess *s = ctx;

	http_write_raw(s->c, p, n);
	return 0;
}

static int on_ws_message(void *ctx, int opcode, uint8_t *p, size_t n, bool fin)
{
	struct tcp_sess *s = ctx;

	if (opcode == WS_TEXT) {
		if (n != 3 || memcmp(p, "eof", 3) || s->client_eof)
			return -1;
		s->client_eof = true;
		return aport_shutdown(s->p);
	}
	if (s->client_eof)
		return -1; /* bytes after "eof" */
	if (aport_write(s->p, p, n))
		return -1;
	if (aport_busy(s->p))
		http_pause_read(s->c, true);
	return 0;
}

static void on_ws_close(void *ctx, uint16_t code)
{
}

static const struct ws_ops ws_ops = {
    .on_message = on_ws_message,
    .on_close = on_ws_close,
    .write = ws_write,
};

static void on_raw(void *ctx, uint8_t *p, size_t n)
{
	struct tcp_sess *s = ctx;
	int rc = ws_feed(&s->ws, p, n);

	if (rc || s->ws.close_received) {
		if (rc && !s->ws.close_sent)
			ws_send_close(&s->ws, WS_CLOSE_PROTOCOL,
			              "binary bytes, or the text eof once");
		http_close(s->c);
		sess_free(s);
	}
}

static void on_http_drain(void *ctx)
{
	struct tcp_sess *s = ctx;

	aport_pause(s->p, false);
}

static void on_http_abort(void *ctx)
{
	sess_free(ctx);
}

static const struct http_handler http_ops = {
    .on_raw = on_raw,
    .on_drain = on_http_drain,
    .on_abort = on_http_abort,
};

static void on_connected(void *ctx)
{
	struct tcp_sess *s = ctx;
	char hdrs[160];

	snprintf(hdrs, sizeof(hdrs),
	         "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n",
	         s->accept);
	http_upgrade(s->c, hdrs);
	s->upgraded = true;
}

static void on_data(void *ctx, const uint8_t *p, size_t n)
{
	struct tcp_sess *s = ctx;

	ws_send(&s->ws, WS_BINARY, p, n);
	if (http_out_pending(s->c) > HTTP_OUT_HIGH)
		aport_pause(s->p, true);
}

static void on_eof(void *ctx)
{
	struct tcp_sess *s = ctx;

	s->guest_eof = true;
	ws_send(&s->ws, WS_TEXT, "eof", 3);
}

static void on_end(void *ctx)
{
	struct tcp_sess *s = ctx;

	s->p = NULL; /* freed by agent_port.c */
	sess_end(s, WS_CLOSE_NORMAL, "closed");
}

static void on_error(void *ctx, int status, int err, const char *msg)
{
	struct tcp_sess *s = ctx;

	s->p = NULL;
	if (!s->upgraded) {
		http_respond_error(s->c, status, "%s", msg);
		sess_free(s);
		return;
	}
	sess_end(s, status == 502 ? WS_CLOSE_BAD_GATEWAY : WS_CLOSE_INTERNAL, msg);
}

static void on_port_drain(void *ctx)
{
	struct tcp_sess *s = ctx;

	http_pause_read(s->c, false);
}

static const struct aport_ops port_ops = {
    .on_connected = on_connected,
    .on_data = on_data,
    .on_eof = on_eof,
    .on_end = on_end,
    .on_error = on_error,
    .on_drain = on_port_drain,
};

void ports_tcp(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, unsigned port,
               const struct sockaddr_storage *peer)
{
	struct http_req *req = http_conn_req(c);
	const char *ver = http_header(req, "Sec-WebSocket-Version");
	struct tcp_sess *s;

	if (!req->upgrade || !ver || strcmp(ver, "13")) {
		static const char body[] =
		    "{\"code\":426,\"message\":\"this endpoint speaks WebSocket (13) only\"}";

		http_respond(c, 426, "application/json", "Sec-WebSocket-Version: 13\r\n", body,
		             sizeof(body) - 1);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	if (ws_accept_key(http_header(req, "Sec-WebSocket-Key"), s->accept)) {
		free(s);
		http_respond_error(c, 400, "bad Sec-WebSocket-Key");
		return;
	}
	s->c = c;
	ws_init(&s->ws, false, &ws_ops, s);
	s->ws.max_text = 16;
	s->p = aport_open_from(sb, port, peer, &port_ops, s);
	if (!s->p) {
		http_respond_error(c, 503, "cannot reach the agent of sandbox %s: %s", sb->rec.id,
		                   strerror(errno));
		ws_free(&s->ws);
		free(s);
		return;
	}
	http_set_handler(c, &http_ops, s, 0);
}
