/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_client.h"
#include "envd/envd.h"
#include "net/net.h"
#include "sandbox_int.h"
#include "agent/spare.h"
#include "dir_pool.h"
#include "console.h"
#include "jail_out.h"
#include "run_dir.h"
#include "template.h"
#include "util.h"
#include "vmm_api.h"
#include "vmm_proc.h"

#define PROBE_FAST       0.002 /* retry interval in the first PROBE_FAST_FOR s */
#define PROBE_FAST_FOR   0.2
#define PROBE_INTERVAL   0.01
#define CONSOLE_TAIL     6    /* lines of console kept in an error reason */
#define CONSOLE_TAIL_MAX 1024 /* bytes */

static const char *const state_names[] = {"starting", "running", "pausing", "paused",
                                          "resuming", "killed",  "error"};

const char *sb_state_name(enum sb_state s)
{
	return state_names[s];
}

int sb_state_from_name(const char *s)
{
	for (unsigned i = 0; i < ARRAY_SIZE(state_names); i++)
		if (!strcmp(s, state_names[i]))
			return (int)i;
	return SB_ERROR;
}

bool sb_is_live(enum sb_state s)
{
	return s == SB_STARTING || s == SB_RUNNING || s == SB_PAUSING || s == SB_RESUMING;
}

/* ---------------------------------------------------------------- persistence */

int sb_save(struct sandbox *sb)
{
	char *env = json_dumps(sb->env, JSON_COMPACT),
	     *meta = json_dumps(sb->metadata, JSON_COMPACT);
	int rc;

	free(sb->rec.state);
	sb->rec.state = strdup(sb_state_name(sb->state));
	free(sb->rec.env_json);
	free(sb->rec.metadata_json);
	sb->rec.env_json = env;
	sb->rec.metadata_json = meta;
	free(sb->rec.net_json);
	sb->rec.net_json = net_policy_dump(&sb->policy);
	free(sb->rec.secrets_json);
	sb->rec.secrets_json = sb->secrets ? json_dumps(sb->secrets, JSON_COMPACT) : NULL;
	rc = !env || !meta || !sb->rec.state || (sb->secrets && !sb->rec.secrets_json) ||
	     store_put(sb->kd->store, &sb->rec);
	/* the store is the only place the secrets are kept in: not in memory twice */
	free(sb->rec.secrets_json);
	sb->rec.secrets_json = NULL;
	if (rc) {
		log_err("sandbox %s: could not persist state %s", sb->rec.id, sb->rec.state);
		return -EIO;
	}
	events_sb_saved(sb);
	return 0;
}

void sb_set_reason(struct sandbox *sb, const char *fmt, ...)
{
	va_list ap;
	char *r;

	va_start(ap, fmt);
	if (vasprintf(&r, fmt, ap) < 0)
		r = NULL;
	va_end(ap);
	free(sb->rec.reason);
	sb->rec.reason = r;
}

/* "<what>; console: <last lines>" for error reasons. */
void sb_set_reason_console(struct sandbox *sb, const char *what)
{
	char *tail = file_tail(sb->console_path, CONSOLE_TAIL, CONSOLE_TAIL_MAX);

	if (tail && *tail)
		sb_set_reason(sb, "%s; last console output:\n%s", what, tail);
	else
		sb_set_reason(sb, "%s; no console output", what);
	free(tail);
}

char *sb_console_since_mark(struct sandbox *sb)
{
	/* Only the VMM's own lines: those before belong to the sandbox's
	 * earlier life. */
	return file_tail_from(sb->console_path, sb->console_mark, CONSOLE_TAIL, CONSOLE_TAIL_MAX);
}

/* ---------------------------------------------------------------- objects */

struct sandbox *sb_alloc(struct kilnd *kd, const char *id)
{
	struct sandbox *sb = calloc(1, sizeof(*sb));

	if (!sb)
		return NULL;
	sb->kd = kd;
	sb->pidfd = -1;
	sb->console_wd = -1;
	snprintf(sb->rec.id, sizeof(sb->rec.id), "%s", id);
	sb->rec.agent_flags = -1;
	if (asprintf(&sb->dir, "%s/%s", kd->sandboxes_dir, id) < 0 ||
	    asprintf(&sb->snap_path, "%s/snapshot", sb->dir) < 0 || sb_run_paths(sb, false)) {
		free(sb->dir);
		free(sb->snap_path);
		free(sb);
		return NULL;
	}
	sb->policy.internet = true;
	ev_init(&sb->life, NULL);
	ev_init(&sb->boot, NULL);
	sb->life.data = sb->boot.data = sb;
	return sb;
}

/* Everything of it on disk and in the run root. */
static void sb_remove_dirs(struct sandbox *sb)
{
	if (!dir_pool_put(sb->kd, sb->rec.id))
		rm_tree(sb->kd->sandboxes_dir, sb->rec.id);
	run_remove(sb->kd, sb->rec.id);
}

static void sb_free(struct sandbox *sb)
{
	envd_sandbox_down(sb);
	jail_id_put(sb->kd, sb->jail_id);
	net_sb_free(sb);
	net_policy_clear(&sb->policy);
	ev_timer_stop(sb->kd->loop, &sb->life);
	ev_timer_stop(sb->kd->loop, &sb->boot);
	if (sb->pidfd >= 0) {
		ev_io_stop(sb->kd->loop, &sb->pid_w);
		close(sb->pidfd);
	}
	console_unwatch(sb);
	agent_close(sb->probe);
	agent_close(sb->users_probe);
	spare_drop(sb);
	vmm_call_cancel(sb->call);
	json_decref(sb->env);
	json_decref(sb->metadata);
	img_defaults_free(&sb->defaults);
	json_decref(sb->secrets);
	sb_record_free(&sb->rec);
	free(sb->fail_msg);
	free(sb->dir);
	free(sb->vsock_path);
	free(sb->console_path);
	free(sb->pid_path);
	free(sb->api_path);
	free(sb->snap_path);
	free(sb->run_dir);
	free(sb);
}

void sb_link(struct kilnd *kd, struct sandbox *sb)
{
	sb->next = kd->sandboxes;
	kd->sandboxes = sb;
}

static void list_remove(struct sandbox **pp, struct sandbox *sb)
{
	while (*pp && *pp != sb)
		pp = &(*pp)->next;
	if (*pp)
		*pp = sb->next;
}

static void sb_unlink(struct sandbox *sb)
{
	list_remove(&sb->kd->sandboxes, sb);
}

struct sandbox *sb_find(struct kilnd *kd, const char *id)
{
	for (struct sandbox *sb = kd->sandboxes; sb; sb = sb->next)
		if (!strcmp(sb->rec.id, id))
			return sb;
	return NULL;
}

static void notify_ready(struct sandbox *sb, int err, const char *msg)
{
	sb_ready_fn cb = sb->ready_cb;

	sb->ready_cb = NULL;
	if (cb)
		cb(sb->ready_ctx, sb, err, msg);
}

void sb_cancel_ready(struct sandbox *sb)
{
	sb->ready_cb = NULL;
}

/* ---------------------------------------------------------------- processes */

static void on_vmm_exit(struct ev_loop *loop, ev_io *w, int revents);

int sb_watch_pid(struct sandbox *sb, int pid)
{
	int fd = pidfd_open(pid, 0);

	if (fd < 0)
		return -errno;
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	sb->pidfd = fd;
	sb->alive = true;
	ev_io_init(&sb->pid_w, on_vmm_exit, fd, EV_READ);
	sb->pid_w.data = sb;
	ev_io_start(sb->kd->loop, &sb->pid_w);
	console_watch(sb);
	net_sb_up(sb);
	return 0;
}

void sb_kill_vmm(struct sandbox *sb)
{
	if (!sb->alive)
		return;
	/* The leader holds the group id while it lives (we learn of its death
	 * through the pidfd first), so the group cannot be someone else's. */
	if (pidfd_send_signal(sb->pidfd, SIGKILL, NULL, 0) && errno != ESRCH)
		log_warn("sandbox %s: pidfd_send_signal: %s", sb->rec.id, strerror(errno));
	kill(-sb->rec.pid, SIGKILL);
}

static void write_pid_file(struct sandbox *sb)
{
	FILE *f = fopen(sb->pid_path, "we");

	if (!f)
		return;
	fprintf(f, "%d %llu %u\n", sb->rec.pid, (unsigned long long)sb->rec.pid_start, sb->jail_id);
	fclose(f);
}

int sb_spawn(struct sandbox *sb, const char *restore, const char *mode, const char *template_dir,
             char *msg, size_t msglen)
{
	struct kilnd_cfg *cfg = &sb->kd->cfg;
	struct vmm_args args = {
	    .vmm = cfg->vmm,
	    .kernel = sb->rec.kernel ? sb->rec.kernel : cfg->kernel,
	    .initrd = sb->rec.initrd ? sb->rec.initrd : cfg->initrd,
	    .image = sb->rec.image,
	    .host_cpuid = sb->kd->host_cpuid_path,
	    /* through the link (run_dir.h): no id in its command line */
	    .vsock_path = SB_RUN_DIR "/vsock.sock",
	    .api_path = sb->rec.flags & SB_F_API ? SB_RUN_DIR "/api.sock" : NULL,
	    .dir = sb->dir,
	    .memory_mb = sb->rec.memory_mb,
	    .cpu_count = sb->rec.cpu_count,
	    .restore = restore,
	    .restore_mode = mode,
	    .template_dir = template_dir,
	    .no_jail = cfg->no_jail,
	    .jail_mem_max_mb = cfg->jail_mem_max_mb,
	};
	struct stat st;
	pid_t pid;
	char state;
	int rc;

	/* A VMM of an older kilnd had its files in the directory itself. */
	if (!strcmp(sb->run_dir, sb->dir) && (rc = sb_run_paths(sb, false))) {
		snprintf(msg, msglen, "out of memory");
		return rc;
	}
	rc = sb_run_make(sb);
	if (rc) {
		snprintf(msg, msglen, "cannot create %s and %s/" SB_RUN_DIR ": %s", sb->run_dir,
		         sb->dir, strerror(-rc));
		return rc;
	}
	/* (after the switch above, which replaces the path) */
	args.console_path = sb->console_path;
	sb->console_mark = stat(sb->console_path, &st) ? 0 : st.st_size;
	jail_id_put(sb->kd, sb->jail_id);
	args.jail_id = sb->jail_id = jail_id_take(sb->kd);
	if (sb->jail_id && (rc = sb_out_dir_make(sb->dir))) {
		snprintf(msg, msglen, "cannot create %s/" SB_OUT_DIR ": %s", sb->dir,
		         strerror(-rc));
		jail_id_put(sb->kd, sb->jail_id);
		sb->jail_id = 0;
		return rc;
	}
	args.jail_rw = SB_OUT_DIR;
	rc = vmm_spawn(&args, &pid, msg, msglen);
	if (rc) {
		jail_id_put(sb->kd, sb->jail_id);
		sb->jail_id = 0;
		return rc;
	}
	sb->rec.pid = pid;
	sb->is_child = true;
	if (proc_stat(pid, &sb->rec.pid_start, &state))
		sb->rec.pid_start = 0;
	rc = sb_watch_pid(sb, pid);
	if (rc) {
		kill(-pid, SIGKILL);
		waitpid(pid, NULL, 0); /* already dying: does not block for long */
		snprintf(msg, msglen, "pidfd_open: %s", strerror(-rc));
		return rc;
	}
	write_pid_file(sb);
	return 0;
}

/* ---------------------------------------------------------------- boot probe */

static void probe_retry(struct sandbox *sb);

static void probe_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct sandbox *sb = ctx;
	struct agent_info info;
	uint32_t version, kind;

	switch (type) {
	case KILN_MSG_HELLO:
		if (agent_parse_hello(p, n, &version, &kind) || version != KILN_AGENT_VERSION) {
			log_warn("sandbox %s: agent speaks protocol %u, kilnd %u", sb->rec.id,
			         version, KILN_AGENT_VERSION);
			goto retry;
		}
		/* A resume runs the agent its snapshot has: what the last probe
		 * found out stays true while its HELLO says the same. */
		if (sb->rec.agent_flags != (int64_t)kind) {
			sb->rec.agent_flags = kind;
			sb->rec.agent_no_users = false;
			if (!(kind & KILN_HELLO_USERS))
				sb_users_probe(sb);
		}
		return;
	case KILN_MSG_INFO:
		if (agent_parse_info(p, n, &info))
			goto retry;
		snprintf(sb->agent_version, sizeof(sb->agent_version), "%.*s",
		         (int)info.version_len, info.version);
		agent_close(sb->probe);
		sb->probe = NULL;
		ev_timer_stop(sb->kd->loop, &sb->boot);
		if (sb->state == SB_RESUMING) {
			pause_resumed(sb);
			return;
		}
		sb->state = SB_RUNNING;
		sb_save(sb);
		spare_fill(sb);
		log_info("sandbox %s: running (agent %s, pid %d)", sb->rec.id, sb->agent_version,
		         sb->rec.pid);
		notify_ready(sb, 0, NULL);
		if (!sb->deleted) /* by the callback: freed once its VMM is gone */
			sb_settle(sb);
		return;
	default:
		goto retry;
	}
retry:
	agent_close(sb->probe);
	sb->probe = NULL;
	probe_retry(sb);
}

static void probe_close(void *ctx, int err)
{
	struct sandbox *sb = ctx;

	sb->probe = NULL;
	probe_retry(sb);
}

static const struct agent_conn_ops probe_ops = {
    .on_frame = probe_frame,
    .on_close = probe_close,
};

static void fail_start(struct sandbox *sb, const char *what)
{
	struct kilnd *kd = sb->kd;
	char *msg, id[SB_ID_LEN + 1];

	sb_kill_vmm(sb);
	agent_close(sb->probe);
	sb->probe = NULL;
	ev_timer_stop(sb->kd->loop, &sb->boot);
	ev_timer_stop(sb->kd->loop, &sb->life);
	if (sb_is_live(sb->state))
		sb->kd->nsandboxes--;
	sb->state = SB_ERROR;
	sb->rec.died_ms = now_ms();
	sb_set_reason_console(sb, what);
	sb_save(sb);
	log_warn("sandbox %s: %s", sb->rec.id, sb->rec.reason);
	msg = strdup(sb->rec.reason ? sb->rec.reason : what);
	snprintf(id, sizeof(id), "%s", sb->rec.id);
	notify_ready(sb, -EIO, msg ? msg : what);
	free(msg);
	if (sb_find(kd, id) != sb)
		return; /* the callback deleted it */
	if (sb->restored) {
		/* A clone that did not come up: whoever asked has the reason,
		 * and there is nothing of it worth keeping. */
		sb_delete(sb);
		return;
	}
	sb_settle(sb);
}

static void on_probe_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox *sb = w->data;
	char what[128];

	if (ev_now(loop) >= sb->boot_deadline) {
		snprintf(what, sizeof(what), "the guest agent did not answer within %.1f s",
		         sb->kd->cfg.boot_timeout);
		if (sb->state == SB_RESUMING)
			pause_probe_timeout(sb, what);
		else
			fail_start(sb, what);
		return;
	}
	sb->probe = agent_open(loop, sb->vsock_path, KILN_AGENT_PORT, &probe_ops, sb);
	if (!sb->probe) {
		probe_retry(sb);
		return;
	}
	if (agent_msg_hello(agent_out(sb->probe), KILN_STREAM_INFO, 0)) {
		agent_close(sb->probe);
		sb->probe = NULL;
		probe_retry(sb);
		return;
	}
	agent_flush(sb->probe);
}

static void probe_retry(struct sandbox *sb)
{
	if (sb->state != SB_STARTING && sb->state != SB_RESUMING)
		return;
	double since = ev_now(sb->kd->loop) - (sb->boot_deadline - sb->kd->cfg.boot_timeout);

	ev_timer_stop(sb->kd->loop, &sb->boot);
	/* A failed probe is a refused connect(), cheap: poll fast at first. */
	ev_timer_set(&sb->boot, since < PROBE_FAST_FOR ? PROBE_FAST : PROBE_INTERVAL, 0);
	ev_timer_start(sb->kd->loop, &sb->boot);
}

void sb_start_probe(struct sandbox *sb, double delay)
{
	sb->boot_deadline = ev_now(sb->kd->loop) + sb->kd->cfg.boot_timeout;
	ev_set_cb(&sb->boot, on_probe_timer);
	ev_timer_set(&sb->boot, delay, 0);
	ev_timer_start(sb->kd->loop, &sb->boot);
}

/* ---------------------------------------------------------------- lifetime */

static void kill_sandbox(struct sandbox *sb, enum sb_state state, const char *reason)
{
	envd_sandbox_down(sb);
	sb_kill_vmm(sb);
	agent_close(sb->probe);
	sb->probe = NULL;
	ev_timer_stop(sb->kd->loop, &sb->boot);
	ev_timer_stop(sb->kd->loop, &sb->life);
	if (sb_is_live(sb->state))
		sb->kd->nsandboxes--;
	sb->state = state;
	sb->rec.died_ms = now_ms();
	sb_set_reason(sb, "%s", reason);
	sb_save(sb);
	notify_ready(sb, -ECANCELED, reason);
}

#define PAUSE_RETRY_S 60 /* an auto-pause that failed is tried again */

static void auto_pause_done(void *ctx, struct sandbox *sb, int status, const char *msg)
{
	if (!sb || status == 204 || sb->state != SB_RUNNING)
		return;
	/* Never killed for it: the user asked to keep its state, and what
	 * failed (a full disk, ...) may pass. It runs on and is tried again. */
	sb_set_reason(sb,
	              "the sandbox's timeout expired and pausing it failed (tried again every "
	              "%d s; kiln rm deletes it): %s",
	              PAUSE_RETRY_S, msg);
	log_warn("sandbox %s: %s", sb->rec.id, sb->rec.reason);
	sb->rec.end_ms = now_ms() + PAUSE_RETRY_S * 1000;
	sb_save(sb);
	sb_arm_lifetime(sb);
}

static void on_lifetime(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox *sb = w->data;

	snprintf(sb->actor, sizeof(sb->actor), "kilnd");
	if (sb->rec.flags & SB_F_AUTO_PAUSE && sb->state == SB_RUNNING) {
		log_info("sandbox %s: lifetime ended, pausing it", sb->rec.id);
		events_sb(sb, "sandbox.timeout", json_pack("{s:s}", "action", "pause"));
		sb_request(sb, SB_OP_PAUSE, 0, auto_pause_done, NULL);
		return;
	}
	log_info("sandbox %s: lifetime ended, killing it", sb->rec.id);
	events_sb(sb, "sandbox.timeout", json_pack("{s:s}", "action", "kill"));
	kill_sandbox(sb, SB_KILLED, "the sandbox's timeout expired");
	sb_settle(sb);
}

void sb_arm_lifetime(struct sandbox *sb)
{
	double left = (double)(sb->rec.end_ms - now_ms()) / 1000.0;

	ev_timer_stop(sb->kd->loop, &sb->life);
	ev_set_cb(&sb->life, on_lifetime);
	ev_timer_set(&sb->life, left > 0 ? left : 0, 0);
	ev_timer_start(sb->kd->loop, &sb->life);
}

void sb_set_timeout(struct sandbox *sb, long long seconds)
{
	sb->rec.end_ms = now_ms() + seconds * 1000;
	sb_save(sb);
	if (sb->state == SB_STARTING || sb->state == SB_RUNNING)
		sb_arm_lifetime(sb);
}

static void describe_exit(struct sandbox *sb, char *what, size_t n)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (sb->is_child && !waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | WNOHANG) &&
	    si.si_pid) {
		if (si.si_code == CLD_EXITED)
			snprintf(what, n, "kiln-vmm (pid %d) exited with status %d", sb->rec.pid,
			         si.si_status);
		else {
			snprintf(what, n, "kiln-vmm (pid %d) was killed by signal %d (%s)",
			         sb->rec.pid, si.si_status, strsignal(si.si_status));
			jail_explain_death(sb->kd, sb->jail_id, si.si_status, what, n);
		}
		return;
	}
	/* Not our child (adopted after a restart): its status went to init. */
	snprintf(what, n, "kiln-vmm (pid %d) exited; its exit status is unknown to this kilnd",
	         sb->rec.pid);
}

static void on_vmm_exit(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sandbox *sb = w->data;
	char what[512];

	describe_exit(sb, what, sizeof(what));
	ev_io_stop(loop, &sb->pid_w);
	close(sb->pidfd);
	sb->pidfd = -1;
	sb->alive = false;
	console_unwatch(sb);
	net_sb_down(sb);
	/* Whatever else the VMM left in its group goes too. */
	kill(-sb->rec.pid, SIGKILL);
	jail_id_put(sb->kd, sb->jail_id);
	sb->jail_id = 0;
	if (sb->deleted) {
		/* Only now: a dying VMM may still have been writing there. */
		sb_remove_dirs(sb);
		list_remove(&sb->kd->dying, sb);
		sb_free(sb);
		return;
	}
	switch (sb->state) {
	case SB_STARTING:
		sb->rec.died_ms = now_ms();
		fail_start(sb, what);
		return;
	case SB_RUNNING:
		envd_sandbox_down(sb);
		ev_timer_stop(loop, &sb->life);
		sb->kd->nsandboxes--;
		sb->state = SB_ERROR;
		sb->rec.died_ms = now_ms();
		sb_set_reason_console(sb, what);
		log_warn("sandbox %s: %s", sb->rec.id, sb->rec.reason);
		sb_save(sb);
		sb_settle(sb);
		return;
	case SB_PAUSING:
	case SB_RESUMING:
		pause_vmm_exited(sb, what);
		return;
	default:
		log_debug("sandbox %s: %s", sb->rec.id, what);
		sb_save(sb);
		return;
	}
}

/* ---------------------------------------------------------------- create / delete */

/* Why a new sandbox could not be recorded, for its creator. */
static void store_unsaved(struct kilnd *kd, char *msg, size_t n)
{
	struct statvfs v;
	char space[128] = "";

	if (!statvfs(kd->cfg.data_dir, &v))
		snprintf(space, sizeof(space), " (%llu MiB free in %s)",
		         (unsigned long long)v.f_bavail * v.f_frsize >> 20, kd->cfg.data_dir);
	snprintf(msg, n,
	         "cannot record the sandbox in the state store: %s%s; nothing was started, free "
	         "some space and try again",
	         store_error(kd->store), space);
}

int sb_create(struct kilnd *kd, const struct sb_params *p, sb_ready_fn cb, void *ctx,
              struct sandbox **out, char *msg, size_t msglen)
{
	struct sandbox *sb;
	char id[SB_ID_LEN + 1];
	int rc, status = 500;

	/* Clones waiting in a warm pool give way to a sandbox that is asked for. */
	if (kd->nsandboxes >= kd->cfg.max_sandboxes && !p->pool)
		pool_evict(kd);
	if (kd->nsandboxes >= kd->cfg.max_sandboxes) {
		snprintf(msg, msglen, "too many sandboxes (limit %u)", kd->cfg.max_sandboxes);
		return 429;
	}
	do {
		if (random_id(id, SB_ID_LEN)) {
			snprintf(msg, msglen, "no randomness");
			return 500;
		}
	} while (sb_find(kd, id));
	sb = sb_alloc(kd, id);
	if (!sb) {
		snprintf(msg, msglen, "out of memory");
		return 500;
	}
	sb->rec.template_id = strdup(p->template_id);
	sb->rec.created_ms = now_ms();
	sb->rec.end_ms = sb->rec.created_ms + p->timeout_s * 1000;
	sb->rec.timeout_s = p->timeout_s;
	sb->rec.memory_mb = (int)p->memory_mb;
	sb->rec.cpu_count = (int)p->cpu_count;
	sb->rec.kernel = strdup(p->kernel);
	sb->rec.initrd = strdup(p->initrd);
	sb->rec.image = strdup_or_null(p->image);
	sb->rec.tenant = strdup_or_null(p->tenant);
	sb->rec.flags = SB_F_API | (p->auto_pause ? SB_F_AUTO_PAUSE : 0) |
	                (p->pool ? SB_F_POOL : 0) | (p->public_ports ? SB_F_PUBLIC_PORTS : 0);
	sb->restored = p->restore != NULL;
	sb->env = p->env ? json_deep_copy(p->env) : json_object();
	sb->metadata = p->metadata ? json_deep_copy(p->metadata) : json_object();
	sb->secrets =
	    p->secrets && json_object_size(p->secrets) ? json_deep_copy(p->secrets) : NULL;
	snprintf(sb->actor, sizeof(sb->actor), "%s", p->actor ? p->actor : "");
	if (p->policy && net_policy_copy(&sb->policy, p->policy)) {
		snprintf(msg, msglen, "out of memory");
		sb_free(sb);
		return 500;
	}
	sb->state = SB_STARTING;
	if (strlen(sb->vsock_path) + 8 > 107) {
		snprintf(msg, msglen, "data directory path too long for a unix socket");
		sb_free(sb);
		return 500;
	}
	/* Record first: whatever happens next, a restarted kilnd finds it. A
	 * sandbox that cannot be recorded is not started. */
	if (sb_save(sb)) {
		store_unsaved(kd, msg, msglen);
		sb_free(sb);
		return 507;
	}
	rc = dir_pool_take(kd, sb->dir) ? 0 : mkdir_p(sb->dir, 0700);
	if (rc) {
		snprintf(msg, msglen, "cannot create %s: %s", sb->dir, strerror(-rc));
		goto fail;
	}
	rc = sb_spawn(sb, p->restore, p->restore ? "template" : NULL, p->template_dir, msg, msglen);
	if (rc)
		goto fail;
	if (sb_save(sb)) {
		/* Nothing runs that the store does not know of. */
		store_unsaved(kd, msg, msglen);
		sb_kill_vmm(sb);
		waitpid(sb->rec.pid, NULL, 0); /* dying: does not block for long */
		status = 507;
		goto fail;
	}
	sb_link(kd, sb);
	kd->nsandboxes++;
	sb->ready_cb = cb;
	sb->ready_ctx = ctx;
	sb_start_probe(sb, p->restore ? 0 : 0.002);
	sb_arm_lifetime(sb);
	log_info("sandbox %s: starting %s %s%s (pid %d, %d MiB, %d vCPU)", id,
	         p->restore ? "as a clone of" : "from", p->template_id,
	         p->pool ? " for its pool" : "", sb->rec.pid, sb->rec.memory_mb, sb->rec.cpu_count);
	*out = sb;
	return 0;
fail:
	log_warn("sandbox %s: %s", id, msg);
	store_delete(kd->store, id);
	sb_remove_dirs(sb);
	sb_free(sb);
	return status;
}

void sb_claim(struct sandbox *sb, const struct sb_params *p)
{
	sb->rec.flags &= ~(SB_F_POOL | SB_F_AUTO_PAUSE | SB_F_PUBLIC_PORTS);
	if (p->auto_pause)
		sb->rec.flags |= SB_F_AUTO_PAUSE;
	if (p->public_ports)
		sb->rec.flags |= SB_F_PUBLIC_PORTS;
	sb->rec.created_ms = now_ms();
	sb->rec.timeout_s = p->timeout_s;
	free(sb->rec.tenant);
	sb->rec.tenant = strdup_or_null(p->tenant);
	json_decref(sb->env);
	json_decref(sb->metadata);
	sb->env = p->env ? json_deep_copy(p->env) : json_object();
	sb->metadata = p->metadata ? json_deep_copy(p->metadata) : json_object();
	json_decref(sb->secrets);
	sb->secrets =
	    p->secrets && json_object_size(p->secrets) ? json_deep_copy(p->secrets) : NULL;
	snprintf(sb->actor, sizeof(sb->actor), "%s", p->actor ? p->actor : "");
	if (p->policy) {
		struct net_policy pol;

		if (!net_policy_copy(&pol, p->policy)) {
			net_policy_clear(&sb->policy);
			sb->policy = pol;
		}
	}
	sb_set_timeout(sb, p->timeout_s); /* saves it */
}

void sb_delete(struct sandbox *sb)
{
	struct kilnd *kd = sb->kd;

	log_info("sandbox %s: deleted", sb->rec.id);
	notify_ready(sb, -ECANCELED, "the sandbox was deleted");
	sb_waiters_deleted(sb);
	envd_sandbox_down(sb);
	vmm_call_cancel(sb->call);
	sb->call = NULL;
	if (sb_is_live(sb->state))
		kd->nsandboxes--;
	sb_unlink(sb);
	store_delete(kd->store, sb->rec.id);
	ev_timer_stop(kd->loop, &sb->life);
	ev_timer_stop(kd->loop, &sb->boot);
	agent_close(sb->probe);
	sb->probe = NULL;
	agent_close(sb->users_probe);
	sb->users_probe = NULL;
	if (sb->alive) {
		/* Freed, and its directory removed, once the pidfd reports the
		 * exit (and reaps a child). */
		sb->deleted = true;
		sb->next = kd->dying;
		kd->dying = sb;
		sb_kill_vmm(sb);
		return;
	}
	sb_remove_dirs(sb);
	sb_free(sb);
}

void sb_housekeeping(struct kilnd *kd)
{
	int64_t cutoff = now_ms() - (int64_t)kd->cfg.retain_dead * 1000;
	struct sandbox *sb, *next;

	for (sb = kd->sandboxes; sb; sb = next) {
		next = sb->next;
		if ((sb->state == SB_KILLED || sb->state == SB_ERROR) && !sb->alive &&
		    sb->rec.died_ms && sb->rec.died_ms < cutoff)
			sb_delete(sb);
	}
}

void sb_free_all(struct kilnd *kd)
{
	/* On exit the VMMs keep running: the next kilnd re-adopts them. */
	while (kd->sandboxes) {
		struct sandbox *sb = kd->sandboxes;

		kd->sandboxes = sb->next;
		sb_free(sb);
	}
	/* Deleted ones whose VMM has not gone yet: it has been killed; the
	 * next kilnd removes what is left of their directories. */
	while (kd->dying) {
		struct sandbox *sb = kd->dying;

		kd->dying = sb->next;
		sb_free(sb);
	}
}

bool sb_agent_procs(const struct sandbox *sb)
{
	return sb->rec.agent_flags >= 0 && (sb->rec.agent_flags & KILN_HELLO_PROCS);
}

bool sb_user_ok(const struct sandbox *sb, const char *user, char *err, size_t errlen)
{
	if (!sb->rec.agent_no_users || !user || !*user || !strcmp(user, "root"))
		return true;
	snprintf(err, errlen,
	         "sandbox %s has an agent from before users (its template or snapshot is from an "
	         "older kiln): it runs requests as root only, not as '%.32s'; make the template "
	         "again (kiln template create) to have users",
	         sb->rec.id, user);
	return false;
}
