/* SPDX-License-Identifier: MIT */
/* Replaying a guest's change set onto the container's rootfs
 * (rwlayer_apply.c); rwlayer.c reads it from the agent. */
#ifndef KILN_SHIM_RWLAYER_H
#define KILN_SHIM_RWLAYER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A node's CHANGE (include/kiln/agent.h) */
struct rwl_attr {
	uint32_t mode, uid, gid;
	int64_t mtime_s;
	uint32_t mtime_ns;
	uint64_t size;
};

struct rwl_dir {
	char *path;
	int64_t s;
	uint32_t ns;
};

struct rwl {
	int root; /* the rootfs's directory */
	char **excl;
	size_t nexcl;
	uint64_t bytes, max_bytes, entries, max_entries;
	/* the file whose bytes come: its temporary name in pd, its own name */
	int fd, pd;
	uint64_t left;
	struct rwl_attr attr;
	char tmp[64], name[NAME_MAX + 1], path[PATH_MAX];
	struct rwl_dir *dirs; /* times to set at the end */
	size_t ndirs, cap_dirs;
	unsigned refused, setid, removed, links;
	/* the guest never had the root's device nodes, fifos and sockets (a
	 * pod container's copied root): a NAMES without them keeps them */
	bool keep_special;
	char first[1100]; /* the first refusal */
	char msg[1400];   /* why the replay failed */
};

/* Every call returns 0 or -errno, with w->msg saying why (then stop; a
 * refused change is not an error until rwl_end). Paths are relative to
 * root, as CHANGE names them; excl (absolute or relative) are left alone. */
int rwl_begin(struct rwl *w, const char *root, uint64_t max_bytes, uint64_t max_entries,
              const char *const *excl, size_t nexcl);
int rwl_node(struct rwl *w, const char *path, const struct rwl_attr *a, const char *link);
int rwl_data(struct rwl *w, const void *p, size_t n);
/* path: a new name of the regular file at target (a hard link). */
int rwl_link(struct rwl *w, const char *path, const char *target);
/* names: the directory's names now (sorted here); the others go. */
int rwl_names(struct rwl *w, const char *path, const char **names, size_t n);
/* Directory times, then -EPERM if changes were refused (w->msg). */
int rwl_end(struct rwl *w);
void rwl_free(struct rwl *w);

#endif
