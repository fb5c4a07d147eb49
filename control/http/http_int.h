/* SPDX-License-Identifier: MIT */
/* The HTTP server's private state, shared by http.c (connections, I/O,
 * deadlines, responses) and http_parse.c (request parsing). */
#ifndef KILND_HTTP_INT_H
#define KILND_HTTP_INT_H

#include "http.h"

enum { RQ_IDLE, RQ_HEADERS, RQ_BODY, RQ_DONE };
enum { RS_NONE, RS_STREAM, RS_DONE };

struct http_listener {
	struct http_server *srv;
	int fd;
	unsigned flags; /* HTTP_LISTEN_* */
	ev_io w;
	struct http_listener *next;
};

struct http_server {
	struct ev_loop *loop;
	struct http_cfg cfg;
	http_route_fn route;
	void *udata;
	http_parser_settings settings;
	struct http_listener *listeners;
	struct http_conn *conns;
	unsigned nconns;
	ev_timer sweep;
	http_observe_fn observe; /* http_server_observe() */
};

struct http_conn {
	struct http_server *srv;
	struct http_conn *prev, *next;
	int fd;
	unsigned flags; /* of its listener */
	ev_io rw, ww;
	http_parser parser;
	struct buf in, out;
	int busy;
	bool dead, closing, read_paused, upgraded, keep_alive, out_high, overflow;
	bool held;    /* http_hold(): the parser stopped after the headers */
	bool raw_out; /* http_respond_raw(): the handler writes the response */
	bool trusted; /* a unix socket's, or one that authenticated */

	/* the request being read */
	int rq, rs;
	struct http_req req;
	struct buf hbuf; /* URL and header strings, NUL-separated */
	size_t url_off, url_len;
	size_t name_off[HTTP_MAX_HEADERS], value_off[HTTP_MAX_HEADERS];
	unsigned nfields;
	int last_cb; /* 1 field, 2 value */
	int reject;  /* status for a request refused while parsing (413/414/431) */
	bool sent_continue;

	const struct http_handler *h;
	void *hctx;
	size_t body_limit;

	ev_tstamp last_read, last_write, req_start;
	unsigned tag; /* http_set_tag(): what the observer is told this request was */
	int status;   /* of the answer, once its head is written */
};

/* Leave a callback section (c->busy++ before it); false if the connection
 * died meanwhile and is gone. */
bool http_conn_leave(struct http_conn *c);
/* Between http.c (a connection's I/O, requests and answers) and
 * http_server.c (accept, budgets, deadlines). */
void http_conn_close(struct http_conn *c, bool notify);
void http_conn_reset(struct http_conn *c);
void http_on_read(struct ev_loop *loop, ev_io *w, int revents);
void http_on_write(struct ev_loop *loop, ev_io *w, int revents);
void http_parse_settings(http_parser_settings *s);

#endif
