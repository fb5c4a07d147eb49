/* SPDX-License-Identifier: MIT */
/* Encoding and decoding of kiln agent protocol frames (include/kiln/agent.h).
 * Pure functions over buffers: no I/O, so they are unit-testable and shared
 * by the libev client (agent_client.c). Every decoder checks bounds and
 * requires that a payload parse exactly. */
#ifndef KILND_AGENT_PROTO_H
#define KILND_AGENT_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#include <kiln/agent.h>

#include "http/buf.h"

#define AGENT_HDR_LEN 8

/* Validates a frame header: len <= KILN_FRAME_MAX, a known type, flags 0. */
int agent_hdr_decode(const void *p, struct kiln_frame *f);

/* Builder: agent_begin() writes a header placeholder, agent_put_*() append
 * payload fields, agent_end() fills in the length. Errors are sticky in
 * w->err and returned by agent_end(); on error the frame is removed. */
struct agent_wr {
	struct buf *b;
	size_t start; /* header position, relative to buf_head(b) */
	int err;
};
void agent_begin(struct agent_wr *w, struct buf *b, uint16_t type);
void agent_put_u16(struct agent_wr *w, uint16_t v);
void agent_put_u32(struct agent_wr *w, uint32_t v);
void agent_put_u64(struct agent_wr *w, uint64_t v);
void agent_put_bytes(struct agent_wr *w, const void *p, size_t n);
void agent_put_str(struct agent_wr *w, const char *s, size_t n);
int agent_end(struct agent_wr *w);

/* Reader over one payload. */
struct agent_rd {
	const uint8_t *p;
	uint32_t len, off;
	int err;
};
void agent_rd_init(struct agent_rd *r, const void *p, uint32_t len);
uint16_t agent_get_u16(struct agent_rd *r);
uint32_t agent_get_u32(struct agent_rd *r);
uint64_t agent_get_u64(struct agent_rd *r);
/* A string: bounded by KILN_MAX_STRING, no NUL inside. Not NUL-terminated. */
void agent_get_str(struct agent_rd *r, const char **s, uint32_t *n);
/* 0 if everything parsed and nothing is left over, else -EPROTO. */
int agent_rd_done(struct agent_rd *r);

/* ---- whole messages ---- */
/* flags: 0 or KILN_FRAME_REUSE (then see spare_reuse()). */
int agent_msg_hello(struct buf *b, uint32_t stream_kind, uint16_t flags);
int agent_msg_empty(struct buf *b, uint16_t type);
int agent_msg_u32(struct buf *b, uint16_t type, uint32_t v);
/* Data frames (STDIN, DATA): split into frames of at most KILN_DATA_CHUNK. */
int agent_msg_data(struct buf *b, uint16_t type, const void *p, size_t n);
int agent_msg_resize(struct buf *b, uint16_t cols, uint16_t rows);
/* CONNECT of a port stream: port, family (KILN_PORT_*) and, for a peer of
 * AF_INET or AF_INET6 with a port, the peer trailer (KILN_HELLO_PEER agents
 * only; a v4-mapped IPv6 address goes as IPv4). NULL or another family:
 * no trailer. */
struct sockaddr_storage;
int agent_msg_connect(struct buf *b, uint32_t port, uint32_t family,
                      const struct sockaddr_storage *peer);

/* One entry of START's rlimits trailer. */
struct agent_rlimit {
	uint32_t resource; /* RLIMIT_* */
	uint64_t soft, hard;
};

struct agent_start {
	const char *const *argv; /* NULL-terminated */
	const char *const *env;  /* NULL-terminated, "NAME=value" */
	const char *cwd;         /* NULL or "" for "/" */
	uint32_t uid, timeout_ms;
	uint16_t cols, rows;
	bool keep;                          /* KILN_FRAME_KEEP: the command outlives the stream */
	const char *user;                   /* NULL: no user trailer (root, or uid) */
	uint32_t user_flags;                /* KILN_USER_* */
	const struct agent_rlimit *rlimits; /* n_rlimits of them: the rlimits trailer */
	uint32_t n_rlimits;
	const char *root;  /* NULL: no root trailer (the guest's "/") */
	uint64_t tag;      /* 0: no tag trailer (KILN_HELLO_PROCS agents only) */
	const char *pidns; /* NULL: no pidns trailer; else the START root whose
	                    * PID namespace the command joins */
};
int agent_msg_start(struct buf *b, const struct agent_start *s);
/* FILE_REQUEST; `arg` is the u32 (WRITE/MKDIR mode, REMOVE recursive) and
 * `path2` the new path of RENAME. */
int agent_msg_file(struct buf *b, uint32_t op, const char *path, uint32_t arg, const char *path2);
/* A name the agent takes as a user: 1 to 32 letters, digits, '.', '_',
 * '-', not starting with '-'. */
#define AGENT_USER_MAX 32
bool agent_user_valid(const char *name);
/* The same as user (NULL: root, no trailer) with KILN_USER_* flags. */
int agent_msg_file_as(struct buf *b, uint32_t op, const char *path, uint32_t arg, const char *path2,
                      const char *user, uint32_t user_flags);

struct agent_stat {
	uint32_t mode;
	uint64_t size;
	int64_t mtime;
	uint32_t mtime_ns; /* 0 from agents that do not send it */
	const char *name, *target;
	uint32_t name_len, target_len;
};
int agent_parse_hello(const void *p, uint32_t n, uint32_t *version, uint32_t *kind);
int agent_parse_error(const void *p, uint32_t n, uint32_t *err, const char **msg,
                      uint32_t *msg_len);
int agent_parse_u32(const void *p, uint32_t n, uint32_t *v);
int agent_parse_exit(const void *p, uint32_t n, int32_t *code, uint32_t *sig, uint32_t *flags);
int agent_parse_stat(const void *p, uint32_t n, struct agent_stat *st);

struct agent_info {
	const char *version;
	uint32_t version_len;
	uint64_t uptime_ms, mem_total_kb, mem_free_kb;
	uint32_t nr_procs;
};
int agent_parse_info(const void *p, uint32_t n, struct agent_info *info);

/* One KILN_MSG_PROC: every field checked (pid 1..2^31-1, a known kind,
 * state and flags), else -EPROTO. */
struct agent_proc {
	uint32_t pid, kind, state, flags;
	uint64_t tag;
};
int agent_parse_proc(const void *p, uint32_t n, struct agent_proc *pr);

const char *agent_msg_name(uint16_t type);

#endif
