/* SPDX-License-Identifier: MIT */
/* A sandbox's egress policy: rules, how they are written, and the decision
 * for one destination or one DNS name. Plain data and pure functions (unit
 * tested in tests/unit/test_net_policy.c); net.c keeps one per sandbox.
 *
 * A rule is a domain ("example.com"), every name under a domain
 * ("*.example.com": not the apex), host.kiln.internal, an address or CIDR
 * ("10.1.2.3", "10.0.0.0/8", "2001:db8::/32"), each optionally with a
 * port (":443"; IPv6 as "[2001:db8::1]:443" or "[2001:db8::/32]:443").
 * "0.0.0.0/0" is all traffic, IPv6 too, as in E2B. IPv4 is dotted
 * decimal only: "127.1", "2130706433", "0x7f.0.0.1" and "0177.0.0.1" are
 * refused, as are names with a NUL, an empty label or a numeric top label.
 *
 * Decision for a connection to address A port P:
 *   1. host.kiln.internal's stand-in: allowed iff an allow rule names
 *      host.kiln.internal (and P); it goes to the host's loopback.
 *   2. an allow rule matching: allowed. A CIDR rule opens a special range
 *      (below) only if it lies inside it ("10.0.0.0/8" opens 10/8;
 *      "0.0.0.0/0" opens none of them); a domain rule matches the addresses
 *      the sandbox's own lookups of the domain returned (pins), public ones
 *      only, so a name that resolves to 127.0.0.1 opens nothing.
 *   3. a deny rule matching (CIDR, or a pinned domain): refused.
 *   4. a special address: refused. Loopback, unspecified, this network,
 *      private (10/8, 172.16/12, 192.168/16, fc00::/7), CGNAT (100.64/10),
 *      link-local and metadata (169.254/16, fe80::/10), site-local
 *      (fec0::/10), multicast, reserved (240/4, 0::/8 forms), benchmarking
 *      (198.18/15), the IETF block 192.0.0/24, Teredo, and the host's own
 *      addresses; IPv4 inside IPv6 (::ffff:0:0/96, 64:ff9b::/96, 2002::/16)
 *      is judged as the IPv4 address it carries.
 *   5. otherwise: allowed iff internet access is on.
 * Allow before deny is E2B's order ("allowed entries always take
 * precedence"). A DNS name is looked up iff an allow rule names it, else
 * not if a deny rule does, else iff internet access is on and no deny rule
 * is all traffic: with internet off, lookups cannot carry data out. */
#ifndef KILND_NET_POLICY_H
#define KILND_NET_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NET_RULES_MAX 256 /* per list */
#define NET_NAME_MAX  253
#define NET_PINS_MAX  4096 /* DNS pins per sandbox */

enum net_rule_kind {
	NR_CIDR,   /* addr/prefix, IPv4 as ::ffff:a.b.c.d/96+n */
	NR_ALL,    /* 0.0.0.0/0: everything */
	NR_DOMAIN, /* name exactly */
	NR_SUFFIX, /* names under name */
	NR_HOST,   /* host.kiln.internal */
};

struct net_rule {
	enum net_rule_kind kind;
	uint8_t addr[16];
	int prefix;    /* over 128 bits */
	char *name;    /* lowercased, no trailing dot (NR_DOMAIN, NR_SUFFIX) */
	uint16_t port; /* 0: any */
	char *text;    /* as written back (normalized) */
};

struct net_policy {
	bool internet;
	/* Every destination the network routes (the containerd shim's: a pod's
	 * network namespace is its policy); only the host stand-in is refused. */
	bool any;
	struct net_rule *allow, *deny;
	size_t nallow, ndeny;
};

/* What the sandbox's lookups returned: addr was an answer for name. */
struct net_pin {
	uint8_t addr[16];
	char name[NET_NAME_MAX + 1];
	int64_t expires_ms;
};

struct net_pins {
	struct net_pin *v;
	size_t n, cap, next; /* next: the slot reused when full */
};

/* Parse one rule: 0, or -EINVAL with err saying why. */
int net_rule_parse(const char *s, size_t len, struct net_rule *r, char *err, size_t errlen);
void net_rule_free(struct net_rule *r);
/* Add a rule to a list (deny: domain rules too). 0 or -EINVAL/-ENOMEM. */
int net_policy_add(struct net_policy *p, bool allow, const char *s, size_t len, char *err,
                   size_t errlen);
void net_policy_clear(struct net_policy *p);
int net_policy_copy(struct net_policy *dst, const struct net_policy *src);

/* A name as policy and DNS compare it: lowercase, no trailing dot, only
 * letters, digits, '-' and '_' in labels of 1-63 bytes, at most 253 bytes;
 * false for anything else. out has NET_NAME_MAX + 1 bytes. */
bool net_name_norm(const char *s, size_t len, char *out);

/* Addresses are 16 bytes, IPv4 as ::ffff:a.b.c.d. */
bool net_addr_is_v4(const uint8_t a[16]);
/* The special range a lies in ("loopback", "private" ...), or NULL. host:
 * the host's own addresses (n of them, canonical). *prefix: the range's. */
const char *net_addr_special(const uint8_t a[16], const uint8_t (*host)[16], size_t nhost,
                             int *prefix);
void net_addr_str(const uint8_t a[16], char out[48]);

enum net_verdict {
	NV_ALLOW,
	NV_HOST,     /* allowed, to the host's loopback */
	NV_RESOLVER, /* the resolver: kilnd's own DNS */
	NV_DENY,
};

/* The decision for a port (host order); why: a sentence for
 * the sandbox's log when refused. */
enum net_verdict net_policy_check(const struct net_policy *p, const struct net_pins *pins,
                                  const uint8_t a[16], uint16_t port, const uint8_t (*host)[16],
                                  size_t nhost, int64_t now_ms, char *why, size_t whylen);
/* May the sandbox look name (normalized) up? why as above. */
bool net_policy_dns(const struct net_policy *p, const char *name, char *why, size_t whylen);
bool net_policy_names_host(const struct net_policy *p);

/* Pins a to name until expires_ms (a later expiry of a pin held already
 * wins). True if the pin is new or lives longer now; evicted (may be NULL)
 * gets the pin it displaced when full (at most NET_PINS_MAX, the oldest
 * slot goes), else an empty name. */
bool net_pins_add(struct net_pins *pins, const uint8_t a[16], const char *name, int64_t expires_ms,
                  struct net_pin *evicted);
void net_pins_free(struct net_pins *pins);

#endif
