/* SPDX-License-Identifier: MIT */
/* kilnd's client of a VMM's JSON API socket (vmm/API.md): one request
 * line, one reply line, on the libev loop, with a deadline. The VMM serves
 * one request at a time, so a slow snapshot delays only its own VM. */
#ifndef KILND_VMM_API_H
#define KILND_VMM_API_H

#include <ev.h>
#include <jansson.h>

struct vmm_call;

/* reply: the VMM's answer when it gave one (borrowed for the call), else
 * NULL. err: NULL on success ("ok":true), else what went wrong, for a
 * person: the VMM's "error", or why there was no answer. */
typedef void (*vmm_call_fn)(void *ctx, json_t *reply, const char *err);

/* Send req (borrowed) to the socket at path; cb runs exactly once, later,
 * unless the call is cancelled. NULL if it could not even start (errno). */
struct vmm_call *vmm_call(struct ev_loop *loop, const char *path, json_t *req, double timeout,
                          vmm_call_fn cb, void *ctx);
/* Forget the call: cb will not run. The VMM may still carry it out. */
void vmm_call_cancel(struct vmm_call *c);

#endif
