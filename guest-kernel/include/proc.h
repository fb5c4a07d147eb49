/* SPDX-License-Identifier: MIT */
/* Processes and threads of the library OS. */
#ifndef KILN_PROC_H
#define KILN_PROC_H

#include "klib.h"

struct aspace;
struct files;
struct fs_ctx;

/* The kernel's struct sigaction layout (rt_sigaction with sigsetsize 8). */
struct k_sigaction {
	uint64_t handler, flags, restorer, mask;
};

#define NSIG_KILN 64

struct proc {
	int pid, ppid, pgid, sid;
	struct aspace *as;   /* page tables and mappings (vm.c) */
	struct files *files; /* descriptor table (vfs) */
	struct fs_ctx *fs;   /* cwd, root, umask (vfs) */
	char comm[16];       /* basename of the program, for messages */
	uint64_t start_ns;
	struct k_sigaction sigact[NSIG_KILN + 1];
};

/* %gs:0 is the kernel stack of the running thread, so kstack_top must stay
 * the first member. */
struct thread {
	uint64_t kstack_top;
	struct proc *proc;
	int tid;
	uint64_t clear_child_tid;
	uint64_t fs_base;
	uint64_t gs_base_user; /* ARCH_SET_GS value; %gs belongs to kiln */
	uint64_t sigmask;
	uint64_t altstack[3]; /* stack_t: ss_sp, ss_flags, ss_size */
};

static inline struct thread *cur_thread(void)
{
	struct thread *t;
	asm("rdgsbase %0" : "=r"(t));
	return t;
}

static inline struct proc *cur_proc(void)
{
	return cur_thread()->proc;
}

void thread_set_current(struct thread *t);

/* Create the first process and run `argv[0]` in it; never returns. */
__attribute__((noreturn)) void proc_run_init(int argc, char **argv, char **envp);
/* The whole guest ends when init ends: flush output and report the status
 * to the VMM. */
__attribute__((noreturn)) void proc_exit_group(int status);
/* A fatal signal: print why and end like a shell reports it (128 + sig). */
__attribute__((noreturn)) void proc_kill_self(int sig, const char *why);

#endif
