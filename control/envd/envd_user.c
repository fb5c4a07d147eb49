/* SPDX-License-Identifier: MIT */
/*
 * Who an envd request runs as. The SDK names a user with
 * "Authorization: Basic base64(user:)" (RPCs) or ?username= (/files);
 * without one, envd's default is the template's user: here the image's
 * "defaultUser" in its manifest (mkimage writes it for a recipe's first
 * `user` line), with KILN_USER_OR_ROOT so that a sandbox whose guest lacks
 * it runs as root; images without one (the built-in busybox, imported
 * ones) default to root. Relative paths are taken from the user's home:
 * /root for root, /home/NAME for the others (E2B's layout).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "envd.h"
#include "envd_proc.h"
#include "http/buf.h"
#include "util.h"

#define MANIFEST_MAX (4u << 20) /* an image's NAME.json, read at most */

/* The image's defaultUser, or "" (root). */
static void manifest_user(const char *image, char out[AGENT_USER_MAX + 1])
{
	size_t n = image ? strlen(image) : 0;
	json_error_t jerr;
	struct stat st;
	const char *u;
	char *path;
	json_t *j;

	out[0] = 0;
	if (n < 6 || strcmp(image + n - 6, ".erofs") ||
	    asprintf(&path, "%.*s.json", (int)(n - 6), image) < 0)
		return;
	j = !stat(path, &st) && st.st_size <= MANIFEST_MAX ? json_load_file(path, 0, &jerr) : NULL;
	free(path);
	u = json_string_value(json_object_get(j, "defaultUser"));
	if (u && agent_user_valid(u))
		snprintf(out, AGENT_USER_MAX + 1, "%s", u);
	json_decref(j);
}

static const char *default_user(struct sandbox *sb)
{
	struct envd_sb *es = envd_sb_get(sb);

	if (!es)
		return "";
	if (!es->default_user_known) {
		manifest_user(sb->rec.image, es->default_user);
		es->default_user_known = true;
	}
	return es->default_user;
}

/* The name of "Authorization: Basic base64(name:)": 1 and name set, 0
 * if there is no such header, -1 if it is not one (*name NULL). */
static int basic_user(const struct http_req *req, char **name)
{
	const char *a = http_header(req, "Authorization");
	struct buf b = {0};
	char *colon;

	*name = NULL;
	if (!a)
		return 0;
	if (strncasecmp(a, "Basic ", 6) || strlen(a + 6) > 1024 ||
	    b64_decode(&b, a + 6, strlen(a + 6)) || !buf_reserve(&b, 1)) {
		buf_free(&b);
		return -1;
	}
	b.data[b.len] = 0;
	colon = strchr(buf_head(&b), ':');
	if (colon)
		*colon = 0;
	*name = strdup(buf_head(&b));
	buf_free(&b);
	return *name ? 1 : -1;
}

static void set_user(struct envd_user *u, const char *name, uint32_t flags)
{
	snprintf(u->name, sizeof(u->name), "%s", *name ? name : "root");
	u->flags = *name ? flags : 0;
	if (!strcmp(u->name, "root"))
		snprintf(u->home, sizeof(u->home), "/root");
	else
		snprintf(u->home, sizeof(u->home), "/home/%s", u->name);
}

/* An agent from before users runs the default user's requests as root,
 * as it ran all of them. */
static const char *default_for(struct sandbox *sb)
{
	return sb->rec.agent_no_users ? "" : default_user(sb);
}

void envd_user_default(struct sandbox *sb, struct envd_user *u)
{
	set_user(u, default_for(sb), KILN_USER_OR_ROOT);
}

int envd_user_of(const struct http_req *req, const char *query_user, struct sandbox *sb,
                 struct envd_user *u, char *err, size_t errlen)
{
	char *name = NULL;
	int rc = query_user ? 1 : basic_user(req, &name);
	const char *n = query_user ? query_user : name;

	if (rc < 0 || (rc > 0 && (!*n || !agent_user_valid(n)))) {
		/* envd's words (permissions.AuthenticateUsername) */
		snprintf(err, errlen, "invalid username: '%.64s'", rc < 0 ? "" : n);
		free(name);
		return -1;
	}
	if (rc > 0 && !sb_user_ok(sb, n, err, errlen)) {
		free(name);
		return -2;
	}
	if (rc > 0)
		set_user(u, n, 0);
	else
		set_user(u, default_for(sb), KILN_USER_OR_ROOT);
	free(name);
	return 0;
}

char *envd_resolve_path_as(const char *path, const struct envd_user *u)
{
	const char *home = u ? u->home : ENVD_HOME;
	char *out;

	if (!path || !*path)
		return strdup(home);
	if (path[0] == '/')
		out = strdup(path);
	else if (path[0] == '~' && (path[1] == 0 || path[1] == '/'))
		out = asprintf(&out, "%s%s", home, path + 1) < 0 ? NULL : out;
	else
		out = asprintf(&out, "%s/%s", home, path) < 0 ? NULL : out;
	if (out && strlen(out) > ENVD_PATH_MAX) {
		free(out);
		return NULL;
	}
	return out;
}
