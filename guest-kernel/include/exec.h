/* SPDX-License-Identifier: MIT */
#ifndef KILN_EXEC_H
#define KILN_EXEC_H

#include "cred.h"
#include "klib.h"

#define EXEC_MAX_ARGS 65536

struct aspace;

struct exec_args {
	const char *path;
	int argc, envc;
	char *const *argv; /* kernel copies */
	char *const *envp;
};

struct exec_image {
	struct aspace *as;
	uint64_t entry, sp;
	/* The ids the program runs with: the caller's, but a set-user-ID
	 * (set-group-ID) file's owner (group) as effective and saved ids;
	 * secure if they differ from the real ones (AT_SECURE: the dynamic
	 * loader then ignores LD_PRELOAD and the like), and then the process
	 * is not dumpable. */
	struct cred cred;
	bool secure;
	bool unreadable; /* the caller may not read the file: not dumpable */
};

void exec_init(void);
/* "#!" scripts (exec_script.c): is this file head one, and rewrite ea to run
 * its interpreter. owned[0..1] receive allocations the caller frees after
 * loading. */
bool exec_is_script(const void *head, size_t len);
int exec_script_args(const void *head, size_t len, struct exec_args *ea, void **owned,
                     const char **why);
/* Load the program at ea->path into a new address space, for a process
 * with credentials cred (set-ids ignored if no_new_privs). On -ENOEXEC
 * *why may say what is wrong with the file. */
int exec_load(const struct exec_args *ea, const struct cred *cred, bool no_new_privs,
              struct exec_image *out, const char **why);
/* The ids a program runs with (exec_image.cred) when its file has mode
 * mode and owner uid:gid, for a process with ids cur; true if secure. */
bool exec_creds(const struct cred *cur, bool no_new_privs, uint32_t mode, uint32_t uid,
                uint32_t gid, struct cred *out);

#endif
