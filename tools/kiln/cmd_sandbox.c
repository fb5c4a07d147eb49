/* SPDX-License-Identifier: MIT */
/* kiln create, ls, inspect, logs, rm; and the sandbox options shared with
 * run and shell. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln.h"
#include "util.h"

static const char create_help[] =
    "  --image NAME      boot this image (kiln images lists them; default: busybox,\n"
    "                    the built-in one)\n"
    "  --template NAME   start as a clone of this template (kiln template ls)\n"
    "  --timeout S       lifetime in seconds (default: kilnd's, 300)\n"
    "  --mem MB          guest memory in MiB (default 256)\n"
    "  --cpus N          vCPUs (default 1)\n"
    "  -e, --env K=V     environment for every command in the sandbox (repeatable)\n"
    "  --metadata K=V    metadata to attach (repeatable)\n"
    "  --secret K=V      a secret: in every command's environment like --env, never\n"
    "                    shown by kilnd (repeatable)\n"
    "  --secret-file K=PATH  the same, the value read from PATH (one trailing newline\n"
    "                    dropped), so it stays out of ps and shell history\n"
    "  --allow-out RULE  let the sandbox connect there (repeatable); RULE is a domain,\n"
    "                    *.domain, host.kiln.internal (the host's loopback), an IP\n"
    "                    address or CIDR, each with an optional :PORT ([v6]:PORT)\n"
    "  --deny-out RULE   refuse connections there (repeatable; allow rules win)\n"
    "  --no-internet     refuse every destination no --allow-out rule names\n";

void create_opts_init(struct create_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout = -1;
	o->mem = -1;
	o->cpus = -1;
}

static int kv_into(json_t **obj, const char *kv, const char *opt)
{
	const char *eq = strchr(kv, '=');
	char *k;

	if (!eq || eq == kv) {
		fprintf(stderr, "kiln: %s wants KEY=VALUE, got '%s'\n", opt, kv);
		return -1;
	}
	if (!*obj)
		*obj = json_object();
	k = strndup(kv, (size_t)(eq - kv));
	json_object_set_new(*obj, k, json_string(eq + 1));
	free(k);
	return 0;
}

/* Like kv_into, but the value is never printed. */
static int secret_into(json_t **obj, const char *kv, bool from_file)
{
	const char *eq = strchr(kv, '=');
	char *k, *val;
	size_t len = 0;

	if (!eq || eq == kv) {
		fprintf(stderr, "kiln: %s wants NAME=%s\n",
		        from_file ? "--secret-file" : "--secret", from_file ? "PATH" : "VALUE");
		return -1;
	}
	k = strndup(kv, (size_t)(eq - kv));
	if (from_file) {
		val = read_small_file(eq + 1, 64 << 10, &len);
		if (!val) {
			fprintf(stderr, "kiln: --secret-file %s: cannot read %s: %s\n", k, eq + 1,
			        errno == EFBIG ? "larger than 64 KiB" : strerror(errno));
			free(k);
			return -1;
		}
		if (len && val[len - 1] == '\n')
			val[--len] = 0;
	} else {
		val = strdup(eq + 1);
		len = val ? strlen(val) : 0;
	}
	if (!k || !val || strlen(val) != len) {
		fprintf(stderr, "kiln: secret %s: the value must be text without NUL bytes\n",
		        k ? k : "?");
		free(k);
		free(val);
		return -1;
	}
	if (!*obj)
		*obj = json_object();
	json_object_set_new(*obj, k, json_string(val));
	explicit_bzero(val, len);
	free(val);
	free(k);
	return 0;
}

static long num_arg(const char *opt, const char *v)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (!*v || *end || n <= 0) {
		fprintf(stderr, "kiln: %s wants a positive number, got '%s'\n", opt, v);
		return -1;
	}
	return n;
}

int create_opt(struct create_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;

	if (strcmp(a, "--image") && strcmp(a, "--template") && strcmp(a, "--timeout") &&
	    strcmp(a, "--mem") && strcmp(a, "--cpus") && strcmp(a, "-e") && strcmp(a, "--env") &&
	    strcmp(a, "--metadata") && strcmp(a, "--allow-out") && strcmp(a, "--deny-out") &&
	    strcmp(a, "--secret") && strcmp(a, "--secret-file")) {
		if (strcmp(a, "--no-internet"))
			return 0;
		o->no_internet = true;
		return 1;
	}
	if (!v) {
		fprintf(stderr, "kiln: %s needs a value\n", a);
		return -1;
	}
	(*i)++;
	if (!strcmp(a, "--image") || !strcmp(a, "--template")) {
		if (o->image) {
			fprintf(stderr, "kiln: give one of --image and --template\n");
			return -1;
		}
		o->image = v;
		o->is_template = a[2] == 't';
	} else if (!strcmp(a, "--timeout"))
		return (o->timeout = num_arg(a, v)) < 0 ? -1 : 1;
	else if (!strcmp(a, "--mem"))
		return (o->mem = num_arg(a, v)) < 0 ? -1 : 1;
	else if (!strcmp(a, "--cpus"))
		return (o->cpus = num_arg(a, v)) < 0 ? -1 : 1;
	else if (!strcmp(a, "--metadata"))
		return kv_into(&o->metadata, v, a) ? -1 : 1;
	else if (!strcmp(a, "--secret") || !strcmp(a, "--secret-file"))
		return secret_into(&o->secrets, v, a[8] == '-') ? -1 : 1;
	else if (!strcmp(a, "--allow-out") || !strcmp(a, "--deny-out")) {
		json_t **list = a[2] == 'a' ? &o->allow_out : &o->deny_out;

		if (!*list)
			*list = json_array();
		json_array_append_new(*list, json_string(v));
		return 1;
	} else
		return kv_into(&o->env, v, a) ? -1 : 1;
	return 1;
}

/* kilnd's message names the request's field: name our option instead. */
static void print_create_error(const struct kc_resp *r)
{
	static const char *const opt[][2] = {{"'memoryMB'", "--mem"},
	                                     {"'cpuCount'", "--cpus"},
	                                     {"'timeout'", "--timeout"},
	                                     {"network.allowOut", "--allow-out"},
	                                     {"network.denyOut", "--deny-out"}};
	json_t *j = r->body_len ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
	const char *msg = json_string_value(json_object_get(j, "message"));

	for (size_t i = 0; msg && i < ARRAY_SIZE(opt); i++)
		if (!strncmp(msg, opt[i][0], strlen(opt[i][0]))) {
			fprintf(stderr, "kiln: %s%s\n", opt[i][1], msg + strlen(opt[i][0]));
			json_decref(j);
			return;
		}
	kc_print_error("/sandboxes", r);
	json_decref(j);
}

void create_opts_net_json(const struct create_opts *o, json_t *req)
{
	if (o->no_internet)
		json_object_set_new(req, "allow_internet_access", json_false());
	if (o->allow_out || o->deny_out) {
		json_t *net = json_object();

		if (o->allow_out)
			json_object_set(net, "allowOut", o->allow_out);
		if (o->deny_out)
			json_object_set(net, "denyOut", o->deny_out);
		json_object_set_new(req, "network", net);
	}
}

char *sandbox_create(struct kc *k, const struct create_opts *o, bool show_progress)
{
	json_t *req = json_object(), *resp = NULL;
	bool tty = show_progress && stderr_tty();
	struct kc_resp r = {0};
	char *id = NULL, *body;
	int rc;

	if (o->image)
		json_object_set_new(req, o->is_template ? "templateID" : "image",
		                    json_string(o->image));
	if (o->timeout > 0)
		json_object_set_new(req, "timeout", json_integer(o->timeout));
	if (o->mem > 0)
		json_object_set_new(req, "memoryMB", json_integer(o->mem));
	if (o->cpus > 0)
		json_object_set_new(req, "cpuCount", json_integer(o->cpus));
	if (o->env)
		json_object_set(req, "envVars", o->env);
	if (o->metadata)
		json_object_set(req, "metadata", o->metadata);
	if (o->secrets)
		json_object_set(req, "secrets", o->secrets);
	create_opts_net_json(o, req);
	if (tty)
		fprintf(stderr, "creating sandbox...");
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!body)
		die_oom();
	rc = kc_request(k, "POST", "/sandboxes", "application/json", body, strlen(body), &r);
	free(body);
	if (tty)
		fprintf(stderr, "\r\033[K");
	if (!rc && r.status == 201)
		resp = json_loadb(r.body, r.body_len, 0, NULL);
	else if (!rc)
		print_create_error(&r);
	kc_resp_free(&r);
	if (json_is_string(json_object_get(resp, "sandboxID")))
		id = strdup(json_string_value(json_object_get(resp, "sandboxID")));
	else if (!rc && r.status == 201)
		fprintf(stderr, "kiln: unexpected answer from kilnd to create\n");
	json_decref(resp);
	return id;
}

int sandbox_delete(struct kc *k, const char *id, bool quiet)
{
	char path[128];
	struct kc_resp r = {0};
	int rc;

	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	rc = kc_request(k, "DELETE", path, NULL, NULL, 0, &r);
	if (!rc && r.status != 204 && !quiet)
		kc_print_error(path, &r);
	rc = rc || r.status != 204 ? -1 : 0;
	kc_resp_free(&r);
	return rc;
}

bool want_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return false;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	}
	return false;
}

int cmd_create(struct kc *k, int argc, char **argv)
{
	struct create_opts o;
	char *id;

	if (want_help(argc, argv)) {
		printf(
		    "usage: kiln create [options]\n\nCreate a sandbox and print its id (the last "
		    "line of output).\n\n%s",
		    create_help);
		return 0;
	}
	create_opts_init(&o);
	for (int i = 1; i < argc; i++) {
		int rc = create_opt(&o, argc, argv, &i);

		if (rc < 0)
			return 2;
		if (rc == 0) {
			fprintf(stderr, "kiln create: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}
	id = sandbox_create(k, &o, true);
	if (!id)
		return 1;
	printf("%s\n", id);
	free(id);
	return 0;
}

static void short_time(const char *iso, char out[20])
{
	/* 2026-01-02T03:04:05.678Z -> 2026-01-02 03:04:05 */
	snprintf(out, 20, "%.10s %.8s", iso ? iso : "", iso && strlen(iso) > 11 ? iso + 11 : "");
}

int cmd_ls(struct kc *k, int argc, char **argv)
{
	bool quiet = false, all = true;
	const char *state = NULL;
	json_t *list = NULL, *sb;
	char path[256];
	size_t i;
	int tw = 10;

	if (want_help(argc, argv)) {
		printf(
		    "usage: kiln ls [-q] [--state running,paused,...]\n\n"
		    "List sandboxes.\n  -q       ids only\n"
		    "  --state  only these states (starting, running, pausing, paused, resuming,\n"
		    "           killed, error)\n");
		return 0;
	}
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-q"))
			quiet = true;
		else if (!strcmp(argv[a], "--state") && a + 1 >= argc) {
			fprintf(stderr, "kiln ls: --state needs a value, e.g. running,paused\n");
			return 2;
		} else if (!strcmp(argv[a], "--state"))
			state = argv[++a], all = false;
		else {
			fprintf(stderr, "kiln ls: unknown argument '%s'\n", argv[a]);
			return 2;
		}
	}
	if (!all) {
		char *esc = url_escape(state);

		snprintf(path, sizeof(path), "/sandboxes?state=%.200s", esc);
		free(esc);
	} else {
		snprintf(path, sizeof(path), "/sandboxes");
	}
	if (kc_json(k, "GET", path, NULL, &list) != 200 || !json_is_array(list)) {
		json_decref(list);
		return 1;
	}
	/* The TEMPLATE column is as wide as its longest name. */
	json_array_foreach(list, i, sb)
	{
		size_t n = strlen(json_string_value(json_object_get(sb, "templateID")) ?: "");

		if (n > (size_t)tw)
			tw = (int)(n < 64 ? n : 64);
	}
	if (!quiet)
		printf("%-20s  %-*s  %-8s  %-19s  %-19s  %6s  %4s\n", "ID", tw, "TEMPLATE", "STATE",
		       "STARTED (UTC)", "ENDS (UTC)", "MEM", "CPUS");
	json_array_foreach(list, i, sb)
	{
		char started[20], ends[20];

		if (quiet) {
			printf("%s\n", json_string_value(json_object_get(sb, "sandboxID")));
			continue;
		}
		short_time(json_string_value(json_object_get(sb, "startedAt")), started);
		short_time(json_string_value(json_object_get(sb, "endAt")), ends);
		printf("%-20s  %-*s  %-8s  %-19s  %-19s  %5lldM  %4lld\n",
		       json_string_value(json_object_get(sb, "sandboxID")), tw,
		       json_string_value(json_object_get(sb, "templateID")),
		       json_string_value(json_object_get(sb, "state")), started, ends,
		       (long long)json_integer_value(json_object_get(sb, "memoryMB")),
		       (long long)json_integer_value(json_object_get(sb, "cpuCount")));
	}
	json_decref(list);
	return 0;
}

int cmd_inspect(struct kc *k, int argc, char **argv)
{
	json_t *j = NULL;
	char path[128];
	char *s;

	if (want_help(argc, argv) || argc != 2) {
		fprintf(want_help(argc, argv) ? stdout : stderr,
		        "usage: kiln inspect ID\n\nPrint a sandbox's details as JSON.\n");
		return want_help(argc, argv) ? 0 : 2;
	}
	snprintf(path, sizeof(path), "/sandboxes/%.64s", argv[1]);
	if (kc_json(k, "GET", path, NULL, &j) != 200)
		return 1;
	s = json_dumps(j, JSON_INDENT(2));
	printf("%s\n", s);
	free(s);
	json_decref(j);
	return 0;
}

static int to_stdout(void *ctx, const char *p, size_t n)
{
	return write_all(1, p, n);
}

int cmd_logs(struct kc *k, int argc, char **argv)
{
	struct kc_resp r = {.on_data = to_stdout};
	char path[128];
	int rc;

	if (want_help(argc, argv) || argc != 2) {
		fprintf(
		    want_help(argc, argv) ? stdout : stderr,
		    "usage: kiln logs ID\n\nPrint the sandbox's console log (its VMM's output).\n");
		return want_help(argc, argv) ? 0 : 2;
	}
	snprintf(path, sizeof(path), "/sandboxes/%.64s/logs", argv[1]);
	rc = kc_request(k, "GET", path, NULL, NULL, 0, &r);
	if (!rc && r.status != 200)
		kc_print_error(path, &r);
	rc = rc || r.status != 200;
	kc_resp_free(&r);
	return rc;
}

int cmd_rm(struct kc *k, int argc, char **argv)
{
	int rc = 0;

	if (want_help(argc, argv) || argc < 2) {
		fprintf(
		    argc < 2 ? stderr : stdout,
		    "usage: kiln rm ID...\n\nDelete sandboxes (their VMs are killed, the snapshots "
		    "of paused ones\ndeleted).\n");
		return argc < 2 ? 2 : 0;
	}
	for (int i = 1; i < argc; i++)
		if (sandbox_delete(k, argv[i], false))
			rc = 1;
	return rc;
}

const char *create_opts_help(void)
{
	return create_help;
}
