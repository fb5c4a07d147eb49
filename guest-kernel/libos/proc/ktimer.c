/* SPDX-License-Identifier: MIT */
/* Kernel timers (ktimer.h): one list sorted by deadline, expired from
 * irq_poll(); the scheduler arms the TSC deadline for the earliest. */
#include "ktimer.h"
#include "ktime.h"

static struct ktimer *ktimers; /* sorted by deadline */

void ktimer_del(struct ktimer *kt)
{
	if (!kt->deadline)
		return;
	for (struct ktimer **pp = &ktimers; *pp; pp = &(*pp)->next) {
		if (*pp == kt) {
			*pp = kt->next;
			break;
		}
	}
	kt->deadline = 0;
	kt->next = NULL;
}

void ktimer_add(struct ktimer *kt, uint64_t deadline, void (*fn)(struct ktimer *kt))
{
	struct ktimer **pp = &ktimers;

	ktimer_del(kt);
	kt->deadline = deadline ? deadline : 1;
	kt->fn = fn;
	while (*pp && (*pp)->deadline <= kt->deadline)
		pp = &(*pp)->next;
	kt->next = *pp;
	*pp = kt;
	if (ktimers == kt) /* a new earliest deadline: tell the hardware */
		sched_timer_rearm();
}

void ktimer_expire(void)
{
	uint64_t now = time_monotonic_ns();

	while (ktimers && ktimers->deadline <= now) {
		struct ktimer *kt = ktimers;

		ktimers = kt->next;
		kt->next = NULL;
		kt->deadline = 0;
		kt->fn(kt); /* may queue kt again, for a later deadline */
	}
}

uint64_t ktimer_next(void)
{
	return ktimers ? ktimers->deadline : 0;
}
