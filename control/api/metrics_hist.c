/* SPDX-License-Identifier: MIT */
/* Sampling each sandbox's resource use into its ring (metrics_hist.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "agent/spare.h"
#include "api.h"
#include "http/jsonutil.h"
#include "metrics_hist.h"
#include "sandbox/sandbox.h"
#include "sandbox/vmm_api.h"
#include "util.h"

/* A VMM that has not answered its metrics by then is asked again next time. */
#define VMM_TIMEOUT 2.0

struct mhist {
	ev_timer timer;
	struct kilnd *kd;
	double interval;
	unsigned cap; /* samples per ring: an hour's */
	struct mhist_ring *rings;
};

/* The questions asked of one sandbox in one interval: its agent's INFO
 * (memory in use) and its VMM's metrics (vsock bytes). It goes when both
 * are answered, or with its ring. */
struct mhist_probe {
	struct mhist_ring *r;
	struct agent_conn *a;
	struct vmm_call *vc;
	int pid; /* the VMM asked */
	bool hello, reuse;
};

static void probe_end(struct mhist_probe *p)
{
	if (p->a || p->vc)
		return;
	p->r->probe = NULL;
	free(p);
}

static void probe_cancel(struct mhist_ring *r)
{
	struct mhist_probe *p = r->probe;

	if (!p)
		return;
	agent_close(p->a);
	if (p->vc)
		vmm_call_cancel(p->vc);
	r->probe = NULL;
	free(p);
}

static void info_frame(void *ctx, uint16_t type, const uint8_t *b, uint32_t n)
{
	struct mhist_probe *p = ctx;
	struct mhist_live *l = &p->r->live;
	struct agent_info info;
	uint32_t v, kind;

	if (type == KILN_MSG_HELLO && !p->hello && !agent_parse_hello(b, n, &v, &kind)) {
		p->hello = true;
		p->reuse = kind & KILN_HELLO_REUSE;
		return;
	}
	if (type == KILN_MSG_INFO && p->hello && !agent_parse_info(b, n, &info)) {
		/* the guest's word: believed only when it adds up */
		if (info.mem_free_kb <= info.mem_total_kb && info.mem_total_kb < (1ULL << 40)) {
			l->guest_mem_used = (info.mem_total_kb - info.mem_free_kb) << 10;
			l->guest_mem_total = info.mem_total_kb << 10;
			l->guest_ms = now_ms();
		}
		spare_release(&p->a, p->reuse);
	} else {
		agent_close(p->a);
		p->a = NULL;
	}
	probe_end(p);
}

static void info_close(void *ctx, int err)
{
	struct mhist_probe *p = ctx;

	p->a = NULL;
	probe_end(p);
}

static const struct agent_conn_ops info_ops = {.on_frame = info_frame, .on_close = info_close};

static bool get_u64(json_t *o, const char *key, uint64_t *v)
{
	json_t *j = json_object_get(o, key);

	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (uint64_t)json_integer_value(j);
	return true;
}

static void vmm_answer(void *ctx, json_t *reply, const char *err)
{
	struct mhist_probe *p = ctx;
	struct mhist_live *l = &p->r->live;
	json_t *vs = reply && !err ? json_object_get(reply, "vsock") : NULL;
	uint64_t rx, tx;

	p->vc = NULL;
	if (vs && get_u64(vs, "rx_bytes", &rx) && get_u64(vs, "tx_bytes", &tx)) {
		if (p->pid != l->vsock_pid) { /* a new VMM counts from 0 */
			l->base_rx += l->rx;
			l->base_tx += l->tx;
			l->vsock_pid = p->pid;
		}
		if (rx >= l->rx && tx >= l->tx) {
			l->rx = rx;
			l->tx = tx;
		}
	}
	probe_end(p);
}

/* Ask r's sandbox, unless last interval's questions are still open. */
static void probe_start(struct mhist_ring *r, struct sandbox *sb)
{
	struct mhist_probe *p;
	json_t *req;

	if (r->probe || !(p = calloc(1, sizeof(*p))))
		return;
	p->r = r;
	p->pid = sb->rec.pid;
	r->probe = p;
	req = json_pack("{s:s}", "op", "metrics");
	if (req && sb->api_path)
		p->vc = vmm_call(sb->kd->loop, sb->api_path, req, VMM_TIMEOUT, vmm_answer, p);
	json_decref(req);
	p->a = spare_take(sb, &info_ops, p);
	if (p->a && agent_msg_hello(agent_out(p->a), KILN_STREAM_INFO, KILN_FRAME_REUSE)) {
		agent_close(p->a);
		p->a = NULL;
	}
	if (p->a)
		agent_flush(p->a);
	probe_end(p);
}

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
		probe_start(r, sb);
	}
	for (struct mhist_ring **pp = &h->rings; *pp;) {
		struct mhist_ring *r = *pp;

		if (r->seen) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		probe_cancel(r);
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
		probe_cancel(r);
		mhist_ring_free(r);
	}
	free(h);
	kd->mhist = NULL;
}

const struct mhist_live *mhist_live(struct kilnd *kd, const char *id)
{
	struct mhist_ring *r = kd->mhist ? find(kd->mhist, id) : NULL;

	return r ? &r->live : NULL;
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
