/* SPDX-License-Identifier: MIT */
/* One agent stream over a VM's vsock unix socket, on the libev loop.
 *
 * agent_open() connects to the socket, performs the hybrid-vsock handshake
 * ("CONNECT <port>\n" -> "OK <n>\n") and then exchanges agent frames.
 * Frames queued with agent_out() before the handshake completes are sent
 * after it. Incoming frames are validated (agent_hdr_decode) and delivered
 * whole to ops->on_frame; a protocol violation closes the stream with
 * -EPROTO. The handshake ends in -ECONNREFUSED when the guest refused (the
 * VMM closed without an OK), -ETIMEDOUT after AGENT_CONNECT_TIMEOUT.
 * ops->on_close is called exactly once unless the owner closes the
 * stream itself with agent_close(), and the stream is freed after it. */
#ifndef KILND_AGENT_CLIENT_H
#define KILND_AGENT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "agent_proto.h"

/* Queued output above this should make producers stop (see on_drain). */
#define AGENT_OUT_HIGH (1u << 20)
#define AGENT_OUT_LOW  (256u << 10)

struct agent_conn;

struct agent_conn_ops {
	void (*on_frame)(void *ctx, uint16_t type, const uint8_t *p, uint32_t n);
	/* err: 0 when the agent closed the stream, else -errno. */
	void (*on_close)(void *ctx, int err);
	/* Optional: queued output fell below AGENT_OUT_LOW after being above it. */
	void (*on_drain)(void *ctx);
};

struct agent_conn *agent_open(struct ev_loop *loop, const char *uds_path, unsigned port,
                              const struct agent_conn_ops *ops, void *ctx);
/* Append frames here (agent_msg_*), then call agent_flush(). */
struct buf *agent_out(struct agent_conn *c);
void agent_flush(struct agent_conn *c);
size_t agent_pending(const struct agent_conn *c);
/* Stop (true) or resume (false) delivering frames. */
void agent_pause(struct agent_conn *c, bool paused);
/* Close without calling on_close. Safe from inside a callback. */
void agent_close(struct agent_conn *c);
/* Half-close our side once queued output is written. */
void agent_shutdown_write(struct agent_conn *c);

/* Spare streams (spare.c). Hand c, connected but unused, to a new owner. */
void agent_adopt(struct agent_conn *c, const struct agent_conn_ops *ops, void *ctx);
/* c is open (or still connecting) and nothing was sent or received on it:
 * true. The agent sends nothing before a HELLO, so anything it did send
 * (ERROR EBUSY, or end of file) makes c useless. */
bool agent_unused(struct agent_conn *c);
/* fn(arg) runs once when c is freed, however it ended. */
void agent_on_free(struct agent_conn *c, void (*fn)(void *arg), void *arg);
/* The arg given to agent_on_free(), or NULL. */
void *agent_on_free_arg(const struct agent_conn *c);
/* c is open, everything queued on it was written and its writing side is
 * not shut: another stream may follow on it (KILN_FRAME_REUSE). */
bool agent_reusable(const struct agent_conn *c);

/* Connect timeout covering connect + handshake, seconds. */
#define AGENT_CONNECT_TIMEOUT 5.0

#endif
