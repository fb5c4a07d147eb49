/* SPDX-License-Identifier: MIT */
/* Sandbox lifecycle: one kiln-vmm process per sandbox.
 *
 *   starting --agent answers--> running --lifetime/kill--> killed
 *       \                          \
 *        +--VMM dies / no agent-----+--VMM dies--> error (reason kept)
 *
 * The VMM runs in its own process group with its console on
 * <dir>/console.log. kilnd watches it through a pidfd, so a VMM adopted
 * after a kilnd restart (no longer our child) is watched the same way.
 * Every state change is written to the store before it is reported. */
#ifndef KILND_SANDBOX_H
#define KILND_SANDBOX_H

#include <stdbool.h>

#include <ev.h>
#include <jansson.h>

#include "kilnd.h"
#include "store.h"

enum sb_state { SB_STARTING, SB_RUNNING, SB_KILLED, SB_ERROR };

/* Called once when a starting sandbox is running (err 0) or failed. */
typedef void (*sb_ready_fn)(void *ctx, struct sandbox *sb, int err, const char *msg);

struct sandbox {
	struct kilnd *kd;
	struct sandbox *next;
	struct sb_record rec;
	enum sb_state state;
	json_t *env, *metadata; /* objects, never NULL */
	char *dir, *vsock_path, *console_path, *pid_path;

	int pidfd;
	ev_io pid_w;
	bool alive, is_child, deleted;

	ev_timer life, boot;
	ev_tstamp boot_deadline;
	struct agent_conn *probe;
	sb_ready_fn ready_cb;
	void *ready_ctx;
	char agent_version[64];
	struct envd_sb *envd; /* processes started through envd (envd_proc.c) */
};

struct sb_params {
	const char *template_id;
	long long timeout_s, memory_mb, cpu_count;
	json_t *env, *metadata; /* borrowed; may be NULL */
};

/* Start a sandbox. Returns 0 (cb is called later; *out is the sandbox) or an
 * HTTP status with msg filled in. */
int sb_create(struct kilnd *kd, const struct sb_params *p, sb_ready_fn cb, void *ctx,
              struct sandbox **out, char *msg, size_t msglen);
/* The create request went away: do not call its callback. */
void sb_cancel_ready(struct sandbox *sb);
struct sandbox *sb_find(struct kilnd *kd, const char *id);
/* Kill the VMM and forget the sandbox (its directory too). */
void sb_delete(struct sandbox *sb);
void sb_set_timeout(struct sandbox *sb, long long seconds);
/* Pause a running sandbox (E2B's POST /sandboxes/{id}/pause). Returns 0 when
 * paused, else an HTTP status with msg filled in: 409 while kiln cannot
 * snapshot a sandbox (the E2B SDK then reports "not paused"). */
int sb_pause(struct sandbox *sb, char *msg, size_t msglen);
const char *sb_state_name(enum sb_state s);
json_t *sb_to_json(const struct sandbox *sb);
/* NULL-terminated "NAME=value" list: the sandbox's envVars overlaid with
 * `extra` (an object, may be NULL). Free with sb_env_free(). */
char **sb_env(const struct sandbox *sb, json_t *extra);
void sb_env_free(char **env);

/* Load the store and re-adopt VMMs that are still alive. */
int sb_restore_all(struct kilnd *kd);
/* Periodic: forget dead sandboxes older than cfg.retain_dead. */
void sb_housekeeping(struct kilnd *kd);
void sb_free_all(struct kilnd *kd);

#endif
