/* SPDX-License-Identifier: MIT */
/*
 * Sockets paired in memory (sockpair.h): ends and their lifetime,
 * connections, listeners, shutdown, poll. The messages and the moving of
 * bytes are in sockpair_msg.c.
 */
#include <linux/poll.h>

#include "errno_k.h"
#include "kpoll.h"
#include "mm.h"
#include "sockpair.h"

/* ---------------------------------------------------------------- ends */

void sp_init(struct sp_end *e, int type, void (*destroy)(struct sp_end *))
{
	memset(e, 0, sizeof(*e));
	e->refs = 1;
	e->type = type;
	e->destroy = destroy;
	e->state = SP_OPEN;
}

void sp_get(struct sp_end *e)
{
	e->refs++;
}

/* Entries of poll tables may still be on a queue being freed: unhook them
 * (waitq_del then has nothing to do) and wake their threads. */
static void waitq_orphan(struct waitq *wq)
{
	struct wait_entry *w = wq->head, *next;

	for (; w; w = next) {
		next = w->next;
		w->wq = NULL;
		wake_thread(w->t);
	}
	wq->head = NULL;
}

void sp_put(struct sp_end *e)
{
	if (--e->refs)
		return;
	sp_purge(e);
	if (e->peer)
		sp_put(e->peer);
	waitq_orphan(&e->wq);
	waitq_orphan(&e->room_wq);
	e->destroy(e);
}

static void wake_end(struct sp_end *e)
{
	wake_all(&e->wq);
	wake_all(&e->room_wq);
}

void sp_link(struct sp_end *a, struct sp_end *b)
{
	sp_get(a);
	sp_get(b);
	a->peer = b;
	b->peer = a;
	a->state = b->state = SP_CONNECTED;
}

void sp_set_peer(struct sp_end *e, struct sp_end *peer)
{
	struct sp_end *old = e->peer;

	if (peer)
		sp_get(peer);
	e->peer = peer;
	e->state = peer ? SP_CONNECTED : SP_OPEN;
	if (old) {
		wake_all(&old->room_wq); /* pollers of e sleep there */
		sp_put(old);
	}
	wake_all(&e->wq);
}

/* A connection's peer end e is going away: the survivor p learns it. */
static void peer_gone(struct sp_end *p, bool reset)
{
	if (p->tcp && !reset) {
		p->shut |= SP_SHUT_RD; /* a FIN: end of file, writes fail */
	} else {
		p->shut = SP_SHUT_BOTH;
		if (reset) {
			p->err = ECONNRESET;
			p->reset = p->tcp;
		}
	}
	wake_end(p);
}

static struct sp_end *acc_pop(struct sp_end *l)
{
	struct sp_end *c = l->acc_head;

	if (!c)
		return NULL;
	l->acc_head = c->acc_next;
	if (!l->acc_head)
		l->acc_tail = NULL;
	l->nacc--;
	c->acc_next = NULL;
	c->listener = NULL;
	wake_all(&l->room_wq);
	return c;
}

void sp_unlisten(struct sp_end *l)
{
	struct sp_end *c;

	while ((c = acc_pop(l)))
		sp_release(c, true);
	l->state = SP_OPEN;
	wake_end(l);
}

void sp_release(struct sp_end *e, bool reset)
{
	struct sp_end *p = e->peer;

	e->dead = true;
	if (e->state == SP_LISTEN)
		sp_unlisten(e);
	if (p && e->type != SOCK_DGRAM) {
		/* Unread bytes are lost: the peer sees a reset, as in Linux. */
		peer_gone(p, reset || e->rx.count);
		e->peer = NULL;
		sp_put(p);
	} else if (p) {
		e->peer = NULL;
		wake_all(&p->room_wq);
		sp_put(p);
	}
	e->shut = SP_SHUT_BOTH;
	sp_purge(e);
	wake_end(e);
	sp_put(e);
}

/* ---------------------------------------------------------------- waiting */

long sp_sleep(struct waitq *wq, uint64_t timeo_ns, uint64_t *deadline, bool *timed)
{
	long r;

	if (!*timed) {
		*deadline = sock_deadline(timeo_ns);
		*timed = true;
	}
	r = wait_block(wq, *deadline);
	if (r == -EINTR)
		return -ERESTARTSYS;
	if (r == -ETIMEDOUT)
		return -EAGAIN;
	return 0;
}

/* ---------------------------------------------------------------- listeners */

void sp_listen(struct sp_end *l, int backlog)
{
	l->state = SP_LISTEN;
	l->backlog = backlog;
	wake_all(&l->room_wq);
}

bool sp_acc_full(const struct sp_end *l)
{
	return l->nacc > l->backlog;
}

int sp_connect_wait(struct sp_end *l, struct socket *s, bool nonblock)
{
	uint64_t deadline = 0;
	bool timed = false;
	long r = 0;

	sp_get(l);
	while (!r) {
		if (l->dead || l->state != SP_LISTEN)
			r = -ECONNREFUSED;
		else if (!sp_acc_full(l))
			break;
		else if (nonblock)
			r = -EAGAIN;
		else
			r = sp_sleep(&l->room_wq, s->sndtimeo_ns, &deadline, &timed);
	}
	sp_put(l);
	return (int)r;
}

void sp_enqueue(struct sp_end *l, struct sp_end *c)
{
	c->listener = l;
	c->acc_next = NULL;
	if (l->acc_tail)
		l->acc_tail->acc_next = c;
	else
		l->acc_head = c;
	l->acc_tail = c;
	l->nacc++;
	wake_all(&l->wq);
}

int sp_accept(struct sp_end *l, struct socket *s, bool nonblock, struct sp_end **out)
{
	uint64_t deadline = 0;
	bool timed = false;
	long r;

	for (;;) {
		if (l->state != SP_LISTEN)
			return -EINVAL;
		if (l->acc_head)
			break;
		if (nonblock)
			return -EAGAIN;
		r = sp_sleep(&l->wq, s->rcvtimeo_ns, &deadline, &timed);
		if (r)
			return (int)r;
	}
	*out = acc_pop(l);
	return 0;
}

/* ---------------------------------------------------------------- shutdown, poll */

int sp_shutdown(struct sp_end *e, int how)
{
	uint8_t mode = (uint8_t)(how + 1); /* SHUT_RD -> SP_SHUT_RD ... */
	struct sp_end *p = e->peer;

	e->shut |= mode;
	wake_end(e);
	if (p && e->type != SOCK_DGRAM && e->state == SP_CONNECTED) {
		/* The peer can no longer send (our RD), or will read the end (our WR). */
		if ((mode & SP_SHUT_RD) && !e->tcp)
			p->shut |= SP_SHUT_WR;
		if (mode & SP_SHUT_WR)
			p->shut |= SP_SHUT_RD;
		wake_end(p);
	}
	return 0;
}

unsigned int sp_poll(struct sp_end *e, struct socket *s)
{
	size_t sndbuf = s->sndbuf > 0 ? (size_t)s->sndbuf : SOCK_BUF_DEFAULT;
	struct sp_end *p = e->peer;
	unsigned int mask = 0;
	bool writable;

	if (e->state == SP_LISTEN)
		return e->acc_head ? POLLIN | POLLRDNORM : 0;
	if (e->err)
		mask |= POLLERR;
	if (e->shut == SP_SHUT_BOTH)
		mask |= POLLHUP;
	if (e->shut & SP_SHUT_RD)
		mask |= POLLRDHUP | POLLIN | POLLRDNORM;
	if (e->rx.head)
		mask |= POLLIN | POLLRDNORM;
	if (e->type != SOCK_DGRAM && e->state != SP_CONNECTED)
		mask |= POLLHUP;
	/* Linux: writable while a quarter of the send buffer is used or less. */
	writable = !p || p->dead || p->rx.bytes * 4 <= sndbuf;
	if (e->type == SOCK_DGRAM && p && !p->dead && p->peer != e && p->rx.count > SP_DGRAM_QLEN)
		writable = false;
	if (writable)
		mask |= POLLOUT | POLLWRNORM | POLLWRBAND;
	return mask;
}

void sp_poll_wait(struct sp_end *e, struct poll_table *pt)
{
	poll_add_wait(pt, &e->wq);
	if (e->peer)
		poll_add_wait(pt, &e->peer->room_wq);
}
