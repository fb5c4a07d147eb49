/* SPDX-License-Identifier: MIT */
/*
 * The vCPU's shares between PID namespaces (KILN_PR_PIDNS_SHARES), as a
 * cgroup's cpu.shares between sibling cgroups: each namespace has a weight
 * (2..262144, 1024 unless set) and a virtual time, the CPU time its threads
 * used divided by its weight. The scheduler runs first a thread of the
 * namespace least ahead in virtual time (threads of one namespace take
 * turns as before), so busy namespaces get the vCPU in proportion to their
 * weights. A namespace that slept comes back at most one time slice behind
 * the others, not with the credit of all the time it slept.
 *
 * Pure bookkeeping, no locks (one vCPU): sched.c calls it, pidns.c sets
 * the weights; tests/unit/test_fair.c runs it on the host.
 */
#ifndef KILN_FAIR_H
#define KILN_FAIR_H

#include "kiln/pidns.h"
#include "klib.h"

#define FAIR_WEIGHT_MIN     KILN_PIDNS_SHARES_MIN
#define FAIR_WEIGHT_MAX     KILN_PIDNS_SHARES_MAX
#define FAIR_WEIGHT_DEFAULT 1024
/* How far (CPU time at the default weight) a namespace that slept may be
 * behind the one that runs: one time slice (sched.c's SLICE_NS). */
#define FAIR_LAG_NS 10000000ULL

/* ns's weight, FAIR_WEIGHT_MIN..FAIR_WEIGHT_MAX (else -EINVAL, as ns out
 * of 0..KILN_PIDNS_MAX-1); 0 when set. */
int fair_set_weight(int ns, uint32_t weight);
uint32_t fair_weight(int ns);
/* A namespace number given out anew: the default weight, no past. */
void fair_reset(int ns);
/* ns's threads ran ran_ns of CPU time. */
void fair_charge(int ns, uint64_t ran_ns);
/* Whether a thread of namespace a is to run before one of b that is ahead
 * of it in the run queue (false on a tie: queue order stands). */
bool fair_before(int a, int b);
/* A thread of ns was picked to run. */
void fair_picked(int ns);
/* ns's virtual time as the pick sees it (for tests and /proc). */
uint64_t fair_vtime(int ns);

#endif
