/* SPDX-License-Identifier: MIT */
/*
 * GET /metrics: kilnd in Prometheus's text exposition format (0.0.4). The
 * latencies are of the API's own answers (http_set_tag on the routes that
 * start, pause, resume, fork or exec; the observer below counts them), the
 * rest is read from the sandboxes and their VMM processes at scrape time:
 * nothing is kept per sandbox beyond its life.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "metrics_hist.h"
#include "http/buf.h"
#include "net/net.h"
#include "sandbox/sandbox.h"
#include "sandbox/store.h"
#include "sandbox/template.h"
#include "util.h"

static const char *const op_names[API_OP_MAX] = {
    [API_OP_CREATE] = "create",   [API_OP_PAUSE] = "pause", [API_OP_RESUME] = "resume",
    [API_OP_CONNECT] = "connect", [API_OP_FORK] = "fork",   [API_OP_EXEC] = "exec",
};

/* Upper bounds, seconds: from a warm-pool create (~2 ms) to a long exec. */
static const double bounds[API_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                           0.25,  0.5,    1,     2.5,  5,     10,   30};

void api_observe(void *udata, unsigned tag, int status, double seconds)
{
	struct kilnd *kd = udata;
	struct api_op_stats *o;

	if (!tag || tag >= API_OP_MAX || seconds < 0)
		return;
	o = &kd->ops[tag];
	o->count[status >= 400]++;
	o->sum += seconds;
	for (unsigned i = 0; i < API_BUCKETS; i++)
		if (seconds <= bounds[i])
			o->bucket[i]++;
}

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		buf_append(b, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void family(struct buf *b, const char *name, const char *type, const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

double api_proc_cpu_seconds(int pid)
{
	char path[64], line[1024], *p;
	unsigned long long ut, st;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	p = fgets(line, sizeof(line), f);
	fclose(f);
	/* After the command's closing parenthesis: fields 3 on; utime and
	 * stime are the 14th and 15th. */
	if (!p || !(p = strrchr(line, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

bool api_proc_memory(int pid, unsigned long long *rss, unsigned long long *pss)
{
	char path[64], line[256];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
	if (!(f = fopen(path, "r")))
		return false;
	*rss = *pss = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Rss: %llu kB", &v) == 1)
			*rss = v << 10;
		else if (sscanf(line, "Pss: %llu kB", &v) == 1)
			*pss = v << 10;
	}
	fclose(f);
	return true;
}

static void ops(struct kilnd *kd, struct buf *b)
{
	family(b, "kiln_api_operations_total", "counter",
	       "Sandbox operations the API answered, by operation and result.");
	for (unsigned t = 1; t < API_OP_MAX; t++)
		for (int e = 0; e < 2; e++)
			put(b, "kiln_api_operations_total{op=\"%s\",result=\"%s\"} %llu\n",
			    op_names[t], e ? "error" : "ok",
			    (unsigned long long)kd->ops[t].count[e]);
	family(b, "kiln_api_operation_seconds", "histogram",
	       "Time from a request to its whole answer (for exec: to the command's end).");
	for (unsigned t = 1; t < API_OP_MAX; t++) {
		const struct api_op_stats *o = &kd->ops[t];

		for (unsigned i = 0; i < API_BUCKETS; i++)
			put(b, "kiln_api_operation_seconds_bucket{op=\"%s\",le=\"%g\"} %llu\n",
			    op_names[t], bounds[i], (unsigned long long)o->bucket[i]);
		put(b, "kiln_api_operation_seconds_bucket{op=\"%s\",le=\"+Inf\"} %llu\n",
		    op_names[t], (unsigned long long)(o->count[0] + o->count[1]));
		put(b, "kiln_api_operation_seconds_sum{op=\"%s\"} %.6f\n", op_names[t], o->sum);
		put(b, "kiln_api_operation_seconds_count{op=\"%s\"} %llu\n", op_names[t],
		    (unsigned long long)(o->count[0] + o->count[1]));
	}
}

/* What the sampler last heard from each sandbox's guest and VMM
 * (metrics_hist.h): at most one --metrics-interval old. */
static void live(struct kilnd *kd, struct buf *b)
{
	const struct sandbox *sb;
	const struct mhist_live *l;
	int64_t fresh = now_ms() - (int64_t)(2000 * kd->cfg.metrics_interval);

	family(b, "kiln_sandbox_guest_memory_used_bytes", "gauge",
	       "Memory in use as each running sandbox's guest reports it (total less free).");
	family(b, "kiln_sandbox_guest_memory_bytes", "gauge",
	       "Memory each running sandbox's guest has in all, as it reports it.");
	for (sb = kd->sandboxes; sb; sb = sb->next)
		if (sb->state == SB_RUNNING && (l = mhist_live(kd, sb->rec.id)) &&
		    l->guest_ms > fresh) {
			put(b, "kiln_sandbox_guest_memory_used_bytes{sandbox=\"%s\"} %llu\n",
			    sb->rec.id, (unsigned long long)l->guest_mem_used);
			put(b, "kiln_sandbox_guest_memory_bytes{sandbox=\"%s\"} %llu\n", sb->rec.id,
			    (unsigned long long)l->guest_mem_total);
		}
	family(b, "kiln_sandbox_vsock_bytes_total", "counter",
	       "Stream bytes over each sandbox's vsock device since it was created, by direction "
	       "(every exec, file, pty, port, CDP and egress byte).");
	for (sb = kd->sandboxes; sb; sb = sb->next)
		if ((l = mhist_live(kd, sb->rec.id)) && l->vsock_pid) {
			put(b,
			    "kiln_sandbox_vsock_bytes_total{sandbox=\"%s\",direction=\"from_"
			    "guest\"} "
			    "%llu\n",
			    sb->rec.id, (unsigned long long)(l->base_rx + l->rx));
			put(b,
			    "kiln_sandbox_vsock_bytes_total{sandbox=\"%s\",direction=\"to_guest\"} "
			    "%llu\n",
			    sb->rec.id, (unsigned long long)(l->base_tx + l->tx));
		}
}

static void sandboxes(struct kilnd *kd, struct buf *b)
{
	static const enum sb_state states[] = {SB_STARTING, SB_RUNNING, SB_PAUSING, SB_PAUSED,
	                                       SB_RESUMING, SB_KILLED,  SB_ERROR};
	const struct sandbox *sb;
	unsigned pool = 0;

	family(b, "kiln_sandboxes", "gauge", "Sandboxes by state (warm-pool clones not included).");
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		unsigned n = 0;

		for (sb = kd->sandboxes; sb; sb = sb->next)
			n += sb->state == states[i] && !(sb->rec.flags & SB_F_POOL);
		put(b, "kiln_sandboxes{state=\"%s\"} %u\n", sb_state_name(states[i]), n);
	}
	for (sb = kd->sandboxes; sb; sb = sb->next)
		pool += (sb->rec.flags & SB_F_POOL) && sb->state == SB_RUNNING;
	family(b, "kiln_pool_clones", "gauge", "Warm-pool clones started ahead, all templates.");
	put(b, "kiln_pool_clones %u\n", pool);

	family(b, "kiln_sandbox_cpu_seconds_total", "counter",
	       "CPU time of each running sandbox's VMM process (guest and devices).");
	for (sb = kd->sandboxes; sb; sb = sb->next) {
		double s = sb->alive ? api_proc_cpu_seconds(sb->rec.pid) : -1;

		if (s >= 0 && !(sb->rec.flags & SB_F_POOL))
			put(b, "kiln_sandbox_cpu_seconds_total{sandbox=\"%s\"} %.2f\n", sb->rec.id,
			    s);
	}
	family(b, "kiln_sandbox_memory_rss_bytes", "gauge",
	       "Resident memory of each running sandbox's VMM process, guest RAM included.");
	family(b, "kiln_sandbox_memory_pss_bytes", "gauge",
	       "The same shared out (template memory and images counted once across clones).");
	for (sb = kd->sandboxes; sb; sb = sb->next) {
		unsigned long long rss, pss;

		if (sb->alive && !(sb->rec.flags & SB_F_POOL) &&
		    api_proc_memory(sb->rec.pid, &rss, &pss)) {
			put(b, "kiln_sandbox_memory_rss_bytes{sandbox=\"%s\"} %llu\n", sb->rec.id,
			    rss);
			put(b, "kiln_sandbox_memory_pss_bytes{sandbox=\"%s\"} %llu\n", sb->rec.id,
			    pss);
		}
	}
	live(kd, b);
	family(b, "kiln_sandbox_snapshot_bytes", "gauge",
	       "Disk taken by each paused sandbox's snapshot.");
	for (sb = kd->sandboxes; sb; sb = sb->next) {
		struct stat st;

		if (sb->state == SB_PAUSED && sb->snap_path && !stat(sb->snap_path, &st))
			put(b, "kiln_sandbox_snapshot_bytes{sandbox=\"%s\"} %llu\n", sb->rec.id,
			    (unsigned long long)st.st_blocks * 512);
	}
}

/* UDP egress (control/net/udp.c), from each sandbox's network counters. */
static void udp(struct kilnd *kd, struct buf *b)
{
	static const struct {
		const char *name, *help, *key[2];
	} m[] = {
	    {"kiln_sandbox_udp_datagrams_total",
	     "UDP datagrams each sandbox sent off the guest (out) and got back (in).",
	     {"udpDatagramsOut", "udpDatagramsIn"}},
	    {"kiln_sandbox_udp_bytes_total", "Their payload bytes.", {"udpBytesOut", "udpBytesIn"}},
	    {"kiln_sandbox_udp_refused_total",
	     "UDP datagrams the sandbox's policy refused.",
	     {"udpRefused"}},
	    {"kiln_sandbox_udp_dropped_total",
	     "UDP datagrams dropped: past the sandbox's rate, a full buffer, an answer from "
	     "where the socket never sent, a failed host send.",
	     {"udpDropped"}},
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		family(b, m[i].name, "counter", m[i].help);
		for (const struct sandbox *sb = kd->sandboxes; sb; sb = sb->next) {
			json_t *j;

			if (!sb->net || (sb->rec.flags & SB_F_POOL) || !(j = net_sb_metrics(sb)))
				continue;
			for (int d = 0; d < 2 && m[i].key[d]; d++)
				put(b, "%s{sandbox=\"%s\"%s} %lld\n", m[i].name, sb->rec.id,
				    !m[i].key[1] ? ""
				    : d          ? ",direction=\"in\""
				                 : ",direction=\"out\"",
				    (long long)json_integer_value(json_object_get(j, m[i].key[d])));
			json_decref(j);
		}
	}
}

void api_metrics(struct kilnd *kd, struct http_conn *c)
{
	struct buf b = {0};
	unsigned nt = 0;

	ops(kd, &b);
	events_metrics(kd, &b);
	sandboxes(kd, &b);
	udp(kd, &b);
	for (const struct template *t = kd->templates; t; t = t->next)
		nt++;
	family(&b, "kiln_templates", "gauge", "Templates kilnd has.");
	put(&b, "kiln_templates %u\n", nt);
	family(&b, "kiln_http_connections", "gauge", "Open HTTP connections to kilnd.");
	put(&b, "kiln_http_connections %u\n", http_server_conns(kd->http));
	http_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, buf_head(&b),
	             buf_avail(&b));
	buf_free(&b);
}
