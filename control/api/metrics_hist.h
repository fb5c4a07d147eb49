/* SPDX-License-Identifier: MIT */
/* The last hour of each sandbox's resource use, kept by kilnd: every
 * --metrics-interval seconds (default 10) the CPU time and resident memory
 * of each running sandbox's VMM are read (what GET /metrics reports), and
 * the CPU use over the interval is kept with the memory in a ring of one
 * hour's samples per sandbox. GET /sandboxes/{id}/metrics/history answers
 * them; GET /sandboxes/{id}/metrics takes its cpuUsedPct from the latest.
 * A ring goes when its sandbox is no longer listed. */
#ifndef KILND_METRICS_HIST_H
#define KILND_METRICS_HIST_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#define MHIST_KEEP_SECONDS 3600

struct mhist_sample {
	int64_t t_ms;
	float cpu_pct; /* of one CPU, over the interval before t_ms */
	uint64_t rss;  /* bytes */
};

/* One sandbox's samples (metrics_ring.c: no kilnd state, unit-tested). */
struct mhist_ring {
	struct mhist_ring *next;
	char *id;
	int pid;           /* the VMM of the last reading: a resume starts a new one */
	double last_cpu_s; /* its CPU seconds then */
	int64_t last_ms;
	bool primed, seen;
	unsigned cap, head, count; /* head: the next slot written */
	struct mhist_sample s[];
};

struct mhist_ring *mhist_ring_new(const char *id, unsigned cap);
void mhist_ring_free(struct mhist_ring *r);
/* A reading of process pid at now_ms: a sample is kept from the second
 * reading of the same process on (the first is the baseline). */
void mhist_ring_read(struct mhist_ring *r, int pid, int64_t now_ms, double cpu_s, uint64_t rss);
/* The newest sample, or NULL. */
const struct mhist_sample *mhist_ring_last(const struct mhist_ring *r);
/* [{"timestampMs","cpuUsedPct","rssBytes"}...], oldest
 * first, the samples taken at or after since_ms. */
json_t *mhist_ring_json(const struct mhist_ring *r, int64_t since_ms);

struct kilnd;
struct http_conn;
struct sandbox;

/* metrics_hist.c: the sampling timer, from kilnd's start to its end. */
int mhist_start(struct kilnd *kd, double interval);
void mhist_free(struct kilnd *kd);
/* The CPU use of sandbox id over the last interval, or < 0 if unknown. */
double mhist_cpu_pct(struct kilnd *kd, const char *id);
/* GET /sandboxes/{id}/metrics/history: {"intervalSeconds", "samples"}. */
void mhist_respond(struct kilnd *kd, struct http_conn *c, const struct sandbox *sb);

#endif
