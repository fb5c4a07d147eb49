/* SPDX-License-Identifier: MIT */
/* kiln-agent: the procs stream (KILN_HELLO_PROCS) - one PROC per exec or
 * pty process the agent has, attached or detached, then DONE. A host that
 * lost track of a command it started (a pause or its own restart came
 * between START and STARTED) finds it here by the tag it gave START. */
#include <errno.h>

#include "agent.h"
#include "exec.h"

static void procs_open(struct conn *c)
{
	struct frame_mark m;
	struct proc_desc d;

	for (unsigned i = 0; i < agent_nconns(); i++) {
		if (!exec_describe(agent_conn_at(i), &d))
			continue;
		frame_begin(&c->out, &m, KILN_MSG_PROC);
		put_u32(&c->out, &m, d.pid);
		put_u64(&c->out, &m, d.tag);
		put_u32(&c->out, &m, d.kind);
		put_u32(&c->out, &m, d.state);
		put_u32(&c->out, &m, d.flags);
		if (frame_end(&c->out, &m)) {
			conn_nomem(c);
			return;
		}
	}
	frame_begin(&c->out, &m, KILN_MSG_DONE);
	if (frame_end(&c->out, &m))
		conn_nomem(c);
	else
		conn_finish(c);
}

static void procs_frame(struct conn *c, uint16_t type, const uint8_t *p, uint32_t len)
{
	conn_fail(c, EPROTO, "unexpected message type %u on a procs stream", type);
}

const struct stream_ops procs_ops = {
    .open = procs_open,
    .frame = procs_frame,
};
