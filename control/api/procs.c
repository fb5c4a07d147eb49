/* SPDX-License-Identifier: MIT */
/* kiln's own processes in a sandbox: what exec and pty started, listed by
 * pid so that a pause detaches them rather than ending them, and
 * GET /sandboxes/{id}/processes lists them with envd's. See procs.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/random.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_client.h"
#include "envd/envd_proc.h"
#include "http/jsonutil.h"
#include "procs.h"
#include "sandbox/sandbox.h"
#include "util.h"

void procs_cmdline(char *out, size_t n, const char *const *argv)
{
	size_t len = 0;

	out[0] = 0;
	for (size_t i = 0; argv && argv[i] && len + 1 < n; i++) {
		int w = snprintf(out + len, n - len, "%s%s", i ? " " : "", argv[i]);

		if (w < 0)
			break;
		len += (size_t)w < n - len ? (size_t)w : n - len - 1;
	}
}

static void procs_unlink(struct sandbox *sb, struct kproc *which);

uint64_t procs_new_tag(void)
{
	static uint64_t next;
	uint64_t t = 0;

	/* Random, so that a restarted kilnd's never meet the last one's; a
	 * counter past that (getrandom cannot fail for 8 bytes, but). */
	if (getrandom(&t, sizeof(t), 0) != sizeof(t))
		t = (uint64_t)now_ms() << 16 | (++next & 0xffff);
	t &= INT64_MAX;
	return t ? t : 1;
}

static int procs_insert(struct sandbox *sb, uint32_t pid, bool pty, const char *cmd,
                        int64_t started_ms, bool attached, uint64_t tag)
{
	struct kproc *p;

	if (!sb->procs) {
		sb->procs = calloc(1, sizeof(*sb->procs));
		if (!sb->procs)
			return -ENOMEM;
	}
	if (pid && (p = procs_find(sb, pid)))
		procs_unlink(sb, p); /* a pid the guest reused: the old one is gone */
	if (!pid && (!tag || procs_find_tag(sb, tag)))
		return -EINVAL;
	if (sb->procs->n >= PROCS_MAX)
		return -ENOSPC;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->tag = tag;
	p->starting = !pid;
	p->pty = pty;
	p->attached = attached;
	p->started_ms = started_ms;
	snprintf(p->cmd, sizeof(p->cmd), "%s", cmd);
	p->next = sb->procs->head;
	sb->procs->head = p;
	sb->procs->n++;
	procs_changed(sb);
	return 0;
}

int procs_restore(struct sandbox *sb, uint32_t pid, bool pty, const char *cmd, int64_t started_ms,
                  uint64_t tag)
{
	return procs_insert(sb, pid, pty, cmd, started_ms, false, tag);
}

int procs_add_starting(struct sandbox *sb, uint64_t tag, bool pty, const char *cmd)
{
	return procs_insert(sb, 0, pty, cmd, now_ms(), true, tag);
}

struct kproc *procs_find_tag(struct sandbox *sb, uint64_t tag)
{
	for (struct kproc *p = tag && sb && sb->procs ? sb->procs->head : NULL; p; p = p->next)
		if (p->starting && p->tag == tag)
			return p;
	return NULL;
}

void procs_add(struct sandbox *sb, uint32_t pid, bool pty, const char *cmd, uint64_t tag)
{
	struct kproc *p = procs_find_tag(sb, tag), *old;
	int rc;

	if (!sb)
		return; /* deleted meanwhile: its streams are ending */
	if (p) {
		if ((old = procs_find(sb, pid)))
			procs_unlink(sb, old); /* a pid the guest reused */
		p->pid = pid;
		p->starting = false;
		p->started_ms = now_ms();
		procs_changed(sb);
		return;
	}
	rc = procs_insert(sb, pid, pty, cmd, now_ms(), true, tag);
	if (rc)
		log_warn("sandbox %s: process %u not listed (%s): a pause will end it for its "
		         "client, and it cannot be attached",
		         sb->rec.id, pid, rc == -ENOSPC ? "the table is full" : strerror(-rc));
}

struct kproc *procs_find(struct sandbox *sb, uint32_t pid)
{
	for (struct kproc *p = pid && sb && sb->procs ? sb->procs->head : NULL; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

void procs_remove(struct sandbox *sb, uint32_t pid)
{
	struct kproc *p = procs_find(sb, pid);

	if (p) {
		procs_unlink(sb, p);
		procs_changed(sb);
	}
}

void procs_drop(struct sandbox *sb, struct kproc *which)
{
	procs_unlink(sb, which);
	procs_changed(sb);
}

static void procs_unlink(struct sandbox *sb, struct kproc *which)
{
	struct kproc **pp = sb && sb->procs ? &sb->procs->head : NULL;

	while (pp && *pp) {
		struct kproc *p = *pp;

		if (p == which) {
			*pp = p->next;
			sb->procs->n--;
			free(p);
			return;
		}
		pp = &p->next;
	}
}

struct kproc *procs_lookup(struct kilnd *kd, const char *sb_id, uint32_t pid)
{
	return pid ? procs_find(sb_find(kd, sb_id), pid) : NULL;
}

void procs_forget(struct kilnd *kd, const char *sb_id, uint32_t pid)
{
	if (pid)
		procs_remove(sb_find(kd, sb_id), pid);
}

struct kproc *procs_lookup_sess(struct kilnd *kd, const char *sb_id, uint32_t pid, uint64_t tag)
{
	struct sandbox *sb = sb_find(kd, sb_id);

	return pid ? procs_find(sb, pid) : procs_find_tag(sb, tag);
}

void procs_forget_sess(struct kilnd *kd, const char *sb_id, uint32_t pid, uint64_t tag)
{
	struct sandbox *sb = sb_find(kd, sb_id);
	struct kproc *p = pid ? procs_find(sb, pid) : procs_find_tag(sb, tag);

	if (p)
		procs_drop(sb, p);
}

void procs_starting_msg(char *out, size_t n, const char *sb_id, uint64_t tag)
{
	snprintf(out, n,
	         "sandbox %s was paused while the command was starting: if it started, it goes "
	         "on detached; once the sandbox runs again GET /sandboxes/%s/processes lists it "
	         "with its pid (tag %" PRIx64 ") and kiln attach %s PID takes it up",
	         sb_id, sb_id, tag, sb_id);
}

void procs_sandbox_down(struct sandbox *sb)
{
	procs_sync_cancel(sb);
	procs_store_close(sb);
	if (!sb->procs)
		return;
	while (sb->procs->head)
		procs_unlink(sb, sb->procs->head);
	free(sb->procs);
	sb->procs = NULL;
}

void procs_detached_msg(char *out, size_t n, const char *sb_id, uint32_t pid)
{
	snprintf(out, n,
	         "sandbox %s was paused: the command (pid %u) goes on detached, with its "
	         "output kept; take it up again with: kiln attach %s %u",
	         sb_id, pid, sb_id, pid);
}

/* ---------------------------------------------------------------- the listing */

static json_t *kproc_json(const struct kproc *p)
{
	char at[32], tag[24];
	json_t *j;

	iso8601(p->started_ms, at);
	snprintf(tag, sizeof(tag), "%" PRIx64, p->tag);
	j = json_pack("{s:o,s:s,s:s,s:s,s:b,s:s}", "pid",
	              p->starting ? json_null() : json_integer(p->pid), "api", "kiln", "kind",
	              p->pty ? "pty" : "exec", "cmd", p->cmd, "attached", p->attached, "startedAt",
	              at);
	/* Starting: START was sent, its STARTED not read (a pause or a kilnd
	 * restart came between); the next resume or restart finds out. */
	if (j && p->tag)
		json_object_set_new(j, "tag", json_string(tag));
	if (j && p->starting)
		json_object_set_new(j, "state", json_string("starting"));
	return j;
}

static json_t *envd_json(const struct envd_proc *p)
{
	json_t *cmd = json_object_get(p->config, "cmd"), *args = json_object_get(p->config, "args");
	char line[PROCS_CMD_MAX];
	size_t i, len;
	json_t *v;

	snprintf(line, sizeof(line), "%s", json_is_string(cmd) ? json_string_value(cmd) : "");
	len = strlen(line);
	json_array_foreach(args, i, v)
	{
		if (json_is_string(v) && len + 1 < sizeof(line)) {
			snprintf(line + len, sizeof(line) - len, " %s", json_string_value(v));
			len = strlen(line);
		}
	}
	return json_pack("{s:i,s:s,s:s,s:s,s:b,s:s?}", "pid", (json_int_t)p->pid, "api", "envd",
	                 "kind", p->pty ? "pty" : "exec", "cmd", line, "attached", p->nsubs > 0,
	                 "tag", p->tag);
}

void procs_list(struct kilnd *kd, struct http_conn *c, struct sandbox *sb)
{
	json_t *arr = json_array();

	for (struct kproc *p = sb->procs ? sb->procs->head : NULL; arr && p; p = p->next)
		json_array_append_new(arr, kproc_json(p));
	for (struct envd_proc *p = sb->envd ? sb->envd->procs : NULL; arr && p; p = p->next)
		if (p->started)
			json_array_append_new(arr, envd_json(p));
	if (!arr) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	http_respond_json(c, 200, arr);
}

/* ---------------------------------------------------------------- attach */

void procs_path_pid(const char *path, char *out, size_t n)
{
	char *copy = strdup(path), *save = NULL, *prev = NULL, *last = NULL;

	/* the segments as the router split them: PID is the one before the last */
	for (char *t = copy ? strtok_r(copy, "/", &save) : NULL; t;
	     t = strtok_r(NULL, "/", &save)) {
		prev = last;
		last = t;
	}
	snprintf(out, n, "%s", prev ? prev : "");
	free(copy);
}

/* A pid as the guest's: decimal, 1 to 2^31-1, no sign or leading zeros. */
static int parse_pid(const char *s, uint32_t *pid)
{
	unsigned long long v = 0;

	if (!s || !*s || *s == '0' || strlen(s) > 10)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (v > INT32_MAX)
		return -ERANGE;
	*pid = (uint32_t)v;
	return 0;
}

int procs_attach_check(struct http_conn *c, struct sandbox *sb, const char *pid_s, uint32_t *pid)
{
	struct kproc *p;

	if (parse_pid(pid_s, pid)) {
		http_respond_error(c, 400, "'%.32s' is not a process id (a number from 1 to %d)",
		                   pid_s, INT32_MAX);
		return -1;
	}
	p = procs_find(sb, *pid);
	if (!p) {
		for (struct envd_proc *e = sb->envd ? sb->envd->procs : NULL; e; e = e->next) {
			if (e->started && e->pid == *pid) {
				http_respond_error(
				    c, 409,
				    "process %u of sandbox %s was started through envd: "
				    "attach to it with the SDK's commands.connect(%u)",
				    *pid, sb->rec.id, *pid);
				return -1;
			}
		}
		http_respond_error(c, 404,
		                   "no process %u of kiln's exec or pty in sandbox %s (GET "
		                   "/sandboxes/%s/processes lists them; a process whose exit a "
		                   "client got is gone)",
		                   *pid, sb->rec.id, sb->rec.id);
		return -1;
	}
	if (p->attached) {
		http_respond_error(c, 409,
		                   "process %u of sandbox %s is attached to another client (one at "
		                   "a time)",
		                   *pid, sb->rec.id);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- abort */

static void linger_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
}

static void linger_close(void *ctx, int err)
{
}

static const struct agent_conn_ops linger_ops = {
    .on_frame = linger_frame,
    .on_close = linger_close,
};

void procs_abort_stream(struct agent_conn *a)
{
	static const char why[] = "the client went away";
	struct agent_wr w;

	if (!a)
		return;
	agent_begin(&w, agent_out(a), KILN_MSG_ERROR);
	agent_put_u32(&w, ECONNABORTED);
	agent_put_str(&w, why, sizeof(why) - 1);
	if (agent_end(&w)) {
		agent_close(a); /* the command outlives us: nothing better to do */
		return;
	}
	/* The agent reads the ERROR, ends the command and closes: the stream
	 * goes then (or with the VMM). */
	agent_adopt(a, &linger_ops, NULL);
	agent_pause(a, false);
	agent_shutdown_write(a);
}
