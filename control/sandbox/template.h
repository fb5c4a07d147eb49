/* SPDX-License-Identifier: MIT */
/* Templates: a sandbox booted from an image, warmed up by a command (say
 * `python3 -c 'import numpy, pandas'`), and snapshotted; new sandboxes of
 * the template are copy-on-write clones of that snapshot
 * (kiln-vmm --restore-mode template), up in milliseconds with the warm-up
 * done. Each lives in DATA_DIR/templates/NAME: template.snap and the
 * decompressed memory the first clone makes (kiln-template-<id>.mem),
 * which every clone maps. Records are in the store. Templates and images
 * share one namespace: Sandbox.create(NAME) finds either. */
#ifndef KILND_TEMPLATE_H
#define KILND_TEMPLATE_H

#include "kilnd.h"
#include "sandbox.h"
#include "store.h"

struct template
{
	struct template *next;
	struct tmpl_record rec;
	struct net_policy policy; /* its clones' egress policy (rec.net_json) */
	char *dir, *snap_path;
	ev_tstamp pool_retry_at; /* a pool clone failed to start: not before then */
};

#define POOL_MAX 64 /* clones in one template's pool */

/* Load the templates from the store (dropping those whose snapshot is
 * gone). 0, or -errno. */
int tmpl_load_all(struct kilnd *kd);
void tmpl_free_all(struct kilnd *kd);
struct template *tmpl_find(struct kilnd *kd, const char *name);
/* Fill the files, memory, vCPUs and snapshot of a clone of t into p. */
void tmpl_clone_params(struct kilnd *kd, const struct template *t, struct sb_params *p);
/* "a, b" or "none", for messages (malloc'd). */
char *tmpl_names(struct kilnd *kd, const struct http_who *who);

/* ---- pool.c: warm pools ----
 * A template with rec.pool = N keeps N clones started ahead: sandboxes
 * flagged SB_F_POOL (not listed, not reachable by id), waiting with no
 * lifetime. A create from the template takes a running one (pool_take)
 * and the pool is refilled in the background. Pool clones count against
 * --max-sandboxes: they are only started below it, and a sandbox that
 * needs the room evicts one (pool_evict). */

/* A running clone from t's pool, now an ordinary sandbox with p's
 * lifetime, envVars, metadata and autoPause; NULL if none is ready. */
struct sandbox *pool_take(struct kilnd *kd, struct template *t, const struct sb_params *p);
/* Stop one pool clone to make room for another sandbox: false if none. */
bool pool_evict(struct kilnd *kd);
/* Stop every clone of the pool of template `name` (it is being removed). */
void pool_drain(struct kilnd *kd, const char *name);
/* Clones of t's pool: all live ones, or only those ready to be taken
 * (running, and primed: a first command ran in them). */
unsigned pool_count(struct kilnd *kd, const struct template *t, bool ready_only);
/* Soon (after `delay` seconds, unless asked sooner): forget dead pool
 * clones and those of removed templates, prime new ones, and start clones
 * until every pool is full. */
void pool_kick(struct kilnd *kd, double delay);

#endif
