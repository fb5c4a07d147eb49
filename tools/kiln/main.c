/* SPDX-License-Identifier: MIT */
/*
 * kiln: command-line client for kilnd.
 *
 *   kiln [--socket PATH | --url http://HOST:PORT] [--api-key KEY]
 *        [--data-dir DIR] COMMAND [ARGS...]
 *   kiln --help | --version
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "util.h"

struct command {
	const char *name;
	int (*fn)(struct kc *k, int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
    {"up", cmd_up, "start kilnd in the background (if it is not running)"},
    {"down", cmd_down, "stop kilnd (sandboxes keep running)"},
    {"run", cmd_run, "create a sandbox, run a command in it, delete it"},
    {"create", cmd_create, "create a sandbox and print its id"},
    {"exec", cmd_exec, "run a command in a sandbox"},
    {"shell", cmd_shell, "open a terminal in a sandbox"},
    {"attach", cmd_attach, "attach to a command a pause detached (kiln attach ID PID)"},
    {"cp", cmd_cp, "copy files or directories to or from a sandbox"},
    {"ls", cmd_ls, "list sandboxes"},
    {"pause", cmd_pause, "pause sandboxes to snapshots on disk (no process left)"},
    {"resume", cmd_resume, "resume paused sandboxes where they were"},
    {"fork", cmd_fork, "clone a running sandbox (it goes on running)"},
    {"template", cmd_template, "create, list and remove templates (warm snapshots)"},
    {"key", cmd_key, "create, list and revoke tenants' API keys"},
    {"images", cmd_images, "list the images sandboxes can boot"},
    {"image", cmd_image, "import a container image archive (docker save) as an image"},
    {"snapshot", cmd_snapshot, "inspect a snapshot file: header, sections, chunks, checksums"},
    {"network", cmd_network, "show or replace a sandbox's egress policy"},
    {"port-forward", cmd_port_forward, "forward a local TCP port to a port in a sandbox"},
    {"browser", cmd_browser, "a sandbox's browser: its CDP endpoint, or a screenshot"},
    {"inspect", cmd_inspect, "show a sandbox as JSON"},
    {"logs", cmd_logs, "print a sandbox's console log"},
    {"rm", cmd_rm, "delete sandboxes"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: kiln [global options] COMMAND [ARGS...]\n\nCommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(
	    f,
	    "\nGlobal options:\n"
	    "  --socket PATH     kilnd's unix socket ($KILN_SOCKET; default: like kilnd's)\n"
	    "  --url URL         talk to kilnd over TCP, e.g. http://127.0.0.1:3000 ($KILN_URL)\n"
	    "  --api-key KEY     API key for --url ($KILN_API_KEY; default: DATA_DIR/api-key)\n"
	    "  --data-dir DIR    kilnd's data directory ($KILN_DATA_DIR)\n"
	    "  -h, --help        this text; 'kiln COMMAND --help' for a command\n"
	    "  --version         kiln's version\n"
	    "\nExit status: run and exec return the command's status (128+N if it was\n"
	    "killed by signal N); 125 means kiln or kilnd failed.\n");
}

static int parse_url(struct kc *k, const char *url)
{
	const char *p = url, *colon;

	if (!strncmp(p, "http://", 7))
		p += 7;
	colon = strrchr(p, ':');
	if (!colon)
		return -1;
	k->url_host = strndup(p, (size_t)(colon - p));
	k->url_port = atoi(colon + 1);
	if (k->url_port <= 0 || k->url_port > 65535)
		return -1;
	k->socket_path = NULL;
	return 0;
}

static void kc_free(struct kc *k)
{
	kc_disconnect(k);
	free(k->socket_path);
	free(k->url_host);
	free(k->api_key);
	free(k->data_dir);
}

static int dispatch(struct kc *k, int argc, char **argv)
{
	if (!strcmp(argv[0], "help")) {
		if (argc > 1) {
			char *h[] = {argv[1], "--help", NULL};

			for (size_t c = 0; c < ARRAY_SIZE(commands); c++)
				if (!strcmp(commands[c].name, argv[1]))
					return commands[c].fn(k, 2, h);
		}
		usage(stdout);
		return 0;
	}
	for (size_t c = 0; c < ARRAY_SIZE(commands); c++)
		if (!strcmp(commands[c].name, argv[0]))
			return commands[c].fn(k, argc, argv);
	fprintf(stderr, "kiln: unknown command '%s'\n", argv[0]);
	usage(stderr);
	return 2;
}

int main(int argc, char **argv)
{
	struct kc k = {.fd = -1};
	const char *url = getenv("KILN_URL"), *sock = getenv("KILN_SOCKET");
	int i;

	k.data_dir = getenv("KILN_DATA_DIR") ? strdup(getenv("KILN_DATA_DIR")) : NULL;
	k.api_key = getenv("KILN_API_KEY") ? strdup(getenv("KILN_API_KEY")) : NULL;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--version")) {
			printf("kiln %s\n", KILN_VERSION);
			return 0;
		}
		if (strcmp(a, "--socket") && strcmp(a, "--url") && strcmp(a, "--api-key") &&
		    strcmp(a, "--data-dir")) {
			fprintf(stderr, "kiln: unknown option %s (kiln --help lists them)\n", a);
			return 2;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "kiln: %s needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "--socket")) {
			sock = argv[++i];
		} else if (!strcmp(a, "--url")) {
			url = argv[++i];
		} else if (!strcmp(a, "--api-key")) {
			free(k.api_key);
			k.api_key = strdup(argv[++i]);
		} else {
			free(k.data_dir);
			k.data_dir = strdup(argv[++i]);
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	if (url && *url) {
		if (parse_url(&k, url)) {
			fprintf(stderr, "kiln: bad --url '%s' (expected http://HOST:PORT)\n", url);
			return 2;
		}
		if (!k.api_key) {
			char *dd = k.data_dir ? strdup(k.data_dir) : kiln_default_data_dir(), *path;

			if (dd && asprintf(&path, "%s/api-key", dd) >= 0) {
				size_t len;

				k.api_key = read_small_file(path, 256, &len);
				while (k.api_key && len && k.api_key[len - 1] == '\n')
					k.api_key[--len] = 0;
				free(path);
			}
			free(dd);
		}
	} else {
		k.socket_path = sock && *sock ? strdup(sock) : kiln_default_socket(k.data_dir);
	}
	{
		int rc = dispatch(&k, argc - i, argv + i);

		kc_free(&k);
		return rc;
	}
}
