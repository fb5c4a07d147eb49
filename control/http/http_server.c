/* SPDX-License-Identifier: MIT */
/* The HTTP server around the connections of http.c: listeners and accept,
 * the connection budgets (unauthenticated TCP, the unix socket's reserve)
 * and who is pushed out to keep them, the sweep of every deadline, and the
 * server's lifetime. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "http_int.h"
#include "util.h"

#define SWEEP_PERIOD 0.25

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
		http_conn_close(c, true);
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
	http_conn_close(oldest, true);
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
		ev_io_init(&c->rw, http_on_read, fd, EV_READ);
		ev_io_init(&c->ww, http_on_write, fd, EV_WRITE);
		c->rw.data = c->ww.data = c;
		c->last_read = c->last_write = ev_now(loop);
		http_conn_reset(c);
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

bool http_conn_peer(const struct http_conn *c, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	memset(ss, 0, sizeof(*ss));
	if (getpeername(c->fd, (struct sockaddr *)ss, &len) || len > sizeof(*ss))
		return false;
	return ss->ss_family == AF_INET || ss->ss_family == AF_INET6;
}

unsigned http_server_conns(const struct http_server *s)
{
	return s->nconns;
}

void http_server_free(struct http_server *s)
{
	while (s->conns)
		http_conn_close(s->conns, true);
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
