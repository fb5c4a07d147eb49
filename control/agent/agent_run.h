/* SPDX-License-Identifier: MIT */
/* Run one command in a sandbox for kilnd itself (a template's warm-up):
 * an agent exec stream whose output is kept (its last AGENT_RUN_KEEP
 * bytes, stdout and stderr interleaved) for messages. */
#ifndef KILND_AGENT_RUN_H
#define KILND_AGENT_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#define AGENT_RUN_KEEP 2048

struct agent_run_result {
	int exit_code, signal;
	bool timed_out;
	const char *output; /* NUL-terminated, its last AGENT_RUN_KEEP bytes */
};

/* r is NULL when the command did not run to its end: err says why. */
typedef void (*agent_run_fn)(void *ctx, const struct agent_run_result *r, const char *err);

struct agent_run;

/* argv and env (NULL-terminated) are copied out at once. NULL if the
 * stream could not be opened (errno). */
struct agent_run *agent_run(struct ev_loop *loop, const char *vsock_path, const char *const *argv,
                            const char *const *env, uint32_t timeout_ms, agent_run_fn cb,
                            void *ctx);
/* Stop waiting: the agent kills the command when its stream closes. */
void agent_run_cancel(struct agent_run *r);

#endif
