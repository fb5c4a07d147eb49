/* SPDX-License-Identifier: MIT */
/* A sandbox's DNS pins in the store (store.h). A lookup's answers are a few
 * rows; each write is its own small transaction, as store_put's are. */
#include <errno.h>
#include <string.h>

#include <sqlite3.h>

#include "store.h"
#include "util.h"

#define PIN_NAME_MAX 253

static int run(struct store *s, const char *sql, const char *id, const uint8_t *addr,
               const char *name, int64_t expires_ms, const char *what)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (addr)
		sqlite3_bind_blob(st, 2, addr, 16, SQLITE_STATIC);
	if (name)
		sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	if (expires_ms)
		sqlite3_bind_int64(st, 4, expires_ms);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return 0;
fail:
	log_err("store: %s of sandbox %s: %s", what, id, store_error(s));
	return -EIO;
}

int store_pin_put(struct store *s, const char *id, const uint8_t addr[16], const char *name,
                  int64_t expires_ms)
{
	return run(s, "INSERT OR REPLACE INTO net_pins VALUES (?1, ?2, ?3, ?4)", id, addr, name,
	           expires_ms, "saving a DNS pin");
}

int store_pin_delete(struct store *s, const char *id, const uint8_t addr[16], const char *name)
{
	return run(s, "DELETE FROM net_pins WHERE sandbox = ?1 AND addr = ?2 AND name = ?3", id,
	           addr, name, 0, "dropping a DNS pin");
}

int store_pins_delete(struct store *s, const char *id)
{
	return run(s, "DELETE FROM net_pins WHERE sandbox = ?1", id, NULL, NULL, 0,
	           "dropping the DNS pins");
}

void store_pins_batch(struct store *s, bool begin)
{
	if (sqlite3_exec(store_db(s), begin ? "BEGIN" : "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		return;
	log_warn("store: %s the DNS pins' transaction: %s", begin ? "beginning" : "ending",
	         store_error(s));
	/* not left open: the next write is its own transaction again */
	if (!begin && !sqlite3_get_autocommit(store_db(s)))
		sqlite3_exec(store_db(s), "ROLLBACK", NULL, NULL, NULL);
}

int store_pins_load(struct store *s, const char *id, int64_t now_ms,
                    void (*cb)(void *ctx, const uint8_t addr[16], const char *name,
                               int64_t expires_ms),
                    void *ctx)
{
	sqlite3_stmt *st;
	int step;

	if (run(s, "DELETE FROM net_pins WHERE sandbox = ?1 AND expires_ms <= ?4", id, NULL, NULL,
	        now_ms, "dropping expired DNS pins"))
		return -EIO;
	if (sqlite3_prepare_v2(store_db(s),
	                       "SELECT addr, name, expires_ms FROM net_pins WHERE sandbox = ?"
	                       " ORDER BY expires_ms DESC LIMIT ?",
	                       -1, &st, NULL) != SQLITE_OK) {
		log_err("store: loading the DNS pins of sandbox %s: %s", id, store_error(s));
		return -EIO;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, STORE_PINS_MAX);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		const void *addr = sqlite3_column_blob(st, 0);
		const unsigned char *name = sqlite3_column_text(st, 1);

		/* the file is kilnd's own, but a row that is not a pin is skipped */
		if (!addr || sqlite3_column_bytes(st, 0) != 16 || !name ||
		    strlen((const char *)name) > PIN_NAME_MAX)
			continue;
		cb(ctx, addr, (const char *)name, sqlite3_column_int64(st, 2));
	}
	sqlite3_finalize(st);
	if (step != SQLITE_DONE) {
		log_err("store: loading the DNS pins of sandbox %s: %s", id, store_error(s));
		return -EIO;
	}
	return 0;
}
