/* SPDX-License-Identifier: MIT */
/* Port streams over the agent client (agent_port.h). */
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_client.h"
#include "agent_port.h"
#include "agent_proto.h"
#include "util.h"

enum aport_phase { AP_HELLO, AP_CONNECTING, AP_OPEN };

struct aport {
	struct agent_conn *a;
	const struct aport_ops *ops;
	void *ctx;
	enum aport_phase phase;
	bool eof, shut; /* DONE received / sent */
	unsigned port;
	/* The CONNECT waits for the HELLO answer (the agent's flags are not
	 * known): what is written meanwhile waits in early. */
	bool deferred;
	struct sockaddr_storage peer;
	int64_t *learn;
	struct buf early;
	char sb_id[80]; /* the sandbox's id, or the shim's task's */
};

static void aport_free(struct aport *p)
{
	agent_close(p->a);
	buf_free(&p->early);
	free(p);
}

static void fail_err(struct aport *p, int status, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail_err(struct aport *p, int status, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->ops->on_error(p->ctx, status, err, msg);
	aport_free(p);
}

#define fail(p, status, ...) fail_err(p, status, 0, __VA_ARGS__)

static bool has_peer(const struct sockaddr_storage *ss)
{
	return ss && (ss->ss_family == AF_INET || ss->ss_family == AF_INET6);
}

/* The CONNECT, with the peer trailer if the agent takes it. */
static int put_connect(struct aport *p, int64_t agent_flags)
{
	bool trailer = has_peer(&p->peer) && agent_flags >= 0 && (agent_flags & KILN_HELLO_PEER);

	return agent_msg_connect(agent_out(p->a), p->port, KILN_PORT_ANY,
	                         trailer ? &p->peer : NULL);
}

/* The HELLO answer of a deferred stream: now the CONNECT, then what was
 * written meanwhile. False if p failed (and is freed). */
static bool connect_late(struct aport *p, uint32_t flags)
{
	p->deferred = false;
	if (p->learn)
		*p->learn = flags;
	if (put_connect(p, flags) ||
	    buf_append(agent_out(p->a), buf_head(&p->early), buf_avail(&p->early))) {
		fail(p, 500, "port %u of sandbox %s: out of memory", p->port, p->sb_id);
		return false;
	}
	buf_free(&p->early);
	agent_flush(p->a);
	return true;
}

/* Where the host's frames go: after the CONNECT, or waiting for it. */
static struct buf *out_of(struct aport *p)
{
	return p->deferred ? &p->early : agent_out(p->a);
}

/* The agent's ERROR frame, as the status and message the user gets. */
static void agent_error(struct aport *p, const uint8_t *f, uint32_t n)
{
	const char *msg;
	uint32_t err, len;

	if (agent_parse_error(f, n, &err, &msg, &len)) {
		fail(p, 502, "port %u of sandbox %s: malformed error from the agent", p->port,
		     p->sb_id);
		return;
	}
	if (len > 300)
		len = 300;
	/* Agents from before port streams refuse the kind (in answer to the
	 * HELLO; some test doubles answer it first). */
	if (err == EINVAL &&
	    (p->phase == AP_HELLO || (len >= 19 && !memcmp(msg, "unknown stream kind", 19))))
		fail(p, 501,
		     "the agent of sandbox %s predates port forwarding (it answered: %.*s); a "
		     "sandbox created anew has a current agent",
		     p->sb_id, (int)len, msg);
	else if (err == ECONNREFUSED)
		fail_err(p, 502, (int)err, "port %u of sandbox %s is closed: %.*s", p->port,
		         p->sb_id, (int)len, msg);
	else
		fail_err(p, err == ETIMEDOUT ? 504 : 502, (int)err, "port %u of sandbox %s: %.*s",
		         p->port, p->sb_id, (int)len, msg);
}

static void on_frame(void *ctx, uint16_t type, const uint8_t *f, uint32_t n)
{
	struct aport *p = ctx;
	uint32_t version, kind;

	if (type == KILN_MSG_ERROR) {
		agent_error(p, f, n);
		return;
	}
	switch (p->phase) {
	case AP_HELLO:
		if (type != KILN_MSG_HELLO || agent_parse_hello(f, n, &version, &kind) ||
		    version != KILN_AGENT_VERSION)
			break;
		p->phase = AP_CONNECTING;
		if (p->deferred)
			connect_late(p, kind);
		return;
	case AP_CONNECTING:
		if (type != KILN_MSG_CONNECTED || agent_parse_u32(f, n, &version))
			break;
		p->phase = AP_OPEN;
		if (p->ops->on_connected)
			p->ops->on_connected(p->ctx);
		return;
	case AP_OPEN:
		if (type == KILN_MSG_DATA && !p->eof && n) {
			p->ops->on_data(p->ctx, f, n);
			return;
		}
		if (type == KILN_MSG_DONE && !p->eof && !n) {
			p->eof = true;
			p->ops->on_eof(p->ctx);
			return;
		}
		break;
	}
	fail(p, 502, "port %u of sandbox %s: unexpected %s from the agent", p->port, p->sb_id,
	     agent_msg_name(type));
}

static void on_close(void *ctx, int err)
{
	struct aport *p = ctx;

	p->a = NULL; /* freed by the client after this */
	if (!err && p->phase == AP_OPEN && p->eof) {
		p->ops->on_end(p->ctx);
		free(p);
		return;
	}
	fail(p, 502, "the connection to port %u of sandbox %s ended%s%s", p->port, p->sb_id,
	     err ? ": " : " early", err ? strerror(-err) : "");
}

static void on_drain(void *ctx)
{
	struct aport *p = ctx;

	if (p->ops->on_drain)
		p->ops->on_drain(p->ctx);
}

static const struct agent_conn_ops agent_ops = {
    .on_frame = on_frame,
    .on_close = on_close,
    .on_drain = on_drain,
};

struct aport *aport_open_with(aport_dial_fn *dial, void *arg, const char *name, unsigned port,
                              const struct aport_from *from, const struct aport_ops *ops, void *ctx)
{
	struct aport *p;
	struct buf *out;

	if (port < 1 || port > 65535) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->ops = ops;
	p->ctx = ctx;
	p->port = port;
	snprintf(p->sb_id, sizeof(p->sb_id), "%s", name);
	if (from && has_peer(from->peer)) {
		p->peer = *from->peer;
		p->deferred = from->agent_flags < 0;
		p->learn = from->learn;
	}
	p->a = dial(arg, &agent_ops, p);
	if (!p->a) {
		int err = errno;

		free(p);
		errno = err;
		return NULL;
	}
	out = agent_out(p->a);
	if (agent_msg_hello(out, KILN_STREAM_PORT, 0)) {
		aport_free(p);
		errno = ENOMEM;
		return NULL;
	}
	if (!p->deferred && put_connect(p, from ? from->agent_flags : 0)) {
		aport_free(p);
		errno = ENOMEM;
		return NULL;
	}
	agent_flush(p->a);
	return p;
}

int aport_write(struct aport *p, const void *data, size_t n)
{
	if (p->shut)
		return -EPIPE;
	if (!n)
		return 0;
	if (agent_msg_data(out_of(p), KILN_MSG_DATA, data, n))
		return -ENOMEM;
	agent_flush(p->a);
	return 0;
}

int aport_shutdown(struct aport *p)
{
	if (p->shut)
		return 0;
	p->shut = true;
	if (agent_msg_empty(out_of(p), KILN_MSG_DONE))
		return -ENOMEM;
	agent_flush(p->a);
	return 0;
}

bool aport_busy(const struct aport *p)
{
	return agent_pending(p->a) + buf_avail(&p->early) > AGENT_OUT_HIGH;
}

void aport_pause(struct aport *p, bool paused)
{
	agent_pause(p->a, paused);
}

void aport_close(struct aport *p)
{
	if (p)
		aport_free(p);
}
