/* SPDX-License-Identifier: MIT */
/* Unit tests for control/sandbox/image_defaults.c: an imported image's
 * manifest (kiln-image-import's NAME.json, made from a hostile image's
 * config) into the defaults kilnd gives the agent, refused when a field
 * is not what the agent can take. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/image_defaults.h"

static int parse(const char *text, struct img_defaults *d, char *msg)
{
	/* as if a manifest could carry NUL (kilnd loads it without) */
	json_t *j = json_loads(text, JSON_ALLOW_NUL, NULL);
	int err;

	ck_assert_ptr_nonnull(j);
	err = img_defaults_parse(j, d, msg, 256);
	json_decref(j);
	return err;
}

START_TEST(good_manifest)
{
	struct img_defaults d;
	char msg[256] = "";

	ck_assert_int_eq(parse("{\"workingDir\":\"/srv/w\",\"uid\":1000,"
	                       "\"entrypoint\":[\"/bin/sh\",\"-c\"],\"cmd\":[\"echo hi\"]}",
	                       &d, msg),
	                 0);
	ck_assert_str_eq(d.cwd, "/srv/w");
	ck_assert_uint_eq(d.uid, 1000);
	ck_assert_str_eq(d.argv[0], "/bin/sh");
	ck_assert_str_eq(d.argv[2], "echo hi");
	ck_assert_ptr_null(d.argv[3]);
	img_defaults_free(&d);
	/* Cmd alone, null Entrypoint; empty WorkingDir is none */
	ck_assert_int_eq(
	    parse("{\"workingDir\":\"\",\"entrypoint\":null,\"cmd\":[\"x\"]}", &d, msg), 0);
	ck_assert_ptr_null(d.cwd);
	ck_assert_str_eq(d.argv[0], "x");
	img_defaults_free(&d);
	/* a mkimage manifest: nothing */
	ck_assert_int_eq(parse("{\"name\":\"base\",\"packages\":[]}", &d, msg), 0);
	ck_assert_ptr_null(d.cwd);
	ck_assert_ptr_null(d.argv);
	ck_assert_uint_eq(d.uid, 0);
	img_defaults_free(&d);
}
END_TEST

static void refused(const char *text, const char *says)
{
	struct img_defaults d;
	char msg[256] = "";

	ck_assert_msg(parse(text, &d, msg) < 0, "accepted %s", text);
	ck_assert_msg(strstr(msg, says), "%s: '%s' lacks '%s'", text, msg, says);
	ck_assert_ptr_null(d.cwd);
	ck_assert_ptr_null(d.argv);
}

START_TEST(bad_manifest)
{
	refused("{\"workingDir\":\"rel\"}", "workingDir");
	refused("{\"workingDir\":5}", "workingDir");
	refused("{\"workingDir\":\"/a\\u0000b\"}", "workingDir");
	refused("{\"uid\":-1}", "uid");
	refused("{\"uid\":2147483648}", "uid");
	refused("{\"uid\":\"0\"}", "uid");
	refused("{\"entrypoint\":\"sh\",\"cmd\":[\"x\"]}", "'entrypoint' is not a list");
	refused("{\"cmd\":[1]}", "'cmd[0]'");
	refused("{\"workingDir\":\"/ok\",\"cmd\":[\"a\\u0000\"]}", "'cmd[0]'");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("img_defaults");
	TCase *tc = tcase_create("manifest");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, good_manifest);
	tcase_add_test(tc, bad_manifest);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
