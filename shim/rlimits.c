/* SPDX-License-Identifier: MIT */
/* process.rlimits: each goes to the agent's START (its rlimits trailer,
 * include/kiln/agent.h), which sets it in the command's process before the
 * command runs; the library OS keeps them per process, inherited by fork.
 * It enforces RLIMIT_NOFILE (new descriptors fail with EMFILE past it) and
 * writes no core files at all (RLIMIT_CORE is met whatever it is); the
 * others are kept and reported (ulimit, getrlimit, /proc) but not
 * enforced: the VM's memory and the VMM's cgroup are what bound a guest.
 * The guest has at most 1024 descriptors per process: a larger NOFILE
 * (Docker's and Kubernetes' default is 1048576) is lowered to that, and
 * logged. An unknown type, a duplicate or soft above hard is an error. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include <jansson.h>

#include "shim.h"

#define GUEST_NOFILE_MAX 1024 /* the library OS's FILES_MAX */

static const char *const names[] = {
    [RLIMIT_CPU] = "RLIMIT_CPU",           [RLIMIT_FSIZE] = "RLIMIT_FSIZE",
    [RLIMIT_DATA] = "RLIMIT_DATA",         [RLIMIT_STACK] = "RLIMIT_STACK",
    [RLIMIT_CORE] = "RLIMIT_CORE",         [RLIMIT_RSS] = "RLIMIT_RSS",
    [RLIMIT_NPROC] = "RLIMIT_NPROC",       [RLIMIT_NOFILE] = "RLIMIT_NOFILE",
    [RLIMIT_MEMLOCK] = "RLIMIT_MEMLOCK",   [RLIMIT_AS] = "RLIMIT_AS",
    [RLIMIT_LOCKS] = "RLIMIT_LOCKS",       [RLIMIT_SIGPENDING] = "RLIMIT_SIGPENDING",
    [RLIMIT_MSGQUEUE] = "RLIMIT_MSGQUEUE", [RLIMIT_NICE] = "RLIMIT_NICE",
    [RLIMIT_RTPRIO] = "RLIMIT_RTPRIO",     [RLIMIT_RTTIME] = "RLIMIT_RTTIME",
};
_Static_assert(sizeof(names) / sizeof(names[0]) == SHIM_MAX_RLIMITS, "one name per rlimit");

/* An OCI limit: a JSON number from 0 to 2^64 - 1 (jansson's integers are
 * signed, so "unlimited" arrives as -1 or as a real number). */
static bool value(json_t *j, uint64_t *v)
{
	if (json_is_integer(j)) {
		*v = (uint64_t)json_integer_value(j); /* -1: RLIM_INFINITY */
		return json_integer_value(j) >= -1;
	}
	if (json_is_real(j) && json_real_value(j) >= 1.8e19) {
		*v = RLIM_INFINITY;
		return true;
	}
	return false;
}

int spec_parse_rlimits(json_t *a, struct proc_spec *p, char *msg, size_t n)
{
	uint32_t seen = 0;
	size_t i;
	json_t *e;

	p->n_rlimits = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > SHIM_MAX_RLIMITS) {
		snprintf(msg, n, "process.rlimits is not a list of at most %d limits",
		         SHIM_MAX_RLIMITS);
		return -EINVAL;
	}
	json_array_foreach(a, i, e)
	{
		const char *type = json_string_value(json_object_get(e, "type"));
		struct shim_rlimit *l = &p->rlimits[p->n_rlimits];
		uint32_t r;

		for (r = 0; r < SHIM_MAX_RLIMITS && (!type || strcmp(type, names[r])); r++)
			;
		if (r == SHIM_MAX_RLIMITS) {
			snprintf(msg, n, "process.rlimits[%zu].type '%s' is not a Linux rlimit", i,
			         type ? type : "(none)");
			return -EINVAL;
		}
		if (seen & (1u << r)) {
			snprintf(msg, n, "process.rlimits has %s twice", type);
			return -EINVAL;
		}
		seen |= 1u << r;
		if (!value(json_object_get(e, "soft"), &l->soft) ||
		    !value(json_object_get(e, "hard"), &l->hard) || l->soft > l->hard) {
			snprintf(msg, n,
			         "process.rlimits %s: soft and hard must be numbers, soft at most "
			         "hard",
			         type);
			return -EINVAL;
		}
		if (r == RLIMIT_NOFILE && l->hard > GUEST_NOFILE_MAX) {
			shim_log("%s %llu/%llu is lowered to %d/%d: a kiln guest has at most %d "
			         "descriptors per process",
			         type, (unsigned long long)l->soft, (unsigned long long)l->hard,
			         l->soft < GUEST_NOFILE_MAX ? (int)l->soft : GUEST_NOFILE_MAX,
			         GUEST_NOFILE_MAX, GUEST_NOFILE_MAX);
			l->hard = GUEST_NOFILE_MAX;
			if (l->soft > l->hard)
				l->soft = l->hard;
		}
		l->resource = r;
		p->n_rlimits++;
	}
	return 0;
}
