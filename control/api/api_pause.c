/* SPDX-License-Identifier: MIT */
/* POST /sandboxes/{id}/pause, /resume, /connect and /fork: the HTTP side
 * of pause.c. A request waits for its transition (and for one already
 * under way) before it is answered; a client that hangs up stops waiting,
 * not the transition. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "http/jsonutil.h"
#include "util.h"

#define FORK_MAX 32

struct op_wait {
	struct kilnd *kd;
	struct http_conn *c;
	struct sandbox *sb;
	struct sb_waiter *w;
	long long timeout_s;
	bool connect;
};

static void op_abort(void *ctx)
{
	struct op_wait *o = ctx;

	sb_waiter_cancel(o->sb, o->w);
	free(o);
}

static const struct http_handler op_ops = {.on_abort = op_abort};

static void pause_done(void *ctx, struct sandbox *sb, int status, const char *msg)
{
	struct op_wait *o = ctx;

	if (status == 204)
		http_respond(o->c, 204, NULL, NULL, NULL, 0);
	else
		http_respond_error(o->c, status, "%s", msg);
	free(o);
}

void api_pause(struct kilnd *kd, struct http_conn *c, struct sandbox *sb)
{
	struct op_wait *o = calloc(1, sizeof(*o));
	struct sb_waiter *w;

	if (!o) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	o->kd = kd;
	o->c = c;
	o->sb = sb;
	w = sb_request(sb, SB_OP_PAUSE, 0, pause_done, o);
	if (w) {
		o->w = w;
		http_set_handler(c, &op_ops, o, 0);
	}
}

static void resume_done(void *ctx, struct sandbox *sb, int status, const char *msg)
{
	struct op_wait *o = ctx;

	if (status == 201) {
		http_respond_json(o->c, 201, api_sandbox_json(o->kd, sb));
	} else if (status == 200 && o->connect) {
		/* It was running: like E2B, connect only ever extends the
		 * lifetime. */
		if (o->timeout_s > 0 && now_ms() + o->timeout_s * 1000 > sb->rec.end_ms)
			sb_set_timeout(sb, o->timeout_s);
		http_respond_json(o->c, 200, api_sandbox_json(o->kd, sb));
	} else if (status == 200) {
		/* E2B's resume answers 409 for a running sandbox (the SDK: false) */
		http_respond_error(o->c, 409, "sandbox %s is running, not paused", sb->rec.id);
	} else {
		http_respond_error(o->c, status, "%s", msg);
	}
	free(o);
}

void api_resume(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, json_t *body,
                bool connect)
{
	char err[JSON_ERR_LEN] = "";
	struct sb_waiter *w;
	struct op_wait *o;
	long long secs;

	if (json_get_int(body, "timeout", 1, kd->cfg.max_timeout, 0, &secs, err)) {
		http_respond_error(c, 400, "%s", err);
		return;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	o->kd = kd;
	o->c = c;
	o->sb = sb;
	o->timeout_s = secs;
	o->connect = connect;
	w = sb_request(sb, SB_OP_RESUME, secs, resume_done, o);
	if (w) {
		o->w = w;
		http_set_handler(c, &op_ops, o, 0);
	}
}

/* ---------------------------------------------------------------- fork */

struct fork_req;

struct fork_clone {
	struct fork_req *f;
	struct sandbox *sb; /* while it starts */
	json_t *result;
};

struct fork_req {
	struct kilnd *kd;
	struct http_conn *c; /* NULL once the client left */
	struct sandbox *src;
	struct sb_waiter *w;   /* while the snapshot is taken */
	char *dir, *snap_path; /* the snapshot clones start from, and its memory */
	char tag[17];          /* dir's name, in DATA_DIR/forks */
	long long timeout_s;
	int count, pending;
	struct fork_clone *clones;
};

static void fork_free(struct fork_req *f)
{
	if (f->dir) {
		/* running clones keep their memory mapping */
		char *forks = strndup(f->dir, strlen(f->dir) - strlen(f->tag) - 1);

		if (forks)
			rm_tree(forks, f->tag);
		free(forks);
	}
	for (int i = 0; i < f->count; i++)
		json_decref(f->clones[i].result);
	free(f->clones);
	free(f->dir);
	free(f->snap_path);
	free(f);
}

static json_t *fork_error(int code, const char *msg)
{
	return json_pack("{s:{s:i,s:s}}", "error", "code", code, "message", msg);
}

static void fork_finish(struct fork_req *f)
{
	json_t *arr = json_array();

	for (int i = 0; i < f->count; i++)
		json_array_append(arr, f->clones[i].result);
	http_respond_json(f->c, 201, arr);
	fork_free(f);
}

static void clone_ready(void *ctx, struct sandbox *sb, int err, const char *msg)
{
	struct fork_clone *fc = ctx;
	struct fork_req *f = fc->f;

	fc->sb = NULL;
	if (err)
		fc->result = fork_error(500, msg);
	else
		fc->result = json_pack("{s:o}", "sandbox", api_sandbox_json(f->kd, sb));
	if (--f->pending == 0)
		fork_finish(f);
}

static void fork_abort(void *ctx)
{
	struct fork_req *f = ctx;

	if (f->w) {
		/* The snapshot goes on; its end frees the request. */
		f->c = NULL;
		return;
	}
	/* Nobody learns the clones' ids: they go now. */
	for (int i = 0; i < f->count; i++) {
		struct sandbox *sb = f->clones[i].sb;

		if (sb) {
			sb_cancel_ready(sb);
			sb_delete(sb);
		} else if (json_is_object(json_object_get(f->clones[i].result, "sandbox"))) {
			const char *id = json_string_value(json_object_get(
			    json_object_get(f->clones[i].result, "sandbox"), "sandboxID"));
			struct sandbox *done = id ? sb_find(f->kd, id) : NULL;

			if (done)
				sb_delete(done);
		}
	}
	fork_free(f);
}

static const struct http_handler fork_ops = {.on_abort = fork_abort};

static void start_clones(struct fork_req *f, struct sandbox *src)
{
	struct kilnd_cfg *cfg = &f->kd->cfg;
	struct sb_params p = {
	    .template_id = src->rec.template_id,
	    .kernel = src->rec.kernel ? src->rec.kernel : cfg->kernel,
	    .initrd = src->rec.initrd ? src->rec.initrd : cfg->initrd,
	    .image = src->rec.image,
	    .restore = f->snap_path,
	    .template_dir = f->dir,
	    .timeout_s = f->timeout_s,
	    .memory_mb = src->rec.memory_mb,
	    .cpu_count = src->rec.cpu_count,
	    .auto_pause = src->rec.flags & SB_F_AUTO_PAUSE,
	    .public_ports = src->rec.flags & SB_F_PUBLIC_PORTS,
	    .env = src->env,
	    .metadata = src->metadata,
	    .secrets = src->secrets,
	    .actor = src->actor,
	    .policy = &src->policy,
	    .tenant = src->rec.tenant,
	};
	json_t *ids = json_array();

	f->pending = f->count;
	for (int i = 0; i < f->count; i++) {
		struct fork_clone *fc = &f->clones[i];
		char msg[512];
		int status;

		fc->f = f;
		status = sb_create(f->kd, &p, clone_ready, fc, &fc->sb, msg, sizeof(msg));
		if (status) {
			fc->sb = NULL;
			fc->result = fork_error(status, msg);
			f->pending--;
		} else {
			json_array_append_new(ids, json_string(fc->sb->rec.id));
		}
	}
	events_sb(src, "sandbox.forked", json_pack("{s:o}", "clones", ids));
	if (!f->pending)
		fork_finish(f);
}

static void fork_snapshot_done(void *ctx, struct sandbox *sb, json_t *reply, const char *err)
{
	struct fork_req *f = ctx;

	f->w = NULL;
	if (!f->c) {
		fork_free(f);
		return;
	}
	if (err) {
		http_respond_error(f->c, sb ? 500 : 404, "cannot fork: %s", err);
		fork_free(f);
		return;
	}
	log_info("sandbox %s: snapshot for %d fork(s) in %.1f ms", sb->rec.id, f->count,
	         json_number_value(json_object_get(reply, "total_ms")));
	start_clones(f, sb);
}

void api_fork(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, json_t *body)
{
	char err[JSON_ERR_LEN] = "";
	long long count, secs;
	struct fork_req *f;
	struct sb_waiter *w;

	if (json_get_int(body, "count", 1, FORK_MAX, 1, &count, err) ||
	    json_get_int(body, "timeout", 1, kd->cfg.max_timeout, kd->cfg.default_timeout, &secs,
	                 err)) {
		http_respond_error(c, 400, "%s", err);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f || !(f->clones = calloc((size_t)count, sizeof(*f->clones))) ||
	    random_hex(f->tag, 8) ||
	    asprintf(&f->dir, "%s/forks/%s", kd->cfg.data_dir, f->tag) < 0 ||
	    asprintf(&f->snap_path, "%s/snapshot", f->dir) < 0) {
		if (f)
			free(f->clones);
		free(f);
		http_respond_error(c, 500, "out of memory");
		return;
	}
	f->kd = kd;
	f->c = c;
	f->src = sb;
	f->count = (int)count;
	f->timeout_s = secs;
	if (mkdir_p(f->dir, 0700)) {
		http_respond_error(c, 500, "cannot create %s: %s", f->dir, strerror(errno));
		fork_free(f);
		return;
	}
	/* Taken in place: the sandbox goes on running afterwards. A refusal
	 * is answered at once (and f freed); a snapshot is never that fast. */
	w = sb_snapshot(sb, f->snap_path, true, fork_snapshot_done, f);
	if (w) {
		f->w = w;
		http_set_handler(c, &fork_ops, f, 0);
	}
}
