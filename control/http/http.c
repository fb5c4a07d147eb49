/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "http.h"
#include "http_int.h"
#include "jsonutil.h"
#include "util.h"

#define READ_CHUNK   (64u << 10)
#define IN_MAX       (128u << 10) /* input held while a request is in progress */
#define SWEEP_PERIOD 0.25

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

static void conn_close(struct http_conn *c, bool notify)
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

static void reset_request(struct http_conn *c)
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
	reset_request(c);
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
	conn_close(c, false);
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

static void on_read(struct ev_loop *loop, ev_io *w, int revents)
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
			conn_close(c, true);
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
			conn_close(c, true);
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

static void on_write(struct ev_loop *loop, ev_io *w, int revents)
{
	struct http_conn *c = w->data;

	c->busy++;
	if (!send_out(c)) {
		conn_close(c, true);
		http_conn_leave(c);
		return;
	}
	if (!buf_avail(&c->out) && c->closing) {
		conn_close(c, true);
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

/* One timer for all connections: a quarter-second sweep of deadlines. */
static void on_sweep(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct http_server *s = w->data;
	const struct http_cfg *cfg = &s->cfg;
	ev_tstamp now = ev_now(loop);
	struct http_conn *c, *next;

	for (c = s->conns; c; c = next) {
		const char *why = NULL;

		next = c->next;
		if (buf_avail(&c->out) && now - c->last_write > cfg->write_timeout)
			why = "write timeout";
		else if (c->closing)
			continue;
		else if (c->rq == RQ_IDLE && !c->upgraded && c->rs == RS_NONE &&
		         now - c->last_read >
		             (c->trusted ? cfg->idle_timeout : cfg->untrusted_idle))
			why = c->trusted ? "idle" : "idle and unauthenticated";
		else if (c->rq == RQ_HEADERS && now - c->req_start > cfg->header_timeout)
			why = "header timeout";
		else if (c->rq == RQ_BODY && !c->read_paused && !c->held &&
		         now - c->last_read > cfg->body_timeout)
			why = "body timeout";
		if (!why)
			continue;
		log_debug("http: closing connection: %s", why);
		if ((c->rq == RQ_HEADERS || c->rq == RQ_BODY) && c->rs == RS_NONE &&
		    !buf_avail(&c->out) && !c->upgraded) {
			/* Tell a slow client why, then hang up (its handler, if
			 * any, learns of it as a client that went away). */
			const struct http_handler *h = c->h;

			c->keep_alive = false;
			c->h = NULL;
			if (h && h->on_abort) {
				c->busy++;
				h->on_abort(c->hctx);
				if (!http_conn_leave(c))
					continue;
			}
			if (c->rs == RS_NONE)
				http_respond_error(c, 408, "request %s not received in time",
				                   c->rq == RQ_BODY ? "body" : "headers");
			c->last_write = now;
			c->closing = true;
			continue;
		}
		conn_close(c, true);
	}
	if (!s->nconns)
		ev_timer_stop(loop, w);
}

/* Can c go to make room: unauthenticated, and no request being served? */
static bool evictable(const struct http_conn *c)
{
	return !c->trusted && !c->closing && !c->upgraded && !c->h && c->rs == RS_NONE &&
	       (c->rq == RQ_IDLE || c->rq == RQ_HEADERS) && !buf_avail(&c->out);
}

/* Room for one more connection from listener l? A TCP one may push out the
 * oldest unauthenticated connection (the list is newest first). */
static bool make_room(struct http_server *s, const struct http_listener *l)
{
	const struct http_cfg *cfg = &s->cfg;
	struct http_conn *c, *oldest = NULL;
	unsigned tcp = 0, untrusted = 0;

	if (!(l->flags & HTTP_LISTEN_TCP))
		return s->nconns < cfg->max_conns;
	for (c = s->conns; c; c = c->next) {
		if (!(c->flags & HTTP_LISTEN_TCP))
			continue;
		tcp++;
		untrusted += !c->trusted;
		if (evictable(c))
			oldest = c;
	}
	if (untrusted < cfg->max_untrusted && s->nconns < cfg->max_conns &&
	    tcp + cfg->unix_reserve < cfg->max_conns)
		return true;
	if (!oldest)
		return false;
	log_debug("http: closing the oldest unauthenticated connection for a new one");
	conn_close(oldest, true);
	return true;
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct http_listener *l = w->data;
	struct http_server *s = l->srv;

	for (int i = 0; i < 64; i++) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct http_conn *c;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_warn("accept: %s", strerror(errno));
			return;
		}
		if (!make_room(s, l)) {
			static const char body[] =
			    "{\"code\":503,\"message\":\"too many connections\"}";
			char msg[256];
			int n = snprintf(msg, sizeof(msg),
			                 "HTTP/1.1 503 Service Unavailable\r\n"
			                 "Content-Type: application/json\r\nConnection: close\r\n"
			                 "Retry-After: 1\r\nContent-Length: %zu\r\n\r\n%s",
			                 sizeof(body) - 1, body);

			/* Best effort: a full socket buffer just loses the answer. */
			if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				log_debug("accept: %s", strerror(errno));
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			return;
		}
		c->srv = s;
		c->fd = fd;
		c->flags = l->flags;
		c->trusted = !(l->flags & HTTP_LISTEN_TCP);
		if (l->flags & HTTP_LISTEN_TCP) {
			/* Without it the small last write of a streamed answer
			 * (an end event after a process's output) waits for the
			 * client's delayed ACK, ~40 ms. Writes are not small:
			 * each is what the loop gathered in c->out. */
			int one = 1;

			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		http_parser_init(&c->parser, HTTP_REQUEST);
		c->parser.data = c;
		ev_io_init(&c->rw, on_read, fd, EV_READ);
		ev_io_init(&c->ww, on_write, fd, EV_WRITE);
		c->rw.data = c->ww.data = c;
		c->last_read = c->last_write = ev_now(loop);
		reset_request(c);
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->nconns++;
		ev_io_start(loop, &c->rw);
		if (!ev_is_active(&s->sweep))
			ev_timer_start(loop, &s->sweep);
	}
}

/* ---------------------------------------------------------------- server */

struct http_server *http_server_new(struct ev_loop *loop, const struct http_cfg *cfg,
                                    http_route_fn route, void *udata)
{
	struct http_server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->loop = loop;
	s->cfg = *cfg;
	s->route = route;
	s->udata = udata;
	http_parse_settings(&s->settings);
	ev_timer_init(&s->sweep, on_sweep, SWEEP_PERIOD, SWEEP_PERIOD);
	s->sweep.data = s;
	return s;
}

int http_server_add_listener(struct http_server *s, int fd, unsigned flags)
{
	struct http_listener *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->srv = s;
	l->fd = fd;
	l->flags = flags;
	ev_io_init(&l->w, on_accept, fd, EV_READ);
	l->w.data = l;
	ev_io_start(s->loop, &l->w);
	l->next = s->listeners;
	s->listeners = l;
	return 0;
}

void http_conn_trust(struct http_conn *c)
{
	c->trusted = true;
}

unsigned http_server_conns(const struct http_server *s)
{
	return s->nconns;
}

void http_server_free(struct http_server *s)
{
	while (s->conns)
		conn_close(s->conns, true);
	while (s->listeners) {
		struct http_listener *l = s->listeners;

		s->listeners = l->next;
		ev_io_stop(s->loop, &l->w);
		close(l->fd);
		free(l);
	}
	ev_timer_stop(s->loop, &s->sweep);
	free(s);
}
