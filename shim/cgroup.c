/* SPDX-License-Identifier: MIT */
/*
 * The spec's CPU limits on the VMM's cgroup leaf. kiln-vmm's jail makes
 * the leaf and joins it before the guest runs (vmm/jail/jail_cgroup.c,
 * with cpu.max = vCPUs + 1 CPU), or takes the spec's linux.cgroupsPath,
 * which the shim made and joined it to (podcg.c); once its agent
 * answers, the shim finds the leaf from /proc/VMM/cgroup and writes the
 * spec's quota, period and shares over it: the VM's vCPU and the VMM's
 * device threads together get
 * what a runc container's processes would. A VMM with no leaf of its own
 * (not jailed, or no cgroup it could write: its console says why) cannot
 * be held to a quota, so a spec with one is refused; shares, a relative
 * weight, are then only logged as ignored. Update (update.c) writes
 * them again on a running VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

/* What kiln-vmm's jail gives the leaf (vmm/jail/jail_cgroup.c): its one
 * vCPU and one CPU more for its own threads; a quota of -1 goes back to it. */
#define JAIL_CPU_PERIOD 100000
#define JAIL_CPU_QUOTA  (2 * JAIL_CPU_PERIOD)

struct leaf {
	char dir[1024];
	int version; /* 1 or 2 */
};

/* The cgroup of pid (or NULL: ours) that holds the cpu controller. */
static bool cpu_cgroup(const char *pid, struct leaf *l)
{
	char path[64], line[1024];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/cgroup", pid ? pid : "self");
	if (!(f = fopen(path, "re")))
		return false;
	l->version = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *tok, *save;

		if (!c2)
			continue;
		*c2++ = 0;
		c2[strcspn(c2, "\n")] = 0;
		if (!c1[1]) { /* v2; a v1 cpu hierarchy wins on a hybrid host */
			if (!l->version &&
			    snprintf(l->dir, sizeof(l->dir), "/sys/fs/cgroup%s%s",
			             access("/sys/fs/cgroup/cgroup.controllers", F_OK) ? "/unified"
			                                                               : "",
			             c2) < (int)sizeof(l->dir))
				l->version = 2;
			continue;
		}
		snprintf(path, sizeof(path), "%s", c1 + 1);
		for (tok = strtok_r(path, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (!strcmp(tok, "cpu") &&
			    snprintf(l->dir, sizeof(l->dir), "/sys/fs/cgroup/%s%s", c1 + 1, c2) <
			        (int)sizeof(l->dir)) {
				l->version = 1;
				found = true;
			}
	}
	fclose(f);
	return l->version != 0;
}

static int put(const struct leaf *l, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int put(const struct leaf *l, const char *file, const char *fmt, ...)
{
	char path[1100], val[64];
	va_list ap;
	int fd, err = 0;
	ssize_t w;

	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/%s", l->dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	w = write(fd, val, strlen(val));
	if (w < 0)
		err = -errno;
	close(fd);
	return err;
}

int cgroup_apply(struct shim *s, const struct spec_res *r, char *msg, size_t n)
{
	unsigned long long shares = spec_res_shares(r);
	struct leaf vmm, own;
	char pid[16];
	int err = 0;

	if (!r->cpu_quota && !shares && !r->cpu_unlimited)
		return 0;
	snprintf(pid, sizeof(pid), "%d", (int)s->vm.pid);
	if (!cpu_cgroup(pid, &vmm) || !cpu_cgroup(NULL, &own) || !strcmp(vmm.dir, own.dir)) {
		if (r->cpu_quota) {
			snprintf(
			    msg, n,
			    "linux.resources.cpu.quota cannot be held: the VM's kiln-vmm has no "
			    "cgroup of its own (%s; see %s): run the shim as root with the jail "
			    "on, or drop the CPU quota",
			    s->vm.jail_id ? "it could not make one" : "it is not jailed",
			    s->vm.console);
			return -ENOTSUP;
		}
		if (shares)
			shim_log("linux.resources.cpu.shares is ignored: kiln-vmm has no cgroup of "
			         "its own");
		return 0;
	}
	if (r->cpu_quota && vmm.version == 1)
		err =
		    put(&vmm, "cpu.cfs_period_us", "%llu", (unsigned long long)r->cpu_period)
		        ?: put(&vmm, "cpu.cfs_quota_us", "%llu", (unsigned long long)r->cpu_quota);
	else if (r->cpu_quota)
		err = put(&vmm, "cpu.max", "%llu %llu", (unsigned long long)r->cpu_quota,
		          (unsigned long long)r->cpu_period);
	else if (r->cpu_unlimited && vmm.version == 1) /* quota -1: the jail's own bound */
		err = put(&vmm, "cpu.cfs_period_us", "%d", JAIL_CPU_PERIOD)
		          ?: put(&vmm, "cpu.cfs_quota_us", "%d", JAIL_CPU_QUOTA);
	else if (r->cpu_unlimited)
		err = put(&vmm, "cpu.max", "%d %d", JAIL_CPU_QUOTA, JAIL_CPU_PERIOD);
	if (!err && shares && vmm.version == 1)
		err = put(&vmm, "cpu.shares", "%llu", shares);
	else if (!err && r->cpu_weight)
		err = put(&vmm, "cpu.weight", "%u", r->cpu_weight);
	else if (!err && shares) /* runc's mapping of shares to cpu.weight */
		err = put(&vmm, "cpu.weight", "%llu", 1 + (shares - 2) * 9999 / 262142);
	if (err)
		snprintf(msg, n, "the CPU limits on %s: %s", vmm.dir, strerror(-err));
	return err;
}

/* The VMM of jail id has ended: its leaves, kiln.slice/vmm-ID under our
 * own cgroup in the v2 tree and the v1 hierarchies kiln-vmm's jail uses
 * (vmm/jail/jail_cgroup.c), are left for us, as pid 1 of its namespace
 * has no waiter outside to remove them. The VM's kernel threads leave a
 * moment after the VMM: 200 ms at most for each. */
void cgroup_remove_leaves(unsigned id)
{
	static const char *const v1[] = {"memory", "pids", "cpu"};
	struct timespec ms = {0, 1000000};
	char line[1024], dir[1200], ctl[256];
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f || !id) {
		if (f)
			fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *tok, *save;
		int n = 0;

		if (!c2)
			continue;
		*c2++ = 0;
		c2[strcspn(c2, "\n")] = 0;
		if (!strcmp(c2, "/"))
			c2[0] = 0;
		if (!c1[1]) {
			n = snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s%s/kiln.slice/vmm-%u",
			             access("/sys/fs/cgroup/cgroup.controllers", F_OK) ? "/unified"
			                                                               : "",
			             c2, id);
		} else {
			snprintf(ctl, sizeof(ctl), "%s", c1 + 1);
			dir[0] = 0;
			for (tok = strtok_r(ctl, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
				for (size_t i = 0; i < sizeof(v1) / sizeof(v1[0]); i++)
					if (!strcmp(tok, v1[i]))
						n = snprintf(
						    dir, sizeof(dir),
						    "/sys/fs/cgroup/%s%s/kiln.slice/vmm-%u", v1[i],
						    c2, id);
			if (!dir[0])
				continue;
		}
		if (n <= 0 || n >= (int)sizeof(dir))
			continue;
		for (int tries = 0; rmdir(dir) < 0 && errno == EBUSY && tries < 200; tries++)
			nanosleep(&ms, NULL);
		if (!access(dir, F_OK))
			shim_log("cannot remove the VMM's cgroup %s: %s", dir, strerror(errno));
	}
	fclose(f);
}
