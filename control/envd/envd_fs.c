/* SPDX-License-Identifier: MIT */
/* envd's filesystem.Filesystem service, each call a short sequence of
 * agent file operations:
 *
 *   Stat     STAT
 *   MakeDir  STAT (exists: already_exists), MKDIR, STAT
 *   Move     MKDIR of the destination's parent, RENAME, STAT
 *   ListDir  LIST, then LIST of each subdirectory down to `depth`
 *   Remove   REMOVE (recursive; a missing path is success, as in envd)
 *
 * A call keeps only the sandbox's id between steps and looks it up again
 * for the next one, so a sandbox deleted meanwhile ends the call cleanly. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/agent_client.h"
#include "http/connectrpc.h"
#include "http/jsonutil.h"
#include "envd.h"
#include "agent/spare.h"
#include "util.h"

#define LIST_MAX_ENTRIES 100000
#define LIST_MAX_DEPTH   1024

/* ---------------------------------------------------------------- fsop */

struct fsop {
	struct agent_conn *a;
	uint32_t op;
	bool hello;
	bool reuse; /* the agent keeps the connection after the last frame */
	struct fs_ent *ents;
	size_t n, cap;
	fsop_fn cb;
	void *ctx;
};

static void fsop_free(struct fsop *o)
{
	agent_close(o->a);
	for (size_t i = 0; i < o->n; i++) {
		free(o->ents[i].name);
		free(o->ents[i].target);
	}
	free(o->ents);
	free(o);
}

void fsop_cancel(struct fsop *o)
{
	if (o)
		fsop_free(o);
}

static void fsop_finish(struct fsop *o, int err, const char *msg)
{
	agent_close(o->a);
	o->a = NULL;
	o->cb(o->ctx, err, msg, o->ents, o->n);
	fsop_free(o);
}

static int add_ent(struct fsop *o, const uint8_t *p, uint32_t n)
{
	struct agent_stat st;
	struct fs_ent *e;

	if (agent_parse_stat(p, n, &st))
		return -EPROTO;
	if (o->n == LIST_MAX_ENTRIES)
		return -E2BIG;
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 16;
		struct fs_ent *ne = realloc(o->ents, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		o->ents = ne;
		o->cap = cap;
	}
	e = &o->ents[o->n];
	memset(e, 0, sizeof(*e));
	e->mode = st.mode;
	e->size = st.size;
	e->mtime = st.mtime;
	e->mtime_ns = st.mtime_ns;
	e->name = strndup(st.name, st.name_len);
	e->target = st.target_len ? strndup(st.target, st.target_len) : NULL;
	if (!e->name || (st.target_len && !e->target)) {
		free(e->name);
		free(e->target);
		return -ENOMEM;
	}
	o->n++;
	return 0;
}

static void fsop_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct fsop *o = ctx;
	uint32_t v, kind, err, len;
	const char *msg;
	char text[320];
	int rc;

	if (type == KILN_MSG_ERROR) {
		if (agent_parse_error(p, n, &err, &msg, &len) || !err) {
			fsop_finish(o, -EPROTO, "malformed error from the agent");
			return;
		}
		if (!len) {
			msg = strerror((int)err);
			len = (uint32_t)strlen(msg);
		}
		snprintf(text, sizeof(text), "%.*s", (int)(len > 300 ? 300 : len), msg);
		fsop_finish(o, (int)err, text);
		return;
	}
	if (!o->hello) {
		if (type != KILN_MSG_HELLO || agent_parse_hello(p, n, &v, &kind) ||
		    v != KILN_AGENT_VERSION) {
			fsop_finish(o, -EPROTO, "agent protocol mismatch");
			return;
		}
		o->hello = true;
		o->reuse = kind & KILN_HELLO_REUSE; /* the answer's flags */
		return;
	}
	if (o->op == KILN_FILE_STAT && type == KILN_MSG_STAT && !o->n) {
		spare_release(&o->a, o->reuse);
		rc = add_ent(o, p, n);
		fsop_finish(o, rc, rc ? strerror(-rc) : NULL);
		return;
	}
	if (o->op == KILN_FILE_LIST && type == KILN_MSG_ENTRY) {
		rc = add_ent(o, p, n);
		if (rc)
			fsop_finish(o, rc,
			            rc == -E2BIG ? "the directory has too many entries"
			                         : strerror(-rc));
		return;
	}
	if (o->op != KILN_FILE_STAT && type == KILN_MSG_DONE && !n) {
		spare_release(&o->a, o->reuse);
		fsop_finish(o, 0, NULL);
		return;
	}
	fsop_finish(o, -EPROTO, "agent protocol error");
}

static void fsop_close(void *ctx, int err)
{
	struct fsop *o = ctx;

	o->a = NULL;
	fsop_finish(o, -EPIPE, "the agent stream ended early");
}

static const struct agent_conn_ops fsop_ops = {
    .on_frame = fsop_frame,
    .on_close = fsop_close,
};

struct fsop *fsop_start_as(struct sandbox *sb, uint32_t op, const char *path, uint32_t arg,
                           const char *path2, const struct envd_user *u, fsop_fn cb, void *ctx)
{
	struct fsop *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->op = op;
	o->cb = cb;
	o->ctx = ctx;
	o->a = spare_take(sb, &fsop_ops, o);
	if (!o->a) {
		int e = errno;

		free(o);
		errno = e;
		return NULL;
	}
	if (agent_msg_hello(agent_out(o->a), KILN_STREAM_FILE, KILN_FRAME_REUSE) ||
	    agent_msg_file_as(agent_out(o->a), op, path, arg, path2, envd_user_name(u),
	                      envd_user_flags(u, op))) {
		fsop_free(o);
		errno = E2BIG;
		return NULL;
	}
	agent_flush(o->a);
	return o;
}

int envd_fs_error(int err, const char *msg, const char *path, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s: %s", path, msg ? msg : err > 0 ? strerror(err) : "failed");
	if (err > 0)
		return crpc_code_from_errno(err);
	return err == -E2BIG ? CRPC_RESOURCE_EXHAUSTED : CRPC_UNAVAILABLE;
}

/* ---------------------------------------------------------------- EntryInfo */

/* Go's os.FileMode.String(), which envd reports as `permissions`. */
static void go_mode_string(uint32_t m, char out[16])
{
	static const char rwx[] = "rwxrwxrwx";
	int w = 0;

	if (S_ISDIR(m))
		out[w++] = 'd';
	if (S_ISLNK(m))
		out[w++] = 'L';
	if (S_ISBLK(m) || S_ISCHR(m))
		out[w++] = 'D';
	if (S_ISFIFO(m))
		out[w++] = 'p';
	if (S_ISSOCK(m))
		out[w++] = 'S';
	if (m & S_ISUID)
		out[w++] = 'u';
	if (m & S_ISGID)
		out[w++] = 'g';
	if (S_ISCHR(m))
		out[w++] = 'c';
	if (m & S_ISVTX)
		out[w++] = 't';
	if (!w)
		out[w++] = '-';
	for (int i = 0; i < 9; i++)
		out[w++] = m & (1u << (8 - i)) ? rwx[i] : '-';
	out[w] = 0;
}

json_t *envd_entry_json(uint32_t mode, uint64_t size, int64_t mtime, const char *name,
                        const char *target, const char *path)
{
	char perms[16], ts[32], sz[24];
	struct tm tm;
	time_t t = (time_t)mtime;
	json_t *j;

	go_mode_string(mode, perms);
	if (!gmtime_r(&t, &tm) || !strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(ts, sizeof(ts), "1970-01-01T00:00:00Z");
	snprintf(sz, sizeof(sz), "%llu", (unsigned long long)size);
	/* names need not be UTF-8: JSON gets U+FFFD for what is not */
	j = json_pack("{s:o,s:o,s:s,s:i,s:s,s:s}", "name", json_lossy(name, strlen(name)), "path",
	              json_lossy(path, strlen(path)), "size", sz, "mode", (int)(mode & 0777),
	              "permissions", perms, "modifiedTime", ts);
	if (!j)
		return NULL;
	/* proto3 JSON leaves FILE_TYPE_UNSPECIFIED out */
	if (S_ISREG(mode))
		json_object_set_new(j, "type", json_string("FILE_TYPE_FILE"));
	else if (S_ISDIR(mode))
		json_object_set_new(j, "type", json_string("FILE_TYPE_DIRECTORY"));
	else if (S_ISLNK(mode))
		json_object_set_new(j, "type", json_string("FILE_TYPE_SYMLINK"));
	if (target)
		json_object_set_new(j, "symlinkTarget", json_lossy(target, strlen(target)));
	return j;
}

static json_t *ent_json(const struct fs_ent *e, const char *path)
{
	return envd_entry_json(e->mode, e->size, e->mtime, e->name, e->target, path);
}

static char *join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	char *p;

	if (asprintf(&p, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name) < 0)
		return NULL;
	return p;
}

/* ---------------------------------------------------------------- calls */

enum fs_kind { FS_STAT, FS_MKDIR, FS_MOVE, FS_LIST, FS_REMOVE };

struct dir_item {
	char *path;
	unsigned level;
};

struct fscall {
	struct kilnd *kd;
	struct http_conn *c;
	char id[SB_ID_LEN + 1];
	enum fs_kind kind;
	int step;
	char *path, *path2;
	struct fsop *op;
	struct envd_user user; /* who the operations run as */
	/* ListDir */
	unsigned depth;
	json_t *entries;
	struct dir_item *q;
	size_t qhead, qlen, qcap;
	char *cur; /* the directory being listed */
};

static void call_free(struct fscall *f)
{
	fsop_cancel(f->op);
	for (size_t i = f->qhead; i < f->qlen; i++)
		free(f->q[i].path);
	free(f->q);
	free(f->cur);
	json_decref(f->entries);
	free(f->path);
	free(f->path2);
	free(f);
}

static void call_abort(void *ctx)
{
	call_free(ctx);
}

static const struct http_handler call_ops = {.on_abort = call_abort};

/* envd's code for what the guest answered (its filesystem handlers; the
 * SDK maps not_found to FileNotFoundError, invalid_argument to
 * InvalidArgumentError, the rest to SandboxError). */
static int fs_code(enum fs_kind kind, int err, int code)
{
	if (err <= 0)
		return code; /* kilnd's own: the agent unreachable, a limit */
	if (err == ESRCH)    /* the agent: no such user (envd: "invalid username") */
		return CRPC_UNAUTHENTICATED;
	if (err == ENOENT && kind != FS_MKDIR)
		return CRPC_NOT_FOUND;
	if (kind == FS_LIST && err == ENOTDIR)
		return CRPC_INVALID_ARGUMENT;
	if (kind == FS_LIST && err == ELOOP)
		return CRPC_FAILED_PRECONDITION;
	return CRPC_INTERNAL;
}

static void call_error(struct fscall *f, int err, const char *msg, const char *path)
{
	char text[512];
	int code = fs_code(f->kind, err, envd_fs_error(err, msg, path, text, sizeof(text)));

	crpc_respond_error(f->c, code, "%s", text);
	call_free(f);
}

static void call_done(struct fscall *f, json_t *msg)
{
	crpc_respond(f->c, msg);
	call_free(f);
}

static void step_done(void *ctx, int err, const char *msg, const struct fs_ent *ents, size_t n);

/* Run the next agent operation of the call; false if it failed (answered). */
static bool run(struct fscall *f, uint32_t op, const char *path, uint32_t arg, const char *path2)
{
	struct sandbox *sb = sb_find(f->kd, f->id);

	if (!sb || sb->state != SB_RUNNING) {
		crpc_respond_error(f->c, CRPC_UNAVAILABLE, "sandbox %s is not running", f->id);
		call_free(f);
		return false;
	}
	f->op = fsop_start_as(sb, op, path, arg, path2, &f->user, step_done, f);
	if (!f->op) {
		crpc_respond_error(
		    f->c, errno == E2BIG ? CRPC_INVALID_ARGUMENT : CRPC_UNAVAILABLE, "%s",
		    errno == E2BIG ? "path too long" : "cannot reach the sandbox's agent");
		call_free(f);
		return false;
	}
	return true;
}

static char *parent_of(const char *path)
{
	char *p = strdup(path), *slash;

	if (!p)
		return NULL;
	slash = strrchr(p, '/');
	if (slash == p)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	return p;
}

static void list_next(struct fscall *f)
{
	struct dir_item it;

	if (f->qhead == f->qlen) {
		json_t *e = f->entries;

		f->entries = NULL;
		call_done(f, json_pack("{s:o}", "entries", e));
		return;
	}
	it = f->q[f->qhead++];
	free(f->cur);
	f->cur = it.path;
	f->step = (int)it.level;
	run(f, KILN_FILE_LIST, it.path, 0, NULL);
}

static int enqueue(struct fscall *f, char *path, unsigned level)
{
	if (f->qlen == f->qcap) {
		size_t cap = f->qcap ? 2 * f->qcap : 8;
		struct dir_item *nq = realloc(f->q, cap * sizeof(*nq));

		if (!nq)
			return -1;
		f->q = nq;
		f->qcap = cap;
	}
	f->q[f->qlen++] = (struct dir_item){path, level};
	return 0;
}

static void list_step(struct fscall *f, int err, const char *msg, const struct fs_ent *ents,
                      size_t n)
{
	unsigned level = (unsigned)f->step;

	if (err) {
		if (level == 1) {
			if (err == ENOTDIR) {
				crpc_respond_error(f->c, CRPC_INVALID_ARGUMENT,
				                   "%s: not a directory", f->path);
				call_free(f);
				return;
			}
			call_error(f, err, msg, f->path);
			return;
		}
		if (err < 0 && err != -E2BIG) {
			call_error(f, err, msg, f->cur);
			return;
		}
		/* a subdirectory that vanished or cannot be read: skipped */
		list_next(f);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		char *p = join(f->cur, ents[i].name);
		json_t *e = p ? ent_json(&ents[i], p) : NULL;

		if (!e || json_array_append_new(f->entries, e)) {
			free(p);
			crpc_respond_error(f->c, CRPC_INTERNAL, "out of memory");
			call_free(f);
			return;
		}
		if (json_array_size(f->entries) > LIST_MAX_ENTRIES) {
			free(p);
			crpc_respond_error(f->c, CRPC_RESOURCE_EXHAUSTED,
			                   "more than %d entries; list with a smaller depth",
			                   LIST_MAX_ENTRIES);
			call_free(f);
			return;
		}
		/* lstat types: symlinks to directories are not followed */
		if (S_ISDIR(ents[i].mode) && level < f->depth) {
			if (enqueue(f, p, level + 1)) {
				free(p);
				crpc_respond_error(f->c, CRPC_INTERNAL, "out of memory");
				call_free(f);
				return;
			}
		} else {
			free(p);
		}
	}
	list_next(f);
}

static void step_done(void *ctx, int err, const char *msg, const struct fs_ent *ents, size_t n)
{
	struct fscall *f = ctx;
	char *parent;

	f->op = NULL; /* freed by the caller after we return */
	switch (f->kind) {
	case FS_STAT:
		if (err)
			call_error(f, err, msg, f->path);
		else
			call_done(f, json_pack("{s:o}", "entry", ent_json(&ents[0], f->path)));
		return;
	case FS_MKDIR:
		if (f->step == 0) {
			if (!err) {
				if (S_ISDIR(ents[0].mode))
					crpc_respond_error(f->c, CRPC_ALREADY_EXISTS,
					                   "directory already exists: %s", f->path);
				else
					crpc_respond_error(
					    f->c, CRPC_INVALID_ARGUMENT,
					    "path already exists but it is not a directory: %s",
					    f->path);
				call_free(f);
				return;
			}
			if (err != ENOENT) {
				call_error(f, err, msg, f->path);
				return;
			}
			f->step = 1;
			run(f, KILN_FILE_MKDIR, f->path, 0755, NULL);
			return;
		}
		if (f->step == 1) {
			if (err) {
				call_error(f, err, msg, f->path);
				return;
			}
			f->step = 2;
			run(f, KILN_FILE_STAT, f->path, 0, NULL);
			return;
		}
		if (err)
			call_error(f, err, msg, f->path);
		else
			call_done(f, json_pack("{s:o}", "entry", ent_json(&ents[0], f->path)));
		return;
	case FS_MOVE:
		if (err) {
			call_error(f, err, msg, f->step == 0 ? f->path2 : f->path);
			return;
		}
		if (f->step == 0) {
			f->step = 1;
			run(f, KILN_FILE_RENAME, f->path, 0, f->path2);
			return;
		}
		if (f->step == 1) {
			f->step = 2;
			run(f, KILN_FILE_STAT, f->path2, 0, NULL);
			return;
		}
		call_done(f, json_pack("{s:o}", "entry", ent_json(&ents[0], f->path2)));
		return;
	case FS_REMOVE:
		if (err && err != ENOENT) {
			call_error(f, err, msg, f->path);
			return;
		}
		if (!err)
			events_add(f->kd, f->id, sb_find(f->kd, f->id), "file.removed", "envd",
			           json_pack("{s:o}", "path", events_text(f->path)));
		call_done(f, json_object());
		return;
	case FS_LIST:
		list_step(f, err, msg, ents, n);
		return;
	}
	(void)parent;
}

static struct fscall *call_new(struct envd_req *r, enum fs_kind kind, const char *key)
{
	json_t *v = json_object_get(r->msg, key);
	struct fscall *f;

	if (v && !json_is_string(v) && !json_is_null(v)) {
		crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT, "'%s' must be a string", key);
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		crpc_respond_error(r->c, CRPC_INTERNAL, "out of memory");
		return NULL;
	}
	f->kd = r->kd;
	f->c = r->c;
	f->kind = kind;
	snprintf(f->id, sizeof(f->id), "%s", r->sb->rec.id);
	f->user = r->user;
	f->path = envd_resolve_path_as(json_is_string(v) ? json_string_value(v) : NULL, &r->user);
	if (!f->path) {
		crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT, "'%s' is too long", key);
		free(f);
		return NULL;
	}
	http_set_handler(r->c, &call_ops, f, 0);
	return f;
}

void envd_fs_stat(struct envd_req *r)
{
	struct fscall *f = call_new(r, FS_STAT, "path");

	if (f)
		run(f, KILN_FILE_STAT, f->path, 0, NULL);
}

void envd_fs_make_dir(struct envd_req *r)
{
	struct fscall *f = call_new(r, FS_MKDIR, "path");

	if (f)
		run(f, KILN_FILE_STAT, f->path, 0, NULL);
}

void envd_fs_remove(struct envd_req *r)
{
	struct fscall *f = call_new(r, FS_REMOVE, "path");

	if (f)
		run(f, KILN_FILE_REMOVE, f->path, 1, NULL);
}

void envd_fs_move(struct envd_req *r)
{
	json_t *dst = json_object_get(r->msg, "destination");
	struct fscall *f;
	char *parent;

	if (!json_is_string(dst) || !json_string_length(dst)) {
		crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT, "'destination' is required");
		return;
	}
	f = call_new(r, FS_MOVE, "source");
	if (!f)
		return;
	f->path2 = envd_resolve_path_as(json_string_value(dst), &r->user);
	parent = f->path2 ? parent_of(f->path2) : NULL;
	if (!parent) {
		crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT, "'destination' is too long");
		call_free(f);
		return;
	}
	/* like envd, the destination's directory is created when missing */
	run(f, KILN_FILE_MKDIR, parent, 0755, NULL);
	free(parent);
}

void envd_fs_list_dir(struct envd_req *r)
{
	unsigned long long depth;
	struct fscall *f;
	char *p;

	if (crpc_get_u32(r->msg, "depth", UINT32_MAX, 1, &depth)) {
		crpc_respond_error(r->c, CRPC_INVALID_ARGUMENT,
		                   "'depth' must be an unsigned number");
		return;
	}
	f = call_new(r, FS_LIST, "path");
	if (!f)
		return;
	f->depth = depth < 1 ? 1 : depth > LIST_MAX_DEPTH ? LIST_MAX_DEPTH : (unsigned)depth;
	f->entries = json_array();
	p = strdup(f->path);
	if (!f->entries || !p || enqueue(f, p, 1)) {
		free(p);
		crpc_respond_error(r->c, CRPC_INTERNAL, "out of memory");
		call_free(f);
		return;
	}
	list_next(f);
}
