/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/agent.h>
#include "image_defaults.h"
#include "sandbox.h"
#include "util.h"

#define MANIFEST_MAX (1u << 20) /* bytes of NAME.json kilnd reads */

void img_defaults_free(struct img_defaults *d)
{
	free(d->cwd);
	for (size_t i = 0; d->argv && d->argv[i]; i++)
		free(d->argv[i]);
	free(d->argv);
	memset(d, 0, sizeof(*d));
}

static bool str_ok(json_t *v, size_t max)
{
	return json_is_string(v) && json_string_length(v) <= max &&
	       !memchr(json_string_value(v), 0, json_string_length(v));
}

/* Entrypoint then Cmd, each a list of strings or null. */
static int add_args(json_t *list, const char *what, char **argv, size_t *n, char *msg, size_t len)
{
	json_t *v;
	size_t i;

	if (!list || json_is_null(list))
		return 0;
	if (!json_is_array(list)) {
		snprintf(msg, len, "'%s' is not a list", what);
		return -EINVAL;
	}
	json_array_foreach(list, i, v)
	{
		if (*n >= KILN_MAX_ARGS - 1 || !str_ok(v, KILN_MAX_STRING)) {
			snprintf(msg, len, "'%s[%zu]' is not a string the agent takes", what, i);
			return -EINVAL;
		}
		if (!(argv[(*n)++] = strdup(json_string_value(v))))
			return -ENOMEM;
	}
	return 0;
}

int img_defaults_parse(json_t *man, struct img_defaults *d, char *msg, size_t n)
{
	json_t *cwd = json_object_get(man, "workingDir"), *uid = json_object_get(man, "uid");
	json_t *ep = json_object_get(man, "entrypoint"), *cmd = json_object_get(man, "cmd");
	size_t argc = 0;
	int err;

	memset(d, 0, sizeof(*d));
	if (cwd && !json_is_null(cwd) && (!json_is_string(cwd) || json_string_length(cwd))) {
		if (!str_ok(cwd, 4096) || json_string_value(cwd)[0] != '/') {
			snprintf(msg, n, "'workingDir' is not an absolute path");
			return -EINVAL;
		}
		d->cwd = strdup(json_string_value(cwd));
	}
	if (uid && (!json_is_integer(uid) || json_integer_value(uid) < 0 ||
	            json_integer_value(uid) > 0x7fffffff)) {
		snprintf(msg, n, "'uid' is not a user id");
		img_defaults_free(d);
		return -EINVAL;
	}
	d->uid = uid ? (uint32_t)json_integer_value(uid) : 0;
	if (json_array_size(ep) + json_array_size(cmd)) {
		d->argv = calloc(KILN_MAX_ARGS, sizeof(*d->argv));
		if (!d->argv) {
			img_defaults_free(d);
			return -ENOMEM;
		}
		if ((err = add_args(ep, "entrypoint", d->argv, &argc, msg, n)) ||
		    (err = add_args(cmd, "cmd", d->argv, &argc, msg, n))) {
			img_defaults_free(d);
			return err;
		}
	}
	return 0;
}

/* IMAGE.erofs -> IMAGE.json */
static char *manifest_path(const char *image)
{
	size_t n = strlen(image);
	char *p;

	if (n < 6 || strcmp(image + n - 6, ".erofs"))
		return NULL;
	if (asprintf(&p, "%.*s.json", (int)(n - 6), image) < 0)
		return NULL;
	return p;
}

const struct img_defaults *sb_defaults(struct sandbox *sb)
{
	static const struct img_defaults none;
	char msg[256], *path, *text = NULL;
	json_t *man = NULL;
	size_t len;

	if (sb->defaults_loaded)
		return &sb->defaults;
	sb->defaults_loaded = true;
	path = sb->rec.image ? manifest_path(sb->rec.image) : NULL;
	if (!path)
		return &none;
	text = read_small_file(path, MANIFEST_MAX, &len);
	if (text)
		man = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	if (text && !man)
		log_warn("sandbox %s: image manifest %s is not JSON: ignored", sb->rec.id, path);
	if (man && img_defaults_parse(man, &sb->defaults, msg, sizeof(msg)))
		log_warn("sandbox %s: image manifest %s ignored: %s", sb->rec.id, path, msg);
	json_decref(man);
	free(text);
	free(path);
	return &sb->defaults;
}
