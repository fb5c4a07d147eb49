/* SPDX-License-Identifier: MIT */
/*
 * Credentials of a process: real, effective and saved user and group ids,
 * the file-system ids that permission checks use (they follow the
 * effective ids unless setfsuid/setfsgid set them), and the supplementary
 * groups. They live in struct proc (every thread of a process shares
 * them: the C libraries change all threads' ids together anyway) and are
 * plain data, so fork copies them and a snapshot of guest memory keeps
 * them. A new process starts as root (all zero).
 *
 * The VM is the security boundary: these ids exist so that programs that
 * check them (pip, ssh, test suites) see a Unix system, and so that an
 * unprivileged user cannot write or remove root's files by mistake.
 */
#ifndef KILN_CRED_H
#define KILN_CRED_H

#include "klib.h"

#define CRED_NGROUPS 64 /* supplementary groups a process may have */

/* One kind of id (user or group): real, effective, saved, file system. */
struct cred_ids {
	uint32_t real, eff, saved, fs;
};

struct cred {
	struct cred_ids u, g;
	uint32_t ngroups;
	uint32_t groups[CRED_NGROUPS];
};

/* Root's, for the kernel's own work while it boots (proc.h cur_cred). */
extern const struct cred cred_root;
/* Is gid the file-system group or one of the supplementary groups? */
bool cred_in_group(const struct cred *c, uint32_t gid);

#endif
