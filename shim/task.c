/* SPDX-License-Identifier: MIT */
/* containerd.task.v2.Task: the container is a kiln VM, booted by Create
 * (the rootfs packed, kiln-vmm started, its agent answering); its init and
 * exec'd processes are agent streams started by Start. Pause writes a kiln
 * snapshot of the VM (BUNDLE/pause.snap) and leaves it paused; Resume runs
 * it on. When the init process ends, or the VM dies, every process of the
 * container has ended (as in a Linux container whose init exits). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen/shim.pb-c.h"
#include "shim.h"

#define FAIL(code, ...) (snprintf(msg, n, __VA_ARGS__), (code))

static struct proc *find(struct shim *s, const char *exec_id)
{
	for (struct proc *p = s->procs; p; p = p->next)
		if (!strcmp(p->exec_id, exec_id ? exec_id : ""))
			return p;
	return NULL;
}

static struct proc *init_proc(struct shim *s)
{
	return find(s, "");
}

static Google__Protobuf__Timestamp *ts(int64_t ns, Google__Protobuf__Timestamp *t)
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

static void proc_free(struct proc *p)
{
	spec_free(&p->spec);
	free(p->exec_id);
	free(p->stdin_path);
	free(p->stdout_path);
	free(p->stderr_path);
	free(p);
}

static struct proc *proc_new(const char *exec_id, const char *in, const char *out, const char *err)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->fd = -1;
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
	for (struct proc *p = s->procs; p; p = p->next)
		if (p->state == P_RUNNING && p->fd < 0)
			proc_exited(s, p, 255);
		else if (p->state == P_CREATED)
			proc_exited(s, p, 255);
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static int do_create(struct shim *s, Containerd__Task__V2__CreateTaskRequest *rq, uint32_t *pid,
                     char *msg, size_t n)
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
	if (spec_load_bundle(s->bundle, &p->spec, &s->mem_mb, msg, n)) {
		proc_free(p);
		return RPC_INVALID_ARGUMENT;
	}
	p->spec.terminal = rq->terminal;
	for (size_t i = 0; i < rq->n_rootfs; i++)
		m[i] = (struct shim_mount){rq->rootfs[i]->type, rq->rootfs[i]->source,
		                           rq->rootfs[i]->options, rq->rootfs[i]->n_options};
	err = rootfs_prepare(s->bundle, m, rq->n_rootfs, &s->image, &s->rootfs_mounted, msg, n);
	if (!err)
		err = vm_boot(s, msg, n);
	if (err) {
		rootfs_release(s->bundle, s->rootfs_mounted);
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

static int do_start(struct shim *s, struct proc *p, char *msg, size_t n)
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
	pthread_create(&p->reader, NULL, io_reader, p);
	p->has_reader = true;
	if (p->stdin_path[0]) {
		pthread_create(&p->stdin_pump, NULL, io_stdin, p);
		pthread_detach(p->stdin_pump);
	} else {
		vm_proc_close_stdin(p);
	}
	return 0;
}

static int do_kill(struct shim *s, struct proc *p, uint32_t sig, char *msg, size_t n)
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

static int vm_op(struct shim *s, const char *req, char *msg, size_t n)
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

#define UNPACK(type, name)                                                                        \
	Containerd__Task__V2__##type *rq = containerd__task__v2__##name##__unpack(NULL, len, in); \
	if (!rq)                                                                                  \
		return FAIL(RPC_INVALID_ARGUMENT, "malformed " #type);
#define PACK(name, msgp)                                                          \
	do {                                                                      \
		*out_len = containerd__task__v2__##name##__get_packed_size(msgp); \
		*out = malloc(*out_len + 1);                                      \
		if (*out)                                                         \
			containerd__task__v2__##name##__pack(msgp, *out);         \
	} while (0)

static int call_locked(struct shim *s, const char *method, const uint8_t *in, size_t len,
                       uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	Google__Protobuf__Timestamp t;
	struct proc *p;
	int code = 0;

	if (!strcmp(method, "Create")) {
		UNPACK(CreateTaskRequest, create_task_request);
		Containerd__Task__V2__CreateTaskResponse r =
		    CONTAINERD__TASK__V2__CREATE_TASK_RESPONSE__INIT;
		code = do_create(s, rq, &r.pid, msg, n);
		if (!code)
			PACK(create_task_response, &r);
		containerd__task__v2__create_task_request__free_unpacked(rq, NULL);
		return code;
	}
	if (!strcmp(method, "Start")) {
		UNPACK(StartRequest, start_request);
		Containerd__Task__V2__StartResponse r = CONTAINERD__TASK__V2__START_RESPONSE__INIT;
		p = find(s, rq->exec_id);
		code =
		    !p ? FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id) : do_start(s, p, msg, n);
		if (!code) {
			r.pid = p->exec_id[0] ? p->pid : (uint32_t)s->vm.pid;
			PACK(start_response, &r);
		}
		containerd__task__v2__start_request__free_unpacked(rq, NULL);
		return code;
	}
	if (!strcmp(method, "Exec")) {
		UNPACK(ExecProcessRequest, exec_process_request);
		if (!rq->exec_id || !*rq->exec_id || find(s, rq->exec_id))
			code =
			    FAIL(RPC_ALREADY_EXISTS, "exec id '%s' is empty or taken", rq->exec_id);
		else if (!init_proc(s) || init_proc(s)->state != P_RUNNING)
			code = FAIL(RPC_FAILED_PRECONDITION, "the container is not running");
		else if (!rq->spec)
			code = FAIL(RPC_INVALID_ARGUMENT, "the exec has no process spec");
		else if (!(p = proc_new(rq->exec_id, rq->stdin, rq->stdout, rq->stderr)))
			code = FAIL(RPC_INTERNAL, "out of memory");
		else if (spec_parse_process((const char *)rq->spec->value.data, rq->spec->value.len,
		                            &p->spec, msg, n)) {
			proc_free(p);
			code = RPC_INVALID_ARGUMENT;
		} else {
			p->spec.terminal = rq->terminal;
			p->next = s->procs;
			s->procs = p;
			event_task(EV_EXEC_ADDED, p, 0);
		}
		containerd__task__v2__exec_process_request__free_unpacked(rq, NULL);
		return code;
	}
	if (!strcmp(method, "Wait")) {
		UNPACK(WaitRequest, wait_request);
		Containerd__Task__V2__WaitResponse r = CONTAINERD__TASK__V2__WAIT_RESPONSE__INIT;
		p = find(s, rq->exec_id);
		if (!p)
			code = FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id);
		if (p)
			p->waiters++;
		while (p && p->state != P_STOPPED)
			pthread_cond_wait(&s->changed, &s->lock);
		if (p) {
			r.exit_status = p->exit_status;
			r.exited_at = ts(p->exited_ns, &t);
			PACK(wait_response, &r);
			/* deleted while we waited: the last waiter frees it */
			if (!--p->waiters && p->deleted)
				proc_free(p);
		}
		containerd__task__v2__wait_request__free_unpacked(rq, NULL);
		return code;
	}
	if (!strcmp(method, "State")) {
		UNPACK(StateRequest, state_request);
		Containerd__Task__V2__StateResponse r = CONTAINERD__TASK__V2__STATE_RESPONSE__INIT;
		p = find(s, rq->exec_id);
		if (!p) {
			code = FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id);
		} else {
			r.id = s->id;
			r.exec_id = p->exec_id;
			r.bundle = s->bundle;
			r.pid = p->exec_id[0] ? p->pid : (uint32_t)(s->vm.pid > 0 ? s->vm.pid : 0);
			r.status = p->state == P_CREATED   ? CONTAINERD__V1__TYPES__STATUS__CREATED
			           : p->state == P_STOPPED ? CONTAINERD__V1__TYPES__STATUS__STOPPED
			           : s->vm.paused          ? CONTAINERD__V1__TYPES__STATUS__PAUSED
			                                   : CONTAINERD__V1__TYPES__STATUS__RUNNING;
			r.stdin = p->stdin_path;
			r.stdout = p->stdout_path;
			r.stderr = p->stderr_path;
			r.terminal = p->spec.terminal;
			r.exit_status = p->exit_status;
			if (p->state == P_STOPPED)
				r.exited_at = ts(p->exited_ns, &t);
			PACK(state_response, &r);
		}
		containerd__task__v2__state_request__free_unpacked(rq, NULL);
		return code;
	}
	if (!strcmp(method, "Kill")) {
		UNPACK(KillRequest, kill_request);
		p = find(s, rq->exec_id);
		code = !p ? FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id)
		          : do_kill(s, p, rq->signal, msg, n);
		if (!code && rq->all && !p->exec_id[0])
			for (struct proc *q = s->procs; q; q = q->next)
				if (q != p && q->state == P_RUNNING)
					vm_proc_signal(q, rq->signal);
		containerd__task__v2__kill_request__free_unpacked(rq, NULL);
		return code;
	}
	if (!strcmp(method, "Delete")) {
		UNPACK(DeleteRequest, delete_request);
		Containerd__Task__V2__DeleteResponse r =
		    CONTAINERD__TASK__V2__DELETE_RESPONSE__INIT;
		p = find(s, rq->exec_id);
		if (!p) {
			code = FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id);
		} else if (p->state == P_RUNNING || p->starting) {
			code = FAIL(RPC_FAILED_PRECONDITION, "process %s is running: kill it first",
			            p->exec_id[0] ? p->exec_id : s->id);
		} else {
			r.pid = p->exec_id[0] ? p->pid : 0;
			r.exit_status = p->exit_status;
			r.exited_at = ts(p->exited_ns ? p->exited_ns : now_ns(), &t);
			PACK(delete_response, &r);
			event_task(EV_DELETE, p, p->task_pid);
			if (!p->exec_id[0]) {
				vm_stop(s);
				rootfs_release(s->bundle, s->rootfs_mounted);
				s->rootfs_mounted = false;
			}
			/* the init stays listed (Wait, State after Delete); execs go */
			if (p->exec_id[0]) {
				struct proc **pp = &s->procs;

				while (*pp != p)
					pp = &(*pp)->next;
				*pp = p->next;
				/* its reader may still wait for the lock to end */
				pthread_mutex_unlock(&s->lock);
				if (p->has_reader)
					pthread_join(p->reader, NULL);
				pthread_mutex_lock(&s->lock);
				if (p->waiters)
					p->deleted = true;
				else
					proc_free(p);
			}
		}
		containerd__task__v2__delete_request__free_unpacked(rq, NULL);
		return code;
	}
	if (!strcmp(method, "Pids")) {
		UNPACK(PidsRequest, pids_request);
		Containerd__Task__V2__PidsResponse r = CONTAINERD__TASK__V2__PIDS_RESPONSE__INIT;
		Containerd__V1__Types__ProcessInfo info[64], *ptrs[64];
		size_t k = 0;

		for (p = s->procs; p && k < 64; p = p->next)
			if (p->state == P_RUNNING) {
				containerd__v1__types__process_info__init(&info[k]);
				info[k].pid = p->pid;
				ptrs[k] = &info[k];
				k++;
			}
		r.n_processes = k;
		r.processes = ptrs;
		PACK(pids_response, &r);
		containerd__task__v2__pids_request__free_unpacked(rq, NULL);
		return 0;
	}
	if (!strcmp(method, "Pause") || !strcmp(method, "Resume")) {
		bool pause = method[0] == 'P';
		char req[4200];

		p = init_proc(s);
		if (!p || p->state != P_RUNNING || s->vm.dead)
			return FAIL(RPC_FAILED_PRECONDITION, "the container is not running");
		if (s->vm.paused == pause)
			return FAIL(RPC_FAILED_PRECONDITION, "the container is %s already",
			            pause ? "paused" : "running");
		/* pause: a snapshot of the whole VM that leaves it paused */
		snprintf(req, sizeof(req),
		         pause ? "{\"op\":\"snapshot\",\"path\":\"%s/pause.snap\",\"resume\":false}"
		               : "{\"op\":\"resume\"}",
		         s->bundle);
		code = vm_op(s, req, msg, n);
		if (!code) {
			s->vm.paused = pause;
			event_task(pause ? EV_PAUSED : EV_RESUMED, p, 0);
		}
		return code;
	}
	if (!strcmp(method, "ResizePty")) {
		UNPACK(ResizePtyRequest, resize_pty_request);
		p = find(s, rq->exec_id);
		if (!p || p->state != P_RUNNING)
			code = FAIL(RPC_NOT_FOUND, "no running process %s", rq->exec_id);
		else if (!p->spec.terminal)
			code = FAIL(RPC_FAILED_PRECONDITION, "process %s has no terminal",
			            rq->exec_id);
		else if (rq->width > 4096 || rq->height > 4096)
			code = FAIL(RPC_INVALID_ARGUMENT, "a terminal of %ux%u", rq->width,
			            rq->height);
		else if (rq->width && rq->height) /* 0x0: a client without a size yet */
			vm_proc_resize(p, (uint16_t)rq->width, (uint16_t)rq->height);
		containerd__task__v2__resize_pty_request__free_unpacked(rq, NULL);
		return code;
	}
	if (!strcmp(method, "CloseIO")) {
		UNPACK(CloseIORequest, close_iorequest);
		p = find(s, rq->exec_id);
		if (!p)
			code = FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id);
		else if (rq->stdin && p->state == P_RUNNING)
			vm_proc_close_stdin(p);
		containerd__task__v2__close_iorequest__free_unpacked(rq, NULL);
		return code;
	}
	if (!strcmp(method, "Stats"))
		return stats_reply(s, out, out_len, msg, n);
	if (!strcmp(method, "Connect")) {
		Containerd__Task__V2__ConnectResponse r =
		    CONTAINERD__TASK__V2__CONNECT_RESPONSE__INIT;

		r.shim_pid = (uint32_t)getpid();
		r.task_pid = s->vm.pid > 0 ? (uint32_t)s->vm.pid : 0;
		r.version = SHIM_VERSION;
		PACK(connect_response, &r);
		return 0;
	}
	if (!strcmp(method, "Shutdown")) {
		for (p = s->procs; p; p = p->next)
			if (p->state == P_RUNNING)
				return 0; /* containerd asks again once they are gone */
		*exit_after = true;
		return 0;
	}
	if (!strcmp(method, "Update"))
		return FAIL(RPC_UNIMPLEMENTED,
		            "kiln's shim cannot change a running VM's resources");
	if (!strcmp(method, "Checkpoint"))
		return FAIL(RPC_UNIMPLEMENTED,
		            "kiln's shim does not checkpoint for containerd (pause writes a kiln "
		            "snapshot in the bundle)");
	return FAIL(RPC_UNIMPLEMENTED, "method %.100s is not part of the task API kiln serves",
	            method);
}

int task_call(const char *method, const uint8_t *in, size_t len, uint8_t **out, size_t *out_len,
              char *msg, size_t n)
{
	struct shim *s = &g_shim;
	bool exit_after = false;
	int code;

	*out = NULL;
	*out_len = 0;
	pthread_mutex_lock(&s->lock);
	code = call_locked(s, method, in, len, out, out_len, &exit_after, msg, n);
	pthread_mutex_unlock(&s->lock);
	if (!code && !*out && *out_len) /* a PACK that ran out of memory */
		code = FAIL(RPC_INTERNAL, "out of memory");
	if (exit_after) {
		shim_log("shutdown");
		unlink(s->socket_path);
		/* the reply goes out first: exit from a thread of our own, soon */
		pthread_t t;

		pthread_create(&t, NULL, shim_exit_soon, NULL);
	}
	return code;
}
