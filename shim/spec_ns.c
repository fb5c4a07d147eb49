/* SPDX-License-Identifier: MIT */
/* The OCI spec's linux.namespaces entries of one type (net.c's network
 * namespace, pidshare.c's pid one), with their paths checked. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "shim.h"

int spec_each_ns(const char *bundle, const char *type, spec_ns_fn fn, void *arg, char *msg,
                 size_t n)
{
	char path[4200];
	json_error_t je;
	json_t *j, *nss, *e, *p;
	size_t i;
	int err = 0;

	snprintf(path, sizeof(path), "%s/config.json", bundle);
	j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(msg, n, "%s: %s", path, je.text);
		return -EINVAL;
	}
	nss = json_object_get(json_object_get(j, "linux"), "namespaces");
	if (nss && !json_is_array(nss)) {
		snprintf(msg, n, "linux.namespaces is not a list");
		err = -EINVAL;
	}
	json_array_foreach(nss, i, e)
	{
		if (err || !json_is_object(e) ||
		    strcmp(json_string_value(json_object_get(e, "type")) ?: "", type))
			continue;
		p = json_object_get(e, "path");
		if (!p || (json_is_string(p) && !json_string_length(p))) {
			err = fn(arg, i, NULL, msg, n);
			continue;
		}
		if (!json_is_string(p) || json_string_value(p)[0] != '/' ||
		    json_string_length(p) >= 4096 ||
		    strlen(json_string_value(p)) != json_string_length(p)) {
			snprintf(msg, n, "linux.namespaces[%zu].path is not an absolute path", i);
			err = -EINVAL;
			continue;
		}
		err = fn(arg, i, json_string_value(p), msg, n);
	}
	json_decref(j);
	return err;
}
