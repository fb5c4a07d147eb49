/* SPDX-License-Identifier: MIT */
/* Inbound ports: a TCP server in a sandbox, reached through kilnd over the
 * agent's port streams (agent/agent_port.h), the way E2B's
 * sandbox.getHost(port) reaches one:
 *
 *   Host: PORT-ID.DOMAIN[:N]         any path, HTTP and WebSocket
 *   /sandboxes/ID/ports/PORT/REST     the same, the guest sees /REST
 *   E2b-Sandbox-Id + E2b-Sandbox-Port on the envd listener (envd.c)
 *   GET /sandboxes/ID/tcp/PORT        WebSocket carrying raw TCP bytes
 *                                     (kiln port-forward)
 *
 * DOMAIN is kilnd's --domain (default "localhost"). The API key is needed
 * (X-API-Key or Authorization: Bearer, none over the unix socket), or the
 * sandbox's E2B-Traffic-Access-Token, unless the sandbox was created with
 * public ports; neither is passed to the guest.
 * A paused sandbox is resumed first. HTTP is relayed as a stream in both
 * directions with bounded buffers, one request per client connection. */
#ifndef KILND_PORTS_H
#define KILND_PORTS_H

#include <stdbool.h>

#include "http/http.h"
#include "kilnd.h"
#include "sandbox/sandbox.h"

/* At headers time, before the API's own routes: true if the request is for
 * a sandbox's port (then it is answered, now or later). */
bool ports_route(struct kilnd *kd, struct http_conn *c, struct http_req *req);
/* envd.c: the request names sandbox id and a port that envd does not serve. */
void ports_route_envd(struct kilnd *kd, struct http_conn *c, struct http_req *req, const char *id,
                      unsigned port);
/* The domain getHost() builds on: "domain" in the sandbox's JSON. */
const char *ports_domain(const struct kilnd *kd);

/* ports_http.c: relay the request on c to port of sb (running); prefix is
 * the length of the raw URL's part that named the port (path form), 0 for
 * the Host form. */
void ports_http(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, unsigned port,
                size_t prefix);
/* ports_tcp.c: GET /sandboxes/ID/tcp/PORT, once sb runs. */
void ports_tcp(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, unsigned port);

/* A request header the guest must not see: kilnd's credentials, and the
 * hop-by-hop headers the proxy sets itself. */
bool ports_header_hidden(const struct kilnd *kd, const char *name, const char *value);

#endif
