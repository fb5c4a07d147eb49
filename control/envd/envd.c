/* SPDX-License-Identifier: MIT */
/* envd: routing, authentication and the RPC dispatch (see envd.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <nettle/base64.h>
#include <nettle/hmac.h>
#include <nettle/sha2.h>

#include "auth/auth.h"
#include "codeint.h"
#include "http/connectrpc.h"
#include "envd.h"
#include "api/api.h"
#include "net/ports.h"
#include "http/jsonutil.h"
#include "util.h"
#include "sandbox/wake.h"

#define LIT(s) s, sizeof(s) - 1

/* ---------------------------------------------------------------- tokens */

int envd_load_secret(struct kilnd *kd)
{
	char *path, *hex;
	size_t len;
	int fd;

	if (asprintf(&path, "%s/%s", kd->cfg.data_dir, ENVD_SECRET_FILE) < 0)
		return -ENOMEM;
	hex = read_small_file(path, 256, &len);
	while (hex && len && (hex[len - 1] == '\n' || hex[len - 1] == ' '))
		hex[--len] = 0;
	if (!hex || len < 32) {
		char fresh[65];

		free(hex);
		if (random_hex(fresh, 32)) {
			free(path);
			return -EIO;
		}
		/* O_EXCL: two kilnds never share a data directory (kilnd.pid
		 * lock), so this only fails on a broken file, which we replace. */
		unlink(path);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || dprintf(fd, "%s\n", fresh) < 0) {
			int e = errno;

			if (fd >= 0)
				close(fd);
			free(path);
			return -e;
		}
		close(fd);
		hex = strdup(fresh);
		if (!hex) {
			free(path);
			return -ENOMEM;
		}
	}
	free(path);
	free(kd->envd_secret);
	kd->envd_secret = hex;
	return 0;
}

/* HMAC-SHA256(secret, label + id) in hex: one token per purpose. */
static void keyed_token(const struct kilnd *kd, const char *label, const char *id,
                        char out[ENVD_TOKEN_LEN + 1])
{
	static const char hexd[] = "0123456789abcdef";
	struct hmac_sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	const char *secret = kd->envd_secret ? kd->envd_secret : "";

	hmac_sha256_set_key(&h, strlen(secret), (const uint8_t *)secret);
	hmac_sha256_update(&h, strlen(label), (const uint8_t *)label);
	hmac_sha256_update(&h, strlen(id), (const uint8_t *)id);
	hmac_sha256_digest(&h, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d) && 2 * i < ENVD_TOKEN_LEN; i++) {
		out[2 * i] = hexd[d[i] >> 4];
		out[2 * i + 1] = hexd[d[i] & 15];
	}
	out[ENVD_TOKEN_LEN] = 0;
}

void envd_token(const struct kilnd *kd, const char *id, char out[ENVD_TOKEN_LEN + 1])
{
	keyed_token(kd, "envd-token-v1:", id, out);
}

void envd_traffic_token(const struct kilnd *kd, const char *id, char out[ENVD_TOKEN_LEN + 1])
{
	keyed_token(kd, "traffic-token-v1:", id, out);
}

static bool token_ok(const struct kilnd *kd, const struct http_req *req, const struct sandbox *sb)
{
	const char *t = http_header(req, "X-Access-Token");
	char want[ENVD_TOKEN_LEN + 1];

	if (!t)
		return false;
	envd_token(kd, sb->rec.id, want);
	return auth_secret_equal(t, want);
}

/* The code interpreter's port: the SDK sends the envd token with runCode()
 * only, and E2B's traffic token (E2B-Traffic-Access-Token) with every call
 * when the create answer has one; kilnd's API key does too. */
static bool ci_token_ok(struct kilnd *kd, const struct http_req *req, const struct sandbox *sb)
{
	const char *t = http_header(req, "E2B-Traffic-Access-Token");
	char want[ENVD_TOKEN_LEN + 1];

	if (token_ok(kd, req, sb) || api_sb_key_ok(kd, req, sb))
		return true;
	if (!t)
		return false;
	envd_traffic_token(kd, sb->rec.id, want);
	return auth_secret_equal(t, want);
}

/* downloadUrl()/uploadUrl(): "v1_" + unpadded base64 of
 * sha256("<path>:<read|write>:<user>:<token>[:<expiry>]"). */
static bool signature_valid(const struct kilnd *kd, const struct sandbox *sb, const char *path,
                            const char *op, const char *user, const char *sig, const char *exp)
{
	char token[ENVD_TOKEN_LEN + 1], b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	size_t n;

	envd_token(kd, sb->rec.id, token);
	sha256_init(&h);
	sha256_update(&h, strlen(path), (const uint8_t *)path);
	sha256_update(&h, 1, (const uint8_t *)":");
	sha256_update(&h, strlen(op), (const uint8_t *)op);
	sha256_update(&h, 1, (const uint8_t *)":");
	sha256_update(&h, strlen(user), (const uint8_t *)user);
	sha256_update(&h, 1, (const uint8_t *)":");
	sha256_update(&h, strlen(token), (const uint8_t *)token);
	if (exp) {
		sha256_update(&h, 1, (const uint8_t *)":");
		sha256_update(&h, strlen(exp), (const uint8_t *)exp);
	}
	sha256_digest(&h, sizeof(d), d);
	base64_encode_raw((char *)b64, sizeof(d), d);
	n = BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE);
	while (n && b64[n - 1] == '=')
		n--;
	b64[n] = 0;
	return !strncmp(sig, "v1_", 3) && auth_secret_equal(sig + 3, b64);
}

static bool expiry_ok(const char *exp)
{
	char *end;
	long long t;

	if (!exp)
		return true;
	t = strtoll(exp, &end, 10);
	return *exp && !*end && t * 1000 > now_ms();
}

/* ---------------------------------------------------------------- paths, users */

/* ---------------------------------------------------------------- sandbox lookup */

bool envd_wants(const struct http_req *req)
{
	return req->envd || http_header(req, "E2b-Sandbox-Id");
}

/* Host: "<port>-<id>.<domain>" (E2B's per-sandbox host names). */
static bool host_route(const struct http_req *req, char *id, size_t idlen, unsigned *port)
{
	const char *h = http_header(req, "Host"), *dash, *dot;
	char *end;
	unsigned long p;

	if (!h || !isdigit((unsigned char)*h))
		return false;
	p = strtoul(h, &end, 10);
	dash = end;
	if (*dash != '-' || p > 65535)
		return false;
	dot = strchr(dash + 1, '.');
	if (!dot || dot == dash + 1 || (size_t)(dot - dash - 1) >= idlen)
		return false;
	memcpy(id, dash + 1, (size_t)(dot - dash - 1));
	id[dot - dash - 1] = 0;
	*port = (unsigned)p;
	return true;
}

/* A sandbox that runs, or would once resumed, whose token signs this
 * /files request. */
static struct sandbox *find_by_signature(struct kilnd *kd, const char *path, const char *op,
                                         const char *user, const char *sig, const char *exp)
{
	for (struct sandbox *sb = kd->sandboxes; sb; sb = sb->next)
		if ((sb->state == SB_RUNNING || sb_wakeable(sb)) && !(sb->rec.flags & SB_F_POOL) &&
		    signature_valid(kd, sb, path, op, user, sig, exp))
			return sb;
	return NULL;
}

/* Can requests be served on sb, now or once it is resumed? */
static bool servable(const struct sandbox *sb)
{
	return sb->state == SB_RUNNING || sb_wakeable(sb);
}

/* E2B's edge answers 502 for a sandbox it cannot reach: the SDK reads it
 * as "not running" (isRunning() false, TimeoutError for RPCs). */
static void sandbox_gone(struct http_conn *c, const char *id, const char *why)
{
	json_t *j = json_pack("{s:i,s:s,s:s}", "code", 502, "message", why, "sandboxId", id);

	http_respond_json(c, 502, j);
}

/* ---------------------------------------------------------------- RPC dispatch */

struct method {
	const char *path;
	bool stream;
	size_t body_limit;
	void (*fn)(struct envd_req *r);
};

#define SMALL (64u << 10)
#define BIG   (16u << 20) /* SendInput carries data */

static const struct method methods[] = {
    {"/process.Process/Start", true, 1u << 20, envd_proc_start},
    {"/process.Process/Connect", true, SMALL, envd_proc_connect},
    {"/process.Process/List", false, SMALL, envd_proc_list},
    {"/process.Process/SendInput", false, BIG, envd_proc_send_input},
    {"/process.Process/SendSignal", false, SMALL, envd_proc_send_signal},
    {"/process.Process/CloseStdin", false, SMALL, envd_proc_close_stdin},
    {"/process.Process/Update", false, SMALL, envd_proc_update},
    /* client streaming (envd_input.c): served at headers time */
    {"/process.Process/StreamInput", true, 0, NULL},
    {"/filesystem.Filesystem/Stat", false, SMALL, envd_fs_stat},
    {"/filesystem.Filesystem/MakeDir", false, SMALL, envd_fs_make_dir},
    {"/filesystem.Filesystem/Move", false, SMALL, envd_fs_move},
    {"/filesystem.Filesystem/ListDir", false, SMALL, envd_fs_list_dir},
    {"/filesystem.Filesystem/Remove", false, SMALL, envd_fs_remove},
    {"/filesystem.Filesystem/WatchDir", true, SMALL, envd_watch_dir},
    {"/filesystem.Filesystem/CreateWatcher", false, SMALL, envd_watch_create},
    {"/filesystem.Filesystem/GetWatcherEvents", false, SMALL, envd_watch_get_events},
    {"/filesystem.Filesystem/RemoveWatcher", false, SMALL, envd_watch_remove},
};

struct rpc_pending {
	struct kilnd *kd;
	struct http_conn *c;
	const struct method *m;
	char id[SB_ID_LEN + 1];
	long long timeout_ms;
	double keepalive_s;
	struct envd_user user;
};

static void rpc_fail(struct http_conn *c, const struct method *m, int code, const char *msg)
{
	if (m->stream)
		crpc_stream_fail(c, code, "%s", msg);
	else
		crpc_respond_error(c, code, "%s", msg);
}

static void rpc_abort(void *ctx)
{
	free(ctx);
}

/* An RPC whose sandbox is being resumed (wake.h). */
struct rpc_wait {
	struct kilnd *kd;
	struct http_conn *c;
	const struct method *m;
	json_t *msg;
	long long timeout_ms;
	double keepalive_s;
	struct envd_user user;
};

static void rpc_run(struct kilnd *kd, struct http_conn *c, const struct method *m,
                    struct sandbox *sb, json_t *msg, long long timeout_ms, double keepalive_s,
                    const struct envd_user *u)
{
	struct envd_req r = {
	    .kd = kd,
	    .c = c,
	    .sb = sb,
	    .msg = msg,
	    .timeout_ms = timeout_ms,
	    .keepalive_s = keepalive_s,
	    .user = *u,
	};

	m->fn(&r);
}

static void rpc_wait_free(struct rpc_wait *w)
{
	json_decref(w->msg);
	free(w);
}

static void rw_run(void *ctx, struct sandbox *sb)
{
	struct rpc_wait *w = ctx;

	rpc_run(w->kd, w->c, w->m, sb, w->msg, w->timeout_ms, w->keepalive_s, &w->user);
	rpc_wait_free(w);
}

static void rw_fail(void *ctx, int status, const char *msg)
{
	struct rpc_wait *w = ctx;

	/* The reason goes to the SDK's error: a paused sandbox that could not
	 * be resumed is "unavailable" (429: "resource exhausted"). */
	rpc_fail(w->c, w->m,
	         status == 429   ? CRPC_RESOURCE_EXHAUSTED
	         : status == 404 ? CRPC_NOT_FOUND
	         : status == 409 ? CRPC_FAILED_PRECONDITION
	                         : CRPC_UNAVAILABLE,
	         msg);
	rpc_wait_free(w);
}

static void rw_drop(void *ctx)
{
	rpc_wait_free(ctx);
}

static const struct wake_ops rpc_wake_ops = {.run = rw_run, .fail = rw_fail, .drop = rw_drop};

static void rpc_complete(void *ctx)
{
	struct rpc_pending *p = ctx;
	struct http_conn *c = p->c;
	struct http_req *req = http_conn_req(c);
	char err[JSON_ERR_LEN] = "";
	struct sandbox *sb;
	struct rpc_wait *w;
	json_t *msg;

	http_set_handler(c, NULL, NULL, 0);
	if (p->m->stream) {
		msg = crpc_parse_envelope(buf_head(&req->body), buf_avail(&req->body), err,
		                          sizeof(err));
	} else {
		msg = json_body(req, err);
		if (msg && !json_is_object(msg)) {
			json_decref(msg);
			msg = NULL;
			snprintf(err, sizeof(err), "the message must be a JSON object");
		}
	}
	if (!msg) {
		rpc_fail(c, p->m, CRPC_INVALID_ARGUMENT, err);
		free(p);
		return;
	}
	sb = sb_find(p->kd, p->id);
	if (!sb || !servable(sb)) {
		sandbox_gone(c, p->id, sb ? "the sandbox is not running" : "sandbox not found");
	} else if (sb->state == SB_RUNNING) {
		rpc_run(p->kd, c, p->m, sb, msg, p->timeout_ms, p->keepalive_s, &p->user);
	} else if (!(w = calloc(1, sizeof(*w)))) {
		rpc_fail(c, p->m, CRPC_INTERNAL, "out of memory");
	} else {
		/* paused (or on its way there or back): resumed first */
		*w = (struct rpc_wait){
		    .kd = p->kd,
		    .c = c,
		    .m = p->m,
		    .msg = json_incref(msg),
		    .timeout_ms = p->timeout_ms,
		    .keepalive_s = p->keepalive_s,
		    .user = p->user,
		};
		sb_wake(p->kd, c, sb, p->m->path + 1, 0, &rpc_wake_ops, w);
	}
	json_decref(msg);
	free(p);
}

static const struct http_handler rpc_ops = {
    .on_complete = rpc_complete,
    .on_abort = rpc_abort,
};

/* StreamInput on a sandbox being resumed (wake.h): its body waits. */
struct input_wait {
	struct kilnd *kd;
	struct http_conn *c;
};

static void iw_run(void *ctx, struct sandbox *sb)
{
	struct input_wait *w = ctx;

	envd_proc_stream_input(w->kd, w->c, sb);
	free(w);
}

static void iw_fail(void *ctx, int status, const char *msg)
{
	struct input_wait *w = ctx;

	crpc_stream_fail(w->c,
	                 status == 429   ? CRPC_RESOURCE_EXHAUSTED
	                 : status == 404 ? CRPC_NOT_FOUND
	                 : status == 409 ? CRPC_FAILED_PRECONDITION
	                                 : CRPC_UNAVAILABLE,
	                 "%s", msg);
	free(w);
}

static void iw_drop(void *ctx)
{
	free(ctx);
}

static const struct wake_ops input_wake_ops = {.run = iw_run, .fail = iw_fail, .drop = iw_drop};

static void rpc_route(struct kilnd *kd, struct http_conn *c, struct http_req *req,
                      struct sandbox *sb, const struct method *m, const struct envd_user *u)
{
	const char *ctype = http_header(req, "Content-Type");
	const char *ka = http_header(req, "Keepalive-Ping-Interval");
	struct rpc_pending *p;
	long long tmo;

	if (req->method != HTTP_POST) {
		http_respond(c, 405, "application/json", "Allow: POST\r\n",
		             LIT("{\"code\":\"unimplemented\",\"message\":\"use POST\"}"));
		return;
	}
	if (m->stream ? !crpc_is_stream_json(ctype) : !crpc_is_unary_json(ctype)) {
		char msg[160];
		int n = snprintf(msg, sizeof(msg),
		                 "{\"code\":\"unknown\",\"message\":\"this server speaks Connect "
		                 "with JSON only (Content-Type %s)\"}",
		                 m->stream ? "application/connect+json" : "application/json");

		http_respond(c, 415, "application/json", NULL, msg, (size_t)n);
		return;
	}
	if (!m->fn) {
		/* StreamInput: its body is read as it comes, on a running sandbox
		 * (a paused one is resumed first, the body held meanwhile) */
		if (sb->state == SB_RUNNING) {
			envd_proc_stream_input(kd, c, sb);
			return;
		}
		{
			struct input_wait *w = calloc(1, sizeof(*w));

			if (!w) {
				rpc_fail(c, m, CRPC_INTERNAL, "out of memory");
				return;
			}
			w->kd = kd;
			w->c = c;
			sb_wake(kd, c, sb, "StreamInput", WAKE_HOLD, &input_wake_ops, w);
		}
		return;
	}
	tmo = crpc_timeout_ms(req);
	if (tmo < 0) {
		rpc_fail(c, m, CRPC_INVALID_ARGUMENT, "malformed Connect-Timeout-Ms");
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		rpc_fail(c, m, CRPC_INTERNAL, "out of memory");
		return;
	}
	p->kd = kd;
	p->c = c;
	p->m = m;
	p->timeout_ms = tmo;
	p->user = *u;
	p->keepalive_s = 90; /* envd's default */
	if (ka) {
		char *end;
		double v = strtod(ka, &end);

		if (!*end && v >= 1 && v <= 3600)
			p->keepalive_s = v;
	}
	snprintf(p->id, sizeof(p->id), "%s", sb->rec.id);
	http_set_handler(c, &rpc_ops, p, m->body_limit);
	/* A request without a body is complete already: its on_complete is
	 * about to run (http_parser calls it after the headers). */
}

/* ---------------------------------------------------------------- router */

static void unauthorized(struct http_conn *c, const struct method *m, const char *why)
{
	if (m)
		rpc_fail(c, m, CRPC_UNAUTHENTICATED, why);
	else
		http_respond_error(c, 401, "%s", why);
}

/* GET or POST /files on a sandbox being resumed. */
struct files_wait {
	struct kilnd *kd;
	struct http_conn *c;
	char *path; /* absolute, or NULL (a multipart upload names its files) */
	bool get;
	struct envd_user user;
};

static void files_wait_free(struct files_wait *w)
{
	free(w->path);
	free(w);
}

static void fw_run(void *ctx, struct sandbox *sb)
{
	struct files_wait *w = ctx;
	struct http_req *req = http_conn_req(w->c);

	if (w->get)
		envd_files_get(w->kd, w->c, req, sb, w->path, &w->user);
	else
		envd_files_post(w->kd, w->c, req, sb, w->path, &w->user);
	files_wait_free(w);
}

static void fw_fail(void *ctx, int status, const char *msg)
{
	struct files_wait *w = ctx;

	http_respond_error(w->c, status, "%s", msg);
	files_wait_free(w);
}

static void fw_drop(void *ctx)
{
	files_wait_free(ctx);
}

static const struct wake_ops files_wake_ops = {.run = fw_run, .fail = fw_fail, .drop = fw_drop};

static void files_route(struct kilnd *kd, struct http_conn *c, struct http_req *req,
                        struct sandbox *sb, const char *id)
{
	bool get = req->method == HTTP_GET;
	char *path = http_query_param(req, "path"), *user = http_query_param(req, "username");
	char *sig = http_query_param(req, "signature");
	char *exp = http_query_param(req, "signature_expiration");
	char *abs = NULL, why[320];
	int rc;
	struct envd_user u;

	if (!get && req->method != HTTP_POST) {
		http_respond(c, 405, "application/json", "Allow: GET, POST\r\n",
		             LIT("{\"code\":405,\"message\":\"method not allowed\"}"));
		goto out;
	}
	if (!sb && sig && path)
		sb =
		    find_by_signature(kd, path, get ? "read" : "write", user ? user : "", sig, exp);
	if (!sb) {
		if (id)
			sandbox_gone(c, id, "sandbox not found");
		else
			http_respond_error(c, 400,
			                   "no sandbox: send the E2b-Sandbox-Id header (or a valid "
			                   "signature)");
		goto out;
	}
	if (!token_ok(kd, req, sb)) {
		if (!sig || !path ||
		    !signature_valid(kd, sb, path, get ? "read" : "write", user ? user : "", sig,
		                     exp)) {
			unauthorized(c, NULL, "missing or wrong X-Access-Token (or signature)");
			goto out;
		}
		if (!expiry_ok(exp)) {
			unauthorized(c, NULL, "the signature has expired");
			goto out;
		}
	}
	http_conn_trust(c);
	if ((rc = envd_user_of(req, user, sb, &u, why, sizeof(why)))) {
		http_respond_error(c, rc == -2 ? 412 : 401, "%s", why);
		goto out;
	}
	if (!servable(sb)) {
		sandbox_gone(c, sb->rec.id, "the sandbox is not running");
		goto out;
	}
	if (path) {
		abs = envd_resolve_path_as(path, &u);
		if (!abs) {
			http_respond_error(c, 400, "path too long");
			goto out;
		}
	}
	if (get && !abs) {
		http_respond_error(c, 400, "'path' is required");
	} else if (sb->state == SB_RUNNING) {
		if (get)
			envd_files_get(kd, c, req, sb, abs, &u);
		else
			envd_files_post(kd, c, req, sb, abs, &u);
	} else {
		/* paused: resumed first, the body read after */
		struct files_wait *w = calloc(1, sizeof(*w));

		if (!w) {
			http_respond_error(c, 500, "out of memory");
			goto out;
		}
		w->kd = kd;
		w->c = c;
		w->get = get;
		w->user = u;
		w->path = abs;
		abs = NULL;
		sb_wake(kd, c, sb, get ? "envd GET /files" : "envd POST /files", WAKE_HOLD,
		        &files_wake_ops, w);
	}
out:
	free(path);
	free(user);
	free(sig);
	free(exp);
	free(abs);
}

void envd_route(struct http_conn *c, struct http_req *req, struct kilnd *kd)
{
	const char *id = http_header(req, "E2b-Sandbox-Id");
	const char *port_h = http_header(req, "E2b-Sandbox-Port");
	const struct method *m = NULL;
	struct sandbox *sb = NULL;
	char host_id[SB_ID_LEN + 2], why[320];
	int rc;
	struct envd_user u;
	unsigned port = ENVD_PORT;

	if (!id && host_route(req, host_id, sizeof(host_id), &port))
		id = host_id;
	if (port_h) {
		char *end;
		unsigned long p = strtoul(port_h, &end, 10);

		port = *end || p > 65535 ? 0 : (unsigned)p;
	}
	if (port != ENVD_PORT && port != CI_PORT) {
		/* any other port of the sandbox: its own server (net/ports.h) */
		if (!id || !port)
			http_respond_json(
			    c, 502,
			    json_pack("{s:i,s:s}", "code", 502, "message",
			              id ? "bad E2b-Sandbox-Port"
			                 : "no sandbox: send the E2b-Sandbox-Id header"));
		else
			ports_route_envd(kd, c, req, id, port);
		return;
	}
	if (id)
		sb = sb_find(kd, id);
	if (sb && sb->rec.flags & SB_F_POOL)
		sb = NULL; /* not a user's until taken from its pool */
	if (port == CI_PORT) {
		/* checked before the state: a paused sandbox is resumed by it */
		if (sb && !ci_token_ok(kd, req, sb))
			unauthorized(c, NULL,
			             "missing or wrong X-Access-Token or E2B-Traffic-Access-Token "
			             "(the create answer's envdAccessToken, trafficAccessToken)");
		else if (!sb || !servable(sb))
			sandbox_gone(c, id ? id : "",
			             !id   ? "no sandbox: send the E2b-Sandbox-Id header"
			             : !sb ? "sandbox not found"
			                   : "the sandbox is not running");
		else {
			http_conn_trust(c);
			codeint_route(c, req, kd, sb);
		}
		return;
	}
	if (!strncmp(req->path, "/process.Process/", 17) ||
	    !strncmp(req->path, "/filesystem.Filesystem/", 23)) {
		for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
			if (!strcmp(req->path, methods[i].path))
				m = &methods[i];
		if (!m) {
			crpc_respond_error(c, CRPC_UNIMPLEMENTED, "no such method %.200s",
			                   req->path);
			return;
		}
	}
	if (!strcmp(req->path, "/files")) {
		files_route(kd, c, req, sb, id);
		return;
	}
	/* A paused sandbox is resumed by the calls that need it running
	 * (rpc_complete, files_route) */
	if (!sb || !servable(sb) || (!strcmp(req->path, "/health") && sb->state != SB_RUNNING)) {
		sandbox_gone(c, id ? id : "",
		             !id   ? "no sandbox: send the E2b-Sandbox-Id header"
		             : !sb ? "sandbox not found"
		                   : "the sandbox is not running");
		return;
	}
	if (!token_ok(kd, req, sb)) {
		unauthorized(c, m, "missing or wrong X-Access-Token");
		return;
	}
	http_conn_trust(c);
	if (!strcmp(req->path, "/health")) {
		/* a paused sandbox is not running (the SDK's isRunning()), and
		 * is not resumed by it; envd needs no token here, kiln does (the
		 * SDK sends it) */
		http_respond(c, 204, NULL, NULL, NULL, 0);
		return;
	}
	if ((rc = envd_user_of(req, NULL, sb, &u, why, sizeof(why))) == -2 && m) {
		crpc_respond_error(c, CRPC_FAILED_PRECONDITION, "%s", why);
		return;
	}
	if (rc) {
		unauthorized(c, m, why);
		return;
	}
	if (m) {
		rpc_route(kd, c, req, sb, m, &u);
		return;
	}
	if (!strcmp(req->path, "/envs") && req->method == HTTP_GET) {
		http_respond_json(c, 200, json_deep_copy(sb->env));
		return;
	}
	http_respond_error(c, 404, "no such envd endpoint %.200s", req->path);
}
