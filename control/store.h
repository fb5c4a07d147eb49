/* SPDX-License-Identifier: MIT */
/* Persistent sandbox records in SQLite (<data-dir>/kilnd.db), so that a
 * restarted kilnd (even after SIGKILL) knows every sandbox it had. Writes
 * are small transactions in WAL mode: a committed state change survives the
 * process being killed. */
#ifndef KILND_STORE_H
#define KILND_STORE_H

#include <stdint.h>

#define SB_ID_LEN 20

/* Plain data: what is persisted about one sandbox. Strings are owned. */
struct sb_record {
	char id[SB_ID_LEN + 1];
	char *template_id;
	char *state;        /* "starting", "running", "killed", "error" */
	char *reason;       /* why it is killed or in error, or NULL */
	int pid;            /* the VMM, 0 if none */
	uint64_t pid_start; /* its start time (/proc/PID/stat field 22) */
	int64_t created_ms, end_ms, died_ms;
	int memory_mb, cpu_count;
	char *env_json, *metadata_json; /* JSON objects or NULL */
};

struct store;

int store_open(struct store **s, const char *path);
void store_close(struct store *s);
int store_put(struct store *s, const struct sb_record *r);
int store_delete(struct store *s, const char *id);
/* Calls cb for every record; stops at the first non-zero return. */
int store_load(struct store *s, int (*cb)(void *ctx, struct sb_record *r), void *ctx);
void sb_record_free(struct sb_record *r);

#endif
