/* SPDX-License-Identifier: MIT */
/* kiln network ID [RULES]: show or replace a sandbox's egress policy
 * (GET and PUT /sandboxes/ID/network). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

static void print_policy(json_t *p)
{
	json_t *v;
	size_t i;

	printf("internet: %s\n", json_is_false(json_object_get(p, "internet")) ? "off" : "on");
	json_array_foreach(json_object_get(p, "allowOut"), i, v)
	    printf("allow-out: %s\n", json_string_value(v));
	json_array_foreach(json_object_get(p, "denyOut"), i, v)
	    printf("deny-out: %s\n", json_string_value(v));
}

int cmd_network(struct kc *k, int argc, char **argv)
{
	json_t *allow = json_array(), *deny = json_array(), *body, *out = NULL;
	bool set = false, no_internet = false;
	char path[160], *id;
	int status;

	if (argc < 2 || want_help(argc, argv)) {
		fprintf(
		    argc < 2 ? stderr : stdout,
		    "usage: kiln network ID                       show the egress policy\n"
		    "       kiln network ID [--allow-out RULE]... [--deny-out RULE]...\n"
		    "                       [--no-internet]       replace it\n"
		    "       kiln network ID --clear               internet on, no rules\n\n"
		    "A new policy replaces the whole old one (rules as for kiln create --help).\n"
		    "It holds for new connections at once, and open connections it refuses are\n"
		    "closed. It is kept across pauses and kilnd restarts.\n");
		json_decref(allow);
		json_decref(deny);
		return argc < 2 ? 2 : 0;
	}
	if (!allow || !deny)
		die_oom();
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if ((!strcmp(a, "--allow-out") || !strcmp(a, "--deny-out")) && i + 1 < argc) {
			json_array_append_new(a[2] == 'a' ? allow : deny, json_string(argv[++i]));
			set = true;
		} else if (!strcmp(a, "--no-internet")) {
			no_internet = set = true;
		} else if (!strcmp(a, "--clear")) {
			set = true;
		} else {
			fprintf(stderr, "kiln network: unexpected '%s' (kiln network --help)\n", a);
			json_decref(allow);
			json_decref(deny);
			return 2;
		}
	}
	id = url_escape(argv[1]);
	if (!id)
		die_oom();
	snprintf(path, sizeof(path), "/sandboxes/%.100s/network", id);
	free(id);
	if (!set) {
		json_decref(allow);
		json_decref(deny);
		status = kc_json(k, "GET", path, NULL, &out);
	} else {
		body = json_pack("{s:o,s:o,s:b}", "allowOut", allow, "denyOut", deny,
		                 "allow_internet_access", !no_internet);
		if (!body)
			die_oom();
		status = kc_json(k, "PUT", path, body, &out);
		json_decref(body);
	}
	if (status != 200) {
		json_decref(out);
		return 1;
	}
	print_policy(out);
	json_decref(out);
	return 0;
}
