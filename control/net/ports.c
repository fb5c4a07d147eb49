/* SPDX-License-Identifier: MIT */
/* Inbound ports (ports.h): which requests name a sandbox's port, who may
 * make them, and waiting for a paused sandbox to run. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "envd/codeint.h"
#include "envd/envd.h"
#include "ports.h"
#include "sandbox/wake.h"
#include "util.h"

enum port_kind { PK_HTTP, PK_TCP };

struct port_wait {
	struct kilnd *kd;
	struct http_conn *c;
	enum port_kind kind;
	unsigned port;
	size_t prefix;
	struct sockaddr_storage peer;
};

/* E2B's E2B-Traffic-Access-Token, for sandboxes whose ports are not public. */
static bool traffic_token_ok(const struct kilnd *kd, const struct http_req *req, const char *id)
{
	const char *t = http_header(req, "E2B-Traffic-Access-Token");
	char want[ENVD_TOKEN_LEN + 1];
	unsigned char d = 0;

	if (!t || strlen(t) != ENVD_TOKEN_LEN)
		return false;
	envd_traffic_token(kd, id, want);
	for (size_t i = 0; i < ENVD_TOKEN_LEN; i++)
		d |= (unsigned char)(t[i] ^ want[i]);
	return d == 0;
}

const char *ports_domain(const struct kilnd *kd)
{
	return kd->cfg.domain ? kd->cfg.domain : "localhost";
}

/* "1..65535" exactly, from s up to (not including) end. */
static unsigned parse_port(const char *s, const char *end)
{
	unsigned long v = 0;

	if (s == end || end - s > 5 || *s == '0')
		return 0;
	for (; s < end; s++) {
		if (!isdigit((unsigned char)*s))
			return 0;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	return v <= 65535 ? (unsigned)v : 0;
}

/* Host: "PORT-ID.DOMAIN", with or without a ":N" after it (the listener's
 * port, whatever DOMAIN says about it). */
static bool host_match(const struct kilnd *kd, const struct http_req *req, char *id, unsigned *port)
{
	const char *h = http_header(req, "Host"), *dash, *dot, *dom = ports_domain(kd);
	size_t hl, dl = strcspn(dom, ":");

	if (!h || !(dash = strchr(h, '-')) || !(*port = parse_port(h, dash)))
		return false;
	dot = strchr(dash + 1, '.');
	if (!dot || dot == dash + 1 || (size_t)(dot - dash - 1) > SB_ID_LEN)
		return false;
	hl = strcspn(dot + 1, ":");
	if (hl != dl || strncasecmp(dot + 1, dom, dl))
		return false;
	memcpy(id, dash + 1, (size_t)(dot - dash - 1));
	id[dot - dash - 1] = 0;
	return true;
}

/* The raw URL "/sandboxes/ID/ports/PORT[/...|?...]": *prefix is the length
 * of its part up to PORT. */
static bool path_match(const struct http_req *req, char *id, unsigned *port, size_t *prefix)
{
	static const char lead[] = "/sandboxes/";
	const char *u = req->url, *slash, *end;

	if (strncmp(u, lead, sizeof(lead) - 1))
		return false;
	u += sizeof(lead) - 1;
	slash = strchr(u, '/');
	if (!slash || slash == u || (size_t)(slash - u) > SB_ID_LEN || strncmp(slash, "/ports/", 7))
		return false;
	memcpy(id, u, (size_t)(slash - u));
	id[slash - u] = 0;
	end = slash + 7 + strcspn(slash + 7, "/?");
	*port = parse_port(slash + 7, end);
	*prefix = (size_t)(end - req->url);
	return true; /* a bad port is answered, not passed on */
}

/* The decoded path "/sandboxes/ID/tcp/PORT". */
static bool tcp_match(const struct http_req *req, char *id, unsigned *port)
{
	static const char lead[] = "/sandboxes/";
	const char *u = req->path, *slash;

	if (strncmp(u, lead, sizeof(lead) - 1))
		return false;
	u += sizeof(lead) - 1;
	slash = strchr(u, '/');
	if (!slash || slash == u || (size_t)(slash - u) > SB_ID_LEN || strncmp(slash, "/tcp/", 5))
		return false;
	memcpy(id, u, (size_t)(slash - u));
	id[slash - u] = 0;
	*port = parse_port(slash + 5, slash + 5 + strlen(slash + 5));
	return true;
}

static void pw_run(void *ctx, struct sandbox *sb)
{
	struct port_wait *w = ctx;

	if (w->kind == PK_TCP)
		ports_tcp(w->kd, w->c, sb, w->port, &w->peer);
	else
		ports_http(w->kd, w->c, sb, w->port, w->prefix, &w->peer);
	free(w);
}

static void pw_fail(void *ctx, int status, const char *msg)
{
	struct port_wait *w = ctx;

	http_respond_error(w->c, status, "%s", msg);
	free(w);
}

static void pw_drop(void *ctx)
{
	free(ctx);
}

static const struct wake_ops pw_ops = {.run = pw_run, .fail = pw_fail, .drop = pw_drop};

static void serve(struct kilnd *kd, struct http_conn *c, struct http_req *req, const char *id,
                  unsigned port, enum port_kind kind, size_t prefix)
{
	struct sandbox *sb = sb_find(kd, id);
	struct sockaddr_storage peer;
	struct port_wait *w;
	char what[32];
	bool keyed;

	if (!sb || sb->rec.flags & SB_F_POOL) {
		http_respond_error(c, 404, "sandbox %.64s not found", id);
		return;
	}
	keyed = api_sb_key_ok(kd, req, sb);
	if (!(sb->rec.flags & SB_F_PUBLIC_PORTS) && !keyed &&
	    !traffic_token_ok(kd, req, sb->rec.id)) {
		static const char body[] = "{\"code\":401,\"message\":\"missing or wrong API key "
		                           "(the ports of this sandbox are not public)\"}";

		http_respond(c, 401, "application/json", "WWW-Authenticate: Bearer\r\n", body,
		             sizeof(body) - 1);
		return;
	}
	/* Past the check: no longer held to the unauthenticated budget. */
	http_conn_trust(c);
	if (!port) {
		http_respond_error(c, 400, "bad port: want a number from 1 to 65535");
		return;
	}
	if (ports_peer(c, req, keyed, &peer)) {
		http_respond_error(c, 400,
		                   "bad Kiln-Peer header: want the client's ADDRESS:PORT (an IPv6 "
		                   "address in brackets), port 1 to 65535");
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		http_respond_error(c, 500, "out of memory");
		return;
	}
	*w = (struct port_wait){
	    .kd = kd, .c = c, .kind = kind, .port = port, .prefix = prefix, .peer = peer};
	snprintf(what, sizeof(what), "port %u", port);
	sb_wake(kd, c, sb, what, WAKE_HOLD, &pw_ops, w);
}

bool ports_route(struct kilnd *kd, struct http_conn *c, struct http_req *req)
{
	char id[SB_ID_LEN + 1];
	unsigned port;
	size_t prefix = 0;

	/* envd's and the code interpreter's ports are kilnd's own (envd.c) */
	if (host_match(kd, req, id, &port) && port != ENVD_PORT && port != CI_PORT) {
		serve(kd, c, req, id, port, PK_HTTP, 0);
		return true;
	}
	if (path_match(req, id, &port, &prefix)) {
		serve(kd, c, req, id, port, PK_HTTP, prefix);
		return true;
	}
	if (tcp_match(req, id, &port)) {
		if (req->method != HTTP_GET)
			http_respond_error(c, 405, "GET with a WebSocket upgrade only");
		else
			serve(kd, c, req, id, port, PK_TCP, 0);
		return true;
	}
	return false;
}

void ports_route_envd(struct kilnd *kd, struct http_conn *c, struct http_req *req, const char *id,
                      unsigned port)
{
	serve(kd, c, req, id, port, PK_HTTP, 0);
}
