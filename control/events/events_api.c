/* SPDX-License-Identifier: MIT */
/* GET /sandboxes/{id}/events?limit=N&before=CURSOR&type=A,B: a sandbox's
 * events, newest first, in pages; the cursor is the id of the last event
 * of a page. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events_int.h"
#include "http/buf.h"
#include "http/http.h"
#include "api/api.h"
#include "kilnd.h"
#include "sandbox/sandbox.h"
#include "util.h"

#define PAGE_DEFAULT 100
#define PAGE_MAX     1000

struct page {
	const struct http_who *who;
	struct buf out;
	const char *types;
	int limit, n;
	int64_t last; /* id of the last event in the page */
	bool more;
};

static bool page_row(void *ctx, const struct ev_row *r)
{
	struct page *p = ctx;

	if (!events_type_in(p->types, r->type) || !auth_owns(p->who, r->tenant))
		return false;
	if (p->n == p->limit) {
		p->more = true; /* one past the page: there is a next one */
		return true;
	}
	buf_puts(&p->out, p->n ? "," : "");
	buf_puts(&p->out, r->body);
	p->last = r->id;
	p->n++;
	return false;
}

/* A query parameter as an integer in [lo, hi], or def when absent. */
static int int_param(struct http_req *req, const char *name, long long lo, long long hi,
                     long long def, long long *out)
{
	char *v = http_query_param(req, name), *end;
	long long x;
	bool bad;

	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	x = strtoll(v, &end, 10);
	bad = errno || end == v || *end || x < lo || x > hi;
	free(v);
	if (bad)
		return -1;
	*out = x;
	return 0;
}

void events_api_list(struct kilnd *kd, struct http_conn *c, struct http_req *req,
                     const char *sandbox)
{
	struct events *e = kd->events;
	struct page p = {0};
	long long limit, before;
	char err[160], *types;
	int rc;

	if (!e) {
		http_respond_error(c, 503, "the event log is not open");
		return;
	}
	if (!name_ok(sandbox)) {
		http_respond_error(c, 404, "sandbox %.64s not found", sandbox);
		return;
	}
	if (int_param(req, "limit", 1, PAGE_MAX, PAGE_DEFAULT, &limit)) {
		http_respond_error(c, 400, "'limit' must be an integer from 1 to %d", PAGE_MAX);
		return;
	}
	if (int_param(req, "before", 1, INT64_MAX, 0, &before)) {
		http_respond_error(c, 400,
		                   "'before' must be the 'next' cursor of a previous page (an "
		                   "event id)");
		return;
	}
	types = http_query_param(req, "type");
	if (types && events_types_ok(types, err, sizeof(err))) {
		http_respond_error(c, 400, "%s", err);
		free(types);
		return;
	}
	if (events_flush(kd))
		log_debug("events: answering from what is written");
	p.who = &req->who;
	p.types = types;
	p.limit = (int)limit;
	buf_puts(&p.out, "{\"events\":[");
	rc = ev_db_sandbox(e->db, sandbox, before, page_row, &p);
	free(types);
	if (rc) {
		http_respond_error(c, 500, "cannot read the event log: %s", ev_db_error(e->db));
		buf_free(&p.out);
		return;
	}
	if (!p.n && !before && !api_sb_find(kd, req, sandbox)) {
		http_respond_error(
		    c, 404,
		    "sandbox %s not found, and no events of it are kept (--events-keep, "
		    "--events-max)",
		    sandbox);
		buf_free(&p.out);
		return;
	}
	if (p.more)
		buf_printf(&p.out, "],\"next\":\"%lld\"}", (long long)p.last);
	else
		buf_puts(&p.out, "],\"next\":null}");
	http_respond(c, 200, "application/json", "Cache-Control: no-store\r\n", buf_head(&p.out),
	             buf_avail(&p.out));
	buf_free(&p.out);
}
