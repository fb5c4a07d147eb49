/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: the event loop. Each iteration lets streams produce and flush
 * (sweep), retires ended connections, rebuilds the poll set, sleeps in
 * poll(2) until a descriptor is ready or the nearest deadline, dispatches,
 * reaps children and fires timeouts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"

#define ACCEPT_BACKOFF_MS 100  /* out of descriptors: retry accept later */
#define REAP_FALLBACK_MS  1000 /* poll at least this often while streams run */
#define PUMP_ROUNDS       4    /* refills of one producer per loop iteration */

enum { LOOP_SIGNALS, LOOP_LISTEN }; /* roles of the loop's own descriptors */

static struct agent *the_agent; /* for agent_find_detached() */

struct conn *agent_find_detached(pid_t pid)
{
	for (unsigned i = 0; the_agent && i < the_agent->nconns; i++) {
		struct conn *c = the_agent->conns[i];

		if (c->state == CONN_DETACHED && exec_pid(c) == pid)
			return c;
	}
	return NULL;
}

unsigned agent_nconns(void)
{
	return the_agent ? the_agent->nconns : 0;
}

struct conn *agent_conn_at(unsigned i)
{
	return the_agent->conns[i];
}

int pollset_add(struct pollset *ps, int fd, short events, struct conn *c, int role)
{
	if (ps->n == ps->cap) {
		unsigned cap = ps->cap ? ps->cap * 2 : 64;
		struct pollfd *pfd = realloc(ps->pfd, cap * sizeof(*pfd));
		if (pfd)
			ps->pfd = pfd;
		struct pslot *slot = pfd ? realloc(ps->slot, cap * sizeof(*slot)) : NULL;
		if (!slot)
			return -ENOMEM;
		ps->slot = slot;
		ps->cap = cap;
	}
	ps->pfd[ps->n] = (struct pollfd){.fd = fd, .events = events};
	ps->slot[ps->n++] = (struct pslot){.c = c, .role = role};
	return 0;
}
static void reject_busy(int fd)
{
	struct kbuf b = {0};

	if (!frame_error(&b, EBUSY, "kiln-agent: too many streams (%d)", AGENT_MAX_STREAMS) &&
	    write(fd, kbuf_head(&b), b.len) < 0) {
		/* the host will see the connection close */
	}
	kbuf_free(&b);
	close(fd);
}

static unsigned agent_streams(struct agent *a)
{
	unsigned n = 0;

	for (unsigned i = 0; i < a->nconns; i++)
		n += a->conns[i]->state < CONN_DRAIN;
	return n;
}

static void agent_accept(struct agent *a)
{
	for (;;) {
		int fd = accept4(a->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN) {
				agent_log("accept: %s", strerror(errno));
				a->accept_resume = now_ms() + ACCEPT_BACKOFF_MS;
			}
			return;
		}
		struct conn *c = a->nconns < AGENT_MAX_CONNS ? conn_new(fd) : NULL;
		if (!c) {
			reject_busy(fd);
			continue;
		}
		a->conns[a->nconns++] = c;
		if (agent_streams(a) > AGENT_MAX_STREAMS)
			conn_fail(c, EBUSY, "kiln-agent: too many streams (%d)", AGENT_MAX_STREAMS);
	}
}

static void agent_reap(struct agent *a)
{
	pid_t pid;
	int st;

	/* Children of streams, and orphans that PID 1 inherits. */
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (unsigned i = 0; i < a->nconns; i++) {
			struct conn *c = a->conns[i];
			if (c->ops && c->ops->child && c->ops->child(c, pid, st))
				break;
		}
	}
}

static void agent_signals(struct agent *a)
{
	char buf[64];
	ssize_t n;

	while ((n = read(a->sig_r, buf, sizeof(buf))) > 0)
		if (memchr(buf, 'T', n))
			a->quit = true;
	agent_reap(a);
}

/* Let streams produce, flush, and retire what has ended. */
static void agent_sweep(struct agent *a)
{
	a->busy = false;
	for (unsigned i = 0; i < a->nconns;) {
		struct conn *c = a->conns[i];

		if (c->state == CONN_DETACHED) {
			/* Nobody reads: keep the newest output, let the command run. */
			if (!conn_has_room(c))
				conn_trim_kept(c, KILN_KEEP_OUTPUT / 2);
			i++;
			continue;
		}
		if (c->state == CONN_OPEN && c->in.len)
			conn_parse(c); /* frames held back while input was full */
		/* A producer refills as long as the socket takes it, then polls. */
		for (int round = 0; round < PUMP_ROUNDS; round++) {
			if (c->state == CONN_OPEN && c->ops->pump && conn_has_room(c))
				c->ops->pump(c);
			if (!c->out.len || c->wblocked)
				break;
			conn_flush(c);
		}
		if (c->state == CONN_OPEN && c->ops->pump && conn_has_room(c) && !c->wblocked)
			a->busy = true; /* more to produce: do not sleep in poll */
		if (c->state >= CONN_CLOSING && c->ops && c->ops->destroy) {
			c->ops->destroy(c);
			c->ops = NULL; /* destroyed */
		}
		if (c->state == CONN_CLOSING && !c->out.len && c->reuse)
			conn_rearm(c);
		else if (c->state == CONN_CLOSING && !c->out.len)
			conn_drain(c, now_ms());
		if (c->state == CONN_DEAD) {
			conn_free(c);
			a->conns[i] = a->conns[--a->nconns];
			continue;
		}
		i++;
	}
}

static void agent_ready(struct agent *a, struct pslot *s, short revents)
{
	struct conn *c = s->c;

	if (!c) {
		if (s->role == LOOP_SIGNALS)
			agent_signals(a);
		else
			agent_accept(a);
		return;
	}
	if (s->role != ROLE_SOCK) {
		if (c->state == CONN_OPEN || c->state == CONN_DETACHED)
			c->ops->ready(c, s->role, revents);
		return;
	}
	if (revents & POLLOUT) {
		c->wblocked = false;
		conn_flush(c);
	}
	if ((revents & POLLIN) && c->state == CONN_DRAIN)
		conn_discard(c);
	else if (revents & POLLIN)
		conn_read(c);
	else if (revents & (POLLHUP | POLLERR))
		conn_dead(c);
}

static int64_t conn_deadline(struct conn *c)
{
	if (c->state == CONN_DRAIN)
		return c->drain_until;
	if ((c->state == CONN_OPEN || c->state == CONN_DETACHED) && c->ops->deadline)
		return c->ops->deadline(c);
	return AGENT_NO_DEADLINE;
}

void agent_loop(struct agent *a)
{
	struct pollset ps = {0};

	the_agent = a;
	while (!a->quit) {
		agent_sweep(a);

		int64_t now = now_ms(), next = AGENT_NO_DEADLINE;
		ps.n = 0;
		pollset_add(&ps, a->sig_r, POLLIN, NULL, LOOP_SIGNALS);
		if (now >= a->accept_resume)
			pollset_add(&ps, a->lfd, POLLIN, NULL, LOOP_LISTEN);
		else
			next = a->accept_resume;
		for (unsigned i = 0; i < a->nconns; i++) {
			struct conn *c = a->conns[i];
			conn_poll(c, &ps);
			int64_t d = conn_deadline(c);
			next = d < next ? d : next;
		}
		/* In case a SIGCHLD went missing, reap now and then while streams run. */
		if (a->nconns && next > now + REAP_FALLBACK_MS)
			next = now + REAP_FALLBACK_MS;
		int timeout = next == AGENT_NO_DEADLINE ? -1 : next <= now ? 0 : (int)(next - now);
		if (a->busy)
			timeout = 0;

		int n = poll(ps.pfd, ps.n, timeout);
		if (n < 0) {
			if (errno != EINTR)
				agent_log("poll: %s", strerror(errno));
			continue;
		}
		for (unsigned i = 0; i < ps.n; i++)
			if (ps.pfd[i].revents)
				agent_ready(a, &ps.slot[i], ps.pfd[i].revents);
		if (n == 0)
			agent_reap(a);
		now = now_ms();
		for (unsigned i = 0; i < a->nconns; i++) {
			struct conn *c = a->conns[i];
			if (conn_deadline(c) > now)
				continue;
			if (c->state == CONN_DRAIN)
				conn_dead(c);
			else
				c->ops->timeout(c, now);
		}
	}
	free(ps.pfd);
	free(ps.slot);
}

void agent_shutdown(struct agent *a)
{
	for (unsigned i = 0; i < a->nconns; i++) {
		struct conn *c = a->conns[i];
		if (c->ops && c->ops->destroy)
			c->ops->destroy(c);
		conn_free(c);
	}
	a->nconns = 0;
	close(a->lfd);
	if (a->unix_path)
		unlink(a->unix_path);
}
