/* SPDX-License-Identifier: MIT */
/* A sandbox's ring of resource samples (metrics_hist.h). */
#include <stdlib.h>
#include <string.h>

#include "metrics_hist.h"

struct mhist_ring *mhist_ring_new(const char *id, unsigned cap)
{
	struct mhist_ring *r;

	if (cap == 0)
		return NULL;
	r = calloc(1, sizeof(*r) + (size_t)cap * sizeof(r->s[0]));
	if (!r)
		return NULL;
	r->id = strdup(id);
	if (!r->id) {
		free(r);
		return NULL;
	}
	r->cap = cap;
	return r;
}

void mhist_ring_free(struct mhist_ring *r)
{
	if (r)
		free(r->id);
	free(r);
}

void mhist_ring_read(struct mhist_ring *r, int pid, int64_t now_ms, double cpu_s, uint64_t rss)
{
	struct mhist_sample *s;
	double secs = (double)(now_ms - r->last_ms) / 1000;

	/* a new VMM (resumed, restarted), a clock that went back, or CPU time
	 * that shrank: this reading is a new baseline */
	if (!r->primed || pid != r->pid || secs <= 0 || cpu_s < r->last_cpu_s) {
		r->primed = true;
		r->pid = pid;
		r->last_cpu_s = cpu_s;
		r->last_ms = now_ms;
		return;
	}
	s = &r->s[r->head];
	s->t_ms = now_ms;
	s->cpu_pct = (float)((cpu_s - r->last_cpu_s) / secs * 100);
	s->rss = rss;
	r->head = (r->head + 1) % r->cap;
	if (r->count < r->cap)
		r->count++;
	r->last_cpu_s = cpu_s;
	r->last_ms = now_ms;
}

const struct mhist_sample *mhist_ring_last(const struct mhist_ring *r)
{
	return r->count ? &r->s[(r->head + r->cap - 1) % r->cap] : NULL;
}

json_t *mhist_ring_json(const struct mhist_ring *r, int64_t since_ms)
{
	json_t *arr = json_array();

	for (unsigned i = 0; arr && i < r->count; i++) {
		const struct mhist_sample *s = &r->s[(r->head + r->cap - r->count + i) % r->cap];

		if (s->t_ms < since_ms)
			continue;
		if (json_array_append_new(arr, json_pack("{s:I,s:f,s:I}", "timestampMs",
		                                         (json_int_t)s->t_ms, "cpuUsedPct",
		                                         (double)s->cpu_pct, "rssBytes",
		                                         (json_int_t)s->rss))) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}
