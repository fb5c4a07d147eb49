/* SPDX-License-Identifier: MIT */
/*
 * Syscall handlers register themselves with SYSCALL_DEFINE(name) in the file
 * of their family (sys_file.c, sys_mm.c, ...); the dispatcher (syscall.c)
 * builds its table indexed by number from the .syscalls section at boot.
 *
 *   SYSCALL_DEFINE(getpid) { return cur_proc()->pid; }
 *
 * Arguments arrive as `long a0 .. a5`; handlers convert them. Return a
 * value or -errno, as the Linux ABI does.
 */
#ifndef KILN_SYSCALL_H
#define KILN_SYSCALL_H

#include <asm/unistd_64.h>

#include "klib.h"

typedef long (*syscall_fn)(long a0, long a1, long a2, long a3, long a4, long a5);

struct syscall_entry {
	long nr;
	const char *name;
	syscall_fn fn;
};

#define SYSCALL_DEFINE(name)                                                                   \
	static long sys_##name(long a0, long a1, long a2, long a3, long a4, long a5);          \
	__attribute__((section(".syscalls"), used,                                             \
	               aligned(8))) static const struct syscall_entry syscall_entry_##name = { \
	    __NR_##name, #name, sys_##name};                                                   \
	static long sys_##name(long a0, long a1, long a2, long a3, long a4, long a5)

/* The same handler under a second name (e.g. dup2 and dup3 share code). */
#define SYSCALL_ALIAS(name, target)                                                            \
	__attribute__((section(".syscalls"), used,                                             \
	               aligned(8))) static const struct syscall_entry syscall_entry_##name = { \
	    __NR_##name, #name, sys_##target}

struct trapframe;
long syscall_dispatch(struct trapframe *tf);
/* Count a call we answered with -ENOSYS (for kiln.stats=1). */
void syscall_count_enosys(long nr);
void syscall_init(void);
void syscall_print_stats(void);

/* Trap kinds counted with kiln.stats=1 (trap.c). */
enum stats_trap {
	STATS_TRAP_FIRST_SYSCALL,
	STATS_TRAP_BAD_SYSCALL,
	STATS_TRAP_FAULT_FILL,
	STATS_TRAP_FAULT_COPY,
	STATS_TRAP_FAULT_STACK,
	STATS_TRAP_FAULT_KERNEL,
	STATS_TRAP_SIGNAL,
	STATS_TRAP_IRQ,
	STATS_TRAP_KINDS
};
/* Count a trap of this kind that started at TSC since. */
void stats_trap(enum stats_trap kind, uint64_t since);

#endif
