/* SPDX-License-Identifier: MIT */
/* VMM processes seen from outside: starting kiln-vmm for a sandbox, and
 * recognising a running one again after a kilnd restart (by pid, start
 * time, working directory and vsock path), without trusting a pid that may
 * have been reused. */
#ifndef KILND_VMM_PROC_H
#define KILND_VMM_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

struct kilnd;

#define VMM_VSOCK_CID 3

struct vmm_args {
	const char *vmm, *kernel, *initrd;
	const char *image;        /* --image, or NULL */
	const char *host_cpuid;   /* --host-cpuid, or NULL */
	const char *vsock_path;   /* --vsock VMM_VSOCK_CID,vsock_path */
	const char *api_path;     /* --api-sock, or NULL */
	const char *console_path; /* stdout and stderr, appended */
	const char *dir;          /* the VMM's working directory: paths in it go relative */
	int memory_mb, cpu_count;
	/* Start from this snapshot instead of booting (--restore): the VM keeps
	 * its own kernel options and memory size. */
	const char *restore;
	const char *restore_mode; /* "eager", "lazy" or "template" */
	const char *template_dir; /* template memory files (mode template) */
	bool paused;              /* restored, but not running (--paused) */
	/* The jail: --jail-id (0: none given), --no-jail, --jail-mem-max. */
	unsigned jail_id;
	const char *jail_rw; /* --jail-rw: the one directory it may write */
	bool no_jail;
	unsigned jail_mem_max_mb;
};

/* Start the VMM in its own process group with stdin on /dev/null; *pid is
 * ours to reap. 0, or -errno with msg filled in. */
int vmm_spawn(const struct vmm_args *a, pid_t *pid, char *msg, size_t msglen);
/* A file the child writes between clone (or fork) and exec: its cgroups
 * (a tasks or cgroup.procs file, "0") and its /proc/self/oom_score_adj
 * (the shim). */
struct vmm_write {
	const char *path, *val;
};
struct vmm_writes {
	const struct vmm_write *v;
	size_t n;
	size_t failed; /* out: which one failed (n: none, the exec did) */
};
/* Each of w in order, from the child before its exec (no allocation):
 * 0, or -errno with w->failed set. */
int vmm_writes_apply(struct vmm_writes *w);
/* vmm_clone.c: start path with argv as pid 1 of a new pid namespace, as
 * vmm_spawn() does (its own process group, cwd dir, stdin /dev/null,
 * stdout and stderr log_fd, nothing else open), pre's files written
 * first (NULL: none). 0, or -errno (pre->failed says whether one of them
 * failed). */
int vmm_clone(const char *path, char *const argv[], const char *dir, int log_fd,
              struct vmm_writes *pre, pid_t *pid);
/* What the jail did to a VMM that died by signal sig (its seccomp filter,
 * its cgroup's OOM killer), appended to what (jail_ids.c). */
void jail_explain_death(const struct kilnd *kd, unsigned jail_id, int sig, char *what, size_t n);
/* Start time (clock ticks since boot, /proc/PID/stat field 22) and state
 * letter of a process. */
int proc_stat(int pid, uint64_t *start, char *state);
/* Is pid alive (not a zombie), started at `start` (0: any) and a VMM
 * serving vsock_path (working in dir, the path's directory)? */
bool vmm_matches(int pid, uint64_t start, const char *dir, const char *vsock_path);
/* Last resort after a crash between spawn and bookkeeping: the pid of the
 * VMM serving vsock_path, found through /proc, or 0. */
int vmm_find(const char *dir, const char *vsock_path);

#endif
