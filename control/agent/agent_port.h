/* SPDX-License-Identifier: MIT */
/* A port stream (KILN_STREAM_PORT, include/kiln/agent.h): a TCP connection
 * the agent makes to a port of the guest's loopback, as a byte pipe on the
 * libev loop. Bytes may be written at once, before the agent connected;
 * they are sent after the CONNECT. Exactly one of on_end and on_error ends
 * the stream (unless the owner closes it first with aport_close()), and it
 * is freed after that callback returns. */
#ifndef KILND_AGENT_PORT_H
#define KILND_AGENT_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sandbox;
struct aport;
struct sockaddr_storage;

struct aport_ops {
	/* Optional: the agent connected. */
	void (*on_connected)(void *ctx);
	/* Bytes from the guest's side. */
	void (*on_data)(void *ctx, const uint8_t *p, size_t n);
	/* The guest's side closed its writing side (half-close). */
	void (*on_eof)(void *ctx);
	/* Both directions closed cleanly. */
	void (*on_end)(void *ctx);
	/* The stream failed: an HTTP status (502 refused or broken, 504
	 * timed out, 501 the agent predates port streams, 503 unreachable)
	 * and a message for the user that names the port and the sandbox;
	 * err is the agent's errno (ECONNREFUSED: nothing listens), or 0. */
	void (*on_error)(void *ctx, int status, int err, const char *msg);
	/* Optional: queued bytes fell below the low mark after aport_busy(). */
	void (*on_drain)(void *ctx);
};

/* Open a stream to port (1..65535) of sb, which must be running. NULL with
 * errno set if the agent cannot be reached. (spare.c: kilnd's.) */
struct aport *aport_open(struct sandbox *sb, unsigned port, const struct aport_ops *ops, void *ctx);
/* The same for a connection from peer (AF_INET or AF_INET6; NULL or
 * another family: none), which the guest's server then sees as its client
 * (CONNECT's peer trailer, if sb's agent takes it: KILN_HELLO_PEER). */
struct aport *aport_open_from(struct sandbox *sb, unsigned port,
                              const struct sockaddr_storage *peer, const struct aport_ops *ops,
                              void *ctx);

/* Whom a stream carries a connection from, for the peer trailer. */
struct aport_from {
	const struct sockaddr_storage *peer; /* AF_INET or AF_INET6, else none */
	/* The agent's HELLO flags, or -1 if unknown: then the CONNECT waits
	 * for this stream's HELLO answer (the bytes written meanwhile wait
	 * with it), and its flags are stored in *learn (if not NULL), which
	 * must outlive the stream. */
	int64_t agent_flags;
	int64_t *learn;
};

struct agent_conn;
struct agent_conn_ops;
/* A new agent stream owned by ops/ctx (as agent_open()'s), or NULL with
 * errno set. */
typedef struct agent_conn *aport_dial_fn(void *arg, const struct agent_conn_ops *ops, void *ctx);
/* The same over the stream dial(arg) gives (the shim: agent_open() to its
 * VM's socket); name, the sandbox's, is for the messages; from may be NULL
 * (no peer). */
struct aport *aport_open_with(aport_dial_fn *dial, void *arg, const char *name, unsigned port,
                              const struct aport_from *from, const struct aport_ops *ops,
                              void *ctx);
/* Queue bytes for the guest; 0 or -ENOMEM. */
int aport_write(struct aport *p, const void *data, size_t n);
/* Half-close: no more bytes for the guest. */
int aport_shutdown(struct aport *p);
/* Above the high mark of queued bytes: the producer should wait for on_drain. */
bool aport_busy(const struct aport *p);
/* Stop (true) or resume delivering the guest's bytes (backpressure). */
void aport_pause(struct aport *p, bool paused);
/* End the stream at once (the guest's socket is closed); no callback. */
void aport_close(struct aport *p);

#endif
