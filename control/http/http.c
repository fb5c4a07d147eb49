/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "http.h"
#include "http_int.h"
#include "jsonutil.h"
#include "util.h"

#define READ_CHUNK (64u << 10)
#define IN_MAX     (128u << 10) /* input held while a request is in progress */

static const struct {
	int status;
	const char *text;
} status_texts[] = {
    {100, "Continue"},
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {204, "No Content"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {411, "Length Required"},
    {413, "Payload Too Large"},
    {414, "URI Too Long"},
    {426, "Upgrade Required"},
    {415, "Unsupported Media Type"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {499, "Client Closed Request"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {507, "Insufficient Storage"},
};

const char *http_status_text(int status)
{
	for (size_t i = 0; i < ARRAY_SIZE(status_texts); i++)
		if (status_texts[i].status == status)
			return status_texts[i].text;
	return "Unknown";
}

/* ---------------------------------------------------------------- lifetime */

static void conn_free(struct http_conn *c)
{
	buf_free(&c->in);
	buf_free(&c->out);
	buf_free(&c->hbuf);
	buf_free(&c->req.body);
	free(c->req.path);
	free(c);
}

void http_conn_close(struct http_conn *c, bool notify)
{
	struct http_server *s = c->srv;
	const struct http_handler *h = c->h;

	if (c->dead)
		return;
	c->dead = true;
	c->h = NULL;
	ev_io_stop(s->loop, &c->rw);
	ev_io_stop(s->loop, &c->ww);
	close(c->fd);
	c->fd = -1;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	if (notify && h && h->on_abort) {
		c->busy++;
		h->on_abort(c->hctx);
		c->busy--;
	}
	if (!c->busy)
		conn_free(c);
}

/* Leave a callback; free the connection if it died meanwhile. Returns
 * false when it is gone. */
bool http_conn_leave(struct http_conn *c)
{
	c->busy--;
	if (c->dead) {
		if (!c->busy)
			conn_free(c);
		return false;
	}
	return true;
}

static void update_watchers(struct http_conn *c)
{
	struct ev_loop *loop = c->srv->loop;
	bool want_read = !c->closing && !c->read_paused;

	/* While a request is being served, keep reading only to notice the
	 * client going away; stop once too much pipelined input piles up. */
	if (buf_avail(&c->in) >= IN_MAX)
		want_read = false;
	if (want_read)
		ev_io_start(loop, &c->rw);
	else
		ev_io_stop(loop, &c->rw);
	/* closing with nothing left to write: the write callback closes */
	if (buf_avail(&c->out) || c->closing)
		ev_io_start(loop, &c->ww);
	else
		ev_io_stop(loop, &c->ww);
}

/* ---------------------------------------------------------------- output */

static void out_append(struct http_conn *c, const void *p, size_t n)
{
	if (c->dead || c->overflow)
		return;
	if (buf_avail(&c->out) + n > c->srv->cfg.max_out || buf_append(&c->out, p, n)) {
		log_debug("http: output limit reached, closing");
		c->closing = true;
		c->overflow = true; /* drop whatever else the handler writes */
		buf_reset(&c->out);
		/* closed from the write watcher, outside the caller's stack */
		shutdown(c->fd, SHUT_RDWR);
	}
	if (!buf_avail(&c->out))
		c->last_write = ev_now(c->srv->loop);
	if (buf_avail(&c->out) > HTTP_OUT_HIGH)
		c->out_high = true;
	ev_io_start(c->srv->loop, &c->ww);
}

static void out_printf(struct http_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void out_printf(struct http_conn *c, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		out_append(c, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

void http_conn_reset(struct http_conn *c)
{
	buf_reset(&c->hbuf);
	buf_free(&c->req.body);
	free(c->req.path);
	memset(&c->req, 0, sizeof(c->req));
	c->req.tcp = c->flags & HTTP_LISTEN_TCP;
	c->req.envd = c->flags & HTTP_LISTEN_ENVD;
	c->url_len = 0;
	c->nfields = 0;
	c->last_cb = 0;
	c->reject = 0;
	c->sent_continue = false;
	c->h = NULL;
	c->hctx = NULL;
	c->body_limit = 0;
	c->rq = RQ_IDLE;
	c->rs = RS_NONE;
	c->read_paused = false;
	c->held = false;
	c->raw_out = false;
}

/* Can this connection carry another request after the current response? */
static bool can_continue(const struct http_conn *c)
{
	if (!c->keep_alive || c->req.upgrade || c->upgraded || c->rq == RQ_IDLE ||
	    c->rq == RQ_HEADERS)
		return false;
	/* A body that has not been read yet cannot be skipped reliably. */
	return c->rq == RQ_DONE || !c->req.has_body;
}

static void next_request(struct http_conn *c)
{
	http_conn_reset(c);
	http_parser_pause(&c->parser, 0);
	c->last_read = ev_now(c->srv->loop);
}

/* Send what the socket takes: false if the connection broke. */
static bool send_out(struct http_conn *c)
{
	while (buf_avail(&c->out)) {
		ssize_t n =
		    send(c->fd, buf_head(&c->out), buf_avail(&c->out), MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			return false;
		buf_consume(&c->out, (size_t)n);
		c->last_write = ev_now(c->srv->loop);
	}
	return true;
}

/* Send what the socket takes now rather than from the loop's next turn: a
 * finished response then leaves before whatever its handler does next
 * (closing an agent stream wakes the VMM, which on a shared CPU runs
 * first), and the loop saves a turn and two epoll_ctl calls. Only what was
 * sent is consumed; an error is left to the write watcher, which closes the
 * connection outside the handler's call. */
static void send_now(struct http_conn *c)
{
	(void)send_out(c);
	update_watchers(c);
}

/* The handler is done with the response: go on to the next request (from
 * the loop, never from inside the caller's stack), or close once the
 * output is written. */
static void response_done(struct http_conn *c)
{
	c->rs = RS_DONE;
	c->h = NULL;
	if (c->tag && c->srv->observe)
		c->srv->observe(c->srv->udata, c->tag, c->status, ev_time() - c->req_start);
	c->tag = 0;
	if (!can_continue(c)) {
		c->closing = true;
		send_now(c);
		return;
	}
	send_now(c);
	/* If the message is not complete yet (no body), its completion is
	 * about to be parsed; process_input() then moves on. */
	if (c->rq == RQ_DONE)
		ev_feed_event(c->srv->loop, &c->rw, EV_READ);
}

static void write_head(struct http_conn *c, int status, const char *ctype, const char *extra)
{
	log_debug("http: %s %s -> %d", http_method_str(c->req.method),
	          c->req.url ? c->req.url : "(none)", status);
	out_printf(c, "HTTP/1.1 %d %s\r\n", status, http_status_text(status));
	c->status = status;
	if (ctype)
		out_printf(c, "Content-Type: %s\r\n", ctype);
	if (extra)
		out_append(c, extra, strlen(extra));
	if (!can_continue(c))
		out_printf(c, "Connection: close\r\n");
}

void http_respond(struct http_conn *c, int status, const char *ctype, const char *extra,
                  const void *body, size_t n)
{
	if (c->dead || c->rs != RS_NONE)
		return;
	write_head(c, status, ctype, extra);
	out_printf(c, "Content-Length: %zu\r\n\r\n", n);
	if (n && c->req.method != HTTP_HEAD)
		out_append(c, body, n);
	response_done(c);
}

void http_respond_error(struct http_conn *c, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	json_t *j;
	char *s;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* a message may quote a path that is not UTF-8 (or be cut inside a
	 * character): JSON all the same */
	j = json_pack("{s:i,s:o}", "code", status, "message", json_lossy(msg, strlen(msg)));
	s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!s) {
		http_respond(c, 500, "text/plain", NULL, "out of memory\n", 14);
		return;
	}
	http_respond(c, status, "application/json", NULL, s, strlen(s));
	free(s);
}

void http_server_observe(struct http_server *s, http_observe_fn fn)
{
	s->observe = fn;
}

void http_set_tag(struct http_conn *c, unsigned tag)
{
	c->tag = tag;
}

void http_stream_start(struct http_conn *c, int status, const char *ctype, const char *extra)
{
	if (c->dead || c->rs != RS_NONE)
		return;
	write_head(c, status, ctype, extra);
	out_printf(c, "Transfer-Encoding: chunked\r\n\r\n");
	c->rs = RS_STREAM;
}

void http_stream_write(struct http_conn *c, const void *p, size_t n)
{
	if (c->dead || c->rs != RS_STREAM || !n)
		return;
	out_printf(c, "%zx\r\n", n);
	out_append(c, p, n);
	out_append(c, "\r\n", 2);
}

void http_stream_end(struct http_conn *c)
{
	if (c->dead || c->rs != RS_STREAM)
		return;
	out_append(c, "0\r\n\r\n", 5);
	response_done(c);
}

void http_upgrade(struct http_conn *c, const char *extra)
{
	if (c->dead || c->rs != RS_NONE)
		return;
	out_printf(c, "HTTP/1.1 101 Switching Protocols\r\n");
	if (extra)
		out_append(c, extra, strlen(extra));
	out_append(c, "\r\n", 2);
	c->upgraded = true;
	c->rs = RS_STREAM;
	c->read_paused = false;
	update_watchers(c);
	if (buf_avail(&c->in))
		ev_feed_event(c->srv->loop, &c->rw, EV_READ);
}

void http_respond_raw(struct http_conn *c, bool upgrade)
{
	if (c->dead || c->rs != RS_NONE)
		return;
	log_debug("http: %s %s -> raw response%s", http_method_str(c->req.method),
	          c->req.url ? c->req.url : "(none)", upgrade ? " (upgraded)" : "");
	c->keep_alive = false;
	c->raw_out = true;
	c->rs = RS_STREAM;
	if (upgrade) {
		c->upgraded = true;
		c->read_paused = false;
		update_watchers(c);
		if (buf_avail(&c->in))
			ev_feed_event(c->srv->loop, &c->rw, EV_READ);
	}
}

void http_write_raw(struct http_conn *c, const void *p, size_t n)
{
	if (!c->dead && (c->upgraded || c->raw_out))
		out_append(c, p, n);
}

void http_close(struct http_conn *c)
{
	if (c->dead)
		return;
	c->h = NULL;
	c->rs = RS_DONE;
	c->closing = true;
	update_watchers(c);
}

void http_abort(struct http_conn *c)
{
	http_conn_close(c, false);
}

void http_conn_sndbuf(struct http_conn *c, int bytes)
{
	if (!c->dead && setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)))
		log_debug("http: SO_SNDBUF: %s", strerror(errno));
}

bool http_responded(const struct http_conn *c)
{
	return c->dead || c->rs != RS_NONE || c->closing;
}

size_t http_out_pending(const struct http_conn *c)
{
	return buf_avail(&c->out);
}

void http_pause_read(struct http_conn *c, bool paused)
{
	if (c->dead || c->read_paused == paused)
		return;
	c->read_paused = paused;
	c->last_read = ev_now(c->srv->loop);
	update_watchers(c);
	if (!paused && buf_avail(&c->in))
		ev_feed_event(c->srv->loop, &c->rw, EV_READ);
}

void http_hold(struct http_conn *c)
{
	if (c->dead || c->held || c->rq != RQ_BODY)
		return;
	/* Inside on_headers_complete, http_parser stops before the headers'
	 * last byte, in a state that goes on from it (the body, or the end of
	 * the message) when it is run again. */
	c->held = true;
	http_parser_pause(&c->parser, 1);
}

void http_release(struct http_conn *c)
{
	if (c->dead || !c->held)
		return;
	c->held = false;
	c->last_read = ev_now(c->srv->loop);
	http_parser_pause(&c->parser, 0);
	update_watchers(c);
	/* at least the headers' last byte is waiting */
	if (buf_avail(&c->in))
		ev_feed_event(c->srv->loop, &c->rw, EV_READ);
}

struct http_req *http_conn_req(struct http_conn *c)
{
	return &c->req;
}

void http_set_handler(struct http_conn *c, const struct http_handler *h, void *ctx,
                      size_t body_limit)
{
	if (!h) {
		c->h = NULL;
		return;
	}
	c->h = h;
	c->hctx = ctx;
	c->body_limit = body_limit;
	if (c->req.has_body && c->req.has_content_length && body_limit &&
	    c->req.content_length > body_limit && !h->on_body) {
		c->h = NULL;
		http_respond_error(c, 413, "request body larger than %zu bytes", body_limit);
		/* the handler never runs: let it free its context */
		if (h->on_abort)
			h->on_abort(ctx);
		return;
	}
	/* Clients that asked may send the body now. */
	if (c->req.has_body && !c->sent_continue && c->rq != RQ_DONE) {
		const char *e = http_header(&c->req, "Expect");

		if (e && !strcasecmp(e, "100-continue")) {
			out_printf(c, "HTTP/1.1 100 Continue\r\n\r\n");
			c->sent_continue = true;
		}
	}
}

/* Feed buffered input to the parser (or to the upgraded handler). */
static void process_input(struct http_conn *c)
{
	while (!c->dead && !c->closing) {
		size_t n;
		enum http_errno e;

		if (!c->upgraded && c->rq == RQ_DONE && c->rs == RS_DONE)
			next_request(c);
		if (!buf_avail(&c->in))
			return;
		if (c->upgraded) {
			if (c->read_paused || !c->h || !c->h->on_raw || c->rs != RS_STREAM)
				return;
			n = buf_avail(&c->in);
			c->busy++;
			c->h->on_raw(c->hctx, (uint8_t *)buf_head(&c->in), n);
			if (!http_conn_leave(c))
				return;
			buf_consume(&c->in, n);
			continue;
		}
		/* A held request answered already (no body: it can go on) still
		 * has the end of its message to parse once released. */
		if (c->rq == RQ_DONE || c->held || c->read_paused ||
		    (c->rs == RS_DONE && c->req.has_body))
			return;
		c->busy++;
		n = http_parser_execute(&c->parser, &c->srv->settings, buf_head(&c->in),
		                        buf_avail(&c->in));
		if (!http_conn_leave(c))
			return;
		buf_consume(&c->in, n);
		e = HTTP_PARSER_ERRNO(&c->parser);
		if (e == HPE_PAUSED)
			continue;
		if (e != HPE_OK) {
			int st = c->reject ? c->reject : 400;

			c->keep_alive = false;
			if (c->h) {
				const struct http_handler *h = c->h;

				c->h = NULL;
				if (h->on_abort) {
					c->busy++;
					h->on_abort(c->hctx);
					if (!http_conn_leave(c))
						return;
				}
			}
			if (c->rs == RS_NONE)
				http_respond_error(c, st, "%s",
				                   st == 431   ? "request headers too large"
				                   : st == 414 ? "request URL too long"
				                               : http_errno_description(e));
			else
				http_close(c);
			buf_reset(&c->in);
			return;
		}
		if (c->parser.upgrade && c->rq == RQ_DONE)
			return; /* the rest belongs to the upgraded protocol */
	}
}

/* ---------------------------------------------------------------- I/O callbacks */

void http_on_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct http_conn *c = w->data;

	c->busy++;
	process_input(c);
	if (c->dead || c->closing || c->read_paused || buf_avail(&c->in) >= IN_MAX) {
		if (http_conn_leave(c))
			update_watchers(c);
		return;
	}
	for (;;) {
		char *dst = buf_reserve(&c->in, READ_CHUNK);
		ssize_t n;

		if (!dst) {
			http_conn_close(c, true);
			break;
		}
		n = recv(c->fd, dst, READ_CHUNK, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			/* The client went away (or reset): whatever it asked for
			 * is abandoned. */
			http_conn_close(c, true);
			break;
		}
		c->in.len += (size_t)n;
		c->last_read = ev_now(loop);
		if (c->rq == RQ_IDLE) {
			c->rq = RQ_HEADERS;
			c->req_start = ev_now(loop);
		}
		process_input(c);
		break;
	}
	if (http_conn_leave(c))
		update_watchers(c);
}

void http_on_write(struct ev_loop *loop, ev_io *w, int revents)
{
	struct http_conn *c = w->data;

	c->busy++;
	if (!send_out(c)) {
		http_conn_close(c, true);
		http_conn_leave(c);
		return;
	}
	if (!buf_avail(&c->out) && c->closing) {
		http_conn_close(c, true);
		http_conn_leave(c);
		return;
	}
	if (c->out_high && buf_avail(&c->out) < HTTP_OUT_LOW) {
		c->out_high = false;
		if (c->h && c->h->on_drain)
			c->h->on_drain(c->hctx);
	}
	if (http_conn_leave(c))
		update_watchers(c);
}
