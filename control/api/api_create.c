/* SPDX-License-Identifier: MIT */
/* POST /sandboxes: what the request names (a template, an image, or the
 * built-in image), and the answer once the sandbox runs. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "api.h"
#include "sandbox/bootfile.h"
#include "sandbox/image.h"
#include "http/jsonutil.h"
#include "net/net.h"
#include "sandbox/template.h"
#include "util.h"

#define LIT(s) s, sizeof(s) - 1 /* a literal body and its length */

struct create_wait {
	struct http_conn *c;
	struct sandbox *sb;
};

static void create_ready(void *ctx, struct sandbox *sb, int err, const char *msg)
{
	struct create_wait *w = ctx;

	if (err)
		http_respond_error(w->c, err == -ECANCELED ? 409 : 500,
		                   "sandbox %s did not start: %s", sb->rec.id, msg);
	else
		http_respond_json(w->c, 201, api_sandbox_json(sb->kd, sb));
	free(w);
}

static void create_abort(void *ctx)
{
	struct create_wait *w = ctx;

	/* Whoever asked hung up without learning the id: nobody could use or
	 * delete the sandbox, so it goes now rather than at its timeout. */
	sb_cancel_ready(w->sb);
	sb_delete(w->sb);
	free(w);
}

static const struct http_handler create_ops = {.on_abort = create_abort};

/* E2B's network.allowPublicTraffic: its ports answer without a token. */
static bool e2b_public_traffic(json_t *body)
{
	return json_is_true(
	    json_object_get(json_object_get(body, "network"), "allowPublicTraffic"));
}

#define SECRETS_MAX      64
#define SECRET_VALUE_MAX (16u << 10) /* the whole body is at most 64 KiB */

/* Secrets are named in errors, never shown. */
static bool secrets_ok(json_t *secrets, char *msg, size_t n)
{
	const char *k;
	json_t *v;

	json_object_foreach(secrets, k, v)
	{
		if (!*k || strchr(k, '=') || strlen(k) > 256) {
			snprintf(
			    msg, n,
			    "secrets names must be 1 to 256 bytes without '=' (one is '%.64s')", k);
			return false;
		}
		if (json_string_length(v) > SECRET_VALUE_MAX) {
			snprintf(msg, n, "secret '%.64s' is longer than %u bytes", k,
			         SECRET_VALUE_MAX);
			return false;
		}
	}
	return true;
}

static bool env_names_ok(json_t *env)
{
	const char *k;
	json_t *v;

	json_object_foreach(env, k, v)
	{
		if (!*k || strchr(k, '=') || strlen(k) > 1024)
			return false;
	}
	return true;
}

/* kilnd --run-template: the template a create that names neither an image
 * nor a template clones instead of booting the built-in image, if it is
 * one whose clones are what that boot would give (a boot of the built-in
 * image with nothing run, no egress rules, the operator's; a clone's
 * random numbers are reseeded) and the request asks for nothing it
 * fixes otherwise (memory, CPUs). NULL: boot. */
static struct template *run_template(struct kilnd *kd, const struct sb_params *p)
{
	struct template *t = kd->cfg.run_template ? tmpl_find(kd, kd->cfg.run_template) : NULL;

	if (!t || t->rec.warmup_json || !t->policy.internet || t->policy.nallow ||
	    t->policy.ndeny || t->rec.tenant || strcmp(t->rec.image_name, IMG_BUILTIN))
		return NULL;
	if ((p->memory_mb != -1 && p->memory_mb != t->rec.memory_mb) ||
	    p->cpu_count != t->rec.cpu_count)
		return NULL;
	return t;
}

/* What a create names, into p: a template (a clone of it, *tp) or an
 * image. 0, or an HTTP status with msg filled in. *image_path is for the
 * caller to free. */
static int resolve(struct kilnd *kd, const struct http_who *who, const char *tmpl,
                   const char *image, struct sb_params *p, struct template **tp, char **image_path,
                   char *msg, size_t n)
{
	const char *name = tmpl ? tmpl : image ? image : IMG_BUILTIN;
	struct template *t;
	char *inames, *tnames;

	if (tmpl && image) {
		snprintf(msg, n, "give 'templateID' (a template or an image) or 'image', not both");
		return 400;
	}
	if (!name_ok(name)) {
		snprintf(msg, n,
		         "bad template or image name '%.64s': 1 to 64 letters, digits, '.', '_' "
		         "or '-', starting with a letter or digit",
		         name);
		return 400;
	}
	p->template_id = name;
	t = tmpl ? tmpl_find(kd, name) : NULL;
	if (!tmpl && !image && (t = run_template(kd, p))) {
		p->template_id = t->rec.name;
		tmpl_clone_params(kd, t, p);
		*tp = t;
		return 0;
	}
	if (t && !auth_may_use(who, t->rec.tenant))
		t = NULL; /* another tenant's: as if there were none */
	if (t) {
		if (p->memory_mb != t->rec.memory_mb && p->memory_mb != -1) {
			snprintf(msg, n,
			         "a sandbox of template %s has the template's memory (%d MiB), not "
			         "%lld MiB",
			         name, t->rec.memory_mb, p->memory_mb);
			return 400;
		}
		tmpl_clone_params(kd, t, p);
		*tp = t;
		return 0;
	}
	if (!t && tmpl && !strcmp(name, IMG_CI_TEMPLATE) && img_resolve(kd, name, image_path)) {
		free(*image_path);
		*image_path = NULL;
		name = IMG_CI_IMAGE;
	}
	if (!img_resolve(kd, name, image_path)) {
		const char *initrd = *image_path ? kd->cfg.image_initrd : kd->cfg.initrd;

		p->kernel = bootfile_pin(kd, kd->cfg.kernel, msg, n);
		p->initrd = p->kernel ? bootfile_pin(kd, initrd, msg, n) : NULL;
		if (!p->initrd)
			return 500;
		p->image = *image_path;
		if (p->memory_mb == -1)
			p->memory_mb = 256;
		return 0;
	}
	inames = img_names(kd);
	tnames = tmpl ? tmpl_names(kd, who) : NULL;
	if (tmpl)
		snprintf(msg, n, "unknown template or image '%s' (images: %s; templates: %s)", name,
		         inames ? inames : "?", tnames ? tnames : "?");
	else
		snprintf(msg, n, "unknown image '%s' (images: %s)", name, inames ? inames : "?");
	free(inames);
	free(tnames);
	return 400;
}

void api_create(struct kilnd *kd, struct http_conn *c, json_t *body)
{
	char err[JSON_ERR_LEN] = "", msg[1024], who[EVENTS_WHO_LEN];
	const char *tmpl = NULL, *image = NULL;
	struct sb_params p = {0};
	struct template *t = NULL;
	struct net_policy pol;
	struct create_wait *w;
	struct sandbox *sb;
	char *image_path = NULL;
	bool auto_pause, public_ports;
	int status;

	if (json_get_str(body, "templateID", 64, &tmpl, err) ||
	    json_get_str(body, "image", 64, &image, err) ||
	    json_get_int(body, "timeout", 1, kd->cfg.max_timeout, kd->cfg.default_timeout,
	                 &p.timeout_s, err) ||
	    json_get_int(body, "memoryMB", 64, 65536, -1, &p.memory_mb, err) ||
	    json_get_int(body, "cpuCount", 1, 64, 1, &p.cpu_count, err) ||
	    json_get_bool(body, "autoPause", false, &auto_pause, err) ||
	    json_get_bool(body, "publicPorts", e2b_public_traffic(body), &public_ports, err) ||
	    json_get_str_map(body, "envVars", 1024, 256u << 10, &p.env, err) ||
	    json_get_str_map(body, "metadata", 256, 64u << 10, &p.metadata, err) ||
	    json_get_str_map(body, "secrets", SECRETS_MAX, SECRETS_MAX * (SECRET_VALUE_MAX + 258),
	                     &p.secrets, err)) {
		http_respond_error(c, 400, "%s", err);
		return;
	}
	if (p.secrets && !secrets_ok(p.secrets, msg, sizeof(msg))) {
		http_respond_error(c, 400, "%s", msg);
		return;
	}
	events_who(kd, http_conn_req(c), who);
	p.actor = who;
	p.auto_pause = auto_pause;
	p.public_ports = public_ports;
	p.tenant = auth_tenant_of(&http_conn_req(c)->who);
	status =
	    resolve(kd, &http_conn_req(c)->who, tmpl, image, &p, &t, &image_path, msg, sizeof(msg));
	if (status) {
		http_respond_error(c, status, "%s", msg);
		free(image_path);
		return;
	}
	if (p.env && !env_names_ok(p.env)) {
		http_respond_error(c, 400, "envVars names must be non-empty and without '='");
		free(image_path);
		return;
	}
	/* The egress policy: the request's on top of the template's. */
	status = net_policy_from_request(body, t ? &t->policy : NULL, &pol, msg, sizeof(msg));
	if (status) {
		http_respond_error(c, 400, "%s", msg);
		free(image_path);
		return;
	}
	p.policy = &pol;
	/* A clone started ahead, up already: the answer is now. */
	if (t && (sb = pool_take(kd, t, &p))) {
		http_respond_json(c, 201, api_sandbox_json(kd, sb));
		free(image_path);
		net_policy_clear(&pol);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		http_respond_error(c, 500, "out of memory");
		free(image_path);
		net_policy_clear(&pol);
		return;
	}
	w->c = c;
	status = sb_create(kd, &p, create_ready, w, &sb, msg, sizeof(msg));
	free(image_path);
	net_policy_clear(&pol);
	if (status) {
		free(w);
		if (status == 429)
			http_respond(c, 429, "application/json", "Retry-After: 1\r\n",
			             LIT("{\"code\":429,\"message\":\"too many sandboxes\"}"));
		else
			http_respond_error(c, status, "%s", msg);
		return;
	}
	w->sb = sb;
	http_set_handler(c, &create_ops, w, 0);
}
