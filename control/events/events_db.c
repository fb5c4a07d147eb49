/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "events_db.h"

struct ev_db {
	sqlite3 *db;
	sqlite3_stmt *insert, *stats, *nth, *cut, *old, *by_sb, *after;
};

static const char *const sql[] = {
    "INSERT INTO events (id, sandbox, tenant, time_ms, type, body) VALUES (?,?,?,?,?,?)",
    "SELECT coalesce(max(id), 0), count(*) FROM events",
    "SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?",
    "DELETE FROM events WHERE id <= ?",
    "DELETE FROM events WHERE time_ms < ?",
    "SELECT id, sandbox, type, body, tenant FROM events WHERE sandbox = ? AND id < ? ORDER BY"
    " id DESC",
    "SELECT id, sandbox, type, body, tenant FROM events WHERE id > ? ORDER BY id LIMIT ?",
};

int ev_db_open(sqlite3 *db, struct ev_db **out)
{
	struct ev_db *d = calloc(1, sizeof(*d));
	sqlite3_stmt **st[] = {&d->insert, &d->stats, &d->nth,  &d->cut,
	                       &d->old,    &d->by_sb, &d->after};

	if (!d)
		return -ENOMEM;
	d->db = db;
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		if (sqlite3_prepare_v2(db, sql[i], -1, st[i], NULL) != SQLITE_OK) {
			ev_db_close(d);
			return -EIO;
		}
	}
	*out = d;
	return 0;
}

void ev_db_close(struct ev_db *d)
{
	if (!d)
		return;
	sqlite3_finalize(d->insert);
	sqlite3_finalize(d->stats);
	sqlite3_finalize(d->nth);
	sqlite3_finalize(d->cut);
	sqlite3_finalize(d->old);
	sqlite3_finalize(d->by_sb);
	sqlite3_finalize(d->after);
	free(d);
}

const char *ev_db_error(struct ev_db *d)
{
	return sqlite3_errmsg(d->db);
}

int ev_db_begin(struct ev_db *d)
{
	return sqlite3_exec(d->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

int ev_db_commit(struct ev_db *d)
{
	return sqlite3_exec(d->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

void ev_db_rollback(struct ev_db *d)
{
	sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
}

static int done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int ev_db_insert(struct ev_db *d, int64_t id, const char *sandbox, const char *tenant,
                 int64_t time_ms, const char *type, const char *body)
{
	sqlite3_stmt *st = d->insert;

	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, sandbox, -1, SQLITE_STATIC);
	if (tenant)
		sqlite3_bind_text(st, 3, tenant, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 3);
	sqlite3_bind_int64(st, 4, time_ms);
	sqlite3_bind_text(st, 5, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, body, -1, SQLITE_STATIC);
	return done(st);
}

int ev_db_stats(struct ev_db *d, int64_t *max_id, int64_t *count)
{
	int rc = -EIO;

	sqlite3_reset(d->stats);
	if (sqlite3_step(d->stats) == SQLITE_ROW) {
		*max_id = sqlite3_column_int64(d->stats, 0);
		*count = sqlite3_column_int64(d->stats, 1);
		rc = 0;
	}
	sqlite3_reset(d->stats);
	return rc;
}

static int deleted(struct ev_db *d, sqlite3_stmt *st, int64_t *n)
{
	int rc = done(st);

	*n = rc ? 0 : sqlite3_changes(d->db);
	return rc;
}

int ev_db_keep_newest(struct ev_db *d, int64_t keep, int64_t *n)
{
	int64_t cut;
	int step;

	*n = 0;
	sqlite3_reset(d->nth);
	sqlite3_bind_int64(d->nth, 1, keep);
	step = sqlite3_step(d->nth);
	cut = step == SQLITE_ROW ? sqlite3_column_int64(d->nth, 0) : 0;
	sqlite3_reset(d->nth);
	if (step != SQLITE_ROW)
		return step == SQLITE_DONE ? 0 : -EIO; /* not more than keep rows */
	sqlite3_bind_int64(d->cut, 1, cut);
	return deleted(d, d->cut, n);
}

int ev_db_drop_before(struct ev_db *d, int64_t time_ms, int64_t *n)
{
	sqlite3_reset(d->old);
	sqlite3_bind_int64(d->old, 1, time_ms);
	return deleted(d, d->old, n);
}

static int rows(sqlite3_stmt *st, ev_row_fn fn, void *ctx, int64_t *last)
{
	int step;

	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		struct ev_row r = {
		    .id = sqlite3_column_int64(st, 0),
		    .sandbox = (const char *)sqlite3_column_text(st, 1),
		    .type = (const char *)sqlite3_column_text(st, 2),
		    .body = (const char *)sqlite3_column_text(st, 3),
		    .tenant = (const char *)sqlite3_column_text(st, 4),
		};

		if (last)
			*last = r.id;
		if (!r.sandbox || !r.type || !r.body)
			continue;
		if (fn(ctx, &r)) {
			step = SQLITE_DONE;
			break;
		}
	}
	sqlite3_reset(st);
	return step == SQLITE_DONE ? 0 : -EIO;
}

int ev_db_sandbox(struct ev_db *d, const char *sandbox, int64_t before, ev_row_fn fn, void *ctx)
{
	sqlite3_reset(d->by_sb);
	sqlite3_bind_text(d->by_sb, 1, sandbox, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(d->by_sb, 2, before > 0 ? before : INT64_MAX);
	return rows(d->by_sb, fn, ctx, NULL);
}

int ev_db_after(struct ev_db *d, int64_t after, int max, ev_row_fn fn, void *ctx, int64_t *last)
{
	*last = after;
	sqlite3_reset(d->after);
	sqlite3_bind_int64(d->after, 1, after);
	sqlite3_bind_int(d->after, 2, max);
	return rows(d->after, fn, ctx, last);
}
