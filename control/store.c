/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store.h"
#include "util.h"

#define SCHEMA_VERSION 1

struct store {
	sqlite3 *db;
	sqlite3_stmt *put, *del, *load;
};

static const char schema[] = "CREATE TABLE IF NOT EXISTS sandboxes ("
                             " id TEXT PRIMARY KEY,"
                             " template TEXT NOT NULL,"
                             " state TEXT NOT NULL,"
                             " reason TEXT,"
                             " pid INTEGER NOT NULL DEFAULT 0,"
                             " pid_start INTEGER NOT NULL DEFAULT 0,"
                             " created_ms INTEGER NOT NULL,"
                             " end_ms INTEGER NOT NULL,"
                             " died_ms INTEGER NOT NULL DEFAULT 0,"
                             " memory_mb INTEGER NOT NULL,"
                             " cpu_count INTEGER NOT NULL,"
                             " env TEXT,"
                             " metadata TEXT);";

static int fail(struct store *s, const char *what)
{
	log_err("store: %s: %s", what, sqlite3_errmsg(s->db));
	return -EIO;
}

int store_open(struct store **out, const char *path)
{
	struct store *s = calloc(1, sizeof(*s));
	sqlite3_stmt *st;
	int version = 0;

	if (!s)
		return -ENOMEM;
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK)
		goto fail;
	sqlite3_busy_timeout(s->db, 2000);
	/* WAL + NORMAL: a commit survives the process dying (not a power cut,
	 * which also takes the VMs with it). */
	if (sqlite3_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL,
	                 NULL) != SQLITE_OK)
		goto fail;
	if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	if (sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version > SCHEMA_VERSION) {
		log_err("store: %s has schema version %d; this kilnd knows %d", path, version,
		        SCHEMA_VERSION);
		goto fail_quiet;
	}
	if (sqlite3_exec(s->db, schema, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s->db, "PRAGMA user_version = 1", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (sqlite3_prepare_v2(s->db,
	                       "INSERT OR REPLACE INTO sandboxes (id, template, state, reason, pid,"
	                       " pid_start, created_ms, end_ms, died_ms, memory_mb, cpu_count, env,"
	                       " metadata) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
	                       -1, &s->put, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "DELETE FROM sandboxes WHERE id = ?", -1, &s->del, NULL) !=
	        SQLITE_OK ||
	    sqlite3_prepare_v2(s->db,
	                       "SELECT id, template, state, reason, pid, pid_start, created_ms,"
	                       " end_ms, died_ms, memory_mb, cpu_count, env, metadata"
	                       " FROM sandboxes ORDER BY created_ms",
	                       -1, &s->load, NULL) != SQLITE_OK)
		goto fail;
	*out = s;
	return 0;
fail:
	fail(s, path);
fail_quiet:
	store_close(s);
	return -EIO;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	sqlite3_finalize(s->put);
	sqlite3_finalize(s->del);
	sqlite3_finalize(s->load);
	sqlite3_close(s->db);
	free(s);
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

int store_put(struct store *s, const struct sb_record *r)
{
	sqlite3_stmt *st = s->put;
	int rc;

	sqlite3_reset(st);
	bind_text(st, 1, r->id);
	bind_text(st, 2, r->template_id);
	bind_text(st, 3, r->state);
	bind_text(st, 4, r->reason);
	sqlite3_bind_int(st, 5, r->pid);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)r->pid_start);
	sqlite3_bind_int64(st, 7, r->created_ms);
	sqlite3_bind_int64(st, 8, r->end_ms);
	sqlite3_bind_int64(st, 9, r->died_ms);
	sqlite3_bind_int(st, 10, r->memory_mb);
	sqlite3_bind_int(st, 11, r->cpu_count);
	bind_text(st, 12, r->env_json);
	bind_text(st, 13, r->metadata_json);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : fail(s, "put");
}

int store_delete(struct store *s, const char *id)
{
	int rc;

	sqlite3_reset(s->del);
	bind_text(s->del, 1, id);
	rc = sqlite3_step(s->del);
	sqlite3_reset(s->del);
	return rc == SQLITE_DONE ? 0 : fail(s, "delete");
}

static char *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? strdup((const char *)t) : NULL;
}

int store_load(struct store *s, int (*cb)(void *ctx, struct sb_record *r), void *ctx)
{
	sqlite3_stmt *st = s->load;
	int rc = 0, step;

	sqlite3_reset(st);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		struct sb_record r = {0};
		const unsigned char *id = sqlite3_column_text(st, 0);

		if (!id || strlen((const char *)id) > SB_ID_LEN)
			continue;
		strcpy(r.id, (const char *)id);
		r.template_id = col_text(st, 1);
		r.state = col_text(st, 2);
		r.reason = col_text(st, 3);
		r.pid = sqlite3_column_int(st, 4);
		r.pid_start = (uint64_t)sqlite3_column_int64(st, 5);
		r.created_ms = sqlite3_column_int64(st, 6);
		r.end_ms = sqlite3_column_int64(st, 7);
		r.died_ms = sqlite3_column_int64(st, 8);
		r.memory_mb = sqlite3_column_int(st, 9);
		r.cpu_count = sqlite3_column_int(st, 10);
		r.env_json = col_text(st, 11);
		r.metadata_json = col_text(st, 12);
		if (!r.template_id || !r.state) {
			sb_record_free(&r);
			continue;
		}
		rc = cb(ctx, &r); /* takes ownership of r's strings */
		if (rc)
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = fail(s, "load");
	sqlite3_reset(st);
	return rc;
}

void sb_record_free(struct sb_record *r)
{
	free(r->template_id);
	free(r->state);
	free(r->reason);
	free(r->env_json);
	free(r->metadata_json);
	r->template_id = r->state = r->reason = r->env_json = r->metadata_json = NULL;
}
