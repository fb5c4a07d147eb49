/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 server on libev, parsing with http_parser (nodejs, 2.9).
 *
 * Clients are hostile: the request line and headers are bounded
 * (HTTP_MAX_URL, HTTP_MAX_HEADER_BYTES, HTTP_MAX_HEADERS), each phase has a
 * deadline (headers, idle keep-alive, body progress, write progress), queued
 * output is capped, and the number of connections is capped. A request is
 * handed to the route callback once its headers are complete; the route
 * either answers at once or installs a handler that receives the body
 * (buffered up to a limit, or streamed) and answers later, possibly as a
 * chunked stream or after an upgrade to raw bytes (WebSocket).
 *
 * Handler rules: once a handler finished the response (http_respond*,
 * http_stream_end, http_close) it must drop its connection pointer; if the
 * connection dies first, on_abort is called instead, exactly once. */
#ifndef KILND_HTTP_H
#define KILND_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>
#include <http_parser.h>

#include "buf.h"

#define HTTP_MAX_URL          8192
#define HTTP_MAX_HEADER_BYTES (16u << 10) /* field names and values together */
#define HTTP_MAX_HEADERS      100
#define HTTP_OUT_HIGH         (256u << 10) /* producers should pause above this */
#define HTTP_OUT_LOW          (64u << 10)

struct http_cfg {
	unsigned max_conns;
	/* TCP connections that sent no authenticated request yet: at most
	 * max_untrusted (a new one pushes out the oldest that is not being
	 * served), closed after untrusted_idle seconds without a request. The
	 * unix socket keeps unix_reserve of max_conns to itself. */
	unsigned max_untrusted, unix_reserve;
	double untrusted_idle;
	double header_timeout; /* from the first byte of a request to its last header */
	double idle_timeout;   /* keep-alive: between requests */
	double body_timeout;   /* without body progress (not while we pause) */
	double write_timeout;  /* queued output without progress */
	size_t max_out;        /* queued output beyond this closes the connection */
};

struct http_hdr {
	const char *name, *value;
};

/* Who sent a request, once the router authenticated it (auth/auth.h). */
struct http_who {
	bool known, admin;
	char tenant[33]; /* "" for the operator */
	char key_id[24]; /* the key's id, or "admin" (AUTH_ADMIN_ID) */
};

struct http_req {
	enum http_method method;
	const char *url;   /* as sent */
	char *path;        /* percent-decoded path, without the query */
	const char *query; /* raw query string after '?', or "" */
	struct http_hdr hdrs[HTTP_MAX_HEADERS];
	unsigned nhdrs;
	bool has_body;           /* Content-Length > 0 or chunked */
	uint64_t content_length; /* when the client sent Content-Length */
	bool has_content_length;
	bool upgrade;
	bool tcp;        /* arrived on a TCP listener (the API needs its key) */
	bool envd;       /* arrived on the envd listener (E2B's sandbox API) */
	struct buf body; /* the buffered body (see http_set_handler) */
	struct http_who who;
};

struct http_conn;

struct http_handler {
	/* Streamed body bytes; return < 0 to fail the request (400). */
	int (*on_body)(void *ctx, const char *p, size_t n);
	/* The whole request arrived (buffered body in req->body). */
	void (*on_complete)(void *ctx);
	/* Queued output fell below HTTP_OUT_LOW after exceeding HTTP_OUT_HIGH. */
	void (*on_drain)(void *ctx);
	/* After http_upgrade(): bytes from the client. */
	void (*on_raw)(void *ctx, uint8_t *p, size_t n);
	/* The connection died before the handler finished. */
	void (*on_abort)(void *ctx);
};

struct http_server;
typedef void (*http_route_fn)(struct http_conn *c, struct http_req *req, void *udata);
/* A tagged request's answer is complete (its last byte queued): the tag,
 * the status and the seconds since the request began. */
typedef void (*http_observe_fn)(void *udata, unsigned tag, int status, double seconds);

struct http_server *http_server_new(struct ev_loop *loop, const struct http_cfg *cfg,
                                    http_route_fn route, void *udata);
/* Listener flags. */
#define HTTP_LISTEN_TCP  1u /* requests have req->tcp */
#define HTTP_LISTEN_ENVD 2u /* requests have req->envd */
/* Listen on an already bound and listening socket. */
int http_server_add_listener(struct http_server *s, int fd, unsigned flags);
void http_server_free(struct http_server *s);
/* Call fn (with the server's udata) for each answer of a tagged request. */
void http_server_observe(struct http_server *s, http_observe_fn fn);
/* Tag the request being answered on c (nonzero), for the observer. */
void http_set_tag(struct http_conn *c, unsigned tag);
unsigned http_server_conns(const struct http_server *s);

const char *http_header(const struct http_req *req, const char *name);
/* Value of query parameter `name`, percent-decoded (malloc'd), or NULL. */
char *http_query_param(const struct http_req *req, const char *name);
struct http_req *http_conn_req(struct http_conn *c);
/* The router authenticated a request on c (API key or sandbox token): it
 * leaves the small budget of unauthenticated TCP connections. */
void http_conn_trust(struct http_conn *c);
/* The client's address, if it came over TCP (not the unix socket). */
struct sockaddr_storage;
bool http_conn_peer(const struct http_conn *c, struct sockaddr_storage *ss);

/* Install a handler (NULL removes it). body_limit > 0 buffers the body into req->body up to
 * that many bytes (more: 413, and on_abort is called, also when the announced
 * Content-Length is refused here at once); with on_body set the body is streamed. */
void http_set_handler(struct http_conn *c, const struct http_handler *h, void *ctx,
                      size_t body_limit);

void http_respond(struct http_conn *c, int status, const char *ctype, const char *extra_headers,
                  const void *body, size_t n);
/* {"code": status, "message": ...} */
void http_respond_error(struct http_conn *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Chunked response. */
void http_stream_start(struct http_conn *c, int status, const char *ctype,
                       const char *extra_headers);
void http_stream_write(struct http_conn *c, const void *p, size_t n);
void http_stream_end(struct http_conn *c);
/* 101 Switching Protocols; then bytes go both ways raw. */
void http_upgrade(struct http_conn *c, const char *extra_headers);
/* The handler writes the whole response itself, status line and headers
 * included (http_write_raw), and ends it with http_close (a reverse proxy
 * relaying another server's answer). The connection closes after it. With
 * upgrade (a relayed 101), the client's bytes after the request go to
 * on_raw, as after http_upgrade(). */
void http_respond_raw(struct http_conn *c, bool upgrade);
/* After http_upgrade() or http_respond_raw(): bytes as they are. */
void http_write_raw(struct http_conn *c, const void *p, size_t n);
/* Close once queued output is written (ends the handler). */
void http_close(struct http_conn *c);
/* Close at once, e.g. to signal a broken stream (ends the handler). */
void http_abort(struct http_conn *c);
size_t http_out_pending(const struct http_conn *c);
/* Keep the kernel's send buffer of c near bytes, so that a client that
 * does not read shows in http_out_pending soon (event streams). */
void http_conn_sndbuf(struct http_conn *c, int bytes);
/* A response was started (or the connection is going away). */
bool http_responded(const struct http_conn *c);
/* Stop (true) or resume reading from the client (body or raw bytes). */
void http_pause_read(struct http_conn *c, bool paused);
/* From the route callback only: parse nothing past the headers (no body
 * reaches any handler, the message does not complete) until
 * http_release(). For a request that must wait before a handler that
 * streams its body can be installed (auto-resume). Input is still read,
 * up to a bound, so a client that goes away is noticed (on_abort); the
 * body deadline does not run meanwhile. */
void http_hold(struct http_conn *c);
/* Parse on (from the event loop, after the caller returns): install the
 * handler that takes the body first, or answer. */
void http_release(struct http_conn *c);

const char *http_status_text(int status);

#endif
