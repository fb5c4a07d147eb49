/* SPDX-License-Identifier: MIT */
/* kilnd: the daemon's configuration and its one context object, which every
 * subsystem reaches through a pointer (no hidden globals). */
#ifndef KILND_H
#define KILND_H

#include <stdbool.h>
#include <stddef.h>

#include <ev.h>

#include "http/http.h"
#include "sandbox/jail_ids.h"

/* envdVersion reported in E2B-shaped answers: the SDK requires semver
 * >= 0.1.0 and gates features on it; 0.6.4 is the level kiln targets. */
#define KILND_ENVD_VERSION "0.6.4"

struct kilnd_cfg {
	char *data_dir;
	char *socket_path;
	char *tcp_listen;  /* "127.0.0.1:PORT" or NULL */
	char *envd_listen; /* the envd API's own listener, or NULL */
	char *api_key;
	char *domain;           /* of the sandboxes' host names, PORT-ID.DOMAIN (net/ports.h) */
	char *browser_launcher; /* browser/cdp.h */
	unsigned browser_port;
	char *vmm, *kernel, *initrd;
	char *images_dir;        /* IMAGES_DIR/NAME.erofs (image.h) */
	char *run_dir;           /* --run-dir (sandbox/run_dir.h), or NULL */
	char *image_initrd;      /* the agent alone, booted over an image */
	char *run_template;      /* --run-template: plain creates clone it (api_create.c) */
	const char *resume_mode; /* "lazy" (userfaultfd) or "eager" */
	unsigned max_sandboxes;
	double boot_timeout;      /* seconds to wait for the agent's first answer */
	unsigned default_timeout; /* sandbox lifetime, seconds */
	unsigned max_timeout;
	unsigned retain_dead;           /* seconds a dead sandbox stays listed */
	unsigned long long max_upload;  /* bytes per PUT /files */
	unsigned long long console_max; /* console.log's cap (console.c); 0: none */
	char *dns_servers;              /* --dns-server: the sandboxes' resolvers, or NULL */
	bool no_jail;                   /* --no-jail: kiln-vmm --no-jail */
	unsigned jail_uid_base;         /* sandbox/jail_ids.h */
	unsigned jail_mem_max_mb;       /* --jail-mem-max-mb: every VMM's memory.max; 0: its own */
	double metrics_interval;        /* seconds between samples (api/metrics_hist.h) */
	/* events/ */
	long long events_keep_s;       /* --events-keep */
	unsigned long long events_max; /* --events-max */
	unsigned long long sse_max_buf;
	double sse_heartbeat;
	char *webhook_url, *webhook_secret_file;
	unsigned webhook_retries;
	double webhook_backoff;
	struct http_cfg http;
};

/* The API's answers to these, timed for GET /metrics (api/metrics.c). */
enum api_op {
	API_OP_NONE,
	API_OP_CREATE,
	API_OP_PAUSE,
	API_OP_RESUME,
	API_OP_CONNECT,
	API_OP_FORK,
	API_OP_EXEC,
	API_OP_MAX,
};
#define API_BUCKETS 14
struct api_op_stats {
	unsigned long long count[2];            /* answered ok, with an error status */
	unsigned long long bucket[API_BUCKETS]; /* at most bounds[i] seconds */
	double sum;
};

struct store;
struct sandbox;
struct template;
struct tmpl_build;
struct bootfile;
struct envd_watcher;
struct watch_stream;
struct ci_ctx;
struct cdp_start;
struct net_ctx;
struct auth_key;
struct mhist;
struct events;
struct dir_pool;

struct kilnd {
	bool stopping; /* kilnd exits: clients are let go, their commands go on */
	struct ev_loop *loop;
	struct kilnd_cfg cfg;
	struct jail_ids jail_ids; /* sandbox/jail_ids.h */
	char *sandboxes_dir;
	char *run_root;            /* the sandboxes' run files (sandbox/run_dir.h), or NULL */
	char *host_cpuid_path;     /* every VMM's --host-cpuid (sandbox/host_cpuid.h), or NULL */
	struct dir_pool *dir_pool; /* sandbox/dir_pool.h: directories for reuse, or NULL */
	struct store *store;
	struct http_server *http;
	struct sandbox *sandboxes; /* live list, newest first */
	struct sandbox *dying;     /* deleted, freed once their VMM's exit is seen */
	struct template *templates;
	struct tmpl_build *builds;     /* templates being built */
	struct bootfile *bootfiles;    /* pinned copies of the kernel and initramfs */
	char *envd_secret;             /* keys the sandboxes' envd access tokens */
	struct envd_watcher *watchers; /* envd_watch.c */
	struct watch_stream *watch_streams;
	struct ci_ctx *ci_ctxs;       /* codeint.c: code contexts */
	struct cdp_start *cdp_starts; /* browser/cdp_start.c: browsers being started */
	unsigned nsandboxes;          /* with a VMM: starting, running, pausing, resuming */
	struct api_op_stats ops[API_OP_MAX];
	struct net_ctx *net;   /* net/: the sandboxes' resolver (NULL: no egress) */
	struct auth_key *keys; /* auth/keys.c: the tenants' API keys */
	unsigned nkeys;
	struct events *events; /* events/: the event log, SSE, webhooks */
	ev_timer housekeeping;
	ev_timer pool_timer; /* pool.c: refills */
	int console_ifd;     /* console.c: inotify of the console logs */
	ev_io console_w;
	struct mhist *mhist; /* api/metrics_hist.c: the last hour's samples */
};

/* api.c: the request router. */
void api_route(struct http_conn *c, struct http_req *req, void *kd);

#endif
