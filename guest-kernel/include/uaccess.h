/* SPDX-License-Identifier: MIT */
/*
 * Access to a program's memory from a syscall. Programs share the address
 * space with the library OS, so a copy is a plain copy; the work is in the
 * checks: the range must be in the lower half (USER_TOP), and a fault during
 * the copy (unmapped or read-only page) returns -EFAULT instead of killing
 * the library OS (trap.c recovers at uaccess_fixup).
 */
#ifndef KILN_UACCESS_H
#define KILN_UACCESS_H

#include "klib.h"
#include "mm.h"

static inline bool user_range_ok(uint64_t addr, uint64_t len)
{
	return addr <= USER_TOP && len <= USER_TOP - addr;
}

/* 0 or -EFAULT. */
int copy_from_user(void *dst, const void *usrc, size_t n);
int copy_to_user(void *udst, const void *src, size_t n);
int clear_user(void *udst, size_t n);
/* Copies a NUL-terminated string of at most max-1 bytes plus NUL. Returns
 * its length, -EFAULT, or -ENAMETOOLONG if no NUL within max bytes. */
long strncpy_from_user(char *dst, const char *usrc, size_t max);

/* The copy routines live in [uaccess_start, uaccess_end); a fault there
 * resumes at uaccess_fixup, which returns -EFAULT. */
extern char uaccess_start[], uaccess_end[], uaccess_fixup[];

#endif
