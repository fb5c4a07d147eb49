/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "agent_port.h"
#include "spare.h"
#include "util.h"

struct spare {
	struct spare *next;
	struct sandbox *sb;
	struct agent_conn *a;
	int pid; /* the VMM it was opened to */
};

/* Who to refill when a taken stream ends: the sandbox may be gone by then. */
struct spare_ticket {
	struct kilnd *kd;
	char id[SB_ID_LEN + 1];
	int pid; /* the VMM the stream was opened to */
};

static void unlink_spare(struct spare *s)
{
	struct spare **pp = &s->sb->spares;

	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (*pp)
		*pp = s->next;
}

/* A spare hears nothing before its HELLO: an ERROR (EBUSY) ends it. */
static void spare_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct spare *s = ctx;

	log_debug("sandbox %s: the agent ended a spare stream (%s)", s->sb->rec.id,
	          agent_msg_name(type));
	unlink_spare(s);
	agent_close(s->a);
	free(s);
}

static void spare_closed(void *ctx, int err)
{
	struct spare *s = ctx;

	unlink_spare(s);
	free(s);
}

static const struct agent_conn_ops spare_ops = {
    .on_frame = spare_frame,
    .on_close = spare_closed,
};

/* Close the spares of a former VMM of sb (before a pause, say); count the rest. */
static unsigned prune(struct sandbox *sb)
{
	struct spare **pp = &sb->spares;
	unsigned n = 0;

	while (*pp) {
		struct spare *s = *pp;

		if (s->pid == sb->rec.pid) {
			n++;
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		agent_close(s->a);
		free(s);
	}
	return n;
}

/* Spares are a luxury: with many sandboxes they would take descriptors
 * that clients and VMMs need. Keep them while every sandbox's spares fit
 * in a quarter of kilnd's descriptor limit (which kilnd never changes: it
 * is read once, not on every request). */
static bool room_for_spares(const struct kilnd *kd)
{
	static struct rlimit rl;

	if (!rl.rlim_cur && getrlimit(RLIMIT_NOFILE, &rl) < 0)
		rl.rlim_cur = 0;
	return rl.rlim_cur == RLIM_INFINITY ||
	       (rlim_t)kd->nsandboxes * SPARE_STREAMS <= rl.rlim_cur / 4;
}

static void on_idle(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct sandbox *sb = w->data;

	ev_idle_stop(loop, w);
	if (sb->state != SB_RUNNING || !room_for_spares(sb->kd))
		return;
	for (unsigned n = prune(sb); n < SPARE_STREAMS; n++) {
		struct spare *s = calloc(1, sizeof(*s));

		if (!s)
			return;
		s->sb = sb;
		s->pid = sb->rec.pid;
		s->a = agent_open(loop, sb->vsock_path, KILN_AGENT_PORT, &spare_ops, s);
		if (!s->a) {
			log_debug("sandbox %s: no spare agent stream: %s", sb->rec.id,
			          strerror(errno));
			free(s);
			return;
		}
		s->next = sb->spares;
		sb->spares = s;
	}
}

void spare_fill(struct sandbox *sb)
{
	if (!ev_cb(&sb->spare_idle)) {
		ev_idle_init(&sb->spare_idle, on_idle);
		sb->spare_idle.data = sb;
	}
	ev_idle_start(sb->kd->loop, &sb->spare_idle);
}

void spare_drop(struct sandbox *sb)
{
	ev_idle_stop(sb->kd->loop, &sb->spare_idle);
	while (sb->spares) {
		struct spare *s = sb->spares;

		sb->spares = s->next;
		agent_close(s->a);
		free(s);
	}
}

static void released(void *arg)
{
	struct spare_ticket *t = arg;
	struct sandbox *sb = sb_find(t->kd, t->id);

	if (sb && sb->state == SB_RUNNING)
		spare_fill(sb);
	free(t);
}

static unsigned count_spares(const struct sandbox *sb)
{
	unsigned n = 0;

	for (const struct spare *s = sb->spares; s; s = s->next)
		n++;
	return n;
}

void spare_release(struct agent_conn **ap, bool kept)
{
	struct agent_conn *a = *ap;
	struct spare_ticket *t = a ? agent_on_free_arg(a) : NULL;
	struct sandbox *sb = t && kept ? sb_find(t->kd, t->id) : NULL;
	struct spare *s = NULL;

	*ap = NULL;
	if (sb && sb->state == SB_RUNNING && sb->rec.pid == t->pid && agent_reusable(a) &&
	    count_spares(sb) < SPARE_STREAMS && room_for_spares(sb->kd))
		s = calloc(1, sizeof(*s));
	if (!s) {
		agent_close(a); /* its ticket refills the spares */
		return;
	}
	agent_on_free(a, NULL, NULL);
	free(t);
	s->sb = sb;
	s->pid = sb->rec.pid;
	s->a = a;
	agent_adopt(a, &spare_ops, s);
	agent_pause(a, false);
	s->next = sb->spares;
	sb->spares = s;
}

struct agent_conn *spare_take(struct sandbox *sb, const struct agent_conn_ops *ops, void *ctx)
{
	struct spare_ticket *t = calloc(1, sizeof(*t));
	struct agent_conn *a = NULL;

	if (!t)
		return NULL;
	while (!a && sb->spares) {
		struct spare *s = sb->spares;

		sb->spares = s->next;
		a = s->a;
		if (s->pid != sb->rec.pid || !agent_unused(a)) {
			agent_close(a);
			a = NULL;
		}
		free(s);
	}
	if (a)
		agent_adopt(a, ops, ctx);
	else
		a = agent_open(sb->kd->loop, sb->vsock_path, KILN_AGENT_PORT, ops, ctx);
	if (!a) {
		free(t);
		return NULL;
	}
	t->kd = sb->kd;
	t->pid = sb->rec.pid;
	snprintf(t->id, sizeof(t->id), "%s", sb->rec.id);
	agent_on_free(a, released, t);
	return a;
}

static struct agent_conn *dial_spare(void *arg, const struct agent_conn_ops *ops, void *ctx)
{
	return spare_take(arg, ops, ctx);
}

struct aport *aport_open(struct sandbox *sb, unsigned port, const struct aport_ops *ops, void *ctx)
{
	return aport_open_with(dial_spare, sb, sb->rec.id, port, NULL, ops, ctx);
}

struct aport *aport_open_from(struct sandbox *sb, unsigned port,
                              const struct sockaddr_storage *peer, const struct aport_ops *ops,
                              void *ctx)
{
	/* The boot probe read the agent's flags: never a stream that waits. */
	struct aport_from from = {
	    .peer = peer,
	    .agent_flags = sb->rec.agent_flags >= 0 ? sb->rec.agent_flags : 0,
	};

	return aport_open_with(dial_spare, sb, sb->rec.id, port, &from, ops, ctx);
}
