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
#include <sys/wait.h>
#include <unistd.h>

#include "agent_client.h"
#include "envd.h"
#include "sandbox.h"
#include "util.h"
#include "vmm_proc.h"

#define PROBE_FAST       0.002 /* retry interval in the first PROBE_FAST_FOR s */
#define PROBE_FAST_FOR   0.2
#define PROBE_INTERVAL   0.01
#define CONSOLE_TAIL     6    /* lines of console kept in an error reason */
#define CONSOLE_TAIL_MAX 1024 /* bytes */

static const char *const state_names[] = {"starting", "running", "killed", "error"};

const char *sb_state_name(enum sb_state s)
{
	return state_names[s];
}

static int state_from_name(const char *s)
{
	for (unsigned i = 0; i < ARRAY_SIZE(state_names); i++)
		if (!strcmp(s, state_names[i]))
			return (int)i;
	return SB_ERROR;
}

static bool is_live(enum sb_state s)
{
	return s == SB_STARTING || s == SB_RUNNING;
}

/* ---------------------------------------------------------------- persistence */

static void sb_save(struct sandbox *sb)
{
	char *env = json_dumps(sb->env, JSON_COMPACT),
	     *meta = json_dumps(sb->metadata, JSON_COMPACT);

	free(sb->rec.state);
	sb->rec.state = strdup(sb_state_name(sb->state));
	free(sb->rec.env_json);
	free(sb->rec.metadata_json);
	sb->rec.env_json = env;
	sb->rec.metadata_json = meta;
	if (store_put(sb->kd->store, &sb->rec))
		log_err("sandbox %s: could not persist state %s", sb->rec.id, sb->rec.state);
}

static void set_reason(struct sandbox *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_reason(struct sandbox *sb, const char *fmt, ...)
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
static void set_reason_console(struct sandbox *sb, const char *what)
{
	char *tail = file_tail(sb->console_path, CONSOLE_TAIL, CONSOLE_TAIL_MAX);

	if (tail && *tail)
		set_reason(sb, "%s; last console output:\n%s", what, tail);
	else
		set_reason(sb, "%s; no console output", what);
	free(tail);
}

/* ---------------------------------------------------------------- objects */

static struct sandbox *sb_alloc(struct kilnd *kd, const char *id)
{
	struct sandbox *sb = calloc(1, sizeof(*sb));

	if (!sb)
		return NULL;
	sb->kd = kd;
	sb->pidfd = -1;
	snprintf(sb->rec.id, sizeof(sb->rec.id), "%s", id);
	if (asprintf(&sb->dir, "%s/%s", kd->sandboxes_dir, id) < 0 ||
	    asprintf(&sb->vsock_path, "%s/vsock.sock", sb->dir) < 0 ||
	    asprintf(&sb->console_path, "%s/console.log", sb->dir) < 0 ||
	    asprintf(&sb->pid_path, "%s/vmm.pid", sb->dir) < 0) {
		free(sb->dir);
		free(sb);
		return NULL;
	}
	ev_init(&sb->life, NULL);
	ev_init(&sb->boot, NULL);
	sb->life.data = sb->boot.data = sb;
	return sb;
}

static void sb_free(struct sandbox *sb)
{
	envd_sandbox_down(sb);
	ev_timer_stop(sb->kd->loop, &sb->life);
	ev_timer_stop(sb->kd->loop, &sb->boot);
	if (sb->pidfd >= 0) {
		ev_io_stop(sb->kd->loop, &sb->pid_w);
		close(sb->pidfd);
	}
	agent_close(sb->probe);
	json_decref(sb->env);
	json_decref(sb->metadata);
	sb_record_free(&sb->rec);
	free(sb->dir);
	free(sb->vsock_path);
	free(sb->console_path);
	free(sb->pid_path);
	free(sb);
}

static void sb_link(struct kilnd *kd, struct sandbox *sb)
{
	sb->next = kd->sandboxes;
	kd->sandboxes = sb;
}

static void sb_unlink(struct sandbox *sb)
{
	struct sandbox **pp = &sb->kd->sandboxes;

	while (*pp && *pp != sb)
		pp = &(*pp)->next;
	if (*pp)
		*pp = sb->next;
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

static int watch_pid(struct sandbox *sb, int pid)
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
	return 0;
}

static void kill_vmm(struct sandbox *sb)
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
	fprintf(f, "%d %llu\n", sb->rec.pid, (unsigned long long)sb->rec.pid_start);
	fclose(f);
}

static int spawn_vmm(struct sandbox *sb, char *msg, size_t msglen)
{
	struct kilnd_cfg *cfg = &sb->kd->cfg;
	struct vmm_args args = {
	    .vmm = cfg->vmm,
	    .kernel = cfg->kernel,
	    .initrd = cfg->initrd,
	    .vsock_path = sb->vsock_path,
	    .console_path = sb->console_path,
	    .id = sb->rec.id,
	    .memory_mb = sb->rec.memory_mb,
	    .cpu_count = sb->rec.cpu_count,
	};
	pid_t pid;
	char state;
	int rc;

	rc = vmm_spawn(&args, &pid, msg, msglen);
	if (rc)
		return rc;
	sb->rec.pid = pid;
	sb->is_child = true;
	if (proc_stat(pid, &sb->rec.pid_start, &state))
		sb->rec.pid_start = 0;
	rc = watch_pid(sb, pid);
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
		return;
	case KILN_MSG_INFO:
		if (agent_parse_info(p, n, &info))
			goto retry;
		snprintf(sb->agent_version, sizeof(sb->agent_version), "%.*s",
		         (int)info.version_len, info.version);
		agent_close(sb->probe);
		sb->probe = NULL;
		ev_timer_stop(sb->kd->loop, &sb->boot);
		sb->state = SB_RUNNING;
		sb_save(sb);
		log_info("sandbox %s: running (agent %s, pid %d)", sb->rec.id, sb->agent_version,
		         sb->rec.pid);
		notify_ready(sb, 0, NULL);
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
	char *msg;

	kill_vmm(sb);
	agent_close(sb->probe);
	sb->probe = NULL;
	ev_timer_stop(sb->kd->loop, &sb->boot);
	ev_timer_stop(sb->kd->loop, &sb->life);
	if (is_live(sb->state))
		sb->kd->nsandboxes--;
	sb->state = SB_ERROR;
	sb->rec.died_ms = now_ms();
	set_reason_console(sb, what);
	sb_save(sb);
	log_warn("sandbox %s: %s", sb->rec.id, sb->rec.reason);
	msg = strdup(sb->rec.reason ? sb->rec.reason : what);
	notify_ready(sb, -EIO, msg ? msg : what);
	free(msg);
}

static void on_probe_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox *sb = w->data;
	char what[128];

	if (ev_now(loop) >= sb->boot_deadline) {
		snprintf(what, sizeof(what), "the guest agent did not answer within %.1f s",
		         sb->kd->cfg.boot_timeout);
		fail_start(sb, what);
		return;
	}
	sb->probe = agent_open(loop, sb->vsock_path, KILN_AGENT_PORT, &probe_ops, sb);
	if (!sb->probe) {
		probe_retry(sb);
		return;
	}
	if (agent_msg_hello(agent_out(sb->probe), KILN_STREAM_INFO)) {
		agent_close(sb->probe);
		sb->probe = NULL;
		probe_retry(sb);
		return;
	}
	agent_flush(sb->probe);
}

static void probe_retry(struct sandbox *sb)
{
	if (sb->state != SB_STARTING)
		return;
	double since = ev_now(sb->kd->loop) - (sb->boot_deadline - sb->kd->cfg.boot_timeout);

	ev_timer_stop(sb->kd->loop, &sb->boot);
	/* A failed probe is a refused connect(), cheap: poll fast at first. */
	ev_timer_set(&sb->boot, since < PROBE_FAST_FOR ? PROBE_FAST : PROBE_INTERVAL, 0);
	ev_timer_start(sb->kd->loop, &sb->boot);
}

static void start_probe(struct sandbox *sb, double delay)
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
	kill_vmm(sb);
	agent_close(sb->probe);
	sb->probe = NULL;
	ev_timer_stop(sb->kd->loop, &sb->boot);
	ev_timer_stop(sb->kd->loop, &sb->life);
	if (is_live(sb->state))
		sb->kd->nsandboxes--;
	sb->state = state;
	set_reason(sb, "%s", reason);
	sb_save(sb);
	notify_ready(sb, -ECANCELED, reason);
}

static void on_lifetime(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox *sb = w->data;

	log_info("sandbox %s: lifetime ended, killing it", sb->rec.id);
	kill_sandbox(sb, SB_KILLED, "the sandbox's timeout expired");
}

static void arm_lifetime(struct sandbox *sb)
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
	if (is_live(sb->state))
		arm_lifetime(sb);
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
		else
			snprintf(what, n, "kiln-vmm (pid %d) was killed by signal %d (%s)",
			         sb->rec.pid, si.si_status, strsignal(si.si_status));
		return;
	}
	/* Not our child (adopted after a restart): its status went to init. */
	snprintf(what, n, "kiln-vmm (pid %d) exited; its exit status is unknown to this kilnd",
	         sb->rec.pid);
}

static void on_vmm_exit(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sandbox *sb = w->data;
	char what[160];

	describe_exit(sb, what, sizeof(what));
	ev_io_stop(loop, &sb->pid_w);
	close(sb->pidfd);
	sb->pidfd = -1;
	sb->alive = false;
	/* Whatever else the VMM left in its group goes too. */
	kill(-sb->rec.pid, SIGKILL);
	if (sb->deleted) {
		sb_free(sb);
		return;
	}
	sb->rec.died_ms = now_ms();
	switch (sb->state) {
	case SB_STARTING:
		fail_start(sb, what);
		return;
	case SB_RUNNING:
		envd_sandbox_down(sb);
		ev_timer_stop(loop, &sb->life);
		sb->kd->nsandboxes--;
		sb->state = SB_ERROR;
		set_reason_console(sb, what);
		log_warn("sandbox %s: %s", sb->rec.id, sb->rec.reason);
		break;
	default:
		log_debug("sandbox %s: %s", sb->rec.id, what);
		break;
	}
	sb_save(sb);
}

/* ---------------------------------------------------------------- create / delete */

int sb_create(struct kilnd *kd, const struct sb_params *p, sb_ready_fn cb, void *ctx,
              struct sandbox **out, char *msg, size_t msglen)
{
	struct sandbox *sb;
	char id[SB_ID_LEN + 1];
	int rc;

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
	sb->rec.memory_mb = (int)p->memory_mb;
	sb->rec.cpu_count = (int)p->cpu_count;
	sb->env = p->env ? json_deep_copy(p->env) : json_object();
	sb->metadata = p->metadata ? json_deep_copy(p->metadata) : json_object();
	sb->state = SB_STARTING;
	if (strlen(sb->vsock_path) + 8 > 107) {
		snprintf(msg, msglen, "data directory path too long for a unix socket");
		sb_free(sb);
		return 500;
	}
	/* Record first: whatever happens next, a restarted kilnd finds it. */
	sb_save(sb);
	rc = mkdir_p(sb->dir, 0700);
	if (rc) {
		snprintf(msg, msglen, "cannot create %s: %s", sb->dir, strerror(-rc));
		goto fail;
	}
	rc = spawn_vmm(sb, msg, msglen);
	if (rc)
		goto fail;
	sb_save(sb);
	sb_link(kd, sb);
	kd->nsandboxes++;
	sb->ready_cb = cb;
	sb->ready_ctx = ctx;
	start_probe(sb, 0.002);
	arm_lifetime(sb);
	log_info("sandbox %s: starting (pid %d, %d MiB, %d vCPU)", id, sb->rec.pid,
	         sb->rec.memory_mb, sb->rec.cpu_count);
	*out = sb;
	return 0;
fail:
	log_warn("sandbox %s: %s", id, msg);
	store_delete(kd->store, id);
	rm_rf(sb->dir);
	sb_free(sb);
	return 500;
}

void sb_delete(struct sandbox *sb)
{
	struct kilnd *kd = sb->kd;

	log_info("sandbox %s: deleted", sb->rec.id);
	notify_ready(sb, -ECANCELED, "the sandbox was deleted");
	envd_sandbox_down(sb);
	if (is_live(sb->state))
		kd->nsandboxes--;
	sb_unlink(sb);
	store_delete(kd->store, sb->rec.id);
	rm_rf(sb->dir);
	ev_timer_stop(kd->loop, &sb->life);
	ev_timer_stop(kd->loop, &sb->boot);
	agent_close(sb->probe);
	sb->probe = NULL;
	if (sb->alive) {
		/* Freed once the pidfd reports the exit (and reaps a child). */
		sb->deleted = true;
		kill_vmm(sb);
		return;
	}
	sb_free(sb);
}

int sb_pause(struct sandbox *sb, char *msg, size_t msglen)
{
	/* Hook for snapshot-based pause: kilnd has no way to pause a VMM yet.
	 * Once it has, a paused sandbox gets its own state, connect resumes it
	 * (answering 201), and envd_sandbox_down() runs on the way out. */
	if (sb->state != SB_RUNNING) {
		snprintf(msg, msglen, "sandbox %s is %s", sb->rec.id, sb_state_name(sb->state));
		return 409;
	}
	snprintf(msg, msglen, "sandbox %s cannot be paused: this kilnd does not snapshot sandboxes",
	         sb->rec.id);
	return 409;
}

/* ---------------------------------------------------------------- restart */

static int restore_one(void *ctx, struct sb_record *r)
{
	struct kilnd *kd = ctx;
	struct sandbox *sb = sb_alloc(kd, r->id);
	int pid;

	if (!sb) {
		sb_record_free(r);
		return -ENOMEM;
	}
	sb->rec = *r;
	sb->state = state_from_name(r->state);
	sb->env = r->env_json ? json_loads(r->env_json, 0, NULL) : NULL;
	sb->metadata = r->metadata_json ? json_loads(r->metadata_json, 0, NULL) : NULL;
	if (!json_is_object(sb->env)) {
		json_decref(sb->env);
		sb->env = json_object();
	}
	if (!json_is_object(sb->metadata)) {
		json_decref(sb->metadata);
		sb->metadata = json_object();
	}
	sb_link(kd, sb);
	if (!is_live(sb->state))
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
			pid = vmm_find(sb->vsock_path);
		sb->rec.pid = pid;
	}
	if (pid && vmm_matches(pid, sb->rec.pid_start, sb->vsock_path) && !watch_pid(sb, pid) &&
	    vmm_matches(pid, sb->rec.pid_start, sb->vsock_path)) {
		/* The second check closes the window between check and pidfd. */
		kd->nsandboxes++;
		if (!sb->rec.pid_start) {
			char state;

			proc_stat(pid, &sb->rec.pid_start, &state);
		}
		log_info("sandbox %s: re-adopted kiln-vmm pid %d (%s)", sb->rec.id, pid,
		         sb_state_name(sb->state));
		if (sb->state == SB_STARTING)
			start_probe(sb, 0);
		arm_lifetime(sb);
		sb_save(sb);
		return 0;
	}
	if (sb->pidfd >= 0) {
		ev_io_stop(kd->loop, &sb->pid_w);
		close(sb->pidfd);
		sb->pidfd = -1;
		sb->alive = false;
	}
	sb->state = SB_ERROR;
	sb->rec.died_ms = now_ms();
	if (pid) {
		char what[160];

		snprintf(what, sizeof(what), "kiln-vmm (pid %d) exited while kilnd was not running",
		         pid);
		set_reason_console(sb, what);
	} else {
		set_reason_console(sb, "kilnd stopped before the sandbox's VMM was started");
	}
	log_warn("sandbox %s: %s", sb->rec.id, sb->rec.reason);
	sb_save(sb);
	return 0;
}

int sb_restore_all(struct kilnd *kd)
{
	return store_load(kd->store, restore_one, kd);
}

void sb_housekeeping(struct kilnd *kd)
{
	int64_t cutoff = now_ms() - (int64_t)kd->cfg.retain_dead * 1000;
	struct sandbox *sb, *next;

	for (sb = kd->sandboxes; sb; sb = next) {
		next = sb->next;
		if (!is_live(sb->state) && !sb->alive && sb->rec.died_ms &&
		    sb->rec.died_ms < cutoff)
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
}

/* ---------------------------------------------------------------- views */

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
	if (sb->rec.reason && !is_live(sb->state))
		json_object_set_new(j, "reason", json_string(sb->rec.reason));
	if (sb->alive)
		json_object_set_new(j, "pid", json_integer(sb->rec.pid));
	if (sb->agent_version[0])
		json_object_set_new(j, "agentVersion", json_string(sb->agent_version));
	return j;
}

char **sb_env(const struct sandbox *sb, json_t *extra)
{
	json_t *merged = json_copy(sb->env), *v;
	const char *k;
	char **env;
	size_t i = 0;

	if (!merged)
		return NULL;
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
