/* SPDX-License-Identifier: MIT */
/* kiln key create|ls|revoke: the tenants' API keys (control/auth/auth.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

static int key_create(struct kc *k, int argc, char **argv)
{
	const char *tenant = NULL, *name = NULL;
	json_t *req, *out = NULL;
	int status;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--tenant") && i + 1 < argc)
			tenant = argv[++i];
		else if (!strcmp(argv[i], "--name") && i + 1 < argc)
			name = argv[++i];
		else {
			fprintf(stderr, "kiln key create: unexpected '%s' (kiln key --help)\n",
			        argv[i]);
			return 2;
		}
	}
	if (!tenant) {
		fprintf(stderr, "kiln key create: --tenant NAME is required\n");
		return 2;
	}
	req = json_pack("{s:s,s:s?}", "tenant", tenant, "name", name);
	if (!req)
		die_oom();
	status = kc_json(k, "POST", "/keys", req, &out);
	json_decref(req);
	if (status != 201) {
		json_decref(out);
		return 1;
	}
	/* the secret on stdout alone, so that $(kiln key create ...) is the key */
	printf("%s\n", json_string_value(json_object_get(out, "key")));
	fprintf(stderr, "kiln: key %s for tenant %s; it is shown only now\n",
	        json_string_value(json_object_get(out, "id")), tenant);
	json_decref(out);
	return 0;
}

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

static int key_ls(struct kc *k)
{
	json_t *list = NULL, *e;
	size_t i;

	if (kc_json(k, "GET", "/keys", NULL, &list) != 200 || !json_is_array(list)) {
		json_decref(list);
		return 1;
	}
	printf("%-20s  %-16s  %-16s  %-20s  %-20s  %s\n", "ID", "TENANT", "NAME", "CREATED",
	       "LAST USED", "REVOKED");
	json_array_foreach(list, i, e)
	{
		printf("%-20s  %-16s  %-16s  %-20.19s  %-20.19s  %.19s\n",
		       json_string_value(json_object_get(e, "id")),
		       json_string_value(json_object_get(e, "tenant")),
		       or_dash(json_string_value(json_object_get(e, "name"))),
		       or_dash(json_string_value(json_object_get(e, "createdAt"))),
		       or_dash(json_string_value(json_object_get(e, "lastUsedAt"))),
		       or_dash(json_string_value(json_object_get(e, "revokedAt"))));
	}
	json_decref(list);
	return 0;
}

static int key_revoke(struct kc *k, int argc, char **argv)
{
	bool purge = argc > 2 && !strcmp(argv[2], "--purge");
	int rc = 0;

	if (argc < 3 + purge) {
		fprintf(stderr, "kiln key revoke: which key? (kiln key ls)\n");
		return 2;
	}
	for (int i = 2 + purge; i < argc; i++) {
		char *id = url_escape(argv[i]), path[160];

		if (!id)
			die_oom();
		snprintf(path, sizeof(path), "/keys/%.100s%s", id, purge ? "?purge=1" : "");
		free(id);
		if (kc_json(k, "DELETE", path, NULL, NULL) != 204)
			rc = 1;
	}
	return rc;
}

int cmd_key(struct kc *k, int argc, char **argv)
{
	if (argc < 2 || want_help(argc, argv)) {
		fprintf(
		    argc < 2 ? stderr : stdout,
		    "usage: kiln key create --tenant NAME [--name LABEL]\n"
		    "       kiln key ls\n"
		    "       kiln key revoke [--purge] ID...\n\n"
		    "API keys for tenants. A tenant's key sees and controls only the sandboxes\n"
		    "and templates made with that tenant's keys; it may start clones of the\n"
		    "operator's templates and boot every image. kilnd's own key "
		    "(DATA_DIR/api-key)\n"
		    "and its unix socket are the operator's: they see everything and manage "
		    "keys.\n\n"
		    "  create   prints the new key on stdout (it is shown only once; kilnd\n"
		    "           keeps its SHA-256 hash)\n"
		    "  revoke   the key stops working at once; --purge (of a revoked key)\n"
		    "           also removes it from the list\n");
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "create"))
		return key_create(k, argc, argv);
	if (!strcmp(argv[1], "ls") || !strcmp(argv[1], "list"))
		return key_ls(k);
	if (!strcmp(argv[1], "revoke"))
		return key_revoke(k, argc, argv);
	fprintf(stderr, "kiln key: unknown command '%s' (create, ls or revoke)\n", argv[1]);
	return 2;
}
