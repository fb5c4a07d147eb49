/* SPDX-License-Identifier: MIT */
/* The OCI runtime spec (the bundle's config.json, and the process of an
 * exec, which containerd sends as JSON): what a kiln VM can honour.
 * process.args, env, cwd, user.uid, terminal and consoleSize go to the
 * agent's START, and so do rlimits (rlimits.c); linux.resources are
 * spec_res.c's; mounts spec_mounts.c's. The rest
 * (namespaces, capabilities, seccomp, the kernel file system mounts)
 * belongs to a Linux host's containers and is ignored: the VM is the
 * boundary. Every field is checked; a bad one is an error naming it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <kiln/agent.h>

#include "shim.h"

#define SPEC_MAX (4u << 20)

void spec_free(struct proc_spec *p)
{
	for (size_t i = 0; p->argv && p->argv[i]; i++)
		free(p->argv[i]);
	for (size_t i = 0; p->env && p->env[i]; i++)
		free(p->env[i]);
	free(p->argv);
	free(p->env);
	free(p->cwd);
	memset(p, 0, sizeof(*p));
}

static char **strv(json_t *a, const char *what, bool env, char *msg, size_t n)
{
	size_t i, cnt = json_array_size(a);
	char **v;
	json_t *e;

	if (a && !json_is_array(a)) {
		snprintf(msg, n, "%s is not a list", what);
		return NULL;
	}
	if (cnt >= KILN_MAX_ARGS) {
		snprintf(msg, n, "%s has %zu entries, more than the agent takes (%u)", what, cnt,
		         KILN_MAX_ARGS - 1);
		return NULL;
	}
	v = calloc(cnt + 1, sizeof(*v));
	if (!v)
		return NULL;
	json_array_foreach(a, i, e)
	{
		const char *str = json_string_value(e);

		if (!str || json_string_length(e) > KILN_MAX_STRING ||
		    strlen(str) != json_string_length(e) ||
		    (env && (!strchr(str, '=') || *str == '='))) {
			snprintf(msg, n, "%s[%zu] is not a %s", what, i,
			         env ? "NAME=value string" : "string without NUL");
			goto bad;
		}
		if (!(v[i] = strdup(str)))
			goto bad;
	}
	return v;
bad:
	for (size_t j = 0; j < cnt; j++)
		free(v[j]);
	free(v);
	return NULL;
}

static int parse_process(json_t *proc, struct proc_spec *p, char *msg, size_t n)
{
	json_t *cwd = json_object_get(proc, "cwd"), *user = json_object_get(proc, "user");
	json_t *uid = json_object_get(user, "uid"), *cs = json_object_get(proc, "consoleSize");

	memset(p, 0, sizeof(*p));
	if (!json_is_object(proc)) {
		snprintf(msg, n, "the spec has no 'process' object");
		return -EINVAL;
	}
	p->argv = strv(json_object_get(proc, "args"), "process.args", false, msg, n);
	if (!p->argv)
		return -EINVAL;
	if (!p->argv[0]) {
		snprintf(msg, n,
		         "process.args is empty: the image has no command and none was given");
		spec_free(p);
		return -EINVAL;
	}
	p->env = strv(json_object_get(proc, "env"), "process.env", true, msg, n);
	if (!p->env) {
		spec_free(p);
		return -EINVAL;
	}
	if (cwd && (!json_is_string(cwd) || json_string_value(cwd)[0] != '/' ||
	            json_string_length(cwd) > 4096)) {
		snprintf(msg, n, "process.cwd is not an absolute path");
		spec_free(p);
		return -EINVAL;
	}
	p->cwd = strdup(cwd ? json_string_value(cwd) : "/");
	if (uid && (!json_is_integer(uid) || json_integer_value(uid) < 0 ||
	            json_integer_value(uid) > 0x7fffffff)) {
		snprintf(msg, n, "process.user.uid is not a user id");
		spec_free(p);
		return -EINVAL;
	}
	p->uid = uid ? (uint32_t)json_integer_value(uid) : 0;
	p->terminal = json_is_true(json_object_get(proc, "terminal"));
	if (cs) {
		json_int_t w = json_integer_value(json_object_get(cs, "width"));
		json_int_t h = json_integer_value(json_object_get(cs, "height"));

		p->cols = w > 0 && w < 4096 ? (uint16_t)w : 0;
		p->rows = h > 0 && h < 4096 ? (uint16_t)h : 0;
	}
	if (!p->cwd) {
		spec_free(p);
		return -ENOMEM;
	}
	if (spec_parse_rlimits(json_object_get(proc, "rlimits"), p, msg, n)) {
		spec_free(p);
		return -EINVAL;
	}
	return 0;
}

int spec_parse_process(const char *text, size_t len, struct proc_spec *p, char *msg, size_t n)
{
	json_error_t je;
	json_t *j;
	int err;

	if (len > SPEC_MAX) {
		snprintf(msg, n, "the process spec is larger than %u bytes", SPEC_MAX);
		return -EINVAL;
	}
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(msg, n, "the process spec is not JSON: %s", je.text);
		return -EINVAL;
	}
	err = parse_process(j, p, msg, n);
	json_decref(j);
	return err;
}

int spec_load_bundle(const char *bundle, struct proc_spec *p, struct spec_res *res,
                     struct spec_binds *binds, char **root_path, struct spec_pod *pod, char *msg,
                     size_t n)
{
	const char *root;
	char path[4200];
	json_error_t je;
	json_t *j;
	int err;

	snprintf(path, sizeof(path), "%s/config.json", bundle);
	j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(msg, n, "%s: %s", path, je.text);
		return -EINVAL;
	}
	err = parse_process(json_object_get(j, "process"), p, msg, n);
	if (!err && (err = spec_parse_resources(
	                 json_object_get(json_object_get(j, "linux"), "resources"), res, msg, n)))
		spec_free(p);
	else if (!err && (err = spec_parse_mounts(json_object_get(j, "mounts"), binds, msg, n)))
		spec_free(p);
	else if (!err && pod && (err = spec_parse_pod(j, pod, msg, n))) {
		spec_binds_free(binds);
		spec_free(p);
	}
	root = json_string_value(json_object_get(json_object_get(j, "root"), "path"));
	*root_path = !err && root ? strdup(root) : NULL;
	json_decref(j);
	return err;
}
