/* SPDX-License-Identifier: MIT */
/* Auto-resume: a request that needs its sandbox running (exec, pty, files,
 * envd's RPCs and /files) and finds it paused is served once the sandbox
 * runs again, resumed as POST /sandboxes/{id}/connect resumes it (pause.c:
 * eager restore, the agent answering), its lifetime re-armed to the timeout
 * it was created with. The resume is a sb_request(SB_OP_RESUME): requests
 * that arrive while it is under way wait for it (one resume, not one per
 * request), and one that finds a pause under way waits for the pause to end,
 * then resumes. A sandbox that is starting or resuming is waited for the
 * same way. */
#ifndef KILND_WAKE_H
#define KILND_WAKE_H

#include "http/http.h"
#include "kilnd.h"
#include "sandbox.h"

struct wake_ops {
	/* The sandbox runs: serve the request on it. */
	void (*run)(void *ctx, struct sandbox *sb);
	/* It does not run and could not be brought up: answer the request.
	 * status: 409 killed or error, 404 deleted meanwhile, 429 at
	 * --max-sandboxes, 5xx the resume failed (msg says why). */
	void (*fail)(void *ctx, int status, const char *msg);
	/* The client went away while waiting: free ctx. */
	void (*drop)(void *ctx);
};

/* Called at headers time by a route whose handler streams the body: no
 * body is parsed until the sandbox runs (http_hold). */
#define WAKE_HOLD 1u

/* Serve the request on c when sb runs: now (run is called before this
 * returns) if it is running, else after waiting and resuming as above.
 * Exactly one of the ops is called. what: the request, for the log. */
void sb_wake(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, const char *what,
             unsigned flags, const struct wake_ops *ops, void *ctx);

/* Would sb_wake() wait for sb rather than fail (paused, pausing, resuming,
 * starting)? */
bool sb_wakeable(const struct sandbox *sb);

#endif
