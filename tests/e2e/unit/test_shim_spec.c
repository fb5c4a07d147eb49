/* SPDX-License-Identifier: MIT */
/* Unit tests for shim/spec.c: the OCI process spec containerd sends (an
 * exec's JSON, a bundle's config.json) into what the agent's START takes,
 * and the hostile or broken specs it must refuse with the field named. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

/* The shim's log goes to its stderr; here, the test's. */
void shim_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int parse(const char *json, struct proc_spec *p, char *msg)
{
	return spec_parse_process(json, strlen(json), p, msg, 256);
}

START_TEST(good_process)
{
	struct proc_spec p;
	char msg[256] = "";

	ck_assert_int_eq(parse("{\"args\":[\"sh\",\"-c\",\"echo hi\"],\"env\":[\"A=1\",\"B=\"],"
	                       "\"cwd\":\"/srv\",\"user\":{\"uid\":1000,\"gid\":1000},"
	                       "\"terminal\":true,\"consoleSize\":{\"width\":100,\"height\":30}}",
	                       &p, msg),
	                 0);
	ck_assert_str_eq(p.argv[0], "sh");
	ck_assert_str_eq(p.argv[2], "echo hi");
	ck_assert_ptr_null(p.argv[3]);
	ck_assert_str_eq(p.env[1], "B=");
	ck_assert_ptr_null(p.env[2]);
	ck_assert_str_eq(p.cwd, "/srv");
	ck_assert_uint_eq(p.uid, 1000);
	ck_assert(p.terminal);
	ck_assert_uint_eq(p.cols, 100);
	ck_assert_uint_eq(p.rows, 30);
	spec_free(&p);
	/* the defaults: cwd "/", root, no terminal */
	ck_assert_int_eq(parse("{\"args\":[\"true\"]}", &p, msg), 0);
	ck_assert_str_eq(p.cwd, "/");
	ck_assert_uint_eq(p.uid, 0);
	ck_assert(!p.terminal);
	ck_assert_ptr_null(p.env[0]);
	spec_free(&p);
}
END_TEST

static void refused(const char *json, const char *says)
{
	struct proc_spec p;
	char msg[256] = "";

	ck_assert_msg(parse(json, &p, msg) < 0, "accepted %s", json);
	ck_assert_msg(strstr(msg, says), "%s: message '%s' lacks '%s'", json, msg, says);
}

START_TEST(bad_process)
{
	refused("not json", "not JSON");
	refused("[1]", "no 'process'");
	refused("{\"args\":[]}", "process.args is empty");
	refused("{}", "process.args is empty");
	refused("{\"args\":\"sh\"}", "process.args is not a list");
	refused("{\"args\":[1]}", "process.args[0]");
	refused("{\"args\":[\"a\\u0000b\"]}", "not JSON"); /* jansson refuses NUL */
	refused("{\"args\":[\"sh\"],\"env\":[\"NOEQUALS\"]}", "process.env[0]");
	refused("{\"args\":[\"sh\"],\"env\":[\"=v\"]}", "process.env[0]");
	refused("{\"args\":[\"sh\"],\"cwd\":\"relative\"}", "process.cwd");
	refused("{\"args\":[\"sh\"],\"cwd\":7}", "process.cwd");
	refused("{\"args\":[\"sh\"],\"user\":{\"uid\":-1}}", "process.user.uid");
	refused("{\"args\":[\"sh\"],\"user\":{\"uid\":4294967296}}", "process.user.uid");
	refused("{\"args\":[\"sh\"],\"user\":{\"uid\":\"0\"}}", "process.user.uid");
	refused("{\"args\":[\"a\"],\"args\":[\"b\"]}", "not JSON");
}
END_TEST

START_TEST(too_many_args)
{
	size_t n = 5000, len = 64 + n * 4;
	char *json = malloc(len), *p = json;
	struct proc_spec ps;
	char msg[256] = "";

	p += sprintf(p, "{\"args\":[");
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s\"x\"", i ? "," : "");
	sprintf(p, "]}");
	ck_assert_int_lt(parse(json, &ps, msg), 0);
	ck_assert_ptr_nonnull(strstr(msg, "more than the agent takes"));
	free(json);
}
END_TEST

static char dir[64];

static void bundle(const char *config)
{
	char path[128];
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/kiln-spec.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config.json", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(config, f);
	fclose(f);
}

static void unbundle(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/config.json", dir);
	unlink(path);
	rmdir(dir);
}

START_TEST(bundle_memory)
{
	struct proc_spec p;
	struct spec_res res = {0};
	char *root = NULL;
	char msg[256] = "";

	bundle("{\"process\":{\"args\":[\"sh\"]},\"linux\":{\"resources\":{\"memory\":"
	       "{\"limit\":536870912}}}}");
	ck_assert_int_eq(spec_load_bundle(dir, &p, &res, &root, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(res.mem_mb, 512);
	ck_assert_ptr_null(root);
	spec_free(&p);
	unbundle();
	bundle("{\"process\":{\"args\":[\"sh\"]}}");
	ck_assert_int_eq(spec_load_bundle(dir, &p, &res, &root, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(res.mem_mb, 256);
	spec_free(&p);
	unbundle();
	bundle("{\"process\":{\"args\":[\"sh\"]},\"root\":{\"path\":\"rootfs\"}}");
	ck_assert_int_eq(spec_load_bundle(dir, &p, &res, &root, msg, sizeof(msg)), 0);
	ck_assert_str_eq(root, "rootfs");
	free(root);
	spec_free(&p);
	unbundle();
	bundle("{\"process\":{\"args\":[\"sh\"]},\"linux\":{\"resources\":{\"memory\":"
	       "{\"limit\":16777216}}}}");
	ck_assert_int_lt(spec_load_bundle(dir, &p, &res, &root, msg, sizeof(msg)), 0);
	ck_assert_ptr_nonnull(strstr(msg, "a kiln VM has 64 to 65536 MiB"));
	unbundle();
	bundle("{\"process\":");
	ck_assert_int_lt(spec_load_bundle(dir, &p, &res, &root, msg, sizeof(msg)), 0);
	ck_assert_ptr_nonnull(strstr(msg, "config.json"));
	unbundle();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shim_spec");
	TCase *tc = tcase_create("spec");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, good_process);
	tcase_add_test(tc, bad_process);
	tcase_add_test(tc, too_many_args);
	tcase_add_test(tc, bundle_memory);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
