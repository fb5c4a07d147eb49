/* SPDX-License-Identifier: MIT */
/* The container's VM: kiln-vmm booting the agent image initramfs over the
 * rootfs's erofs image, in the bundle directory (the shim's cwd), with its
 * vsock and API sockets and console log there; and the agent streams of
 * its processes (include/kiln/agent.h), blocking, one per process. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_proto.h"
#include "sandbox/vmm_proc.h"
#include "shim.h"

#define BOOT_TIMEOUT_MS 10000
#define IO_TIMEOUT_MS   10000

/* $env, else NAME beside (or, with up, one up from) our own binary. */
static void tool_path(const char *env, const char *rel, char *out, size_t n)
{
	char self[PATH_MAX - 64];
	ssize_t len;
	char *slash;

	if (getenv(env) && *getenv(env)) {
		snprintf(out, n, "%s", getenv(env));
		return;
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[len > 0 ? len : 0] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(out, n, "%s/%s", self, rel);
}

/* Wait for fd to be readable, at most ms. */
static int wait_in(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r = poll(&p, 1, ms);

	return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
}

static int read_full(int fd, void *p, size_t n, int ms)
{
	char *c = p;

	while (n) {
		ssize_t r;

		if (ms >= 0 && wait_in(fd, ms))
			return -ETIMEDOUT;
		r = read(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r == 0 ? -EPIPE : -errno;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

int agent_read_frame(int fd, struct kiln_frame *f, uint8_t **payload, int ms)
{
	uint8_t hdr[AGENT_HDR_LEN];
	int err = read_full(fd, hdr, sizeof(hdr), ms);

	*payload = NULL;
	if (err)
		return err;
	if (agent_hdr_decode(hdr, f))
		return -EPROTO;
	*payload = malloc(f->len ? f->len : 1);
	if (!*payload)
		return -ENOMEM;
	err = read_full(fd, *payload, f->len, ms);
	if (err) {
		free(*payload);
		*payload = NULL;
	}
	return err;
}

int agent_expect(int fd, uint16_t want, int ms, char *why, size_t n)
{
	struct kiln_frame f;
	uint8_t *pl = NULL;
	uint32_t e = EPROTO, ml = 0;
	const char *m = "";
	int err = agent_read_frame(fd, &f, &pl, ms);

	if (!err && f.type == KILN_MSG_ERROR) {
		agent_parse_error(pl, f.len, &e, &m, &ml);
		snprintf(why, n, "%.*s", (int)(ml > 2000 ? 2000 : ml), m);
		err = e ? -(int)e : -EPROTO;
	} else if (err || f.type != want) {
		err = err ? err : -EPROTO;
		snprintf(why, n, "the agent's stream: %s", strerror(-err));
	}
	free(pl);
	return err;
}

/* The agent answers an INFO stream before deadline: it is up. The dial
 * waits for the guest that long: one booting, or not running on a loaded
 * host, takes it when it can. */
static int agent_probe(struct shim *s, int64_t deadline)
{
	int64_t left = deadline - vm_mono_ms();
	struct kiln_frame f;
	uint8_t *pl;
	int fd = vm_dial(s, KILN_STREAM_INFO, left > 1 ? (int)left : 1), err;

	if (fd < 0)
		return fd;
	left = deadline - vm_mono_ms();
	err = agent_read_frame(fd, &f, &pl, left > 1 ? (int)left : 1);
	free(pl);
	close(fd);
	return err ? err : f.type == KILN_MSG_HELLO ? 0 : -EPROTO;
}

int vm_info(struct shim *s, uint64_t *mem_total_kb, uint64_t *mem_free_kb, uint32_t *nr_procs)
{
	struct agent_info info;
	struct kiln_frame f;
	uint8_t *pl = NULL;
	int fd = vm_dial(s, KILN_STREAM_INFO, IO_TIMEOUT_MS), err;

	if (fd < 0)
		return fd;
	err = agent_read_frame(fd, &f, &pl, IO_TIMEOUT_MS);
	if (!err && f.type == KILN_MSG_HELLO) {
		free(pl);
		err = agent_read_frame(fd, &f, &pl, IO_TIMEOUT_MS);
	}
	if (!err && (f.type != KILN_MSG_INFO || agent_parse_info(pl, f.len, &info)))
		err = -EPROTO;
	if (!err) {
		*mem_total_kb = info.mem_total_kb;
		*mem_free_kb = info.mem_free_kb;
		*nr_procs = info.nr_procs;
	}
	free(pl);
	close(fd);
	return err;
}

static bool vmm_exited(struct shim *s, int *status)
{
	pid_t r = waitpid(s->vm.pid, status, WNOHANG);

	return r == s->vm.pid;
}

/* Why the child's write pre->v[pre->failed] (its cgroup's tasks file, its
 * oom_score_adj) failed with err. */
static void pre_failed(const struct shim *s, const struct vmm_writes *pre, int err, char *msg,
                       size_t n)
{
	const struct vmm_write *w = &pre->v[pre->failed];

	if (strstr(w->path, "oom_score_adj"))
		snprintf(msg, n,
		         "process.oomScoreAdj %s: the kernel refused it for kiln-vmm (%s)%s",
		         w->val, strerror(-err),
		         err == -EACCES ? ": lowering it needs CAP_SYS_RESOURCE, which the shim "
		                          "has not got; in containerd's CRI config "
		                          "restrict_oom_score_adj = true keeps it from below the "
		                          "shim's own"
		                        : "");
	else
		snprintf(msg, n,
		         "kiln-vmm cannot join the pod's cgroup (linux.cgroupsPath %s) "
		         "through %s: %s",
		         s->pod.cgroup, w->path, strerror(-err));
}

/* Start kiln-vmm: jailed (as kilnd does: pid 1 of a pid namespace of its
 * own, with a uid and writable directory of its own), or, when the shim is
 * not root or KILN_SHIM_NO_JAIL is set, as our plain child; either writes
 * pre's files (the pod's cgroup, its OOM score) before its exec. */
static int vmm_start(struct shim *s, const char *vmm, char *const argv[], int log,
                     struct vmm_writes *pre, pid_t *pid, char *msg, size_t n)
{
	int err;

	if (s->vm.jail_id) {
		err = log < 0 ? -EBADF : vmm_clone(vmm, argv, NULL, log, pre, pid);
		if (err && pre->failed < pre->n)
			pre_failed(s, pre, err, msg, n);
		else if (err)
			snprintf(msg, n, "cannot start %s in its pid namespace: %s", vmm,
			         strerror(-err));
		return err;
	}
	*pid = fork();
	if (*pid < 0) {
		err = -errno;
		snprintf(msg, n, "fork: %s", strerror(errno));
		return err;
	}
	if (*pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		dup2(null, 0);
		if (log >= 0) {
			dup2(log, 1);
			dup2(log, 2);
		}
		if ((err = vmm_writes_apply(pre))) {
			pre_failed(s, pre, err, msg, n);
			dprintf(2, "containerd-shim-kiln-v2: %s\n", msg);
			_exit(126);
		}
		execv(vmm, argv);
		dprintf(2, "containerd-shim-kiln-v2: cannot run %s: %s\n", vmm, strerror(errno));
		_exit(127);
	}
	return 0;
}

int vm_boot(struct shim *s, const char *image, char *msg, size_t n)
{
	char vmm[PATH_MAX], kernel[PATH_MAX], initrd[PATH_MAX], mem[32], id[16], oom[16];
	struct timespec tick = {0, 5 * 1000 * 1000};
	struct vmm_write w[PODCG_MAX_H + 1];
	struct vmm_writes pre = {.v = w};
	struct podcg_join join;
	char *argv[24];
	int st, log, argc = 0, err;
	pid_t pid;

	tool_path("KILN_SHIM_VMM", "kiln-vmm", vmm, sizeof(vmm));
	tool_path("KILN_SHIM_KERNEL", "../guest/kiln-kernel", kernel, sizeof(kernel));
	tool_path("KILN_SHIM_INITRD", "../initramfs/agent-image.cpio", initrd, sizeof(initrd));
	snprintf(mem, sizeof(mem), "%uM", s->res.mem_mb);
	snprintf(s->vm.vsock, sizeof(s->vm.vsock), "vsock.sock");
	snprintf(s->vm.api, sizeof(s->vm.api), "api.sock");
	snprintf(s->vm.console, sizeof(s->vm.console), "%s/console.log", s->bundle);
	if ((err = jail_prepare(s, msg, n)))
		return err;
	if ((err = podcg_prepare(s, &join, msg, n))) {
		jail_release(s);
		return err;
	}
	for (size_t i = 0; i < join.n; i++)
		w[pre.n++] = (struct vmm_write){join.file[i], "0"};
	if (s->pod.has_oom) {
		snprintf(oom, sizeof(oom), "%d", s->pod.oom_score_adj);
		w[pre.n++] = (struct vmm_write){"/proc/self/oom_score_adj", oom};
	}
	pre.failed = pre.n; /* none (yet) */
	unlink(s->vm.vsock);
	unlink(s->vm.api);
#define ARG(a) (argv[argc++] = (char *)(a))
	ARG(vmm);
	ARG("--kernel");
	ARG(kernel);
	ARG("--initrd");
	ARG(initrd);
	ARG("--image");
	ARG(image);
	ARG("--mem");
	ARG(mem);
	ARG("--vsock");
	ARG("3,vsock.sock");
	ARG("--api-sock");
	ARG("api.sock");
	if (s->vm.no_jail) {
		ARG("--no-jail");
	} else if (s->vm.jail_id) {
		snprintf(id, sizeof(id), "%u", s->vm.jail_id);
		ARG("--jail-id");
		ARG(id);
		ARG("--jail-rw");
		ARG("vmm-out");
		if (join.n) /* the pod's cgroup is its leaf */
			ARG("--jail-cgroup-joined");
	}
	argv[argc] = NULL;
#undef ARG
	log = open("console.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if ((err = vmm_start(s, vmm, argv, log, &pre, &pid, msg, n))) {
		if (log >= 0)
			close(log);
		jail_release(s);
		return err;
	}
	if (log >= 0)
		close(log);
	s->vm.pid = pid;
	/* for `delete` after a shim that died */
	log = open("vmm.pid", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (log >= 0) {
		dprintf(log, "%d\n", (int)pid);
		close(log);
	}
	for (int64_t deadline = vm_mono_ms() + BOOT_TIMEOUT_MS; vm_mono_ms() < deadline;) {
		if (vmm_exited(s, &st)) {
			s->vm.pid = 0;
			s->vm.dead = true;
			jail_release(s);
			snprintf(
			    msg, n,
			    "kiln-vmm (%s) exited with status %d before its agent answered; its "
			    "console is %s (kernel %s, initrd %s)",
			    vmm, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
			    s->vm.console, kernel, initrd);
			return -EIO;
		}
		if (!access(s->vm.vsock, F_OK) && !agent_probe(s, deadline))
			return 0;
		nanosleep(&tick, NULL);
	}
	snprintf(msg, n, "the VM's agent did not answer within %d s; its console is %s",
	         BOOT_TIMEOUT_MS / 1000, s->vm.console);
	vm_stop(s);
	while (waitpid(s->vm.pid, NULL, 0) < 0 && errno == EINTR)
		;
	s->vm.pid = 0;
	s->vm.dead = true;
	jail_release(s);
	return -ETIMEDOUT;
}

void vm_stop(struct shim *s)
{
	if (s->vm.pid > 0) {
		kill(-s->vm.pid, SIGKILL);
		kill(s->vm.pid, SIGKILL);
	}
}

int vm_api(struct shim *s, const char *req, char *reply, size_t n)
{
	int fd = vm_connect_unix(s->vm.api), err;
	size_t got = 0;

	if (fd < 0)
		return fd;
	err = vm_write_all(fd, req, strlen(req));
	if (!err)
		err = vm_write_all(fd, "\n", 1);
	while (!err && got + 1 < n) {
		ssize_t r;

		if ((err = wait_in(fd, 60000)))
			break;
		r = read(fd, reply + got, n - 1 - got);
		if (r <= 0) {
			err = -EIO;
			break;
		}
		got += (size_t)r;
		if (reply[got - 1] == '\n')
			break;
	}
	reply[got] = 0;
	close(fd);
	return err;
}

int vm_proc_start(struct shim *s, struct proc *p, char *msg, size_t n)
{
	struct agent_start st = {
	    .argv = (const char *const *)p->spec.argv,
	    .env = (const char *const *)p->spec.env,
	    .cwd = p->spec.cwd,
	    .uid = p->spec.uid,
	    .cols = p->spec.cols,
	    .rows = p->spec.rows,
	    .n_rlimits = p->spec.n_rlimits,
	    /* a root trailer, "/" too, gives the container a PID namespace of
	     * its own in the guest (initramfs/agent/pidns.c) */
	    .root = p->ctr && p->ctr->guest_root ? p->ctr->guest_root : "/",
	    /* or the pod's first container's (shareProcessNamespace) */
	    .pidns = p->ctr && p->ctr->pid_shared ? "/" : NULL,
	};
	struct agent_rlimit lim[SHIM_MAX_RLIMITS];
	char why[400];
	struct kiln_frame f;
	struct buf b = {0};
	uint8_t *pl = NULL;
	int fd, err;

	for (uint32_t i = 0; i < p->spec.n_rlimits; i++)
		lim[i] = (struct agent_rlimit){p->spec.rlimits[i].resource, p->spec.rlimits[i].soft,
		                               p->spec.rlimits[i].hard};
	st.rlimits = lim;
	fd = vm_dial(s, p->spec.terminal ? KILN_STREAM_PTY : KILN_STREAM_EXEC, IO_TIMEOUT_MS);
	if (fd < 0) {
		vm_dial_explain(fd, s->vm.vsock, IO_TIMEOUT_MS, why, sizeof(why));
		snprintf(msg, n, "cannot reach the VM's agent: %s", why);
		return fd;
	}
	err = agent_msg_start(&b, &st);
	if (!err)
		err = vm_write_all(fd, buf_head(&b), buf_avail(&b));
	buf_free(&b);
	if (err) {
		snprintf(msg, n, "the process's args or environment are too large for the agent");
		goto fail;
	}
	/* HELLO, then STARTED or ERROR */
	for (int i = 0; i < 2; i++) {
		free(pl);
		err = agent_read_frame(fd, &f, &pl, IO_TIMEOUT_MS);
		if (err) {
			snprintf(msg, n, "the agent's stream broke: %s", strerror(-err));
			goto fail;
		}
		if (f.type == KILN_MSG_ERROR) {
			uint32_t e, ml;
			const char *m;

			err = agent_parse_error(pl, f.len, &e, &m, &ml) ? -EPROTO : -(int)e;
			if (err == -EPROTO)
				snprintf(msg, n, "the agent refused the process");
			else
				snprintf(msg, n, "%.*s", (int)ml, m);
			goto fail;
		}
		if (i == 1 && (f.type != KILN_MSG_STARTED || agent_parse_u32(pl, f.len, &p->pid))) {
			snprintf(msg, n, "the agent answered START with frame type %u", f.type);
			err = -EPROTO;
			goto fail;
		}
	}
	free(pl);
	p->fd = fd;
	return 0;
fail:
	free(pl);
	close(fd);
	return err ? err : -EIO;
}

static int send_locked(struct proc *p, struct buf *b)
{
	int err;

	pthread_mutex_lock(&p->wlock);
	err = p->fd < 0 ? -ESRCH : vm_write_all(p->fd, buf_head(b), buf_avail(b));
	pthread_mutex_unlock(&p->wlock);
	buf_free(b);
	return err;
}

int vm_proc_signal(struct proc *p, uint32_t sig)
{
	struct buf b = {0};

	if (sig < 1 || sig > 64)
		return -EINVAL;
	return agent_msg_u32(&b, KILN_MSG_SIGNAL, sig) ?: send_locked(p, &b);
}

int vm_proc_resize(struct proc *p, uint16_t cols, uint16_t rows)
{
	struct buf b = {0};

	return agent_msg_resize(&b, cols, rows) ?: send_locked(p, &b);
}

int vm_proc_close_stdin(struct proc *p)
{
	struct buf b = {0};
	bool was;

	/* CloseIO and the stdin pump race to it: one EOF goes out */
	pthread_mutex_lock(&p->wlock);
	was = p->stdin_closed;
	p->stdin_closed = true;
	pthread_mutex_unlock(&p->wlock);
	if (was)
		return 0;
	return agent_msg_empty(&b, KILN_MSG_STDIN_EOF) ?: send_locked(p, &b);
}

int vm_proc_stdin(struct proc *p, const void *data, size_t n)
{
	struct buf b = {0};

	int err = agent_msg_data(&b, KILN_MSG_STDIN, data, n);

	if (err)
		return err;
	pthread_mutex_lock(&p->wlock);
	/* no input after the EOF (the agent would drop it) */
	err = p->stdin_closed || p->fd < 0 ? -EPIPE
	                                   : vm_write_all(p->fd, buf_head(&b), buf_avail(&b));
	pthread_mutex_unlock(&p->wlock);
	buf_free(&b);
	return err;
}
