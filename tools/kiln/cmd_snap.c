/* SPDX-License-Identifier: MIT */
/* kiln pause, resume, fork, template and images: snapshots through kilnd;
 * kiln snapshot: a snapshot file, read here (tools/snapshot/inspect.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../snapshot/inspect.h"
#include "kiln.h"

static long pos_arg(const char *opt, const char *v)
{
	char *end;
	long n = v ? strtol(v, &end, 10) : 0;

	if (!v || !*v || *end || n <= 0) {
		fprintf(stderr, "kiln: %s wants a positive number, got '%s'\n", opt, v ? v : "");
		return -1;
	}
	return n;
}

static void mib(long long bytes, char out[24])
{
	snprintf(out, 24, "%.1f MiB", (double)bytes / (1 << 20));
}

int cmd_pause(struct kc *k, int argc, char **argv)
{
	int rc = 0;

	if (want_help(argc, argv) || argc < 2) {
		fprintf(
		    argc < 2 ? stderr : stdout,
		    "usage: kiln pause ID...\n\n"
		    "Pause sandboxes: each is written to a snapshot in kilnd's data directory and\n"
		    "its VM stops, so it costs no memory or CPU until 'kiln resume', or until\n"
		    "an exec, shell or cp needs it (those resume it first). Its files and\n"
		    "processes are as they were when it comes back. Prints each id once\n"
		    "paused.\n");
		return argc < 2 ? 2 : 0;
	}
	for (int i = 1; i < argc; i++) {
		char path[128];

		snprintf(path, sizeof(path), "/sandboxes/%.64s/pause", argv[i]);
		if (kc_json(k, "POST", path, NULL, NULL) == 204)
			printf("%s\n", argv[i]);
		else
			rc = 1;
	}
	return rc;
}

int cmd_resume(struct kc *k, int argc, char **argv)
{
	long timeout = 0;
	int rc = 0, n = 0;

	if (want_help(argc, argv) || argc < 2) {
		fprintf(argc < 2 ? stderr : stdout,
		        "usage: kiln resume [--timeout S] ID...\n\n"
		        "Resume paused sandboxes where they were paused. Prints each id once its\n"
		        "agent answers.\n\n"
		        "  --timeout S   lifetime from now in seconds (default: kilnd's, 300)\n");
		return argc < 2 ? 2 : 0;
	}
	for (int i = 1; i < argc; i++) {
		json_t *body;
		char path[128];

		if (!strcmp(argv[i], "--timeout")) {
			timeout = pos_arg(argv[i], i + 1 < argc ? argv[i + 1] : NULL);
			if (timeout < 0)
				return 2;
			i++;
			continue;
		}
		n++;
		body = json_object();
		if (timeout > 0)
			json_object_set_new(body, "timeout", json_integer(timeout));
		snprintf(path, sizeof(path), "/sandboxes/%.64s/resume", argv[i]);
		if (kc_json(k, "POST", path, body, NULL) == 201)
			printf("%s\n", argv[i]);
		else
			rc = 1;
		json_decref(body);
	}
	if (!n) {
		fprintf(stderr, "kiln resume: which sandbox?\n");
		return 2;
	}
	return rc;
}

int cmd_fork(struct kc *k, int argc, char **argv)
{
	const char *id = NULL;
	long count = 1, timeout = 0;
	json_t *body, *out = NULL, *v;
	char path[128];
	size_t i;
	int rc = 0;

	if (want_help(argc, argv)) {
		printf(
		    "usage: kiln fork [-n N] [--timeout S] ID\n\n"
		    "Clone a running sandbox: it is snapshotted in place (paused for the time of\n"
		    "the snapshot, then it goes on) and N new sandboxes start from the snapshot,\n"
		    "with its files, processes and memory. Prints the new ids, one per line.\n\n"
		    "  -n N          how many clones (default 1, at most 32)\n"
		    "  --timeout S   lifetime of the clones in seconds (default: kilnd's, 300)\n");
		return 0;
	}
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-n") || !strcmp(argv[a], "--timeout")) {
			long v2 = pos_arg(argv[a], a + 1 < argc ? argv[a + 1] : NULL);

			if (v2 < 0)
				return 2;
			*(argv[a][1] == 'n' ? &count : &timeout) = v2;
			a++;
		} else if (argv[a][0] == '-' || id) {
			fprintf(stderr, "kiln fork: unexpected argument '%s'\n", argv[a]);
			return 2;
		} else {
			id = argv[a];
		}
	}
	if (!id) {
		fprintf(stderr, "kiln fork: which sandbox?\n");
		return 2;
	}
	if (count < 1 || count > 32) {
		fprintf(stderr, "kiln fork: -n must be between 1 and 32\n");
		return 2;
	}
	body = json_pack("{s:i}", "count", (json_int_t)count);
	if (timeout > 0)
		json_object_set_new(body, "timeout", json_integer(timeout));
	snprintf(path, sizeof(path), "/sandboxes/%.64s/fork", id);
	if (kc_json(k, "POST", path, body, &out) != 201 || !json_is_array(out)) {
		json_decref(body);
		json_decref(out);
		return 1;
	}
	json_array_foreach(out, i, v)
	{
		const char *nid =
		    json_string_value(json_object_get(json_object_get(v, "sandbox"), "sandboxID"));
		const char *msg =
		    json_string_value(json_object_get(json_object_get(v, "error"), "message"));

		if (nid) {
			printf("%s\n", nid);
		} else {
			fprintf(stderr, "kiln: clone %zu: %s\n", i + 1, msg ? msg : "failed");
			rc = 1;
		}
	}
	json_decref(body);
	json_decref(out);
	return rc;
}

/* ---------------------------------------------------------------- templates */

static int template_create(struct kc *k, int argc, char **argv)
{
	const char *name = NULL, *image = NULL;
	long mem = 0, cpus = 0, timeout = 0, pool = -1;
	json_t *body, *out = NULL, *warm = NULL;
	bool tty = stderr_tty();
	struct create_opts net;
	char size[24];
	int st;

	create_opts_init(&net);
	for (int a = 2; a < argc; a++) {
		const char *o = argv[a];

		if (!strcmp(o, "--")) {
			if (a + 1 == argc) {
				fprintf(stderr,
				        "kiln template create: no warm-up command after --\n");
				return 2;
			}
			warm = json_array();
			for (a++; a < argc; a++)
				json_array_append_new(warm, json_string(argv[a]));
			break;
		}
		if (!strcmp(o, "--image")) {
			if (a + 1 >= argc) {
				fprintf(stderr, "kiln: --image needs a value\n");
				return 2;
			}
			image = argv[++a];
		} else if (!strcmp(o, "--pool")) {
			char *end;

			pool = a + 1 < argc ? strtol(argv[a + 1], &end, 10) : -1;
			if (a + 1 >= argc || !*argv[a + 1] || *end || pool < 0) {
				fprintf(stderr, "kiln: --pool needs a number (0 or more)\n");
				return 2;
			}
			a++;
		} else if (!strcmp(o, "--allow-out") || !strcmp(o, "--deny-out") ||
		           !strcmp(o, "--no-internet")) {
			if (create_opt(&net, argc, argv, &a) < 0)
				return 2;
		} else if (!strcmp(o, "--mem") || !strcmp(o, "--cpus") || !strcmp(o, "--timeout")) {
			long v = pos_arg(o, a + 1 < argc ? argv[a + 1] : NULL);

			if (v < 0)
				return 2;
			*(o[2] == 'm' ? &mem : o[2] == 'c' ? &cpus : &timeout) = v;
			a++;
		} else if (o[0] == '-' || name) {
			fprintf(stderr,
			        "kiln template create: unexpected argument '%s' (the warm-up "
			        "command goes after --: kiln template create NAME -- CMD...)\n",
			        o);
			return 2;
		} else {
			name = o;
		}
	}
	if (!name) {
		fprintf(stderr, "kiln template create: the template needs a NAME\n");
		json_decref(warm);
		return 2;
	}
	body = json_pack("{s:s}", "name", name);
	if (image)
		json_object_set_new(body, "image", json_string(image));
	if (mem)
		json_object_set_new(body, "memoryMB", json_integer(mem));
	if (cpus)
		json_object_set_new(body, "cpuCount", json_integer(cpus));
	if (timeout)
		json_object_set_new(body, "timeout", json_integer(timeout));
	if (pool >= 0)
		json_object_set_new(body, "pool", json_integer(pool));
	if (warm)
		json_object_set_new(body, "warmup", warm);
	create_opts_net_json(&net, body);
	if (tty)
		fprintf(stderr, "building template %s (boot, warm-up, snapshot)...", name);
	st = kc_json(k, "POST", "/templates", body, &out);
	if (tty)
		fprintf(stderr, "\r\033[K");
	json_decref(body);
	if (st != 201) {
		json_decref(out);
		return 1;
	}
	mib(json_integer_value(json_object_get(out, "snapshotBytes")), size);
	printf("template %s: built in %.2f s (warm-up %.2f s), snapshot %s", name,
	       (double)json_integer_value(json_object_get(out, "buildMs")) / 1000,
	       (double)json_integer_value(json_object_get(out, "warmupMs")) / 1000, size);
	if (pool > 0)
		printf(", a pool of %ld clones started ahead", pool);
	printf("\n");
	json_decref(out);
	return 0;
}

static int template_ls(struct kc *k, int argc, char **argv)
{
	bool quiet = argc > 2 && !strcmp(argv[2], "-q");
	json_t *list = NULL, *t;
	size_t i;

	if (argc > 2 + quiet) {
		fprintf(stderr, "kiln template ls: unexpected argument '%s'\n", argv[2 + quiet]);
		return 2;
	}
	if (kc_json(k, "GET", "/templates", NULL, &list) != 200 || !json_is_array(list)) {
		json_decref(list);
		return 1;
	}
	if (!quiet)
		printf("%-20s  %-10s  %6s  %12s  %-7s  %-19s  %s\n", "NAME", "IMAGE", "MEM",
		       "SNAPSHOT", "POOL", "CREATED (UTC)", "WARM-UP");
	json_array_foreach(list, i, t)
	{
		const char *created = json_string_value(json_object_get(t, "createdAt"));
		char *warm =
		    json_dumps(json_object_get(t, "warmup"), JSON_COMPACT | JSON_ENCODE_ANY);
		char size[24], pool[24] = "-";

		if (json_integer_value(json_object_get(t, "pool")))
			snprintf(pool, sizeof(pool), "%lld/%lld",
			         (long long)json_integer_value(json_object_get(t, "poolReady")),
			         (long long)json_integer_value(json_object_get(t, "pool")));
		if (quiet) {
			printf("%s\n", json_string_value(json_object_get(t, "name")));
			free(warm);
			continue;
		}
		mib(json_integer_value(json_object_get(t, "snapshotBytes")), size);
		printf("%-20s  %-10s  %5lldM  %12s  %-7s  %.10s %.8s  %s\n",
		       json_string_value(json_object_get(t, "name")),
		       json_string_value(json_object_get(t, "image")),
		       (long long)json_integer_value(json_object_get(t, "memoryMB")), size, pool,
		       created ? created : "", created && strlen(created) > 11 ? created + 11 : "",
		       warm ? warm : "");
		free(warm);
	}
	json_decref(list);
	return 0;
}

static int template_rm(struct kc *k, int argc, char **argv)
{
	int rc = 0;

	if (argc < 3) {
		fprintf(stderr, "kiln template rm: which template?\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		char path[128];

		snprintf(path, sizeof(path), "/templates/%.64s", argv[i]);
		if (kc_json(k, "DELETE", path, NULL, NULL) != 204)
			rc = 1;
	}
	return rc;
}

int cmd_template(struct kc *k, int argc, char **argv)
{
	if (argc < 2 || want_help(argc, argv)) {
		fprintf(
		    argc < 2 ? stderr : stdout,
		    "usage: kiln template create NAME [--image IMAGE] [--mem MB] [--cpus N]\n"
		    "                            [--timeout S] [--pool N] [-- WARM-UP COMMAND...]\n"
		    "       kiln template ls [-q]\n"
		    "       kiln template rm NAME...\n\n"
		    "A template is a sandbox booted from IMAGE (default: busybox), warmed up by\n"
		    "running the command (e.g. python3 -c 'import numpy, pandas') and "
		    "snapshotted.\n"
		    "'kiln create --template NAME' and E2B's Sandbox.create(NAME) start copy-on-\n"
		    "write clones of it, with the warm-up done, in milliseconds.\n\n"
		    "  --image IMAGE   the image to boot (kiln images)\n"
		    "  --mem MB        guest memory, which every clone has (default 256)\n"
		    "  --cpus N        vCPUs (default 1)\n"
		    "  --timeout S     limit for the warm-up command (default 300)\n"
		    "  --pool N        keep N clones started ahead (default 0): a create takes\n"
		    "                  one whose agent is up, and kilnd starts another; they\n"
		    "                  count against kilnd's --max-sandboxes and give way to\n"
		    "                  sandboxes asked for ('kiln template ls': ready/N)\n"
		    "  --allow-out RULE, --deny-out RULE, --no-internet\n"
		    "                  the egress policy of the warm-up and of every clone (see\n"
		    "                  kiln create --help; a clone's own rules replace these)\n");
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "create"))
		return template_create(k, argc, argv);
	if (!strcmp(argv[1], "ls"))
		return template_ls(k, argc, argv);
	if (!strcmp(argv[1], "rm"))
		return template_rm(k, argc, argv);
	fprintf(stderr, "kiln template: unknown command '%s' (create, ls or rm)\n", argv[1]);
	return 2;
}

/* ---------------------------------------------------------------- images */

int cmd_images(struct kc *k, int argc, char **argv)
{
	json_t *list = NULL, *im;
	size_t i;

	if (want_help(argc, argv) || argc > 1) {
		fprintf(
		    want_help(argc, argv) ? stdout : stderr,
		    "usage: kiln images\n\n"
		    "List the images sandboxes can boot (kiln create --image NAME): busybox is\n"
		    "built in, the others are kilnd's --images directory (make images).\n");
		return argc > 1 && !want_help(argc, argv) ? 2 : 0;
	}
	if (kc_json(k, "GET", "/images", NULL, &list) != 200 || !json_is_array(list)) {
		json_decref(list);
		return 1;
	}
	printf("%-20s  %12s  %s\n", "NAME", "SIZE", "FILE");
	json_array_foreach(list, i, im)
	{
		char size[24];
		const char *path = json_string_value(json_object_get(im, "path"));

		mib(json_integer_value(json_object_get(im, "sizeBytes")), size);
		printf("%-20s  %12s  %s\n", json_string_value(json_object_get(im, "name")),
		       path ? size : "-", path ? path : "(built in: the agent's initramfs)");
	}
	json_decref(list);
	return 0;
}

int cmd_snapshot(struct kc *k, int argc, char **argv)
{
	/* A file on this host: kilnd is not asked. */
	return snap_inspect_cli("kiln snapshot", argc - 1, argv + 1);
}
