/* SPDX-License-Identifier: MIT */
#ifndef KILN_EXEC_H
#define KILN_EXEC_H

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
};

void exec_init(void);
/* "#!" scripts (exec_script.c): is this file head one, and rewrite ea to run
 * its interpreter. owned[0..1] receive allocations the caller frees after
 * loading. */
bool exec_is_script(const void *head, size_t len);
int exec_script_args(const void *head, size_t len, struct exec_args *ea, void **owned,
                     const char **why);
/* Load the program at ea->path into a new address space. On -ENOEXEC *why
 * may say what is wrong with the file. */
int exec_load(const struct exec_args *ea, struct exec_image *out, const char **why);

#endif
