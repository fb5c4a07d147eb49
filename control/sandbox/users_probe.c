/* SPDX-License-Identifier: MIT */
/*
 * Whether a sandbox's agent takes the user trailer (include/kiln/agent.h).
 * Agents that do say KILN_HELLO_USERS in their HELLO answer, except those
 * from just before the flag, which a snapshot or template may still run;
 * agents from before users refuse the trailer. So when the boot probe's
 * HELLO lacks the flag, one STAT of "/" that names root in the trailer
 * tells: ERROR EPROTO means the agent predates users (sb_user_ok refuses
 * requests naming other users from then on), a STAT that it takes them.
 * Until the answer comes, requests are sent as if it did.
 */
#include <errno.h>

#include "agent/agent_client.h"
#include "sandbox_int.h"
#include "util.h"

static void users_probe_end(struct sandbox *sb)
{
	agent_close(sb->users_probe);
	sb->users_probe = NULL;
}

static void users_probe_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct sandbox *sb = ctx;
	uint32_t err, len;
	const char *msg;

	if (type == KILN_MSG_HELLO)
		return;
	if (type == KILN_MSG_ERROR && !agent_parse_error(p, n, &err, &msg, &len) && err == EPROTO) {
		sb->rec.agent_no_users = true;
		sb_save(sb);
		log_info("sandbox %s: its agent predates users: requests run as root only",
		         sb->rec.id);
	}
	users_probe_end(sb);
}

static void users_probe_close(void *ctx, int err)
{
	struct sandbox *sb = ctx;

	(void)err;
	sb->users_probe = NULL; /* (the agent went away: no answer) */
}

static const struct agent_conn_ops users_probe_ops = {
    .on_frame = users_probe_frame,
    .on_close = users_probe_close,
};

void sb_users_probe(struct sandbox *sb)
{
	users_probe_end(sb);
	sb->users_probe =
	    agent_open(sb->kd->loop, sb->vsock_path, KILN_AGENT_PORT, &users_probe_ops, sb);
	if (!sb->users_probe)
		return;
	if (agent_msg_hello(agent_out(sb->users_probe), KILN_STREAM_FILE, 0) ||
	    agent_msg_file_as(agent_out(sb->users_probe), KILN_FILE_STAT, "/", 0, NULL, "root",
	                      0)) {
		users_probe_end(sb);
		return;
	}
	agent_flush(sb->users_probe);
}
