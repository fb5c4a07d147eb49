/* SPDX-License-Identifier: MIT */
/* Templates (template.h) and their HTTP endpoints:
 *
 *   POST /templates {"name","image","warmup","memoryMB","cpuCount","timeout","pool"}
 *        boot -> warm-up -> snapshot -> 201 and the template; the request
 *        waits for all of it (a client that leaves cancels the build)
 *   GET /templates, GET /templates/{name}, DELETE /templates/{name}
 *
 * The build is an ordinary sandbox (listed while it runs, with metadata
 * kiln.template=NAME) that is deleted once its snapshot is written. Then a
 * first clone is started, paused, and stopped: it makes the template's
 * memory file (so the user's first clone is as fast as the others) and
 * proves that the template can be cloned at all. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth/auth.h"
#include "agent/agent_run.h"
#include "api/api.h"
#include "bootfile.h"
#include "http/buf.h"
#include "image.h"
#include "jail_out.h"
#include "net/net.h"
#include "http/jsonutil.h"
#include "template.h"
#include "util.h"
#include "vmm_proc.h"

#define TMPL_SNAP_FILE     "template.snap"
#define WARMUP_TIMEOUT_DEF 300   /* seconds */
#define WARMUP_TIMEOUT_MAX 3600  /* seconds */
#define BUILD_SLACK        60    /* the build sandbox's lifetime past its warm-up */
#define FIRST_CLONE_POLL   0.005 /* seconds between looks for the memory file */
#define FIRST_CLONE_LIMIT  120.0 /* seconds to make it (decompressing all memory) */

struct tmpl_build {
	struct tmpl_build *next;
	struct kilnd *kd;
	struct http_conn *c;
	char *name, *image_name, *dir, *snap_path;
	char *tenant;              /* who asked (auth.h), NULL: the operator */
	char sb_id[SB_ID_LEN + 1]; /* the build sandbox (found by id: users may delete it) */
	char **warmup;             /* NULL-terminated, or NULL */
	json_t *warmup_json;
	long long timeout_s, pool;
	struct agent_run *run;
	struct sb_waiter *w;
	int64_t t0, warm_t0, warm_ms;
	/* the first clone, which makes the memory file */
	struct tmpl_record rec;
	char *mem_path;
	int clone_pid, clone_fd;
	unsigned clone_jail_id; /* jail_ids.h */
	ev_io clone_w;
	ev_timer clone_t;
	ev_tstamp clone_deadline;
};

/* ---------------------------------------------------------------- registry */

/* DATA_DIR/templates/NAME goes, for a name that passes name_ok() only. */
static void tmpl_rm_dir(struct kilnd *kd, const char *name)
{
	char *dir;
	int rc;

	if (asprintf(&dir, "%s/templates", kd->cfg.data_dir) < 0)
		return;
	rc = rm_tree(dir, name);
	if (rc)
		log_warn("cannot remove %s/%s: %s", dir, name, strerror(-rc));
	free(dir);
}

static struct template *tmpl_new(struct kilnd *kd, struct tmpl_record *rec)
{
	struct template *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->rec = *rec;
	net_policy_load(rec->net_json, &t->policy);
	if (asprintf(&t->dir, "%s/templates/%s", kd->cfg.data_dir, rec->name) < 0 ||
	    asprintf(&t->snap_path, "%s/" TMPL_SNAP_FILE, t->dir) < 0) {
		free(t->dir);
		net_policy_clear(&t->policy);
		free(t);
		return NULL;
	}
	return t;
}

static void tmpl_free(struct template *t)
{
	tmpl_record_free(&t->rec);
	net_policy_clear(&t->policy);
	free(t->dir);
	free(t->snap_path);
	free(t);
}

static int load_one(void *ctx, struct tmpl_record *rec)
{
	struct kilnd *kd = ctx;
	struct template *t;

	if (!name_ok(rec->name)) {
		log_warn("forgetting a template named '%.64s': not a valid name", rec->name);
		store_tmpl_delete(kd->store, rec->name);
		tmpl_record_free(rec);
		return 0;
	}
	t = tmpl_new(kd, rec);
	if (!t) {
		tmpl_record_free(rec);
		return -ENOMEM;
	}
	if (access(t->snap_path, R_OK)) {
		log_warn("template %s: %s: %s; forgetting the template", t->rec.name, t->snap_path,
		         strerror(errno));
		store_tmpl_delete(kd->store, t->rec.name);
		tmpl_rm_dir(kd, t->rec.name);
		tmpl_free(t);
		return 0;
	}
	t->next = kd->templates;
	kd->templates = t;
	return 0;
}

/* Directories under templates/ that no template names: builds cut short
 * by kilnd's end. */
static void remove_orphans(struct kilnd *kd)
{
	char *dir;
	struct dirent *e;
	DIR *d;

	if (asprintf(&dir, "%s/templates", kd->cfg.data_dir) < 0)
		return;
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || tmpl_find(kd, e->d_name))
			continue;
		if (!name_ok(e->d_name)) {
			log_warn("leaving %s/%s alone: not a template name", dir, e->d_name);
			continue;
		}
		log_info("removing %s/%s: no template of that name", dir, e->d_name);
		rm_tree(dir, e->d_name);
	}
	if (d)
		closedir(d);
	free(dir);
}

int tmpl_load_all(struct kilnd *kd)
{
	int rc = store_tmpl_load(kd->store, load_one, kd);

	if (!rc) {
		remove_orphans(kd);
		pool_kick(kd, 0); /* pools a restart left short, or clones of removed templates */
	}
	return rc;
}

void tmpl_free_all(struct kilnd *kd)
{
	while (kd->templates) {
		struct template *t = kd->templates;

		kd->templates = t->next;
		tmpl_free(t);
	}
}

struct template *tmpl_find(struct kilnd *kd, const char *name)
{
	for (struct template *t = kd->templates; t; t = t->next)
		if (!strcmp(t->rec.name, name))
			return t;
	return NULL;
}

void tmpl_clone_params(struct kilnd *kd, const struct template *t, struct sb_params *p)
{
	p->kernel = t->rec.kernel;
	p->initrd = t->rec.initrd;
	p->image = t->rec.image;
	p->restore = t->snap_path;
	p->template_dir = t->dir;
	p->memory_mb = t->rec.memory_mb;
	p->cpu_count = t->rec.cpu_count;
	p->policy = &t->policy;
}

char *tmpl_names(struct kilnd *kd, const struct http_who *who)
{
	struct buf b = {0};
	char *s;

	for (struct template *t = kd->templates; t; t = t->next)
		if (auth_may_use(who, t->rec.tenant))
			buf_printf(&b, "%s%s", buf_avail(&b) ? ", " : "", t->rec.name);
	if (!buf_avail(&b))
		buf_puts(&b, "none");
	s = buf_strdup(&b);
	buf_free(&b);
	return s;
}

static json_t *tmpl_json(struct kilnd *kd, const struct template *t)
{
	char created[32];
	json_t *j;

	iso8601(t->rec.created_ms, created);
	j = json_pack("{s:s,s:s,s:s,s:i,s:i,s:s,s:I,s:I,s:s,s:i}", "name", t->rec.name,
	              "templateID", t->rec.name, "image", t->rec.image_name, "memoryMB",
	              t->rec.memory_mb, "cpuCount", t->rec.cpu_count, "createdAt", created,
	              "snapshotBytes", (json_int_t)t->rec.snap_bytes, "buildMs",
	              (json_int_t)t->rec.build_ms, "snapshotID", t->rec.snap_id, "pool",
	              t->rec.pool);
	if (j)
		json_object_set_new(j, "tenant",
		                    t->rec.tenant ? json_string(t->rec.tenant) : json_null());
	if (j && t->rec.pool)
		json_object_set_new(j, "poolReady", json_integer(pool_count(kd, t, true)));
	if (j)
		json_object_set_new(j, "warmup",
		                    t->rec.warmup_json ? json_loads(t->rec.warmup_json, 0, NULL)
		                                       : json_null());
	return j;
}

/* ---------------------------------------------------------------- build */

static void build_free(struct tmpl_build *b)
{
	struct tmpl_build **pp = &b->kd->builds;

	while (*pp && *pp != b)
		pp = &(*pp)->next;
	if (*pp)
		*pp = b->next;
	if (b->clone_fd >= 0) {
		ev_io_stop(b->kd->loop, &b->clone_w);
		ev_timer_stop(b->kd->loop, &b->clone_t);
		kill(-b->clone_pid, SIGKILL);
		waitpid(b->clone_pid, NULL, 0); /* SIGKILLed: does not block for long */
		close(b->clone_fd);
		jail_id_put(b->kd, b->clone_jail_id);
		b->clone_jail_id = 0;
	}
	tmpl_record_free(&b->rec);
	free(b->mem_path);
	sb_env_free(b->warmup);
	json_decref(b->warmup_json);
	free(b->name);
	free(b->image_name);
	free(b->tenant);
	free(b->dir);
	free(b->snap_path);
	free(b);
}

/* End the build: its sandbox goes, and so does the directory unless the
 * template was made. */
static void build_end(struct tmpl_build *b, bool made)
{
	struct sandbox *sb = b->sb_id[0] ? sb_find(b->kd, b->sb_id) : NULL;

	agent_run_cancel(b->run);
	b->run = NULL;
	if (sb && b->w)
		sb_waiter_cancel(sb, b->w);
	b->w = NULL;
	if (sb) {
		sb_cancel_ready(sb);
		sb_delete(sb);
	}
	if (!made && b->dir)
		tmpl_rm_dir(b->kd, b->name);
	build_free(b);
}

static void build_fail(struct tmpl_build *b, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void build_fail(struct tmpl_build *b, int status, const char *fmt, ...)
{
	char msg[3072], text[3200];
	struct http_conn *c;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warn("template %s: %s", b->name, msg);
	/* Undone before the answer: whoever asked finds nothing left of it. */
	c = b->c;
	if (c)
		snprintf(text, sizeof(text), "template %s: %s", b->name, msg);
	build_end(b, false);
	if (c)
		http_respond_error(c, status, "%s", text);
}

/* The first clone made the memory file: the template is ready. */
static void build_done(struct tmpl_build *b)
{
	struct kilnd *t_kd = b->kd;
	struct template *t;
	char *p;

	for (const char *const *f = (const char *const[]){"vsock", "log", NULL}; *f; f++)
		if (asprintf(&p, "%s/first-clone.%s", b->dir, *f) >= 0) {
			unlink(p);
			free(p);
		}

	b->rec.created_ms = now_ms();
	b->rec.build_ms = b->rec.created_ms - b->t0;
	t = tmpl_new(b->kd, &b->rec);
	if (!t || store_tmpl_put(b->kd->store, &t->rec)) {
		if (t)
			tmpl_free(t);
		else
			tmpl_record_free(&b->rec);
		memset(&b->rec, 0, sizeof(b->rec));
		build_fail(b, 500, "cannot record the template in the store");
		return;
	}
	memset(&b->rec, 0, sizeof(b->rec)); /* t has it now */
	t->next = b->kd->templates;
	b->kd->templates = t;
	log_info("template %s: ready (%lld bytes of snapshot, built in %lld ms, warm-up %lld ms)",
	         t->rec.name, (long long)t->rec.snap_bytes, (long long)t->rec.build_ms,
	         (long long)b->warm_ms);
	if (b->c) {
		json_t *j = tmpl_json(b->kd, t);

		json_object_set_new(j, "warmupMs", json_integer(b->warm_ms));
		http_respond_json(b->c, 201, j);
	}
	build_end(b, true);
	if (t->rec.pool)
		pool_kick(t_kd, 0);
}

static void first_clone_exited(struct ev_loop *loop, ev_io *w, int revents)
{
	struct tmpl_build *b = w->data;
	char *log_path = NULL, *tail = NULL;

	ev_io_stop(loop, &b->clone_w);
	ev_timer_stop(loop, &b->clone_t);
	waitpid(b->clone_pid, NULL, 0);
	close(b->clone_fd);
	b->clone_fd = -1;
	jail_id_put(b->kd, b->clone_jail_id);
	b->clone_jail_id = 0;
	if (asprintf(&log_path, "%s/first-clone.log", b->dir) >= 0)
		tail = file_tail(log_path, 6, 1024);
	build_fail(b, 500, "its snapshot cannot be cloned: kiln-vmm exited: %s",
	           tail && *tail ? tail : "no output");
	free(tail);
	free(log_path);
}

static void first_clone_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tmpl_build *b = w->data;

	if (!access(b->mem_path, F_OK)) {
		/* Published by rename once complete: the clone has done its job. */
		ev_io_stop(loop, &b->clone_w);
		kill(-b->clone_pid, SIGKILL);
		waitpid(b->clone_pid, NULL, 0);
		close(b->clone_fd);
		jail_id_put(b->kd, b->clone_jail_id);
		b->clone_jail_id = 0;
		b->clone_fd = -1;
		build_done(b);
		return;
	}
	if (ev_now(loop) > b->clone_deadline) {
		build_fail(b, 500, "its first clone did not make %s within %.0f s", b->mem_path,
		           FIRST_CLONE_LIMIT);
		return;
	}
	ev_timer_set(w, FIRST_CLONE_POLL, 0);
	ev_timer_start(loop, w);
}

static void start_first_clone(struct tmpl_build *b)
{
	struct kilnd *kd = b->kd;
	char *vsock = NULL, *log_path = NULL, *out = NULL, msg[256];
	struct vmm_args a = {
	    .vmm = kd->cfg.vmm,
	    .kernel = b->rec.kernel,
	    .initrd = b->rec.initrd,
	    .image = b->rec.image,
	    .host_cpuid = kd->host_cpuid_path,
	    .memory_mb = b->rec.memory_mb,
	    .cpu_count = b->rec.cpu_count,
	    .restore = b->snap_path,
	    .restore_mode = "template",
	    .template_dir = b->dir,
	    .paused = true,
	};
	pid_t pid;
	int fd;

	if (asprintf(&vsock, "%s/first-clone.vsock", b->dir) < 0 ||
	    asprintf(&log_path, "%s/first-clone.log", b->dir) < 0 ||
	    asprintf(&b->mem_path, "%s/kiln-template-%s.mem", b->dir, b->rec.snap_id) < 0 ||
	    asprintf(&out, "%s/" SB_OUT_DIR, b->dir) < 0) {
		free(vsock);
		free(log_path);
		build_fail(b, 500, "out of memory");
		return;
	}
	/* It writes nothing, but gets a directory of its own to write: the
	 * template's must stay kilnd's. */
	if (sb_out_dir_make(b->dir)) {
		build_fail(b, 500, "cannot create %s: %s", out, strerror(errno));
		free(vsock);
		free(log_path);
		free(out);
		return;
	}
	a.vsock_path = vsock;
	a.console_path = log_path;
	a.no_jail = kd->cfg.no_jail;
	a.jail_mem_max_mb = kd->cfg.jail_mem_max_mb;
	a.jail_id = b->clone_jail_id = jail_id_take(kd);
	a.jail_rw = out;
	if (vmm_spawn(&a, &pid, msg, sizeof(msg))) {
		jail_id_put(kd, b->clone_jail_id);
		b->clone_jail_id = 0;
		free(vsock);
		free(log_path);
		free(out);
		build_fail(b, 500, "%s", msg);
		return;
	}
	free(vsock);
	free(log_path);
	free(out);
	fd = pidfd_open(pid, 0);
	if (fd < 0) {
		kill(-pid, SIGKILL);
		waitpid(pid, NULL, 0);
		jail_id_put(kd, b->clone_jail_id);
		b->clone_jail_id = 0;
		build_fail(b, 500, "pidfd_open: %s", strerror(errno));
		return;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	b->clone_pid = pid;
	b->clone_fd = fd;
	ev_io_init(&b->clone_w, first_clone_exited, fd, EV_READ);
	b->clone_w.data = b;
	ev_io_start(kd->loop, &b->clone_w);
	ev_timer_init(&b->clone_t, first_clone_poll, FIRST_CLONE_POLL, 0);
	b->clone_t.data = b;
	ev_timer_start(kd->loop, &b->clone_t);
	b->clone_deadline = ev_now(kd->loop) + FIRST_CLONE_LIMIT;
}

static void build_snapshotted(void *ctx, struct sandbox *sb, json_t *reply, const char *err)
{
	struct tmpl_build *b = ctx;
	const char *id = json_string_value(json_object_get(reply, "id"));

	b->w = NULL;
	if (err) {
		build_fail(b, sb ? 500 : 409, "%s", err);
		return;
	}
	if (!id || !name_ok(id)) {
		build_fail(b, 500, "the VMM's snapshot reply has no id");
		return;
	}
	b->rec.name = strdup(b->name);
	b->rec.image_name = strdup(b->image_name);
	b->rec.kernel = strdup(sb->rec.kernel);
	b->rec.initrd = strdup(sb->rec.initrd);
	b->rec.image = sb->rec.image ? strdup(sb->rec.image) : NULL;
	b->rec.warmup_json = b->warmup_json ? json_dumps(b->warmup_json, JSON_COMPACT) : NULL;
	b->rec.snap_id = strdup(id);
	b->rec.memory_mb = sb->rec.memory_mb;
	b->rec.cpu_count = sb->rec.cpu_count;
	b->rec.snap_bytes = json_integer_value(json_object_get(reply, "file_size"));
	b->rec.pool = (int)b->pool;
	b->rec.net_json = net_policy_dump(&sb->policy);
	b->rec.tenant = strdup_or_null(b->tenant);
	/* The build sandbox has done its part. */
	sb_delete(sb);
	b->sb_id[0] = 0;
	start_first_clone(b);
}

static void build_snapshot(struct tmpl_build *b, struct sandbox *sb)
{
	struct sb_waiter *w;

	/* Left paused: its sandbox is deleted right after. */
	w = sb_snapshot(sb, b->snap_path, false, build_snapshotted, b);
	if (w)
		b->w = w;
}

static void build_warmed(void *ctx, const struct agent_run_result *r, const char *err)
{
	struct tmpl_build *b = ctx;
	struct sandbox *sb = sb_find(b->kd, b->sb_id);

	b->run = NULL;
	b->warm_ms = now_ms() - b->warm_t0;
	if (err) {
		build_fail(b, 500, "the warm-up command did not finish: %s", err);
		return;
	}
	if (r->timed_out || r->signal || r->exit_code) {
		char what[96];

		if (r->timed_out)
			snprintf(what, sizeof(what), "did not finish within %lld s", b->timeout_s);
		else if (r->signal)
			snprintf(what, sizeof(what), "was killed by signal %d", r->signal);
		else
			snprintf(what, sizeof(what), "exited with status %d", r->exit_code);
		if (*r->output)
			build_fail(b, 400, "the warm-up command %s; its output ends with:\n%s",
			           what, r->output);
		else
			build_fail(b, 400, "the warm-up command %s and printed nothing", what);
		return;
	}
	if (!sb || sb->state != SB_RUNNING) {
		build_fail(b, 409, "its sandbox %s went away during the warm-up", b->sb_id);
		return;
	}
	build_snapshot(b, sb);
}

static void build_ready(void *ctx, struct sandbox *sb, int err, const char *msg)
{
	struct tmpl_build *b = ctx;
	char **env;

	if (err) {
		/* The failed sandbox stays listed (as any failed boot) unless it
		 * was deleted: that is what b->sb_id lookups see. */
		b->sb_id[0] = 0;
		build_fail(b, 500, "the sandbox did not start: %s", msg);
		return;
	}
	b->warm_t0 = now_ms();
	if (!b->warmup) {
		build_snapshot(b, sb);
		return;
	}
	env = sb_env(sb, NULL);
	b->run = env ? agent_run(b->kd->loop, sb->vsock_path, (const char *const *)b->warmup,
	                         (const char *const *)env, (uint32_t)(b->timeout_s * 1000),
	                         build_warmed, b)
	             : NULL;
	sb_env_free(env);
	if (!b->run)
		build_fail(b, 503, "cannot reach the agent of its sandbox: %s", strerror(errno));
}

static void build_abort(void *ctx)
{
	struct tmpl_build *b = ctx;

	/* Whoever asked left: the build would only leave things behind. */
	b->c = NULL;
	log_info("template %s: the client left, build cancelled", b->name);
	build_end(b, false);
}

static const struct http_handler build_ops = {.on_abort = build_abort};

/* argv of "warmup": an array of strings, or a string for /bin/sh -c. */
static int parse_warmup(struct tmpl_build *b, json_t *w, char *err)
{
	json_t *v;
	size_t i;

	if (!w || json_is_null(w))
		return 0;
	if (json_is_string(w)) {
		b->warmup_json = json_pack("[s,s,O]", "/bin/sh", "-c", w);
	} else if (json_is_array(w) && json_array_size(w) && json_array_size(w) <= 256) {
		json_array_foreach(w, i, v)
		{
			if (!json_is_string(v) || json_string_length(v) > 65536) {
				snprintf(err, JSON_ERR_LEN, "'warmup[%zu]' must be a string", i);
				return -1;
			}
		}
		b->warmup_json = json_incref(w);
	} else {
		snprintf(err, JSON_ERR_LEN,
		         "'warmup' must be a non-empty array of strings (or a string)");
		return -1;
	}
	b->warmup = calloc(json_array_size(b->warmup_json) + 1, sizeof(*b->warmup));
	if (!b->warmup)
		return -1;
	json_array_foreach(b->warmup_json, i, v)
	{
		b->warmup[i] = strdup(json_string_value(v));
	}
	return 0;
}

/* 0 if name is free for a new template, else an HTTP status and message. */
static int name_taken(struct kilnd *kd, const struct http_who *who, const char *name, char *msg,
                      size_t n)
{
	struct template *t = tmpl_find(kd, name);
	char *path = NULL;

	if (!name_ok(name)) {
		snprintf(msg, n,
		         "a template name is 1 to 64 letters, digits, '.', '_' or '-', starting "
		         "with a letter or digit");
		return 400;
	}
	if (t && !auth_may_use(who, t->rec.tenant)) {
		snprintf(msg, n, "the name %s is taken (by another tenant's template)", name);
		return 409;
	}
	if (t) {
		snprintf(msg, n, "template %s exists already (kiln template rm %s removes it)",
		         name, name);
		return 409;
	}
	for (struct tmpl_build *b = kd->builds; b; b = b->next)
		if (!strcmp(b->name, name)) {
			snprintf(msg, n, "template %s is being built", name);
			return 409;
		}
	if (!img_resolve(kd, name, &path)) {
		free(path);
		snprintf(msg, n, "%s is the name of an image: a template needs a name of its own",
		         name);
		return 409;
	}
	return 0;
}

void api_template_create(struct kilnd *kd, struct http_conn *c, json_t *body)
{
	char err[JSON_ERR_LEN] = "", msg[512];
	const char *name = NULL, *image = NULL;
	struct sb_params p = {0};
	struct net_policy pol;
	struct tmpl_build *b;
	struct sandbox *sb;
	char *image_path = NULL, *names;
	json_t *meta;
	int status;

	b = calloc(1, sizeof(*b));
	if (!b) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	b->kd = kd;
	b->clone_fd = -1;
	if (json_get_str(body, "name", 64, &name, err) ||
	    json_get_str(body, "image", 64, &image, err) ||
	    json_get_int(body, "memoryMB", 64, 65536, 256, &p.memory_mb, err) ||
	    json_get_int(body, "cpuCount", 1, 64, 1, &p.cpu_count, err) ||
	    json_get_int(body, "timeout", 1, WARMUP_TIMEOUT_MAX, WARMUP_TIMEOUT_DEF, &b->timeout_s,
	                 err) ||
	    json_get_int(body, "pool", 0, POOL_MAX, 0, &b->pool, err) ||
	    parse_warmup(b, json_object_get(body, "warmup"), err)) {
		http_respond_error(c, 400, "%s", err[0] ? err : "out of memory");
		build_free(b);
		return;
	}
	if (!name) {
		http_respond_error(c, 400, "'name' is required");
		build_free(b);
		return;
	}
	status = name_taken(kd, &http_conn_req(c)->who, name, msg, sizeof(msg));
	if (status) {
		http_respond_error(c, status, "%s", msg);
		build_free(b);
		return;
	}
	image = image ? image : IMG_BUILTIN;
	if (img_resolve(kd, image, &image_path)) {
		names = img_names(kd);
		http_respond_error(c, 400, "unknown image '%s' (images: %s)", image,
		                   names ? names : "?");
		free(names);
		build_free(b);
		return;
	}
	b->name = strdup(name);
	b->image_name = strdup(image);
	b->tenant = strdup_or_null(auth_tenant_of(&http_conn_req(c)->who));
	if (asprintf(&b->dir, "%s/templates/%s", kd->cfg.data_dir, name) < 0 ||
	    asprintf(&b->snap_path, "%s/" TMPL_SNAP_FILE, b->dir) < 0 || !b->name ||
	    !b->image_name) {
		free(image_path);
		http_respond_error(c, 500, "out of memory");
		build_free(b);
		return;
	}
	tmpl_rm_dir(kd, name); /* what a build cut short by kilnd's end left */
	if (mkdir_p(b->dir, 0700)) {
		http_respond_error(c, 500, "cannot create %s: %s", b->dir, strerror(errno));
		free(image_path);
		build_free(b);
		return;
	}
	/* Its policy is the build's (a warm-up may pip install) and the clones'. */
	if (net_policy_from_request(body, NULL, &pol, msg, sizeof(msg))) {
		http_respond_error(c, 400, "%s", msg);
		tmpl_rm_dir(kd, name);
		free(image_path);
		build_free(b);
		return;
	}
	p.policy = &pol;
	p.kernel = bootfile_pin(kd, kd->cfg.kernel, msg, sizeof(msg));
	if (p.kernel)
		p.initrd = bootfile_pin(kd, image_path ? kd->cfg.image_initrd : kd->cfg.initrd, msg,
		                        sizeof(msg));
	if (!p.initrd) {
		http_respond_error(c, 500, "template %s: %s", name, msg);
		net_policy_clear(&pol);
		tmpl_rm_dir(kd, name);
		free(image_path);
		build_free(b);
		return;
	}
	meta = json_pack("{s:s}", "kiln.template", name);
	p.template_id = image;
	p.image = image_path;
	p.timeout_s = b->timeout_s + BUILD_SLACK;
	p.metadata = meta;
	p.tenant = b->tenant;
	b->c = c;
	b->t0 = now_ms();
	b->next = kd->builds;
	kd->builds = b;
	status = sb_create(kd, &p, build_ready, b, &sb, msg, sizeof(msg));
	net_policy_clear(&pol);
	json_decref(meta);
	free(image_path);
	if (status) {
		b->c = NULL;
		build_end(b, false);
		http_respond_error(c, status, "template %s: %s", name, msg);
		return;
	}
	snprintf(b->sb_id, sizeof(b->sb_id), "%s", sb->rec.id);
	log_info("template %s: building from %s in sandbox %s", name, image, b->sb_id);
	http_set_handler(c, &build_ops, b, 0);
}

/* ---------------------------------------------------------------- list / get / delete */

void api_template_list(struct kilnd *kd, struct http_conn *c)
{
	const struct http_who *who = &http_conn_req(c)->who;
	json_t *arr = json_array();

	for (struct template *t = kd->templates; t; t = t->next)
		if (auth_may_use(who, t->rec.tenant))
			json_array_append_new(arr, tmpl_json(kd, t));
	http_respond_json(c, 200, arr);
}

void api_template_get(struct kilnd *kd, struct http_conn *c, const char *name)
{
	struct template *t = tmpl_find(kd, name);

	if (!t || !auth_may_use(&http_conn_req(c)->who, t->rec.tenant)) {
		http_respond_error(c, 404, "template %.64s not found", name);
		return;
	}
	http_respond_json(c, 200, tmpl_json(kd, t));
}

void api_template_delete(struct kilnd *kd, struct http_conn *c, const char *name)
{
	const struct http_who *who = &http_conn_req(c)->who;
	struct template *t = tmpl_find(kd, name), **pp;

	if (!t || !auth_may_use(who, t->rec.tenant)) {
		http_respond_error(c, 404, "template %.64s not found", name);
		return;
	}
	if (!auth_owns(who, t->rec.tenant)) {
		http_respond_error(c, 403,
		                   "template %s is the operator's: a tenant's key may start clones "
		                   "of it, not remove it",
		                   name);
		return;
	}
	if (store_tmpl_delete(kd->store, t->rec.name)) {
		http_respond_error(c, 500, "cannot remove template %s from the store", name);
		return;
	}
	for (pp = &kd->templates; *pp != t; pp = &(*pp)->next)
		;
	*pp = t->next;
	/* Running clones keep their mapping of the memory file; only new
	 * clones need the files. Those waiting in its pool go. */
	pool_drain(kd, t->rec.name);
	tmpl_rm_dir(kd, t->rec.name);
	log_info("template %s: removed", t->rec.name);
	tmpl_free(t);
	http_respond(c, 204, NULL, NULL, NULL, 0);
}
