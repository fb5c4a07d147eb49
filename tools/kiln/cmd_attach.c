/* SPDX-License-Identifier: MIT */
/* kiln attach ID PID: take up again a command of kiln exec or kiln shell
 * that a pause detached. Its kept output comes first, then the rest; a
 * pty process gets our terminal (raw, resized) and our input; the exit
 * status is the command's. Ctrl-] (on a terminal) or a signal leaves it
 * running detached again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

/* Is pid of sandbox id a pty process? (Unknown: no; kilnd's attach answer
 * then says what is wrong.) */
static bool is_pty(struct kc *k, const char *id, const char *pid)
{
	json_t *list = NULL, *p;
	char path[128];
	bool pty = false;
	size_t i;

	snprintf(path, sizeof(path), "/sandboxes/%.64s/processes", id);
	if (kc_json(k, "GET", path, NULL, &list) == 200) {
		json_array_foreach(list, i, p)
		{
			char s[24];

			snprintf(s, sizeof(s), "%lld",
			         (long long)json_integer_value(json_object_get(p, "pid")));
			if (!strcmp(s, pid) &&
			    !strcmp(json_string_value(json_object_get(p, "api")) ?: "", "kiln"))
				pty = !strcmp(json_string_value(json_object_get(p, "kind")) ?: "",
				              "pty");
		}
	}
	json_decref(list);
	kc_disconnect(k);
	return pty;
}

int cmd_attach(struct kc *k, int argc, char **argv)
{
	char path[160];
	struct term_opts o = {.path = path, .what = "kilnd refused the attach", .attach = true};

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: kiln attach ID PID\n\n"
		       "Attach to process PID of sandbox ID, started by kiln exec or kiln shell\n"
		       "and detached by a pause (the line kiln printed then names both; GET\n"
		       "/sandboxes/ID/processes lists them). Its recent output comes first\n"
		       "(kept by the sandbox's agent, 128-256 KiB), then the rest. A terminal\n"
		       "process gets this terminal and its input. Exits with the command's\n"
		       "status; Ctrl-] (on a terminal), Ctrl-C or a closed connection leave it\n"
		       "running, detached again (exit status 125).\n");
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "kiln attach: usage: kiln attach ID PID\n");
		return 2;
	}
	o.id = argv[1];
	o.pid = argv[2];
	o.raw = o.input = is_pty(k, o.id, o.pid);
	snprintf(path, sizeof(path), "/sandboxes/%.64s/processes/%.24s/attach", o.id, o.pid);
	return term_session(k, &o);
}
