/* SPDX-License-Identifier: MIT */
/* Sandbox lifecycle: one kiln-vmm process per sandbox (none while paused).
 *
 *   starting --agent answers--> running --lifetime/kill--> killed
 *       \                        |    ^
 *        \                  pause|    |agent answers
 *         \                      v    |
 *          \                 pausing  resuming  <--resume-- paused
 *           \                    \________snapshot written_____^
 *            +--VMM dies / no agent (any live state)--> error (reason kept)
 *
 * The VMM runs in its own process group with its console on
 * <dir>/console.log and its API socket on <dir>/api.sock. kilnd watches it
 * through a pidfd, so a VMM adopted after a kilnd restart (no longer our
 * child) is watched the same way. A paused sandbox is <dir>/snapshot and
 * no process. Every state change is written to the store before it is
 * reported. Pause, resume and snapshots are in pause.c. */
#ifndef KILND_SANDBOX_H
#define KILND_SANDBOX_H

#include <stdbool.h>
#include <sys/types.h>

#include <ev.h>
#include <jansson.h>

#include "events/events.h"
#include "kilnd.h"
#include "image_defaults.h"
#include "net/policy.h"
#include "store.h"

enum sb_state {
	SB_STARTING,
	SB_RUNNING,
	SB_PAUSING, /* the snapshot is being written; the VMM stops next */
	SB_PAUSED,  /* a snapshot file, no VMM */
	SB_RESUMING,
	SB_KILLED,
	SB_ERROR,
};

/* Called once when a starting sandbox is running (err 0) or failed. */
typedef void (*sb_ready_fn)(void *ctx, struct sandbox *sb, int err, const char *msg);

struct sb_waiter;
struct vmm_call;
struct spare;

struct sandbox {
	struct kilnd *kd;
	struct sandbox *next;
	struct sb_record rec;
	enum sb_state state;
	json_t *env, *metadata;   /* objects, never NULL */
	json_t *secrets;          /* {NAME: value} like env, never shown; or NULL */
	struct net_policy policy; /* egress (net/policy.h), persisted as rec.net_json */
	struct net_sb *net;       /* net/net.c: its listener, connections, counters */
	char *dir, *vsock_path, *console_path, *pid_path, *api_path, *snap_path;
	char *run_dir; /* where the first four are (run_dir.h) */

	int pidfd;
	unsigned jail_id; /* its VMM's uid and gid (jail_ids.h), or 0 */
	int console_wd;   /* console.c's inotify watch, or -1 */
	ev_io pid_w;
	bool alive, is_child, deleted;
	/* Started from a snapshot (a clone): if it does not come up, nothing
	 * of it is kept (the error goes to whoever asked). */
	bool restored;

	ev_timer life, boot;
	ev_tstamp boot_deadline;
	struct agent_conn *probe;
	struct spare *spares; /* spare.c: agent streams opened ahead */
	ev_idle spare_idle;
	sb_ready_fn ready_cb;
	void *ready_ctx;
	char agent_version[64];
	/* What its agent said of itself is in rec (agent_flags,
	 * agent_no_users: users_probe.c), kept in the store. */
	struct agent_conn *users_probe;
	struct envd_sb *envd;           /* processes started through envd (envd_proc.c) */
	struct procs_sb *procs;         /* kiln's exec and pty processes (api/procs.c) */
	bool procs_closed;              /* stopped: its process tables are written no more */
	bool pool_priming, pool_primed; /* pool.c: a first command ran in this pool clone */

	/* pause.c */
	struct vmm_call *call;     /* the VMM API request in flight */
	bool snapshotting;         /* a snapshot is being taken of the running VM */
	bool snap_done;            /* pausing: the snapshot is complete */
	off_t console_mark;        /* console.log size when the VMM last started */
	long long resume_timeout;  /* seconds of lifetime after the resume */
	char *fail_msg;            /* why a pause or resume is being undone */
	int fail_status;           /* and the HTTP status that goes with it */
	struct sb_waiter *waiters; /* requests waiting for a transition to end */

	struct img_defaults defaults; /* image_defaults.c: read on first use */
	bool defaults_loaded;

	/* events/: who acted on it last, and the state its last event saw */
	char actor[EVENTS_WHO_LEN];
	enum sb_state ev_state;
	int64_t ev_since; /* when it entered ev_state, ms */
	bool ev_created;  /* its sandbox.created is recorded */
};

struct sb_params {
	const char *template_id; /* the name asked for: an image or a template */
	const char *kernel, *initrd;
	const char *image; /* image file, or NULL */
	/* A clone: start from this snapshot (restore mode "template", its
	 * memory file in template_dir) instead of booting. */
	const char *restore, *template_dir;
	long long timeout_s, memory_mb, cpu_count;
	bool auto_pause;                 /* pause, not kill, when the lifetime ends */
	bool pool;                       /* a clone for its template's warm pool (pool.c) */
	bool public_ports;               /* its ports answer without the API key (net/ports.h) */
	json_t *env, *metadata;          /* borrowed; may be NULL */
	json_t *secrets;                 /* borrowed; may be NULL */
	const char *actor;               /* who asks (events.h), or NULL */
	const struct net_policy *policy; /* borrowed; NULL: internet on, no rules */
	const char *tenant;              /* its owner (auth/auth.h), NULL: the operator */
};

/* Start a sandbox. Returns 0 (cb is called later; *out is the sandbox) or an
 * HTTP status with msg filled in. */
int sb_create(struct kilnd *kd, const struct sb_params *p, sb_ready_fn cb, void *ctx,
              struct sandbox **out, char *msg, size_t msglen);
/* The create request went away: do not call its callback. */
void sb_cancel_ready(struct sandbox *sb);
/* A running pool clone becomes a sandbox of its own, as p asks (lifetime,
 * envVars, metadata, autoPause), created now. */
void sb_claim(struct sandbox *sb, const struct sb_params *p);
struct sandbox *sb_find(struct kilnd *kd, const char *id);
/* Kill the VMM and forget the sandbox (its directory too). */
void sb_delete(struct sandbox *sb);
void sb_set_timeout(struct sandbox *sb, long long seconds);
/* Write sb's record to the store: 0, or -EIO (logged). */
int sb_save(struct sandbox *sb);
const char *sb_state_name(enum sb_state s);
/* The VMM process exists (starting, running, pausing or resuming). */
bool sb_is_live(enum sb_state s);
json_t *sb_to_json(const struct sandbox *sb);
/* "sandbox ID is STATE" and, for paused ones, how to resume: for 409s. */
void sb_not_running(const struct sandbox *sb, char *msg, size_t msglen);
/* NULL-terminated "NAME=value" list: the sandbox's envVars overlaid with
 * its secrets, then `extra` (an object, may be NULL). Free with
 * sb_env_free(). */
char **sb_env(const struct sandbox *sb, json_t *extra);
void sb_env_free(char **env);

/* Load the store and re-adopt VMMs that are still alive. */
int sb_restore_all(struct kilnd *kd);
/* Periodic: forget dead sandboxes older than cfg.retain_dead. */
void sb_housekeeping(struct kilnd *kd);
void sb_free_all(struct kilnd *kd);

/* ---- pause.c: pause, resume, snapshots; requests are serialized ---- */

enum sb_op { SB_OP_PAUSE, SB_OP_RESUME };

/* status: an HTTP status: 204 paused, 201 resumed, 200 running already
 * (resume); else an error, msg says why. sb is NULL if it was deleted. */
typedef void (*sb_op_fn)(void *ctx, struct sandbox *sb, int status, const char *msg);

/* Ask for op. While another transition of the sandbox is under way, the
 * request waits for it to end and is then decided on the state it left.
 * cb runs exactly once (maybe before this returns: then NULL is returned),
 * unless the returned waiter is cancelled. timeout_s: the lifetime after a
 * resume (0: kilnd's default). */
struct sb_waiter *sb_request(struct sandbox *sb, enum sb_op op, long long timeout_s, sb_op_fn cb,
                             void *ctx);
void sb_waiter_cancel(struct sandbox *sb, struct sb_waiter *w);

/* Snapshot the running sandbox to path (fork, templates). keep_running:
 * the VM goes on afterwards, else it is left paused for the caller to
 * delete. cb gets the VMM's reply (NULL on failure) and an error. Waits
 * for other transitions like sb_request(). */
typedef void (*sb_snap_fn)(void *ctx, struct sandbox *sb, json_t *reply, const char *err);
struct sb_waiter *sb_snapshot(struct sandbox *sb, const char *path, bool keep_running,
                              sb_snap_fn cb, void *ctx);

/* Its agent (as of its last boot or resume) takes START's tag trailer and
 * lists its processes (KILN_HELLO_PROCS). */
bool sb_agent_procs(const struct sandbox *sb);
/* Whether a request may run as user (NULL or "root": root) in sb; if not,
 * err says why and what to do. */
bool sb_user_ok(const struct sandbox *sb, const char *user, char *err, size_t errlen);

#endif
