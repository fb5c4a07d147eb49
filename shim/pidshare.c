/* SPDX-License-Identifier: MIT */
/*
 * A pod's shared PID namespace (Kubernetes' shareProcessNamespace): the
 * CRI gives each app container the sandbox's, as linux.namespaces'
 * {"type": "pid", "path": "/proc/PID/ns/pid"} of the sandbox's task, where
 * runc joins it. A kiln pod's tasks are all its VMM (containerd sees its
 * pid for each of them), so a path that names the VMM's pid makes the
 * container's processes join the guest PID namespace of the pod's first
 * container (START's pidns trailer, include/kiln/agent.h): `ps` in one
 * sees the others', the sandbox's process is pid 1. No pid namespace, or
 * one without a path, is a namespace of the container's own, as before;
 * any other path (a namespace outside the pod) cannot be joined in the
 * guest and is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* "/proc/PID/ns/pid" with PID a positive decimal: PID, else 0. */
static long proc_pid_of(const char *path)
{
	const char *p = path + strlen("/proc/");
	char *end;
	long pid;

	if (strncmp(path, "/proc/", strlen("/proc/")) || *p < '1' || *p > '9')
		return 0;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (errno || strcmp(end, "/ns/pid"))
		return 0;
	return pid;
}

struct share {
	pid_t vmm;
	bool *share;
};

static int pid_entry(void *arg, size_t i, const char *path, char *msg, size_t n)
{
	struct share *sh = arg;

	*sh->share = false;
	if (!path)
		return 0;
	if (sh->vmm <= 0 || proc_pid_of(path) != sh->vmm) {
		snprintf(msg, n,
		         "linux.namespaces[%zu].path %s names no PID namespace of this pod "
		         "(/proc/%d/ns/pid, "
		         "its sandbox's): kiln cannot join another",
		         i, path, sh->vmm > 0 ? (int)sh->vmm : 0);
		return -EINVAL;
	}
	*sh->share = true;
	return 0;
}

int pidshare_spec(const char *bundle, pid_t vmm, bool *share, char *msg, size_t n)
{
	struct share sh = {vmm, share};

	*share = false;
	return spec_each_ns(bundle, "pid", pid_entry, &sh, msg, n);
}
