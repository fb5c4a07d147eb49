/* SPDX-License-Identifier: MIT */
/* Between envd_proc.c (the process table: agent streams, subscribers,
 * suspend and reattach across a pause) and envd_proc_rpc.c (the
 * process.Process calls that start, find and steer processes). */
#ifndef KILND_ENVD_PROC_H
#define KILND_ENVD_PROC_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "agent/agent_proto.h"
#include "envd.h"
#include "http/http.h"

struct sandbox;

struct envd_proc;

struct sub {
	struct envd_proc *p;
	struct sub *next;
	struct http_conn *c;
	ev_timer tick;
	double ka;          /* keepalive interval, seconds */
	ev_tstamp last;     /* last event sent */
	ev_tstamp deadline; /* 0: none */
	bool streaming;
};

struct waiter {
	struct waiter *next;
	struct envd_proc *p;
	struct http_conn *c;
};

struct envd_proc {
	struct envd_sb *es;
	struct envd_proc *next;
	struct agent_conn *a;
	uint32_t pid;
	bool hello, started, pty, stdin_open, fell_back;
	bool reuse;     /* the agent keeps the connection after EXIT */
	bool suspended; /* the sandbox paused: no agent stream until it resumes */
	bool attaching; /* ATTACH sent, STARTED awaited */
	bool killed;    /* SendSignal sent it SIGKILL: its slot is free (envd.h) */
	/* START's tag (KILN_HELLO_PROCS agents; 0: none). Suspended and not
	 * started: a pause or a kilnd restart came between START and STARTED,
	 * and procs_sync (api/procs.h) finds out whether it runs. */
	uint64_t htag;
	char *tag;
	json_t *config; /* {cmd, args, envs, cwd} as List reports it */
	char **argv, **env;
	char *cwd;             /* "": the user's home */
	struct envd_user user; /* who it runs as */
	uint32_t timeout_ms;
	uint16_t cols, rows;
	int64_t started_ms; /* for its process.finished event */
	struct sub *subs;
	unsigned nsubs;
	struct waiter *waiters;
};

struct envd_sb {
	struct sandbox *sb;
	struct envd_proc *procs;
	unsigned nprocs;
	/* after a resume: ATTACHes not answered yet, and who waits for them */
	unsigned attaching;
	void (*reattached)(struct sandbox *sb);
	ev_timer settle;
	/* envd_user.c: the image's default user ("" none), read once */
	bool default_user_known;
	char default_user[AGENT_USER_MAX + 1];
};

/* Pause the agent stream while any subscriber is backed up. */
void envd_proc_flow(struct envd_proc *p);
/* A subscriber of p on connection c (keepalive ka seconds, deadline
 * timeout_ms, 0 for none); NULL when out of memory. */
struct sub *envd_sub_new(struct envd_proc *p, struct http_conn *c, double ka, long long timeout_ms);
/* The subscriber's stream begins: the start event first. */
void envd_sub_begin(struct sub *s);
void envd_proc_free(struct envd_proc *p);
/* The process msg's "process" selector names in sb, or NULL with err. */
struct envd_proc *envd_proc_find(struct sandbox *sb, json_t *msg, char *err, size_t errlen);
/* Queue a ProcessInput ({"stdin"|"pty": base64}) for p: CRPC_OK, or a
 * code with err filled in. */
int envd_proc_put_input(struct envd_proc *p, json_t *in, char *err, size_t n);
/* The process is over for everyone: end every stream with (code, msg). */
void envd_proc_end(struct envd_proc *p, int code, const char *msg);
/* Open the agent stream and send HELLO, START (and stdin's end). */
int envd_proc_spawn(struct envd_proc *p);
/* A process of a restarted kilnd's table (api/procs_store.c), suspended
 * until envd_sandbox_reattach(): 0, or -errno for a bad entry or a full
 * table. */
int envd_proc_restore(struct sandbox *sb, uint32_t pid, bool pty, bool stdin_open, const char *tag,
                      json_t *config, uint64_t htag);
/* The sandbox's process table, made on first use; NULL when out of memory. */
struct envd_sb *envd_sb_get(struct sandbox *sb);
/* The handler of a SendInput call waiting for the agent to drain. */
extern const struct http_handler envd_waiter_ops;

#endif
