/* SPDX-License-Identifier: MIT */
/* Unit tests for control/events/events_db.c on an in-memory SQLite: a
 * sandbox's events newest first from a cursor, the scan after an id that
 * SSE resumes with, and the bounds (count, age). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "events/events_db.h"

static sqlite3 *db;
static struct ev_db *d;

static void setup(void)
{
	char body[64];

	ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, EV_DB_SCHEMA, NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(ev_db_open(db, &d), 0);
	/* 30 events: odd ids of sandbox a, even ones of b, at time 1000 * id */
	ck_assert_int_eq(ev_db_begin(d), 0);
	for (int i = 1; i <= 30; i++) {
		snprintf(body, sizeof(body), "{\"id\":%d}", i);
		ck_assert_int_eq(ev_db_insert(d, i, i % 2 ? "a" : "b", i % 2 ? NULL : "acme",
		                              1000 * i, i % 3 ? "exec.finished" : "file.written",
		                              body),
		                 0);
	}
	ck_assert_int_eq(ev_db_commit(d), 0);
}

static void teardown(void)
{
	ev_db_close(d);
	sqlite3_close(db);
}

struct seen {
	int64_t ids[64];
	int n, stop_after;
};

static bool collect(void *ctx, const struct ev_row *r)
{
	struct seen *s = ctx;
	char want[32];

	snprintf(want, sizeof(want), "{\"id\":%lld}", (long long)r->id);
	ck_assert_str_eq(r->body, want);
	if (r->id % 2)
		ck_assert_ptr_null(r->tenant);
	else
		ck_assert_str_eq(r->tenant, "acme");
	s->ids[s->n++] = r->id;
	return s->stop_after && s->n == s->stop_after;
}

START_TEST(a_sandbox_newest_first_from_a_cursor)
{
	struct seen s = {.stop_after = 5};

	ck_assert_int_eq(ev_db_sandbox(d, "a", 0, collect, &s), 0);
	ck_assert_int_eq(s.n, 5);
	ck_assert_int_eq(s.ids[0], 29);
	ck_assert_int_eq(s.ids[4], 21);
	/* the next page starts below the last id seen */
	s.n = 0;
	ck_assert_int_eq(ev_db_sandbox(d, "a", 21, collect, &s), 0);
	ck_assert_int_eq(s.ids[0], 19);
	/* to the end: 1 is the last; nothing of another sandbox */
	s = (struct seen){0};
	ck_assert_int_eq(ev_db_sandbox(d, "a", 0, collect, &s), 0);
	ck_assert_int_eq(s.n, 15);
	ck_assert_int_eq(s.ids[14], 1);
	s = (struct seen){0};
	ck_assert_int_eq(ev_db_sandbox(d, "nosuch", 0, collect, &s), 0);
	ck_assert_int_eq(s.n, 0);
}
END_TEST

START_TEST(after_an_id_in_batches)
{
	struct seen s = {0};
	int64_t last;

	ck_assert_int_eq(ev_db_after(d, 10, 8, collect, &s, &last), 0);
	ck_assert_int_eq(s.n, 8);
	ck_assert_int_eq(s.ids[0], 11);
	ck_assert_int_eq(last, 18);
	s.n = 0;
	ck_assert_int_eq(ev_db_after(d, 30, 8, collect, &s, &last), 0);
	ck_assert_int_eq(s.n, 0);
	ck_assert_int_eq(last, 30); /* caught up: last stays at the cursor */
}
END_TEST

START_TEST(bounds)
{
	int64_t max, count, n;
	struct seen s = {0};

	ck_assert_int_eq(ev_db_stats(d, &max, &count), 0);
	ck_assert_int_eq(max, 30);
	ck_assert_int_eq(count, 30);
	ck_assert_int_eq(ev_db_keep_newest(d, 40, &n), 0);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(ev_db_keep_newest(d, 20, &n), 0);
	ck_assert_int_eq(n, 10);
	ck_assert_int_eq(ev_db_stats(d, &max, &count), 0);
	ck_assert_int_eq(count, 20);
	ck_assert_int_eq(ev_db_sandbox(d, "b", 0, collect, &s), 0);
	ck_assert_int_eq(s.ids[s.n - 1], 12); /* 2..10 went */
	/* by age: before time 15000 (ids 11..14) */
	ck_assert_int_eq(ev_db_drop_before(d, 15000, &n), 0);
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(ev_db_stats(d, &max, &count), 0);
	ck_assert_int_eq(count, 16);
	ck_assert_int_eq(max, 30);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("events_db");
	TCase *tc = tcase_create("events_db");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_sandbox_newest_first_from_a_cursor);
	tcase_add_test(tc, after_an_id_in_batches);
	tcase_add_test(tc, bounds);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
