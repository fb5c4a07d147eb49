/* SPDX-License-Identifier: MIT */
/* The request router and the control endpoints (create, list, get, delete,
 * timeout, logs, images; the list in api_list.c). Paths follow the E2B control API where one
 * exists (also under /v2); kiln's own endpoints hang off
 * /sandboxes/{id}/... and live in exec.c, pty.c and files.c; create in
 * api_create.c, pause, resume, connect and fork in api_pause.c,
 * templates in template.c. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "auth/auth.h"
#include "metrics_hist.h"
#include "browser/cdp.h"
#include "envd/envd.h"
#include "net/ports.h"
#include "sandbox/image.h"
#include "http/jsonutil.h"
#include "net/net.h"
#include "procs.h"
#include "proxy.h"
#include "sandbox/sandbox.h"
#include "agent/spare.h"
#include "util.h"
#include "webui/webui.h"
#include "sandbox/wake.h"

#define BODY_SMALL (64u << 10) /* JSON control requests */
#define BODY_EXEC  (16u << 20) /* exec carries stdin */
#define MAX_SEGS   6
#define LIT(s)     s, sizeof(s) - 1 /* a literal body and its length */

enum route_kind {
	R_CREATE,
	R_TIMEOUT,
	R_CONNECT,
	R_RESUME,
	R_PAUSE,
	R_FORK,
	R_TEMPLATE,
	R_EXEC,
	R_MKDIR,
	R_REMOVE,
	R_RENAME,
	R_NETWORK,
	/* served at headers time (their handlers read the body, if any) */
	R_FILES_GET,
	R_FILES_PUT,
	R_FILES_LIST,
	R_FILES_STAT,
	R_PTY,
	R_ATTACH,
};

/* ---------------------------------------------------------------- auth */

bool api_sb_key_ok(struct kilnd *kd, const struct http_req *req, const struct sandbox *sb)
{
	struct http_who who;

	return auth_check(kd, req, &who) && auth_owns(&who, sb->rec.tenant);
}

bool api_auth_ws(struct kilnd *kd, const struct http_req *req, struct http_who *who)
{
	char offered[512];

	if (auth_check(kd, req, who))
		return true;
	/* a browser's WebSocket (the web console): ws_auth.c */
	return api_ws_offered_key(req, offered, sizeof(offered)) &&
	       auth_check_secret(kd, req, offered, who);
}

json_t *api_sandbox_json(struct kilnd *kd, const struct sandbox *sb)
{
	char token[ENVD_TOKEN_LEN + 1], traffic[ENVD_TOKEN_LEN + 1];
	json_t *j = sb_to_json(sb);

	envd_token(kd, sb->rec.id, token);
	envd_traffic_token(kd, sb->rec.id, traffic);
	if (j) {
		json_object_set_new(j, "envdAccessToken", json_string(token));
		if (sb->rec.flags & SB_F_PUBLIC_PORTS)
			json_object_set_new(j, "trafficAccessToken", json_null());
		else
			json_object_set_new(j, "trafficAccessToken", json_string(traffic));
		/* getHost(port) answers PORT-ID.DOMAIN (net/ports.h) */
		json_object_set_new(j, "domain", json_string(ports_domain(kd)));
	}
	return j;
}

struct sandbox *api_sb_find(struct kilnd *kd, const struct http_req *req, const char *id)
{
	struct sandbox *sb = sb_find(kd, id);

	/* another tenant's sandbox is as unknown as one that never was */
	if (!sb || sb->rec.flags & SB_F_POOL || !auth_owns(&req->who, sb->rec.tenant))
		return NULL;
	return sb;
}

/* ---------------------------------------------------------------- metrics */

struct metrics_req {
	struct kilnd *kd;
	struct http_conn *c;
	struct agent_conn *a;
	int cpu_count;
	char id[SB_ID_LEN + 1]; /* the sandbox, for its network counters */
	bool hello;
	bool reuse; /* the agent keeps the connection after INFO */
};

static void metrics_free(struct metrics_req *r)
{
	agent_close(r->a);
	free(r);
}

static void metrics_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct metrics_req *r = ctx;
	struct agent_info info;
	struct sandbox *sb;
	uint32_t v, kind;

	if (type == KILN_MSG_HELLO && !r->hello && !agent_parse_hello(p, n, &v, &kind)) {
		r->hello = true;
		r->reuse = kind & KILN_HELLO_REUSE; /* the answer's flags */
		return;
	}
	if (type == KILN_MSG_INFO && r->hello && !agent_parse_info(p, n, &info)) {
		/* E2B's SandboxMetric: memory from what the agent knows, CPU
		 * from the VMM's over the last sampling interval
		 * (metrics_hist.h, 0 before the first); kiln does not measure
		 * disk use yet. */
		double cpu = mhist_cpu_pct(r->kd, r->id);
		json_t *m =
		    json_pack("[{s:s,s:I,s:f,s:i,s:I,s:I,s:I,s:I,s:I}]", "timestamp", "",
		              "timestampUnix", (json_int_t)(now_ms() / 1000), "cpuUsedPct",
		              cpu < 0 ? 0.0 : cpu, "cpuCount", r->cpu_count, "memUsed",
		              (json_int_t)(info.mem_total_kb - info.mem_free_kb) * 1024, "memTotal",
		              (json_int_t)info.mem_total_kb * 1024, "memCache", (json_int_t)0,
		              "diskUsed", (json_int_t)0, "diskTotal", (json_int_t)0);
		char ts[32];

		iso8601(now_ms(), ts);
		if (m)
			json_object_set_new(json_array_get(m, 0), "timestamp", json_string(ts));
		/* kiln's own: egress and DNS counters since the sandbox started. */
		sb = sb_find(r->kd, r->id);
		if (m && sb)
			json_object_set_new(json_array_get(m, 0), "network", net_sb_metrics(sb));
		http_respond_json(r->c, 200, m);
		spare_release(&r->a, r->reuse);
		metrics_free(r);
		return;
	}
	http_respond_error(r->c, 502, "metrics: unexpected answer from the agent");
	metrics_free(r);
}

static void metrics_close(void *ctx, int err)
{
	struct metrics_req *r = ctx;

	r->a = NULL;
	http_respond_error(r->c, 502, "metrics: the agent stream ended early");
	metrics_free(r);
}

static const struct agent_conn_ops metrics_agent_ops = {
    .on_frame = metrics_frame,
    .on_close = metrics_close,
};

static void metrics_abort(void *ctx)
{
	metrics_free(ctx);
}

static const struct http_handler metrics_http_ops = {.on_abort = metrics_abort};

/* GET /sandboxes/{id}/metrics: one sample, now (E2B returns a series). */
static void do_metrics(struct kilnd *kd, struct http_conn *c, struct sandbox *sb)
{
	struct metrics_req *r;

	if (sb->state != SB_RUNNING) {
		http_respond(c, 200, "application/json", NULL, "[]", 2);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	r->kd = kd;
	r->c = c;
	r->cpu_count = sb->rec.cpu_count;
	snprintf(r->id, sizeof(r->id), "%s", sb->rec.id);
	r->a = proxy_open(kd, c, sb, KILN_STREAM_INFO, KILN_FRAME_REUSE, &metrics_agent_ops, r);
	if (!r->a) {
		free(r);
		return;
	}
	agent_flush(r->a);
	http_set_handler(c, &metrics_http_ops, r, 0);
}

/* ---------------------------------------------------------------- logs */

/* console.log.1 (what the last rotation kept, console.c), then console.log */
struct logs_sess {
	struct http_conn *c;
	int fd, next_fd;
	off_t left, next_left;
};

static void logs_pump(void *ctx)
{
	struct logs_sess *s = ctx;
	char chunk[64 << 10];

	for (;;) {
		while (s->left > 0 && http_out_pending(s->c) < HTTP_OUT_HIGH) {
			ssize_t n =
			    read(s->fd, chunk,
			         s->left < (off_t)sizeof(chunk) ? (size_t)s->left : sizeof(chunk));

			if (n <= 0 || (n < (ssize_t)sizeof(chunk) && s->left > n)) {
				/* the file shrank (rotated): stop at what there is */
				if (n > 0)
					http_stream_write(s->c, chunk, (size_t)n);
				s->left = 0;
				break;
			}
			http_stream_write(s->c, chunk, (size_t)n);
			s->left -= n;
		}
		if (s->left > 0)
			return; /* output is full: on_drain brings us back */
		if (s->next_fd < 0)
			break;
		close(s->fd);
		s->fd = s->next_fd;
		s->left = s->next_left;
		s->next_fd = -1;
	}
	http_stream_end(s->c);
	close(s->fd);
	free(s);
}

static void logs_abort(void *ctx)
{
	struct logs_sess *s = ctx;

	close(s->fd);
	if (s->next_fd >= 0)
		close(s->next_fd);
	free(s);
}

static const struct http_handler logs_ops = {.on_drain = logs_pump, .on_abort = logs_abort};

static void do_logs(struct http_conn *c, struct sandbox *sb)
{
	struct logs_sess *s;
	struct stat st, st1;
	char *old = NULL;
	int fd = open(sb->console_path, O_RDONLY | O_CLOEXEC), fd1 = -1;

	if (fd < 0) {
		http_respond(c, 200, "text/plain; charset=utf-8", NULL, "", 0);
		return;
	}
	if (asprintf(&old, "%s.1", sb->console_path) >= 0)
		fd1 = open(old, O_RDONLY | O_CLOEXEC);
	free(old);
	s = calloc(1, sizeof(*s));
	if (!s || fstat(fd, &st) || (fd1 >= 0 && fstat(fd1, &st1))) {
		free(s);
		close(fd);
		if (fd1 >= 0)
			close(fd1);
		http_respond_error(c, 500, "cannot read the console log");
		return;
	}
	s->c = c;
	/* what is there now; later output is for the next call */
	s->fd = fd1 >= 0 ? fd1 : fd;
	s->left = fd1 >= 0 ? st1.st_size : st.st_size;
	s->next_fd = fd1 >= 0 ? fd : -1;
	s->next_left = st.st_size;
	http_stream_start(c, 200, "text/plain; charset=utf-8", NULL);
	http_set_handler(c, &logs_ops, s, 0);
	logs_pump(s);
}

/* ---------------------------------------------------------------- on a running sandbox */

/* The requests served by the sandbox's agent: on a paused sandbox they
 * resume it first (wake.h). */
static const char *route_name(enum route_kind kind)
{
	switch (kind) {
	case R_EXEC:
		return "exec";
	case R_PTY:
		return "pty";
	case R_ATTACH:
		return "attach";
	case R_FILES_PUT:
		return "PUT /files";
	default:
		return "a file request";
	}
}

static void serve(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, enum route_kind kind,
                  json_t *body)
{
	struct http_req *req = http_conn_req(c);

	switch (kind) {
	case R_EXEC:
		exec_start(kd, c, sb, body);
		break;
	case R_MKDIR:
		files_op(kd, c, sb, KILN_FILE_MKDIR, body);
		break;
	case R_REMOVE:
		files_op(kd, c, sb, KILN_FILE_REMOVE, body);
		break;
	case R_RENAME:
		files_op(kd, c, sb, KILN_FILE_RENAME, body);
		break;
	case R_FILES_GET:
		files_get(kd, c, req, sb);
		break;
	case R_FILES_PUT:
		files_put(kd, c, req, sb);
		break;
	case R_FILES_LIST:
	case R_FILES_STAT:
		files_list(kd, c, req, sb, kind == R_FILES_STAT);
		break;
	case R_PTY:
		pty_start(kd, c, req, sb);
		break;
	case R_ATTACH:
		pty_attach(kd, c, req, sb);
		break;
	default:
		http_respond_error(c, 500, "request not handled");
	}
}

struct on_running {
	struct kilnd *kd;
	struct http_conn *c;
	enum route_kind kind;
	json_t *body;
};

static void on_running_free(struct on_running *o)
{
	json_decref(o->body);
	free(o);
}

static void or_run(void *ctx, struct sandbox *sb)
{
	struct on_running *o = ctx;

	serve(o->kd, o->c, sb, o->kind, o->body);
	on_running_free(o);
}

static void or_fail(void *ctx, int status, const char *msg)
{
	struct on_running *o = ctx;

	if (status == 429) {
		json_t *j = json_pack("{s:i,s:s}", "code", 429, "message", msg);
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

		json_decref(j);
		if (s)
			http_respond(o->c, 429, "application/json", "Retry-After: 1\r\n", s,
			             strlen(s));
		else
			http_respond_error(o->c, 500, "out of memory");
		free(s);
	} else {
		http_respond_error(o->c, status, "%s", msg);
	}
	on_running_free(o);
}

static void or_drop(void *ctx)
{
	on_running_free(ctx);
}

static const struct wake_ops on_running_ops = {.run = or_run, .fail = or_fail, .drop = or_drop};

/* A request naming a user its agent cannot run as (it predates users, as
 * kept in the store) is refused before the sandbox is woken for it:
 * false, answered. */
static bool user_ok_asleep(struct http_conn *c, struct sandbox *sb, json_t *body)
{
	json_t *ju = json_object_get(body, "user");
	char *q = body ? NULL : http_query_param(http_conn_req(c), "user"), err[512];
	bool ok = sb_user_ok(sb, json_is_string(ju) ? json_string_value(ju) : q, err, sizeof(err));

	free(q);
	if (!ok)
		http_respond_error(c, 400, "%s", err);
	return ok;
}

/* Serve the request now if sb runs, else once it has been resumed. body:
 * the buffered JSON body, or NULL at headers time. */
static void when_running(struct kilnd *kd, struct http_conn *c, struct sandbox *sb,
                         enum route_kind kind, json_t *body)
{
	struct on_running *o;

	if (sb->state == SB_RUNNING) {
		serve(kd, c, sb, kind, body);
		return;
	}
	if (!user_ok_asleep(c, sb, body))
		return;
	o = calloc(1, sizeof(*o));
	if (!o) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	o->kd = kd;
	o->c = c;
	o->kind = kind;
	o->body = json_incref(body);
	sb_wake(kd, c, sb, route_name(kind), body ? 0 : WAKE_HOLD, &on_running_ops, o);
}

/* ---------------------------------------------------------------- buffered bodies */

struct pending {
	struct kilnd *kd;
	struct http_conn *c;
	enum route_kind kind;
	char id[SB_ID_LEN + 1];
};

static void pending_abort(void *ctx)
{
	free(ctx);
}

static void pending_complete(void *ctx)
{
	struct pending *p = ctx;
	struct kilnd *kd = p->kd;
	struct http_conn *c = p->c;
	struct http_req *req = http_conn_req(c);
	char err[JSON_ERR_LEN] = "";
	struct sandbox *sb = NULL;
	long long secs;
	json_t *body;

	http_set_handler(c, NULL, NULL, 0);
	body = json_body(req, err);
	if (!body) {
		http_respond_error(c, 400, "%s", err);
		free(p);
		return;
	}
	if (p->kind != R_CREATE && p->kind != R_TEMPLATE) {
		sb = api_sb_find(kd, req, p->id);
		if (!sb) {
			http_respond_error(c, 404, "sandbox %s not found", p->id);
			goto out;
		}
	}
	switch (p->kind) {
	case R_CREATE:
		api_create(kd, c, body);
		break;
	case R_TIMEOUT:
		if (json_get_int(body, "timeout", 1, kd->cfg.max_timeout, -1, &secs, err) ||
		    secs < 0) {
			http_respond_error(c, 400, "%s", err[0] ? err : "'timeout' is required");
			break;
		}
		if (sb->state != SB_RUNNING && sb->state != SB_STARTING) {
			http_respond_error(c, 409, "sandbox %s is %s", sb->rec.id,
			                   sb_state_name(sb->state));
			break;
		}
		sb_set_timeout(sb, secs);
		http_respond(c, 204, NULL, NULL, NULL, 0);
		break;
	case R_CONNECT:
	case R_RESUME:
		api_resume(kd, c, sb, body, p->kind == R_CONNECT);
		break;
	case R_PAUSE:
		api_pause(kd, c, sb);
		break;
	case R_FORK:
		api_fork(kd, c, sb, body);
		break;
	case R_NETWORK: {
		char msg[512];
		int st;

		if (!sb_is_live(sb->state) && sb->state != SB_PAUSED) {
			http_respond_error(c, 409, "sandbox %s is %s", sb->rec.id,
			                   sb_state_name(sb->state));
			break;
		}
		st = net_sb_set_policy(sb, body, msg, sizeof(msg));
		if (st)
			http_respond_error(c, st, "%s", msg);
		else
			http_respond_json(c, 200, net_policy_to_json(&sb->policy));
		break;
	}
	case R_TEMPLATE:
		api_template_create(kd, c, body);
		break;
	default:
		when_running(kd, c, sb, p->kind, body);
		break;
	}
out:
	json_decref(body);
	free(p);
}

static const struct http_handler pending_ops = {
    .on_complete = pending_complete,
    .on_abort = pending_abort,
};

/* What GET /metrics times the request as. */
static enum api_op op_of(enum route_kind kind)
{
	switch (kind) {
	case R_CREATE:
		return API_OP_CREATE;
	case R_PAUSE:
		return API_OP_PAUSE;
	case R_RESUME:
		return API_OP_RESUME;
	case R_CONNECT:
		return API_OP_CONNECT;
	case R_FORK:
		return API_OP_FORK;
	case R_EXEC:
		return API_OP_EXEC;
	default:
		return API_OP_NONE;
	}
}

static void buffer_body(struct kilnd *kd, struct http_conn *c, enum route_kind kind, const char *id,
                        size_t limit)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (!p) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	p->kd = kd;
	p->c = c;
	p->kind = kind;
	snprintf(p->id, sizeof(p->id), "%s", id ? id : "");
	http_set_tag(c, op_of(kind));
	http_set_handler(c, &pending_ops, p, limit);
}

/* ---------------------------------------------------------------- router */

static int split(char *path, char **seg)
{
	int n = 0;

	for (char *save = NULL, *t = strtok_r(path, "/", &save); t;
	     t = strtok_r(NULL, "/", &save)) {
		if (n == MAX_SEGS)
			return -1;
		seg[n++] = t;
	}
	return n;
}

static void method_not_allowed(struct http_conn *c, const char *allow)
{
	char hdr[64];

	snprintf(hdr, sizeof(hdr), "Allow: %s\r\n", allow);
	http_respond(c, 405, "application/json", hdr,
	             LIT("{\"code\":405,\"message\":\"method not allowed\"}"));
}

/* /templates[/{name}] */
static void route_templates(struct kilnd *kd, struct http_conn *c, int m, char **seg, int n)
{
	if (n == 1) {
		if (m == HTTP_GET)
			api_template_list(kd, c);
		else if (m == HTTP_POST)
			buffer_body(kd, c, R_TEMPLATE, NULL, BODY_SMALL);
		else
			method_not_allowed(c, "GET, POST");
	} else if (n == 2) {
		if (m == HTTP_GET)
			api_template_get(kd, c, seg[1]);
		else if (m == HTTP_DELETE)
			api_template_delete(kd, c, seg[1]);
		else
			method_not_allowed(c, "GET, DELETE");
	} else {
		http_respond_error(c, 404, "no such endpoint");
	}
}

void api_route(struct http_conn *c, struct http_req *req, void *udata)
{
	struct kilnd *kd = udata;
	char *seg[MAX_SEGS], *path;
	int n, m = req->method;
	bool v2 = false;
	struct sandbox *sb;

	/* a sandbox's port (PORT-ID.DOMAIN, /sandboxes/ID/ports/PORT/...) */
	if (ports_route(kd, c, req) || cdp_route(kd, c, req))
		return;
	/* the web console's page and files: public, no key (webui.h) */
	if (webui_route(c, req))
		return;
	if (envd_wants(req)) {
		/* E2B's in-sandbox API; its own authentication (envd.c) */
		envd_route(c, req, kd);
		return;
	}
	path = strdup(req->path);
	n = path ? split(path, seg) : -1;

	if (n < 0) {
		http_respond_error(c, 404, "no such endpoint");
		goto out;
	}
	if (n > 0 && !strcmp(seg[0], "v2")) {
		v2 = true;
		memmove(seg, seg + 1, (size_t)(--n) * sizeof(*seg));
	}
	if (n == 1 && !strcmp(seg[0], "health")) {
		http_respond(c, 200, "application/json", NULL, LIT("{\"status\":\"ok\"}"));
		goto out;
	}
	if (!api_auth_ws(kd, req, &req->who)) {
		http_respond(c, 401, "application/json", "WWW-Authenticate: Bearer\r\n",
		             LIT("{\"code\":401,\"message\":\"missing or wrong API key\"}"));
		goto out;
	}
	http_conn_trust(c);
	if (n >= 1 && !strcmp(seg[0], "keys")) {
		auth_route(kd, c, req, seg, n);
		goto out;
	}
	if (n == 1 && !strcmp(seg[0], "metrics")) {
		if (!req->who.admin)
			http_respond_error(c, 403,
			                   "GET /metrics is the operator's (every tenant's "
			                   "sandboxes are in it)");
		else if (m != HTTP_GET)
			method_not_allowed(c, "GET");
		else
			api_metrics(kd, c);
		goto out;
	}
	if (n == 0) {
		http_respond(c, 200, "application/json", NULL,
		             LIT("{\"name\":\"kilnd\",\"version\":\"" KILN_VERSION "\"}"));
		goto out;
	}
	if (!strcmp(seg[0], "templates")) {
		route_templates(kd, c, m, seg, n);
		goto out;
	}
	if (n == 1 && !strcmp(seg[0], "images")) {
		if (m == HTTP_GET)
			http_respond_json(c, 200, img_list(kd));
		else
			method_not_allowed(c, "GET");
		goto out;
	}
	if (n == 1 && !strcmp(seg[0], "events")) {
		if (m != HTTP_GET)
			method_not_allowed(c, "GET");
		else
			events_sse(kd, c, req);
		goto out;
	}
	if (strcmp(seg[0], "sandboxes")) {
		http_respond_error(c, 404, "no such endpoint");
		goto out;
	}
	if (n == 1) {
		if (m == HTTP_GET)
			api_list(kd, c, req, v2);
		else if (m == HTTP_POST)
			buffer_body(kd, c, R_CREATE, NULL, BODY_SMALL);
		else
			method_not_allowed(c, "GET, POST");
		goto out;
	}
	if (n == 3 && !strcmp(seg[2], "events")) {
		/* also of sandboxes that are gone */
		if (m != HTTP_GET)
			method_not_allowed(c, "GET");
		else
			events_api_list(kd, c, req, seg[1]);
		goto out;
	}
	sb = api_sb_find(kd, req, seg[1]);
	if (!sb) {
		http_respond_error(c, 404, "sandbox %.64s not found", seg[1]);
		goto out;
	}
	if (m != HTTP_GET)
		events_who(kd, req, sb->actor); /* what it causes is theirs */
	if (n == 2) {
		if (m == HTTP_GET) {
			http_respond_json(c, 200, api_sandbox_json(kd, sb));
		} else if (m == HTTP_DELETE) {
			events_sb(sb, "sandbox.killed", NULL);
			sb_delete(sb);
			http_respond(c, 204, NULL, NULL, NULL, 0);
		} else {
			method_not_allowed(c, "GET, DELETE");
		}
		goto out;
	}
	if (n == 3 && !strcmp(seg[2], "timeout")) {
		if (m == HTTP_POST)
			buffer_body(kd, c, R_TIMEOUT, sb->rec.id, BODY_SMALL);
		else
			method_not_allowed(c, "POST");
	} else if (n == 3 && !strcmp(seg[2], "connect")) {
		if (m == HTTP_POST)
			buffer_body(kd, c, R_CONNECT, sb->rec.id, BODY_SMALL);
		else
			method_not_allowed(c, "POST");
	} else if (n == 3 && !strcmp(seg[2], "resume")) {
		if (m == HTTP_POST)
			buffer_body(kd, c, R_RESUME, sb->rec.id, BODY_SMALL);
		else
			method_not_allowed(c, "POST");
	} else if (n == 3 && !strcmp(seg[2], "pause")) {
		if (m == HTTP_POST)
			buffer_body(kd, c, R_PAUSE, sb->rec.id, BODY_SMALL);
		else
			method_not_allowed(c, "POST");
	} else if (n == 3 && !strcmp(seg[2], "fork")) {
		if (m == HTTP_POST)
			buffer_body(kd, c, R_FORK, sb->rec.id, BODY_SMALL);
		else
			method_not_allowed(c, "POST");
	} else if (n == 3 && !strcmp(seg[2], "network")) {
		if (m == HTTP_PUT)
			buffer_body(kd, c, R_NETWORK, sb->rec.id, BODY_SMALL);
		else if (m == HTTP_GET)
			http_respond_json(c, 200, net_policy_to_json(&sb->policy));
		else
			method_not_allowed(c, "GET, PUT");
	} else if (n == 4 && !strcmp(seg[2], "metrics") && !strcmp(seg[3], "history")) {
		if (m == HTTP_GET)
			mhist_respond(kd, c, sb);
		else
			method_not_allowed(c, "GET");
	} else if (n == 3 && !strcmp(seg[2], "metrics")) {
		if (m == HTTP_GET)
			do_metrics(kd, c, sb);
		else
			method_not_allowed(c, "GET");
	} else if (n == 3 && !strcmp(seg[2], "exec")) {
		if (m == HTTP_POST)
			buffer_body(kd, c, R_EXEC, sb->rec.id, BODY_EXEC);
		else
			method_not_allowed(c, "POST");
	} else if (n == 3 && !strcmp(seg[2], "pty")) {
		if (m == HTTP_GET)
			when_running(kd, c, sb, R_PTY, NULL);
		else
			method_not_allowed(c, "GET");
	} else if (n == 3 && !strcmp(seg[2], "processes")) {
		if (m == HTTP_GET)
			procs_list(kd, c, sb);
		else
			method_not_allowed(c, "GET");
	} else if (n == 5 && !strcmp(seg[2], "processes") && !strcmp(seg[4], "attach")) {
		uint32_t pid;

		if (m != HTTP_GET)
			method_not_allowed(c, "GET");
		else if (!pty_ws_check(c, req) && !procs_attach_check(c, sb, seg[3], &pid))
			when_running(kd, c, sb, R_ATTACH, NULL);
	} else if (n == 3 && !strcmp(seg[2], "logs")) {
		if (m == HTTP_GET)
			do_logs(c, sb);
		else
			method_not_allowed(c, "GET");
	} else if (n == 3 && !strcmp(seg[2], "files")) {
		if (m == HTTP_GET)
			when_running(kd, c, sb, R_FILES_GET, NULL);
		else if (m == HTTP_PUT)
			when_running(kd, c, sb, R_FILES_PUT, NULL);
		else
			method_not_allowed(c, "GET, PUT");
	} else if (n == 4 && !strcmp(seg[2], "files") &&
	           (!strcmp(seg[3], "list") || !strcmp(seg[3], "stat"))) {
		if (m == HTTP_GET)
			when_running(kd, c, sb,
			             !strcmp(seg[3], "stat") ? R_FILES_STAT : R_FILES_LIST, NULL);
		else
			method_not_allowed(c, "GET");
	} else if (n == 4 && !strcmp(seg[2], "files") &&
	           (!strcmp(seg[3], "mkdir") || !strcmp(seg[3], "remove") ||
	            !strcmp(seg[3], "rename"))) {
		if (m == HTTP_POST)
			buffer_body(kd, c,
			            !strcmp(seg[3], "mkdir")    ? R_MKDIR
			            : !strcmp(seg[3], "remove") ? R_REMOVE
			                                        : R_RENAME,
			            sb->rec.id, BODY_SMALL);
		else
			method_not_allowed(c, "POST");
	} else {
		http_respond_error(c, 404, "no such endpoint");
	}
out:
	free(path);
}
