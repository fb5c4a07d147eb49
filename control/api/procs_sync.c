/* SPDX-License-Identifier: MIT */
/* The commands kilnd started but never heard STARTED of: a pause (or a
 * kilnd restart) came between its START and the agent's answer. They are
 * listed as starting under the tag their START carried (procs.h, and
 * envd's table: envd_proc.h htag); after the resume, or when a restarted
 * kilnd takes the sandbox back, the agent's procs stream says which of
 * them run, and as what pid. Those become detached processes like any a
 * pause detached (kiln attach, process.Connect reach them); the rest never
 * started and are dropped. Agents without KILN_HELLO_PROCS get no tags,
 * so nothing of theirs is ever starting. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "agent/agent_client.h"
#include "envd/envd_proc.h"
#include "http/connectrpc.h"
#include "procs.h"
#include "sandbox/sandbox.h"
#include "util.h"

static bool any_starting(const struct sandbox *sb)
{
	for (const struct kproc *p = sb->procs ? sb->procs->head : NULL; p; p = p->next)
		if (p->starting)
			return true;
	for (const struct envd_proc *e = sb->envd ? sb->envd->procs : NULL; e; e = e->next)
		if (!e->started && e->suspended && e->htag)
			return true;
	return false;
}

/* The agent runs pr: the starting entry of its tag has it. */
static void sync_found(struct sandbox *sb, const struct agent_proc *pr)
{
	struct kproc *k = procs_find_tag(sb, pr->tag);
	bool pty = pr->kind == KILN_STREAM_PTY;

	if (k && k->pty == pty) {
		procs_add(sb, pr->pid, pty, k->cmd, pr->tag);
		k->attached = false;
		log_info("sandbox %s: command %" PRIx64
		         " that was starting runs as pid %u, detached",
		         sb->rec.id, pr->tag, pr->pid);
		return;
	}
	for (struct envd_proc *e = sb->envd ? sb->envd->procs : NULL; e; e = e->next) {
		if (e->started || !e->suspended || e->htag != pr->tag || e->pty != pty)
			continue;
		e->pid = pr->pid;
		e->started = true; /* still suspended: attached by envd_sandbox_reattach */
		e->started_ms = now_ms();
		procs_changed(sb);
		log_info("sandbox %s: envd process %" PRIx64 " that was starting runs as pid %u",
		         sb->rec.id, pr->tag, pr->pid);
		return;
	}
}

/* The agent's list is complete: what is still starting never started. */
static void sync_drop_rest(struct sandbox *sb)
{
	struct kproc *k, *knext;
	struct envd_proc *e, *enext;

	for (k = sb->procs ? sb->procs->head : NULL; k; k = knext) {
		knext = k->next;
		if (!k->starting)
			continue;
		log_info("sandbox %s: command %" PRIx64 " that was starting never started",
		         sb->rec.id, k->tag);
		procs_drop(sb, k);
	}
	for (e = sb->envd ? sb->envd->procs : NULL; e; e = enext) {
		enext = e->next;
		if (!e->started && e->suspended && e->htag)
			envd_proc_end(e, CRPC_NOT_FOUND, "the process never started");
	}
}

static void sync_end(struct sandbox *sb)
{
	struct procs_sb *ps = sb->procs;
	void (*done)(struct sandbox * sb) = ps->synced;

	agent_close(ps->sync);
	ps->sync = NULL;
	ps->synced = NULL;
	ev_timer_stop(sb->kd->loop, &ps->sync_limit);
	if (done)
		done(sb);
}

static void sync_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct sandbox *sb = ctx;
	struct agent_proc pr;
	uint32_t v, flags;

	switch (type) {
	case KILN_MSG_HELLO:
		if (!agent_parse_hello(p, n, &v, &flags) && v == KILN_AGENT_VERSION)
			return;
		break;
	case KILN_MSG_PROC:
		if (agent_parse_proc(p, n, &pr))
			break;
		if (pr.tag)
			sync_found(sb, &pr);
		return;
	case KILN_MSG_DONE:
		if (n)
			break;
		sync_drop_rest(sb);
		sync_end(sb);
		return;
	}
	log_warn("sandbox %s: its agent's process list ended with a bad %s frame: the commands "
	         "that were starting stay so",
	         sb->rec.id, agent_msg_name(type));
	sync_end(sb);
}

static void sync_close(void *ctx, int err)
{
	struct sandbox *sb = ctx;

	sb->procs->sync = NULL; /* freed by the client */
	log_warn("sandbox %s: its agent's process list broke off (%s): the commands that were "
	         "starting stay so",
	         sb->rec.id, err ? strerror(-err) : "closed");
	sync_end(sb);
}

static const struct agent_conn_ops sync_ops = {
    .on_frame = sync_frame,
    .on_close = sync_close,
};

static void on_sync_limit(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox *sb = w->data;

	log_warn("sandbox %s: its agent did not list its processes within %.0f s", sb->rec.id,
	         PROCS_SYNC_LIMIT);
	sync_end(sb);
}

bool procs_sync(struct sandbox *sb, void (*done)(struct sandbox *sb))
{
	struct procs_sb *ps;

	if (!sb_agent_procs(sb) || !any_starting(sb))
		return false;
	if (!sb->procs && !(sb->procs = calloc(1, sizeof(*sb->procs))))
		return false;
	ps = sb->procs;
	if (ps->sync)
		return false;
	ps->sync = agent_open(sb->kd->loop, sb->vsock_path, KILN_AGENT_PORT, &sync_ops, sb);
	if (!ps->sync || agent_msg_hello(agent_out(ps->sync), KILN_STREAM_PROCS, 0)) {
		agent_close(ps->sync);
		ps->sync = NULL;
		return false;
	}
	agent_flush(ps->sync);
	ps->synced = done;
	ev_timer_init(&ps->sync_limit, on_sync_limit, PROCS_SYNC_LIMIT, 0);
	ps->sync_limit.data = sb;
	ev_timer_start(sb->kd->loop, &ps->sync_limit);
	log_info("sandbox %s: asking its agent which of the commands that were starting run",
	         sb->rec.id);
	return true;
}

void procs_sync_cancel(struct sandbox *sb)
{
	if (!sb->procs || !sb->procs->sync)
		return;
	sb->procs->synced = NULL;
	sync_end(sb);
}
