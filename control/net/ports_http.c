/* SPDX-License-Identifier: MIT */
/* The HTTP relay to a sandbox's port (ports.h): the client's request goes
 * to the guest as it arrives (head rewritten, body streamed: as it came,
 * or re-chunked when it came chunked), with "Connection: close"; the
 * guest's answer comes back as it is, its head rewritten to close the
 * client's connection after it. The answer's end is found by following it
 * with http_parser (a server that keeps its connection open despite the
 * close still ends the relay), or is the guest's end of file. A 101 answer
 * to an upgrade request (WebSocket) turns both directions into raw bytes.
 * Each side reads only while the other keeps up (bounded buffers). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/auth.h"
#include "agent/agent_port.h"
#include "ports.h"
#include "util.h"

#define HEAD_MAX (32u << 10) /* the guest's response head */

enum hx_state {
	HX_HEAD, /* collecting the guest's response head */
	HX_BODY, /* relaying the response body */
	HX_RAW,  /* upgraded: raw bytes both ways */
};

struct hpx {
	struct http_conn *c;
	struct aport *p;
	unsigned port;
	char sb_id[SB_ID_LEN + 1];
	bool chunked;  /* the request body is re-chunked */
	bool head_req; /* HEAD: the answer has no body */
	bool upgrade;
	bool complete; /* the answer ended (rp) */
	bool lenient;  /* rp gave up: the guest's end of file ends it */
	enum hx_state st;
	struct buf head;
	http_parser rp;
	http_parser_settings rs;
};

static void hpx_free(struct hpx *x)
{
	aport_close(x->p);
	buf_free(&x->head);
	free(x);
}

/* The answer is over: close the client's connection once it has it all. */
static void hpx_finish(struct hpx *x)
{
	http_close(x->c);
	hpx_free(x);
}

/* A failure: an error answer if none began, else a cut connection (the
 * client sees an incomplete response, not a clean end). */
static void hpx_fail(struct hpx *x, int status, const char *msg)
{
	if (!http_responded(x->c))
		http_respond_error(x->c, status, "%s", msg);
	else
		http_abort(x->c);
	hpx_free(x);
}

bool ports_header_hidden(const struct kilnd *kd, const char *name, const char *value)
{
	static const char *const hidden[] = {
	    "Connection",
	    "Keep-Alive",
	    "Proxy-Connection",
	    "Proxy-Authorization",
	    "TE",
	    "Trailer",
	    "Transfer-Encoding",
	    "Content-Length",
	    "Expect",
	    "X-API-Key",
	    "X-Forwarded-For",
	    "X-Forwarded-Host",
	    "X-Forwarded-Proto",
	    "X-Forwarded-Prefix",
	    "E2B-Traffic-Access-Token",
	    "Kiln-Peer",
	};

	for (size_t i = 0; i < ARRAY_SIZE(hidden); i++)
		if (!strcasecmp(name, hidden[i]))
			return true;
	/* kilnd's own key, never the guest's business; other schemes pass */
	return !strcasecmp(name, "Authorization") && !strncasecmp(value, "Bearer ", 7) &&
	       auth_is_key(kd, value + 7);
}

/* The request for the guest: origin-form target, the client's headers but
 * the hidden ones, the proxy's own. */
static int build_request(struct kilnd *kd, struct hpx *x, struct http_req *req, size_t prefix,
                         const struct sockaddr_storage *peer, struct buf *b)
{
	const char *target = req->url + prefix, *host = http_header(req, "Host");
	char addr[INET6_ADDRSTRLEN];
	int err = 0;

	if (!prefix && *target != '/') {
		/* absolute-form (http://host/path): the path */
		const char *s = strstr(target, "://");

		target = s ? s + 3 + strcspn(s + 3, "/?") : "";
	}
	err |= buf_printf(b, "%s %s%s HTTP/1.1\r\n", http_method_str(req->method),
	                  *target == '/' ? "" : "/", target);
	for (unsigned i = 0; i < req->nhdrs; i++) {
		const struct http_hdr *h = &req->hdrs[i];

		if (ports_header_hidden(kd, h->name, h->value) ||
		    (!x->upgrade && !strcasecmp(h->name, "Upgrade")))
			continue;
		err |= buf_printf(b, "%s: %s\r\n", h->name, h->value);
	}
	err |= buf_puts(b, x->upgrade ? "Connection: Upgrade\r\n" : "Connection: close\r\n");
	if (req->has_content_length)
		err |= buf_printf(b, "Content-Length: %llu\r\n",
		                  (unsigned long long)req->content_length);
	else if (x->chunked)
		err |= buf_puts(b, "Transfer-Encoding: chunked\r\n");
	err |= buf_puts(b, "X-Forwarded-Proto: http\r\n");
	/* the client's own (the client's X-Forwarded-For is not passed on) */
	if (ports_peer_text(peer, addr, sizeof(addr)))
		err |= buf_printf(b, "X-Forwarded-For: %s\r\n", addr);
	if (host)
		err |= buf_printf(b, "X-Forwarded-Host: %s\r\n", host);
	if (prefix)
		err |= buf_printf(b, "X-Forwarded-Prefix: %.*s\r\n", (int)prefix, req->url);
	err |= buf_puts(b, "\r\n");
	return err ? -ENOMEM : 0;
}

static int rp_headers_complete(http_parser *rp)
{
	struct hpx *x = rp->data;

	return x->head_req ? 1 : 0; /* 1: no body follows */
}

static int rp_message_complete(http_parser *rp)
{
	struct hpx *x = rp->data;

	x->complete = true;
	http_parser_pause(rp, 1);
	return 0;
}

/* Answer bytes to the client, following them to the answer's end. Frees x
 * at the end: the caller must not touch it after. */
static void relay(struct hpx *x, const uint8_t *p, size_t n)
{
	size_t used = n;

	if (!x->lenient) {
		used = http_parser_execute(&x->rp, &x->rs, (const char *)p, n);
		if (!x->complete && HTTP_PARSER_ERRNO(&x->rp) != HPE_OK) {
			log_debug("port %u of sandbox %s: cannot follow the answer (%s): relaying "
			          "to the end of the connection",
			          x->port, x->sb_id, http_errno_name(HTTP_PARSER_ERRNO(&x->rp)));
			x->lenient = true;
			used = n;
		}
	}
	http_write_raw(x->c, p, used);
	if (x->complete)
		hpx_finish(x);
	else if (http_out_pending(x->c) > HTTP_OUT_HIGH)
		aport_pause(x->p, true);
}

/* Copy the head's status line and headers, dropping how the guest's
 * connection goes on (kilnd closes the client's after this answer). */
static int rewrite_head(const char *h, size_t len, bool keep_conn, struct buf *out)
{
	const char *end = h + len - 2, *line = h;
	int err = 0;

	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t l = nl ? (size_t)(nl - line + 1) : (size_t)(end - line);
		bool drop = line != h && !keep_conn &&
		            (!strncasecmp(line, "Connection:", 11) ||
		             !strncasecmp(line, "Keep-Alive:", 11) ||
		             !strncasecmp(line, "Proxy-Connection:", 17));

		if (!drop)
			err |= buf_append(out, line, l);
		line += l;
	}
	if (!keep_conn)
		err |= buf_puts(out, "Connection: close\r\n");
	err |= buf_puts(out, "\r\n");
	return err;
}

static void parse_head(struct hpx *x)
{
	for (;;) {
		const char *h = buf_head(&x->head), *end;
		size_t avail = buf_avail(&x->head), len;
		struct buf out = {0};
		char msg[256], first[64];
		int minor, status;

		end = memmem(h, avail, "\r\n\r\n", 4);
		if (!end) {
			if (avail > HEAD_MAX) {
				snprintf(
				    msg, sizeof(msg),
				    "port %u of sandbox %s answered a response head over %u KiB",
				    x->port, x->sb_id, HEAD_MAX >> 10);
				hpx_fail(x, 502, msg);
			}
			return;
		}
		len = (size_t)(end + 4 - h);
		/* the status line, NUL-terminated for sscanf */
		snprintf(first, sizeof(first), "%.*s",
		         (int)(strcspn(h, "\r\n") < sizeof(first) - 1 ? strcspn(h, "\r\n")
		                                                      : sizeof(first) - 1),
		         h);
		if (sscanf(first, "HTTP/1.%1d %3d", &minor, &status) != 2 || status < 100) {
			snprintf(msg, sizeof(msg),
			         "port %u of sandbox %s did not answer HTTP (it sent "
			         "'%.40s')",
			         x->port, x->sb_id, first);
			hpx_fail(x, 502, msg);
			return;
		}
		/* 100 Continue and 103 Early Hints: kilnd answered the client's
		 * Expect itself; the final answer follows. */
		if (status < 200 && status != 101) {
			buf_consume(&x->head, len);
			continue;
		}
		bool up = status == 101 && x->upgrade;
		if (rewrite_head(h, len, up, &out)) {
			buf_free(&out);
			hpx_fail(x, 500, "out of memory");
			return;
		}
		http_respond_raw(x->c, up);
		http_write_raw(x->c, buf_head(&out), buf_avail(&out));
		buf_free(&out);
		if (up) {
			x->st = HX_RAW;
			http_write_raw(x->c, h + len, avail - len);
			buf_free(&x->head);
			return;
		}
		x->st = HX_BODY;
		http_parser_init(&x->rp, HTTP_RESPONSE);
		x->rp.data = x;
		http_parser_settings_init(&x->rs);
		x->rs.on_headers_complete = rp_headers_complete;
		x->rs.on_message_complete = rp_message_complete;
		http_parser_execute(&x->rp, &x->rs, h, len);
		if (x->complete) { /* no body (HEAD, 204, 304) */
			hpx_finish(x);
			return;
		}
		if (avail > len)
			relay(x, (const uint8_t *)h + len, avail - len); /* may free x */
		else
			buf_free(&x->head);
		return;
	}
}

/* ---------------------------------------------------------------- the guest's side */

static void on_data(void *ctx, const uint8_t *p, size_t n)
{
	struct hpx *x = ctx;

	switch (x->st) {
	case HX_HEAD:
		if (buf_append(&x->head, p, n)) {
			hpx_fail(x, 500, "out of memory");
			return;
		}
		parse_head(x);
		return;
	case HX_BODY:
		relay(x, p, n);
		return;
	case HX_RAW:
		http_write_raw(x->c, p, n);
		if (http_out_pending(x->c) > HTTP_OUT_HIGH)
			aport_pause(x->p, true);
		return;
	}
}

static void on_eof(void *ctx)
{
	struct hpx *x = ctx;
	char msg[256];

	if (x->st != HX_HEAD) {
		hpx_finish(x);
		return;
	}
	snprintf(msg, sizeof(msg), "port %u of sandbox %s closed the connection %s", x->port,
	         x->sb_id,
	         buf_avail(&x->head) ? "in the middle of its answer" : "without answering");
	hpx_fail(x, 502, msg);
}

static void on_error(void *ctx, int status, int err, const char *msg)
{
	struct hpx *x = ctx;

	x->p = NULL; /* freed by agent_port.c */
	hpx_fail(x, status, msg);
}

static void on_end(void *ctx)
{
	struct hpx *x = ctx;

	x->p = NULL; /* freed by agent_port.c */
	if (x->st == HX_HEAD)
		hpx_fail(x, 502, "the guest ended the connection without answering");
	else
		hpx_finish(x);
}

static void on_port_drain(void *ctx)
{
	struct hpx *x = ctx;

	http_pause_read(x->c, false);
}

static const struct aport_ops port_ops = {
    .on_data = on_data,
    .on_eof = on_eof,
    .on_end = on_end,
    .on_error = on_error,
    .on_drain = on_port_drain,
};

/* ---------------------------------------------------------------- the client's side */

/* Bytes for the guest (the request body, or raw after a 101). False if x
 * is gone. */
static bool to_guest(struct hpx *x, const void *p, size_t n)
{
	if (aport_write(x->p, p, n)) {
		hpx_fail(x, 500, "out of memory");
		return false;
	}
	if (aport_busy(x->p))
		http_pause_read(x->c, true);
	return true;
}

static int on_body(void *ctx, const char *p, size_t n)
{
	struct hpx *x = ctx;
	char size[24];

	if (x->chunked) {
		snprintf(size, sizeof(size), "%zx\r\n", n);
		if (!to_guest(x, size, strlen(size)) || !to_guest(x, p, n))
			return 0;
		to_guest(x, "\r\n", 2);
		return 0;
	}
	to_guest(x, p, n);
	return 0;
}

static void on_complete(void *ctx)
{
	struct hpx *x = ctx;

	if (x->chunked)
		to_guest(x, "0\r\n\r\n", 5);
}

static void on_raw(void *ctx, uint8_t *p, size_t n)
{
	to_guest(ctx, p, n);
}

static void on_http_drain(void *ctx)
{
	struct hpx *x = ctx;

	if (x->p)
		aport_pause(x->p, false);
}

static void on_abort(void *ctx)
{
	hpx_free(ctx); /* the client went away: so does the guest's connection */
}

static const struct http_handler http_ops = {
    .on_body = on_body,
    .on_complete = on_complete,
    .on_drain = on_http_drain,
    .on_raw = on_raw,
    .on_abort = on_abort,
};

void ports_http(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, unsigned port,
                size_t prefix, const struct sockaddr_storage *peer)
{
	struct http_req *req = http_conn_req(c);
	struct buf head = {0};
	struct hpx *x = calloc(1, sizeof(*x));

	if (!x) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	x->c = c;
	x->port = port;
	snprintf(x->sb_id, sizeof(x->sb_id), "%s", sb->rec.id);
	x->upgrade = req->upgrade;
	x->head_req = req->method == HTTP_HEAD;
	x->chunked = req->has_body && !req->has_content_length;
	if (build_request(kd, x, req, prefix, peer, &head)) {
		buf_free(&head);
		free(x);
		http_respond_error(c, 500, "out of memory");
		return;
	}
	x->p = aport_open_from(sb, port, peer, &port_ops, x);
	if (!x->p) {
		http_respond_error(c, 503, "cannot reach the agent of sandbox %s: %s", sb->rec.id,
		                   strerror(errno));
		buf_free(&head);
		free(x);
		return;
	}
	if (aport_write(x->p, buf_head(&head), buf_avail(&head))) {
		buf_free(&head);
		hpx_fail(x, 500, "out of memory");
		return;
	}
	buf_free(&head);
	http_set_handler(c, &http_ops, x, 0);
}
