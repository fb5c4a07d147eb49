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
 * public ports; neither is passed to the guest. The guest's server sees
 * the client as the connection's peer (accept, getpeername: CONNECT's
 * peer trailer): kilnd's TCP client, or the "ADDR:PORT" (IPv6 in
 * brackets) of a Kiln-Peer header from a client with the API key (`kiln
 * port-forward` names its own client so); over the unix socket without
 * one, 127.0.0.1. The HTTP forms also say the address in X-Forwarded-For.
 * A paused sandbox is resumed first. HTTP is relayed as a stream in both
 * directions with bounded buffers, one request per client connection. */
#ifndef KILND_PORTS_H
#define KILND_PORTS_H

#include <stdbool.h>
#include <sys/socket.h>

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
                size_t prefix, const struct sockaddr_storage *peer);
/* ports_tcp.c: GET /sandboxes/ID/tcp/PORT, once sb runs. */
void ports_tcp(struct kilnd *kd, struct http_conn *c, struct sandbox *sb, unsigned port,
               const struct sockaddr_storage *peer);

/* ports_peer.c: the client the guest is to see into ss (AF_UNSPEC: none):
 * Kiln-Peer if keyed (the request has the API key), else c's peer.
 * -EINVAL: a Kiln-Peer that is not ADDR:PORT. */
int ports_peer(struct http_conn *c, const struct http_req *req, bool keyed,
               struct sockaddr_storage *ss);
/* Its address as text (no port); false if it has none. */
bool ports_peer_text(const struct sockaddr_storage *ss, char *out, size_t n);

/* A request header the guest must not see: kilnd's credentials, and the
 * hop-by-hop headers the proxy sets itself. */
bool ports_header_hidden(const struct kilnd *kd, const char *name, const char *value);

#endif
