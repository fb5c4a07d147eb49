/* SPDX-License-Identifier: MIT */
/* Auto-resume (wake.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "wake.h"

struct wake {
	struct kilnd *kd;
	struct http_conn *c;
	struct sandbox *sb;
	struct sb_waiter *w; /* while waiting */
	const struct wake_ops *ops;
	void *ctx;
	bool waiting, held;
	ev_tstamp since;
	char what[64];
};

bool sb_wakeable(const struct sandbox *sb)
{
	return sb->state == SB_PAUSED || sb->state == SB_PAUSING || sb->state == SB_RESUMING ||
	       sb->state == SB_STARTING;
}

static void wake_abort(void *ctx)
{
	struct wake *k = ctx;

	/* The resume goes on (others may wait for it); this request is gone. */
	sb_waiter_cancel(k->sb, k->w);
	k->ops->drop(k->ctx);
	free(k);
}

static const struct http_handler wake_http = {.on_abort = wake_abort};

static void wake_done(void *ctx, struct sandbox *sb, int status, const char *msg)
{
	struct wake *k = ctx;
	char text[256];

	if (k->waiting) {
		http_set_handler(k->c, NULL, NULL, 0);
		/* Parsing goes on from the loop: the handler that run()
		 * installs now takes the body. */
		if (k->held)
			http_release(k->c);
	}
	if ((status == 200 || status == 201) && sb && sb->state == SB_RUNNING) {
		if (k->waiting)
			log_debug("sandbox %s: %s served after %.1f ms", sb->rec.id, k->what,
			          (ev_now(k->kd->loop) - k->since) * 1e3);
		k->ops->run(k->ctx, sb);
	} else if (status == 200 || status == 201) {
		/* Paused again before this request's turn: cannot happen (the
		 * queue is decided in order), but never serve a stopped VM. */
		sb_not_running(sb, text, sizeof(text));
		k->ops->fail(k->ctx, 409, text);
	} else {
		k->ops->fail(k->ctx, status, msg ? msg : "the sandbox could not be resumed");
	}
	free(k);
}

void sb_wake(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, const char *what,
             unsigned flags, const struct wake_ops *ops, void *ctx)
{
	long long timeout_s = sb->rec.timeout_s;
	struct sb_waiter *w;
	struct wake *k;
	char msg[256];

	if (sb->state == SB_RUNNING) {
		ops->run(ctx, sb);
		return;
	}
	if (!sb_wakeable(sb)) {
		sb_not_running(sb, msg, sizeof(msg));
		ops->fail(ctx, 409, msg);
		return;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		ops->fail(ctx, 500, "out of memory");
		return;
	}
	k->kd = kd;
	k->c = c;
	k->sb = sb;
	k->ops = ops;
	k->ctx = ctx;
	k->since = ev_now(kd->loop);
	snprintf(k->what, sizeof(k->what), "%s", what);
	log_info("sandbox %s: %s finds it %s: %s", sb->rec.id, what, sb_state_name(sb->state),
	         sb->state == SB_PAUSED ? "resuming it" : "waiting for it to run");
	/* As E2B: the lifetime starts again, as long as at creation. */
	if (timeout_s <= 0 || timeout_s > kd->cfg.max_timeout)
		timeout_s = timeout_s > 0 ? kd->cfg.max_timeout : 0;
	w = sb_request(sb, SB_OP_RESUME, timeout_s, wake_done, k);
	if (!w)
		return; /* decided already (and k freed) */
	k->w = w;
	k->waiting = true;
	k->held = flags & WAKE_HOLD;
	if (k->held)
		http_hold(c);
	http_set_handler(c, &wake_http, k, 0);
}
