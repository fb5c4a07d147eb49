/* SPDX-License-Identifier: MIT */
/* kiln-agent: the state of an exec or pty stream (exec.c, procio.c). */
#ifndef AGENT_EXEC_H
#define AGENT_EXEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "agent.h"
#include "users.h"

enum proc_phase {
	PROC_WAIT_START, /* waiting for START */
	PROC_SPAWNING,   /* forked; waiting for the status pipe */
	PROC_RUNNING,    /* STARTED sent */
	PROC_DONE,       /* EXIT sent */
};

struct proc {
	bool pty;
	enum proc_phase phase;
	pid_t pid; /* also the process group and session id */
	int status_fd;
	int out_fd, err_fd, in_fd; /* pty: out_fd == in_fd == the master, err_fd == -1 */
	struct kbuf input;         /* host input not yet written */
	bool stdin_eof;            /* exec: close stdin once input drains */
	bool tty_eof;              /* pty: the master read EIO (kept open, see exec.c) */
	bool exited, spawn_failed, timed_out;
	bool keep;          /* KILN_FRAME_KEEP: outlives its stream (agent.h) */
	bool oom;           /* the agent killed it: its output could not be kept */
	int64_t started_ms; /* monotonic: since when a kill for memory is its */
	int wstatus;
	int64_t deadline;
	int64_t forget_at;                /* detached and exited: forgotten then */
	uint64_t tag;                     /* START's tag trailer (KILN_MSG_PROC) */
	uint32_t hold_ms;                 /* test hook: STARTED held this long */
	int64_t hold_until;               /* started; STARTED goes out then */
	uint8_t status[SPAWN_STATUS_MAX]; /* what the child wrote to the status pipe */
	size_t status_len;
};

/* A parsed START message. */
struct start_req {
	char **argv, **env, *cwd;
	uint32_t uid, timeout_ms;
	uint16_t cols, rows;
	const struct agent_user *user; /* the user trailer's, or NULL */
	uint32_t n_rlimits;            /* the rlimits trailer's */
	struct spawn_rlimit rlimits[KILN_MAX_RLIMITS];
	char *root;   /* the root trailer's, or NULL */
	uint64_t tag; /* the tag trailer's, or 0 */
	char *pidns;  /* the pidns trailer's (a START root), or NULL */
};

/* What KILN_MSG_PROC says of the process of an exec or pty stream. */
struct proc_desc {
	uint32_t pid, kind, state, flags;
	uint64_t tag;
};
/* false for other streams, and processes not started or already ended. */
bool exec_describe(const struct conn *c, struct proc_desc *d);

/* procio.c: set up stdio and spawn; 0 or -errno. */
int pipes_spawn(struct proc *p, const struct start_req *s);
int pty_spawn(struct proc *p, const struct start_req *s);
void pty_resize(struct proc *p, uint16_t cols, uint16_t rows);
void pty_eof(struct proc *p);

/* oom.c: a kill for memory in session sid since since_ms (monotonic)? */
bool oom_killed_in(pid_t sid, int64_t since_ms);
/* wstatus is what a kill for memory leaves (SIGKILL, or exit 137). */
bool oom_suspect(int wstatus);

/* killtree.c: send sig to every process of the command whose process is
 * root: its descendants and the sessions and groups they lead (a child
 * that called setsid() is not in root's group). */
void kill_tree(pid_t root, int sig);

#endif
