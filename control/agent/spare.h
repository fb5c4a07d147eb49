/* SPDX-License-Identifier: MIT */
/* Spare agent streams: a running sandbox keeps SPARE_STREAMS connections to
 * its agent open ahead of need, their set-up done (connect, the hybrid
 * vsock "CONNECT"/"OK" exchange, the guest's REQUEST/RESPONSE), so that a
 * request's stream starts with its first frame. A spare carries nothing
 * until it is taken; the agent waits for its HELLO indefinitely.
 *
 * Spares are opened when the sandbox starts running and replaced when the
 * stream that took one ends (from the loop's idle time, after the answer
 * has gone out): opening one while a command runs would take guest time
 * from it. A stream the agent keeps open after its end (KILN_FRAME_REUSE)
 * is handed back instead (spare_reuse), and nothing needs replacing. A spare is checked before use (agent_unused) and belongs to the
 * VMM process it was opened to: after a pause and resume, or a VMM that
 * died, old spares are dropped, never used. With many sandboxes (their
 * spares would take more than a quarter of kilnd's descriptor limit)
 * none are kept. */
#ifndef KILND_SPARE_H
#define KILND_SPARE_H

#include "agent_client.h"
#include "sandbox/sandbox.h"

#define SPARE_STREAMS 2

/* A stream to sb's agent (a spare if there is one, else a new connection),
 * owned by ops/ctx like agent_open()'s. NULL with errno if none could be
 * opened. */
struct agent_conn *spare_take(struct sandbox *sb, const struct agent_conn_ops *ops, void *ctx);
/* Open spares up to SPARE_STREAMS, from the loop's idle time (sb must be
 * running then). */
void spare_fill(struct sandbox *sb);
/* Close sb's spares (it is being freed). */
void spare_drop(struct sandbox *sb);
/* The stream *a (from spare_take(), its HELLO with KILN_FRAME_REUSE) ended
 * with its last frame; kept: the agent's HELLO answer said
 * KILN_HELLO_REUSE. Then the connection becomes a spare of its sandbox again
 * (when the sandbox still runs the VMM it was opened to, everything sent on
 * it was written, and spares are wanted); else it is closed. *a is NULL
 * after. Call it from the stream's on_frame. Reuse saves the guest and the
 * VMM a close and a new connection per request. */
void spare_release(struct agent_conn **a, bool kept);

#endif
