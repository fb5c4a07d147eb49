/* SPDX-License-Identifier: MIT */
/* kiln-agent: directory operations of file streams (fsops.c). */
#ifndef AGENT_FSOPS_H
#define AGENT_FSOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent_user;

/* mkdir -p; the last component gets exactly mode. The directories it
 * makes are given to owner unless that is NULL. 0 or -errno. */
int fs_mkdir_p(const char *path, uint32_t mode, const struct agent_user *owner);
/*
 * Remove a file, an empty directory or (recursive) a whole tree, never
 * following symlinks. 0 or -errno; on failure `where` names what failed.
 */
int fs_remove(const char *path, bool recursive, char *where, size_t where_cap);

#endif
