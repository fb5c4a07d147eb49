/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"
#include "vmm_proc.h"

/* path relative to dir when it lies inside it (the VMM runs in dir). */
static const char *rel(const char *dir, const char *path)
{
	size_t n = dir ? strlen(dir) : 0;

	if (path && n && !strncmp(path, dir, n) && path[n] == '/' && path[n + 1])
		return path + n + 1;
	return path;
}

int vmm_spawn(const struct vmm_args *a, pid_t *out, char *msg, size_t msglen)
{
	char mem[32], cpus[16], vsock[4200], jail_id[16], jail_mem[32];
	char *argv[40];
	int argc = 0;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, def;
	int log_fd, rc;

#define ARG(s) (argv[argc++] = (char *)(s))
	snprintf(mem, sizeof(mem), "%dM", a->memory_mb);
	snprintf(cpus, sizeof(cpus), "%d", a->cpu_count);
	snprintf(vsock, sizeof(vsock), "%d,%s", VMM_VSOCK_CID, rel(a->dir, a->vsock_path));
	ARG(a->vmm);
	ARG("--kernel");
	ARG(a->kernel);
	ARG("--initrd");
	ARG(a->initrd);
	if (a->image) {
		ARG("--image");
		ARG(a->image);
	}
	if (a->host_cpuid) {
		ARG("--host-cpuid");
		ARG(a->host_cpuid);
	}
	ARG("--cpus");
	ARG(cpus);
	ARG("--vsock");
	ARG(vsock);
	if (a->api_path) {
		ARG("--api-sock");
		ARG(rel(a->dir, a->api_path));
	}
	if (a->restore) {
		ARG("--restore");
		ARG(rel(a->dir, a->restore));
		ARG("--restore-mode");
		ARG(a->restore_mode);
		if (a->template_dir) {
			ARG("--template-dir");
			ARG(a->template_dir);
		}
		if (a->paused)
			ARG("--paused");
	} else {
		ARG("--mem");
		ARG(mem);
	}
	if (a->no_jail) {
		ARG("--no-jail");
	} else if (a->jail_id) {
		snprintf(jail_id, sizeof(jail_id), "%u", a->jail_id);
		ARG("--jail-id");
		ARG(jail_id);
		if (a->jail_rw) {
			ARG("--jail-rw");
			ARG(rel(a->dir, a->jail_rw));
		}
	}
	if (!a->no_jail && a->jail_mem_max_mb) {
		snprintf(jail_mem, sizeof(jail_mem), "%uM", a->jail_mem_max_mb & ~1u);
		ARG("--jail-mem-max");
		ARG(jail_mem);
	}
	argv[argc] = NULL;
#undef ARG

	log_fd = open(a->console_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (log_fd < 0) {
		rc = -errno;
		snprintf(msg, msglen, "cannot create %s: %s", a->console_path, strerror(errno));
		return rc;
	}
	/* A jailed VMM starts as pid 1 of a pid namespace of its own, our
	 * child: its end is what we see end (vmm_clone.c). */
	if (a->jail_id) {
		rc = vmm_clone(a->vmm, argv, a->dir, log_fd, NULL, out);
		close(log_fd);
		if (rc)
			snprintf(msg, msglen, "cannot start %s: %s", a->vmm, strerror(-rc));
		return rc;
	}
	posix_spawn_file_actions_init(&fa);
	/* Every local user can read a command line: the VMM works in the
	 * sandbox's directory and is given its files by relative paths, so no
	 * sandbox id shows there. */
	if (a->dir)
		posix_spawn_file_actions_addchdir_np(&fa, a->dir);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, log_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigfillset(&def);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &def);
	/* Own process group: a Ctrl-C on kilnd's terminal must not reach the
	 * VMs, and a kill of the group takes all of a VMM's processes. */
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
	                                    POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(out, a->vmm, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(log_fd);
	if (rc) {
		snprintf(msg, msglen, "cannot start %s: %s", a->vmm, strerror(rc));
		return -rc;
	}
	return 0;
}

int proc_stat(int pid, uint64_t *start, char *state)
{
	char path[64], *buf, *p;
	unsigned long long st = 0;
	int field = 3;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	buf = read_small_file(path, 4096, NULL);
	if (!buf)
		return -ESRCH;
	p = strrchr(buf, ')'); /* the command name may hold anything */
	if (!p || p[1] != ' ') {
		free(buf);
		return -EIO;
	}
	p += 2; /* field 3, the state */
	*state = *p;
	while (*p && field < 22) {
		if (*p == ' ')
			field++;
		p++;
	}
	st = strtoull(p, NULL, 10);
	free(buf);
	*start = st;
	return 0;
}

static bool cmdline_mentions(int pid, const char *needle)
{
	char path[64], *buf;
	size_t len;
	bool found;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	buf = read_small_file(path, 65536, &len);
	if (!buf)
		return false;
	found = memmem(buf, len, needle, strlen(needle)) != NULL;
	free(buf);
	return found;
}

/* Does pid work in dir (kilnd's own VMMs only: /proc/PID/cwd needs the
 * right to trace it)? */
static bool cwd_is(int pid, const char *dir)
{
	char path[64], cwd[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
	n = readlink(path, cwd, sizeof(cwd) - 1);
	if (n <= 0)
		return false;
	cwd[n] = 0;
	return !strcmp(cwd, dir);
}

bool vmm_matches(int pid, uint64_t start, const char *dir, const char *vsock_path)
{
	uint64_t now_start;
	char state;
	const char *base = strrchr(vsock_path, '/');

	if (pid <= 0 || proc_stat(pid, &now_start, &state))
		return false;
	if (state == 'Z' || state == 'X')
		return false;
	if (start && now_start != start)
		return false;
	/* VMMs of older kilnds were given the absolute path */
	return (base && cwd_is(pid, dir) && cmdline_mentions(pid, base + 1)) ||
	       cmdline_mentions(pid, vsock_path);
}

int vmm_find(const char *dir, const char *vsock_path)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		int pid = atoi(e->d_name);

		if (pid > 1 && pid != getpid() && vmm_matches(pid, 0, dir, vsock_path)) {
			found = pid;
			break;
		}
	}
	closedir(d);
	return found;
}
