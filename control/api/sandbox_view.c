/* SPDX-License-Identifier: MIT */
/* Sandboxes as clients see them: their JSON, their environment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"
#include "sandbox/sandbox.h"
#include "util.h"

json_t *sb_to_json(const struct sandbox *sb)
{
	char started[32], end[32];
	json_t *j;

	iso8601(sb->rec.created_ms, started);
	iso8601(sb->rec.end_ms, end);
	j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:n,s:s,s:s,s:s,s:i,s:i,s:i,s:O}", "sandboxID",
	              sb->rec.id, "templateID", sb->rec.template_id, "alias", sb->rec.template_id,
	              "clientID", "kiln", "envdVersion", KILND_ENVD_VERSION, "domain", "state",
	              sb_state_name(sb->state), "startedAt", started, "endAt", end, "cpuCount",
	              sb->rec.cpu_count, "memoryMB", sb->rec.memory_mb, "diskSizeMB", 0, "metadata",
	              sb->metadata);
	if (!j)
		return NULL;
	/* (a running sandbox has one when its auto-pause failed) */
	if (sb->rec.reason)
		json_object_set_new(j, "reason", json_string(sb->rec.reason));
	json_object_set_new(j, "publicPorts", json_boolean(sb->rec.flags & SB_F_PUBLIC_PORTS));
	json_object_set_new(j, "tenant",
	                    sb->rec.tenant ? json_string(sb->rec.tenant) : json_null());
	if (sb->alive)
		json_object_set_new(j, "pid", json_integer(sb->rec.pid));
	if (sb->agent_version[0])
		json_object_set_new(j, "agentVersion", json_string(sb->agent_version));
	if (sb->state == SB_PAUSED) {
		char paused[32];

		iso8601(sb->rec.paused_ms, paused);
		json_object_set_new(j, "pausedAt", json_string(paused));
		json_object_set_new(j, "snapshotBytes", json_integer(sb->rec.snap_bytes));
	}
	/* Any exec, file or envd call resumes a paused sandbox (wake.h). */
	json_object_set_new(j, "lifecycle",
	                    json_pack("{s:s,s:b}", "onTimeout",
	                              sb->rec.flags & SB_F_AUTO_PAUSE ? "pause" : "kill",
	                              "autoResume", 1));
	json_object_set_new(j, "resumeCount", json_integer(sb->rec.resumes));
	/* E2B's SandboxDetail: allowInternetAccess and network {allowOut, denyOut}. */
	{
		json_t *net = net_policy_to_json(&sb->policy);

		json_object_set_new(j, "allowInternetAccess", json_boolean(sb->policy.internet));
		json_object_del(net, "internet");
		json_object_set_new(net, "allowPublicTraffic",
		                    json_boolean(sb->rec.flags & SB_F_PUBLIC_PORTS));
		json_object_set_new(j, "network", net);
	}
	return j;
}

void sb_not_running(const struct sandbox *sb, char *msg, size_t msglen)
{
	if (sb->state == SB_PAUSED)
		snprintf(msg, msglen,
		         "sandbox %s is paused: resume it first (kiln resume %s, or POST "
		         "/sandboxes/%s/connect)",
		         sb->rec.id, sb->rec.id, sb->rec.id);
	else if ((sb->state == SB_KILLED || sb->state == SB_ERROR) && sb->rec.reason)
		snprintf(msg, msglen, "sandbox %s is %s, not running: %s", sb->rec.id,
		         sb_state_name(sb->state), sb->rec.reason);
	else
		snprintf(msg, msglen, "sandbox %s is %s, not running", sb->rec.id,
		         sb_state_name(sb->state));
}

char **sb_env(const struct sandbox *sb, json_t *extra)
{
	json_t *merged = json_copy(sb->env), *v;
	const char *k;
	char **env;
	size_t i = 0;

	if (!merged)
		return NULL;
	if (sb->secrets)
		json_object_update(merged, sb->secrets);
	if (extra)
		json_object_update(merged, extra);
	env = calloc(json_object_size(merged) + 1, sizeof(*env));
	if (!env) {
		json_decref(merged);
		return NULL;
	}
	json_object_foreach(merged, k, v)
	{
		if (asprintf(&env[i], "%s=%s", k, json_string_value(v)) < 0) {
			env[i] = NULL;
			sb_env_free(env);
			json_decref(merged);
			return NULL;
		}
		i++;
	}
	json_decref(merged);
	return env;
}

void sb_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}
