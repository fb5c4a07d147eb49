/* SPDX-License-Identifier: MIT */
/* Update (Kubernetes' UpdateContainerResources; ctr 1.6 has no command for
 * it): the new linux.resources of a running container. CPU quota, period
 * and shares go to the VMM's cgroup leaf as at Create (cgroup.c); a quota
 * of -1 lifts one back to the jail's own bound. Memory is the VM's RAM,
 * fixed at boot: a limit other than the VM's size is refused (kiln has no
 * balloon or memory hot-plug), the same one (what the CRI resends with a
 * CPU change) is accepted. What Create ignores (cpus, mems, pids, block
 * IO...) is ignored and logged here too. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "task_int.h"

#define RESOURCES_TYPE "opencontainers/runtime-spec/1/LinuxResources"

/* A pod's app container: its memory and CPU bounds are its PID
 * namespace's in the guest (ctr_limit, ctr_cpu; a limit or quota of -1
 * lifts one), and so is its weight against the pod's other containers
 * (ctr_shares: cpu.shares, or unified's cpu.weight in proportion). */
static int update_app(struct shim *s, struct ctr *c, const struct spec_res *r, json_t *lim,
                      char *msg, size_t n)
{
	uint32_t mib = c->mem_mb, milli, shares = spec_res_shares(r);

	if (json_is_integer(lim))
		mib = r->mem_set ? r->mem_mb : 0;
	if (mib != c->mem_mb && ctr_limit(s, c, mib, msg, n))
		return RPC_FAILED_PRECONDITION;
	c->mem_mb = mib;
	if (r->cpu_quota || r->cpu_unlimited) {
		milli = r->cpu_unlimited ? 0 : spec_res_millicpus(r);
		if (milli != c->cpu_milli && ctr_cpu(s, c, milli, msg, n))
			return RPC_FAILED_PRECONDITION;
		c->cpu_milli = milli;
	}
	if (shares && c->pid_shared) {
		/* (what the CRI sends with every Update: no reason to fail it) */
		shim_log("%s: shares the pod's PID namespace: its cpu shares are not applied",
		         c->id);
	} else if (shares) {
		if (shares != (c->cpu_shares ? c->cpu_shares : SPEC_SHARES_DEFAULT) &&
		    ctr_shares(s, c, shares, msg, n))
			return RPC_FAILED_PRECONDITION;
		c->cpu_shares = shares;
	}
	shim_log("%s: updated: memory %u MiB, CPU %u/1000, shares %u", c->id, mib, c->cpu_milli,
	         c->cpu_shares ? c->cpu_shares : SPEC_SHARES_DEFAULT);
	return 0;
}

int do_update(struct shim *s, Containerd__Task__V2__UpdateTaskRequest *rq, char *msg, size_t n)
{
	struct ctr *c = ctr_find(s, rq->id);
	struct proc *p = init_proc(c);
	struct spec_res r;
	json_t *j, *lim;
	json_error_t e;
	size_t tl;
	int err;

	if (!c)
		return FAIL(RPC_NOT_FOUND, "no container %s", rq->id);
	if (!p || p->state != P_RUNNING || s->vm.dead || s->vm.pid <= 0)
		return FAIL(RPC_FAILED_PRECONDITION, "the container is not running");
	if (!rq->resources)
		return FAIL(RPC_INVALID_ARGUMENT, "Update without resources");
	tl = rq->resources->type_url ? strlen(rq->resources->type_url) : 0;
	if (tl < strlen(RESOURCES_TYPE) ||
	    strcmp(rq->resources->type_url + tl - strlen(RESOURCES_TYPE), RESOURCES_TYPE))
		return FAIL(RPC_INVALID_ARGUMENT, "Update's resources are %.200s, not %s",
		            rq->resources->type_url ? rq->resources->type_url : "untyped",
		            RESOURCES_TYPE);
	j = json_loadb((const char *)rq->resources->value.data, rq->resources->value.len, 0, &e);
	if (!j)
		return FAIL(RPC_INVALID_ARGUMENT, "Update's resources are not JSON: %s", e.text);
	err = spec_parse_resources(j, &r, msg, n);
	lim = json_object_get(json_object_get(j, "memory"), "limit");
	if (!c->owner) {
		err = err ? RPC_INVALID_ARGUMENT : update_app(s, c, &r, lim, msg, n);
		json_decref(j);
		return err;
	}
	if (!err && json_is_integer(lim) && json_integer_value(lim) > 0 &&
	    r.mem_mb != s->res.mem_mb)
		err = FAIL(-EOPNOTSUPP,
		           "linux.resources.memory.limit %u MiB: the VM's memory is fixed at "
		           "boot (%u MiB); recreate the container with the new limit",
		           r.mem_mb, s->res.mem_mb);
	json_decref(j);
	if (err)
		return err == -EOPNOTSUPP ? RPC_FAILED_PRECONDITION : RPC_INVALID_ARGUMENT;
	if (cgroup_apply(s, &r, msg, n))
		return RPC_FAILED_PRECONDITION;
	if (r.cpu_quota || r.cpu_unlimited) {
		s->res.cpu_quota = r.cpu_quota;
		s->res.cpu_period = r.cpu_period;
	}
	if (r.cpu_shares)
		s->res.cpu_shares = r.cpu_shares;
	if (r.cpu_weight)
		s->res.cpu_weight = r.cpu_weight;
	shim_log("updated: cpu quota %llu/%llu us, shares %llu",
	         (unsigned long long)s->res.cpu_quota, (unsigned long long)s->res.cpu_period,
	         (unsigned long long)s->res.cpu_shares);
	return 0;
}
