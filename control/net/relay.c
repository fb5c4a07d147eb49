/* SPDX-License-Identifier: MIT */
/* One direction of an egress connection (struct relay in net_int.h): at
 * most NET_BUF bytes from a source fd on their way to a destination fd.
 * They wait in a buffer of kilnd's until the connection is open (the
 * hello, the bytes behind it, DNS messages); once it is, and a direction
 * has carried NET_SPLICE_AFTER bytes, in a kernel pipe that splice(2) fills
 * and drains, so the bytes of a transfer never cross into kilnd's memory
 * (two copies less per byte, each way). Without a pipe (out of
 * descriptors, or of the user's pipe pages) the buffer carries on.
 *
 * A pipe's room is counted in slots, one per page or segment spliced in, so
 * it may refuse bytes before NET_BUF: a pipe that holds bytes and refuses
 * more is taken as full until the destination takes some, and the source
 * is not watched meanwhile (it stays readable: watching it would spin). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net_int.h"

#define SPLICE_FLAGS (SPLICE_F_NONBLOCK | SPLICE_F_MOVE)

/* Buffers of ended connections, for the next ones: a connection takes two,
 * and a fresh NET_BUF from malloc grows the heap (brk) that its free
 * trims again, ~3 system calls a connect. At most RELAY_CACHE wait here
 * (kilnd's and the shim's threads share them). */
static struct {
	pthread_mutex_t lock;
	unsigned n;
	uint8_t *buf[RELAY_CACHE];
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint8_t *buf_get(void)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&cache.lock);
	if (cache.n)
		b = cache.buf[--cache.n];
	pthread_mutex_unlock(&cache.lock);
	return b ? b : malloc(NET_BUF);
}

static void buf_put(uint8_t *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&cache.lock);
	if (cache.n < RELAY_CACHE) {
		cache.buf[cache.n++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&cache.lock);
	free(b);
}

unsigned relay_cached(void)
{
	unsigned n;

	pthread_mutex_lock(&cache.lock);
	n = cache.n;
	pthread_mutex_unlock(&cache.lock);
	return n;
}

void relay_init(struct relay *r)
{
	memset(r, 0, sizeof(*r));
	r->pr = r->pw = -1;
}

int relay_alloc(struct relay *r)
{
	if (!r->buf)
		r->buf = buf_get();
	return r->buf ? 0 : -1;
}

void relay_splice(struct relay *r)
{
	r->may_splice = true;
}

/* The pipe, for a stream past NET_SPLICE_AFTER bytes: a short exchange
 * (most are) is not worth its four system calls and two descriptors. */
static void open_pipe(struct relay *r)
{
	int fds[2];

	r->may_splice = false; /* one try */
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
		return;
	if (fcntl(fds[1], F_SETPIPE_SZ, (int)NET_BUF) < (int)NET_BUF) {
		close(fds[0]);
		close(fds[1]);
		return;
	}
	r->pr = fds[0];
	r->pw = fds[1];
}

void relay_free(struct relay *r)
{
	buf_put(r->buf);
	if (r->pr >= 0)
		close(r->pr);
	if (r->pw >= 0)
		close(r->pw);
	relay_init(r);
}

size_t relay_held(const struct relay *r)
{
	return r->len + r->spl;
}

size_t relay_room(const struct relay *r)
{
	if (r->eof || r->full || (!r->buf && r->pw < 0))
		return 0;
	return NET_BUF - relay_held(r);
}

int relay_fill(struct relay *r, int fd)
{
	size_t want = relay_room(r);
	ssize_t n;

	if (!want)
		return 0;
	if (r->may_splice && r->total >= NET_SPLICE_AFTER)
		open_pipe(r);
	if (r->pw >= 0) {
		n = splice(fd, NULL, r->pw, NULL, want, SPLICE_FLAGS);
		if (n > 0)
			r->spl += (size_t)n;
		else if (n == 0)
			r->eof = true;
		else if (errno == EAGAIN && r->spl)
			r->full = true; /* or a wake-up for nothing: the drain ends it */
		else if (errno != EAGAIN && errno != EINTR)
			return -1;
		return 0;
	}
	if (r->off && r->off + r->len == NET_BUF) {
		memmove(r->buf, r->buf + r->off, r->len);
		r->off = 0;
	}
	n = recv(fd, r->buf + r->off + r->len, NET_BUF - r->off - r->len, 0);
	if (n > 0) {
		r->len += (size_t)n;
		r->total += (uint64_t)n;
	} else if (n == 0)
		r->eof = true;
	else if (errno != EAGAIN && errno != EINTR)
		return -1;
	return 0;
}

int relay_drain(struct relay *r, int fd, bool closing, uint64_t *count)
{
	ssize_t n;

	while (r->len) {
		n = send(fd, r->buf + r->off, r->len, MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		r->off += (size_t)n;
		r->len -= (size_t)n;
		*count += (uint64_t)n;
	}
	r->off = 0;
	while (r->spl) {
		n = splice(r->pr, NULL, fd, NULL, r->spl, SPLICE_FLAGS);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		if (n == 0)
			return -1; /* the pipe lost what it held: cannot be */
		r->spl -= (size_t)n;
		r->full = false;
		*count += (uint64_t)n;
	}
	if (r->eof && !r->shut) {
		/* A close that follows at once says the same (a FIN: the source
		 * ended, so nothing unread is left to turn it into an RST). */
		if (!closing)
			shutdown(fd, SHUT_WR);
		r->shut = true;
	}
	return 0;
}
