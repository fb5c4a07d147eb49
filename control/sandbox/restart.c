/* SPDX-License-Identifier: MIT */
/* A restarted kilnd (also after SIGKILL) takes its sandboxes back from the
 * store: it finds each live one's VMM again by pid, start time and command
 * line (never trusting a pid that may have been reused), finishes a pause
 * or resume that was under way, keeps paused ones paused, and reports the
 * ones whose VMM died meanwhile as errors. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/procs.h"
#include "envd/envd.h"
#include "net/net.h"
#include "sandbox_int.h"
#include "jail_out.h"
#include "pause_base.h"
#include "run_dir.h"
#include "util.h"
#include "vmm_proc.h"

/* Files of a kilnd from before run directories (run_dir.h): in the
 * sandbox's directory itself, where its VMM still serves them. */
static bool legacy_layout(const struct sandbox *sb)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/" SB_RUN_DIR, sb->dir);
	if (!lstat(path, &st) || errno != ENOENT)
		return false;
	snprintf(path, sizeof(path), "%s/console.log", sb->dir);
	return !access(path, F_OK);
}

/* The jail id in the sandbox's pid file if it names pid, else 0. */
static unsigned pid_file_jail(const struct sandbox *sb, int pid)
{
	char *pf = read_small_file(sb->pid_path, 64, NULL);
	unsigned long long st;
	unsigned id = 0;
	int p;

	if (!pf || sscanf(pf, "%d %llu %u", &p, &st, &id) != 3 || p != pid)
		id = 0;
	free(pf);
	return id;
}

/* Whether the pause under way when kilnd stopped is complete: the VMM's
 * file, or the one the last kilnd took from it, has passed the file as it
 * was when the pause started (pause_base.h). A file still at that base is
 * the state of the last resume, which the VM has left: never the pause's.
 * A jailed VMM's finished snapshot is taken into place. */
static bool pause_finished(struct sandbox *sb)
{
	char *target = sb_vmm_snap_target(sb, sb->snap_path), why[1200];
	uint64_t max = PAUSE_BASE_MAX(sb->rec.memory_mb);
	struct pause_base base;

	if (!pause_base_load(sb->rec.pause_base, &base) && sb->rec.pause_base)
		log_warn("sandbox %s: its pause's base '%.80s' is unreadable", sb->rec.id,
		         sb->rec.pause_base);
	if (target && strcmp(target, sb->snap_path) && pause_base_passed(target, max, &base) &&
	    sb_take_snapshot(sb, sb->snap_path, why, sizeof(why)))
		log_warn("sandbox %s: %s", sb->rec.id, why);
	free(target);
	return pause_base_passed(sb->snap_path, max, &base);
}

/* A sandbox that was pausing or resuming when kilnd stopped, whose VMM is
 * gone: paused if its snapshot is complete (pause_finished(); a resume's
 * is untouched), else lost. */
static void settle_without_vmm(struct sandbox *sb, int pid)
{
	bool snap, pausing = sb->state == SB_PAUSING;
	char what[160];

	if (pausing) {
		sb->jail_id = pid_file_jail(sb, pid); /* (whose file is in its directory) */
		snap = pause_finished(sb);
		sb->jail_id = 0;
	} else {
		snap = sb->state == SB_RESUMING && !access(sb->snap_path, F_OK);
	}
	if (snap) {
		log_info("sandbox %s: %s when kilnd stopped; paused", sb->rec.id,
		         sb_state_name(sb->state));
		sb->state = SB_PAUSED;
		sb->rec.pid = 0;
		sb_save(sb);
		return;
	}
	sb->state = SB_ERROR;
	sb->rec.died_ms = now_ms();
	if (pid) {
		snprintf(what, sizeof(what),
		         "kiln-vmm (pid %d) exited while kilnd was not running%s", pid,
		         sb->state == SB_PAUSING ? ", before its pause was complete" : "");
		sb_set_reason_console(sb, what);
	} else {
		sb_set_reason_console(sb, "kilnd stopped before the sandbox's VMM was started");
	}
	log_warn("sandbox %s: %s", sb->rec.id, sb->rec.reason);
	sb_save(sb);
}

/* Re-adopted running: the commands that were starting are known
 * (procs_sync), envd's are attached again. */
static void readopt_synced(struct sandbox *sb)
{
	if (sb->state == SB_RUNNING)
		envd_sandbox_reattach(sb, NULL); /* envd's, from the table */
}

/* The VMM of a live sandbox is still there: watch it again, and finish
 * what was under way. */
static void readopt(struct sandbox *sb, int pid)
{
	struct kilnd *kd = sb->kd;

	kd->nsandboxes++;
	/* Its jail's id stays taken while it runs. */
	sb->jail_id = pid_file_jail(sb, pid);
	if (sb->jail_id)
		jail_id_mark(kd, sb->jail_id);
	if (!sb->rec.pid_start) {
		char state;

		proc_stat(pid, &sb->rec.pid_start, &state);
	}
	log_info("sandbox %s: re-adopted kiln-vmm pid %d (%s)", sb->rec.id, pid,
	         sb_state_name(sb->state));
	procs_load(sb); /* the commands the last kilnd listed */
	switch (sb->state) {
	case SB_PAUSING:
		/* The snapshot is complete: stop the VMM (paused on its exit). */
		if (pause_finished(sb)) {
			sb->snap_done = true;
			sb_kill_vmm(sb);
			break;
		}
		sb->state = SB_RUNNING;
		/* fall through */
	case SB_RUNNING:
		/* A snapshot cut short by kilnd's end may have left the VM paused. */
		if (sb->rec.flags & SB_F_API)
			pause_unfreeze(sb);
		sb_arm_lifetime(sb);
		if (!procs_sync(sb, readopt_synced))
			readopt_synced(sb);
		break;
	case SB_STARTING:
		sb_start_probe(sb, 0);
		sb_arm_lifetime(sb);
		break;
	case SB_RESUMING:
		sb_start_probe(sb, 0);
		break;
	default:
		break;
	}
	sb_save(sb);
}

static int restore_one(void *ctx, struct sb_record *r)
{
	struct kilnd *kd = ctx;
	struct sandbox *sb;
	int pid;

	if (!name_ok(r->id)) {
		log_warn("ignoring a stored sandbox with the id '%.64s': not a valid id", r->id);
		sb_record_free(r);
		return 0;
	}
	sb = sb_alloc(kd, r->id);
	if (!sb) {
		sb_record_free(r);
		return -ENOMEM;
	}
	sb->rec = *r;
	sb->state = sb_state_from_name(r->state);
	if (legacy_layout(sb) && sb_run_paths(sb, true))
		log_warn("sandbox %s: out of memory: its VMM's files in %s are not looked for",
		         sb->rec.id, sb->dir);
	sb->env = r->env_json ? json_loads(r->env_json, 0, NULL) : NULL;
	sb->metadata = r->metadata_json ? json_loads(r->metadata_json, 0, NULL) : NULL;
	sb->secrets = r->secrets_json ? json_loads(r->secrets_json, 0, NULL) : NULL;
	free(sb->rec.secrets_json);
	sb->rec.secrets_json = NULL;
	if (sb->secrets && !json_is_object(sb->secrets)) {
		log_warn("sandbox %s: its stored secrets are not a JSON object: dropped", r->id);
		json_decref(sb->secrets);
		sb->secrets = NULL;
	}
	/* what it was is known already: only later changes are events */
	sb->ev_state = sb->state;
	sb->ev_created = sb->state != SB_STARTING;
	net_policy_load(r->net_json, &sb->policy);
	if (!json_is_object(sb->env)) {
		json_decref(sb->env);
		sb->env = json_object();
	}
	if (!json_is_object(sb->metadata)) {
		json_decref(sb->metadata);
		sb->metadata = json_object();
	}
	sb_link(kd, sb);
	if (sb->state == SB_PAUSED && access(sb->snap_path, F_OK)) {
		sb->state = SB_ERROR;
		sb->rec.died_ms = now_ms();
		sb_set_reason(sb, "its snapshot %s is gone", sb->snap_path);
		log_warn("sandbox %s: paused, but %s", sb->rec.id, sb->rec.reason);
		sb_save(sb);
		return 0;
	}
	if (sb->state == SB_PAUSED)
		procs_load(sb); /* attached again at the resume */
	if (!sb_is_live(sb->state))
		return 0;

	pid = sb->rec.pid;
	if (!pid) {
		/* kilnd died between recording and spawning (or just after). */
		char *pf = read_small_file(sb->pid_path, 64, NULL);
		unsigned long long st = 0;

		if (pf && sscanf(pf, "%d %llu", &pid, &st) == 2)
			sb->rec.pid_start = st;
		free(pf);
		if (!pid)
			pid = vmm_find(sb->dir, sb->vsock_path);
		sb->rec.pid = pid;
	}
	if (pid && vmm_matches(pid, sb->rec.pid_start, sb->dir, sb->vsock_path) &&
	    !sb_watch_pid(sb, pid) &&
	    vmm_matches(pid, sb->rec.pid_start, sb->dir, sb->vsock_path)) {
		/* The second check closes the window between check and pidfd. */
		readopt(sb, pid);
		return 0;
	}
	if (sb->pidfd >= 0) {
		ev_io_stop(kd->loop, &sb->pid_w);
		close(sb->pidfd);
		sb->pidfd = -1;
		sb->alive = false;
	}
	settle_without_vmm(sb, pid);
	return 0;
}

/* A VMM still running in a directory no record names (its record was
 * lost: a full disk, a store restored from a backup) is stopped: nobody
 * could reach, pay for or delete it. Waits for it (1 s at most) so that
 * its directory can go. */
static void stop_unknown_vmm(struct kilnd *kd, const char *id)
{
	char *dir = NULL, *vsock = NULL, *pidf = NULL, *pf;
	unsigned long long start = 0;
	int pid = 0, fd;

	if (asprintf(&dir, "%s/%s", kd->sandboxes_dir, id) < 0 ||
	    asprintf(&vsock, "%s/vsock.sock", dir) < 0 ||
	    asprintf(&pidf, "%s/" SB_RUN_DIR "/vmm.pid", dir) < 0)
		goto out;
	pf = read_small_file(pidf, 64, NULL);
	if (!pf) { /* an older kilnd's (run_dir.h) */
		free(pidf);
		pidf = NULL;
		if (asprintf(&pidf, "%s/vmm.pid", dir) < 0)
			goto out;
		pf = read_small_file(pidf, 64, NULL);
	}
	if (!pf || sscanf(pf, "%d %llu", &pid, &start) < 1)
		pid = 0;
	free(pf);
	if (!pid || !vmm_matches(pid, start, dir, vsock))
		pid = vmm_find(dir, vsock);
	if (!pid)
		goto out;
	fd = pidfd_open(pid, 0);
	if (fd < 0 || !vmm_matches(pid, start, dir, vsock)) {
		if (fd >= 0)
			close(fd);
		goto out;
	}
	log_warn("sandbox %s: stopping its VMM (pid %d): the state store has no record of it", id,
	         pid);
	pidfd_send_signal(fd, SIGKILL, NULL, 0);
	kill(-pid, SIGKILL);
	{
		struct pollfd p = {.fd = fd, .events = POLLIN};

		poll(&p, 1, 1000);
	}
	close(fd);
out:
	free(dir);
	free(vsock);
	free(pidf);
}

/* Directories under sandboxes/ that no record names: left by a kilnd that
 * stopped while a deleted sandbox's VMM was still dying, or whose record
 * could not be written. */
static void remove_orphans(struct kilnd *kd)
{
	DIR *d = opendir(kd->sandboxes_dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || sb_find(kd, e->d_name))
			continue;
		if (!name_ok(e->d_name)) {
			log_warn("leaving %s/%s alone: not a sandbox id", kd->sandboxes_dir,
			         e->d_name);
			continue;
		}
		stop_unknown_vmm(kd, e->d_name);
		log_info("removing %s/%s: no sandbox of that id", kd->sandboxes_dir, e->d_name);
		rm_tree(kd->sandboxes_dir, e->d_name);
	}
	closedir(d);
}

int sb_restore_all(struct kilnd *kd)
{
	int rc = store_load(kd->store, restore_one, kd);

	if (!rc) {
		remove_orphans(kd);
		run_remove_orphans(kd);
	}
	return rc;
}
