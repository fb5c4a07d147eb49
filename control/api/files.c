/* SPDX-License-Identifier: MIT */
/* File operations in a sandbox, relayed to the agent's file streams.
 *
 *   GET  /files?path=P          raw bytes (chunked), X-Kiln-Size/-Mode headers
 *   PUT  /files?path=P&mode=M   raw body, streamed to the agent; the agent
 *                               renames a temporary file into place at the
 *                               end, so a broken upload leaves P untouched
 *   GET  /files/list?path=P     {"path","entries":[entry...]}
 *   GET  /files/stat?path=P     entry
 *   POST /files/mkdir {path, mode?} | /files/remove {path, recursive?}
 *        | /files/rename {from, to}                          -> 204
 * entry: {"name","path","type":"file|dir|symlink|other","size","mode",
 *         "mtime","symlinkTarget"?}
 * Nothing is buffered whole: bytes move in frames of at most
 * KILN_DATA_CHUNK, and each side stops reading while the other is backed up. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http/jsonutil.h"
#include "proxy.h"
#include "agent/spare.h"
#include "util.h"

#define PATH_MAX_LEN     4096
#define LIST_MAX_ENTRIES 100000

struct file_sess {
	struct kilnd *kd;
	struct http_conn *c;
	struct agent_conn *a;
	uint32_t op;
	char *path;
	bool hello, got_stat, sent_done, body_done;
	bool reuse; /* the agent keeps the connection after the last frame */
	bool envd;  /* an unknown user is 401, as envd answers it */
	uint64_t bytes;
	json_t *entries;
	char id[SB_ID_LEN + 1], who[EVENTS_WHO_LEN]; /* for file.written/removed */
};

static void record(struct file_sess *s, const char *type)
{
	json_t *d = json_pack("{s:o}", "path", events_text(s->path));

	if (d && s->op == KILN_FILE_WRITE)
		json_object_set_new(d, "bytes", json_integer((json_int_t)s->bytes));
	events_add(s->kd, s->id, sb_find(s->kd, s->id), type, s->who, d);
}

static void sess_free(struct file_sess *s)
{
	agent_close(s->a);
	json_decref(s->entries);
	free(s->path);
	free(s);
}

/* The agent sent the stream's last frame: the answer is out. */
static void sess_done(struct file_sess *s)
{
	spare_release(&s->a, s->reuse);
	sess_free(s);
}

static const char *type_name(uint32_t mode)
{
	if (S_ISREG(mode))
		return "file";
	if (S_ISDIR(mode))
		return "dir";
	if (S_ISLNK(mode))
		return "symlink";
	return "other";
}

static json_t *entry_json(const struct agent_stat *st, const char *dir_path)
{
	char *path;
	json_t *j;

	if (dir_path) {
		size_t dl = strlen(dir_path);

		if (asprintf(&path, "%s%s%.*s", dir_path, dl && dir_path[dl - 1] == '/' ? "" : "/",
		             (int)st->name_len, st->name) < 0)
			return NULL;
	} else {
		path = NULL;
	}
	/* names need not be UTF-8: JSON gets U+FFFD for what is not */
	j = json_pack("{s:o,s:s,s:I,s:i,s:I}", "name", json_lossy(st->name, st->name_len), "type",
	              type_name(st->mode), "size", (json_int_t)st->size, "mode",
	              (int)(st->mode & 07777), "mtime", (json_int_t)st->mtime);
	if (j && path)
		json_object_set_new(j, "path", json_lossy(path, strlen(path)));
	if (j && st->target_len)
		json_object_set_new(j, "symlinkTarget", json_lossy(st->target, st->target_len));
	free(path);
	return j;
}

/* The stream broke or misbehaved: answer if we still can, else cut. */
static void fail(struct file_sess *s, int status, const char *why)
{
	if (!http_responded(s->c))
		http_respond_error(s->c, status, "%s: %s", s->path, why);
	else
		http_abort(s->c);
	sess_free(s);
}

static void on_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct file_sess *s = ctx;
	struct agent_stat st;
	uint32_t v, kind;
	char hdrs[128];

	if (type == KILN_MSG_ERROR) {
		uint32_t err, len;
		const char *msg;

		if (http_responded(s->c)) {
			http_abort(s->c);
			sess_free(s);
			return;
		}
		if (s->envd && !agent_parse_error(p, n, &err, &msg, &len) && err == ESRCH)
			http_respond_error(s->c, 401, "%.*s", (int)(len > 300 ? 300 : len), msg);
		else
			proxy_respond_agent_error(s->c, s->path, p, n);
		sess_free(s);
		return;
	}
	if (!s->hello) {
		if (type != KILN_MSG_HELLO || agent_parse_hello(p, n, &v, &kind) ||
		    v != KILN_AGENT_VERSION) {
			fail(s, 502, "agent protocol mismatch");
			return;
		}
		s->hello = true;
		s->reuse = kind & KILN_HELLO_REUSE; /* the answer's flags */
		return;
	}
	switch (s->op) {
	case KILN_FILE_READ:
		if (type == KILN_MSG_STAT && !s->got_stat) {
			if (agent_parse_stat(p, n, &st))
				break;
			s->got_stat = true;
			if (S_ISDIR(st.mode)) {
				fail(s, 400, "is a directory");
				return;
			}
			snprintf(hdrs, sizeof(hdrs), "X-Kiln-Size: %llu\r\nX-Kiln-Mode: %o\r\n",
			         (unsigned long long)st.size, st.mode & 07777);
			http_stream_start(s->c, 200, "application/octet-stream", hdrs);
			return;
		}
		if (type == KILN_MSG_DATA && s->got_stat) {
			http_stream_write(s->c, p, n);
			s->bytes += n;
			if (http_out_pending(s->c) > HTTP_OUT_HIGH)
				agent_pause(s->a, true);
			return;
		}
		if (type == KILN_MSG_DONE && s->got_stat && !n) {
			http_stream_end(s->c);
			sess_done(s);
			return;
		}
		break;
	case KILN_FILE_WRITE:
		if (type == KILN_MSG_DONE && s->sent_done && !n) {
			http_respond_json(
			    s->c, 200,
			    json_pack("{s:s,s:I}", "path", s->path, "size", (json_int_t)s->bytes));
			record(s, "file.written");
			sess_done(s);
			return;
		}
		break;
	case KILN_FILE_LIST:
		if (type == KILN_MSG_ENTRY) {
			json_t *e;

			if (agent_parse_stat(p, n, &st))
				break;
			if (json_array_size(s->entries) >= LIST_MAX_ENTRIES) {
				fail(s, 413, "directory has too many entries");
				return;
			}
			e = entry_json(&st, s->path);
			if (!e || json_array_append_new(s->entries, e)) {
				fail(s, 500, "out of memory");
				return;
			}
			return;
		}
		if (type == KILN_MSG_DONE && !n) {
			http_respond_json(
			    s->c, 200,
			    json_pack("{s:s,s:O}", "path", s->path, "entries", s->entries));
			sess_done(s);
			return;
		}
		break;
	case KILN_FILE_STAT:
		if (type == KILN_MSG_STAT) {
			json_t *e;

			if (agent_parse_stat(p, n, &st))
				break;
			e = entry_json(&st, NULL);
			if (e)
				json_object_set_new(e, "path", json_string(s->path));
			http_respond_json(s->c, 200, e);
			sess_done(s);
			return;
		}
		break;
	default:
		if (type == KILN_MSG_DONE && !n) {
			http_respond(s->c, 204, NULL, NULL, NULL, 0);
			if (s->op == KILN_FILE_REMOVE)
				record(s, "file.removed");
			sess_done(s);
			return;
		}
		break;
	}
	log_debug("files: unexpected %s frame for op %u", agent_msg_name(type), s->op);
	fail(s, 502, "agent protocol error");
}

static void on_agent_close(void *ctx, int err)
{
	struct file_sess *s = ctx;

	s->a = NULL;
	fail(s, 502, "the agent stream ended early");
}

static void on_agent_drain(void *ctx)
{
	struct file_sess *s = ctx;

	if (!s->body_done)
		http_pause_read(s->c, false);
}

static const struct agent_conn_ops agent_ops = {
    .on_frame = on_frame,
    .on_close = on_agent_close,
    .on_drain = on_agent_drain,
};

static int on_body(void *ctx, const char *p, size_t n)
{
	struct file_sess *s = ctx;

	s->bytes += n;
	if (s->bytes > s->kd->cfg.max_upload) {
		http_respond_error(s->c, 413, "upload larger than %llu bytes",
		                   s->kd->cfg.max_upload);
		sess_free(s);
		return 0;
	}
	if (agent_msg_data(agent_out(s->a), KILN_MSG_DATA, p, n)) {
		http_respond_error(s->c, 500, "out of memory");
		sess_free(s);
		return 0;
	}
	agent_flush(s->a);
	if (agent_pending(s->a) > AGENT_OUT_HIGH)
		http_pause_read(s->c, true);
	return 0;
}

static void on_complete(void *ctx)
{
	struct file_sess *s = ctx;

	s->body_done = true;
	if (s->op != KILN_FILE_WRITE)
		return;
	/* Only a complete body is committed: DONE makes the agent rename. */
	agent_msg_empty(agent_out(s->a), KILN_MSG_DONE);
	agent_flush(s->a);
	s->sent_done = true;
}

static void on_http_drain(void *ctx)
{
	struct file_sess *s = ctx;

	if (s->a)
		agent_pause(s->a, false);
}

static void on_http_abort(void *ctx)
{
	/* Closing without DONE: the agent drops the partial upload. */
	sess_free(ctx);
}

static const struct http_handler http_ops = {
    .on_body = on_body,
    .on_complete = on_complete,
    .on_drain = on_http_drain,
    .on_abort = on_http_abort,
};

static const struct http_handler http_ops_nobody = {
    .on_drain = on_http_drain,
    .on_abort = on_http_abort,
};

static bool path_ok(const char *p)
{
	return p && p[0] == '/' && strlen(p) <= PATH_MAX_LEN;
}

/* Who a request runs as: its `user` (NULL: root); envd: from envd. */
struct as_user {
	const char *name;
	uint32_t flags;
	bool envd;
};

/* Open a file stream for `op` on `path` and send the request. */
static struct file_sess *start(struct kilnd *kd, struct http_conn *c, struct sandbox *sb,
                               uint32_t op, const char *path, uint32_t arg, const char *path2,
                               struct as_user u)
{
	char why[320];
	struct file_sess *s;

	if (!path_ok(path) || (path2 && !path_ok(path2))) {
		http_respond_error(c, 400, "paths must be absolute and at most %d bytes",
		                   PATH_MAX_LEN);
		return NULL;
	}
	if (u.name && !agent_user_valid(u.name)) {
		http_respond_error(c, 400,
		                   "'user' must be a user name (letters, digits, '.', '_', '-')");
		return NULL;
	}
	if (!sb_user_ok(sb, u.name, why, sizeof(why))) {
		http_respond_error(c, 400, "%s", why);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path))) {
		free(s);
		http_respond_error(c, 500, "out of memory");
		return NULL;
	}
	s->kd = kd;
	s->c = c;
	s->op = op;
	s->envd = u.envd;
	snprintf(s->id, sizeof(s->id), "%s", sb->rec.id);
	events_who(kd, http_conn_req(c), s->who);
	if (op == KILN_FILE_LIST)
		s->entries = json_array();
	s->a = proxy_open(kd, c, sb, KILN_STREAM_FILE, KILN_FRAME_REUSE, &agent_ops, s);
	if (!s->a) {
		sess_free(s);
		return NULL;
	}
	if (agent_msg_file_as(agent_out(s->a), op, path, arg, path2, u.name, u.flags)) {
		http_respond_error(c, 400, "bad file request");
		sess_free(s);
		return NULL;
	}
	agent_flush(s->a);
	return s;
}

void files_read_as(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, const char *path,
                   const char *user, uint32_t user_flags)
{
	struct file_sess *s = start(kd, c, sb, KILN_FILE_READ, path, 0, NULL,
	                            (struct as_user){user, user_flags, true});

	if (s)
		http_set_handler(c, &http_ops_nobody, s, 0);
}

void files_read(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, const char *path)
{
	files_read_as(kd, c, sb, path, NULL, 0);
}

void files_get(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb)
{
	char *path = http_query_param(req, "path"), *user = http_query_param(req, "user");
	struct file_sess *s =
	    start(kd, c, sb, KILN_FILE_READ, path, 0, NULL, (struct as_user){user, 0, false});

	if (s)
		http_set_handler(c, &http_ops_nobody, s, 0);
	free(path);
	free(user);
}

void files_put(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb)
{
	char *path = http_query_param(req, "path"), *mode_s = http_query_param(req, "mode"), *end;
	char *user = http_query_param(req, "user");
	unsigned long mode = 0644;
	struct file_sess *s;

	if (mode_s) {
		mode = strtoul(mode_s, &end, 8);
		if (!*mode_s || *end || mode > 07777) {
			http_respond_error(c, 400, "mode must be octal, e.g. 0644");
			goto out;
		}
	}
	if (req->has_content_length && req->content_length > kd->cfg.max_upload) {
		http_respond_error(c, 413, "upload larger than %llu bytes", kd->cfg.max_upload);
		goto out;
	}
	s = start(kd, c, sb, KILN_FILE_WRITE, path, (uint32_t)mode, NULL,
	          (struct as_user){user, 0, false});
	if (!s)
		goto out;
	http_set_handler(c, &http_ops, s, 0);
	/* An empty body: complete already, or about to be. */
out:
	free(path);
	free(mode_s);
	free(user);
}

void files_list(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb,
                bool stat_only)
{
	char *path = http_query_param(req, "path"), *user = http_query_param(req, "user");
	struct file_sess *s = start(kd, c, sb, stat_only ? KILN_FILE_STAT : KILN_FILE_LIST, path, 0,
	                            NULL, (struct as_user){user, 0, false});

	if (s)
		http_set_handler(c, &http_ops_nobody, s, 0);
	free(path);
	free(user);
}

void files_op(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, uint32_t op, json_t *body)
{
	char err[JSON_ERR_LEN] = "";
	const char *path = NULL, *to = NULL, *user = NULL;
	long long mode = 0755;
	bool recursive = false;
	struct file_sess *s;

	if (json_get_str(body, "user", AGENT_USER_MAX, &user, err))
		goto bad;
	if (op == KILN_FILE_RENAME) {
		if (json_get_str(body, "from", PATH_MAX_LEN, &path, err) ||
		    json_get_str(body, "to", PATH_MAX_LEN, &to, err))
			goto bad;
		/* E2B's names for the same thing */
		if (!path && json_get_str(body, "source", PATH_MAX_LEN, &path, err))
			goto bad;
		if (!to && json_get_str(body, "destination", PATH_MAX_LEN, &to, err))
			goto bad;
		if (!path || !to) {
			snprintf(err, sizeof(err), "'from' and 'to' are required");
			goto bad;
		}
	} else {
		if (json_get_str(body, "path", PATH_MAX_LEN, &path, err) ||
		    json_get_int(body, "mode", 0, 07777, 0755, &mode, err) ||
		    json_get_bool(body, "recursive", false, &recursive, err))
			goto bad;
		if (!path) {
			snprintf(err, sizeof(err), "'path' is required");
			goto bad;
		}
	}
	s = start(kd, c, sb, op, path, op == KILN_FILE_MKDIR ? (uint32_t)mode : recursive, to,
	          (struct as_user){user, 0, false});
	if (s)
		http_set_handler(c, &http_ops_nobody, s, 0);
	return;
bad:
	http_respond_error(c, 400, "%s", err);
}
