/* SPDX-License-Identifier: MIT */
/* CPU shares between PID namespaces (fair.h). */
#include "fair.h"

static uint32_t weight[KILN_PIDNS_MAX]; /* 0: FAIR_WEIGHT_DEFAULT */
static uint64_t vtime[KILN_PIDNS_MAX];
/* the virtual time of the last namespace picked, never going back: the
 * least of the runnable ones' when it was picked */
static uint64_t floor_vtime;

static bool ns_ok(int ns)
{
	return ns >= 0 && ns < KILN_PIDNS_MAX;
}

int fair_set_weight(int ns, uint32_t w)
{
	if (!ns_ok(ns) || w < FAIR_WEIGHT_MIN || w > FAIR_WEIGHT_MAX)
		return -EINVAL;
	weight[ns] = w;
	return 0;
}

uint32_t fair_weight(int ns)
{
	return ns_ok(ns) && weight[ns] ? weight[ns] : FAIR_WEIGHT_DEFAULT;
}

void fair_reset(int ns)
{
	if (!ns_ok(ns))
		return;
	weight[ns] = 0;
	vtime[ns] = floor_vtime;
}

void fair_charge(int ns, uint64_t ran_ns)
{
	uint64_t w;

	if (!ns_ok(ns))
		return;
	w = fair_weight(ns);
	/* (in two parts: ran_ns * 1024 would overflow after 208 days; the
	 * sum does after a year of CPU at weight 2) */
	vtime[ns] += ran_ns / w * FAIR_WEIGHT_DEFAULT + ran_ns % w * FAIR_WEIGHT_DEFAULT / w;
}

uint64_t fair_vtime(int ns)
{
	uint64_t least = floor_vtime > FAIR_LAG_NS ? floor_vtime - FAIR_LAG_NS : 0;

	if (!ns_ok(ns))
		return floor_vtime;
	return vtime[ns] > least ? vtime[ns] : least;
}

bool fair_before(int a, int b)
{
	return fair_vtime(a) < fair_vtime(b);
}

void fair_picked(int ns)
{
	if (!ns_ok(ns))
		return;
	vtime[ns] = fair_vtime(ns);
	if (vtime[ns] > floor_vtime)
		floor_vtime = vtime[ns];
}
