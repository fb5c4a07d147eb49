/* SPDX-License-Identifier: MIT */
/* Unit tests for a sandbox's DNS pins in the store (control/sandbox/
 * store_pins.c) on a database file: put, replace (in a batch), delete,
 * expiry at load, the bound, deletion with the sandbox, and the upgrade
 * from schema 6 (no pins table) keeping the sandboxes it had. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sandbox/store.h"

static char dir[] = "/tmp/kiln-store-pins.XXXXXX", path[64];
static struct store *s;

struct got {
	int n;
	uint8_t addr[8][16];
	char name[8][254];
	int64_t exp[8];
};

static void collect(void *ctx, const uint8_t addr[16], const char *name, int64_t expires_ms)
{
	struct got *g = ctx;

	if (g->n < 8) {
		memcpy(g->addr[g->n], addr, 16);
		snprintf(g->name[g->n], sizeof(g->name[0]), "%s", name);
		g->exp[g->n] = expires_ms;
	}
	g->n++;
}

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/kilnd.db", dir);
	ck_assert_int_eq(store_open(&s, path), 0);
}

static void teardown(void)
{
	char cmd[128];

	store_close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	strcpy(dir, "/tmp/kiln-store-pins.XXXXXX");
}

static void ip(uint8_t a[16], uint8_t last)
{
	static const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 203, 0, 113, 0};

	memcpy(a, v4, 16);
	a[15] = last;
}

START_TEST(put_replace_delete_expire)
{
	struct got g = {0};
	uint8_t a[16], b[16], c[16];

	ip(a, 1), ip(b, 2), ip(c, 3);
	store_pins_batch(s, true);
	ck_assert_int_eq(store_pin_put(s, "sb1", a, "public.test", 5000), 0);
	ck_assert_int_eq(store_pin_put(s, "sb1", a, "public.test", 9000), 0); /* replaces */
	ck_assert_int_eq(store_pin_put(s, "sb1", b, "public.test", 1500), 0);
	store_pins_batch(s, false);
	ck_assert(sqlite3_get_autocommit(store_db(s)));
	ck_assert_int_eq(store_pin_put(s, "sb1", c, "other.test", 8000), 0);
	ck_assert_int_eq(store_pin_put(s, "sb2", c, "other.test", 8000), 0);
	ck_assert_int_eq(store_pin_delete(s, "sb1", c, "other.test"), 0);
	/* at 2000, b's pin has expired: not given, and gone from the file */
	ck_assert_int_eq(store_pins_load(s, "sb1", 2000, collect, &g), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_mem_eq(g.addr[0], a, 16);
	ck_assert_str_eq(g.name[0], "public.test");
	ck_assert_int_eq(g.exp[0], 9000);
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(store_pins_load(s, "sb1", 0, collect, &g), 0);
	ck_assert_int_eq(g.n, 1);
	/* kept across a close, and dropped with the sandbox */
	store_close(s);
	ck_assert_int_eq(store_open(&s, path), 0);
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(store_pins_load(s, "sb2", 0, collect, &g), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(store_delete(s, "sb2"), 0);
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(store_pins_load(s, "sb2", 0, collect, &g), 0);
	ck_assert_int_eq(g.n, 0);
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(store_pins_load(s, "sb1", 0, collect, &g), 0);
	ck_assert_int_eq(g.n, 1);
}
END_TEST

/* 5000 good rows, a short address and a name too long */
static const char many_pins[] =
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)"
    " INSERT INTO net_pins SELECT 'sb1', zeroblob(16), 'x' || i, 100000 + i FROM n;"
    "INSERT INTO net_pins VALUES ('sb1', x'01', 'short.test', 999999);"
    "INSERT INTO net_pins VALUES ('sb1', zeroblob(16), replace(hex(zeroblob(150)), '0', 'a'),"
    " 999998);";

START_TEST(load_is_bounded_and_skips_bad_rows)
{
	sqlite3 *db = store_db(s);
	struct got g = {0};

	ck_assert_int_eq(sqlite3_exec(db, many_pins, NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(store_pins_load(s, "sb1", 0, collect, &g), 0);
	/* at most STORE_PINS_MAX rows are read, the longest-lived first; the
	 * two bad ones (a short address, a name too long) are among them and skipped */
	ck_assert_int_eq(g.n, STORE_PINS_MAX - 2);
	ck_assert_str_eq(g.name[0], "x5000");
}
END_TEST

static int count_old1(void *ctx, struct sb_record *rec)
{
	*(int *)ctx += !strcmp(rec->id, "old1") && !strcmp(rec->state, "running");
	sb_record_free(rec);
	return 0;
}

static int check_base(void *ctx, struct sb_record *r)
{
	if (!strcmp(r->id, "pb1"))
		*(int *)ctx = r->pause_base && !strcmp(r->pause_base, "2049 77 00000000deadbeef");
	sb_record_free(r);
	return 0;
}

/* A record of sandbox id in state (its strings are the caller's). */
static struct sb_record record(const char *id, char *state)
{
	struct sb_record r = {.template_id = "base",
	                      .state = state,
	                      .created_ms = 1,
	                      .end_ms = 2,
	                      .memory_mb = 256,
	                      .cpu_count = 1};

	snprintf(r.id, sizeof(r.id), "%s", id);
	return r;
}

/* A pausing sandbox's pause base (sandbox/pause_base.h) is kept. */
START_TEST(pause_base_kept)
{
	char base[] = "2049 77 00000000deadbeef";
	struct sb_record r = record("pb1", "pausing");
	int ok = 0;

	r.pause_base = base;

	ck_assert_int_eq(store_put(s, &r), 0);
	store_close(s);
	s = NULL;
	ck_assert_int_eq(store_open(&s, path), 0);
	ck_assert_int_eq(store_load(s, check_base, &ok), 0);
	ck_assert_int_eq(ok, 1);
}
END_TEST

START_TEST(upgrade_from_schema_6)
{
	struct sb_record r = record("old1", "running");
	struct got g = {0};
	uint8_t a[16];
	int n = 0;

	/* a version 6 file: this one, as it was before the pins table (and
	 * the agent's facts of schema 8 and the pause base of 9) */
	ck_assert_int_eq(store_put(s, &r), 0);
	ck_assert_int_eq(sqlite3_exec(store_db(s),
	                              "DROP TABLE net_pins;"
	                              " ALTER TABLE sandboxes DROP COLUMN agent_flags;"
	                              " ALTER TABLE sandboxes DROP COLUMN agent_no_users;"
	                              " ALTER TABLE sandboxes DROP COLUMN pause_base;"
	                              " PRAGMA user_version = 6",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	store_close(s);
	s = NULL; /* (a failed open leaves it closed) */
	ck_assert_int_eq(store_open(&s, path), 0);
	ip(a, 1);
	ck_assert_int_eq(store_pin_put(s, "old1", a, "public.test", 5000), 0);
	ck_assert_int_eq(store_pins_load(s, "old1", 0, collect, &g), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(store_load(s, count_old1, &n), 0);
	ck_assert_int_eq(n, 1);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("store_pins");
	TCase *tc = tcase_create("store_pins");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, put_replace_delete_expire);
	tcase_add_test(tc, load_is_bounded_and_skips_bad_rows);
	tcase_add_test(tc, upgrade_from_schema_6);
	tcase_add_test(tc, pause_base_kept);
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
