/* SPDX-License-Identifier: MIT */
/*
 * PID namespaces (include/kiln/pidns.h): a process's numbers as another
 * process sees them. Namespace N owns the global pids N * KILN_PIDNS_SPAN
 * + 1 .. + KILN_PIDNS_SPAN - 1, so pgids and sids translate too, even after
 * their leader is gone. Namespace 0 sees everything by global numbers.
 */
#ifndef KILN_GUEST_PIDNS_H
#define KILN_GUEST_PIDNS_H

#include "kiln/pidns.h"
#include "klib.h"

struct proc;
struct thread;

static inline int pidns_of(int pid)
{
	return pid / KILN_PIDNS_SPAN;
}

/* The global pid `pid` (a pid, tid, pgid or sid) as viewer sees it; 0 for
 * one outside viewer's namespace (as Linux's ppid of a namespace's init). */
int pid_to_user(const struct proc *viewer, int pid);
/* A positive number of viewer's as a global pid; 0 if it names nothing. */
int pid_from_user(const struct proc *viewer, int upid);
/* kill's and wait's pid argument (> 0 a process, 0 the caller's group,
 * -1 all, < -1 a group) of viewer's in global numbers; false if it names
 * nothing. */
bool pid_spec_from_user(const struct proc *viewer, int upid, int *pid);
/* Whether viewer may see (and name) p. */
bool pid_visible(const struct proc *viewer, const struct proc *p);
/* proc_find of a number of viewer's. */
struct proc *proc_find_user(const struct proc *viewer, int upid);
/* Whether p is a namespace's pid 1 (the VM's init included). */
bool pidns_is_init(const struct proc *p);
/* Whether namespace ns has no process, zombies included. */
bool pidns_empty(int ns);
/* May a process be created in namespace ns (sys_fork.c)? Not once its pid
 * 1 has ended, as on Linux (ENOMEM). */
bool pidns_open(int ns);
/* prctl(KILN_PR_PIDNS) for p. */
long pidns_prctl(struct proc *p, int ns);
/* prctl(KILN_PR_PIDNS_FREEZE) for p. */
long pidns_freeze(struct proc *p, int ns, int on);
/* Whether t is to stop before its program runs (exit_to_user); and the
 * wait there, until a thaw or SIGKILL. */
bool pidns_frozen(const struct thread *t);
void pidns_freeze_wait(struct thread *t);
/* prctl(KILN_PR_PIDNS_CPU) for p. */
long pidns_cpu(struct proc *p, int ns, long milli);
/* 0, or the monotonic time until which t must wait (exit_to_user): its
 * namespace used its CPU share of this period. */
uint64_t pidns_throttled(const struct thread *t);
/* prctl(KILN_PR_PIDNS_SHARES) for p. */
long pidns_shares(struct proc *p, int ns, long shares);
/* prctl(KILN_PR_PIDNS_MEMORY) for p. */
long pidns_memory(struct proc *p, int ns, long mib);
/* May the calling process's namespace map npages more (pmem_user_ok)? */
bool pidns_mem_ok(size_t npages);
/* The pages the processes of ns have mapped. */
uint64_t pidns_pages(int ns);
/* p, a namespace's pid 1, ends: the rest of its namespace is killed. */
void pidns_init_exit(struct proc *p);

#endif
