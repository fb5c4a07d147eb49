/* SPDX-License-Identifier: MIT */
/* Stats: the container's figures as containerd's cgroups v1 metrics
 * (io.containerd.cgroups.v1.Metrics, which `ctr task metrics` and the
 * kubelet read): memory is the guest's own (used of its RAM, as its agent
 * reports it), pids its process count, CPU the VMM process's time on the
 * host (every cycle the container costs). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen/cgroups.pb-c.h"
#include "gen/shim.pb-c.h"
#include "kiln/pidns.h"
#include "shim.h"
#include "task_int.h"

/* utime and stime of pid, in ns */
static int cpu_ns(pid_t pid, uint64_t *user, uint64_t *sys)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command may hold spaces */
	if (!p || hz <= 0 ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -EINVAL;
	*user = ut * (1000000000ULL / (unsigned long long)hz);
	*sys = st * (1000000000ULL / (unsigned long long)hz);
	return 0;
}

/* The figures of a pod's app container: its PID namespace's line of the
 * guest's /proc/kiln/pidns (read through the agent), the namespace being
 * its init's (include/kiln/pidns.h). */
struct app_fig {
	uint32_t procs, threads;
	uint64_t pages, user_ns, sys_ns;
};

static int app_figures(struct shim *s, uint32_t init_pid, struct app_fig *fig, char *msg, size_t n)
{
	int ns = (int)(init_pid / KILN_PIDNS_SPAN), err;
	char text[8192], *line, *save;

	if ((err = ctr_read_file(s, "/proc/kiln/pidns", text, sizeof(text), msg, n)))
		return err;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct app_fig f;
		int at;

		if (sscanf(line, "%d %u %u %" SCNu64 " %" SCNu64 " %" SCNu64, &at, &f.procs,
		           &f.threads, &f.pages, &f.user_ns, &f.sys_ns) == 6 &&
		    at == ns) {
			*fig = f;
			return 0;
		}
	}
	*fig = (struct app_fig){0}; /* (a namespace with no live process) */
	return 0;
}

int stats_reply(struct shim *s, struct ctr *c, uint8_t **out, size_t *out_len, char *msg, size_t n)
{
	struct proc *init = init_proc(c);
	/* a pod's app container: its own namespace's figures */
	uint32_t app_pid = !c->owner && init && init->pid ? init->pid : 0;
	uint64_t app_limit = (uint64_t)c->mem_mb << 20;
	struct app_fig fig = {0};
	Containerd__Task__V2__StatsResponse r = CONTAINERD__TASK__V2__STATS_RESPONSE__INIT;
	Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
	Io__Containerd__Cgroups__V1__Metrics m = IO__CONTAINERD__CGROUPS__V1__METRICS__INIT;
	Io__Containerd__Cgroups__V1__PidsStat pids = IO__CONTAINERD__CGROUPS__V1__PIDS_STAT__INIT;
	Io__Containerd__Cgroups__V1__CPUStat cpu = IO__CONTAINERD__CGROUPS__V1__CPUSTAT__INIT;
	Io__Containerd__Cgroups__V1__CPUUsage use = IO__CONTAINERD__CGROUPS__V1__CPUUSAGE__INIT;
	Io__Containerd__Cgroups__V1__MemoryStat mem =
	    IO__CONTAINERD__CGROUPS__V1__MEMORY_STAT__INIT;
	Io__Containerd__Cgroups__V1__MemoryEntry me =
	    IO__CONTAINERD__CGROUPS__V1__MEMORY_ENTRY__INIT;
	uint64_t total_kb, free_kb;
	uint32_t procs;
	pid_t pid = s->vm.pid;
	uint8_t *packed;
	int err;

	if (s->vm.dead || pid <= 0)
		return snprintf(msg, n, "the container's VM is not running"), RPC_NOT_FOUND;
	if (s->vm.paused)
		return snprintf(msg, n, "the container is paused: its agent cannot answer"),
		       RPC_FAILED_PRECONDITION;
	pthread_mutex_unlock(&s->lock);
	err = vm_info(s, &total_kb, &free_kb, &procs);
	if (!err)
		err = cpu_ns(pid, &use.user, &use.kernel);
	if (!err && app_pid)
		err = app_figures(s, app_pid, &fig, msg, n);
	pthread_mutex_lock(&s->lock);
	if (err)
		return snprintf(msg, n, "the VM's figures: %s", strerror(-err)), RPC_INTERNAL;
	use.total = use.user + use.kernel;
	cpu.usage = &use;
	pids.current = procs;
	me.limit = total_kb << 10;
	me.usage = (total_kb - (free_kb < total_kb ? free_kb : total_kb)) << 10;
	if (app_pid) {
		/* (the guest's CPU time of its live processes, not the VMM's) */
		use.user = fig.user_ns;
		use.kernel = fig.sys_ns;
		use.total = use.user + use.kernel;
		pids.current = fig.procs;
		me.usage = fig.pages << 12;
		if (app_limit)
			me.limit = app_limit;
	}
	mem.usage = &me;
	mem.rss = mem.total_rss = me.usage;
	m.pids = &pids;
	m.cpu = &cpu;
	m.memory = &mem;
	any.type_url = "io.containerd.cgroups.v1.Metrics";
	any.value.len = io__containerd__cgroups__v1__metrics__get_packed_size(&m);
	packed = malloc(any.value.len + 1);
	if (!packed)
		return snprintf(msg, n, "out of memory"), RPC_INTERNAL;
	io__containerd__cgroups__v1__metrics__pack(&m, packed);
	any.value.data = packed;
	r.stats = &any;
	*out_len = containerd__task__v2__stats_response__get_packed_size(&r);
	*out = malloc(*out_len + 1);
	if (*out)
		containerd__task__v2__stats_response__pack(&r, *out);
	free(packed);
	return *out ? 0 : (snprintf(msg, n, "out of memory"), RPC_INTERNAL);
}
