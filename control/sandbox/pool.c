/* SPDX-License-Identifier: MIT */
/* Warm pools of templates (template.h): clones started ahead, so that a
 * create from the template answers at once with a sandbox whose agent is
 * up. A pool clone is an ordinary sandbox flagged SB_F_POOL (persisted:
 * a restarted kilnd finds its pools again) with a lifetime far away; a
 * create claims one (sb_claim) and the pool is refilled shortly after. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_run.h"
#include "template.h"
#include "util.h"

#define POOL_LIFETIME (10LL * 365 * 86400) /* a pooled clone waits until taken */
#define POOL_RETRY    10.0                 /* seconds after a clone failed to start */
#define PRIME_TIMEOUT 10000                /* ms for the priming command */
/* After a clone is taken: its first command goes first, not competing
 * for the CPUs with the restore of its successor. */
#define REFILL_DELAY 0.1

/* A clone's first command costs ~4x the next ones (its memory is the
 * template's, copied on first write; the guest's paths are cold): each
 * pool clone runs one before it is offered, so the user's is not it. */
struct prime {
	struct kilnd *kd;
	char id[SB_ID_LEN + 1];
};

static void primed(void *ctx, const struct agent_run_result *r, const char *err)
{
	struct prime *pr = ctx;
	struct sandbox *sb = sb_find(pr->kd, pr->id);

	if (sb && sb->rec.flags & SB_F_POOL) {
		if (err)
			log_warn("sandbox %s: priming the pool clone: %s", sb->rec.id, err);
		sb->pool_priming = false;
		sb->pool_primed = true; /* offered first from now on, ran or not */
	}
	free(pr);
}

static void prime(struct kilnd *kd, struct sandbox *sb)
{
	static const char *const argv[] = {"/bin/sh", "-c", ":", NULL};
	static const char *const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	struct prime *pr = calloc(1, sizeof(*pr));

	if (!pr)
		return;
	pr->kd = kd;
	snprintf(pr->id, sizeof(pr->id), "%s", sb->rec.id);
	sb->pool_priming = true;
	if (!agent_run(kd->loop, sb->vsock_path, argv, env, PRIME_TIMEOUT, primed, pr)) {
		sb->pool_priming = false;
		sb->pool_primed = true;
		free(pr);
	}
}

static bool pool_of(const struct sandbox *sb, const char *name)
{
	return sb->rec.flags & SB_F_POOL && !strcmp(sb->rec.template_id, name);
}

unsigned pool_count(struct kilnd *kd, const struct template *t, bool ready_only)
{
	unsigned n = 0;

	for (struct sandbox *sb = kd->sandboxes; sb; sb = sb->next)
		if (pool_of(sb, t->rec.name) &&
		    (ready_only ? sb->state == SB_RUNNING && sb->pool_primed
		                : sb_is_live(sb->state)))
			n++;
	return n;
}

static void pool_ready(void *ctx, struct sandbox *sb, int err, const char *msg)
{
	struct kilnd *kd = ctx;
	struct template *t;

	if (!err) {
		log_debug("sandbox %s: ready in the pool of %s", sb->rec.id, sb->rec.template_id);
		pool_kick(kd, 0); /* primes it */
		return;
	}
	if (err == -ECANCELED)
		return; /* drained or evicted */
	t = tmpl_find(kd, sb->rec.template_id);
	log_warn("template %s: a clone for its pool did not start (retrying in %.0f s): %s",
	         sb->rec.template_id, POOL_RETRY, msg);
	if (t)
		t->pool_retry_at = ev_now(kd->loop) + POOL_RETRY;
}

static void refill(struct kilnd *kd, struct template *t)
{
	unsigned have = pool_count(kd, t, false);
	struct sandbox *sb;
	char msg[512];

	if (have >= (unsigned)t->rec.pool || ev_now(kd->loop) < t->pool_retry_at)
		return;
	while (have < (unsigned)t->rec.pool && kd->nsandboxes < kd->cfg.max_sandboxes) {
		struct sb_params p = {
		    .template_id = t->rec.name,
		    .timeout_s = POOL_LIFETIME,
		    .pool = true,
		};
		int status;

		tmpl_clone_params(kd, t, &p);
		status = sb_create(kd, &p, pool_ready, kd, &sb, msg, sizeof(msg));
		if (status) {
			log_warn("template %s: cannot start a clone for its pool: %s", t->rec.name,
			         msg);
			t->pool_retry_at = ev_now(kd->loop) + POOL_RETRY;
			return;
		}
		have++;
	}
}

static void on_pool_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct kilnd *kd = w->data;
	struct sandbox *sb, *next;

	for (sb = kd->sandboxes; sb; sb = next) {
		next = sb->next;
		if (!(sb->rec.flags & SB_F_POOL))
			continue;
		/* Dead ones are of no use to anyone; neither are clones of a
		 * template that is gone. */
		if (!sb_is_live(sb->state) || !tmpl_find(kd, sb->rec.template_id))
			sb_delete(sb);
		else if (sb->state == SB_RUNNING && !sb->pool_primed && !sb->pool_priming)
			prime(kd, sb); /* new, or re-adopted after a restart */
	}
	for (struct template *t = kd->templates; t; t = t->next)
		refill(kd, t);
}

void pool_kick(struct kilnd *kd, double delay)
{
	if (ev_is_active(&kd->pool_timer) && ev_timer_remaining(kd->loop, &kd->pool_timer) <= delay)
		return;
	ev_timer_stop(kd->loop, &kd->pool_timer);
	ev_timer_init(&kd->pool_timer, on_pool_timer, delay, 0);
	kd->pool_timer.data = kd;
	ev_timer_start(kd->loop, &kd->pool_timer);
}

struct sandbox *pool_take(struct kilnd *kd, struct template *t, const struct sb_params *p)
{
	/* A primed clone if there is one, else any that runs. */
	for (int pass = 0; pass < 2; pass++) {
		for (struct sandbox *sb = kd->sandboxes; sb; sb = sb->next) {
			if (!pool_of(sb, t->rec.name) || sb->state != SB_RUNNING || sb->call ||
			    sb->waiters || (!pass && !sb->pool_primed))
				continue;
			sb_claim(sb, p);
			log_info("sandbox %s: taken from the pool of %s (%u left)", sb->rec.id,
			         t->rec.name, pool_count(kd, t, true));
			pool_kick(kd, REFILL_DELAY);
			return sb;
		}
	}
	if (t->rec.pool)
		log_info("template %s: its pool is empty, cloning", t->rec.name);
	return NULL;
}

bool pool_evict(struct kilnd *kd)
{
	struct sandbox *victim = NULL;

	/* One still starting costs least to give up; else any. */
	for (struct sandbox *sb = kd->sandboxes; sb; sb = sb->next)
		if (sb->rec.flags & SB_F_POOL && sb_is_live(sb->state) &&
		    (!victim || sb->state == SB_STARTING))
			victim = sb;
	if (!victim)
		return false;
	log_info("sandbox %s: leaves the pool of %s to make room (--max-sandboxes %u)",
	         victim->rec.id, victim->rec.template_id, kd->cfg.max_sandboxes);
	sb_delete(victim);
	return true;
}

void pool_drain(struct kilnd *kd, const char *name)
{
	struct sandbox *sb, *next;

	for (sb = kd->sandboxes; sb; sb = next) {
		next = sb->next;
		if (pool_of(sb, name))
			sb_delete(sb);
	}
}
