/* SPDX-License-Identifier: MIT */
/* The event log's table in kilnd's SQLite database (store.c creates it in
 * its schema 5): one row per event, its JSON as answered. Plain SQL over a
 * connection it is given, so that it can be tested on its own. */
#ifndef KILND_EVENTS_DB_H
#define KILND_EVENTS_DB_H

#include <stdbool.h>
#include <stdint.h>

#define EV_DB_SCHEMA                                              \
	"CREATE TABLE events ("                                   \
	" id INTEGER PRIMARY KEY,"                                \
	" sandbox TEXT NOT NULL,"                                 \
	" tenant TEXT,"                                           \
	" time_ms INTEGER NOT NULL,"                              \
	" type TEXT NOT NULL,"                                    \
	" body TEXT NOT NULL);"                                   \
	"CREATE INDEX events_by_sandbox ON events (sandbox, id);" \
	"CREATE INDEX events_by_time ON events (time_ms);"

struct sqlite3;
struct ev_db;

/* One row as read back. */
struct ev_row {
	int64_t id;
	const char *sandbox, *type, *body; /* valid during the callback */
	const char *tenant;                /* its owner, NULL: the operator's */
};
/* Return true to stop. */
typedef bool (*ev_row_fn)(void *ctx, const struct ev_row *r);

int ev_db_open(struct sqlite3 *db, struct ev_db **out);
void ev_db_close(struct ev_db *d);
const char *ev_db_error(struct ev_db *d);

int ev_db_begin(struct ev_db *d);
int ev_db_commit(struct ev_db *d);
void ev_db_rollback(struct ev_db *d);
int ev_db_insert(struct ev_db *d, int64_t id, const char *sandbox, const char *tenant,
                 int64_t time_ms, const char *type, const char *body);

/* The highest id and the number of rows (0 and 0 when empty). */
int ev_db_stats(struct ev_db *d, int64_t *max_id, int64_t *count);
/* Delete all but the newest keep rows; *n: how many went. */
int ev_db_keep_newest(struct ev_db *d, int64_t keep, int64_t *n);
/* Delete the rows older than time_ms; *n: how many went. */
int ev_db_drop_before(struct ev_db *d, int64_t time_ms, int64_t *n);

/* A sandbox's rows with id < before (before <= 0: from the newest), newest
 * first, until fn says stop. */
int ev_db_sandbox(struct ev_db *d, const char *sandbox, int64_t before, ev_row_fn fn, void *ctx);
/* Every sandbox's rows with id > after, oldest first, at most max of them
 * scanned (fn may stop earlier); *last: the id of the last row scanned. */
int ev_db_after(struct ev_db *d, int64_t after, int max, ev_row_fn fn, void *ctx, int64_t *last);

#endif
