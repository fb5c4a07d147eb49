/* SPDX-License-Identifier: MIT */
/* ttrpc, the server side as containerd's client speaks it: frames of a
 * 10-byte header (u32 length, u32 stream id, u8 type, u8 flags; big
 * endian) and a protobuf Request (type 1) or Response (type 2) of at most
 * 4 MiB. Each request is served on a thread of its own (Wait blocks until
 * the process exits); replies go out under the connection's write lock. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gen/ttrpc.pb-c.h"
#include "shim.h"

#define TTRPC_HDR      10
#define TTRPC_MAX      (4u << 20)
#define TTRPC_REQUEST  1
#define TTRPC_RESPONSE 2
#define TASK_SERVICE   "containerd.task.v2.Task"
#define MAX_INFLIGHT   256

struct conn {
	int fd;
	pthread_mutex_t wlock;
	pthread_mutex_t ref_lock;
	int refs, inflight;
};

struct call {
	struct conn *c;
	uint32_t stream;
	uint8_t *data;
	size_t len;
};

static void conn_put(struct conn *c)
{
	bool last;

	pthread_mutex_lock(&c->ref_lock);
	last = --c->refs == 0;
	pthread_mutex_unlock(&c->ref_lock);
	if (last) {
		close(c->fd);
		free(c);
	}
}

static int read_full(int fd, void *p, size_t n)
{
	char *b = p;

	while (n) {
		ssize_t r = read(fd, b, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static void send_response(struct conn *c, uint32_t stream, int code, const char *msg,
                          const uint8_t *payload, size_t len)
{
	Ttrpc__Response r = TTRPC__RESPONSE__INIT;
	Ttrpc__Status st = TTRPC__STATUS__INIT;
	uint8_t hdr[TTRPC_HDR], *out;
	size_t n;

	if (code) {
		st.code = code;
		st.message = (char *)msg;
		r.status = &st;
	}
	r.payload.data = (uint8_t *)payload;
	r.payload.len = len;
	n = ttrpc__response__get_packed_size(&r);
	out = malloc(n ? n : 1);
	if (!out)
		return;
	ttrpc__response__pack(&r, out);
	*(uint32_t *)hdr = htonl((uint32_t)n);
	*(uint32_t *)(hdr + 4) = htonl(stream);
	hdr[8] = TTRPC_RESPONSE;
	hdr[9] = 0;
	pthread_mutex_lock(&c->wlock);
	if (send(c->fd, hdr, sizeof(hdr), MSG_NOSIGNAL) != sizeof(hdr) ||
	    send(c->fd, out, n, MSG_NOSIGNAL) != (ssize_t)n)
		shim_log("ttrpc: writing a reply failed: %s", strerror(errno));
	pthread_mutex_unlock(&c->wlock);
	free(out);
}

static void *serve_call(void *arg)
{
	struct call *k = arg;
	Ttrpc__Request *rq = ttrpc__request__unpack(NULL, k->len, k->data);
	char msg[1024] = "";
	uint8_t *out = NULL;
	size_t out_len = 0;
	int code;

	if (!rq) {
		send_response(k->c, k->stream, RPC_INVALID_ARGUMENT, "malformed ttrpc request",
		              NULL, 0);
	} else if (strcmp(rq->service, TASK_SERVICE)) {
		snprintf(msg, sizeof(msg), "service %.200s: kiln's shim serves " TASK_SERVICE,
		         rq->service);
		send_response(k->c, k->stream, RPC_UNIMPLEMENTED, msg, NULL, 0);
	} else {
		code = task_call(rq->method, rq->payload.data, rq->payload.len, &out, &out_len, msg,
		                 sizeof(msg));
		send_response(k->c, k->stream, code, msg, out, out_len);
	}
	if (rq)
		ttrpc__request__free_unpacked(rq, NULL);
	free(out);
	free(k->data);
	pthread_mutex_lock(&k->c->ref_lock);
	k->c->inflight--;
	pthread_mutex_unlock(&k->c->ref_lock);
	conn_put(k->c);
	free(k);
	return NULL;
}

static void *serve_conn(void *arg)
{
	struct conn *c = arg;
	uint8_t hdr[TTRPC_HDR];

	while (!read_full(c->fd, hdr, sizeof(hdr))) {
		uint32_t len = ntohl(*(uint32_t *)hdr), stream = ntohl(*(uint32_t *)(hdr + 4));
		struct call *k;
		pthread_t t;
		bool busy;

		if (len > TTRPC_MAX || hdr[8] != TTRPC_REQUEST) {
			shim_log("ttrpc: a frame of type %u, %u bytes: closing the connection",
			         hdr[8], len);
			break;
		}
		k = calloc(1, sizeof(*k));
		if (!k || !(k->data = malloc(len ? len : 1)) || read_full(c->fd, k->data, len)) {
			if (k)
				free(k->data);
			free(k);
			break;
		}
		k->c = c;
		k->stream = stream;
		k->len = len;
		pthread_mutex_lock(&c->ref_lock);
		busy = c->inflight >= MAX_INFLIGHT;
		if (!busy) {
			c->inflight++;
			c->refs++;
		}
		pthread_mutex_unlock(&c->ref_lock);
		if (busy) {
			send_response(c, stream, RPC_FAILED_PRECONDITION,
			              "too many requests in flight on this connection", NULL, 0);
			free(k->data);
			free(k);
			continue;
		}
		if (pthread_create(&t, NULL, serve_call, k)) {
			send_response(c, stream, RPC_INTERNAL, "cannot start a thread", NULL, 0);
			free(k->data);
			free(k);
			pthread_mutex_lock(&c->ref_lock);
			c->inflight--;
			pthread_mutex_unlock(&c->ref_lock);
			conn_put(c);
			continue;
		}
		pthread_detach(t);
	}
	shutdown(c->fd, SHUT_RD);
	conn_put(c);
	return NULL;
}

int ttrpc_serve(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		struct conn *c;
		pthread_t t;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return -errno;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->refs = 1;
		pthread_mutex_init(&c->wlock, NULL);
		pthread_mutex_init(&c->ref_lock, NULL);
		if (pthread_create(&t, NULL, serve_conn, c)) {
			close(fd);
			free(c);
			continue;
		}
		pthread_detach(t);
	}
}
