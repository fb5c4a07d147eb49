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

#include <jansson.h>

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
	struct spec_binds binds;
	char *root = NULL;
	char msg[256] = "";

	bundle("{\"process\":{\"args\":[\"sh\"]},\"linux\":{\"resources\":{\"memory\":"
	       "{\"limit\":536870912}}}}");
	ck_assert_int_eq(spec_load_bundle(dir, &p, &res, &binds, &root, NULL, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(res.mem_mb, 512);
	ck_assert_ptr_null(root);
	spec_free(&p);
	unbundle();
	bundle("{\"process\":{\"args\":[\"sh\"]}}");
	ck_assert_int_eq(spec_load_bundle(dir, &p, &res, &binds, &root, NULL, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(res.mem_mb, 256);
	spec_free(&p);
	unbundle();
	bundle("{\"process\":{\"args\":[\"sh\"]},\"root\":{\"path\":\"rootfs\"}}");
	ck_assert_int_eq(spec_load_bundle(dir, &p, &res, &binds, &root, NULL, msg, sizeof(msg)), 0);
	ck_assert_str_eq(root, "rootfs");
	free(root);
	spec_free(&p);
	unbundle();
	bundle("{\"process\":{\"args\":[\"sh\"]},\"linux\":{\"resources\":{\"memory\":"
	       "{\"limit\":16777216}}}}");
	ck_assert_int_lt(spec_load_bundle(dir, &p, &res, &binds, &root, NULL, msg, sizeof(msg)), 0);
	ck_assert_ptr_nonnull(strstr(msg, "a kiln VM has 64 to 65536 MiB"));
	unbundle();
	bundle("{\"process\":");
	ck_assert_int_lt(spec_load_bundle(dir, &p, &res, &binds, &root, NULL, msg, sizeof(msg)), 0);
	ck_assert_ptr_nonnull(strstr(msg, "config.json"));
	unbundle();
}
END_TEST

static int resources(const char *json, struct spec_res *r, char *msg)
{
	json_error_t je;
	json_t *j = json_loads(json, 0, &je);
	int err;

	ck_assert_msg(j != NULL, "%s: %s", json, je.text);
	err = spec_parse_resources(j, r, msg, 256);
	json_decref(j);
	return err;
}

/* cpu.shares, and cgroup v2's cpu.weight (unified, a string) in proportion
 * (100 is 1024), before it; out of the kernel's ranges: refused. */
START_TEST(cpu_weight)
{
	struct spec_res r;
	char msg[256] = "";

	ck_assert_int_eq(resources("{\"cpu\":{\"shares\":512}}", &r, msg), 0);
	ck_assert_uint_eq(spec_res_shares(&r), 512);
	ck_assert_int_eq(resources("{\"memory\":{}}", &r, msg), 0);
	ck_assert_uint_eq(spec_res_shares(&r), 0);
	ck_assert_int_eq(resources("{\"unified\":{\"cpu.weight\":\"300\"}}", &r, msg), 0);
	ck_assert_uint_eq(spec_res_shares(&r), 3072);
	ck_assert_uint_eq(r.cpu_weight, 300);
	ck_assert_int_eq(resources("{\"cpu\":{\"shares\":512},\"unified\":{\"cpu.weight\":"
	                           "\"100\",\"memory.high\":\"max\"}}",
	                           &r, msg),
	                 0);
	ck_assert_uint_eq(spec_res_shares(&r), 1024);
	ck_assert_int_eq(resources("{\"unified\":{\"cpu.weight\":\"1\"}}", &r, msg), 0);
	ck_assert_uint_eq(spec_res_shares(&r), 10);
	ck_assert_int_eq(resources("{\"unified\":{\"cpu.weight\":\"10000\"}}", &r, msg), 0);
	ck_assert_uint_eq(spec_res_shares(&r), 102400);
	static const char *const bad[] = {
	    "{\"cpu\":{\"shares\":1}}",
	    "{\"cpu\":{\"shares\":262145}}",
	    "{\"cpu\":{\"shares\":\"512\"}}",
	    "{\"unified\":{\"cpu.weight\":\"0\"}}",
	    "{\"unified\":{\"cpu.weight\":\"10001\"}}",
	    "{\"unified\":{\"cpu.weight\":\"\"}}",
	    "{\"unified\":{\"cpu.weight\":\"12x\"}}",
	    "{\"unified\":{\"cpu.weight\":\"99999999999999999999\"}}",
	    "{\"unified\":{\"cpu.weight\":100}}",
	    "{\"unified\":[]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg[0] = 0;
		ck_assert_msg(resources(bad[i], &r, msg) < 0, "%s accepted", bad[i]);
		ck_assert_msg(strstr(msg, "linux.resources.") != NULL, "%s: %s", bad[i], msg);
	}
}
END_TEST

static int mounts(const char *json, struct spec_binds *b, char *msg)
{
	json_error_t je;
	json_t *j = json_loads(json, JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
	int err;

	ck_assert_msg(j != NULL, "%s: %s", json, je.text);
	err = spec_parse_mounts(j, b, msg, 256);
	json_decref(j);
	return err;
}

START_TEST(bind_mounts)
{
	struct spec_binds b;
	char msg[256] = "";

	/* the kernel file systems are passed over; binds are kept, paths made clean */
	ck_assert_int_eq(
	    mounts("[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
	           "{\"destination\":\"/data//sub/\",\"type\":\"bind\",\"source\":\"/srv/vol\","
	           "\"options\":[\"rbind\",\"ro\",\"rprivate\"]},"
	           "{\"destination\":\"/etc/hosts\",\"source\":\"/var/lib/k/hosts\","
	           "\"options\":[\"bind\",\"rw\",\"nosuid\",\"nodev\"]},"
	           "{\"destination\":\"/dev/termination-log\",\"type\":\"bind\","
	           "\"source\":\"/var/lib/k/t\"},"
	           /* the CRI's pod shm: the guest's own /dev/shm stands for it */
	           "{\"destination\":\"/dev/shm\",\"type\":\"bind\",\"source\":"
	           "\"/run/c/io.containerd.grpc.v1.cri/sandboxes/ab12/shm\","
	           "\"options\":[\"rbind\",\"ro\",\"nosuid\",\"nodev\",\"noexec\"]}]",
	           &b, msg),
	    0);
	ck_assert_uint_eq(b.n, 3);
	ck_assert_str_eq(b.v[0].dst, "/data/sub");
	ck_assert_str_eq(b.v[0].src, "/srv/vol");
	ck_assert(b.v[0].ro);
	ck_assert_str_eq(b.v[1].dst, "/etc/hosts");
	ck_assert(!b.v[1].ro);
	ck_assert_str_eq(b.v[2].dst, "/dev/termination-log");
	spec_binds_free(&b);
	ck_assert_int_eq(mounts("[]", &b, msg), 0);
	ck_assert_uint_eq(b.n, 0);
}
END_TEST

START_TEST(bad_bind_mounts)
{
	static const struct {
		const char *json, *says;
	} bad[] = {
	    {"{}", "not a list"},
	    {"[1]", "mounts[0] is not an object"},
	    {"[{\"type\":\"bind\",\"source\":\"rel\",\"destination\":\"/d\"}]",
	     "its source 'rel' is not an absolute path"},
	    {"[{\"type\":\"bind\",\"source\":\"/s/../etc\",\"destination\":\"/d\"}]",
	     "its source '/s/../etc'"},
	    {"[{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"/a/../proc/x\"}]",
	     "its destination '/a/../proc/x'"},
	    {"[{\"type\":\"bind\",\"source\":\"/s\"}]", "its destination '?'"},
	    {"[{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"/proc/self\"}]",
	     "inside the guest kernel's own /proc"},
	    {"[{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"//sys\"}]",
	     "inside the guest kernel's own /sys"},
	    {"[{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"/dev/sda\"}]",
	     "inside the guest kernel's own /dev"},
	    /* a pod with the host's IPC: the host's /dev/shm cannot be shared */
	    {"[{\"type\":\"bind\",\"source\":\"/dev/shm\",\"destination\":\"/dev/shm\"}]",
	     "inside the guest kernel's own /dev"},
	    {"[{\"type\":\"bind\",\"source\":\"/x/io.containerd.grpc.v1.cri/sandboxes//shm\","
	     "\"destination\":\"/dev/shm\"}]",
	     "inside the guest kernel's own /dev"},
	    {"[{\"type\":\"bind\",\"source\":\"/x/io.containerd.grpc.v1.cri/sandboxes/a/shm/b\","
	     "\"destination\":\"/dev/shm\"}]",
	     "inside the guest kernel's own /dev"},
	    {"[{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"/.\"}]", "'/.'"},
	    {"[{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"///\"}]",
	     "over the guest's root"},
	    {"[{\"source\":\"/s\",\"destination\":\"/d\",\"options\":[\"rbind\",\"rshared\"]}]",
	     "option 'rshared'"},
	    {"[{\"source\":\"/s\",\"destination\":\"/d\",\"options\":[\"bind\",\"rslave\"]}]",
	     "option 'rslave'"},
	    {"[{\"source\":\"/s\",\"destination\":\"/d\",\"options\":[\"bind\",\"noexec\"]}]",
	     "option 'noexec'"},
	    {"[{\"source\":\"/s\",\"destination\":\"/d\",\"options\":[\"bind\",7]}]",
	     "options[1] is not a string"},
	    {"[{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"/d\",\"options\":\"ro\"}]",
	     "options is not a list"},
	    {"[{\"type\":\"bind\",\"source\":\"/s\\u0000x\",\"destination\":\"/d\"}]",
	     "its source"},
	};
	struct spec_binds b;
	char msg[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg[0] = 0;
		ck_assert_int_lt(mounts(bad[i].json, &b, msg), 0);
		ck_assert_msg(strstr(msg, bad[i].says), "%s: said '%s', not '%s'", bad[i].json, msg,
		              bad[i].says);
		ck_assert_uint_eq(b.n, 0);
	}
}
END_TEST

START_TEST(too_many_binds)
{
	char *json = malloc(SPEC_MAX_MOUNTS * 80 + 16), *o = json;
	struct spec_binds b;
	char msg[256] = "";

	*o++ = '[';
	for (int i = 0; i <= SPEC_MAX_BINDS; i++)
		o += sprintf(o, "%s{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"/d%d\"}",
		             i ? "," : "", i);
	strcpy(o, "]");
	ck_assert_int_lt(mounts(json, &b, msg), 0);
	ck_assert_ptr_nonnull(strstr(msg, "more than 64 bind mounts"));
	/* one fewer is taken */
	for (char *q = json; (q = strstr(q + 1, ",{"));)
		o = q;
	strcpy(o, "]");
	ck_assert_int_eq(mounts(json, &b, msg), 0);
	ck_assert_uint_eq(b.n, SPEC_MAX_BINDS);
	spec_binds_free(&b);
	o = json;
	*o++ = '[';
	for (int i = 0; i <= SPEC_MAX_MOUNTS; i++)
		o += sprintf(o, "%s{\"type\":\"tmpfs\",\"destination\":\"/t\"}", i ? "," : "");
	strcpy(o, "]");
	ck_assert_int_lt(mounts(json, &b, msg), 0);
	ck_assert_ptr_nonnull(strstr(msg, "at most 1024 mounts"));
	free(json);
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
	tcase_add_test(tc, cpu_weight);
	tcase_add_test(tc, bind_mounts);
	tcase_add_test(tc, bad_bind_mounts);
	tcase_add_test(tc, too_many_binds);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
