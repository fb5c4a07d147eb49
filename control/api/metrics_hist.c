/* SPDX-License-Identifier: MIT */
/* Sampling each sandbox's resource use into its ring (metrics_hist.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "api.h"
#include "http/jsonutil.h"
#include "metrics_hist.h"
#include "sandbox/sandbox.h"
#include "util.h"

struct mhist {
	ev_timer timer;
	struct kilnd *kd;
	double interval;
	unsigned cap; /* samples per ring: an hour's */
	struct mhist_ring *rings;
};

static struct mhist_ring *find(struct mhist *h, const char *id)
{
	for (struct mhist_ring *r = h->rings; r; r = r->next)
		if (!strcmp(r->id, id))
			return r;
	return NULL;
}

static void sample(struct mhist *h)
{
	int64_t now = now_ms();

	for (struct mhist_ring *r = h->rings; r; r = r->next)
		r->seen = false;
	for (struct sandbox *sb = h->kd->sandboxes; sb; sb = sb->next) {
		struct mhist_ring *r = find(h, sb->rec.id);
		unsigned long long rss, pss;
		double cpu;

		if (r)
			r->seen = true; /* kept while the sandbox is listed (paused too) */
		if (sb->state != SB_RUNNING || !sb->alive || (sb->rec.flags & SB_F_POOL))
			continue;
		cpu = api_proc_cpu_seconds(sb->rec.pid);
		if (cpu < 0 || !api_proc_memory(sb->rec.pid, &rss, &pss))
			continue;
		if (!r) {
			r = mhist_ring_new(sb->rec.id, h->cap);
			if (!r)
				continue; /* out of memory: no history for it */
			r->seen = true;
			r->next = h->rings;
			h->rings = r;
		}
		mhist_ring_read(r, sb->rec.pid, now, cpu, rss);
	}
	for (struct mhist_ring **pp = &h->rings; *pp;) {
		struct mhist_ring *r = *pp;

		if (r->seen) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		mhist_ring_free(r);
	}
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	sample(w->data);
}

int mhist_start(struct kilnd *kd, double interval)
{
	struct mhist *h;

	if (!(interval >= 1 && interval <= 60))
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->kd = kd;
	h->interval = interval;
	h->cap = (unsigned)(MHIST_KEEP_SECONDS / interval) + 1;
	ev_timer_init(&h->timer, on_timer, interval, interval);
	h->timer.data = h;
	ev_timer_start(kd->loop, &h->timer);
	kd->mhist = h;
	return 0;
}

void mhist_free(struct kilnd *kd)
{
	struct mhist *h = kd->mhist;

	if (!h)
		return;
	ev_timer_stop(kd->loop, &h->timer);
	while (h->rings) {
		struct mhist_ring *r = h->rings;

		h->rings = r->next;
		mhist_ring_free(r);
	}
	free(h);
	kd->mhist = NULL;
}

double mhist_cpu_pct(struct kilnd *kd, const char *id)
{
	struct mhist_ring *r = kd->mhist ? find(kd->mhist, id) : NULL;
	const struct mhist_sample *s = r ? mhist_ring_last(r) : NULL;

	/* a sample older than two intervals is of a VMM that paused since */
	if (!s || (double)(now_ms() - s->t_ms) > 2000 * kd->mhist->interval)
		return -1;
	return s->cpu_pct;
}

void mhist_respond(struct kilnd *kd, struct http_conn *c, const struct sandbox *sb)
{
	struct mhist *h = kd->mhist;
	struct mhist_ring *r = h ? find(h, sb->rec.id) : NULL;
	int64_t since = now_ms() - MHIST_KEEP_SECONDS * 1000;
	json_t *samples = r ? mhist_ring_json(r, since) : json_array();

	if (!samples) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	http_respond_json(
	    c, 200,
	    json_pack("{s:f,s:o}", "intervalSeconds", h ? h->interval : 0.0, "samples", samples));
}
