/* SPDX-License-Identifier: MIT */
/*
 * kiln guest ABI: PID namespaces of the library OS, one per app container
 * of a pod (a VM that runs several containers, shim/ctr_root.c).
 *
 * Version 1. Included by the guest kernel and by the agent (which runs on
 * Linux too, where the prctl below is EINVAL and nothing changes).
 *
 * A namespace is a number 1..KILN_PIDNS_MAX-1 (0 is the VM's own). A
 * process in namespace N sees and signals only the processes of N (kill,
 * wait, /proc, getpgid, terminal groups ...) by numbers local to N: N's
 * first process is its pid 1, whose parent (outside) is pid 0, as in a
 * Linux PID namespace. Processes of namespace 0 see every process, by its
 * global number, which is N * KILN_PIDNS_SPAN + the local one. A process
 * never changes namespace: as Linux's unshare(CLONE_NEWPID) and setns(),
 * the prctl sets the namespace of the caller's children to come.
 */
#ifndef KILN_PIDNS_H
#define KILN_PIDNS_H

#define KILN_PIDNS_VERSION 5     /* 2: KILN_PR_PIDNS_FREEZE, 3: _MEMORY, 4: _CPU, 5: _SHARES */
#define KILN_PIDNS_SPAN    32768 /* pids per namespace (Linux's default pid_max) */
#define KILN_PIDNS_MAX     128   /* namespaces, the VM's included */

/* prctl(KILN_PR_PIDNS, ns): the namespace of the caller's future children.
 * ns 0: the caller's own again; KILN_PIDNS_NEW: a new, empty one, whose
 * first process will be its pid 1; 1..KILN_PIDNS_MAX-1: that namespace,
 * which must have a live pid 1 (else ESRCH). Returns the namespace's
 * number. Only root in namespace 0 may call it (else EPERM); no free
 * namespace is EAGAIN. */
#define KILN_PR_PIDNS  0x4b500001
#define KILN_PIDNS_NEW (-1)

/* prctl(KILN_PR_PIDNS_FREEZE, ns, on): on 1, the processes of namespace
 * ns (1..KILN_PIDNS_MAX-1, with a live pid 1, else EINVAL / ESRCH) stop
 * at their next return to their program, those that are to come too, as
 * a cgroup freezer stops them: no signal is seen, SIGKILL still ends
 * them, the others wait; on 0 they go on. Returns 0. Root of namespace 0
 * only (EPERM). A pause of one container of a pod (shim/pause.c). */
#define KILN_PR_PIDNS_FREEZE 0x4b500002

/* prctl(KILN_PR_PIDNS_MEMORY, ns, mib): the pages the processes of ns
 * (with a live pid 1) may have mapped, together, at most mib MiB (0: no
 * bound, at most 1 << 20); a page fault beyond it kills the faulting
 * process as an out-of-memory one (as a cgroup's memory.max does), a fork
 * is EAGAIN. File data (tmpfs, the container's root) is not counted.
 * Root of namespace 0 only. */
#define KILN_PR_PIDNS_MEMORY 0x4b500003

/* prctl(KILN_PR_PIDNS_CPU, ns, millicpus): the processes of ns (with a
 * live pid 1) run at most millicpus / 1000 of a vCPU, measured over
 * periods of KILN_PIDNS_CPU_PERIOD_MS (as a cgroup's cpu.max): once a
 * period's share is used, each waits at its next return to its program
 * for the next period (signals still wake it). 0: no bound; at most
 * 1000000. Root of namespace 0 only. */
#define KILN_PR_PIDNS_CPU        0x4b500004
#define KILN_PIDNS_CPU_PERIOD_MS 100

/* prctl(KILN_PR_PIDNS_SHARES, ns, shares): the weight of namespace ns
 * (with a live pid 1) in the vCPU's time, as a cgroup's cpu.shares between
 * its siblings: while several namespaces have work, each gets the vCPU in
 * proportion to its shares (KILN_PIDNS_SHARES_MIN..MAX, else EINVAL; 1024 until set, and
 * again for a namespace number given out anew). Namespace 0, the VM's own
 * (the agent), keeps 1024 (EINVAL). Root of namespace 0 only.
 * (0x4b500005 to 8 are kiln/rootchg.h's.) */
#define KILN_PR_PIDNS_SHARES  0x4b500009
#define KILN_PIDNS_SHARES_MIN 2
#define KILN_PIDNS_SHARES_MAX 262144

#endif
