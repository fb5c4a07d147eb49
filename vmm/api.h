/* SPDX-License-Identifier: MIT */
/* The per-VM JSON API on a unix socket (vmm/api.c, protocol in vmm/API.md). */
#ifndef KILN_VMM_API_H
#define KILN_VMM_API_H

#include "vm.h"

/* Listen on path (a stale socket there is replaced, anything else is
 * -EEXIST) and serve requests on the main loop. */
int api_create(struct vm *vm, const char *path);
void api_destroy(struct vm *vm);

#endif
