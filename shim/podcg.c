/* SPDX-License-Identifier: MIT */
/*
 * The pod's VMM in the pod's cgroup: the owner's linux.cgroupsPath
 * (spec_pod.c, podcg_parse.c), made where it is missing in every mounted
 * cgroup hierarchy (each v1 one, the v2 tree, both on a hybrid host), and
 * joined by the VMM's child before its exec (vm.c), so that every page of
 * guest memory is charged there and the kubelet's pod-level accounting
 * and limits (its pod cgroup is the parent) see the VM. kiln-vmm's jail
 * takes it as its leaf (--jail-cgroup-joined) and writes its limits
 * there; cgroup.c's CPU limits land there too. A v1 cpuset directory made
 * here gets its parent's CPUs and memory nodes (the kernel leaves them
 * empty, which no task may join); in v2, each parent's subtree_control
 * gets the memory, pids and cpu controllers it has.
 *
 * What was made (per hierarchy, the depth from which on) is recorded in
 * BUNDLE/cgroup.made, and removed, deepest first, when the VMM has ended
 * (or at `delete` after a shim that died); directories that were there
 * are left, as is one another pod still uses.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

#define MADE_FILE "cgroup.made"

struct hier {
	char mnt[256];
	bool v2;
};

/* Each mounted cgroup hierarchy once (by its device), its whole tree
 * (mount root "/"), from /proc/self/mountinfo. */
static int hierarchies(struct hier *h, int cap)
{
	char line[2048], seen[PODCG_MAX_H][32];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int n = 0;

	if (!f)
		return -errno;
	while (n < cap && fgets(line, sizeof(line), f)) {
		char dev[32], root[256], mnt[256], type[32];
		const char *sep = strstr(line, " - ");
		bool dup = false;

		if (!sep || sscanf(line, "%*s %*s %31s %255s %255s", dev, root, mnt) != 3 ||
		    sscanf(sep + 3, "%31s", type) != 1 ||
		    (strcmp(type, "cgroup") && strcmp(type, "cgroup2")) || strcmp(root, "/") ||
		    strchr(mnt, '\\'))
			continue;
		for (int i = 0; i < n; i++)
			dup = dup || !strcmp(seen[i], dev);
		if (dup)
			continue;
		snprintf(seen[n], sizeof(seen[n]), "%s", dev);
		snprintf(h[n].mnt, sizeof(h[n].mnt), "%s", mnt);
		h[n].v2 = !strcmp(type, "cgroup2");
		n++;
	}
	fclose(f);
	return n;
}

static int put(const char *dir, const char *file, const char *val)
{
	char path[PODCG_PATH_MAX + 512];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		err = -errno;
	close(fd);
	return err;
}

static void get(const char *dir, const char *file, char *buf, size_t cap)
{
	char path[PODCG_PATH_MAX + 512];
	ssize_t r = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0) {
		r = read(fd, buf, cap - 1);
		close(fd);
	}
	buf[r > 0 ? r : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

static bool has_word(const char *list, const char *w)
{
	size_t l = strlen(w);

	for (const char *p = list; (p = strstr(p, w)); p += l)
		if ((p == list || p[-1] == ' ') && (!p[l] || p[l] == ' '))
			return true;
	return false;
}

/* A v2 parent's controllers for its children: those of memory, pids and
 * cpu it has. */
static int enable_v2(const char *dir)
{
	static const char *const want[] = {"memory", "pids", "cpu"};
	char have[512], on[512], w[16];
	int err;

	get(dir, "cgroup.controllers", have, sizeof(have));
	get(dir, "cgroup.subtree_control", on, sizeof(on));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (!has_word(have, want[i]) || has_word(on, want[i]))
			continue;
		snprintf(w, sizeof(w), "+%s", want[i]);
		if ((err = put(dir, "cgroup.subtree_control", w)))
			return err;
	}
	return 0;
}

/* A new v1 cpuset directory takes its parent's CPUs and nodes. */
static int cpuset_init(const char *parent, const char *dir)
{
	static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
	char have[1024], mine[1024];
	int err;

	for (int i = 0; i < 2; i++) {
		get(dir, files[i], mine, sizeof(mine));
		if (mine[0])
			continue;
		get(parent, files[i], have, sizeof(have));
		if ((err = put(dir, files[i], have)))
			return err;
	}
	return 0;
}

static bool is_cpuset(const struct hier *h)
{
	char probe[300];

	return !h->v2 &&
	       snprintf(probe, sizeof(probe), "%s/cpuset.cpus", h->mnt) < (int)sizeof(probe) &&
	       !access(probe, F_OK);
}

/* The path's first depth components under h's mount, into dir. */
static void prefix(const struct hier *h, const char *path, int depth, char *dir, size_t cap)
{
	const char *p = path;

	for (int d = 0; d < depth && p; d++)
		p = strchr(p + 1, '/');
	snprintf(dir, cap, "%s%.*s", h->mnt, p ? (int)(p - path) : (int)strlen(path), path);
}

static int depth_of(const char *path)
{
	int d = 0;

	for (const char *p = path; *p; p++)
		d += *p == '/';
	return d;
}

/* rmdir of h's levels of path from depth `from` on, deepest first: the
 * leaf waited for (the VM's kernel threads leave a moment after the VMM,
 * 200 ms at most), a parent left if something else is in it. */
static void remove_from(const struct hier *h, const char *path, int from)
{
	struct timespec ms = {0, 1000000};
	char dir[PODCG_PATH_MAX + 300];

	for (int d = depth_of(path); d >= from && d >= 1; d--) {
		int err = 0;

		prefix(h, path, d, dir, sizeof(dir));
		for (int t = 0;
		     (err = rmdir(dir) < 0 ? errno : 0) == EBUSY && d == depth_of(path) && t < 200;
		     t++)
			nanosleep(&ms, NULL);
		if (err && err != ENOENT) {
			if (d == depth_of(path))
				shim_log("cannot remove the pod's cgroup %s: %s", dir,
				         strerror(err));
			return;
		}
	}
}

/* An existing leaf is taken only when nothing uses it: no process, no
 * cgroup below it (else a client could have kiln-vmm's jail write its
 * limits over, say, /kubepods or /system.slice). */
static bool vacant(const char *dir)
{
	char procs[16];
	struct dirent *e;
	bool empty = true;
	DIR *d = opendir(dir);

	if (!d)
		return false;
	while (empty && (e = readdir(d)))
		empty = e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(d);
	get(dir, "cgroup.procs", procs, sizeof(procs));
	return empty && !procs[0];
}

/* path in h, made where missing: the depth from which on this made it
 * (depth + 1: none), or -errno. */
static int make(const struct hier *h, const char *path, char *msg, size_t n)
{
	char dir[PODCG_PATH_MAX + 300], parent[PODCG_PATH_MAX + 300];
	int depth = depth_of(path), made = depth + 1, err = 0;
	struct stat st;

	for (int d = 1; d <= depth && !err; d++) {
		prefix(h, path, d - 1, parent, sizeof(parent));
		prefix(h, path, d, dir, sizeof(dir));
		if (h->v2 && (err = enable_v2(parent))) {
			snprintf(msg, n,
			         "cannot enable the memory, pids and cpu controllers for the pod's "
			         "cgroup in %s: %s",
			         parent, strerror(-err));
			break;
		}
		if (mkdir(dir, 0755) == 0) {
			made = made > d ? d : made;
			if (is_cpuset(h) && (err = cpuset_init(parent, dir)))
				snprintf(msg, n, "cannot give %s its parent's CPUs and nodes: %s",
				         dir, strerror(-err));
		} else if (errno != EEXIST) {
			err = -errno;
			snprintf(msg, n, "cannot make the pod's cgroup %s: %s%s", dir,
			         strerror(errno),
			         errno == EACCES || errno == EROFS
			             ? " (the shim needs root and writable cgroup mounts)"
			             : "");
		} else if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			err = -ENOTDIR;
			snprintf(msg, n,
			         "linux.cgroupsPath %s: %s is a cgroup's file, not a cgroup: give "
			         "another path",
			         path, dir);
		} else if (d == depth && !vacant(dir)) {
			err = -EBUSY;
			snprintf(msg, n,
			         "linux.cgroupsPath %s: %s is in use (it has processes or cgroups "
			         "of its own): the pod's VMM takes a cgroup of its own",
			         path, dir);
		}
	}
	if (err && made <= depth)
		remove_from(h, path, made);
	return err ? err : made;
}

static void record(const char *path, const struct hier *h, const int *made, int nh)
{
	FILE *f = fopen(MADE_FILE, "we");

	if (!f) {
		shim_log("cannot record the cgroups made in %s: %s", MADE_FILE, strerror(errno));
		return;
	}
	fprintf(f, "%s\n", path);
	for (int i = 0; i < nh; i++)
		if (made[i] <= depth_of(path))
			fprintf(f, "%d %s\n", made[i], h[i].mnt);
	fclose(f);
}

int podcg_prepare(struct shim *s, struct podcg_join *j, char *msg, size_t n)
{
	const char *path = s->pod.cgroup;
	struct hier h[PODCG_MAX_H];
	int made[PODCG_MAX_H], nh, err = 0;

	j->n = 0;
	if (!path[0])
		return 0;
	if (geteuid() != 0) {
		shim_log("not root: the VMM stays out of linux.cgroupsPath %s", path);
		return 0;
	}
	if ((nh = hierarchies(h, PODCG_MAX_H)) < 0) {
		snprintf(msg, n, "cannot read /proc/self/mountinfo: %s", strerror(-nh));
		return nh;
	}
	if (!nh) {
		snprintf(msg, n, "linux.cgroupsPath %s: no cgroup file system is mounted", path);
		return -ENOENT;
	}
	for (int i = 0; i < nh && !err; i++) {
		/* a parent another pod's shim removed meanwhile: again */
		for (int tries = 0; tries < 3; tries++)
			if ((made[i] = make(&h[i], path, msg, n)) != -ENOENT)
				break;
		if (made[i] < 0) {
			err = made[i];
			for (int k = 0; k < i; k++)
				remove_from(&h[k], path, made[k]);
			break;
		}
		if (snprintf(j->file[i], sizeof(j->file[i]), "%s%s/%s", h[i].mnt, path,
		             h[i].v2 ? "cgroup.procs" : "tasks") >= (int)sizeof(j->file[i])) {
			snprintf(msg, n, "the pod's cgroup %s%s: path too long", h[i].mnt, path);
			err = -ENAMETOOLONG;
			for (int k = 0; k <= i; k++)
				remove_from(&h[k], path, made[k]);
			break;
		}
		j->n++;
	}
	if (err) {
		j->n = 0;
		return err;
	}
	record(path, h, made, nh);
	return 0;
}

void podcg_remove(const char *bundle)
{
	char file[PATH_MAX + 16], line[PODCG_PATH_MAX + 8], path[PODCG_PATH_MAX + 1], why[256];
	struct hier h[PODCG_MAX_H];
	int nh = hierarchies(h, PODCG_MAX_H);
	FILE *f;

	snprintf(file, sizeof(file), "%s/" MADE_FILE, bundle);
	if (!(f = fopen(file, "re")))
		return;
	/* the shim's own file, but checked as a client's path all the same */
	if (!fgets(line, sizeof(line), f) || (line[strcspn(line, "\n")] = 0, line[0] != '/') ||
	    podcg_parse(line, strlen(line), path, sizeof(path), why, sizeof(why))) {
		shim_log("%s does not name a cgroup: left as it is", file);
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char mnt[256];
		int from;

		if (sscanf(line, "%d %255s", &from, mnt) != 2 || from < 1)
			continue;
		for (int i = 0; i < nh; i++)
			if (!strcmp(h[i].mnt, mnt))
				remove_from(&h[i], path, from);
	}
	fclose(f);
	unlink(file);
}
