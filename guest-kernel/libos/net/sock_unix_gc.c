/* SPDX-License-Identifier: MIT */
/*
 * The collector of AF_UNIX sockets in flight, as Linux's unix_gc: a socket
 * passed with SCM_RIGHTS into a queue that only it (or another socket in
 * flight) can ever read keeps itself open forever once the program closes
 * its descriptors. Such a socket's every file reference is from a message
 * in flight; among those candidates, the ones some reference from outside
 * the candidates' queues (a descriptor, a live socket's queue) can reach
 * are alive; the rest are garbage and their queues are dropped, which
 * closes them.
 *
 * Runs when an AF_UNIX socket is closed and messages with files are in
 * flight: cheap to skip, a walk of every AF_UNIX socket otherwise.
 */
#include "mm.h"
#include "sock_unix.h"
#include "vfs.h"

static bool running;

/* Every file queued at u, and at the connections waiting in its accept
 * queue (a listener "holds" its embryos' queues). */
static void each_queued(struct unix_sk *u, sp_visit_fn fn, void *arg)
{
	sp_for_each_inflight(&u->e, fn, arg);
	for (struct sp_end *c = u->e.acc_head; c; c = c->acc_next)
		sp_for_each_inflight(c, fn, arg);
}

static bool count_inflight(struct file *f, void *arg)
{
	struct unix_sk *t = unix_sk_of_file(f);

	if (t)
		t->gc_inflight++;
	return true;
}

static bool count_internal(struct file *f, void *arg)
{
	struct unix_sk *t = unix_sk_of_file(f);

	if (t && t->gc_candidate)
		t->gc_internal++;
	return true;
}

/* Mark what an alive socket's queue holds alive, pushing it on *work. */
static bool mark_alive(struct file *f, void *arg)
{
	struct unix_sk **work = arg, *t = unix_sk_of_file(f);

	if (t && t->gc_candidate && !t->gc_alive) {
		t->gc_alive = true;
		t->gc_next = *work;
		*work = t;
	}
	return true;
}

void unix_gc(void)
{
	struct unix_sk *u, *work = NULL, *garbage = NULL;

	if (running || !sp_inflight())
		return;
	running = true;
	for (u = unix_all; u; u = u->anext) {
		u->gc_inflight = u->gc_internal = 0;
		u->gc_candidate = u->gc_alive = false;
	}
	for (u = unix_all; u; u = u->anext)
		sp_for_each_inflight(&u->e, count_inflight, NULL);
	for (u = unix_all; u; u = u->anext)
		u->gc_candidate =
		    u->sock && u->gc_inflight && u->sock->file->refs == u->gc_inflight;
	for (u = unix_all; u; u = u->anext)
		if (u->gc_candidate)
			each_queued(u, count_internal, NULL);
	/* Referenced from outside the candidates: alive, and all it holds. */
	for (u = unix_all; u; u = u->anext) {
		if (u->gc_candidate && u->gc_internal < u->gc_inflight) {
			u->gc_alive = true;
			u->gc_next = work;
			work = u;
		}
	}
	while (work) {
		u = work;
		work = u->gc_next;
		each_queued(u, mark_alive, &work);
	}
	/* Hold the garbage while its queues go, then let it close. */
	for (u = unix_all; u; u = u->anext) {
		if (u->gc_candidate && !u->gc_alive) {
			file_get(u->sock->file);
			u->gc_next = garbage;
			garbage = u;
		}
	}
	for (u = garbage; u; u = u->gc_next) {
		sp_purge(&u->e);
		for (struct sp_end *c = u->e.acc_head; c; c = c->acc_next)
			sp_purge(c);
	}
	while (garbage) {
		u = garbage;
		garbage = u->gc_next;
		file_put(u->sock->file); /* may free u */
	}
	running = false;
}
