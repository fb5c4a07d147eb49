/* SPDX-License-Identifier: MIT */
/* The code interpreter's HTTP API (see codeint.c for what it runs):
 * request bodies, validation, resuming a paused sandbox, errors. Like E2B's
 * port 49999 it does not need envd's access token (the SDK sends it with
 * /execute only); a wrong token is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codeint.h"
#include "envd.h"
#include "http/jsonutil.h"
#include "util.h"
#include "sandbox/wake.h"

#define CI_BODY_LIMIT (16u << 20)

enum ci_op { CI_EXECUTE, CI_CREATE, CI_RESTART, CI_REMOVE };

struct ci_req {
	struct kilnd *kd;
	struct http_conn *c;
	char sb_id[SB_ID_LEN + 1];
	enum ci_op op;
	char *ctx_id; /* CI_EXECUTE (NULL: the default), CI_RESTART, CI_REMOVE */
	char *line;   /* CI_EXECUTE: the kernel's request */
	char *cwd;    /* CI_CREATE */
};

static void req_free(struct ci_req *r)
{
	free(r->ctx_id);
	free(r->line);
	free(r->cwd);
	free(r);
}

static void answer_status(struct http_conn *c, int status, const char *ctx_id)
{
	if (status == 404)
		http_respond_error(c, 404, "code context %s not found", ctx_id ? ctx_id : "");
	else if (status == 429)
		http_respond_error(c, 429,
		                   "too many code contexts or queued executions in this sandbox");
	else
		http_respond_error(c, 500, "out of memory");
}

static void wk_run(void *ctx, struct sandbox *sb)
{
	struct ci_req *r = ctx;
	int st = 0;

	switch (r->op) {
	case CI_EXECUTE:
		st = ci_execute(r->kd, sb, r->c, r->ctx_id, r->line);
		if (!st)
			r->line = NULL;
		break;
	case CI_CREATE:
		st = ci_context_create(r->kd, sb, r->c, r->cwd);
		break;
	case CI_RESTART:
		st = ci_context_restart(r->kd, sb, r->c, r->ctx_id);
		break;
	case CI_REMOVE:
		st = ci_context_remove(r->kd, sb->rec.id, r->ctx_id, r->c);
		break;
	}
	if (st)
		answer_status(r->c, st, r->ctx_id);
	req_free(r);
}

static void wk_fail(void *ctx, int status, const char *msg)
{
	struct ci_req *r = ctx;

	http_respond_error(r->c, status == 404 ? 404 : 502, "%s", msg);
	req_free(r);
}

static void wk_drop(void *ctx)
{
	req_free(ctx);
}

static const struct wake_ops wake_ops = {.run = wk_run, .fail = wk_fail, .drop = wk_drop};

static void run(struct ci_req *r, const char *what)
{
	struct sandbox *sb = sb_find(r->kd, r->sb_id);

	if (!sb) {
		http_respond_error(r->c, 404, "sandbox %s not found", r->sb_id);
		req_free(r);
		return;
	}
	sb_wake(r->kd, r->c, sb, what, 0, &wake_ops, r);
}

/* An optional string member; false (answered) if it is something else. */
static bool opt_string(struct http_conn *c, json_t *body, const char *key, const char **out)
{
	json_t *v = json_object_get(body, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v)) {
		http_respond_error(c, 400, "'%s' must be a string", key);
		return false;
	}
	*out = json_string_value(v);
	return true;
}

static bool language_ok(struct http_conn *c, const char *lang)
{
	if (!lang || !strcmp(lang, "python") || !strcmp(lang, "python3"))
		return true;
	http_respond_error(c, 400,
	                   "kiln's code interpreter runs Python only (language '%.100s'); leave "
	                   "'language' out or use \"python\"",
	                   lang);
	return false;
}

/* POST /execute: the kernel's request line from the body. */
static bool parse_execute(struct ci_req *r, json_t *body)
{
	const char *code, *ctx_id, *lang;
	json_t *env = json_object_get(body, "env_vars"), *v, *req;
	const char *k;

	if (!opt_string(r->c, body, "code", &code) ||
	    !opt_string(r->c, body, "context_id", &ctx_id) ||
	    !opt_string(r->c, body, "language", &lang))
		return false;
	if (!code) {
		http_respond_error(r->c, 400, "'code' (a string) is required");
		return false;
	}
	if (ctx_id && lang) {
		http_respond_error(r->c, 400, "give 'context_id' or 'language', not both");
		return false;
	}
	if (!language_ok(r->c, lang))
		return false;
	if (env && !json_is_null(env)) {
		if (!json_is_object(env)) {
			http_respond_error(r->c, 400, "'env_vars' must be an object of strings");
			return false;
		}
		json_object_foreach(env, k, v)
		{
			if (!json_is_string(v) || !*k || strchr(k, '=')) {
				http_respond_error(r->c, 400,
				                   "'env_vars' must map names (no '=') to strings");
				return false;
			}
		}
	} else {
		env = NULL;
	}
	req = json_pack("{s:s,s:O?}", "code", code, "env_vars", env);
	r->line = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (r->line) {
		size_t n = strlen(r->line);
		char *l = realloc(r->line, n + 2);

		if (l) {
			l[n] = '\n';
			l[n + 1] = 0;
			r->line = l;
		} else {
			free(r->line);
			r->line = NULL;
		}
	}
	if (ctx_id && !(r->ctx_id = strdup(ctx_id))) {
		http_respond_error(r->c, 500, "out of memory");
		return false;
	}
	if (!r->line) {
		http_respond_error(r->c, 500, "out of memory");
		return false;
	}
	return true;
}

static bool parse_create(struct ci_req *r, json_t *body)
{
	const char *lang, *cwd;

	if (!opt_string(r->c, body, "language", &lang) || !opt_string(r->c, body, "cwd", &cwd) ||
	    !language_ok(r->c, lang))
		return false;
	if (cwd && (cwd[0] != '/' || strlen(cwd) > ENVD_PATH_MAX)) {
		http_respond_error(r->c, 400, "'cwd' must be an absolute path");
		return false;
	}
	if (cwd && !(r->cwd = strdup(cwd))) {
		http_respond_error(r->c, 500, "out of memory");
		return false;
	}
	return true;
}

static void body_complete(void *ctx)
{
	struct ci_req *r = ctx;
	struct http_req *req = http_conn_req(r->c);
	char err[JSON_ERR_LEN] = "";
	json_t *body = buf_avail(&req->body) ? json_body(req, err) : json_object();
	bool ok;

	http_set_handler(r->c, NULL, NULL, 0);
	if (!body || !json_is_object(body)) {
		http_respond_error(r->c, 400, "the body must be a JSON object%s%s",
		                   *err ? ": " : "", err);
		json_decref(body);
		req_free(r);
		return;
	}
	ok = r->op == CI_EXECUTE ? parse_execute(r, body) : parse_create(r, body);
	json_decref(body);
	if (!ok) {
		req_free(r);
		return;
	}
	run(r, r->op == CI_EXECUTE ? "code interpreter /execute" : "code interpreter /contexts");
}

static void body_abort(void *ctx)
{
	req_free(ctx);
}

static const struct http_handler body_ops = {.on_complete = body_complete, .on_abort = body_abort};

static struct ci_req *req_new(struct http_conn *c, struct kilnd *kd, struct sandbox *sb,
                              enum ci_op op)
{
	struct ci_req *r = calloc(1, sizeof(*r));

	if (!r) {
		http_respond_error(c, 500, "out of memory");
		return NULL;
	}
	r->kd = kd;
	r->c = c;
	r->op = op;
	snprintf(r->sb_id, sizeof(r->sb_id), "%s", sb->rec.id);
	return r;
}

void codeint_route(struct http_conn *c, struct http_req *req, struct kilnd *kd, struct sandbox *sb)
{
	const char *p = req->path, *rest;
	bool post = req->method == HTTP_POST;
	struct ci_req *r;
	char id[64];

	if (!strcmp(p, "/execute") || !strcmp(p, "/contexts")) {
		if (!strcmp(p, "/contexts") && req->method == HTTP_GET) {
			http_respond_json(c, 200, ci_context_list(kd, sb->rec.id));
			return;
		}
		if (!post) {
			http_respond_error(c, 405, "use POST");
			return;
		}
		r = req_new(c, kd, sb, p[1] == 'e' ? CI_EXECUTE : CI_CREATE);
		if (r)
			http_set_handler(c, &body_ops, r, CI_BODY_LIMIT);
		return;
	}
	if (strncmp(p, "/contexts/", 10)) {
		http_respond_error(c, 404, "no such code interpreter endpoint %.200s", p);
		return;
	}
	rest = strchr(p + 10, '/');
	if ((rest ? (size_t)(rest - (p + 10)) : strlen(p + 10)) >= sizeof(id) || p[10] == '/' ||
	    !p[10]) {
		http_respond_error(c, 404, "code context not found");
		return;
	}
	snprintf(id, sizeof(id), "%.*s", rest ? (int)(rest - (p + 10)) : 63, p + 10);
	/* both resume a paused sandbox: the context's process must be ended */
	if ((!rest && req->method == HTTP_DELETE) || (rest && !strcmp(rest, "/restart") && post)) {
		if (!ci_context_exists(kd, sb->rec.id, id)) {
			answer_status(c, 404, id);
			return;
		}
		r = req_new(c, kd, sb, rest ? CI_RESTART : CI_REMOVE);
		if (r && !(r->ctx_id = strdup(id))) {
			http_respond_error(c, 500, "out of memory");
			req_free(r);
			return;
		}
		if (r)
			run(r, rest ? "code interpreter restart" : "code context removal");
		return;
	}
	http_respond_error(c, 404, "no such code interpreter endpoint %.200s", p);
}
