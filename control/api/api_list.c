/* SPDX-License-Identifier: MIT */
/* GET /sandboxes and /v2/sandboxes: the sandboxes a client sees, filtered by
 * state and metadata, newest first, paged (E2B's control API). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "auth/auth.h"
#include "api.h"
#include "http/jsonutil.h"
#include "sandbox/sandbox.h"
#include "util.h"

static bool in_csv(const char *csv, const char *word)
{
	size_t wl = strlen(word);

	for (const char *p = csv; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t l = comma ? (size_t)(comma - p) : strlen(p);

		if (l == wl && !strncmp(p, word, l))
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}

/* Does every word of a state filter name a state? (A typo would list nothing.) */
static bool states_known(const char *csv)
{
	for (const char *p = csv;;) {
		const char *comma = strchr(p, ',');
		size_t l = comma ? (size_t)(comma - p) : strlen(p);
		bool known = false;

		for (int s = SB_STARTING; s <= SB_ERROR; s++)
			known |= strlen(sb_state_name(s)) == l && !strncmp(p, sb_state_name(s), l);
		if (!known)
			return false;
		if (!comma)
			return true;
		p = comma + 1;
	}
}

/* E2B's metadata filter: "k=v&k2=v2" (itself URL-encoded in the query). */
static bool metadata_matches(const struct sandbox *sb, const char *filter)
{
	char *f = strdup(filter), *save = NULL;
	bool ok = true;

	for (char *kv = strtok_r(f, "&", &save); kv && ok; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		json_t *v;

		if (!eq)
			continue;
		*eq = 0;
		v = json_object_get(sb->metadata, kv);
		ok = v && !strcmp(json_string_value(v), eq + 1);
	}
	free(f);
	return ok;
}

/* "2024-01-02T03:04:05.678Z" (what JS's toISOString() gives) in ms, or -1. */
static int64_t parse_iso8601(const char *s)
{
	struct tm tm = {0};
	int ms = 0, used = 0;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	           &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6)
		return -1;
	s += used;
	if (*s == '.') {
		int digits = 0;

		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*s - '0');
		while (digits > 0 && digits < 3) {
			ms *= 10;
			digits++;
		}
	}
	if (*s != 'Z' && *s)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

static int cmp_newest_first(const void *a, const void *b)
{
	const struct sandbox *x = *(struct sandbox *const *)a, *y = *(struct sandbox *const *)b;

	if (x->rec.created_ms != y->rec.created_ms)
		return x->rec.created_ms > y->rec.created_ms ? -1 : 1;
	return -strcmp(x->rec.id, y->rec.id);
}

/* Paging token: "<created_ms>.<id>" of the last sandbox returned. */
static bool after_token(const struct sandbox *sb, long long tok_ms, const char *tok_id, bool asc)
{
	int c;

	if (sb->rec.created_ms != tok_ms)
		c = sb->rec.created_ms < tok_ms ? -1 : 1;
	else
		c = strcmp(sb->rec.id, tok_id);
	return asc ? c > 0 : c < 0;
}

/* GET /sandboxes (all states) and /v2/sandboxes (running and paused by default, E2B's
 * pages of `limit`, default 100, with X-Next-Token when more follow). */
void api_list(struct kilnd *kd, struct http_conn *c, struct http_req *req, bool v2)
{
	char *state = http_query_param(req, "state"), *meta = http_query_param(req, "metadata");
	char *tmpl = http_query_param(req, "template"),
	     *after = http_query_param(req, "startedAfter");
	char *order = http_query_param(req, "order"), *lim = http_query_param(req, "limit");
	char *tok = http_query_param(req, "nextToken"), tok_id[SB_ID_LEN + 1] = "", *end;
	long long limit = v2 ? 100 : LLONG_MAX, tok_ms = 0;
	int64_t after_ms = -1;
	struct sandbox **all = NULL, *sb;
	size_t n = 0, cap = 0, out = 0;
	bool asc = order && !strcasecmp(order, "asc");
	json_t *arr = NULL;
	char hdr[96] = "";

	if (lim) {
		limit = strtoll(lim, &end, 10);
		if (!*lim || *end || limit < 1 || limit > 1000) {
			http_respond_error(c, 400, "limit must be between 1 and 1000");
			goto out;
		}
	}
	if (state && !states_known(state)) {
		http_respond_error(c, 400,
		                   "state must be a comma-separated list of starting, running, "
		                   "pausing, paused, resuming, killed, error");
		goto out;
	}
	if (order && !asc && strcasecmp(order, "desc")) {
		http_respond_error(c, 400, "order must be asc or desc");
		goto out;
	}
	if (after && (after_ms = parse_iso8601(after)) < 0) {
		http_respond_error(c, 400, "startedAfter must be an ISO 8601 time");
		goto out;
	}
	if (tok && (sscanf(tok, "%lld.%20s", &tok_ms, tok_id) != 2 || !tok_id[0])) {
		http_respond_error(c, 400, "malformed nextToken");
		goto out;
	}
	for (sb = kd->sandboxes; sb; sb = sb->next) {
		const char *st = sb_state_name(sb->state);

		if (sb->rec.flags & SB_F_POOL)
			continue; /* not a user's until taken from its pool */
		if (!auth_owns(&req->who, sb->rec.tenant))
			continue;
		/* E2B lists running and paused sandboxes unless told */
		if (state ? !in_csv(state, st)
		          : v2 && strcmp(st, "running") && strcmp(st, "paused"))
			continue;
		if (meta && !metadata_matches(sb, meta))
			continue;
		if (tmpl && *tmpl && strcmp(tmpl, sb->rec.template_id))
			continue;
		if (after_ms >= 0 && sb->rec.created_ms <= after_ms)
			continue;
		if (n == cap) {
			struct sandbox **na =
			    realloc(all, (cap = cap ? 2 * cap : 16) * sizeof(*na));

			if (!na) {
				http_respond_error(c, 500, "out of memory");
				goto out;
			}
			all = na;
		}
		all[n++] = sb;
	}
	if (n)
		qsort(all, n, sizeof(*all), cmp_newest_first);
	arr = json_array();
	for (size_t k = 0; k < n && arr; k++) {
		sb = all[asc ? n - 1 - k : k];
		if (tok && !after_token(sb, tok_ms, tok_id, asc))
			continue;
		if ((long long)out == limit) {
			/* more follow: the token names the last one sent */
			struct sandbox *last = all[asc ? n - k : k - 1];

			snprintf(hdr, sizeof(hdr), "X-Next-Token: %lld.%s\r\n",
			         (long long)last->rec.created_ms, last->rec.id);
			break;
		}
		json_array_append_new(arr, sb_to_json(sb));
		out++;
	}
	if (!arr) {
		http_respond_error(c, 500, "out of memory");
		goto out;
	}
	{
		char *body = json_dumps(arr, JSON_COMPACT);

		if (body)
			http_respond(c, 200, "application/json", hdr[0] ? hdr : NULL, body,
			             strlen(body));
		else
			http_respond_error(c, 500, "out of memory");
		free(body);
	}
out:
	json_decref(arr);
	free(all);
	free(state);
	free(meta);
	free(tmpl);
	free(after);
	free(order);
	free(lim);
	free(tok);
}
