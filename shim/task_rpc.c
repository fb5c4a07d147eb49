/* SPDX-License-Identifier: MIT */
/* containerd.task.v2.Task's methods: each request unpacked, checked and
 * answered, a table from method name to handler (task.c does the work on
 * processes and the VM). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "task_int.h"

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

/* The task service's methods, each called with s->lock held; a method
 * that talks to the VM or waits drops it meanwhile. */
typedef int method_fn(struct shim *s, const char *method, const uint8_t *in, size_t len,
                      uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n);

static int m_create(struct shim *s, const char *method, const uint8_t *in, size_t len,
                    uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	int code = 0;

	UNPACK(CreateTaskRequest, create_task_request);
	Containerd__Task__V2__CreateTaskResponse r =
	    CONTAINERD__TASK__V2__CREATE_TASK_RESPONSE__INIT;
	code = do_create(s, rq, &r.pid, msg, n);
	if (!code)
		PACK(create_task_response, &r);
	containerd__task__v2__create_task_request__free_unpacked(rq, NULL);
	return code;
}

static int m_start(struct shim *s, const char *method, const uint8_t *in, size_t len, uint8_t **out,
                   size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	struct proc *p;
	int code = 0;

	UNPACK(StartRequest, start_request);
	Containerd__Task__V2__StartResponse r = CONTAINERD__TASK__V2__START_RESPONSE__INIT;
	p = find(ctr_find(s, rq->id), rq->exec_id);
	code = !p ? FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id) : do_start(s, p, msg, n);
	if (!code) {
		r.pid = p->exec_id[0] ? p->pid : (uint32_t)s->vm.pid;
		PACK(start_response, &r);
	}
	containerd__task__v2__start_request__free_unpacked(rq, NULL);
	return code;
}

static int m_exec(struct shim *s, const char *method, const uint8_t *in, size_t len, uint8_t **out,
                  size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	struct proc *p;
	struct ctr *c;
	int code = 0;

	UNPACK(ExecProcessRequest, exec_process_request);
	c = ctr_find(s, rq->id);
	if (!c || c->deleted)
		code = FAIL(RPC_NOT_FOUND, "no container %s", rq->id);
	else if (!rq->exec_id || !*rq->exec_id || find(c, rq->exec_id))
		code = FAIL(RPC_ALREADY_EXISTS, "exec id '%s' is empty or taken", rq->exec_id);
	else if (!init_proc(c) || init_proc(c)->state != P_RUNNING)
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
		p->ctr = c;
		p->next = c->procs;
		c->procs = p;
		event_task(EV_EXEC_ADDED, p, 0);
	}
	containerd__task__v2__exec_process_request__free_unpacked(rq, NULL);
	return code;
}

static int m_wait(struct shim *s, const char *method, const uint8_t *in, size_t len, uint8_t **out,
                  size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	Google__Protobuf__Timestamp t;
	struct proc *p;
	int code = 0;

	UNPACK(WaitRequest, wait_request);
	Containerd__Task__V2__WaitResponse r = CONTAINERD__TASK__V2__WAIT_RESPONSE__INIT;
	p = find(ctr_find(s, rq->id), rq->exec_id);
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

static int m_state(struct shim *s, const char *method, const uint8_t *in, size_t len, uint8_t **out,
                   size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	Google__Protobuf__Timestamp t;
	struct proc *p;
	int code = 0;

	UNPACK(StateRequest, state_request);
	Containerd__Task__V2__StateResponse r = CONTAINERD__TASK__V2__STATE_RESPONSE__INIT;
	p = find(ctr_find(s, rq->id), rq->exec_id);
	if (!p) {
		code = FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id);
	} else {
		r.id = p->ctr->id;
		r.exec_id = p->exec_id;
		r.bundle = p->ctr->bundle;
		r.pid = p->exec_id[0] ? p->pid : (uint32_t)(s->vm.pid > 0 ? s->vm.pid : 0);
		r.status = p->state == P_CREATED   ? CONTAINERD__V1__TYPES__STATUS__CREATED
		           : p->state == P_STOPPED ? CONTAINERD__V1__TYPES__STATUS__STOPPED
		           : s->vm.paused || p->ctr->paused
		               ? CONTAINERD__V1__TYPES__STATUS__PAUSED
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

static int m_kill(struct shim *s, const char *method, const uint8_t *in, size_t len, uint8_t **out,
                  size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	struct proc *p;
	int code = 0;

	UNPACK(KillRequest, kill_request);
	p = find(ctr_find(s, rq->id), rq->exec_id);
	code = !p ? FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id)
	          : do_kill(s, p, rq->signal, msg, n);
	if (!code && rq->all && !p->exec_id[0])
		for (struct proc *q = p->ctr->procs; q; q = q->next)
			if (q != p && q->state == P_RUNNING)
				vm_proc_signal(q, rq->signal);
	containerd__task__v2__kill_request__free_unpacked(rq, NULL);
	return code;
}

/* Another container of the pod, not deleted, or NULL. */
static struct ctr *pod_other(struct shim *s)
{
	for (struct ctr *c = s->ctrs; c; c = c->next)
		if (!c->owner && !c->deleted)
			return c;
	return NULL;
}

/* A container's init deleted: its root goes (and, the owner's, the VM). */
static void ctr_delete(struct shim *s, struct ctr *c)
{
	c->deleted = true;
	if (c->owner) {
		vm_stop(s);
	} else if (c->guest_root && !s->vm.dead && !s->vm.paused) {
		/* its copy lives in the guest's memory */
		pthread_mutex_unlock(&s->lock);
		ctr_root_remove(s, c->guest_root);
		pthread_mutex_lock(&s->lock);
	}
	rootfs_release(c->bundle, c->rootfs_mounted, &c->image_lock);
	c->rootfs_mounted = false;
}

/* A deleted pod container that nothing waits on: off the list and freed
 * (a pod whose containers come and go must not grow). */
static void ctr_reap(struct shim *s, struct ctr *c)
{
	struct ctr **cp = &s->ctrs;
	struct proc *q;

	for (q = c->procs; q; q = q->next)
		if (q->state != P_STOPPED || q->waiters || q->starting)
			return;
	while (*cp != c)
		cp = &(*cp)->next;
	*cp = c->next;
	/* their readers may still wait for the lock to end */
	pthread_mutex_unlock(&s->lock);
	for (q = c->procs; q; q = q->next) {
		if (q->has_reader)
			pthread_join(q->reader, NULL);
		if (q->has_pump)
			pthread_join(q->stdin_pump, NULL);
	}
	pthread_mutex_lock(&s->lock);
	while ((q = c->procs)) {
		c->procs = q->next;
		proc_free(q);
	}
	ctr_free(c);
}

static int m_delete(struct shim *s, const char *method, const uint8_t *in, size_t len,
                    uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	Google__Protobuf__Timestamp t;
	struct ctr *other;
	struct proc *p;
	int code = 0;

	UNPACK(DeleteRequest, delete_request);
	Containerd__Task__V2__DeleteResponse r = CONTAINERD__TASK__V2__DELETE_RESPONSE__INIT;
	p = find(ctr_find(s, rq->id), rq->exec_id);
	if (!p) {
		code = FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id);
	} else if (p->state == P_RUNNING || p->starting) {
		code = FAIL(RPC_FAILED_PRECONDITION, "process %s is running: kill it first",
		            p->exec_id[0] ? p->exec_id : p->ctr->id);
	} else if (!p->exec_id[0] && p->ctr->deleted) {
		code = FAIL(RPC_NOT_FOUND, "container %s was deleted already", p->ctr->id);
	} else if (!p->exec_id[0] && p->ctr->owner && (other = pod_other(s))) {
		/* the VM and its sockets live in this container's bundle */
		code = FAIL(RPC_FAILED_PRECONDITION,
		            "container %s of the pod is still there, in this one's VM: delete it "
		            "first",
		            other->id);
	} else {
		r.pid = p->exec_id[0] ? p->pid : 0;
		r.exit_status = p->exit_status;
		r.exited_at = ts(p->exited_ns ? p->exited_ns : now_ns(), &t);
		PACK(delete_response, &r);
		event_task(EV_DELETE, p, p->task_pid);
		/* the owner's init stays listed (Wait, State after Delete), and a
		 * pod container's while something waits on it; execs go */
		if (!p->exec_id[0]) {
			struct ctr *c = p->ctr;

			ctr_delete(s, c);
			if (!c->owner)
				ctr_reap(s, c); /* p may be gone */
		} else {
			struct proc **pp = &p->ctr->procs;

			while (*pp != p)
				pp = &(*pp)->next;
			*pp = p->next;
			/* its reader may still wait for the lock to end */
			pthread_mutex_unlock(&s->lock);
			if (p->has_reader)
				pthread_join(p->reader, NULL);
			if (p->has_pump)
				pthread_join(p->stdin_pump, NULL);
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

static int m_pids(struct shim *s, const char *method, const uint8_t *in, size_t len, uint8_t **out,
                  size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	struct proc *p;

	UNPACK(PidsRequest, pids_request);
	Containerd__Task__V2__PidsResponse r = CONTAINERD__TASK__V2__PIDS_RESPONSE__INIT;
	Containerd__V1__Types__ProcessInfo info[64], *ptrs[64];
	size_t k = 0;

	for (p = ctr_find(s, rq->id) ? ctr_find(s, rq->id)->procs : NULL; p && k < 64; p = p->next)
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

/* A pod's app container: its processes frozen in the guest, the VM and the
 * pod's other containers running on. */
static int pause_app(struct shim *s, struct ctr *c, struct proc *p, bool pause, char *msg, size_t n)
{
	if (s->vm.paused)
		return FAIL(RPC_FAILED_PRECONDITION, "the pod is paused: resume it first");
	if (c->paused == pause)
		return FAIL(RPC_FAILED_PRECONDITION, "the container is %s already",
		            pause ? "paused" : "running");
	if (ctr_freeze(s, c, pause, msg, n))
		return RPC_FAILED_PRECONDITION;
	c->paused = pause;
	shim_log("%s: %s in the guest", c->id, pause ? "frozen" : "thawed");
	event_task(pause ? EV_PAUSED : EV_RESUMED, p, 0);
	return 0;
}

static int m_pause_resume(struct shim *s, const char *method, const uint8_t *in, size_t len,
                          uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	struct proc *p;
	int code = 0;

	bool pause = method[0] == 'P';
	char req[8400], snap[4200];
	struct ctr *c;

	UNPACK(PauseRequest, pause_request);
	c = ctr_find(s, rq->id);
	containerd__task__v2__pause_request__free_unpacked(rq, NULL);
	p = init_proc(c);
	if (!p || p->state != P_RUNNING || s->vm.dead)
		return FAIL(RPC_FAILED_PRECONDITION, "the container is not running");
	if (!c->owner)
		return pause_app(s, c, p, pause, msg, n);
	if (s->vm.paused == pause)
		return FAIL(RPC_FAILED_PRECONDITION, "the container is %s already",
		            pause ? "paused" : "running");
	/* pause: a snapshot of the whole VM that leaves it paused, written
	 * where the jailed VMM may write and then moved into the bundle */
	if (jail_snap_target(s, snap, sizeof(snap)))
		return FAIL(RPC_INTERNAL, "the bundle's path %s is too long", s->bundle);
	snprintf(req, sizeof(req),
	         pause ? "{\"op\":\"snapshot\",\"path\":\"%s\",\"resume\":false}"
	               : "{\"op\":\"resume\"}",
	         snap);
	code = vm_op(s, req, msg, n);
	if (!code && pause && jail_take_snapshot(s, msg, n)) {
		/* the VM is paused with no snapshot to show for it: run it on */
		char why[1024];

		if (vm_op(s, "{\"op\":\"resume\"}", why, sizeof(why)))
			shim_log("resuming after a refused snapshot: %s", why);
		code = RPC_INTERNAL;
	}
	if (!code) {
		s->vm.paused = pause;
		event_task(pause ? EV_PAUSED : EV_RESUMED, p, 0);
	}
	return code;
}

static int m_resizepty(struct shim *s, const char *method, const uint8_t *in, size_t len,
                       uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	struct proc *p;
	int code = 0;

	UNPACK(ResizePtyRequest, resize_pty_request);
	p = find(ctr_find(s, rq->id), rq->exec_id);
	if (!p || p->state != P_RUNNING)
		code = FAIL(RPC_NOT_FOUND, "no running process %s", rq->exec_id);
	else if (!p->spec.terminal)
		code = FAIL(RPC_FAILED_PRECONDITION, "process %s has no terminal", rq->exec_id);
	else if (rq->width > 4096 || rq->height > 4096)
		code = FAIL(RPC_INVALID_ARGUMENT, "a terminal of %ux%u", rq->width, rq->height);
	else if (rq->width && rq->height) /* 0x0: a client without a size yet */
		vm_proc_resize(p, (uint16_t)rq->width, (uint16_t)rq->height);
	containerd__task__v2__resize_pty_request__free_unpacked(rq, NULL);
	return code;
}

static int m_closeio(struct shim *s, const char *method, const uint8_t *in, size_t len,
                     uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	struct proc *p;
	int code = 0;

	UNPACK(CloseIORequest, close_iorequest);
	p = find(ctr_find(s, rq->id), rq->exec_id);
	if (!p)
		code = FAIL(RPC_NOT_FOUND, "no process %s", rq->exec_id);
	else if (rq->stdin && p->state == P_RUNNING)
		io_stdin_close(p);
	containerd__task__v2__close_iorequest__free_unpacked(rq, NULL);
	return code;
}

static int m_stats(struct shim *s, const char *method, const uint8_t *in, size_t len, uint8_t **out,
                   size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	struct ctr *c;

	UNPACK(StatsRequest, stats_request);
	c = ctr_find(s, rq->id);
	if (!c || c->deleted)
		(void)FAIL(RPC_NOT_FOUND, "no container %.200s", rq->id);
	containerd__task__v2__stats_request__free_unpacked(rq, NULL);
	if (!c || c->deleted)
		return RPC_NOT_FOUND;
	/* the pod's VM's for its first container, an app container's own */
	return stats_reply(s, c, out, out_len, msg, n);
}

static int m_connect(struct shim *s, const char *method, const uint8_t *in, size_t len,
                     uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	Containerd__Task__V2__ConnectResponse r = CONTAINERD__TASK__V2__CONNECT_RESPONSE__INIT;

	r.shim_pid = (uint32_t)getpid();
	r.task_pid = s->vm.pid > 0 ? (uint32_t)s->vm.pid : 0;
	r.version = SHIM_VERSION;
	PACK(connect_response, &r);
	return 0;
}

static int m_shutdown(struct shim *s, const char *method, const uint8_t *in, size_t len,
                      uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	struct proc *p;

	/* containerd asks after each container's delete: the last one ends us */
	for (struct ctr *c = s->ctrs; c; c = c->next) {
		if (!c->deleted)
			return 0;
		for (p = c->procs; p; p = p->next)
			if (p->state == P_RUNNING)
				return 0;
	}
	*exit_after = true;
	return 0;
}

static int m_update(struct shim *s, const char *method, const uint8_t *in, size_t len,
                    uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	int code;

	UNPACK(UpdateTaskRequest, update_task_request);
	code = do_update(s, rq, msg, n);
	containerd__task__v2__update_task_request__free_unpacked(rq, NULL);
	return code;
}

static int m_checkpoint(struct shim *s, const char *method, const uint8_t *in, size_t len,
                        uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	return FAIL(RPC_UNIMPLEMENTED, "kiln's shim does not checkpoint for containerd (pause "
	                               "writes a kiln snapshot in the bundle)");
}

static const struct {
	const char *name;
	method_fn *fn;
} methods[] = {
    {"Create", m_create},
    {"Start", m_start},
    {"Exec", m_exec},
    {"Wait", m_wait},
    {"State", m_state},
    {"Kill", m_kill},
    {"Delete", m_delete},
    {"Pids", m_pids},
    {"Pause", m_pause_resume},
    {"Resume", m_pause_resume},
    {"ResizePty", m_resizepty},
    {"CloseIO", m_closeio},
    {"Stats", m_stats},
    {"Connect", m_connect},
    {"Shutdown", m_shutdown},
    {"Update", m_update},
    {"Checkpoint", m_checkpoint},
};

static int call_locked(struct shim *s, const char *method, const uint8_t *in, size_t len,
                       uint8_t **out, size_t *out_len, bool *exit_after, char *msg, size_t n)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcmp(method, methods[i].name))
			return methods[i].fn(s, method, in, len, out, out_len, exit_after, msg, n);
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
