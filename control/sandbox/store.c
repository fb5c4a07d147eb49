/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "events/events_db.h"
#include "store.h"
#include "util.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

/* 1: sandboxes. 2: the files a sandbox runs on, flags, pause data, and
 * templates. 3: a sandbox's own timeout (auto-resume re-arms it), its count
 * of resumes, and a template's warm pool size. 4 to 9: see upgrade4...
 * below. An older database is upgraded in place. */
#define SCHEMA_VERSION 9

struct store {
	sqlite3 *db;
	sqlite3_stmt *put, *del, *load;
	sqlite3_stmt *tput, *tdel, *tload;
	sqlite3_stmt *kput, *kload, *kdel;
};

static const char schema1[] = "CREATE TABLE IF NOT EXISTS sandboxes ("
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

static const char upgrade2[] = "ALTER TABLE sandboxes ADD COLUMN kernel TEXT;"
                               "ALTER TABLE sandboxes ADD COLUMN initrd TEXT;"
                               "ALTER TABLE sandboxes ADD COLUMN image TEXT;"
                               "ALTER TABLE sandboxes ADD COLUMN flags INTEGER NOT NULL DEFAULT 0;"
                               "ALTER TABLE sandboxes ADD COLUMN paused_ms INTEGER NOT NULL"
                               " DEFAULT 0;"
                               "ALTER TABLE sandboxes ADD COLUMN snap_bytes INTEGER NOT NULL"
                               " DEFAULT 0;"
                               "CREATE TABLE templates ("
                               " name TEXT PRIMARY KEY,"
                               " image_name TEXT NOT NULL,"
                               " kernel TEXT NOT NULL,"
                               " initrd TEXT NOT NULL,"
                               " image TEXT,"
                               " warmup TEXT,"
                               " snap_id TEXT NOT NULL,"
                               " memory_mb INTEGER NOT NULL,"
                               " cpu_count INTEGER NOT NULL,"
                               " snap_bytes INTEGER NOT NULL,"
                               " created_ms INTEGER NOT NULL,"
                               " build_ms INTEGER NOT NULL);";

static const char upgrade3[] = "ALTER TABLE sandboxes ADD COLUMN timeout_s INTEGER NOT NULL"
                               " DEFAULT 0;"
                               "ALTER TABLE sandboxes ADD COLUMN resumes INTEGER NOT NULL"
                               " DEFAULT 0;"
                               "ALTER TABLE templates ADD COLUMN pool INTEGER NOT NULL"
                               " DEFAULT 0;";

/* 4: the egress policy of sandboxes and templates (control/net/). */
static const char upgrade4[] = "ALTER TABLE sandboxes ADD COLUMN net TEXT;"
                               "ALTER TABLE templates ADD COLUMN net TEXT;";

/* 5: API keys of tenants (auth/keys.c), kept as SHA-256 hashes, and the
 * tenant that owns each sandbox and template (NULL: the operator's). */
static const char upgrade5[] = "CREATE TABLE api_keys ("
                               " id TEXT PRIMARY KEY,"
                               " tenant TEXT NOT NULL,"
                               " name TEXT,"
                               " hash TEXT NOT NULL UNIQUE,"
                               " created_ms INTEGER NOT NULL,"
                               " revoked_ms INTEGER NOT NULL DEFAULT 0);"
                               "ALTER TABLE sandboxes ADD COLUMN tenant TEXT;"
                               "ALTER TABLE templates ADD COLUMN tenant TEXT;";

/* 6: per-sandbox secrets (kept out of every answer and log) and the event
 * log (control/events/). */
static const char upgrade6[] = "ALTER TABLE sandboxes ADD COLUMN secrets TEXT;" EV_DB_SCHEMA;

/* 7: a sandbox's DNS pins (net/policy.h, store_pins.c), so that a
 * restarted kilnd lets it reach what its lookups returned before. */
static const char upgrade7[] = STORE_PINS_SCHEMA;

/* 8: what a sandbox's agent said of itself (HELLO's flags, and whether it
 * takes users), so that a restarted kilnd knows it before a resume. */
static const char upgrade8[] = "ALTER TABLE sandboxes ADD COLUMN agent_flags INTEGER NOT NULL"
                               " DEFAULT -1;"
                               "ALTER TABLE sandboxes ADD COLUMN agent_no_users INTEGER NOT NULL"
                               " DEFAULT 0;";

/* 9: the file a pause under way may append to, as it was when the pause
 * started (pause_base.h): a restarted kilnd tells a finished pause from
 * the older generation by it. */
static const char upgrade9[] = "ALTER TABLE sandboxes ADD COLUMN pause_base TEXT;";

static int fail(struct store *s, const char *what)
{
	log_err("store: %s: %s", what, sqlite3_errmsg(s->db));
	return -EIO;
}

sqlite3 *store_db(struct store *s)
{
	return s->db;
}

const char *store_error(struct store *s)
{
	return sqlite3_errmsg(s->db);
}

static int user_version(struct store *s)
{
	sqlite3_stmt *st;
	int version = -1;

	if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return version;
}

/* Bring the schema to SCHEMA_VERSION in one transaction. */
static int migrate(struct store *s, int version)
{
	if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	if (version < 1 && sqlite3_exec(s->db, schema1, NULL, NULL, NULL) != SQLITE_OK)
		goto rollback;
	if (version < 2 && sqlite3_exec(s->db, upgrade2, NULL, NULL, NULL) != SQLITE_OK)
		goto rollback;
	if (version < 3 && sqlite3_exec(s->db, upgrade3, NULL, NULL, NULL) != SQLITE_OK)
		goto rollback;
	if (version < 4 && sqlite3_exec(s->db, upgrade4, NULL, NULL, NULL) != SQLITE_OK)
		goto rollback;
	if (version < 5 && sqlite3_exec(s->db, upgrade5, NULL, NULL, NULL) != SQLITE_OK)
		goto rollback;
	if (version < 6 && sqlite3_exec(s->db, upgrade6, NULL, NULL, NULL) != SQLITE_OK)
		goto rollback;
	if (version < 7 && sqlite3_exec(s->db, upgrade7, NULL, NULL, NULL) != SQLITE_OK)
		goto rollback;
	if (version < 8 && sqlite3_exec(s->db, upgrade8, NULL, NULL, NULL) != SQLITE_OK)
		goto rollback;
	if (version < 9 && sqlite3_exec(s->db, upgrade9, NULL, NULL, NULL) != SQLITE_OK)
		goto rollback;
	if (sqlite3_exec(s->db, "PRAGMA user_version = " STR(SCHEMA_VERSION) "; COMMIT", NULL, NULL,
	                 NULL) != SQLITE_OK)
		goto rollback;
	return 0;
rollback:
	log_err("store: upgrading the schema from version %d: %s", version, sqlite3_errmsg(s->db));
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

#define SB_COLS                                                                                \
	"id, template, state, reason, pid, pid_start, created_ms, end_ms, died_ms, memory_mb," \
	" cpu_count, env, metadata, kernel, initrd, image, flags, paused_ms, snap_bytes,"      \
	" timeout_s, resumes, net, tenant, secrets, agent_flags, agent_no_users, pause_base"
#define TMPL_COLS                                                                         \
	"name, image_name, kernel, initrd, image, warmup, snap_id, memory_mb, cpu_count," \
	" snap_bytes, created_ms, build_ms, pool, net, tenant"
#define KEY_COLS "id, tenant, name, hash, created_ms, revoked_ms"

int store_open(struct store **out, const char *path)
{
	struct store *s = calloc(1, sizeof(*s));
	int version;

	if (!s)
		return -ENOMEM;
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK)
		goto fail;
	sqlite3_busy_timeout(s->db, 2000);
	/* WAL + FULL: a commit survives a host crash too (the WAL is
	 * fsynced at each commit). NORMAL lost the last commits on a power
	 * cut: a paused sandbox's record, while its only copy (the snapshot
	 * on disk) survived, and with it what the user had in it. */
	if (sqlite3_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL,
	                 NULL) != SQLITE_OK)
		goto fail;
	version = user_version(s);
	if (version < 0)
		goto fail;
	if (version > SCHEMA_VERSION) {
		log_err("store: %s has schema version %d; this kilnd knows %d", path, version,
		        SCHEMA_VERSION);
		goto fail_quiet;
	}
	if (version < SCHEMA_VERSION && migrate(s, version))
		goto fail_quiet;
	if (sqlite3_prepare_v2(s->db,
	                       "INSERT OR REPLACE INTO sandboxes (" SB_COLS ") VALUES"
	                       " (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	                       -1, &s->put, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "DELETE FROM sandboxes WHERE id = ?", -1, &s->del, NULL) !=
	        SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "SELECT " SB_COLS " FROM sandboxes ORDER BY created_ms", -1,
	                       &s->load, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db,
	                       "INSERT OR REPLACE INTO templates (" TMPL_COLS ") VALUES"
	                       " (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	                       -1, &s->tput, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "DELETE FROM templates WHERE name = ?", -1, &s->tdel, NULL) !=
	        SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "SELECT " TMPL_COLS " FROM templates ORDER BY name", -1,
	                       &s->tload, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db,
	                       "INSERT OR REPLACE INTO api_keys (" KEY_COLS ") VALUES"
	                       " (?,?,?,?,?,?)",
	                       -1, &s->kput, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "SELECT " KEY_COLS " FROM api_keys ORDER BY created_ms", -1,
	                       &s->kload, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "DELETE FROM api_keys WHERE id = ?", -1, &s->kdel, NULL) !=
	        SQLITE_OK)
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
	sqlite3_finalize(s->tput);
	sqlite3_finalize(s->tdel);
	sqlite3_finalize(s->tload);
	sqlite3_finalize(s->kput);
	sqlite3_finalize(s->kload);
	sqlite3_finalize(s->kdel);
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

static int step_once(struct store *s, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : fail(s, what);
}

int store_put(struct store *s, const struct sb_record *r)
{
	sqlite3_stmt *st = s->put;

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
	bind_text(st, 14, r->kernel);
	bind_text(st, 15, r->initrd);
	bind_text(st, 16, r->image);
	sqlite3_bind_int(st, 17, (int)r->flags);
	sqlite3_bind_int64(st, 18, r->paused_ms);
	sqlite3_bind_int64(st, 19, r->snap_bytes);
	sqlite3_bind_int64(st, 20, r->timeout_s);
	sqlite3_bind_int64(st, 21, r->resumes);
	bind_text(st, 22, r->net_json);
	bind_text(st, 23, r->tenant);
	bind_text(st, 24, r->secrets_json);
	sqlite3_bind_int64(st, 25, r->agent_flags);
	sqlite3_bind_int(st, 26, r->agent_no_users);
	bind_text(st, 27, r->pause_base);
	return step_once(s, st, "put");
}

int store_delete(struct store *s, const char *id)
{
	sqlite3_reset(s->del);
	bind_text(s->del, 1, id);
	if (step_once(s, s->del, "delete"))
		return -EIO;
	return store_pins_delete(s, id);
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
		r.kernel = col_text(st, 13);
		r.initrd = col_text(st, 14);
		r.image = col_text(st, 15);
		r.flags = (unsigned)sqlite3_column_int(st, 16);
		r.paused_ms = sqlite3_column_int64(st, 17);
		r.snap_bytes = sqlite3_column_int64(st, 18);
		r.timeout_s = sqlite3_column_int64(st, 19);
		r.resumes = sqlite3_column_int64(st, 20);
		r.net_json = col_text(st, 21);
		r.tenant = col_text(st, 22);
		r.secrets_json = col_text(st, 23);
		r.agent_flags = sqlite3_column_int64(st, 24);
		if (r.agent_flags < -1 || r.agent_flags > UINT32_MAX)
			r.agent_flags = -1; /* not a value kilnd writes: unknown */
		r.agent_no_users = sqlite3_column_int(st, 25) != 0;
		r.pause_base = col_text(st, 26);
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
	free(r->net_json);
	free(r->tenant);
	free(r->secrets_json);
	free(r->pause_base);
	r->net_json = r->tenant = r->secrets_json = r->pause_base = NULL;
	free(r->kernel);
	free(r->initrd);
	free(r->image);
	r->template_id = r->state = r->reason = r->env_json = r->metadata_json = NULL;
	r->kernel = r->initrd = r->image = NULL;
}

/* ---------------------------------------------------------------- templates */

int store_tmpl_put(struct store *s, const struct tmpl_record *t)
{
	sqlite3_stmt *st = s->tput;

	sqlite3_reset(st);
	bind_text(st, 1, t->name);
	bind_text(st, 2, t->image_name);
	bind_text(st, 3, t->kernel);
	bind_text(st, 4, t->initrd);
	bind_text(st, 5, t->image);
	bind_text(st, 6, t->warmup_json);
	bind_text(st, 7, t->snap_id);
	sqlite3_bind_int(st, 8, t->memory_mb);
	sqlite3_bind_int(st, 9, t->cpu_count);
	sqlite3_bind_int64(st, 10, t->snap_bytes);
	sqlite3_bind_int64(st, 11, t->created_ms);
	sqlite3_bind_int64(st, 12, t->build_ms);
	sqlite3_bind_int(st, 13, t->pool);
	bind_text(st, 14, t->net_json);
	bind_text(st, 15, t->tenant);
	return step_once(s, st, "put template");
}

int store_tmpl_delete(struct store *s, const char *name)
{
	sqlite3_reset(s->tdel);
	bind_text(s->tdel, 1, name);
	return step_once(s, s->tdel, "delete template");
}

int store_tmpl_load(struct store *s, int (*cb)(void *ctx, struct tmpl_record *t), void *ctx)
{
	sqlite3_stmt *st = s->tload;
	int rc = 0, step;

	sqlite3_reset(st);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		struct tmpl_record t = {0};

		t.name = col_text(st, 0);
		t.image_name = col_text(st, 1);
		t.kernel = col_text(st, 2);
		t.initrd = col_text(st, 3);
		t.image = col_text(st, 4);
		t.warmup_json = col_text(st, 5);
		t.snap_id = col_text(st, 6);
		t.memory_mb = sqlite3_column_int(st, 7);
		t.cpu_count = sqlite3_column_int(st, 8);
		t.snap_bytes = sqlite3_column_int64(st, 9);
		t.created_ms = sqlite3_column_int64(st, 10);
		t.build_ms = sqlite3_column_int64(st, 11);
		t.pool = sqlite3_column_int(st, 12);
		t.net_json = col_text(st, 13);
		t.tenant = col_text(st, 14);
		if (!t.name || !t.image_name || !t.kernel || !t.initrd || !t.snap_id) {
			tmpl_record_free(&t);
			continue;
		}
		rc = cb(ctx, &t);
		if (rc)
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = fail(s, "load templates");
	sqlite3_reset(st);
	return rc;
}

void tmpl_record_free(struct tmpl_record *t)
{
	free(t->name);
	free(t->image_name);
	free(t->kernel);
	free(t->initrd);
	free(t->image);
	free(t->warmup_json);
	free(t->snap_id);
	free(t->net_json);
	free(t->tenant);
	memset(t, 0, sizeof(*t));
}

/* ---------------------------------------------------------------- API keys */

int store_key_put(struct store *s, const struct key_record *k)
{
	sqlite3_stmt *st = s->kput;

	sqlite3_reset(st);
	bind_text(st, 1, k->id);
	bind_text(st, 2, k->tenant);
	bind_text(st, 3, k->name);
	bind_text(st, 4, k->hash);
	sqlite3_bind_int64(st, 5, k->created_ms);
	sqlite3_bind_int64(st, 6, k->revoked_ms);
	return step_once(s, st, "put API key");
}

int store_key_delete(struct store *s, const char *id)
{
	sqlite3_reset(s->kdel);
	bind_text(s->kdel, 1, id);
	return step_once(s, s->kdel, "delete API key");
}

int store_key_load(struct store *s, int (*cb)(void *ctx, struct key_record *k), void *ctx)
{
	sqlite3_stmt *st = s->kload;
	int rc = 0, step;

	sqlite3_reset(st);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		struct key_record k = {
		    .id = col_text(st, 0),
		    .tenant = col_text(st, 1),
		    .name = col_text(st, 2),
		    .hash = col_text(st, 3),
		    .created_ms = sqlite3_column_int64(st, 4),
		    .revoked_ms = sqlite3_column_int64(st, 5),
		};

		if (k.id && k.tenant && k.hash)
			rc = cb(ctx, &k);
		free(k.id);
		free(k.tenant);
		free(k.name);
		free(k.hash);
		if (rc)
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = fail(s, "load API keys");
	sqlite3_reset(st);
	return rc;
}
