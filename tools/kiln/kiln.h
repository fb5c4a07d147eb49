/* SPDX-License-Identifier: MIT */
/* kiln, the command-line client of kilnd: shared declarations. */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* Exit status for failures of kiln or kilnd themselves (as docker does),
 * distinct from a command's own status in `run` and `exec`. */
#define KILN_EXIT_FAIL 125

/* Where kilnd is and how to talk to it. */
struct kc {
	char *socket_path; /* unix socket, or NULL when url_host is set */
	char *url_host;    /* TCP: host and port from --url */
	int url_port;
	char *api_key;
	char *data_dir; /* NULL: the default */
	int fd;         /* a kept-alive connection, or -1 */
	bool quiet_errors;
	const char *ws_headers; /* more header lines of kc_ws_handshake() ("...\r\n") */
};

struct kc_resp {
	int status;
	/* Body delivery: to on_data if set, else buffered into body. */
	int (*on_data)(void *ctx, const char *p, size_t n);
	void *ctx;
	char *body;
	size_t body_len;
	long long kiln_size; /* X-Kiln-Size, -1 if absent */
	unsigned kiln_mode;
	bool complete; /* the whole body arrived */
};

/* client.c */
int kc_connect(struct kc *k);
void kc_disconnect(struct kc *k);
const char *kc_where(const struct kc *k);
/* A request with an optional body. Returns 0 when a response was read (any
 * status), -1 after printing why there was none. */
int kc_request(struct kc *k, const char *method, const char *path, const char *ctype,
               const void *body, size_t len, struct kc_resp *r);
/* PUT-like request whose body is `size` bytes read from fd, with progress. */
int kc_upload(struct kc *k, const char *method, const char *path, int fd, off_t size,
              const char *label, struct kc_resp *r);
/* JSON request/response convenience: body may be NULL; *out gets the
 * parsed 2xx response (or NULL). Returns the HTTP status (an error body's
 * message is printed for non-2xx), or -1 if there was no response. */
int kc_json(struct kc *k, const char *method, const char *path, json_t *body, json_t **out);
void kc_resp_free(struct kc_resp *r);
/* Send all of p (blocking); -1 if the connection broke. */
int kc_send_all(int fd, const void *p, size_t n);
/* Print "kiln: <what>: <message from an error body>". */
void kc_print_error(const char *what, const struct kc_resp *r);
char *url_escape(const char *s);

/* Upgrade connection fd (from kc_connect) to the WebSocket at path; bytes
 * that came with the answer are fed to ws. -1 after printing kilnd's
 * message (or "what" refused) unless k->quiet_errors. */
struct ws;
int kc_ws_handshake(struct kc *k, int fd, struct ws *ws, const char *path, const char *what);

/* progress on a terminal */
struct progress {
	bool on;
	const char *label;
	long long total, done;
	double last;
};
void progress_init(struct progress *p, const char *label, long long total);
void progress_add(struct progress *p, long long n);
void progress_done(struct progress *p);
double mono_now(void);
bool stderr_tty(void);

/* helpers */
int write_all(int fd, const void *p, size_t n);
void die_oom(void) __attribute__((noreturn));
/* "ID:/path" -> id (malloc'd) and path; NULL if s is a local path. */
char *split_remote(const char *s, const char **path);

/* commands: each returns the process exit status */
int cmd_up(struct kc *k, int argc, char **argv);
int cmd_down(struct kc *k, int argc, char **argv);
int cmd_create(struct kc *k, int argc, char **argv);
int cmd_ls(struct kc *k, int argc, char **argv);
int cmd_rm(struct kc *k, int argc, char **argv);
int cmd_logs(struct kc *k, int argc, char **argv);
int cmd_inspect(struct kc *k, int argc, char **argv);
int cmd_run(struct kc *k, int argc, char **argv);
int cmd_exec(struct kc *k, int argc, char **argv);
int cmd_shell(struct kc *k, int argc, char **argv);
int cmd_attach(struct kc *k, int argc, char **argv);

/* A terminal-like session on a WebSocket of kilnd's pty or attach routes
 * (cmd_shell.c): output to ours, our input to it, the exit status back. */
struct term_opts {
	const char *path, *what; /* the WebSocket, and what a refusal is about */
	const char *id, *pid;    /* for messages: the sandbox, the process (attach) */
	bool raw;                /* our tty (if it is one) in raw mode, resizes sent */
	bool input;              /* send our stdin */
	bool attach;             /* leaving (Ctrl-], a signal) leaves it detached */
};
int term_session(struct kc *k, const struct term_opts *o);
int cmd_cp(struct kc *k, int argc, char **argv);
int cmd_pause(struct kc *k, int argc, char **argv);
int cmd_resume(struct kc *k, int argc, char **argv);
int cmd_fork(struct kc *k, int argc, char **argv);
int cmd_template(struct kc *k, int argc, char **argv);
int cmd_images(struct kc *k, int argc, char **argv);
int cmd_image(struct kc *k, int argc, char **argv);
int cmd_snapshot(struct kc *k, int argc, char **argv);
int cmd_port_forward(struct kc *k, int argc, char **argv);
int cmd_browser(struct kc *k, int argc, char **argv);
int cmd_key(struct kc *k, int argc, char **argv);
int cmd_network(struct kc *k, int argc, char **argv);

/* shared by create, run and shell: sandbox options */
struct create_opts {
	const char *image; /* an image, or a template when is_template */
	bool is_template;
	long timeout;
	long mem, cpus;
	json_t *env, *metadata;
	json_t *secrets;              /* --secret, --secret-file */
	json_t *allow_out, *deny_out; /* arrays of rules, or NULL */
	bool no_internet;
};
void create_opts_init(struct create_opts *o);
/* Parse one create option at argv[*i]; 1 if consumed, 0 if not ours, -1 bad. */
int create_opt(struct create_opts *o, int argc, char **argv, int *i);
const char *create_opts_help(void);
/* --allow-out, --deny-out, --no-internet into a create (or template) body. */
void create_opts_net_json(const struct create_opts *o, json_t *req);
/* Create and wait; returns the id (malloc'd) or NULL after printing why. */
char *sandbox_create(struct kc *k, const struct create_opts *o, bool show_progress);
int sandbox_delete(struct kc *k, const char *id, bool quiet);
/* -h or --help before any "--" */
bool want_help(int argc, char **argv);

#endif
