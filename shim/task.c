/* SPDX-License-Identifier: MIT */
/* containerd.task.v2.Task: the container is a kiln VM, booted by Create
 * (the rootfs packed, kiln-vmm started, its agent answering); its init and
 * exec'd processes are agent streams started by Start. Pause writes a kiln
 * snapshot of the VM (BUNDLE/pause.snap) and leaves it paused; Resume runs
 * it on. When the init process ends, or the VM dies, every process of the
 * container has ended (as in a Linux container whose init exits). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "task_int.h"

struct proc *find(struct shim *s, const char *exec_id)
{
	for (struct proc *p = s->procs; p; p = p->next)
		if (!strcmp(p->exec_id, exec_id ? exec_id : ""))
			return p;
	return NULL;
}

struct proc *init_proc(struct shim *s)
{
	return find(s, "");
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
	/* the container's init gone: the VM goes with everything in it */
	if (!p->exec_id[0])
		vm_stop(s);
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
	for (struct proc *p = s->procs; p; p = p->next)
		if (p->state == P_RUNNING && p->fd < 0)
			proc_exited(s, p, 255);
		else if (p->state == P_CREATED)
			proc_exited(s, p, 255);
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int do_create(struct shim *s, Containerd__Task__V2__CreateTaskRequest *rq, uint32_t *pid, char *msg,
              size_t n)
{
	struct shim_mount m[4];
	struct proc *p;
	pthread_t t;
	int err;

	if (s->procs)
		return FAIL(RPC_ALREADY_EXISTS, "task %s exists already", rq->id);
	if (strcmp(rq->id, s->id))
		return FAIL(RPC_INVALID_ARGUMENT, "this shim serves %s, not %s", s->id, rq->id);
	if (rq->checkpoint && *rq->checkpoint)
		return FAIL(RPC_UNIMPLEMENTED, "kiln's shim cannot restore a checkpoint");
	if (rq->n_rootfs > 4)
		return FAIL(RPC_INVALID_ARGUMENT, "%zu rootfs mounts", rq->n_rootfs);
	p = proc_new("", rq->stdin, rq->stdout, rq->stderr);
	if (!p)
		return FAIL(RPC_INTERNAL, "out of memory");
	if (spec_load_bundle(s->bundle, &p->spec, &s->res, &s->binds, &s->root_path, msg, n)) {
		proc_free(p);
		return RPC_INVALID_ARGUMENT;
	}
	p->spec.terminal = rq->terminal;
	for (size_t i = 0; i < rq->n_rootfs; i++)
		m[i] = (struct shim_mount){rq->rootfs[i]->type, rq->rootfs[i]->source,
		                           rq->rootfs[i]->options, rq->rootfs[i]->n_options};
	err = rootfs_prepare(s->bundle, s->root_path, m, rq->n_rootfs, &s->image,
	                     &s->rootfs_mounted, &s->image_lock, msg, n);
	if (!err)
		err = vm_boot(s, msg, n);
	/* the bind mounts are there before any process of the container runs */
	if (!err && ((err = cgroup_apply(s, &s->res, msg, n)) || (err = binds_copy(s, msg, n)))) {
		vm_stop(s);
		while (waitpid(s->vm.pid, NULL, 0) < 0 && errno == EINTR)
			;
		s->vm.pid = 0;
		s->vm.dead = true;
		jail_release(s);
	}
	if (err) {
		rootfs_release(s->bundle, s->rootfs_mounted, &s->image_lock);
		s->rootfs_mounted = false;
		proc_free(p);
		return RPC_FAILED_PRECONDITION;
	}
	pthread_create(&t, NULL, vm_watch, s);
	pthread_detach(t);
	s->procs = p;
	*pid = p->task_pid = (uint32_t)s->vm.pid;
	event_task(EV_CREATE, p, *pid);
	return 0;
}

int do_start(struct shim *s, struct proc *p, char *msg, size_t n)
{
	int err;

	if (p->state != P_CREATED || p->starting)
		return FAIL(RPC_FAILED_PRECONDITION, "process %s was started already",
		            p->exec_id[0] ? p->exec_id : s->id);
	if (s->vm.dead)
		return FAIL(RPC_FAILED_PRECONDITION, "the container's VM is gone (console: %s)",
		            s->vm.console);
	if (s->vm.paused)
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
		            p->exec_id[0] ? p->exec_id : s->id);
	}
	p->state = P_RUNNING;
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

int do_kill(struct shim *s, struct proc *p, uint32_t sig, char *msg, size_t n)
{
	if (p->state == P_STOPPED)
		return FAIL(RPC_NOT_FOUND, "process %s has exited already",
		            p->exec_id[0] ? p->exec_id : s->id);
	if (p->state == P_CREATED) {
		proc_exited(s, p, 128 + sig);
		return 0;
	}
	if (sig == SIGKILL && !p->exec_id[0]) {
		/* the init killed: the container ends with its VM, whatever the
		 * guest (frozen, or not answering) would do with the signal */
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
