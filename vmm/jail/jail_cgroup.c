/* SPDX-License-Identifier: MIT */
/*
 * The VMM's cgroup leaf, kiln.slice/vmm-ID, with memory, CPU and pid
 * limits from the VM's own (guest RAM plus the VMM's overhead, vCPUs plus
 * one CPU for the VMM's own threads, a bounded thread count).
 *
 * cgroup v2 first: under --jail-cgroup DIR, or else the cgroup this
 * process runs in when it can delegate (the root, or one with the
 * controllers enabled for its children). A host with cgroup v1 (or a
 * hybrid one whose v2 tree has no memory controller) gets one leaf per v1
 * hierarchy instead, under this process's own cgroup there. The leaf is
 * removed when the VMM has ended (jail_cgroup_remove); a leaf left by a
 * VMM that was killed with its waiter is reused by the next one of the
 * same id. With --jail-cgroup-joined the cgroup it was started in is the
 * leaf (in v2, or in each v1 hierarchy): its caller made it and joined it
 * there (containerd's shim: the pod's cgroup, shim/podcg.c), gets the
 * limits, and removes it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../vm.h"
#include "jail.h"

#define MIB (1ULL << 20)
/* The VMM's own memory beyond guest RAM: vsock buffers, device queues,
 * snapshot compression, page cache of the files it reads. */
#define MEM_OVERHEAD (128 * MIB)
#define CPU_PERIOD   100000
#define PIDS_MAX     128

static const char *const v1_ctrl[3] = {"memory", "pids", "cpu"};

static int write_file(const char *dir, const char *name, const char *val)
{
	char path[700];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

static int read_file(const char *dir, const char *name, char *buf, size_t len)
{
	char path[700];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

/* Is word one of the comma-separated names in list ("cpu,cpuacct")? */
static bool in_list(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == ',' || p[n] == 0))
			return true;
	return false;
}

/* This process's cgroup in hierarchy `ctrl` ("" for v2), from
 * /proc/self/cgroup. */
static int own_cgroup(const char *ctrl, char *out, size_t len)
{
	char line[1024];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		size_t n;

		if (!c2)
			continue;
		*c2 = 0;
		n = strlen(c2 + 1);
		if (n && c2[1 + n - 1] == '\n')
			c2[1 + n - 1] = 0;
		if (*ctrl ? !in_list(c1 + 1, ctrl) : !!c1[1])
			continue;
		if (snprintf(out, len, "%s", c2 + 1) < (int)len)
			err = 0;
		break;
	}
	fclose(f);
	return err;
}

static bool has_words(const char *have, const char *const *want, int n)
{
	for (int i = 0; i < n; i++) {
		const char *p = have;
		size_t l = strlen(want[i]);
		bool found = false;

		while ((p = strstr(p, want[i]))) {
			if ((p == have || p[-1] == ' ' || p[-1] == '+') &&
			    (p[l] == 0 || p[l] == ' ' || p[l] == '\n'))
				found = true;
			p += l;
		}
		if (!found)
			return false;
	}
	return true;
}

static void limits(const struct vm_config *cfg, uint64_t *mem, unsigned *cpus)
{
	*mem = cfg->jail.mem_max ? cfg->jail.mem_max
	                         : cfg->mem_size + MEM_OVERHEAD + cfg->mem_size / 8;
	*cpus = (unsigned)cfg->nr_cpus + 1;
}

/* Leaves of VMMs killed together with their waiter (kilnd kills a VMM's
 * process group) are left behind: each start removes those of its
 * siblings that are empty and older than a start can take, so that a
 * leaf just made for a VMM about to join it stays. */
#define STALE_LEAF_S 30
/* Each leaf tried is an rmdir under the kernel's global cgroup_mutex,
 * which every other start's mkdir and join wait on: with ~100 VMMs
 * running, sweeping at each start doubled the median time of making the
 * leaves in a wave of 50 clones (25 -> 50 ms). One start in SWEEP_EVERY
 * (by id: kilnd's go round its slots, by-hand ones follow the pid) sweeps,
 * which keeps the leftovers as few. */
#define SWEEP_EVERY 8

static void sweep(const char *slice, uint32_t id)
{
	DIR *d;
	struct dirent *e;
	struct stat st;
	time_t now;

	if (id % SWEEP_EVERY || !(d = opendir(slice)))
		return;
	now = time(NULL);
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "vmm-", 4) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode) || now - st.st_mtime < STALE_LEAF_S)
			continue;
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR); /* refused while in use */
	}
	closedir(d);
}

/* mkdir that accepts a leaf left behind (see the top). */
static int make_dir(const char *path)
{
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* A leaf of our own: one left behind by an earlier VMM of this id is
 * removed first when it is empty, so that its counters (the OOM kills
 * kilnd reads) start at zero. */
static int make_leaf(const char *path)
{
	rmdir(path);
	return make_dir(path);
}

static int try_v2(const struct vm_config *cfg, uint32_t id, struct jail_cgroup *cg, char *why,
                  size_t len)
{
	static const char *const want[] = {"memory", "pids", "cpu"};
	char base[512], own[400], buf[512], slice[560];
	uint64_t mem;
	unsigned cpus;
	int err;

	if (cfg->jail.cgroup) {
		snprintf(base, sizeof(base), "%s", cfg->jail.cgroup);
	} else {
		const char *mnt = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0
		                      ? "/sys/fs/cgroup"
		                      : "/sys/fs/cgroup/unified";

		if (own_cgroup("", own, sizeof(own)))
			return -ENOENT;
		snprintf(base, sizeof(base), "%s%s", mnt, strcmp(own, "/") ? own : "");
	}
	if (read_file(base, "cgroup.controllers", buf, sizeof(buf))) {
		snprintf(why, len, "%s is not a cgroup v2 directory", base);
		return -ENOENT;
	}
	if (!has_words(buf, want, 3)) {
		snprintf(why, len,
		         "cgroup v2 at %s has not got the memory, pids and cpu controllers", base);
		return -ENOTSUP;
	}
	if (cfg->jail.cgroup_joined) { /* its caller's, made for it: the leaf */
		snprintf(cg->dir[0], sizeof(cg->dir[0]), "%s", base);
		cg->joined = true;
		goto limits;
	}
	/* The controllers for kiln.slice (refused if base has processes of
	 * its own and is not the root: then give --jail-cgroup). */
	if (read_file(base, "cgroup.subtree_control", buf, sizeof(buf)) ||
	    (!has_words(buf, want, 3) &&
	     (err = write_file(base, "cgroup.subtree_control", "+memory +pids +cpu")))) {
		snprintf(why, len,
		         "cannot enable the memory, pids and cpu controllers in %s (it has "
		         "processes of its own?): give kiln-vmm --jail-cgroup DIR, a cgroup v2 "
		         "directory delegated to kiln",
		         base);
		return -EBUSY;
	}
	snprintf(slice, sizeof(slice), "%s/kiln.slice", base);
	sweep(slice, id);
	if ((err = make_dir(slice)) ||
	    (err = write_file(slice, "cgroup.subtree_control", "+memory +pids +cpu"))) {
		snprintf(why, len, "%s: %s", slice, strerror(-err));
		return err;
	}
	snprintf(cg->dir[0], sizeof(cg->dir[0]), "%s/vmm-%u", slice, id);
	if ((err = make_leaf(cg->dir[0]))) {
		snprintf(why, len, "%s: %s", cg->dir[0], strerror(-err));
		return err;
	}
limits:
	limits(cfg, &mem, &cpus);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)mem);
	err = write_file(cg->dir[0], "memory.max", buf);
	if (!err)
		err = write_file(cg->dir[0], "memory.swap.max", "0") == -EACCES ? -EACCES : 0;
	snprintf(buf, sizeof(buf), "%u", PIDS_MAX);
	if (!err)
		err = write_file(cg->dir[0], "pids.max", buf);
	snprintf(buf, sizeof(buf), "%u %u", cpus * CPU_PERIOD, CPU_PERIOD);
	if (!err)
		err = write_file(cg->dir[0], "cpu.max", buf);
	if (err) {
		snprintf(why, len, "%s: setting its limits: %s", cg->dir[0], strerror(-err));
		if (!cg->joined)
			rmdir(cg->dir[0]);
		return err;
	}
	cg->version = 2;
	return 0;
}

static int try_v1(const struct vm_config *cfg, uint32_t id, struct jail_cgroup *cg, char *why,
                  size_t len)
{
	char own[400], slice[560], buf[64];
	uint64_t mem;
	unsigned cpus;
	int err = 0;

	for (int i = 0; i < 3; i++) {
		if (own_cgroup(v1_ctrl[i], own, sizeof(own))) {
			snprintf(why, len, "no cgroup v1 %s hierarchy either", v1_ctrl[i]);
			return -ENOENT;
		}
		snprintf(slice, sizeof(slice), "/sys/fs/cgroup/%s%s/kiln.slice", v1_ctrl[i],
		         strcmp(own, "/") ? own : "");
		if (cfg->jail.cgroup_joined) { /* its caller's, made for it: the leaf */
			snprintf(cg->dir[i], sizeof(cg->dir[i]), "/sys/fs/cgroup/%s%s", v1_ctrl[i],
			         own);
			cg->joined = true;
			continue;
		}
		snprintf(cg->dir[i], sizeof(cg->dir[i]), "%s/vmm-%u", slice, id);
		sweep(slice, id);
		if ((err = make_dir(slice)) || (err = make_leaf(cg->dir[i]))) {
			snprintf(why, len, "%s: %s", cg->dir[i], strerror(-err));
			return err;
		}
	}
	cg->version = 1;
	limits(cfg, &mem, &cpus);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)mem);
	err = write_file(cg->dir[0], "memory.limit_in_bytes", buf);
	snprintf(buf, sizeof(buf), "%u", PIDS_MAX);
	if (!err)
		err = write_file(cg->dir[1], "pids.max", buf);
	snprintf(buf, sizeof(buf), "%u", CPU_PERIOD);
	if (!err)
		err = write_file(cg->dir[2], "cpu.cfs_period_us", buf);
	snprintf(buf, sizeof(buf), "%u", cpus * CPU_PERIOD);
	if (!err)
		err = write_file(cg->dir[2], "cpu.cfs_quota_us", buf);
	if (err) {
		snprintf(why, len, "cgroup v1 leaf %.400s: setting its limits: %s", cg->dir[0],
		         strerror(-err));
		jail_cgroup_remove(cg);
		return err;
	}
	return 0;
}

int jail_cgroup_create(const struct vm_config *cfg, uint32_t id, struct jail_cgroup *cg, char *why,
                       size_t len)
{
	char why2[600];
	int err;

	memset(cg, 0, sizeof(*cg));
	err = try_v2(cfg, id, cg, why, len);
	if (!err || cfg->jail.cgroup)
		return err;
	if (try_v1(cfg, id, cg, why2, sizeof(why2)) == 0)
		return 0;
	memset(cg, 0, sizeof(*cg));
	snprintf(why + strlen(why), len - strlen(why), "; %s", why2);
	return err;
}

/* "0" into the file `name` of each of the leaf's directories. */
static int write_leaves(const struct jail_cgroup *cg, const char *name)
{
	int n = cg->version == 1 ? 3 : cg->version == 2 ? 1 : 0;

	for (int i = 0; i < n; i++) {
		int err = write_file(cg->dir[i], name, "0");

		if (err)
			return err;
	}
	return 0;
}

int jail_cgroup_join(const struct jail_cgroup *cg)
{
	return cg->joined ? 0 : write_leaves(cg, "cgroup.procs");
}

/* "0" in a v1 hierarchy's tasks file moves the calling thread alone, and
 * the kernel then skips the cgroup_threadgroup_rwsem write lock, whose
 * RCU grace period is what makes a cgroup.procs write cost 5 to 22 ms.
 * A single-threaded caller is its whole process, and the threads it
 * starts later are born in its cgroups. */
int jail_cgroup_join_thread(const struct jail_cgroup *cg)
{
	return cg->version != 1 ? -EINVAL : cg->joined ? 0 : write_leaves(cg, "tasks");
}

/* The number after key in a "key value" file. */
static uint64_t field(const char *dir, const char *file, const char *key)
{
	char buf[2048], *p;
	size_t n = strlen(key);

	if (read_file(dir, file, buf, sizeof(buf)))
		return 0;
	for (p = buf; (p = strstr(p, key)); p += n)
		if ((p == buf || p[-1] == '\n') && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}

bool jail_cgroup_oom_killed(const struct jail_cgroup *cg, uint64_t *limit)
{
	char buf[64];
	const char *lim = cg->version == 2 ? "memory.max" : "memory.limit_in_bytes";

	if (!cg->version)
		return false;
	*limit = read_file(cg->dir[0], lim, buf, sizeof(buf)) ? 0 : strtoull(buf, NULL, 10);
	return field(cg->dir[0], cg->version == 2 ? "memory.events" : "memory.oom_control",
	             "oom_kill") > 0;
}

/* The VM's kernel threads leave the leaf a moment after the VMM: wait
 * for that, 200 ms at most. */
void jail_cgroup_remove(const struct jail_cgroup *cg)
{
	struct timespec ms = {0, 1000000};

	if (cg->joined) /* its caller's to remove */
		return;
	for (int i = 0; i < (cg->version == 1 ? 3 : cg->version == 2 ? 1 : 0); i++)
		for (int tries = 0; rmdir(cg->dir[i]) < 0 && errno == EBUSY && tries < 200; tries++)
			nanosleep(&ms, NULL);
}
