/* SPDX-License-Identifier: MIT */
/* Persistent sandbox and template records in SQLite (<data-dir>/kilnd.db),
 * so that a restarted kilnd (even after SIGKILL) knows every sandbox and
 * template it had. Writes are small transactions in WAL mode: a committed
 * state change survives the process being killed. */
#ifndef KILND_STORE_H
#define KILND_STORE_H

#include <stdbool.h>
#include <stdint.h>

#define SB_ID_LEN 20

#define SB_F_AUTO_PAUSE   1u /* pause instead of kill when the lifetime ends */
#define SB_F_API          2u /* the VMM serves its API socket: it can be paused */
#define SB_F_POOL         4u /* a started clone in its template's warm pool (pool.c) */
#define SB_F_PUBLIC_PORTS 8u /* its ports answer without the API key (net/ports.h) */

/* Plain data: what is persisted about one sandbox. Strings are owned. */
struct sb_record {
	char id[SB_ID_LEN + 1];
	char *template_id;  /* the image or template it was made from */
	char *state;        /* a name of enum sb_state (sandbox.h) */
	char *reason;       /* why it is killed or in error, or NULL */
	int pid;            /* the VMM, 0 if none */
	uint64_t pid_start; /* its start time (/proc/PID/stat field 22) */
	int64_t created_ms, end_ms, died_ms;
	int memory_mb, cpu_count;
	char *env_json, *metadata_json; /* JSON objects or NULL */
	char *net_json;     /* the egress policy (net_policy_dump), NULL: internet on, no rules */
	char *secrets_json; /* {NAME: value} given as environment, never shown; or NULL */
	/* The files the VM runs on: a snapshot resumes only with the same ones,
	 * whatever kilnd's options are now. NULL kernel/initrd: kilnd's own
	 * (records of schema 1); NULL image: none. */
	char *kernel, *initrd, *image;
	unsigned flags;     /* SB_F_* */
	int64_t paused_ms;  /* when it was last paused */
	int64_t snap_bytes; /* its snapshot file, while paused */
	int64_t timeout_s;  /* its lifetime as created (auto-resume re-arms it) */
	int64_t resumes;    /* times it was resumed */
	char *tenant;       /* the tenant that owns it (auth/keys.h), NULL: the operator */
	/* What its agent said of itself as of its last boot or resume: the
	 * flags of its HELLO answer (KILN_HELLO_*; -1: not known yet, or a
	 * record from before schema 8) and whether it refused the user
	 * trailer (sandbox/users_probe.c). Kept so that a restarted kilnd
	 * answers requests for a paused sandbox as its agent will. */
	int64_t agent_flags;
	bool agent_no_users;
	char *pause_base; /* while pausing: the file it may append to, as it was (pause_base.h) */
};

/* A template: a snapshot of a warmed-up sandbox that clones start from. */
struct tmpl_record {
	char *name;
	char *image_name; /* the image it was booted from ("busybox": none) */
	char *kernel, *initrd, *image;
	char *warmup_json; /* the warm-up command, a JSON array, or NULL */
	char *snap_id;     /* the snapshot's id (names its template memory file) */
	char *net_json;    /* the egress policy its clones start with, or NULL */
	int memory_mb, cpu_count;
	int64_t snap_bytes, created_ms, build_ms;
	int pool;     /* clones kept started ahead (pool.c) */
	char *tenant; /* its owner, NULL: the operator's (every tenant may use it) */
};

/* An API key of a tenant: only its hash is kept (auth/keys.c). */
struct key_record {
	char *id, *tenant, *name, *hash; /* hash: hex SHA-256 of the key */
	int64_t created_ms, revoked_ms;  /* revoked_ms: 0 while it is valid */
};

struct store;

int store_open(struct store **s, const char *path);
void store_close(struct store *s);
int store_put(struct store *s, const struct sb_record *r);
/* The database, for the event log (events/events_db.h) on the same file. */
struct sqlite3 *store_db(struct store *s);
/* SQLite's words for the last failure. */
const char *store_error(struct store *s);
/* Deletes its DNS pins too. */
int store_delete(struct store *s, const char *id);
/* Calls cb for every record; stops at the first non-zero return. */
int store_load(struct store *s, int (*cb)(void *ctx, struct sb_record *r), void *ctx);
void sb_record_free(struct sb_record *r);

int store_tmpl_put(struct store *s, const struct tmpl_record *t);
int store_tmpl_delete(struct store *s, const char *name);
/* Calls cb for every template; cb takes ownership of the strings. */
int store_tmpl_load(struct store *s, int (*cb)(void *ctx, struct tmpl_record *t), void *ctx);
void tmpl_record_free(struct tmpl_record *t);

int store_key_put(struct store *s, const struct key_record *k);
int store_key_delete(struct store *s, const char *id);
/* Calls cb for every key; the strings stay the store's. */
int store_key_load(struct store *s, int (*cb)(void *ctx, struct key_record *k), void *ctx);

/* ---- store_pins.c: a sandbox's DNS pins (net/policy.h struct net_pin):
 * addr was an answer of its own lookup of name, valid until expires_ms
 * (wall clock). At most STORE_PINS_MAX a sandbox; net/pins.c keeps the
 * rows the same as the pins it holds in memory. */
#define STORE_PINS_MAX 4096 /* NET_PINS_MAX */
#define STORE_PINS_SCHEMA               \
	"CREATE TABLE net_pins ("       \
	" sandbox TEXT NOT NULL,"       \
	" addr BLOB NOT NULL,"          \
	" name TEXT NOT NULL,"          \
	" expires_ms INTEGER NOT NULL," \
	" PRIMARY KEY (sandbox, addr, name)) WITHOUT ROWID;"

int store_pin_put(struct store *s, const char *id, const uint8_t addr[16], const char *name,
                  int64_t expires_ms);
int store_pin_delete(struct store *s, const char *id, const uint8_t addr[16], const char *name);
/* Drops the sandbox's pins expired at now_ms, then calls cb for the others
 * (at most STORE_PINS_MAX, longest-lived first; name is NUL-terminated
 * and at most 253 bytes, addr 16 bytes). 0 or -EIO. */
int store_pins_load(struct store *s, const char *id, int64_t now_ms,
                    void (*cb)(void *ctx, const uint8_t addr[16], const char *name,
                               int64_t expires_ms),
                    void *ctx);
int store_pins_delete(struct store *s, const char *id);
/* begin, then end: the writes between are one transaction (without one,
 * each is its own). */
void store_pins_batch(struct store *s, bool begin);

#endif
