/* SPDX-License-Identifier: MIT */
/* containerd.task.v2.Task: a pod (or a lone container) is a kiln VM,
 * booted by its first container's Create (the rootfs packed, kiln-vmm
 * started, its agent answering); each further container of the pod gets
 * its root copied into that VM by its Create (ctr_root.c). Processes are
 * agent streams started by Start. Pause writes a kiln snapshot of the VM
 * (BUNDLE/pause.snap) and leaves it paused; Resume runs it on. When a
 * container's init ends, its other processes are killed (as in a Linux
 * container whose init exits); the VM ends when no container's init is
 * left, or when it dies, and with it every process of the pod. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "task_int.h"

struct proc *find(struct ctr *c, const char *exec_id)
{
	for (struct proc *p = c ? c->procs : NULL; p; p = p->next)
		if (!strcmp(p->exec_id, exec_id ? exec_id : ""))
			return p;
	return NULL;
}

struct proc *init_proc(struct ctr *c)
{
	return find(c, "");
}

struct ctr *ctr_find(struct shim *s, const char *id)
{
	for (struct ctr *c = s->ctrs; c; c = c->next)
		if (!strcmp(c->id, id ? id : ""))
			return c;
	return NULL;
}

bool pod_busy(struct shim *s, const struct ctr *except)
{
	for (struct ctr *c = s->ctrs; c; c = c->next) {
		struct proc *p = init_proc(c);

		if (c != except && p && p->state != P_STOPPED)
			return true;
	}
	return false;
}

struct ctr *ctr_new(const char *id, const char *bundle)
{
	struct ctr *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->image_lock = -1;
	c->id = strdup(id);
	c->bundle = strdup(bundle);
	if (!c->id || !c->bundle) {
		ctr_free(c);
		return NULL;
	}
	return c;
}

void ctr_free(struct ctr *c)
{
	spec_binds_free(&c->binds);
	free(c->id);
	free(c->bundle);
	free(c->image);
	free(c->root_path);
	free(c->guest_root);
	free(c);
}

Google__Protobuf__Timestamp *ts(int64_t ns, Google__Protobuf__Timestamp *t)
{
	google__protobuf__timestamp__init(t);
	t->seconds = ns / 1000000000;
	t->nanos = (int32_t)(ns % 1000000000);
	return t;
}

void proc_exited(struct shim *s, struct proc *p, uint32_t status)
{
	if (p->state == P_STOPPED)
		return;
	p->state = P_STOPPED;
	p->exit_status = status;
	p->exited_ns = now_ns();
	event_task(EV_EXIT, p, p->task_pid);
	/* the pod's last init gone: the VM goes with everything in it; a
	 * container's init gone: its other processes go */
	if (!p->exec_id[0] && !pod_busy(s, NULL))
		vm_stop(s);
	else if (!p->exec_id[0])
		for (struct proc *q = p->ctr->procs; q; q = q->next)
			if (q != p && q->state == P_RUNNING)
				vm_proc_signal(q, SIGKILL);
	pthread_cond_broadcast(&s->changed);
}

void proc_free(struct proc *p)
{
	if (p->wake[0] >= 0) {
		close(p->wake[0]);
		close(p->wake[1]);
	}
	spec_free(&p->spec);
	free(p->exec_id);
	free(p->stdin_path);
	free(p->stdout_path);
	free(p->stderr_path);
	free(p);
}

struct proc *proc_new(const char *exec_id, const char *in, const char *out, const char *err)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->fd = -1;
	p->wake[0] = p->wake[1] = -1;
	pthread_mutex_init(&p->wlock, NULL);
	p->exec_id = strdup(exec_id ? exec_id : "");
	p->stdin_path = strdup(in ? in : "");
	p->stdout_path = strdup(out ? out : "");
	p->stderr_path = strdup(err ? err : "");
	if (!p->exec_id || !p->stdin_path || !p->stdout_path || !p->stderr_path) {
		proc_free(p);
		return NULL;
	}
	return p;
}

/* Watches kiln-vmm: when it exits every process still running has ended
 * (a crashed guest is a failed task, never a hung one). */
static void *vm_watch(void *arg)
{
	struct shim *s = arg;
	int st;

	while (waitpid(s->vm.pid, &st, 0) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&s->lock);
	shim_log("kiln-vmm %d exited (%s %d)", s->vm.pid, WIFEXITED(st) ? "status" : "signal",
	         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	s->vm.dead = true;
	s->vm.pid = 0;
	jail_release(s);
	net_stop(s);
	for (struct ctr *c = s->ctrs; c; c = c->next)
		for (struct proc *p = c->procs; p; p = p->next)
			if ((p->state == P_RUNNING && p->fd < 0) || p->state == P_CREATED)
				proc_exited(s, p, 255);
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* The pod's first container: its rootfs packed, the VM booted over it. */
static int create_owner(struct shim *s, struct ctr *c, struct proc *p,
                        Containerd__Task__V2__CreateTaskRequest *rq, char *msg, size_t n)
{
	struct shim_mount m[4];
	pthread_t t;
	int err;

	if (spec_load_bundle(c->bundle, &p->spec, &s->res, &c->binds, &c->root_path, &s->pod, msg,
	                     n) ||
	    pidshare_spec(c->bundle, 0, &c->pid_shared, msg, n))
		return RPC_INVALID_ARGUMENT;
	p->spec.terminal = rq->terminal;
	for (size_t i = 0; i < rq->n_rootfs; i++)
		m[i] = (struct shim_mount){rq->rootfs[i]->type, rq->rootfs[i]->source,
		                           rq->rootfs[i]->options, rq->rootfs[i]->n_options};
	err = rootfs_prepare(c->bundle, c->root_path, m, rq->n_rootfs, &c->image,
	                     &c->rootfs_mounted, &c->image_lock, msg, n);
	if (!err)
		err = vm_boot(s, c->image, msg, n);
	/* the bind mounts are there before any process of the container runs */
	if (!err && ((err = cgroup_apply(s, &s->res, msg, n)) ||
	             (err = net_start(s, c->bundle, &c->binds, msg, n)) ||
	             (err = binds_copy(s, &c->binds, msg, n)))) {
		net_stop(s);
		vm_stop(s);
		while (waitpid(s->vm.pid, NULL, 0) < 0 && errno == EINTR)
			;
		s->vm.pid = 0;
		s->vm.dead = true;
		jail_release(s);
	}
	if (err) {
		rootfs_release(c->bundle, c->rootfs_mounted, &c->image_lock);
		c->rootfs_mounted = false;
		return RPC_FAILED_PRECONDITION;
	}
	pthread_create(&t, NULL, vm_watch, s);
	pthread_detach(t);
	c->owner = true;
	return 0;
}

/* A container id as a guest path component: containerd's own rule. */
static bool id_ok(const char *id)
{
	size_t k = strlen(id);

	if (!k || k > 76 || id[0] == '.' || id[0] == '-')
		return false;
	return strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == k;
}

/* A further container of the pod: its root copied into the running VM. */
static int create_in_pod(struct shim *s, struct ctr *c, struct proc *p,
                         Containerd__Task__V2__CreateTaskRequest *rq, char *msg, size_t n)
{
	char dir[PATH_MAX];
	struct spec_res res;
	struct shim_mount m;
	int64_t t0 = now_ns(), t_base;
	int err;

	if (!id_ok(c->id))
		return FAIL(RPC_INVALID_ARGUMENT, "container id '%.100s' is not a name", c->id);
	if (s->vm.dead || s->vm.pid <= 0)
		return FAIL(RPC_FAILED_PRECONDITION, "the pod's VM is gone (console: %s)",
		            s->vm.console);
	if (s->vm.paused)
		return FAIL(RPC_FAILED_PRECONDITION, "the pod is paused: resume it first");
	if (rq->n_rootfs > 1)
		return FAIL(RPC_INVALID_ARGUMENT, "the rootfs is %zu mounts; kiln's shim takes one",
		            rq->n_rootfs);
	if (spec_load_bundle(c->bundle, &p->spec, &res, &c->binds, &c->root_path, NULL, msg, n) ||
	    pidshare_spec(c->bundle, s->vm.pid, &c->pid_shared, msg, n))
		return RPC_INVALID_ARGUMENT;
	p->spec.terminal = rq->terminal;
	c->mem_mb = res.mem_set ? res.mem_mb : 0;
	c->cpu_milli = spec_res_millicpus(&res);
	c->cpu_shares = spec_res_shares(&res);
	if (c->pid_shared && (c->mem_mb || c->cpu_milli || c->cpu_shares)) {
		/* its bounds would be its own namespace's: the pod VM's hold it */
		shim_log("%s: shares the pod's PID namespace: its memory limit, CPU quota and "
		         "shares are not applied",
		         c->id);
		c->mem_mb = c->cpu_milli = c->cpu_shares = 0;
	}
	if (asprintf(&c->guest_root, "/run/kiln/containers/%s", c->id) < 0) {
		c->guest_root = NULL;
		return FAIL(RPC_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < c->binds.n; i++) {
		char *dst;

		if (asprintf(&dst, "%s%s", c->guest_root, c->binds.v[i].dst) < 0)
			return FAIL(RPC_INTERNAL, "out of memory");
		free(c->binds.v[i].dst);
		c->binds.v[i].dst = dst;
	}
	if (rq->n_rootfs)
		m = (struct shim_mount){rq->rootfs[0]->type, rq->rootfs[0]->source,
		                        rq->rootfs[0]->options, rq->rootfs[0]->n_options};
	err = rootfs_mount(c->bundle, c->root_path, &m, rq->n_rootfs, dir, sizeof(dir),
	                   &c->rootfs_mounted, msg, n);
	if (err)
		return RPC_FAILED_PRECONDITION;
	/* the copy talks to the agent: other calls go on meanwhile */
	pthread_mutex_unlock(&s->lock);
	err = ctr_root_copy(s, c, dir, msg, n);
	if (!err)
		err = binds_copy(s, &c->binds, msg, n);
	t_base = now_ns();
	if (!err)
		err = ctr_root_base(s, c, msg, n);
	t_base = now_ns() - t_base;
	if (err)
		ctr_root_remove(s, c->guest_root);
	pthread_mutex_lock(&s->lock);
	if (!err && ctr_find(s, c->id))
		err = FAIL(-EEXIST, "task %s was created meanwhile", c->id);
	if (err && err != -EEXIST && s->vm.dead)
		snprintf(msg, n, "the pod's VM is gone (console: %s)", s->vm.console);
	if (err) {
		rootfs_release(c->bundle, c->rootfs_mounted, &c->image_lock);
		c->rootfs_mounted = false;
		return err == -EEXIST ? RPC_ALREADY_EXISTS : RPC_FAILED_PRECONDITION;
	}
	shim_log("container %s: its root copied into the pod's VM at %s in %lld ms (its change "
	         "bits cleared in %lld of them)",
	         c->id, c->guest_root, (long long)((now_ns() - t0) / 1000000),
	         (long long)(t_base / 1000000));
	return 0;
}

int do_create(struct shim *s, Containerd__Task__V2__CreateTaskRequest *rq, uint32_t *pid, char *msg,
              size_t n)
{
	const char *bundle = rq->bundle && *rq->bundle ? rq->bundle : s->bundle;
	struct ctr *c;
	struct proc *p;
	int code;

	if (ctr_find(s, rq->id))
		return FAIL(RPC_ALREADY_EXISTS, "task %s exists already", rq->id);
	if (!s->ctrs && strcmp(rq->id, s->id))
		return FAIL(RPC_INVALID_ARGUMENT, "this shim serves %s, not %s", s->id, rq->id);
	if (rq->checkpoint && *rq->checkpoint)
		return FAIL(RPC_UNIMPLEMENTED, "kiln's shim cannot restore a checkpoint");
	if (rq->n_rootfs > 4)
		return FAIL(RPC_INVALID_ARGUMENT, "%zu rootfs mounts", rq->n_rootfs);
	if (bundle[0] != '/')
		return FAIL(RPC_INVALID_ARGUMENT, "the bundle %.200s is not absolute", bundle);
	c = ctr_new(rq->id, bundle);
	p = c ? proc_new("", rq->stdin, rq->stdout, rq->stderr) : NULL;
	if (!p) {
		if (c)
			ctr_free(c);
		return FAIL(RPC_INTERNAL, "out of memory");
	}
	p->ctr = c;
	code = s->ctrs ? create_in_pod(s, c, p, rq, msg, n) : create_owner(s, c, p, rq, msg, n);
	if (code) {
		proc_free(p);
		ctr_free(c);
		return code;
	}
	c->procs = p;
	c->next = s->ctrs;
	s->ctrs = c;
	*pid = p->task_pid = (uint32_t)s->vm.pid;
	event_task(EV_CREATE, p, *pid);
	return 0;
}

int do_start(struct shim *s, struct proc *p, char *msg, size_t n)
{
	int err;

	if (p->state != P_CREATED || p->starting)
		return FAIL(RPC_FAILED_PRECONDITION, "process %s was started already",
		            p->exec_id[0] ? p->exec_id : p->ctr->id);
	if (s->vm.dead)
		return FAIL(RPC_FAILED_PRECONDITION, "the container's VM is gone (console: %s)",
		            s->vm.console);
	if (s->vm.paused || p->ctr->paused)
		return FAIL(RPC_FAILED_PRECONDITION, "the container is paused: resume it first");
	/* the agent round trip happens unlocked: other calls go on meanwhile */
	p->starting = true;
	pthread_mutex_unlock(&s->lock);
	err = vm_proc_start(s, p, msg, n);
	pthread_mutex_lock(&s->lock);
	p->starting = false;
	if (err) {
		proc_exited(s, p, err == -ENOENT ? 127 : 126);
		return RPC_FAILED_PRECONDITION;
	}
	if (p->state != P_CREATED) {
		/* killed while it was being started */
		close(p->fd);
		p->fd = -1;
		return FAIL(RPC_FAILED_PRECONDITION, "process %s was killed while starting",
		            p->exec_id[0] ? p->exec_id : p->ctr->id);
	}
	p->state = P_RUNNING;
	/* an app container's own bounds, once its namespace is there */
	if (!p->exec_id[0] &&
	    ((p->ctr->mem_mb && ctr_limit(s, p->ctr, p->ctr->mem_mb, msg, n)) ||
	     (p->ctr->cpu_milli && ctr_cpu(s, p->ctr, p->ctr->cpu_milli, msg, n)))) {
		shim_log("%s: %s", p->ctr->id, msg);
		vm_proc_signal(p, SIGKILL);
		return RPC_FAILED_PRECONDITION;
	}
	/* its weight, a relative one, is no reason to fail the start (an
	 * agent without SHARES, from an older snapshot, refuses it) */
	if (!p->exec_id[0] && p->ctr->cpu_shares && p->ctr->cpu_shares != SPEC_SHARES_DEFAULT &&
	    ctr_shares(s, p->ctr, p->ctr->cpu_shares, msg, n))
		shim_log("%s: its cpu shares %u are not applied: %s", p->ctr->id,
		         p->ctr->cpu_shares, msg);
	if (p->exec_id[0])
		p->task_pid = p->pid;
	event_task(EV_START, p, p->task_pid);
	/* the pump first: the reader, at the exit, wakes it if there is one */
	if (p->stdin_path[0] && !pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) &&
	    !pthread_create(&p->stdin_pump, NULL, io_stdin, p))
		p->has_pump = true; /* joined by Delete */
	else
		vm_proc_close_stdin(p);
	if (pthread_create(&p->reader, NULL, io_reader, p)) {
		if (p->has_pump && write(p->wake[1], "", 1) < 0)
			shim_log("cannot wake the stdin pump: %s", strerror(errno));
		proc_exited(s, p, 255);
		return FAIL(RPC_INTERNAL, "cannot start a thread for the process's output");
	}
	p->has_reader = true;
	return 0;
}

/* Until the guest reports p's exit (locked): KILL_GRACE_MS, or longer
 * while its writes are being saved (rwlayer.c's own time limits). */
#define KILL_GRACE_MS 2000
static void wait_own_end(struct shim *s, struct proc *p)
{
	int64_t end = now_ns() + (int64_t)KILL_GRACE_MS * 1000000;

	while (p->state != P_STOPPED && !s->vm.dead && (p->ctr->rw_saving || now_ns() < end)) {
		int64_t at = p->ctr->rw_saving ? now_ns() + 100000000 : end;
		struct timespec ts = {at / 1000000000, at % 1000000000};

		pthread_cond_timedwait(&s->changed, &s->lock, &ts);
	}
}

int do_kill(struct shim *s, struct proc *p, uint32_t sig, char *msg, size_t n)
{
	if (p->state == P_STOPPED)
		return FAIL(RPC_NOT_FOUND, "process %s has exited already",
		            p->exec_id[0] ? p->exec_id : p->ctr->id);
	if (p->state == P_CREATED) {
		proc_exited(s, p, 128 + sig);
		return 0;
	}
	if (sig == SIGKILL && !p->exec_id[0] && (!pod_busy(s, p->ctr) || s->vm.dead)) {
		/* the pod's last init killed: the pod ends with its VM, whatever
		 * the guest (frozen, or not answering) would do with the signal;
		 * a guest that answers ends it itself first, saving its writes */
		char root[4096];

		if (!s->vm.dead && !s->vm.paused && rwlayer_root(p->ctr, root, sizeof(root)) &&
		    !vm_proc_signal(p, SIGKILL))
			wait_own_end(s, p);
		proc_exited(s, p, 128 + SIGKILL);
		return 0;
	}
	if (s->vm.paused)
		return FAIL(RPC_FAILED_PRECONDITION,
		            "the container is paused: resume it first (SIGKILL ends it paused)");
	int err = vm_proc_signal(p, sig);

	if (err == -EINVAL)
		return FAIL(RPC_INVALID_ARGUMENT, "signal %u: signals are 1 to 64", sig);
	if (err)
		return FAIL(RPC_FAILED_PRECONDITION, "signal %u cannot reach the process: %s", sig,
		            strerror(-err));
	return 0;
}

int vm_op(struct shim *s, const char *req, char *msg, size_t n)
{
	char reply[8192];
	int err;

	pthread_mutex_unlock(&s->lock);
	err = vm_api(s, req, reply, sizeof(reply));
	pthread_mutex_lock(&s->lock);
	if (err)
		return FAIL(RPC_INTERNAL, "the VM's API socket: %s", strerror(-err));
	if (!strstr(reply, "\"ok\":true") && !strstr(reply, "\"ok\": true"))
		return FAIL(RPC_INTERNAL, "the VM refused: %.900s", reply);
	return 0;
}
