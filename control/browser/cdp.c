/* SPDX-License-Identifier: MIT */
/* The CDP endpoints (cdp.h). The WebSocket is relayed as bytes once both
 * handshakes are done (the client's with kilnd, kilnd's with Chromium on
 * the browser target's path from /json/version): the frames are the
 * client's and Chromium's, followed by ws_scan in both directions, so a
 * client that sends garbage or frames over CDP_MAX_FRAME is closed with
 * the matching code before Chromium sees them. Each side reads only as
 * fast as the other takes; a client that stops reading is cut off at the
 * write timeout. The browser's end of the connection (it exited, or
 * closed it) is a close 1011 that says so. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/auth.h"
#include "agent/agent_port.h"
#include "api/api.h"
#include "cdp.h"
#include "http/jsonutil.h"
#include "http/ws.h"
#include "sandbox/wake.h"
#include "util.h"
#include "ws_scan.h"

#define CDP_MAX_FRAME     (32ull << 20)  /* from the client */
#define CDP_MAX_FRAME_OUT (512ull << 20) /* from the browser (screenshots) */
#define HEAD_MAX          (16u << 10)

enum cs_state { CS_WAIT, CS_HANDSHAKE, CS_OPEN };

struct cdp_sess {
	struct kilnd *kd;
	struct http_conn *c;
	struct cdp_waiter *w;
	struct aport *p;
	char sb_id[SB_ID_LEN + 1];
	bool ws; /* the WebSocket, else /json/version */
	enum cs_state st;
	char accept[29], want[29], key[25];
	char host[256]; /* the client's Host, for webSocketDebuggerUrl */
	struct buf head;
	struct ws_scan from_client, from_browser;
};

static void sess_free(struct cdp_sess *s)
{
	cdp_cancel(s->w);
	aport_close(s->p);
	buf_free(&s->head);
	free(s);
}

/* A close frame from kilnd to the client, if the stream to it is between
 * frames; else the connection is cut. Ends the session. */
static void sess_close(struct cdp_sess *s, uint16_t code, const char *why)
{
	uint8_t f[2 + 2 + 123];
	size_t n = strlen(why) > 123 ? 123 : strlen(why);

	if (s->from_browser.hlen || s->from_browser.left || s->from_browser.closed) {
		if (s->from_browser.closed)
			http_close(s->c);
		else
			http_abort(s->c);
		sess_free(s);
		return;
	}
	f[0] = 0x80 | WS_CLOSE;
	f[1] = (uint8_t)(2 + n);
	f[2] = (uint8_t)(code >> 8);
	f[3] = (uint8_t)code;
	memcpy(f + 4, why, n);
	http_write_raw(s->c, f, 4 + n);
	http_close(s->c);
	sess_free(s);
}

/* ---------------------------------------------------------------- the browser's side */

/* Chromium's 101, checked; then the client's. */
static void handshake_answer(struct cdp_sess *s)
{
	const char *h = buf_head(&s->head), *end, *acc;
	size_t avail = buf_avail(&s->head), len;
	char hdrs[192], msg[256];

	end = memmem(h, avail, "\r\n\r\n", 4);
	if (!end) {
		if (avail > HEAD_MAX)
			goto bad;
		return;
	}
	len = (size_t)(end + 4 - h);
	/* NUL-terminate the head for the searches below (room is there) */
	if (!buf_reserve(&s->head, 1))
		goto bad;
	h = buf_head(&s->head);
	((char *)h)[avail] = 0;
	acc = strcasestr(h, "\r\nSec-WebSocket-Accept:");
	if (strncmp(h, "HTTP/1.1 101", 12) || !acc || acc > h + len)
		goto bad;
	acc += 23;
	acc += strspn(acc, " \t");
	if (strncmp(acc, s->want, 28))
		goto bad;
	/* (the console's WebSocket offers the subprotocol "kiln": ws_auth.c) */
	snprintf(hdrs, sizeof(hdrs),
	         "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s",
	         s->accept, api_ws_protocol_header(http_conn_req(s->c)));
	http_upgrade(s->c, hdrs);
	s->st = CS_OPEN;
	if (avail > len) {
		int rc = ws_scan_feed(&s->from_browser, (const uint8_t *)h + len, avail - len);

		if (rc) {
			sess_close(s, WS_CLOSE_INTERNAL, "the browser sent a malformed frame");
			return;
		}
		http_write_raw(s->c, h + len, avail - len);
	}
	buf_free(&s->head);
	return;
bad:
	snprintf(msg, sizeof(msg), "sandbox %s: the browser refused the DevTools WebSocket (%.40s)",
	         s->sb_id, strncmp(h, "HTTP/", 5) ? "not HTTP" : h);
	http_respond_error(s->c, 502, "%s", msg);
	sess_free(s);
}

static void on_data(void *ctx, const uint8_t *p, size_t n)
{
	struct cdp_sess *s = ctx;
	int rc;

	if (s->st == CS_HANDSHAKE) {
		if (buf_append(&s->head, p, n)) {
			http_respond_error(s->c, 500, "out of memory");
			sess_free(s);
			return;
		}
		handshake_answer(s);
		return;
	}
	rc = ws_scan_feed(&s->from_browser, p, n);
	if (rc) {
		sess_close(s, WS_CLOSE_INTERNAL, "the browser sent a malformed frame");
		return;
	}
	http_write_raw(s->c, p, n);
	if (http_out_pending(s->c) > HTTP_OUT_HIGH)
		aport_pause(s->p, true);
}

static void browser_gone(struct cdp_sess *s, const char *why)
{
	char msg[256];

	if (s->st != CS_OPEN) {
		http_respond_error(s->c, 502,
		                   "sandbox %s: the browser ended the DevTools connection "
		                   "before its handshake%s%s",
		                   s->sb_id, why ? ": " : "", why ? why : "");
		sess_free(s);
		return;
	}
	snprintf(msg, sizeof(msg), "the browser in %s ended the connection (exited?)", s->sb_id);
	sess_close(s, WS_CLOSE_INTERNAL, msg);
}

static void on_eof(void *ctx)
{
	browser_gone(ctx, NULL);
}

static void on_end(void *ctx)
{
	struct cdp_sess *s = ctx;

	s->p = NULL; /* freed by agent_port.c */
	browser_gone(s, NULL);
}

static void on_error(void *ctx, int status, int err, const char *msg)
{
	struct cdp_sess *s = ctx;

	s->p = NULL;
	browser_gone(s, msg);
}

static void on_port_drain(void *ctx)
{
	struct cdp_sess *s = ctx;

	http_pause_read(s->c, false);
}

static const struct aport_ops port_ops = {
    .on_data = on_data,
    .on_eof = on_eof,
    .on_end = on_end,
    .on_error = on_error,
    .on_drain = on_port_drain,
};

/* ---------------------------------------------------------------- the client's side */

static void on_raw(void *ctx, uint8_t *p, size_t n)
{
	struct cdp_sess *s = ctx;
	int rc = ws_scan_feed(&s->from_client, p, n);

	if (rc) {
		sess_close(s, (uint16_t)rc,
		           rc == WS_CLOSE_TOO_BIG ? "frame too big" : "not a WebSocket frame");
		return;
	}
	if (aport_write(s->p, p, n)) {
		sess_close(s, WS_CLOSE_INTERNAL, "out of memory");
		return;
	}
	if (aport_busy(s->p))
		http_pause_read(s->c, true);
}

static void on_http_drain(void *ctx)
{
	struct cdp_sess *s = ctx;

	if (s->p)
		aport_pause(s->p, false);
}

static void on_abort(void *ctx)
{
	sess_free(ctx);
}

static const struct http_handler http_ops = {
    .on_raw = on_raw,
    .on_drain = on_http_drain,
    .on_abort = on_abort,
};

/* ---------------------------------------------------------------- answers */

static void answer_version(struct cdp_sess *s, json_t *version)
{
	json_t *j = json_deep_copy(version);
	char url[400];

	snprintf(url, sizeof(url), "ws://%s/sandboxes/%s/cdp", s->host, s->sb_id);
	if (j)
		json_object_set_new(j, "webSocketDebuggerUrl", json_string(url));
	http_respond_json(s->c, 200, j);
	sess_free(s);
}

/* The browser target's path, from ws://127.0.0.1:9222/devtools/browser/ID. */
static const char *target_path(json_t *version)
{
	const char *u = json_string_value(json_object_get(version, "webSocketDebuggerUrl"));
	const char *p = u && !strncmp(u, "ws://", 5) ? strchr(u + 5, '/') : NULL;

	return p && strlen(p) < 512 && !strpbrk(p, " \r\n") ? p : NULL;
}

static void connect_browser(struct cdp_sess *s, struct sandbox *sb, json_t *version)
{
	const char *path = target_path(version);
	char req[1024];

	if (!path) {
		http_respond_error(s->c, 502,
		                   "sandbox %s: the browser's /json/version has no usable "
		                   "webSocketDebuggerUrl",
		                   s->sb_id);
		sess_free(s);
		return;
	}
	if (ws_client_key(s->key) || ws_accept_key(s->key, s->want)) {
		http_respond_error(s->c, 500, "no random numbers");
		sess_free(s);
		return;
	}
	s->p = aport_open(sb, s->kd->cfg.browser_port, &port_ops, s);
	if (!s->p) {
		http_respond_error(s->c, 503, "cannot reach the agent of sandbox %s: %s", s->sb_id,
		                   strerror(errno));
		sess_free(s);
		return;
	}
	s->st = CS_HANDSHAKE;
	snprintf(
	    req, sizeof(req),
	    "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n",
	    path, s->kd->cfg.browser_port, s->key);
	if (aport_write(s->p, req, strlen(req))) {
		http_respond_error(s->c, 500, "out of memory");
		sess_free(s);
	}
}

static void on_ready(void *ctx, int status, const char *msg, json_t *version)
{
	struct cdp_sess *s = ctx;
	struct sandbox *sb = sb_find(s->kd, s->sb_id);

	s->w = NULL;
	if (status == 200 && (!sb || sb->state != SB_RUNNING)) {
		status = 409;
		msg = "the sandbox stopped while its browser started";
	}
	if (status != 200) {
		http_respond_error(s->c, status, "%s", msg);
		sess_free(s);
	} else if (!s->ws) {
		answer_version(s, version);
	} else {
		connect_browser(s, sb, version);
	}
}

static void run(void *ctx, struct sandbox *sb)
{
	struct cdp_sess *s = ctx;

	s->w = cdp_browser(s->kd, sb, on_ready, s);
	if (!s->w) {
		http_respond_error(s->c, 500, "out of memory");
		sess_free(s);
		return;
	}
	http_set_handler(s->c, &http_ops, s, 0);
}

static void fail(void *ctx, int status, const char *msg)
{
	struct cdp_sess *s = ctx;

	http_respond_error(s->c, status, "%s", msg);
	sess_free(s);
}

static void drop(void *ctx)
{
	sess_free(ctx);
}

static const struct wake_ops wake_ops = {.run = run, .fail = fail, .drop = drop};

/* "/sandboxes/ID/cdp" (ws) or ".../cdp/json/version[/]": the id into id. */
static bool cdp_path(const char *path, char *id, bool *ws)
{
	static const char lead[] = "/sandboxes/";
	const char *u = path, *slash;

	if (strncmp(u, lead, sizeof(lead) - 1))
		return false;
	u += sizeof(lead) - 1;
	slash = strchr(u, '/');
	if (!slash || slash == u || (size_t)(slash - u) > SB_ID_LEN || strncmp(slash, "/cdp", 4))
		return false;
	if (!strcmp(slash + 4, "") || !strcmp(slash + 4, "/"))
		*ws = true;
	else if (!strcmp(slash + 4, "/json/version") || !strcmp(slash + 4, "/json/version/"))
		*ws = false;
	else
		return false;
	memcpy(id, u, (size_t)(slash - u));
	id[slash - u] = 0;
	return true;
}

bool cdp_route(struct kilnd *kd, struct http_conn *c, struct http_req *req)
{
	const char *host = http_header(req, "Host"), *ver;
	char id[SB_ID_LEN + 1];
	struct sandbox *sb;
	struct cdp_sess *s;
	bool ws;

	if (!cdp_path(req->path, id, &ws))
		return false;
	if (!api_auth_ws(kd, req, &req->who)) {
		http_respond_error(c, 401, "missing or wrong API key");
		return true;
	}
	http_conn_trust(c);
	sb = api_sb_find(kd, req, id);
	if (!sb) {
		http_respond_error(c, 404, "sandbox %s not found", id);
		return true;
	}
	if (req->method != HTTP_GET) {
		http_respond_error(c, 405, "GET only");
		return true;
	}
	ver = http_header(req, "Sec-WebSocket-Version");
	if (ws && (!req->upgrade || !ver || strcmp(ver, "13"))) {
		http_respond_error(c, 426,
		                   "/sandboxes/%s/cdp is a WebSocket (version 13); "
		                   "/sandboxes/%s/cdp/json/version describes it",
		                   id, id);
		return true;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		http_respond_error(c, 500, "out of memory");
		return true;
	}
	if (ws && ws_accept_key(http_header(req, "Sec-WebSocket-Key"), s->accept)) {
		free(s);
		http_respond_error(c, 400, "bad Sec-WebSocket-Key");
		return true;
	}
	s->kd = kd;
	s->c = c;
	s->ws = ws;
	snprintf(s->sb_id, sizeof(s->sb_id), "%s", id);
	/* a Host that cannot make a URL is not echoed */
	snprintf(s->host, sizeof(s->host), "%s",
	         host && strlen(host) < sizeof(s->host) && !strpbrk(host, "/ \"\\?#@")
	             ? host
	             : "127.0.0.1");
	ws_scan_init(&s->from_client, true, CDP_MAX_FRAME);
	ws_scan_init(&s->from_browser, false, CDP_MAX_FRAME_OUT);
	sb_wake(kd, c, sb, ws ? "CDP" : "CDP /json/version", 0, &wake_ops, s);
	return true;
}
