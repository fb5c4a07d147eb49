/* SPDX-License-Identifier: MIT */
/*
 * Sockets paired in memory (sockpair.h): the message queue, and sending
 * and receiving on it with Linux's AF_UNIX rules. A message's bytes are
 * inline when small, else in whole pages; a stream write is appended to
 * the last message where it can be.
 */
#include "errno_k.h"
#include "mm.h"
#include "proc.h"
#include "sockpair.h"
#include "vfs.h"

#define SP_SMALL    512         /* bytes kept inline in the message */
#define SP_CHUNK    (64 * 1024) /* the most bytes one stream message takes */
#define SP_OVERHEAD 32          /* a datagram may be sndbuf - this long */

struct sp_msg {
	struct sp_msg *next;
	size_t len; /* bytes in it */
	size_t off; /* bytes read from it (stream) */
	size_t cap; /* room for bytes */
	struct file **fp;
	int nfp;
	struct sock_ucred cred;
	struct sp_addr *from;
	bool paged;      /* data: physical pages, else the bytes themselves */
	uint64_t data[]; /* (aligned for the page addresses) */
};

/* Messages with files queued anywhere: the AF_UNIX collector runs only
 * when some are. */
static unsigned long inflight;

unsigned long sp_inflight(void)
{
	return inflight;
}

/* ---------------------------------------------------------------- addresses */

struct sp_addr *sp_addr_new(const void *bytes, int len)
{
	struct sp_addr *a = kmalloc(sizeof(*a) + (size_t)len);

	if (!a)
		return NULL;
	a->refs = 1;
	a->len = len;
	memcpy(a->bytes, bytes, (size_t)len);
	return a;
}

void sp_addr_get(struct sp_addr *a)
{
	a->refs++;
}

void sp_addr_put(struct sp_addr *a)
{
	if (a && !--a->refs)
		kfree(a);
}

/* ---------------------------------------------------------------- messages */

static size_t msg_pages(const struct sp_msg *m)
{
	return m->paged ? m->cap / PAGE_SIZE : 0;
}

static void msg_free(struct sp_msg *m)
{
	for (size_t i = 0; i < msg_pages(m); i++)
		if (m->data[i])
			pmem_free(m->data[i]);
	if (m->nfp)
		inflight--;
	for (int i = 0; i < m->nfp; i++)
		file_put(m->fp[i]);
	kfree(m->fp);
	sp_addr_put(m->from);
	kfree(m);
}

/* A message with room for cap bytes (rounded up to pages past SP_SMALL). */
static struct sp_msg *msg_alloc(size_t cap)
{
	bool paged = cap > SP_SMALL;
	size_t npages = paged ? ALIGN_UP(cap, PAGE_SIZE) / PAGE_SIZE : 0;
	struct sp_msg *m = kmalloc(sizeof(*m) + (paged ? npages * sizeof(uint64_t) : cap));

	if (!m)
		return NULL;
	memset(m, 0, sizeof(*m));
	m->paged = paged;
	m->cap = paged ? npages * PAGE_SIZE : cap;
	for (size_t i = 0; i < npages; i++) {
		m->data[i] = pmem_alloc(false);
		if (!m->data[i]) {
			while (++i < npages)
				m->data[i] = 0;
			msg_free(m);
			return NULL;
		}
	}
	return m;
}

/* n bytes between the message at byte pos and the iterator. */
static int msg_copy(struct sp_msg *m, size_t pos, struct sock_iter *it, size_t n, bool to_msg)
{
	while (n) {
		size_t chunk = n;
		char *p;
		int err;

		if (m->paged) {
			chunk = MIN(n, PAGE_SIZE - pos % PAGE_SIZE);
			p = (char *)phys_to_virt(m->data[pos / PAGE_SIZE]) + pos % PAGE_SIZE;
		} else {
			p = (char *)m->data + pos;
		}
		err = to_msg ? sock_iter_from(it, p, chunk) : sock_iter_to(it, p, chunk);
		if (err)
			return err;
		pos += chunk;
		n -= chunk;
	}
	return 0;
}

static void q_append(struct sp_queue *q, struct sp_msg *m)
{
	m->next = NULL;
	if (q->tail)
		q->tail->next = m;
	else
		q->head = m;
	q->tail = m;
	q->count++;
	q->bytes += m->len;
}

static void q_pop(struct sp_queue *q)
{
	struct sp_msg *m = q->head;

	q->head = m->next;
	if (!q->head)
		q->tail = NULL;
	q->count--;
	q->bytes -= m->len - m->off;
	msg_free(m);
}

void sp_purge(struct sp_end *e)
{
	while (e->rx.head)
		q_pop(&e->rx);
	wake_all(&e->room_wq);
}

void sp_for_each_inflight(struct sp_end *e, sp_visit_fn fn, void *arg)
{
	for (struct sp_msg *m = e->rx.head; m; m = m->next)
		for (int i = 0; i < m->nfp; i++)
			if (!fn(m->fp[i], arg))
				return;
}

/* ---------------------------------------------------------------- sending */

static void fill_cred(struct sp_msg *m, const struct sock_iter *it)
{
	if (it->scm && it->scm->has_creds) {
		m->cred = it->scm->creds;
	} else {
		m->cred.pid = cur_proc()->pid;
		m->cred.uid = cur_cred()->u.real;
		m->cred.gid = cur_cred()->g.real;
	}
}

/* Hand the files of it->scm over to m. */
static void take_files(struct sp_msg *m, struct sock_iter *it)
{
	if (!it->scm || !it->scm->nfp)
		return;
	m->fp = it->scm->fp;
	m->nfp = it->scm->nfp;
	it->scm->fp = NULL;
	it->scm->nfp = 0;
	inflight++;
}

/* A stream write may grow the last message: same sender, no files. */
static struct sp_msg *stream_tail(struct sp_end *to, const struct sock_iter *it,
                                  struct sp_addr *from)
{
	struct sp_msg *m = to->rx.tail;

	if (!m || m->fp || m->len == m->cap || m->from != from || (it->scm && it->scm->nfp))
		return NULL;
	if (m->cred.pid != (it->scm && it->scm->has_creds ? it->scm->creds.pid : cur_proc()->pid))
		return NULL;
	return m;
}

/* Up to n bytes of a stream into to's queue: appended or a new message.
 * Returns the bytes queued or -errno. */
static long stream_put(struct sp_end *to, struct sock_iter *it, size_t n, struct sp_addr *from)
{
	struct sp_msg *m = stream_tail(to, it, from);
	bool fresh = !m;
	int err;

	if (fresh) {
		m = msg_alloc(n <= SP_SMALL ? SP_SMALL : MIN(n, (size_t)SP_CHUNK));
		if (!m)
			return -ENOMEM;
		fill_cred(m, it);
		if (from) {
			sp_addr_get(from);
			m->from = from;
		}
	}
	n = MIN(n, m->cap - m->len);
	err = msg_copy(m, m->len, it, n, true);
	if (err) {
		if (fresh)
			msg_free(m);
		return err;
	}
	m->len += n;
	if (fresh) {
		take_files(m, it);
		q_append(&to->rx, m);
	} else {
		to->rx.bytes += n;
	}
	wake_all(&to->wq);
	return (long)n;
}

/* One whole message into to's queue. */
static long msg_put(struct sp_end *to, struct sock_iter *it, struct sp_addr *from)
{
	size_t n = it->left;
	struct sp_msg *m = msg_alloc(n);
	int err;

	if (!m)
		return -ENOMEM;
	err = msg_copy(m, 0, it, n, true);
	if (err) {
		msg_free(m);
		return err;
	}
	m->len = n;
	fill_cred(m, it);
	take_files(m, it);
	if (from) {
		sp_addr_get(from);
		m->from = from;
	}
	q_append(&to->rx, m);
	wake_all(&to->wq);
	return (long)n;
}

long sp_deliver(struct sp_end *to, struct sock_iter *it, struct sp_addr *from)
{
	return msg_put(to, it, from);
}

static size_t sndbuf_of(const struct socket *s)
{
	return s->sndbuf > 0 ? (size_t)s->sndbuf : SOCK_BUF_DEFAULT;
}

/* Sleep for room in to's queue, holding it meanwhile. */
static long wait_room(struct sp_end *to, struct socket *s, uint64_t *deadline, bool *timed)
{
	long r;

	sp_get(to);
	r = sp_sleep(&to->room_wq, s->sndtimeo_ns, deadline, timed);
	sp_put(to);
	return r;
}

long sp_send(struct sp_end *e, struct socket *s, struct sock_iter *it, int flags,
             struct sp_addr *from)
{
	size_t sndbuf = sndbuf_of(s), done = 0;
	bool stream = e->type == SOCK_STREAM, timed = false;
	uint64_t deadline = 0;
	struct sp_end *to;
	long r = 0, n;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP;
	if (!stream && it->left > sndbuf - SP_OVERHEAD)
		return -EMSGSIZE;
	for (;;) {
		if (e->tcp && e->err) {
			r = -e->err;
			e->err = 0;
			break;
		}
		if (e->shut & SP_SHUT_WR) {
			r = -EPIPE;
			break;
		}
		if (e->state != SP_CONNECTED) {
			r = e->tcp ? -EPIPE : -ENOTCONN;
			break;
		}
		to = e->peer;
		if (!to || to->dead || (to->shut & SP_SHUT_RD)) {
			r = -EPIPE;
			break;
		}
		if (stream && !it->left)
			break;
		if (to->rx.bytes < sndbuf) {
			n = stream ? stream_put(to, it, MIN(it->left, sndbuf - to->rx.bytes), from)
			           : msg_put(to, it, from);
			if (n < 0) {
				r = n;
				break;
			}
			done += (size_t)n;
			if (!stream || !it->left)
				break;
			continue;
		}
		if (flags & MSG_DONTWAIT) {
			r = -EAGAIN;
			break;
		}
		r = wait_room(to, s, &deadline, &timed);
		if (r)
			break;
	}
	return done ? (long)done : r;
}

long sp_send_to(struct sp_end *e, struct sp_end *to, struct socket *s, struct sock_iter *it,
                int flags, struct sp_addr *from, bool qlen)
{
	size_t sndbuf = sndbuf_of(s);
	uint64_t deadline = 0;
	bool timed = false;
	long r;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP;
	if (it->left > sndbuf - SP_OVERHEAD)
		return -EMSGSIZE;
	for (;;) {
		if (e->shut & SP_SHUT_WR)
			return -EPIPE;
		if (to->dead)
			return -ECONNREFUSED;
		if (to->shut & SP_SHUT_RD)
			return -EPIPE;
		if (to->rx.bytes < sndbuf && !(qlen && to->rx.count > SP_DGRAM_QLEN))
			return msg_put(to, it, from);
		if (flags & MSG_DONTWAIT)
			return -EAGAIN;
		r = wait_room(to, s, &deadline, &timed);
		if (r)
			return r;
	}
}

/* ---------------------------------------------------------------- receiving */

static void give_creds(const struct sp_msg *m, struct sock_iter *it)
{
	if (it->scm) {
		it->scm->has_creds = true;
		it->scm->creds = m->cred;
	}
}

/* The message's files into the caller's scm (copies when peeking); with
 * no place for them (read()) they are dropped. */
static void give_files(struct sp_msg *m, struct sock_iter *it, bool peek)
{
	struct sock_scm *scm = it->scm;

	if (!m->nfp)
		return;
	if (peek) {
		if (!scm || scm->fp)
			return;
		scm->fp = kmalloc((size_t)m->nfp * sizeof(*scm->fp));
		if (!scm->fp)
			return;
		for (int i = 0; i < m->nfp; i++) {
			file_get(m->fp[i]);
			scm->fp[i] = m->fp[i];
		}
		scm->nfp = m->nfp;
		return;
	}
	if (scm && !scm->fp) {
		scm->fp = m->fp;
		scm->nfp = m->nfp;
	} else {
		for (int i = 0; i < m->nfp; i++)
			file_put(m->fp[i]);
		kfree(m->fp);
	}
	m->fp = NULL;
	m->nfp = 0;
	inflight--;
}

static void give_addr(const struct sp_msg *m, void *addr, int *addrlen)
{
	if (m->from) {
		memcpy(addr, m->from->bytes, (size_t)m->from->len);
		*addrlen = m->from->len;
	}
}

/* Waiting for data: 0 to look again, else what to return (1 for end of
 * file, as 0 bytes). */
static long recv_wait(struct sp_end *e, struct socket *s, int flags, uint64_t *deadline,
                      bool *timed)
{
	long r;

	if (e->err) {
		r = -e->err;
		e->err = 0;
		return r;
	}
	if (e->shut & SP_SHUT_RD)
		return 1;
	if (flags & MSG_DONTWAIT)
		return -EAGAIN;
	return sp_sleep(&e->wq, s->rcvtimeo_ns, deadline, timed);
}

static long recv_stream(struct sp_end *e, struct socket *s, struct sock_iter *it, int flags,
                        void *addr, int *addrlen, bool passcred)
{
	bool peek = flags & MSG_PEEK, timed = false;
	size_t target = (flags & MSG_WAITALL) ? it->left : MIN((size_t)s->rcvlowat, it->left);
	size_t copied = 0, skip = 0; /* skip: bytes peeked so far */
	uint64_t deadline = 0;
	bool last = false;
	int32_t pid = 0;
	long r = 0;

	while (it->left && !last) {
		struct sp_msg *m = e->rx.head;
		size_t at = skip, n;

		while (m && at >= m->len - m->off) {
			at -= m->len - m->off;
			m = m->next;
		}
		if (!m) {
			if (copied >= MAX(target, (size_t)1))
				break;
			r = recv_wait(e, s, flags, &deadline, &timed);
			if (r) {
				r = r > 0 ? 0 : r;
				break;
			}
			continue;
		}
		if (copied && passcred && m->cred.pid != pid)
			break; /* never join two senders' bytes */
		n = MIN(m->len - m->off - at, it->left);
		if (msg_copy(m, m->off + at, it, n, false)) {
			r = -EFAULT;
			break;
		}
		if (!copied) {
			pid = m->cred.pid;
			give_addr(m, addr, addrlen);
			if (passcred)
				give_creds(m, it);
		}
		copied += n;
		if (m->nfp) {
			/* One message's files per call, and the call ends with it. */
			give_files(m, it, peek);
			last = true;
		}
		if (peek) {
			skip += n;
			continue;
		}
		m->off += n;
		e->rx.bytes -= n;
		if (m->off == m->len)
			q_pop(&e->rx);
		wake_all(&e->room_wq);
	}
	return copied ? (long)copied : r;
}

static long recv_msg(struct sp_end *e, struct socket *s, struct sock_iter *it, int flags,
                     int *msg_flags, void *addr, int *addrlen, bool passcred)
{
	bool peek = flags & MSG_PEEK, timed = false;
	uint64_t deadline = 0;
	struct sp_msg *m;
	size_t n;
	long r;

	while (!(m = e->rx.head)) {
		r = recv_wait(e, s, flags, &deadline, &timed);
		if (r)
			return r > 0 ? 0 : r;
	}
	n = MIN(m->len, it->left);
	if (msg_copy(m, 0, it, n, false))
		return -EFAULT;
	if (n < m->len)
		*msg_flags |= MSG_TRUNC;
	r = (flags & MSG_TRUNC) ? (long)m->len : (long)n;
	give_addr(m, addr, addrlen);
	if (passcred)
		give_creds(m, it);
	give_files(m, it, peek);
	if (!peek) {
		q_pop(&e->rx);
		wake_all(&e->room_wq);
	}
	return r;
}

long sp_recv(struct sp_end *e, struct socket *s, struct sock_iter *it, int flags, int *msg_flags,
             void *addr, int *addrlen, bool passcred)
{
	if (flags & MSG_ERRQUEUE)
		return -EAGAIN; /* nothing is ever queued there */
	if (flags & MSG_OOB)
		return -EINVAL;
	if (e->type == SOCK_STREAM)
		return recv_stream(e, s, it, flags, addr, addrlen, passcred);
	return recv_msg(e, s, it, flags, msg_flags, addr, addrlen, passcred);
}

int sp_inq(const struct sp_end *e)
{
	if (e->type == SOCK_STREAM)
		return (int)MIN(e->rx.bytes, (size_t)0x7fffffff);
	return e->rx.head ? (int)e->rx.head->len : 0;
}

int sp_outq(const struct sp_end *e)
{
	const struct sp_end *p = e->peer;

	if (!p || p->dead || e->type == SOCK_DGRAM)
		return 0;
	return (int)MIN(p->rx.bytes, (size_t)0x7fffffff);
}
