/* SPDX-License-Identifier: MIT */
/* The OCI spec's linux.resources, as far as they have a meaning for a
 * kiln VM: memory.limit is the VM's RAM; cpu.quota and cpu.period are the
 * CFS bandwidth of the VMM's cgroup leaf (the VM's vCPU and the VMM's own
 * threads together; the guest has one vCPU whatever the quota), cpu.shares
 * its weight (cgroup.c), or cgroup v2's cpu.weight from linux.resources.
 * unified (an app container of a pod: its PID namespace's, in the guest).
 * The rest is ignored, and logged: cpu.cpus and
 * mems (placement, not a limit), realtime, pids (the guest's processes
 * are the guest kernel's; the VMM's own leaf has pids.max 128), block IO,
 * hugepages, network, devices (the VM has only its virtio devices). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "shim.h"

#define MEM_MIN_MB  64
#define MEM_MAX_MB  65536
#define MEM_DEFAULT 256
/* what the kernel takes for cpu.cfs_period_us and cpu.max */
#define PERIOD_MIN     1000
#define PERIOD_MAX     1000000
#define QUOTA_MIN      1000
#define SHARES_MIN     2
#define SHARES_MAX     262144
#define SHARES_DEFAULT SPEC_SHARES_DEFAULT
#define WEIGHT_MIN     1 /* cgroup v2's cpu.weight */
#define WEIGHT_MAX     10000
#define WEIGHT_DEFAULT 100
#define PERIOD_DEFAULT 100000

static int mem(json_t *m, struct spec_res *r, char *msg, size_t n)
{
	json_t *lim = json_object_get(m, "limit");
	json_int_t mb;

	r->mem_mb = MEM_DEFAULT;
	if (!lim || json_is_null(lim))
		return 0;
	if (!json_is_integer(lim)) {
		snprintf(msg, n, "linux.resources.memory.limit is not a number of bytes");
		return -EINVAL;
	}
	if (json_integer_value(lim) <= 0) /* -1: unlimited, the default size */
		return 0;
	mb = json_integer_value(lim) >> 20;
	if (mb < MEM_MIN_MB || mb > MEM_MAX_MB) {
		snprintf(msg, n,
		         "linux.resources.memory.limit is %lld MiB: a kiln VM has %d to %d MiB",
		         (long long)mb, MEM_MIN_MB, MEM_MAX_MB);
		return -EINVAL;
	}
	r->mem_mb = (uint32_t)mb;
	r->mem_set = true;
	return 0;
}

/* An unsigned field: absent, null or 0 is "none". */
static int num(json_t *cpu, const char *key, json_int_t *v, char *msg, size_t n)
{
	json_t *j = json_object_get(cpu, key);

	*v = 0;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_integer(j)) {
		snprintf(msg, n, "linux.resources.cpu.%s is not a number", key);
		return -EINVAL;
	}
	*v = json_integer_value(j);
	return 0;
}

static int cpu(json_t *c, struct spec_res *r, char *msg, size_t n)
{
	json_int_t quota, period, shares;
	int err;

	if ((err = num(c, "quota", &quota, msg, n)) || (err = num(c, "period", &period, msg, n)) ||
	    (err = num(c, "shares", &shares, msg, n)))
		return err;
	if (period && (period < PERIOD_MIN || period > PERIOD_MAX)) {
		snprintf(msg, n, "linux.resources.cpu.period is %lld us: the kernel takes %d to %d",
		         (long long)period, PERIOD_MIN, PERIOD_MAX);
		return -EINVAL;
	}
	/* quota -1 (or 0, unset) is no limit */
	if (quota > 0 && quota < QUOTA_MIN) {
		snprintf(msg, n,
		         "linux.resources.cpu.quota is %lld us: the kernel takes %d or more",
		         (long long)quota, QUOTA_MIN);
		return -EINVAL;
	}
	if (quota > 0 && quota > (json_int_t)1000 * PERIOD_MAX) {
		snprintf(msg, n, "linux.resources.cpu.quota is %lld us: more than 1000 CPUs",
		         (long long)quota);
		return -EINVAL;
	}
	if (shares && (shares < SHARES_MIN || shares > SHARES_MAX)) {
		snprintf(msg, n, "linux.resources.cpu.shares is %lld: the kernel takes %d to %d",
		         (long long)shares, SHARES_MIN, SHARES_MAX);
		return -EINVAL;
	}
	r->cpu_quota = quota > 0 ? quota : 0;
	r->cpu_unlimited = quota < 0;
	r->cpu_period = period ? (uint64_t)period : PERIOD_DEFAULT;
	r->cpu_shares = (uint64_t)shares;
	if (json_object_get(c, "cpus") || json_object_get(c, "mems") ||
	    json_object_get(c, "realtimeRuntime") || json_object_get(c, "realtimePeriod"))
		shim_log("linux.resources.cpu's cpus, mems and realtime settings are ignored: the "
		         "VMM's leaf has no cpuset or realtime share of its own");
	return 0;
}

/* unified's "cpu.weight" (a string, as every unified value), refused out
 * of the kernel's range; the other unified keys are logged, not applied. */
static int unified(json_t *u, struct spec_res *r, char *msg, size_t n)
{
	const char *key, *v;
	json_t *j;
	char *end;
	long w;

	if (!u || json_is_null(u))
		return 0;
	if (!json_is_object(u)) {
		snprintf(msg, n, "linux.resources.unified is not an object");
		return -EINVAL;
	}
	json_object_foreach(u, key, j)
	{
		if (strcmp(key, "cpu.weight")) {
			shim_log(
			    "linux.resources.unified's %.100s is ignored: it has no meaning for "
			    "the VM",
			    key);
			continue;
		}
		v = json_string_value(j);
		errno = 0;
		w = v ? strtol(v, &end, 10) : 0;
		if (!v || !*v || *end || errno || w < WEIGHT_MIN || w > WEIGHT_MAX) {
			snprintf(
			    msg, n,
			    "linux.resources.unified's cpu.weight is not a number from %d to %d "
			    "(as a string)",
			    WEIGHT_MIN, WEIGHT_MAX);
			return -EINVAL;
		}
		r->cpu_weight = (uint32_t)w;
	}
	return 0;
}

uint32_t spec_res_shares(const struct spec_res *r)
{
	uint64_t s;

	if (!r->cpu_weight)
		return (uint32_t)r->cpu_shares;
	/* in proportion: the default weight is the default shares */
	s = (uint64_t)r->cpu_weight * SHARES_DEFAULT / WEIGHT_DEFAULT;
	return s < SHARES_MIN ? SHARES_MIN : s > SHARES_MAX ? SHARES_MAX : (uint32_t)s;
}

uint32_t spec_res_millicpus(const struct spec_res *r)
{
	uint64_t m;

	if (!r->cpu_quota || !r->cpu_period)
		return 0;
	m = r->cpu_quota * 1000 / r->cpu_period;
	return m < 1 ? 1 : m > 1000000 ? 1000000 : (uint32_t)m;
}

int spec_parse_resources(json_t *res, struct spec_res *r, char *msg, size_t n)
{
	static const char *const ignored[] = {"pids", "blockIO", "hugepageLimits", "network",
	                                      "rdma"};
	json_t *c;
	int err;

	*r = (struct spec_res){0};
	if (res && !json_is_object(res)) {
		snprintf(msg, n, "linux.resources is not an object");
		return -EINVAL;
	}
	if ((err = mem(json_object_get(res, "memory"), r, msg, n)))
		return err;
	c = json_object_get(res, "cpu");
	if (c && !json_is_null(c) && !json_is_object(c)) {
		snprintf(msg, n, "linux.resources.cpu is not an object");
		return -EINVAL;
	}
	if ((c && (err = cpu(c, r, msg, n))) ||
	    (err = unified(json_object_get(res, "unified"), r, msg, n)))
		return err;
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		if (json_object_get(res, ignored[i]))
			shim_log("linux.resources.%s is ignored: it has no meaning for the VM",
			         ignored[i]);
	return 0;
}
