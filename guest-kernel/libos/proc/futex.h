/* SPDX-License-Identifier: MIT */
#ifndef KILN_FUTEX_H
#define KILN_FUTEX_H

#include "klib.h"

struct aspace;

/* Wake up to n waiters on the futex at addr in as; returns how many. */
int futex_wake(struct aspace *as, uint64_t addr, int n);

#endif
