/* SPDX-License-Identifier: MIT */
/* The scheduler and timer calls of pidns.c (a PID namespace's freeze and
 * CPU bound), for unit tests that link it but exercise neither. */
#include <stdint.h>

#include "ktimer.h"
#include "sched.h"

void wake_thread(struct thread *t)
{
	(void)t;
}

uint64_t sched_ran_ns(void)
{
	return 0;
}

void ktimer_add(struct ktimer *kt, uint64_t deadline, void (*fn)(struct ktimer *kt))
{
	(void)kt;
	(void)deadline;
	(void)fn;
}

void ktimer_del(struct ktimer *kt)
{
	(void)kt;
}

void schedule(void)
{
}
