/* SPDX-License-Identifier: MIT */
/* Pause, resume and snapshots of sandboxes (vmm/API.md, "What kilnd
 * calls"):
 *
 *   pause    {"op":"snapshot","path":DIR/snapshot,"resume":false} to the
 *            VMM's API socket, then the VMM is killed: a paused sandbox is
 *            its snapshot file and no process.
 *   resume   a new kiln-vmm --restore DIR/snapshot (--resume-mode, eager by
 *            default: the guest runs at once and all of its memory is in a
 *            decompression time later; lazy loads it mostly as it is
 *            touched), with the files the sandbox was booted with; once its
 *            agent answers, the snapshot is given to the VMM (jail_out.h):
 *            its next pause appends a generation to it (pause_base.h).
 *   snapshot of a running sandbox for fork and templates.
 *
 * One transition at a time per sandbox: a request that arrives while one
 * is under way (or while the sandbox starts) waits in sb->waiters and is
 * decided on the state the transition left. A failed pause leaves the
 * sandbox running, a failed resume leaves it paused, both with the VMM's
 * own words in the error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "api/procs.h"
#include "envd/envd.h"
#include "jail_out.h"
#include "pause_base.h"
#include "sandbox_int.h"
#include "agent/spare.h"
#include "template.h"
#include "util.h"
#include "vmm_api.h"

#define RESUME_TIMEOUT 10.0 /* the "resume" request alone */

/* Writing a snapshot takes ~0.1 s for 256 MiB of guest memory and grows
 * with what the guest touched; past this a VMM is taken to be stuck (it is
 * killed: a VMM that does not answer cannot be trusted with the VM). */
static double snapshot_timeout(const struct sandbox *sb)
{
	return 30.0 + sb->rec.memory_mb / 128.0;
}

enum w_kind { W_PAUSE, W_RESUME, W_SNAPSHOT };

struct sb_waiter {
	struct sb_waiter *next;
	enum w_kind kind;
	bool owner; /* this request started the transition under way */
	long long timeout_s;
	char *path;
	char *target; /* where the VMM writes it (jail_out.h) */
	bool keep_running;
	sb_op_fn cb;
	sb_snap_fn snap_cb;
	void *ctx;
};

static bool busy(const struct sandbox *sb)
{
	return sb->call || sb->state == SB_STARTING || sb->state == SB_PAUSING ||
	       sb->state == SB_RESUMING;
}

static void enqueue(struct sandbox *sb, struct sb_waiter *w)
{
	struct sb_waiter **pp = &sb->waiters;

	while (*pp)
		pp = &(*pp)->next;
	w->next = NULL;
	*pp = w;
}

static void waiter_free(struct sb_waiter *w)
{
	free(w->path);
	free(w->target);
	free(w);
}

/* Answer w (and free it). sb may be NULL: the sandbox was deleted. */
static void answer(struct sb_waiter *w, struct sandbox *sb, int status, const char *msg,
                   json_t *reply)
{
	char why[1200];

	if (w->kind == W_SNAPSHOT && sb && status < 300 &&
	    sb_take_snapshot(sb, w->path, why, sizeof(why))) {
		status = 500;
		msg = why;
	}
	if (w->kind == W_SNAPSHOT)
		w->snap_cb(w->ctx, sb, status < 300 ? reply : NULL, status < 300 ? NULL : msg);
	else if (w->cb)
		w->cb(w->ctx, sb, status, msg);
	waiter_free(w);
}

void sb_waiter_cancel(struct sandbox *sb, struct sb_waiter *w)
{
	/* An owner's transition goes on: only its answer is dropped. */
	for (struct sb_waiter **pp = &sb->waiters; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			waiter_free(w);
			return;
		}
	}
}

/* "12 MiB free of 20 GiB in DIR": for errors of writing a snapshot. */
static void disk_space(const char *dir, char *out, size_t n)
{
	struct statvfs v;

	if (statvfs(dir, &v)) {
		snprintf(out, n, "cannot tell the free space in %s: %s", dir, strerror(errno));
		return;
	}
	snprintf(out, n, "%llu MiB free of %llu MiB in %s",
	         (unsigned long long)v.f_bavail * v.f_frsize >> 20,
	         (unsigned long long)v.f_blocks * v.f_frsize >> 20, dir);
}

/* The status and message for a snapshot the VMM could not write. */
static int snapshot_error(struct sandbox *sb, const char *what, const char *err, char *msg,
                          size_t n)
{
	char space[256];

	disk_space(sb->kd->sandboxes_dir, space, sizeof(space));
	snprintf(msg, n, "%s sandbox %s: %s (%s; a snapshot takes at most the sandbox's %d MiB)",
	         what, sb->rec.id, err, space, sb->rec.memory_mb);
	return strstr(err, strerror(ENOSPC)) || strstr(err, strerror(EDQUOT)) ? 507 : 500;
}

/* Answer the owner of the transition that ended, then decide the others. */
static void settle_result(struct sandbox *sb, int status, const char *msg, json_t *reply)
{
	struct kilnd *kd = sb->kd;
	struct sb_waiter **pp = &sb->waiters, *owners = NULL, *w;
	char id[SB_ID_LEN + 1];

	while ((w = *pp)) {
		if (w->owner) {
			*pp = w->next;
			w->next = owners;
			owners = w;
		} else {
			pp = &w->next;
		}
	}
	snprintf(id, sizeof(id), "%s", sb->rec.id);
	while ((w = owners)) {
		owners = w->next;
		answer(w, sb, status, msg, reply);
		if (sb_find(kd, id) != sb) {
			/* deleted by the callback: its waiters are answered */
			while ((w = owners)) {
				owners = w->next;
				answer(w, NULL, 404, "the sandbox was deleted", NULL);
			}
			return;
		}
	}
	sb_settle(sb);
}

void sb_waiters_deleted(struct sandbox *sb)
{
	struct sb_waiter *w;
	char msg[96];

	snprintf(msg, sizeof(msg), "sandbox %s was deleted", sb->rec.id);
	while ((w = sb->waiters)) {
		sb->waiters = w->next;
		answer(w, NULL, 404, msg, NULL);
	}
}

/* ---------------------------------------------------------------- pause */

static void on_pause_reply(void *ctx, json_t *reply, const char *err);

/* The undo of a failed pause or resume is complete: tell the owner. */
static void settle_failure(struct sandbox *sb)
{
	char *msg = sb->fail_msg;

	sb->fail_msg = NULL;
	settle_result(sb, sb->fail_status ? sb->fail_status : 500,
	              msg ? msg : "the operation failed", NULL);
	free(msg);
}

static void set_failure(struct sandbox *sb, int status, const char *msg)
{
	free(sb->fail_msg);
	sb->fail_msg = strdup(msg);
	sb->fail_status = status;
}

static void on_unpaused(void *ctx, json_t *reply, const char *err)
{
	struct sandbox *sb = ctx;

	sb->call = NULL;
	if (err)
		log_warn("sandbox %s: letting the VM run again: %s", sb->rec.id, err);
	if (sb->fail_msg)
		settle_failure(sb);
	else
		sb_settle(sb);
}

void pause_unfreeze(struct sandbox *sb)
{
	json_t *req = json_pack("{s:s}", "op", "resume");

	if (sb->call)
		return;
	sb->call = vmm_call(sb->kd->loop, sb->api_path, req, RESUME_TIMEOUT, on_unpaused, sb);
	json_decref(req);
	if (!sb->call && sb->fail_msg)
		settle_failure(sb);
}

/* Ask the VMM to write a snapshot to path; done answers. 0 or 503. */
static int call_snapshot(struct sandbox *sb, const char *path, bool keep_running, vmm_call_fn done,
                         char *msg, size_t n)
{
	json_t *req =
	    json_pack("{s:s,s:s,s:b}", "op", "snapshot", "path", path, "resume", keep_running);

	sb->call =
	    req ? vmm_call(sb->kd->loop, sb->api_path, req, snapshot_timeout(sb), done, sb) : NULL;
	json_decref(req);
	if (!sb->call) {
		snprintf(msg, n, "cannot reach the VMM of sandbox %s on %s: %s", sb->rec.id,
		         sb->api_path, strerror(errno));
		return 503;
	}
	return 0;
}

/* Record what the VMM's output file is before it is asked to write
 * (pause_base.h). A jailed VMM's snapshot left at snap_path (kilnd stopped
 * between a resume and giving it) is given now: only the VMM's own file
 * may hold an older generation. */
static char *record_base(struct sandbox *sb, const char *target)
{
	struct pause_base base;
	char why[600];

	if (strcmp(target, sb->snap_path) && !access(sb->snap_path, F_OK) &&
	    sb_give_snapshot(sb, why, sizeof(why)))
		log_warn("sandbox %s: %s", sb->rec.id, why);
	pause_base_read(target, PAUSE_BASE_MAX(sb->rec.memory_mb), &base);
	free(sb->rec.pause_base);
	return sb->rec.pause_base = pause_base_dump(&base);
}

static int start_pause(struct sandbox *sb, char *msg, size_t n)
{
	char *target = sb_vmm_snap_target(sb, sb->snap_path);
	int rc;

	if (!target || !record_base(sb, target)) {
		free(target);
		snprintf(msg, n, "out of memory");
		return 500;
	}
	rc = call_snapshot(sb, target, false, on_pause_reply, msg, n);
	free(target);
	if (rc)
		return rc;
	sb->state = SB_PAUSING;
	sb->snap_done = false;
	ev_timer_stop(sb->kd->loop, &sb->life);
	/* envd's processes are suspended when their streams end with the VMM
	 * (they were started to outlive them), and attached after the resume. */
	sb_save(sb);
	log_info("sandbox %s: pausing", sb->rec.id);
	return 0;
}

static void on_pause_reply(void *ctx, json_t *reply, const char *err)
{
	struct sandbox *sb = ctx;
	char msg[1024], why[1200];
	int status;

	sb->call = NULL;
	if (!err && sb_take_snapshot(sb, sb->snap_path, why, sizeof(why)))
		err = why;
	if (!err) {
		sb->snap_done = true;
		sb->rec.snap_bytes = json_integer_value(json_object_get(reply, "file_size"));
		log_info("sandbox %s: snapshot written (%lld bytes, generation %lld %s, in %.1f "
		         "ms), stopping its VMM",
		         sb->rec.id, (long long)sb->rec.snap_bytes,
		         (long long)json_integer_value(json_object_get(reply, "generation")),
		         json_is_true(json_object_get(reply, "appended")) ? "appended"
		                                                          : "in a new file",
		         json_number_value(json_object_get(reply, "total_ms")));
		/* Paused once the VMM is gone (pause_vmm_exited). */
		sb_kill_vmm(sb);
		return;
	}
	status = snapshot_error(sb, "cannot pause", err, msg, sizeof(msg));
	log_warn("%s", msg);
	if (!reply) {
		/* No answer at all: the VM is lost with its VMM (pause_vmm_exited). */
		set_failure(sb, 500, err);
		sb_kill_vmm(sb);
		return;
	}
	sb->state = SB_RUNNING;
	sb_arm_lifetime(sb);
	sb_save(sb);
	/* The VM was stopped for the snapshot: it goes on before the answer. */
	set_failure(sb, status, msg);
	pause_unfreeze(sb);
}

/* ---------------------------------------------------------------- resume */

static int start_resume(struct sandbox *sb, long long timeout_s, char *msg, size_t n)
{
	struct kilnd *kd = sb->kd;
	char why[512];
	int rc;

	if (kd->nsandboxes >= kd->cfg.max_sandboxes)
		pool_evict(kd);
	if (kd->nsandboxes >= kd->cfg.max_sandboxes) {
		snprintf(msg, n, "too many sandboxes running (limit %u)", kd->cfg.max_sandboxes);
		return 429;
	}
	sb->agent_version[0] = 0;
	rc = sb_spawn(sb, sb->snap_path, kd->cfg.resume_mode, NULL, why, sizeof(why));
	if (rc) {
		snprintf(msg, n, "cannot resume sandbox %s: %s", sb->rec.id, why);
		return 500;
	}
	sb->state = SB_RESUMING;
	sb->resume_timeout = timeout_s > 0 ? timeout_s : kd->cfg.default_timeout;
	kd->nsandboxes++;
	sb_save(sb);
	sb_start_probe(sb, 0);
	log_info("sandbox %s: resuming (%s restore, pid %d)", sb->rec.id, kd->cfg.resume_mode,
	         sb->rec.pid);
	return 0;
}

/* The resume is complete once envd's processes are attached again. */
static void pause_reattached(struct sandbox *sb)
{
	char why[600];

	if (sb->state != SB_RESUMING)
		return; /* (the resume failed meanwhile: envd_reattach_cancel) */
	sb->state = SB_RUNNING;
	spare_fill(sb);
	sb->rec.end_ms = now_ms() + sb->resume_timeout * 1000;
	sb->rec.snap_bytes = 0;
	sb->rec.resumes++;
	free(sb->rec.reason);
	sb->rec.reason = NULL;
	sb_save(sb);
	sb_arm_lifetime(sb);
	/* The VMM has it open (a lazy restore reads it on), and a later pause
	 * appends to it where the VMM writes (pause_base.h). */
	if (sb_give_snapshot(sb, why, sizeof(why)))
		log_warn("sandbox %s: %s", sb->rec.id, why);
	log_info("sandbox %s: running again (agent %s, pid %d)", sb->rec.id, sb->agent_version,
	         sb->rec.pid);
	settle_result(sb, 201, NULL, NULL);
}

/* The commands that were starting at the pause are known (procs_sync):
 * envd's processes are attached again. */
static void pause_synced(struct sandbox *sb)
{
	if (sb->state != SB_RESUMING)
		return; /* (the resume failed meanwhile: procs_sync_cancel) */
	if (!envd_sandbox_reattach(sb, pause_reattached))
		pause_reattached(sb);
}

void pause_resumed(struct sandbox *sb)
{
	if (!procs_sync(sb, pause_synced))
		pause_synced(sb);
}

void pause_probe_timeout(struct sandbox *sb, const char *what)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "cannot resume sandbox %s: %s; it stays paused", sb->rec.id,
	         what);
	set_failure(sb, 500, msg);
	sb_kill_vmm(sb); /* the rest happens at its exit */
}

void pause_vmm_exited(struct sandbox *sb, const char *what)
{
	struct kilnd *kd = sb->kd;
	char *console, msg[2048];

	kd->nsandboxes--;
	sb->rec.pid = 0;
	if (sb->state == SB_PAUSING && sb->snap_done) {
		sb->state = SB_PAUSED;
		sb->rec.paused_ms = now_ms();
		free(sb->rec.reason);
		sb->rec.reason = NULL;
		sb_save(sb);
		log_info("sandbox %s: paused", sb->rec.id);
		settle_result(sb, 204, NULL, NULL);
		return;
	}
	console = sb_console_since_mark(sb);
	if (sb->state == SB_PAUSING) {
		/* Died (or was killed, stuck) before its snapshot was complete:
		 * the VM is lost. */
		snprintf(msg, sizeof(msg), "%s%s%s while it was being paused%s%s",
		         sb->fail_msg ? sb->fail_msg : "", sb->fail_msg ? "; killed it: " : "",
		         what, console && *console ? "; last console output:\n" : "",
		         console ? console : "");
		free(sb->fail_msg);
		sb->fail_msg = NULL;
		sb->state = SB_ERROR;
		sb->rec.died_ms = now_ms();
		sb_set_reason(sb, "%s", msg);
		sb_save(sb);
		free(console);
		log_warn("sandbox %s: %s", sb->rec.id, msg);
		envd_sandbox_down(sb);
		settle_result(sb, 500, msg, NULL);
		return;
	}
	/* A resume that did not come up: the snapshot is untouched. */
	procs_sync_cancel(sb);
	envd_reattach_cancel(sb);
	if (sb->fail_msg)
		snprintf(msg, sizeof(msg), "%s", sb->fail_msg);
	else
		snprintf(
		    msg, sizeof(msg),
		    "cannot resume sandbox %s: %s%s%s; it stays paused (kiln rm %s deletes it)",
		    sb->rec.id, what, console && *console ? ": " : "", console ? console : "",
		    sb->rec.id);
	free(console);
	sb->state = SB_PAUSED;
	sb_set_reason(sb, "%s", msg);
	sb_save(sb);
	log_warn("sandbox %s: %s", sb->rec.id, msg);
	set_failure(sb, 500, msg);
	settle_failure(sb);
}

/* ---------------------------------------------------------------- snapshots */

static void on_snapshot_reply(void *ctx, json_t *reply, const char *err)
{
	struct sandbox *sb = ctx;
	char msg[1024];

	sb->call = NULL;
	if (err) {
		int status = snapshot_error(sb, "cannot snapshot", err, msg, sizeof(msg));

		log_warn("%s", msg);
		if (!reply) {
			/* Stuck: the sandbox ends with its VMM (as error). */
			sb_kill_vmm(sb);
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
			         "; its VMM was stopped");
		}
		settle_result(sb, status, msg, NULL);
		return;
	}
	settle_result(sb, 200, NULL, reply);
}

/* ---------------------------------------------------------------- requests */

/* Decide w now, or queue it. false: w was answered (and freed). */
static bool dispatch(struct sandbox *sb, struct sb_waiter *w)
{
	char msg[1024];
	int status;

	if (busy(sb)) {
		w->owner = false;
		enqueue(sb, w);
		return true;
	}
	if (sb->state == SB_KILLED || sb->state == SB_ERROR) {
		snprintf(msg, sizeof(msg), "sandbox %s is %s", sb->rec.id,
		         sb_state_name(sb->state));
		answer(w, sb, 404, msg, NULL);
		return false;
	}
	switch (w->kind) {
	case W_PAUSE:
		if (sb->state == SB_PAUSED) {
			snprintf(msg, sizeof(msg), "sandbox %s is paused already", sb->rec.id);
			answer(w, sb, 409, msg, NULL);
			return false;
		}
		if (!(sb->rec.flags & SB_F_API)) {
			snprintf(
			    msg, sizeof(msg),
			    "sandbox %s cannot be paused: an older kilnd started its VMM without "
			    "an API socket",
			    sb->rec.id);
			answer(w, sb, 409, msg, NULL);
			return false;
		}
		status = start_pause(sb, msg, sizeof(msg));
		break;
	case W_RESUME:
		if (sb->state == SB_RUNNING) {
			answer(w, sb, 200, NULL, NULL);
			return false;
		}
		status = start_resume(sb, w->timeout_s, msg, sizeof(msg));
		break;
	case W_SNAPSHOT:
		if (sb->state != SB_RUNNING) {
			sb_not_running(sb, msg, sizeof(msg));
			answer(w, sb, 409, msg, NULL);
			return false;
		}
		status = call_snapshot(sb, w->target, w->keep_running, on_snapshot_reply, msg,
		                       sizeof(msg));
		break;
	default:
		status = 500;
		snprintf(msg, sizeof(msg), "unknown operation");
	}
	if (status) {
		answer(w, sb, status, msg, NULL);
		return false;
	}
	w->owner = true;
	enqueue(sb, w);
	return true;
}

void sb_settle(struct sandbox *sb)
{
	struct sb_waiter *list = sb->waiters, *w;
	struct kilnd *kd = sb->kd;
	char id[SB_ID_LEN + 1];

	if (busy(sb))
		return;
	snprintf(id, sizeof(id), "%s", sb->rec.id);
	sb->waiters = NULL;
	while ((w = list)) {
		list = w->next;
		dispatch(sb, w);
		if (sb_find(kd, id) != sb) {
			/* an answer deleted it */
			while ((w = list)) {
				list = w->next;
				answer(w, NULL, 404, "the sandbox was deleted", NULL);
			}
			return;
		}
	}
}

struct sb_waiter *sb_request(struct sandbox *sb, enum sb_op op, long long timeout_s, sb_op_fn cb,
                             void *ctx)
{
	struct sb_waiter *w = calloc(1, sizeof(*w));

	if (!w) {
		if (cb)
			cb(ctx, sb, 500, "out of memory");
		return NULL;
	}
	w->kind = op == SB_OP_PAUSE ? W_PAUSE : W_RESUME;
	w->timeout_s = timeout_s;
	w->cb = cb;
	w->ctx = ctx;
	return dispatch(sb, w) ? w : NULL;
}

struct sb_waiter *sb_snapshot(struct sandbox *sb, const char *path, bool keep_running,
                              sb_snap_fn cb, void *ctx)
{
	struct sb_waiter *w = calloc(1, sizeof(*w));

	if (!w || !(w->path = strdup(path))) {
		free(w);
		cb(ctx, sb, NULL, "out of memory");
		return NULL;
	}
	if (!(w->target = sb_vmm_snap_target(sb, path))) {
		waiter_free(w);
		cb(ctx, sb, NULL, "out of memory");
		return NULL;
	}
	w->kind = W_SNAPSHOT;
	w->keep_running = keep_running;
	w->snap_cb = cb;
	w->ctx = ctx;
	return dispatch(sb, w) ? w : NULL;
}
