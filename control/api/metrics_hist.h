/* SPDX-License-Identifier: MIT */
/* The last hour of each sandbox's resource use, kept by kilnd: every
 * --metrics-interval seconds (default 10) the CPU time and resident memory
 * of each running sandbox's VMM are read (what GET /metrics reports), and
 * the CPU use over the interval is kept with the memory in a ring of one
 * hour's samples per sandbox. The guest's agent is asked its memory in use
 * and the VMM its vsock byte counts at the same time (struct mhist_live). GET /sandboxes/{id}/metrics/history answers
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

/* What the guest and its VMM last said, asked once per interval
 * (metrics_hist.c); GET /metrics reports it. */
struct mhist_live {
	int64_t guest_ms; /* when the agent last answered; 0: never */
	uint64_t guest_mem_used, guest_mem_total;
	/* vsock payload bytes from and to the guest: earlier VMMs' (base_*)
	 * plus what the VMM of vsock_pid counted at its last answer */
	int vsock_pid;
	uint64_t base_rx, base_tx, rx, tx;
};

/* One sandbox's samples (metrics_ring.c: no kilnd state, unit-tested). */
struct mhist_ring {
	struct mhist_ring *next;
	char *id;
	struct mhist_live live;
	struct mhist_probe *probe; /* metrics_hist.c's questions in flight */
	int pid;                   /* the VMM of the last reading: a resume starts a new one */
	double last_cpu_s;         /* its CPU seconds then */
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
/* What sandbox id's guest and VMM last reported, or NULL. */
const struct mhist_live *mhist_live(struct kilnd *kd, const char *id);
/* The CPU use of sandbox id over the last interval, or < 0 if unknown. */
double mhist_cpu_pct(struct kilnd *kd, const char *id);
/* GET /sandboxes/{id}/metrics/history: {"intervalSeconds", "samples"}. */
void mhist_respond(struct kilnd *kd, struct http_conn *c, const struct sandbox *sb);

#endif
