/* SPDX-License-Identifier: MIT */
/* Unit tests for shim/podcg_parse.c and shim/spec_pod.c: linux.cgroupsPath
 * in its cgroupfs and systemd forms as the path the pod's VMM joins, the
 * hostile paths it must refuse (with what is wrong said), and
 * process.oomScoreAdj. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "shim.h"

static char out[PODCG_PATH_MAX + 1], msg[512];

static int parse_n(const char *p, size_t len)
{
	msg[0] = 0;
	strcpy(out, "untouched");
	return podcg_parse(p, len, out, sizeof(out), msg, sizeof(msg));
}

static int parse(const char *p)
{
	return parse_n(p, strlen(p));
}

/* Each given path and what it expands to. */
static const char *const good[][2] = {
    {"/kubepods/burstable/pod1234-ab/0123abcd", "/kubepods/burstable/pod1234-ab/0123abcd"},
    {"/default/r1", "/default/r1"},
    /* ':' and '@' are name characters in the cgroupfs form */
    {"/a:b/c@d", "/a:b/c@d"},
    /* systemd's: the slice nests by its dashes, the leaf is a scope */
    {"kubepods-burstable-pod12_34.slice:cri-containerd:abc123",
     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice/"
     "cri-containerd-abc123.scope"},
    {"kubepods.slice:cri-containerd:x", "/kubepods.slice/cri-containerd-x.scope"},
    /* the root slice, the default slice, no prefix, a slice as the leaf */
    {"-.slice:p:n", "/p-n.scope"},
    {":docker:n", "/system.slice/docker-n.scope"},
    {"a-b.slice::n", "/a.slice/a-b.slice/n.scope"},
    {"a.slice:p:leaf.slice", "/a.slice/leaf.slice"},
};

START_TEST(good_paths)
{
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(parse(good[i][0]) == 0, "'%s' refused: %s", good[i][0], msg);
		ck_assert_str_eq(out, good[i][1]);
	}
}
END_TEST

/* Each is refused, out left empty, and msg says something. */
static void refused(const char *p, size_t len, const char *why)
{
	ck_assert_msg(parse_n(p, len) == -EINVAL, "'%s' was taken as %s", p, out);
	ck_assert_str_eq(out, "");
	ck_assert_msg(strstr(msg, why), "'%s': '%s' has not got '%s'", p, msg, why);
}

START_TEST(hostile_paths)
{
	char big[PODCG_PATH_MAX + 64], name[300];

	refused("/kubepods/../../etc", 19, "'..'");
	refused("/..", 3, "'..'");
	refused("/a/./b", 6, "'.'");
	refused("/a//b", 5, "empty");
	refused("/a/b/", 5, "empty");
	refused("kubepods/pod1/x", 15, "neither an absolute path");
	refused("", 0, "neither");
	refused("/", 1, "root cgroup");
	refused("/a\0/../b", 8, "NUL");
	refused("/a/b\nc", 6, "control");
	refused("/a b", 4, "space");
	refused("/caf\xc3\xa9", 6, "non-ASCII");
	refused("/a/\x7f", 4, "control");
	memset(name, 'n', sizeof(name));
	name[0] = '/';
	refused(name, 257, "longer than 255");
	big[0] = 0;
	while (strlen(big) < PODCG_PATH_MAX)
		strcat(big, "/abcdefgh");
	refused(big, strlen(big), "at most 1024");
	refused("/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z/1/2/3/4/5/6/7", 66,
	        "deeper than 32");
	/* systemd's form */
	refused("kubepods:cri-containerd:x:y", 27, "neither");
	refused("kubepods:cri-containerd", 23, "neither");
	refused("kubepods:cri-containerd:x", 25, "not a systemd slice name");
	refused(".slice:p:n", 10, "not a systemd slice name");
	refused("a/b.slice:p:n", 13, "not a systemd slice name");
	refused("../x.slice:p:n", 14, "not a systemd slice name");
	refused("kube--pods.slice:p:n", 20, "empty part");
	refused("-kube.slice:p:n", 15, "empty part");
	refused("kube-.slice:p:n", 15, "empty part");
	refused("a.slice:p:..", 12, "unit names");
	refused("a.slice:p:", 10, "unit names");
	refused("a.slice:p:x/y", 13, "unit names");
	refused("a.slice:../p:n", 14, "unit names");
}
END_TEST

static int pod(const char *json, struct spec_pod *p)
{
	json_error_t je;
	json_t *j = json_loads(json, JSON_ALLOW_NUL, &je);
	int err;

	ck_assert_msg(j, "%s: %s", json, je.text);
	msg[0] = 0;
	err = spec_parse_pod(j, p, msg, sizeof(msg));
	json_decref(j);
	return err;
}

START_TEST(spec_fields)
{
	struct spec_pod p;

	ck_assert_int_eq(pod("{\"process\":{\"oomScoreAdj\":-998},"
	                     "\"linux\":{\"cgroupsPath\":\"/kubepods/besteffort/podX/ID\"}}",
	                     &p),
	                 0);
	ck_assert_str_eq(p.cgroup, "/kubepods/besteffort/podX/ID");
	ck_assert(p.has_oom);
	ck_assert_int_eq(p.oom_score_adj, -998);
	/* none of either: nothing to do */
	ck_assert_int_eq(pod("{\"process\":{},\"linux\":{}}", &p), 0);
	ck_assert_str_eq(p.cgroup, "");
	ck_assert(!p.has_oom);
	ck_assert_int_eq(pod("{\"linux\":{\"cgroupsPath\":\"\"}}", &p), 0);
	ck_assert_str_eq(p.cgroup, "");
	/* clamped to the kernel's range */
	ck_assert_int_eq(pod("{\"process\":{\"oomScoreAdj\":-5000}}", &p), 0);
	ck_assert_int_eq(p.oom_score_adj, -1000);
	ck_assert_int_eq(pod("{\"process\":{\"oomScoreAdj\":99999999999}}", &p), 0);
	ck_assert_int_eq(p.oom_score_adj, 1000);
	/* not numbers, not strings */
	ck_assert_int_eq(pod("{\"process\":{\"oomScoreAdj\":\"-998\"}}", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "oomScoreAdj is not a whole number"));
	ck_assert_int_eq(pod("{\"process\":{\"oomScoreAdj\":1.5}}", &p), -EINVAL);
	ck_assert_int_eq(pod("{\"process\":{\"oomScoreAdj\":true}}", &p), -EINVAL);
	ck_assert_int_eq(pod("{\"linux\":{\"cgroupsPath\":7}}", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "cgroupsPath is not a string"));
	/* a NUL inside the JSON string is seen */
	ck_assert_int_eq(pod("{\"linux\":{\"cgroupsPath\":\"/a\\u0000/../b\"}}", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "NUL"));
	ck_assert_int_eq(pod("{\"linux\":{\"cgroupsPath\":\"/a/../b\"}}", &p), -EINVAL);
	ck_assert_str_eq(p.cgroup, "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shim_podcg");
	TCase *tc = tcase_create("podcg");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, good_paths);
	tcase_add_test(tc, hostile_paths);
	tcase_add_test(tc, spec_fields);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
