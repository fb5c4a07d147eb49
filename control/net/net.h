/* SPDX-License-Identifier: MIT */
/* Sandbox networking in kilnd: egress from the guest under the sandbox's
 * policy (policy.h), and DNS for it (include/kiln/net.h is the protocol).
 *
 * While a sandbox's VMM runs, kilnd listens on "<vsock uds>_1025": every
 * connection there is one guest TCP connection, or one UDP socket's DNS
 * datagrams, or its other datagrams. egress.c reads its hello, decides, connects from the host
 * with a timeout and carries bytes both ways through bounded buffers (a
 * side that cannot take more stops the other from being read); dns.c
 * answers the resolver address through the host's resolver (resolver.c,
 * c-ares in kilnd's loop) and pins the answers for domain rules; udp.c
 * relays a guest UDP socket's datagrams, each judged by the policy.
 * Refusals go to the sandbox's log (console.log, `kiln logs`) with the
 * destination and the reason; counters to GET /sandboxes/{id}/metrics. */
#ifndef KILND_NET_H
#define KILND_NET_H

#include <jansson.h>

#include "net/policy.h"

struct kilnd;
struct sandbox;

/* kilnd-wide: the resolver and the host's own addresses. servers: "ADDR:PORT,..." for
 * c-ares instead of /etc/resolv.conf's, or NULL. 0 or -errno. */
int net_init(struct kilnd *kd, const char *servers);
void net_fini(struct kilnd *kd);

/* The policy a create asks for: E2B's allow_internet_access (or
 * allowInternetAccess) and network.allowOut / network.denyOut, on top of
 * base (a template's, or NULL: internet on, no rules). 0, or -EINVAL
 * with err for the client. */
int net_policy_from_request(json_t *body, const struct net_policy *base, struct net_policy *out,
                            char *err, size_t errlen);
/* PUT /sandboxes/{id}/network (E2B's updateNetwork): body {"allowOut",
 * "denyOut", "allow_internet_access"} replaces the whole policy (what is
 * left out is cleared: internet on, no rules). It is saved, holds for new
 * connections at once, and ends open ones it refuses. 0, or an HTTP status
 * with err. */
int net_sb_set_policy(struct sandbox *sb, json_t *body, char *err, size_t errlen);
/* {"internet": bool, "allowOut": [...], "denyOut": [...]}, as stored. */
json_t *net_policy_to_json(const struct net_policy *p);
char *net_policy_dump(const struct net_policy *p); /* the same as a string */
/* A stored one back; NULL or bad: internet on, no rules. */
void net_policy_load(const char *json, struct net_policy *out);

/* The sandbox's VMM is up (listen) or gone (stop, drop its connections). */
void net_sb_up(struct sandbox *sb);
void net_sb_down(struct sandbox *sb);
void net_sb_free(struct sandbox *sb);
/* Counters: bytes each way, connections, refusals, DNS lookups, UDP. */
json_t *net_sb_metrics(const struct sandbox *sb);

#endif
