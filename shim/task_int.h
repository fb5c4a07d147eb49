/* SPDX-License-Identifier: MIT */
/* Between the task service's methods (task_rpc.c) and the container's
 * processes and VM (task.c). Everything here is called with s->lock
 * held. */
#ifndef KILN_SHIM_TASK_INT_H
#define KILN_SHIM_TASK_INT_H

#include "gen/shim.pb-c.h"
#include "shim.h"

/* An error status with msg filled in, in a function that has msg and n. */
#define FAIL(code, ...) (snprintf(msg, n, __VA_ARGS__), (code))

/* The process of exec_id ("" or NULL: the init) of container c (NULL: none), or NULL. */
struct proc *find(struct ctr *c, const char *exec_id);
struct proc *init_proc(struct ctr *c);
/* The container of id, or NULL. */
struct ctr *ctr_find(struct shim *s, const char *id);
struct ctr *ctr_new(const char *id, const char *bundle);
void ctr_free(struct ctr *c);
/* Has a container of the pod, but except, an init not yet ended? */
bool pod_busy(struct shim *s, const struct ctr *except);
Google__Protobuf__Timestamp *ts(int64_t ns, Google__Protobuf__Timestamp *t);
struct proc *proc_new(const char *exec_id, const char *in, const char *out, const char *err);
void proc_free(struct proc *p);
/* Each 0 or an RPC_* status with msg filled in. */
int do_create(struct shim *s, Containerd__Task__V2__CreateTaskRequest *rq, uint32_t *pid, char *msg,
              size_t n);
int do_start(struct shim *s, struct proc *p, char *msg, size_t n);
/* update.c */
int do_update(struct shim *s, Containerd__Task__V2__UpdateTaskRequest *rq, char *msg, size_t n);
int do_kill(struct shim *s, struct proc *p, uint32_t sig, char *msg, size_t n);
/* A request on the VM's API socket (unlocked meanwhile); "ok" or an error. */
int vm_op(struct shim *s, const char *req, char *msg, size_t n);

#endif
