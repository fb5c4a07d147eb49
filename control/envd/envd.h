/* SPDX-License-Identifier: MIT */
/* envd: E2B's in-sandbox API, served by kilnd on the sandbox's behalf so
 * that the E2B SDKs work unchanged (see API.md, "envd API").
 *
 * Requests reach it on the --envd-listen listener, or on the control API's
 * listeners when they carry the E2b-Sandbox-Id header. The sandbox comes
 * from that header (or a Host of the form 49983-<id>.<domain>); each
 * sandbox has its own access token (X-Access-Token), derived from kilnd's
 * secret so that it survives restarts.
 *
 *   envd.c        routing, authentication, the RPC dispatch, /health
 *   envd_proc.c   process.Process: a kilnd-side table of the processes the
 *                 SDK started, each an agent exec/pty stream kept open, with
 *                 any number of HTTP streams attached (Start, Connect)
 *   envd_fs.c     filesystem.Filesystem, as sequences of agent file ops
 *   envd_watch.c  its WatchDir and watchers, on envd_scan.c's polling scans
 *   envd_files.c  GET/POST /files (download, multipart or raw upload) */
#ifndef KILND_ENVD_H
#define KILND_ENVD_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "agent/agent_proto.h"
#include "http/http.h"
#include "kilnd.h"
#include "sandbox/sandbox.h"

#define ENVD_PORT      49983
#define ENVD_HOME      "/root" /* relative paths and the default cwd */
#define ENVD_TOKEN_LEN 64      /* hex digits */
#define ENVD_MAX_PROCS 32      /* per sandbox; the agent allows 64 streams */
/* with the SIGKILLed ones still ending (envd_proc_rpc.c) */
#define ENVD_MAX_ENTRIES (2 * ENVD_MAX_PROCS)
#define ENVD_MAX_SUBS    16 /* streams attached to one process */
#define ENVD_PATH_MAX    4096
#define ENVD_SECRET_FILE "envd-secret"

/* kilnd's secret for access tokens: DATA_DIR/envd-secret, made once. */
int envd_load_secret(struct kilnd *kd);
/* The access token of sandbox `id` (ENVD_TOKEN_LEN hex digits + NUL). */
void envd_token(const struct kilnd *kd, const char *id, char out[ENVD_TOKEN_LEN + 1]);
/* Its traffic token (E2B's trafficAccessToken), for the code interpreter's
 * port: the SDK sends it as E2B-Traffic-Access-Token. */
void envd_traffic_token(const struct kilnd *kd, const char *id, char out[ENVD_TOKEN_LEN + 1]);

/* Does this request go to envd rather than to the control API? */
bool envd_wants(const struct http_req *req);
void envd_route(struct http_conn *c, struct http_req *req, struct kilnd *kd);

/* The sandbox stopped running or is being freed: end its processes. */
void envd_sandbox_down(struct sandbox *sb);
/* A resumed sandbox's agent answers: its processes, suspended when their
 * streams ended with the VMM, are attached again (envd_proc.c). true: done
 * (sb) is called from the loop once every ATTACH is answered (at most
 * ENVD_REATTACH_LIMIT s); false: nothing to wait for. */
#define ENVD_REATTACH_LIMIT 5.0
bool envd_sandbox_reattach(struct sandbox *sb, void (*done)(struct sandbox *sb));
/* The resume failed: done is not called. */
void envd_reattach_cancel(struct sandbox *sb);

/* ---- shared by envd*.c ---- */

/* Who a request runs as (envd_user.c): the agent's user trailer. */
struct envd_user {
	char name[AGENT_USER_MAX + 1];
	uint32_t flags;                /* KILN_USER_OR_ROOT for the default user */
	char home[AGENT_USER_MAX + 8]; /* /root, or /home/NAME */
};
/* The name for the agent's user trailer: NULL for root (no trailer, so
 * that agents from before users serve root's requests). */
static inline const char *envd_user_name(const struct envd_user *u)
{
	return u && strcmp(u->name, "root") ? u->name : NULL;
}
/* The user trailer's flags for file operation op: envd writes as root
 * and gives the user what it makes (KILN_USER_GIVE), reads as the user. */
static inline uint32_t envd_user_flags(const struct envd_user *u, uint32_t op)
{
	bool writes = op == KILN_FILE_WRITE || op == KILN_FILE_MKDIR || op == KILN_FILE_REMOVE ||
	              op == KILN_FILE_RENAME;

	return u ? u->flags | (writes ? KILN_USER_GIVE : 0) : 0;
}
/* The sandbox's default user (the code interpreter's kernels run as it). */
void envd_user_default(struct sandbox *sb, struct envd_user *u);
/* The request's user: query_user (/files' username=) if not NULL, else
 * the Basic authorization's, else the sandbox's default (root when the
 * sandbox's agent predates users). -1 with err set (envd's "invalid
 * username: ...") for a name that is not one, -2 for a user other than
 * root when the agent predates users (sb_user_ok). */
int envd_user_of(const struct http_req *req, const char *query_user, struct sandbox *sb,
                 struct envd_user *u, char *err, size_t errlen);

/* One RPC, parsed: valid for the duration of the handler call. */
struct envd_req {
	struct kilnd *kd;
	struct http_conn *c;
	struct sandbox *sb;
	json_t *msg;
	long long timeout_ms; /* Connect-Timeout-Ms, 0 if none */
	double keepalive_s;   /* Keepalive-Ping-Interval */
	struct envd_user user;
};

/* An absolute path (malloc'd) for an SDK path: relative ones and "~" are
 * taken from the user's home (ENVD_HOME if u is NULL); NULL if too long. */
char *envd_resolve_path_as(const char *path, const struct envd_user *u);
#define envd_resolve_path(path) envd_resolve_path_as(path, NULL)

void envd_proc_start(struct envd_req *r);
void envd_proc_connect(struct envd_req *r);
void envd_proc_list(struct envd_req *r);
void envd_proc_send_input(struct envd_req *r);
void envd_proc_send_signal(struct envd_req *r);
void envd_proc_close_stdin(struct envd_req *r);
void envd_proc_update(struct envd_req *r);
/* StreamInput (envd_input.c): reads the request body as it comes. */
void envd_proc_stream_input(struct kilnd *kd, struct http_conn *c, struct sandbox *sb);

void envd_fs_stat(struct envd_req *r);
void envd_fs_make_dir(struct envd_req *r);
void envd_fs_move(struct envd_req *r);
void envd_fs_list_dir(struct envd_req *r);
void envd_fs_remove(struct envd_req *r);

void envd_watch_dir(struct envd_req *r);
void envd_watch_create(struct envd_req *r);
void envd_watch_get_events(struct envd_req *r);
void envd_watch_remove(struct envd_req *r);
/* The sandbox stopped: its watches end (envd_sandbox_down calls it). */
void envd_watch_sandbox_down(struct kilnd *kd, const char *sb_id);

/* Called at headers time. */
void envd_files_get(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb,
                    const char *path, const struct envd_user *u);
void envd_files_post(struct kilnd *kd, struct http_conn *c, struct http_req *req,
                     struct sandbox *sb, const char *path, const struct envd_user *u);

/* EntryInfo (proto3 JSON); path is the entry's full path. */
json_t *envd_entry_json(uint32_t mode, uint64_t size, int64_t mtime, const char *name,
                        const char *target, const char *path);

/* One agent file operation without data (STAT, LIST, MKDIR, REMOVE,
 * RENAME) on a running sandbox. cb gets err 0, an errno the agent reported,
 * or -errno for a local failure (the sandbox gone, a protocol error), and
 * for STAT and LIST the entries (valid during the call). The operation is
 * freed after cb returns; fsop_cancel() drops it before. */
struct fs_ent {
	uint32_t mode;
	uint64_t size;
	int64_t mtime;
	uint32_t mtime_ns;
	char *name, *target;
};
struct fsop;
typedef void (*fsop_fn)(void *ctx, int err, const char *msg, const struct fs_ent *ents, size_t n);
/* One file operation as user u (NULL: root); NULL with errno set if the
 * stream cannot be opened. */
struct fsop *fsop_start_as(struct sandbox *sb, uint32_t op, const char *path, uint32_t arg,
                           const char *path2, const struct envd_user *u, fsop_fn cb, void *ctx);
void fsop_cancel(struct fsop *op);
/* The code and message for a failed fsop. */
int envd_fs_error(int err, const char *msg, const char *path, char *out, size_t outlen);

#endif
