/* SPDX-License-Identifier: MIT */
/* kiln run and kiln exec: run a command through POST /sandboxes/{id}/exec
 * and relay its NDJSON event stream to our stdout and stderr, in order. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/buf.h"
#include "kiln.h"
#include "util.h"

#define LINE_MAX_BYTES (8u << 20)
#define STDIN_MAX      (8u << 20)

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static void catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: reads return EINTR */

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* A closed stdout (kiln run ... | head) must not kill us before the
	 * sandbox is deleted: EPIPE ends the command instead. */
	signal(SIGPIPE, SIG_IGN);
}

struct exec_opts {
	json_t *env;
	const char *cwd, *user;
	bool stdin_all;
	long cmd_timeout;
};

static const char exec_help[] =
    "  -e, --env K=V       environment variable for the command (repeatable)\n"
    "  -w, --workdir DIR   working directory in the sandbox (default: the user's home)\n"
    "  -u, --user NAME     run as this user of the sandbox's /etc/passwd (default: root)\n"
    "  -i, --stdin         send our standard input (read to its end, at most 8 MiB)\n"
    "  --cmd-timeout S     kill the command after S seconds (exit status 124)\n";

static int exec_opt(struct exec_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;

	if (!strcmp(a, "-i") || !strcmp(a, "--stdin")) {
		o->stdin_all = true;
		return 1;
	}
	if (strcmp(a, "-e") && strcmp(a, "--env") && strcmp(a, "-w") && strcmp(a, "--workdir") &&
	    strcmp(a, "-u") && strcmp(a, "--user") && strcmp(a, "--cmd-timeout"))
		return 0;
	if (!v) {
		fprintf(stderr, "kiln: %s needs a value\n", a);
		return -1;
	}
	(*i)++;
	if (!strcmp(a, "-w") || !strcmp(a, "--workdir")) {
		o->cwd = v;
	} else if (!strcmp(a, "-u") || !strcmp(a, "--user")) {
		o->user = v;
	} else if (!strcmp(a, "--cmd-timeout")) {
		char *end;

		o->cmd_timeout = strtol(v, &end, 10);
		if (*end || o->cmd_timeout <= 0) {
			fprintf(stderr, "kiln: --cmd-timeout wants seconds, got '%s'\n", v);
			return -1;
		}
	} else {
		const char *eq = strchr(v, '=');
		char *key;

		if (!eq || eq == v) {
			fprintf(stderr, "kiln: %s wants KEY=VALUE, got '%s'\n", a, v);
			return -1;
		}
		if (!o->env)
			o->env = json_object();
		key = strndup(v, (size_t)(eq - v));
		json_object_set_new(o->env, key, json_string(eq + 1));
		free(key);
	}
	return 1;
}

struct stream {
	struct buf line;
	int exit_code; /* -1 until the exit event */
	long long pid; /* the start event's, 0 before it */
	bool failed, broken_pipe, detached;
};

static int handle_event(struct stream *s, const char *p, size_t n)
{
	json_t *j = json_loadb(p, n, 0, NULL);
	const char *type = json_string_value(json_object_get(j, "type"));
	struct buf data = {0};
	int rc = 0;

	if (!type) {
		fprintf(stderr, "kiln: bad event from kilnd\n");
		rc = -1;
	} else if (!strcmp(type, "stdout") || !strcmp(type, "stderr")) {
		const char *b64 = json_string_value(json_object_get(j, "data"));

		if (!b64 || b64_decode(&data, b64, strlen(b64))) {
			fprintf(stderr, "kiln: bad output event from kilnd\n");
			rc = -1;
		} else if (write_all(type[3] == 'o' ? 1 : 2, buf_head(&data), buf_avail(&data))) {
			s->broken_pipe = errno == EPIPE;
			rc = -1;
		}
	} else if (!strcmp(type, "start")) {
		s->pid = (long long)json_integer_value(json_object_get(j, "pid"));
	} else if (!strcmp(type, "exit")) {
		int code = (int)json_integer_value(json_object_get(j, "exitCode"));
		int sig = (int)json_integer_value(json_object_get(j, "signal"));

		if (json_is_true(json_object_get(j, "timedOut"))) {
			fprintf(stderr, "kiln: the command timed out\n");
			s->exit_code = 124;
		} else {
			s->exit_code = sig ? 128 + sig : code & 0xff;
		}
		if (json_is_true(json_object_get(j, "oom")))
			fprintf(stderr,
			        "kiln: the command was killed: the sandbox ran out of memory "
			        "(give it more with kiln create --mem MB)\n");
	} else if (!strcmp(type, "detached")) {
		/* The sandbox was paused: the command goes on, to be attached. */
		fprintf(stderr, "kiln: %s\n",
		        json_string_value(json_object_get(j, "message"))
		            ?: "the sandbox was paused: the command goes on detached");
		s->failed = s->detached = true;
	} else if (!strcmp(type, "error")) {
		fprintf(stderr, "kiln: %s\n",
		        json_string_value(json_object_get(j, "message"))
		            ?: "the command's stream broke");
		s->failed = true;
	}
	buf_free(&data);
	json_decref(j);
	return rc;
}

static int on_data(void *ctx, const char *p, size_t n)
{
	struct stream *s = ctx;
	char *nl;

	if (buf_append(&s->line, p, n))
		return -1;
	while ((nl = memchr(buf_head(&s->line), '\n', buf_avail(&s->line)))) {
		size_t len = (size_t)(nl - buf_head(&s->line));

		if (len && handle_event(s, buf_head(&s->line), len))
			return -1;
		buf_consume(&s->line, len + 1);
	}
	if (buf_avail(&s->line) > LINE_MAX_BYTES) {
		fprintf(stderr, "kiln: event line from kilnd too long\n");
		return -1;
	}
	return 0;
}

static int read_stdin(json_t *req)
{
	struct buf in = {0}, b64 = {0};
	int rc = 0;

	for (;;) {
		char *dst = buf_reserve(&in, 65536);
		ssize_t n;

		if (!dst)
			die_oom();
		n = read(0, dst, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		in.len += (size_t)n;
		if (buf_avail(&in) > STDIN_MAX) {
			fprintf(stderr, "kiln: standard input is larger than 8 MiB\n");
			rc = -1;
			break;
		}
	}
	if (!rc) {
		b64_encode(&b64, buf_head(&in), buf_avail(&in));
		json_object_set_new(req, "stdin", json_stringn(buf_head(&b64), buf_avail(&b64)));
		json_object_set_new(req, "stdinEncoding", json_string("base64"));
	}
	buf_free(&in);
	buf_free(&b64);
	return rc;
}

/* The command's stream ended without an exit: say so if the sandbox died
 * (its timeout expired, its VM failed), which is the likely cause. */
static void explain_broken_stream(struct kc *k, const char *id)
{
	json_t *sb = NULL;
	char path[128];
	const char *state, *reason;

	kc_disconnect(k);
	snprintf(path, sizeof(path), "/sandboxes/%.64s", id);
	if (kc_json(k, "GET", path, NULL, &sb) != 200) {
		json_decref(sb);
		return;
	}
	state = json_string_value(json_object_get(sb, "state"));
	reason = json_string_value(json_object_get(sb, "reason"));
	if (state && (!strcmp(state, "killed") || !strcmp(state, "error")))
		fprintf(stderr, "kiln: sandbox %s is %s: %s\n", id, state,
		        reason ? reason : "no reason recorded");
	json_decref(sb);
}

/* Exit status of kiln for the command's outcome. */
static int run_command(struct kc *k, const char *id, int argc, char **argv,
                       const struct exec_opts *o, bool *detached)
{
	json_t *req = json_object(), *cmd = json_array(), *err = NULL;
	struct stream s = {.exit_code = -1};
	struct kc_resp r = {.on_data = on_data, .ctx = &s};
	char path[128], *body;
	int rc;

	for (int i = 0; i < argc; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	if (argc) /* none: the image's Entrypoint and Cmd */
		json_object_set_new(req, "cmd", cmd);
	else
		json_decref(cmd);
	if (o->env)
		json_object_set(req, "env", o->env);
	if (o->cwd)
		json_object_set_new(req, "cwd", json_string(o->cwd));
	if (o->user)
		json_object_set_new(req, "user", json_string(o->user));
	if (o->cmd_timeout > 0)
		json_object_set_new(req, "timeoutMs",
		                    json_integer((json_int_t)o->cmd_timeout * 1000));
	if (o->stdin_all && read_stdin(req)) {
		json_decref(req);
		return KILN_EXIT_FAIL;
	}
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!body)
		die_oom();
	snprintf(path, sizeof(path), "/sandboxes/%.64s/exec", id);
	rc = kc_request(k, "POST", path, "application/json", body, strlen(body), &r);
	free(body);
	buf_free(&s.line);
	if (interrupted) {
		kc_disconnect(k); /* kilnd kills the command when we hang up */
		kc_resp_free(&r);
		return 128 + interrupted;
	}
	if (s.broken_pipe) {
		kc_disconnect(k); /* kilnd kills the command */
		kc_resp_free(&r);
		return 128 + SIGPIPE;
	}
	if (rc) {
		kc_resp_free(&r);
		if (s.pid > 0 && s.exit_code < 0) {
			/* kilnd went away (a restart): the agent keeps the command */
			fprintf(stderr,
			        "kiln: the command (pid %lld) goes on in sandbox %s; once kilnd is "
			        "back, take it up again with: kiln attach %s %lld\n",
			        s.pid, id, id, s.pid);
			if (detached)
				*detached = true;
		}
		return KILN_EXIT_FAIL;
	}
	if (r.status != 200) {
		/* It did not start: 127 not found, 126 not runnable, like a shell. */
		long e;

		err = r.body_len ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
		e = (long)json_integer_value(json_object_get(err, "errno"));
		kc_print_error(path, &r);
		json_decref(err);
		kc_resp_free(&r);
		return e == ENOENT ? 127 : e == EACCES || e == ENOEXEC ? 126 : KILN_EXIT_FAIL;
	}
	kc_resp_free(&r);
	if (detached)
		*detached = s.detached;
	if (s.exit_code < 0) {
		if (!s.failed)
			fprintf(stderr,
			        "kiln: the command's stream ended without an exit status\n");
		if (!s.detached)
			explain_broken_stream(k, id);
		return KILN_EXIT_FAIL;
	}
	return s.exit_code;
}

static int help(const char *cmd)
{
	if (!strcmp(cmd, "run"))
		printf("usage: kiln run [options] [-- CMD [ARGS...]]\n\n"
		       "Create a sandbox, run CMD in it with its output on ours, delete the\n"
		       "sandbox. The exit status is CMD's (128+N if killed by signal N).\n"
		       "Without CMD, an imported image's Entrypoint and Cmd run; commands run\n"
		       "in its WorkingDir (unless --workdir is given) as its User.\n\n"
		       "Sandbox options:\n%s\nCommand options:\n%s",
		       create_opts_help(), exec_help);
	else
		printf("usage: kiln exec [options] ID -- CMD [ARGS...]\n\n"
		       "Run CMD in sandbox ID with its output on ours. The exit status is CMD's\n"
		       "(128+N if killed by signal N).\n\n%s",
		       exec_help);
	return 0;
}

int cmd_run(struct kc *k, int argc, char **argv)
{
	struct create_opts co;
	struct exec_opts eo = {0};
	char *id;
	bool detached = false;
	int i, rc;

	create_opts_init(&co);
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return help("run");
		rc = create_opt(&co, argc, argv, &i);
		if (!rc)
			rc = exec_opt(&eo, argc, argv, &i);
		if (rc < 0)
			return 2;
		if (!rc)
			break; /* the command starts here ("--" is optional) */
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	catch_signals();
	id = sandbox_create(k, &co, true);
	if (!id)
		return interrupted ? 128 + interrupted : KILN_EXIT_FAIL;
	rc = run_command(k, id, argc - i, argv + i, &eo, &detached);
	kc_disconnect(k);
	if (detached)
		/* someone paused it: the command goes on there, to be attached */
		fprintf(stderr, "kiln: sandbox %s is kept for it (kiln rm %s when done)\n", id, id);
	else
		sandbox_delete(k, id, false);
	free(id);
	return rc;
}

int cmd_exec(struct kc *k, int argc, char **argv)
{
	struct exec_opts eo = {0};
	const char *id = NULL;
	int i, rc;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return help("exec");
		rc = exec_opt(&eo, argc, argv, &i);
		if (rc < 0)
			return 2;
		if (rc)
			continue;
		if (!id) {
			id = argv[i];
			continue;
		}
		break;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (!id || i >= argc) {
		fprintf(stderr, "kiln exec: usage: kiln exec ID -- CMD [ARGS...]\n");
		return 2;
	}
	catch_signals();
	return run_command(k, id, argc - i, argv + i, &eo, NULL);
}
