/* SPDX-License-Identifier: MIT */
/*
 * The jail kiln-vmm puts itself in (vmm/jail/), on by default.
 *
 * Started as root, kiln-vmm forks into a new pid namespace and waits there
 * for its child, which is the VMM (jail_enter), unless it is pid 1 of a
 * namespace its caller made (kilnd does that): the VMM joins a cgroup
 * leaf with the sandbox's limits, takes new mount, network, ipc and uts
 * namespaces, builds a root holding only its files (bind mounts, read-only
 * where it can), pivot_root()s into it, sets rlimits and closes every other
 * descriptor. It sets up the VM there as root, and before the guest runs
 * drops to its own uid and gid (jail_drop); each thread then loads its own
 * seccomp filter (jail_thread), killing the process on any other call.
 * Not root: what an unprivileged user can have (a user namespace when the
 * host allows one; seccomp always), said on stderr.
 */
#ifndef KILN_VMM_JAIL_H
#define KILN_VMM_JAIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "kiln/snapshot.h"

#define JAIL_ID_BASE 900000u /* by-hand runs: JAIL_ID_BASE + pid % 65536 */
#define JAIL_ID_MAX  4000000000u

struct vm;
struct vm_config;

enum jail_seccomp { JAIL_SECCOMP_KILL, JAIL_SECCOMP_LOG, JAIL_SECCOMP_OFF };

/* The kinds of thread, each with its own filter (jail_seccomp.c). */
enum jail_thread {
	JAIL_T_MAIN,   /* event loop: devices, API socket, snapshots */
	JAIL_T_VCPU,   /* KVM_RUN and its exits */
	JAIL_T_BLK,    /* virtio-blk's I/O worker */
	JAIL_T_UFFD,   /* userfaultfd fault thread (restore) */
	JAIL_T_LOADER, /* restore: loads memory while the guest runs */
	JAIL_T_OUTER,  /* the process outside the namespaces, waiting */
	JAIL_T_MAX,
};

/* Options (--no-jail, --jail-id, --jail-cgroup, --jail-cgroup-joined,
 * --jail-mem-max, --jail-rw, --jail-seccomp). */
struct jail_cfg {
	bool off;
	uint32_t id;        /* uid and gid; 0: pick */
	const char *cgroup; /* parent of the leaf; NULL: find one */
	bool cgroup_joined; /* the cgroup it was started in is the leaf */
	uint64_t mem_max;   /* memory.max; 0: guest RAM + overhead */
	const char *rw_dir; /* one more writable directory */
	enum jail_seccomp seccomp;
	/* State: what was set up (reported by --stats and the API). */
	bool active;   /* namespaces and root (root only) */
	bool userns;   /* unprivileged: a user namespace */
	bool dropped;  /* uid/gid dropped */
	bool pdeath;   /* forked under our own waiting parent: die with it */
	bool filtered; /* seccomp on (the main thread's) */
	/* The kernel's and initramfs's identities, found outside the jail
	 * (where the image-id cache is): snapshots name them without hashing
	 * the files or reaching for the cache. */
	struct jail_known {
		bool ok;
		struct stat st;
		struct snap_image_id id;
	} known[2];
};

enum { JAIL_KERNEL, JAIL_INITRD };

/* A cgroup leaf: one directory (v2), or one per v1 hierarchy (memory,
 * pids, cpu) where the host has those controllers only there. */
struct jail_cgroup {
	int version; /* 0: none */
	bool joined; /* its caller's (--jail-cgroup-joined): not joined or removed here */
	char dir[3][640];
};

/* Before anything else in main (no threads yet): may fork; the parent
 * never returns. Exits with a message if the jail cannot be made. */
void jail_enter(struct vm_config *cfg);
/* Just before the vCPUs start: drop uid and gid, then the main thread's
 * filter comes with jail_thread(vm, JAIL_T_MAIN) once every early thread
 * has started. */
void jail_drop(struct vm *vm);
/* At the start of a thread of this kind (and main's, last). */
void jail_thread(struct vm *vm, enum jail_thread kind);
/* The identity of the kernel or initramfs (JAIL_KERNEL, JAIL_INITRD) as
 * found before the jail, if st is that file. */
bool jail_known_file(const struct jail_cfg *j, int which, const struct stat *st,
                     struct snap_image_id *id);
/* One line for --stats: what the jail holds, the filters' sizes. */
void jail_describe(FILE *f, const struct jail_cfg *j);
/* Test hook, off unless KILN_VMM_TEST_SECCOMP is set and a filter is on:
 * a call no filter allows, which must kill the VMM (tests/). */
void jail_test_denied(struct vm *vm);

/* jail_root.c: the mount namespace's root, for a child that is root. */
int jail_root_build(struct vm_config *cfg, uint32_t id, char *why, size_t len);
/* jail_cgroup.c: a leaf named for id with the VM's limits; 0, or -errno
 * with why (the caller warns and goes on without). */
int jail_cgroup_create(const struct vm_config *cfg, uint32_t id, struct jail_cgroup *cg, char *why,
                       size_t len);
/* Move the calling process into it. */
int jail_cgroup_join(const struct jail_cgroup *cg);
/* v1 only (-EINVAL otherwise): move the calling thread, which must be
 * the process's only one, without the kernel's slow whole-process path. */
int jail_cgroup_join_thread(const struct jail_cgroup *cg);
/* After the VMM ended: whether the kernel's OOM killer acted in the leaf
 * (and its memory limit, for the message); then remove it. */
bool jail_cgroup_oom_killed(const struct jail_cgroup *cg, uint64_t *limit);
void jail_cgroup_remove(const struct jail_cgroup *cg);

#endif
