/* SPDX-License-Identifier: MIT */
/* Request parsing: http_parser callbacks that collect the request line and
 * headers within their limits, route the request, and hand the body to the
 * handler (buffered up to its limit, or streamed). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_int.h"
#include "util.h"

const char *http_header(const struct http_req *req, const char *name)
{
	for (unsigned i = 0; i < req->nhdrs; i++)
		if (!strcasecmp(req->hdrs[i].name, name))
			return req->hdrs[i].value;
	return NULL;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Percent-decode n bytes; '+' means space in queries. NULL if the result
 * would hold a NUL or the escapes are malformed. */
static char *pct_decode(const char *s, size_t n, bool plus)
{
	char *out = malloc(n + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= n)
				goto bad;
			hi = hexval((unsigned char)s[i + 1]);
			lo = hexval((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				goto bad;
			*o++ = (char)(hi << 4 | lo);
			i += 2;
		} else if (plus && s[i] == '+') {
			*o++ = ' ';
		} else {
			*o++ = s[i];
		}
	}
	*o = 0;
	return out;
bad:
	free(out);
	return NULL;
}

char *http_query_param(const struct http_req *req, const char *name)
{
	const char *q = req->query;
	size_t nl = strlen(name);

	while (q && *q) {
		const char *amp = strchr(q, '&');
		const char *end = amp ? amp : q + strlen(q);
		const char *eq = memchr(q, '=', (size_t)(end - q));
		size_t kl = (size_t)((eq ? eq : end) - q);

		if (kl == nl && !memcmp(q, name, nl))
			return eq ? pct_decode(eq + 1, (size_t)(end - eq - 1), true) : strdup("");
		q = amp ? amp + 1 : NULL;
	}
	return NULL;
}

static struct http_conn *conn_of(http_parser *p)
{
	return p->data;
}

static int on_message_begin(http_parser *p)
{
	struct http_conn *c = conn_of(p);

	if (c->rq == RQ_IDLE) {
		c->rq = RQ_HEADERS;
		c->req_start = ev_now(c->srv->loop);
	}
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
	struct http_conn *c = conn_of(p);

	if (c->url_len + n > HTTP_MAX_URL) {
		c->reject = 414;
		return -1;
	}
	if (c->url_len == 0)
		c->url_off = c->hbuf.len;
	buf_append(&c->hbuf, at, n);
	c->url_len += n;
	return 0;
}

static int header_bytes(struct http_conn *c, size_t n)
{
	if (c->hbuf.len - c->url_len + n > HTTP_MAX_HEADER_BYTES) {
		c->reject = 431;
		return -1;
	}
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
	struct http_conn *c = conn_of(p);

	if (header_bytes(c, n + 1))
		return -1;
	if (c->last_cb != 1) {
		if (c->nfields == HTTP_MAX_HEADERS) {
			c->reject = 431;
			return -1;
		}
		buf_append(&c->hbuf, "", 1); /* terminates the previous string */
		c->name_off[c->nfields] = c->hbuf.len;
		c->value_off[c->nfields] = 0;
		c->nfields++;
		c->last_cb = 1;
	}
	return buf_append(&c->hbuf, at, n) ? -1 : 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
	struct http_conn *c = conn_of(p);

	if (header_bytes(c, n + 1))
		return -1;
	if (c->last_cb != 2) {
		buf_append(&c->hbuf, "", 1);
		c->value_off[c->nfields - 1] = c->hbuf.len;
		c->last_cb = 2;
	}
	return buf_append(&c->hbuf, at, n) ? -1 : 0;
}

static int on_headers_complete(http_parser *p)
{
	struct http_conn *c = conn_of(p);
	struct http_req *r = &c->req;
	const char *url, *qm;
	size_t plen;

	if (buf_append(&c->hbuf, "", 1))
		return -1;
	url = c->hbuf.data + c->url_off;
	/* hbuf no longer grows for this request: pointers into it stay valid. */
	r->url = url;
	for (unsigned i = 0; i < c->nfields; i++) {
		r->hdrs[i].name = c->hbuf.data + c->name_off[i];
		r->hdrs[i].value = c->value_off[i] ? c->hbuf.data + c->value_off[i] : "";
	}
	r->nhdrs = c->nfields;
	r->method = p->method;
	r->upgrade = p->upgrade;
	r->has_content_length = http_header(r, "Content-Length") != NULL;
	r->content_length = r->has_content_length ? p->content_length : 0;
	r->has_body = (p->flags & F_CHUNKED) || (r->has_content_length && p->content_length > 0);
	qm = strchr(url, '?');
	plen = qm ? (size_t)(qm - url) : strlen(url);
	r->query = qm ? qm + 1 : "";
	r->path = pct_decode(url, plen, false);
	c->keep_alive = http_should_keep_alive(p);
	c->rq = RQ_BODY; /* RQ_DONE only once on_message_complete has run */
	c->last_read = ev_now(c->srv->loop);
	if (!r->path || r->path[0] != '/') {
		http_respond_error(c, 400, "bad request path");
		return 0;
	}
	c->busy++;
	c->srv->route(c, r, c->srv->udata);
	if (!http_conn_leave(c))
		return -1;
	if (c->rs == RS_NONE && !c->h)
		http_respond_error(c, 500, "request not handled");
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct http_conn *c = conn_of(p);
	int rc = 0;

	c->last_read = ev_now(c->srv->loop);
	if (!c->h || c->rs == RS_DONE)
		return 0; /* answered already: the body is dropped */
	if (c->h->on_body) {
		c->busy++;
		rc = c->h->on_body(c->hctx, at, n);
		if (!http_conn_leave(c))
			return -1;
		if (rc < 0 && c->h) {
			c->h = NULL;
			http_respond_error(c, 400, "request body refused");
		}
		return 0;
	}
	if (buf_avail(&c->req.body) + n > c->body_limit) {
		const struct http_handler *h = c->h;

		c->h = NULL;
		if (h->on_abort) {
			c->busy++;
			h->on_abort(c->hctx);
			if (!http_conn_leave(c))
				return -1;
		}
		http_respond_error(c, 413, "request body larger than %zu bytes", c->body_limit);
		return 0;
	}
	if (buf_append(&c->req.body, at, n)) {
		c->reject = 500;
		return -1;
	}
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct http_conn *c = conn_of(p);

	c->rq = RQ_DONE;
	/* One request at a time: the rest of the input waits. */
	http_parser_pause(p, 1);
	if (c->h && c->h->on_complete) {
		c->busy++;
		c->h->on_complete(c->hctx);
		if (!http_conn_leave(c))
			return -1;
	}
	return 0;
}

void http_parse_settings(http_parser_settings *s)
{
	http_parser_settings_init(s);
	s->on_message_begin = on_message_begin;
	s->on_url = on_url;
	s->on_header_field = on_header_field;
	s->on_header_value = on_header_value;
	s->on_headers_complete = on_headers_complete;
	s->on_body = on_body;
	s->on_message_complete = on_message_complete;
}
