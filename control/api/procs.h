/* SPDX-License-Identifier: MIT */
/* The processes kiln's own exec and pty endpoints started in a sandbox
 * (procs.c). Each is started to outlive its agent stream
 * (KILN_FRAME_KEEP): a pause detaches it instead of ending it, and
 * GET /sandboxes/{id}/processes/{pid}/attach takes it up again. The table
 * is kilnd's memory of them: a pid is attachable only if it is listed
 * here, under its own sandbox. It is kept on disk too (procs_store.c), so
 * that a restarted kilnd lists them again. */
#ifndef KILND_PROCS_H
#define KILND_PROCS_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "http/http.h"
#include "kilnd.h"

struct sandbox;

#define PROCS_MAX     128 /* per sandbox (the agent runs at most 64 streams) */
#define PROCS_CMD_MAX 256 /* bytes of the command line kept for the listing */

struct kproc {
	struct kproc *next;
	uint32_t pid;  /* 0 while starting */
	uint64_t tag;  /* START's tag (KILN_HELLO_PROCS agents), 0: none */
	bool starting; /* START sent, STARTED not read: the agent has it or not */
	bool pty;
	bool attached; /* a client holds its stream (or an attach is under way) */
	long long started_ms;
	char cmd[PROCS_CMD_MAX];
};

struct procs_sb {
	struct kproc *head;
	unsigned n;
	bool dirty;    /* changed since procs.json was written */
	ev_timer save; /* writes it, PROCS_SAVE_DELAY after a change */
	/* procs_sync.c: the agent's procs stream asked, and who waits */
	struct agent_conn *sync;
	ev_timer sync_limit;
	void (*synced)(struct sandbox *sb);
};

/* A tag for a START (1 to 2^63-1, random). */
uint64_t procs_new_tag(void);
/* A command about to be started on sb with START's tag: listed as
 * starting (no pid yet), attached; written out with the table, so that a
 * pause or a restarted kilnd still knows of it (procs_sync). 0, or
 * -ENOSPC / -ENOMEM (then send START without the tag). */
int procs_add_starting(struct sandbox *sb, uint64_t tag, bool pty, const char *cmd);
/* A process started on sb (its STARTED came): the starting entry of tag
 * (0: none) gets its pid, or it is listed anew, attached. Not listed
 * (logged: a pause then ends it for its client) beyond PROCS_MAX or out of
 * memory; nothing without a sandbox (sb NULL: deleted). */
void procs_add(struct sandbox *sb, uint32_t pid, bool pty, const char *cmd, uint64_t tag);
/* The starting entry of tag, or NULL (tag 0: none). */
struct kproc *procs_find_tag(struct sandbox *sb, uint64_t tag);
/* Started (pid) or starting (tag) entry of a session, and forgetting it. */
struct kproc *procs_lookup_sess(struct kilnd *kd, const char *sb_id, uint32_t pid, uint64_t tag);
void procs_forget_sess(struct kilnd *kd, const char *sb_id, uint32_t pid, uint64_t tag);
/* The message for a client whose command was starting at a pause. */
void procs_starting_msg(char *out, size_t n, const char *sb_id, uint64_t tag);
/* argv as one line for the listing, cut at n bytes. */
void procs_cmdline(char *out, size_t n, const char *const *argv);
/* The PID segment of .../processes/PID/attach, into out (n bytes). */
void procs_path_pid(const char *path, char *out, size_t n);
struct kproc *procs_find(struct sandbox *sb, uint32_t pid);
/* The process ended (or cannot be reached any more): forget it. */
void procs_remove(struct sandbox *sb, uint32_t pid);
/* The same for an entry (started or starting). */
void procs_drop(struct sandbox *sb, struct kproc *which);
/* The same by sandbox id, for sessions that outlive their sandbox. */
struct kproc *procs_lookup(struct kilnd *kd, const char *sb_id, uint32_t pid);
void procs_forget(struct kilnd *kd, const char *sb_id, uint32_t pid);
/* The sandbox stopped, or kilnd exits: its table goes from memory
 * (envd_sandbox_down calls it), written out first if it changed. */
void procs_sandbox_down(struct sandbox *sb);

/* procs_store.c: the table on disk. */
/* The table changed: written out shortly. */
void procs_changed(struct sandbox *sb);
/* Written out now if it changed; no more writes. */
void procs_store_close(struct sandbox *sb);
/* A restarted kilnd: the table as the last one left it, every entry
 * detached (the agent keeps the processes; an attach to one that has gone
 * since is answered "gone"). */
void procs_load(struct sandbox *sb);
/* One entry read back: 0, or -errno (-ENOSPC: the table is full). pid 0
 * with a tag: one that was starting. */
int procs_restore(struct sandbox *sb, uint32_t pid, bool pty, const char *cmd, int64_t started_ms,
                  uint64_t tag);

/* procs_sync.c: after a resume or a re-adoption, the commands listed as
 * starting (kiln's and envd's) are looked up in the agent's procs stream
 * by their tags: those it runs get their pids, detached (envd's suspended,
 * to be attached again), the others are dropped. true: under way, done()
 * is called when it ends (answered, failed, or after PROCS_SYNC_LIMIT);
 * false: nothing to ask (none starting, or an agent without
 * KILN_HELLO_PROCS). */
#define PROCS_SYNC_LIMIT 5.0 /* s */
bool procs_sync(struct sandbox *sb, void (*done)(struct sandbox *sb));
void procs_sync_cancel(struct sandbox *sb);

/* The line a client still attached at a pause gets: the command goes on,
 * and how to take it up again. */
void procs_detached_msg(char *out, size_t n, const char *sb_id, uint32_t pid);

/* GET /sandboxes/{id}/processes: kiln's and envd's processes. */
void procs_list(struct kilnd *kd, struct http_conn *c, struct sandbox *sb);
/* GET /sandboxes/{id}/processes/{pid}/attach, before the sandbox is woken:
 * 0 if the request may go on (pid parsed into *pid), else it was answered
 * (400 a bad pid, 404 unknown, 409 attached elsewhere). */
int procs_attach_check(struct http_conn *c, struct sandbox *sb, const char *pid_s, uint32_t *pid);

/* Tell the agent to end a stream's command (ERROR from the host aborts it
 * even when started with KILN_FRAME_KEEP), then let the stream go. */
struct agent_conn;
void procs_abort_stream(struct agent_conn *a);

#endif
