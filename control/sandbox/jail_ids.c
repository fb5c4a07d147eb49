/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kilnd.h"
#include "jail_ids.h"
#include "util.h"
#include "vmm_proc.h"

static bool slot_of(const struct kilnd *kd, unsigned id, unsigned *slot)
{
	unsigned base = kd->cfg.jail_uid_base;

	if (id <= base || id - base >= JAIL_SLOTS)
		return false;
	*slot = id - base;
	return true;
}

unsigned jail_id_take(struct kilnd *kd)
{
	struct jail_ids *j = &kd->jail_ids;

	if (kd->cfg.no_jail || geteuid() != 0)
		return 0;
	for (unsigned i = 0; i < JAIL_SLOTS - 1; i++) {
		unsigned s = 1 + (j->next + i) % (JAIL_SLOTS - 1);

		if (!(j->used[s / 8] & (1u << (s % 8)))) {
			j->used[s / 8] |= (uint8_t)(1u << (s % 8));
			j->next = s;
			return kd->cfg.jail_uid_base + s;
		}
	}
	return 0;
}

void jail_id_put(struct kilnd *kd, unsigned id)
{
	unsigned s;

	if (slot_of(kd, id, &s))
		kd->jail_ids.used[s / 8] &= (uint8_t) ~(1u << (s % 8));
}

void jail_id_mark(struct kilnd *kd, unsigned id)
{
	unsigned s;

	if (slot_of(kd, id, &s))
		kd->jail_ids.used[s / 8] |= (uint8_t)(1u << (s % 8));
}

/* Our cgroup in hierarchy ctrl ("" for v2): the VMM's leaf is under it,
 * kiln.slice/vmm-ID (vmm/jail/jail_cgroup.c). */
static bool own_cgroup(const char *ctrl, char *out, size_t len)
{
	char *buf = read_small_file("/proc/self/cgroup", 65536, NULL), *line, *save = NULL;
	bool found = false;

	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = 0;
		if (*ctrl ? strcmp(c1 + 1, ctrl) != 0 : c1[1] != 0)
			continue;
		snprintf(out, len, "%s", strcmp(c2 + 1, "/") ? c2 + 1 : "");
		found = true;
	}
	free(buf);
	return found;
}

/* The kernel's OOM kills in the VMM's leaf, and the leaf's limit. */
static bool oom_killed(unsigned id, unsigned long long *limit)
{
	char own[512], path[1024], *buf, *p;
	bool v2 = own_cgroup("", own, sizeof(own));
	unsigned long long kills = 0;

	if (v2) {
		snprintf(path, sizeof(path), "%s%s/kiln.slice/vmm-%u",
		         access("/sys/fs/cgroup/cgroup.controllers", F_OK)
		             ? "/sys/fs/cgroup/unified"
		             : "/sys/fs/cgroup",
		         own, id);
		v2 = access(path, F_OK) == 0;
	}
	if (!v2) {
		if (!own_cgroup("memory", own, sizeof(own)))
			return false;
		snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s/kiln.slice/vmm-%u", own, id);
	}
	strcat(path, v2 ? "/memory.events" : "/memory.oom_control");
	if (!(buf = read_small_file(path, 4096, NULL)))
		return false;
	p = !strncmp(buf, "oom_kill ", 9)      ? buf + 9
	    : (p = strstr(buf, "\noom_kill ")) ? p + 10
	                                       : NULL;
	if (p)
		kills = strtoull(p, NULL, 10);
	free(buf);
	*strrchr(path, '/') = 0;
	strcat(path, v2 ? "/memory.max" : "/memory.limit_in_bytes");
	buf = read_small_file(path, 64, NULL);
	*limit = buf ? strtoull(buf, NULL, 10) : 0;
	free(buf);
	return kills > 0;
}

void jail_explain_death(const struct kilnd *kd, unsigned jail_id, int sig, char *what, size_t n)
{
	size_t l = strlen(what);
	unsigned long long limit = 0;

	if (!jail_id || l >= n)
		return;
	if (sig == SIGSYS)
		snprintf(
		    what + l, n - l,
		    ": it was killed by its seccomp filter (SIGSYS), a system call its filter "
		    "does not allow (the kernel's audit log names it: dmesg | grep type=1326)");
	else if (sig == SIGKILL && oom_killed(jail_id, &limit))
		snprintf(what + l, n - l,
		         ": it was killed by the kernel's OOM killer, having reached its cgroup's "
		         "memory limit (%llu MiB; kilnd --jail-mem-max-mb)",
		         limit >> 20);
	(void)kd;
}
