/* SPDX-License-Identifier: MIT */
/* Unit tests of the store's schema upgrades (control/sandbox/store.c,
 * included here for its upgrade steps): a database left at every older
 * version by the steps of its time is upgraded in place to the current
 * one, keeping its sandboxes; the agent's facts (schema 8) are unknown for
 * the sandboxes it had, kept for those written later, and a value kilnd
 * cannot have written reads as unknown. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* (before check.h, whose fail() macro would rename store.c's fail()) */
#include "../../../control/sandbox/store.c"

#include <check.h>

static char dir[] = "/tmp/kiln-store-schema.XXXXXX", path[64];

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/kilnd.db", dir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	strcpy(dir, "/tmp/kiln-store-schema.XXXXXX");
}

/* A database at version v, as the kilnd of its time left it, with one
 * sandbox (only the columns of schema 1). */
static void make_old(int v)
{
	static const char *const steps[] = {NULL,     schema1,  upgrade2, upgrade3, upgrade4,
	                                    upgrade5, upgrade6, upgrade7, upgrade8};
	char sql[128];
	sqlite3 *db;

	ck_assert_int_lt(v, (int)(sizeof(steps) / sizeof(steps[0])));
	unlink(path);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	for (int i = 1; i <= v; i++)
		ck_assert_msg(sqlite3_exec(db, steps[i], NULL, NULL, NULL) == SQLITE_OK,
		              "step %d: %s", i, sqlite3_errmsg(db));
	ck_assert_int_eq(sqlite3_exec(db,
	                              "INSERT INTO sandboxes (id, template, state, created_ms,"
	                              " end_ms, memory_mb, cpu_count) VALUES ('old', 'base',"
	                              " 'paused', 1, 2, 256, 1)",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

struct seen {
	int n;
	char id[4][SB_ID_LEN + 1];
	int64_t flags[4];
	bool no_users[4];
};

static int seen_one(void *ctx, struct sb_record *r)
{
	struct seen *s = ctx;

	if (s->n < 4) {
		strcpy(s->id[s->n], r->id);
		s->flags[s->n] = r->agent_flags;
		s->no_users[s->n] = r->agent_no_users;
	}
	s->n++;
	sb_record_free(r);
	return 0;
}

START_TEST(upgrade_from_every_version)
{
	for (int v = 1; v < SCHEMA_VERSION; v++) {
		struct sb_record r = {.template_id = "base",
		                      .state = "paused",
		                      .created_ms = 5,
		                      .agent_flags = 6,
		                      .agent_no_users = true};
		struct seen seen = {0};
		struct store *s;

		make_old(v);
		ck_assert_msg(store_open(&s, path) == 0, "schema %d not upgraded", v);
		ck_assert_int_eq(user_version(s), SCHEMA_VERSION);
		ck_assert_int_eq(store_load(s, seen_one, &seen), 0);
		ck_assert_int_eq(seen.n, 1);
		ck_assert_str_eq(seen.id[0], "old");
		ck_assert_msg(seen.flags[0] == -1 && !seen.no_users[0],
		              "schema %d: an old sandbox's agent must be unknown", v);
		strcpy(r.id, "new");
		ck_assert_int_eq(store_put(s, &r), 0);
		store_close(s);
		/* and what was written survives a reopen */
		memset(&seen, 0, sizeof(seen));
		ck_assert_int_eq(store_open(&s, path), 0);
		ck_assert_int_eq(store_load(s, seen_one, &seen), 0);
		ck_assert_int_eq(seen.n, 2);
		ck_assert_str_eq(seen.id[1], "new");
		ck_assert(seen.flags[1] == 6 && seen.no_users[1]);
		store_close(s);
	}
}
END_TEST

START_TEST(bad_values_and_newer_schema)
{
	struct seen seen = {0};
	struct store *s;
	sqlite3 *db;

	make_old(SCHEMA_VERSION - 1);
	ck_assert_int_eq(store_open(&s, path), 0);
	store_close(s);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(
	    sqlite3_exec(db, "UPDATE sandboxes SET agent_flags = 99999999999", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	ck_assert_int_eq(store_open(&s, path), 0);
	ck_assert_int_eq(store_load(s, seen_one, &seen), 0);
	ck_assert(seen.n == 1 && seen.flags[0] == -1);
	store_close(s);
	/* a database from a newer kilnd is refused, not changed */
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	ck_assert_int_eq(store_open(&s, path), -EIO);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("store_schema");
	TCase *tc = tcase_create("schema");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, upgrade_from_every_version);
	tcase_add_test(tc, bad_values_and_newer_schema);
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
