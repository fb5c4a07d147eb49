/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent internals: connections, the stream interface every stream kind
 * implements, and the poll set the event loop rebuilds on each iteration.
 *
 * One connection carries one stream. A connection starts in CONN_HELLO; once
 * the HELLO exchange names the kind it is CONN_OPEN and its frames go to the
 * kind's stream_ops. A stream ends by conn_finish() (after its last frame) or
 * conn_fail() (ERROR frame); either moves the connection to CONN_CLOSING, in
 * which it only flushes its output, then shuts down its write side (the host
 * reads EOF after the last frame) and discards input until the host closes or
 * AGENT_DRAIN_MS pass: a host still writing (an upload refused early) gets
 * the ERROR instead of EPIPE. A host that goes away moves it to CONN_DEAD,
 * or, if the stream says it outlives its connection (ops->detach: a command
 * started with KILN_FRAME_KEEP), to CONN_DETACHED: no socket, the stream
 * goes on (its output kept, bounded) until a new connection ATTACHes to it
 * (agent_find_detached). The loop calls ops->destroy() exactly once,
 * outside any callback of the stream, so callbacks may end their stream and
 * return. A stream the host opened with KILN_FRAME_REUSE that ends by
 * conn_finish() leaves its connection in CONN_HELLO instead, once its
 * output is flushed, dropping the host's leftovers of the old stream until
 * the next HELLO.
 */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

#define AGENT_VERSION_STRING "kiln-agent 0.1 (protocol 1)"

#define AGENT_MAX_STREAMS 64                      /* more concurrent streams: ERROR EBUSY */
#define AGENT_MAX_CONNS   (2 * AGENT_MAX_STREAMS) /* with draining ones */
#define AGENT_DRAIN_MS    2000
#define AGENT_OUT_LIMIT   (256u << 10) /* stop producing output above this */
#define AGENT_IN_LIMIT    (256u << 10) /* stop reading frames while stdin holds this */
#define AGENT_NO_DEADLINE INT64_MAX

enum conn_state {
	CONN_HELLO,
	CONN_OPEN,
	CONN_DETACHED, /* the host is gone, the stream lives on (fd -1) */
	CONN_CLOSING,  /* flushing the last frames */
	CONN_DRAIN,    /* write side shut: discard input until the host closes */
	CONN_DEAD,
};

struct conn;

/* Roles of the file descriptors a stream adds to the poll set. */
enum {
	ROLE_SOCK,
	ROLE_STREAM, /* first stream-defined role */
};

struct pollset {
	struct pollfd *pfd;
	struct pslot {
		struct conn *c;
		int role;
	} * slot;
	unsigned n, cap;
};

int pollset_add(struct pollset *ps, int fd, short events, struct conn *c, int role);

struct stream_ops {
	/* After the HELLO answer has been queued. */
	void (*open)(struct conn *c);
	/* One complete frame from the host (never HELLO or ERROR). */
	void (*frame)(struct conn *c, uint16_t type, const uint8_t *p, uint32_t len);
	/* Optional: false stops reading frames (input backpressure). */
	bool (*want_input)(struct conn *c);
	/* Optional: add the stream's own descriptors to the poll set. */
	void (*poll)(struct conn *c, struct pollset *ps);
	void (*ready)(struct conn *c, int role, short revents);
	/* Optional: produce output; called while c->out is below AGENT_OUT_LIMIT. */
	void (*pump)(struct conn *c);
	/* Optional: the nearest deadline (monotonic ms) and what to do then. */
	int64_t (*deadline)(struct conn *c);
	void (*timeout)(struct conn *c, int64_t now);
	/* Optional: a child was reaped; true if it belonged to this stream. */
	bool (*child)(struct conn *c, pid_t pid, int wstatus);
	/* Optional: the host's connection ended; true if the stream goes on
	 * without it (CONN_DETACHED). */
	bool (*detach)(struct conn *c);
	/* Release everything; abort whatever is unfinished. */
	void (*destroy)(struct conn *c);
};

struct conn {
	int fd;
	enum conn_state state;
	bool wblocked; /* the last write hit EAGAIN: wait for POLLOUT */
	bool reuse;    /* KILN_FRAME_REUSE: a clean end goes back to CONN_HELLO */
	bool skip_old; /* reused: drop frames until the next HELLO */
	int64_t drain_until;
	uint16_t rx_flags; /* header flags of the frame being handled */
	const struct stream_ops *ops;
	void *priv;
	struct kbuf in, out;
};

extern const struct stream_ops exec_ops, pty_ops, file_ops, info_ops, port_ops, procs_ops;

/* exec.c: the process of an exec or pty stream (0 if none). */
pid_t exec_pid(const struct conn *c);

/* conn.c */
struct conn *conn_new(int fd);
void conn_free(struct conn *c);
void conn_finish(struct conn *c);
void conn_fail(struct conn *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void conn_dead(struct conn *c);
/* The stream ends now, detached or not (the host sent ERROR). */
void conn_abort(struct conn *c);
/* Detached: drop the oldest output frames until at most max bytes are kept. */
void conn_trim_kept(struct conn *c, size_t max);
void conn_nomem(struct conn *c);
bool conn_has_room(const struct conn *c);
void conn_read(struct conn *c);
void conn_drain(struct conn *c, int64_t now);
/* The stream ended and was destroyed: wait for the next HELLO (reuse). */
void conn_rearm(struct conn *c);
void conn_discard(struct conn *c);
void conn_parse(struct conn *c);
void conn_flush(struct conn *c);
void conn_poll(struct conn *c, struct pollset *ps);

/* The agent: its listening socket and connections (loop.c). */
struct agent {
	int lfd;
	const char *unix_path; /* removed at exit */
	int sig_r;
	struct conn *conns[AGENT_MAX_CONNS];
	unsigned nconns;
	int64_t accept_resume;
	bool busy; /* a stream can produce output right away */
	bool quit;
};

void agent_loop(struct agent *a);
/* The detached stream of process pid, or NULL. */
struct conn *agent_find_detached(pid_t pid);
/* The agent's connections, 0 to agent_nconns() - 1 (procs.c). */
unsigned agent_nconns(void);
struct conn *agent_conn_at(unsigned i);
void agent_shutdown(struct agent *a);

/* main.c */
int64_t now_ms(void);
void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* init.c */
void init_pid1(void);
void init_stdio(void);

/* spawn.c: fork a command; see the comment there. */
struct agent_user;
/* A limit the child sets before it changes user (START's rlimits). */
struct spawn_rlimit {
	uint32_t resource;
	uint64_t soft, hard;
};

struct spawn_req {
	char **argv, **envp;
	const char *cwd;
	bool cwd_default; /* none asked for: "/" if cwd cannot be entered */
	uint32_t uid;
	const struct agent_user *user; /* NULL: by uid */
	int fd[3];                     /* the child's stdin/stdout/stderr (exec) */
	const char *tty;               /* the pty slave to open instead (pty) */
	uint16_t cols, rows;
	int status_fd; /* CLOEXEC: the child reports a failure before exec here */
	const struct spawn_rlimit *rlimits;
	uint32_t n_rlimits;
	const char *root;  /* NULL: the guest's; else chroot(2) into it */
	const char *ns_of; /* NULL, else the root (maybe "/") naming its PID namespace */
	bool ns_join;      /* ns_of's namespace must be alive (START's pidns trailer) */
};
/* The most a child writes to its status pipe: one atomic pipe write. */
#define SPAWN_STATUS_MAX 512
pid_t spawn(const struct spawn_req *r);
/* pidns.c: the PID namespace of root's commands made the one of the
 * agent's next child (0 if none: root NULL, or a kernel without them);
 * and the agent's own again after the fork. */
int pidns_enter(const char *root);
/* The same for a root's namespace that must be alive: -ESRCH if none of
 * root's is (START's pidns trailer). */
int pidns_join(const char *root);
void pidns_leave(int ns);
/* FREEZE: root's namespace frozen (on) or thawed; 0 or -errno. */
int pidns_freeze(const char *root, bool on);
/* LIMIT: root's namespace bounded to mib MiB of memory (0: none). */
int pidns_limit(const char *root, uint32_t mib);
/* CPU: root's namespace bounded to millicpus / 1000 of the vCPU (0: none). */
int pidns_cpu(const char *root, uint32_t millicpus);
/* SHARES: root's namespace's weight in the vCPU's time (cpu.shares). */
int pidns_shares(const char *root, uint32_t shares);
/* The environment of a command (spawn.c); valid until the next call, and
 * while user (NULL: none) is. */
char **spawn_env(char *const *req_env, bool pty, const struct agent_user *user);

#endif
