/* SPDX-License-Identifier: MIT */
/* Egress rules and decisions (policy.h says what they mean). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/net.h>

#include "net/policy.h"

static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

struct range {
	uint8_t addr[16];
	int prefix; /* over 128 bits */
	const char *what;
};

#define V4(a, b, c, d, n, what)                                                      \
	{                                                                            \
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d}, 96 + n, what \
	}

/* Most specific first where they nest (::1 inside ::/96). */
static const struct range special[] = {
    V4(0, 0, 0, 0, 8, "an address of 'this network' (0.0.0.0/8)"),
    V4(10, 0, 0, 0, 8, "a private address (10.0.0.0/8)"),
    V4(100, 64, 0, 0, 10, "a carrier-grade NAT address (100.64.0.0/10)"),
    V4(127, 0, 0, 0, 8, "a loopback address of the host (127.0.0.0/8)"),
    V4(169, 254, 0, 0, 16, "a link-local or cloud metadata address (169.254.0.0/16)"),
    V4(172, 16, 0, 0, 12, "a private address (172.16.0.0/12)"),
    V4(192, 0, 0, 0, 24, "an IETF protocol address (192.0.0.0/24)"),
    V4(192, 168, 0, 0, 16, "a private address (192.168.0.0/16)"),
    V4(198, 18, 0, 0, 15, "a benchmarking address (198.18.0.0/15)"),
    V4(224, 0, 0, 0, 4, "a multicast address (224.0.0.0/4)"),
    V4(240, 0, 0, 0, 4, "a reserved or broadcast address (240.0.0.0/4)"),
    {{0}, 128, "the unspecified address (::)"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, "the host's loopback (::1)"},
    {{0}, 96, "an IPv4-compatible address (::/96)"},
    {{0x01, 0, 0, 0, 0, 0, 0, 0}, 64, "a discard address (100::/64)"},
    {{0x20, 0x01, 0, 0}, 32, "a Teredo address (2001::/32)"},
    {{0xfc}, 7, "a private address (fc00::/7)"},
    {{0xfe, 0x80}, 10, "a link-local address (fe80::/10)"},
    {{0xfe, 0xc0}, 10, "a site-local address (fec0::/10)"},
    {{0xff}, 8, "a multicast address (ff00::/8)"},
};

/* ---------------------------------------------------------------- addresses */

bool net_addr_is_v4(const uint8_t a[16])
{
	return !memcmp(a, v4_prefix, 12);
}

static bool in_prefix(const uint8_t a[16], const uint8_t net[16], int prefix)
{
	int full = prefix / 8, rest = prefix % 8;

	if (memcmp(a, net, (size_t)full))
		return false;
	return !rest || !((a[full] ^ net[full]) & (0xff << (8 - rest)));
}

void net_addr_str(const uint8_t a[16], char out[48])
{
	if (!inet_ntop(net_addr_is_v4(a) ? AF_INET : AF_INET6, net_addr_is_v4(a) ? a + 12 : a, out,
	               48))
		snprintf(out, 48, "?");
}

static const char *special_of(const uint8_t a[16], const uint8_t (*host)[16], size_t nhost,
                              int *prefix)
{
	for (size_t i = 0; i < nhost; i++) {
		if (!memcmp(a, host[i], 16)) {
			*prefix = 128;
			return "an address of the host itself";
		}
	}
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
		if (in_prefix(a, special[i].addr, special[i].prefix)) {
			*prefix = special[i].prefix;
			return special[i].what;
		}
	}
	return NULL;
}

const char *net_addr_special(const uint8_t a[16], const uint8_t (*host)[16], size_t nhost,
                             int *prefix)
{
	static const uint8_t nat64[16] = {0, 0x64, 0xff, 0x9b};
	static const uint8_t six2four[16] = {0x20, 0x02};
	const char *what = special_of(a, host, nhost, prefix);
	uint8_t v4[16];

	if (what || net_addr_is_v4(a))
		return what;
	/* IPv6 forms that carry an IPv4 address are judged by it too. */
	memcpy(v4, v4_prefix, 12);
	if (in_prefix(a, nat64, 96))
		memcpy(v4 + 12, a + 12, 4);
	else if (in_prefix(a, six2four, 16))
		memcpy(v4 + 12, a + 2, 4);
	else
		return NULL;
	what = special_of(v4, host, nhost, prefix);
	if (what)
		*prefix = 128; /* only a rule naming the very address opens it */
	return what;
}

/* ---------------------------------------------------------------- names */

bool net_name_norm(const char *s, size_t len, char *out)
{
	size_t label = 0, n = 0;
	bool numeric = true;

	if (len && s[len - 1] == '.')
		len--; /* the root: "example.com." is "example.com" */
	if (!len || len > NET_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '.') {
			if (!label || out[n - 1] == '-')
				return false;
			label = 0;
			numeric = true;
		} else if (isalnum(c) || c == '-' || c == '_') {
			if (++label > 63 || (c == '-' && label == 1))
				return false; /* a label neither starts nor ends with '-' */
			numeric = numeric && isdigit(c);
			c = (unsigned char)tolower(c);
		} else {
			return false; /* NUL, spaces, '*' inside, bytes past ASCII ... */
		}
		out[n++] = (char)c;
	}
	out[n] = 0;
	if (out[n - 1] == '-')
		return false;
	/* A numeric top label is an IPv4 address in a form we do not take. */
	return label && !numeric;
}

static bool name_match(const struct net_rule *r, const char *name)
{
	size_t n = strlen(name), m;

	if (r->kind == NR_DOMAIN)
		return !strcmp(r->name, name);
	if (r->kind != NR_SUFFIX)
		return false;
	m = strlen(r->name);
	return n > m + 1 && name[n - m - 1] == '.' && !strcmp(name + n - m, r->name);
}

/* ---------------------------------------------------------------- rules */

static int bad(char *err, size_t n, const char *fmt, const char *s)
{
	snprintf(err, n, fmt, s);
	return -EINVAL;
}

static int parse_port(const char *p, uint16_t *port)
{
	unsigned long v = 0;

	if (!*p || strlen(p) > 5)
		return -1;
	for (; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (!v || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/* host: an address, a CIDR or a name, into r. */
static int parse_host(char *host, struct net_rule *r, char *err, size_t n)
{
	char *slash = strchr(host, '/');
	uint8_t a[16];
	unsigned long bits = 0;
	bool v4;

	if (slash) {
		*slash++ = 0;
		if (!*slash || strlen(slash) > 3)
			return bad(err, n, "bad prefix length in '%s'", host);
		for (char *p = slash; *p; p++) {
			if (!isdigit((unsigned char)*p))
				return bad(err, n, "bad prefix length in '%s'", host);
			bits = bits * 10 + (unsigned long)(*p - '0');
		}
	}
	memcpy(a, v4_prefix, 12);
	if (inet_pton(AF_INET, host, a + 12) == 1) {
		v4 = true;
	} else if (inet_pton(AF_INET6, host, a) == 1) {
		v4 = false;
	} else {
		char name[NET_NAME_MAX + 1];
		bool suffix = !strncmp(host, "*.", 2);

		if (slash)
			return bad(err, n, "'%s' is not an IP address (IPv4 in dotted decimal)",
			           host);
		if (!net_name_norm(host + (suffix ? 2 : 0), strlen(host) - (suffix ? 2 : 0), name))
			return bad(err, n,
			           "'%s' is neither an IP address (IPv4 in dotted decimal) nor a "
			           "domain name",
			           host);
		if (!strcmp(name, KILN_NET_HOST_NAME)) {
			if (suffix)
				return bad(err, n, "'*.%s' names nothing", KILN_NET_HOST_NAME);
			r->kind = NR_HOST;
		} else {
			r->kind = suffix ? NR_SUFFIX : NR_DOMAIN;
		}
		r->name = strdup(name);
		return r->name ? 0 : -ENOMEM;
	}
	if (!slash)
		bits = v4 ? 32 : 128;
	if (bits > (v4 ? 32u : 128u))
		return bad(err, n, "prefix length too long in '%s'", host);
	r->prefix = (int)bits + (v4 ? 96 : 0);
	r->kind = bits == 0 ? NR_ALL : NR_CIDR;
	for (int i = 0; i < 16; i++) {
		int keep = r->prefix - i * 8;

		r->addr[i] = keep >= 8   ? a[i]
		             : keep <= 0 ? 0
		                         : (uint8_t)(a[i] & (0xff << (8 - keep)));
	}
	return 0;
}

static int rule_text(struct net_rule *r)
{
	char host[300], addr[48];
	bool v6 = false;

	if (r->kind == NR_CIDR || r->kind == NR_ALL) {
		net_addr_str(r->addr, addr);
		v6 = !net_addr_is_v4(r->addr);
		snprintf(host, sizeof(host), "%s/%d", addr, r->prefix - (v6 ? 0 : 96));
	} else {
		snprintf(host, sizeof(host), "%s%s", r->kind == NR_SUFFIX ? "*." : "",
		         r->kind == NR_HOST ? KILN_NET_HOST_NAME : r->name);
	}
	if (!r->port)
		r->text = strdup(host);
	else if (asprintf(&r->text, v6 ? "[%s]:%u" : "%s:%u", host, r->port) < 0)
		r->text = NULL;
	return r->text ? 0 : -ENOMEM;
}

int net_rule_parse(const char *s, size_t len, struct net_rule *r, char *err, size_t errlen)
{
	char buf[320], whole[320], *host = buf, *port = NULL, *c;
	int rc;

	memset(r, 0, sizeof(*r));
	if (memchr(s, 0, len))
		return bad(err, errlen, "a rule has a NUL byte in it%s", "");
	if (!len || len >= sizeof(buf))
		return bad(err, errlen, "a rule must be 1 to 300 bytes%s", "");
	memcpy(buf, s, len);
	buf[len] = 0;
	memcpy(whole, buf, len + 1); /* s has no NUL of its own */
	if (buf[0] == '[') {
		c = strchr(buf, ']');
		if (!c || (c[1] && c[1] != ':'))
			return bad(err, errlen,
			           "bad rule '%s' (an IPv6 one with a port: [ADDR]:PORT)", buf);
		*c = 0;
		host = buf + 1;
		port = c[1] ? c + 2 : NULL;
	} else if ((c = strchr(buf, ':')) && !strchr(c + 1, ':')) {
		*c = 0;
		port = c + 1;
	}
	if (port && parse_port(port, &r->port))
		return bad(err, errlen, "bad port in rule '%s' (1-65535)", whole);
	rc = parse_host(host, r, err, errlen);
	if (!rc)
		rc = rule_text(r);
	if (rc)
		net_rule_free(r);
	return rc;
}

void net_rule_free(struct net_rule *r)
{
	free(r->name);
	free(r->text);
	r->name = r->text = NULL;
}

int net_policy_add(struct net_policy *p, bool allow, const char *s, size_t len, char *err,
                   size_t errlen)
{
	struct net_rule **v = allow ? &p->allow : &p->deny, *nv, r;
	size_t *n = allow ? &p->nallow : &p->ndeny;
	int rc;

	if (*n >= NET_RULES_MAX) {
		snprintf(err, errlen, "at most %d rules in a list", NET_RULES_MAX);
		return -EINVAL;
	}
	rc = net_rule_parse(s, len, &r, err, errlen);
	if (rc)
		return rc;
	nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv) {
		net_rule_free(&r);
		return -ENOMEM;
	}
	nv[(*n)++] = r;
	*v = nv;
	return 0;
}

void net_policy_clear(struct net_policy *p)
{
	for (size_t i = 0; i < p->nallow; i++)
		net_rule_free(&p->allow[i]);
	for (size_t i = 0; i < p->ndeny; i++)
		net_rule_free(&p->deny[i]);
	free(p->allow);
	free(p->deny);
	memset(p, 0, sizeof(*p));
}

int net_policy_copy(struct net_policy *dst, const struct net_policy *src)
{
	char err[8];

	memset(dst, 0, sizeof(*dst));
	dst->internet = src->internet;
	dst->any = src->any;
	for (size_t i = 0; i < src->nallow; i++)
		if (net_policy_add(dst, true, src->allow[i].text, strlen(src->allow[i].text), err,
		                   sizeof(err)))
			goto fail;
	for (size_t i = 0; i < src->ndeny; i++)
		if (net_policy_add(dst, false, src->deny[i].text, strlen(src->deny[i].text), err,
		                   sizeof(err)))
			goto fail;
	return 0;
fail:
	net_policy_clear(dst);
	return -ENOMEM;
}

/* ---------------------------------------------------------------- decisions */

static bool port_ok(const struct net_rule *r, uint16_t port)
{
	return !r->port || r->port == port;
}

/* Does CIDR rule r take a? A special address only if r lies inside its
 * range (sprefix: the range's length, 0 if a is not special). */
static bool cidr_match(const struct net_rule *r, const uint8_t a[16], int sprefix)
{
	if (r->kind == NR_ALL)
		return !sprefix;
	return r->kind == NR_CIDR && in_prefix(a, r->addr, r->prefix) && r->prefix >= sprefix;
}

/* A name the sandbox looked up and got a for, matching rule r. */
static const char *pinned_match(const struct net_rule *r, const struct net_pins *pins,
                                const uint8_t a[16], int64_t now)
{
	for (size_t i = 0; pins && i < pins->n; i++) {
		const struct net_pin *p = &pins->v[i];

		if (p->expires_ms > now && !memcmp(p->addr, a, 16) && name_match(r, p->name))
			return p->name;
	}
	return NULL;
}

static bool is_standin(const uint8_t a[16], const uint8_t v4[4], const uint8_t v6[16])
{
	return net_addr_is_v4(a) ? !memcmp(a + 12, v4, 4) : !memcmp(a, v6, 16);
}

bool net_policy_names_host(const struct net_policy *p)
{
	for (size_t i = 0; i < p->nallow; i++)
		if (p->allow[i].kind == NR_HOST)
			return true;
	return false;
}

enum net_verdict net_policy_check(const struct net_policy *p, const struct net_pins *pins,
                                  const uint8_t a[16], uint16_t port, const uint8_t (*host)[16],
                                  size_t nhost, int64_t now, char *why, size_t whylen)
{
	static const uint8_t h4[4] = KILN_NET_HOST4, h6[16] = KILN_NET_HOST6;
	static const uint8_t r4[4] = KILN_NET_RESOLVER4, r6[16] = KILN_NET_RESOLVER6;
	const char *what, *name;
	char as[48];
	int sprefix = 0;

	net_addr_str(a, as);
	if (is_standin(a, h4, h6)) {
		for (size_t i = 0; i < p->nallow; i++)
			if (p->allow[i].kind == NR_HOST && port_ok(&p->allow[i], port))
				return NV_HOST;
		snprintf(why, whylen,
		         "%s (port %u) is reachable only with a rule naming it, such as "
		         "--allow-out %s:%u",
		         KILN_NET_HOST_NAME, port, KILN_NET_HOST_NAME, port);
		return NV_DENY;
	}
	if (is_standin(a, r4, r6)) {
		if (port == KILN_NET_DNS_PORT)
			return NV_RESOLVER;
		snprintf(why, whylen, "the resolver %s serves DNS only (port 53), not port %u", as,
		         port);
		return NV_DENY;
	}
	if (p->any)
		return NV_ALLOW;
	what = net_addr_special(a, host, nhost, &sprefix);
	if (!what)
		sprefix = 0;
	for (size_t i = 0; i < p->nallow; i++) {
		const struct net_rule *r = &p->allow[i];

		if (!port_ok(r, port))
			continue;
		if (cidr_match(r, a, sprefix))
			return NV_ALLOW;
		if ((name = pinned_match(r, pins, a, now))) {
			if (!what)
				return NV_ALLOW;
			snprintf(why, whylen,
			         "%s resolved to %s, which is %s: a domain rule admits public "
			         "addresses only (allow the address itself to reach it)",
			         name, as, what);
			return NV_DENY;
		}
	}
	for (size_t i = 0; i < p->ndeny; i++) {
		const struct net_rule *r = &p->deny[i];

		if (!port_ok(r, port))
			continue;
		if (r->kind == NR_ALL || cidr_match(r, a, 0) ||
		    (name = pinned_match(r, pins, a, now))) {
			snprintf(why, whylen, "denied by the rule '%s'%s", r->text,
			         r->kind == NR_ALL ? " (all traffic)" : "");
			return NV_DENY;
		}
	}
	if (what) {
		snprintf(why, whylen, "%s is %s; allow it with a rule naming it (--allow-out %s)",
		         as, what, as);
		return NV_DENY;
	}
	if (p->internet)
		return NV_ALLOW;
	snprintf(why, whylen, "internet access is off and no allow rule matches %s port %u", as,
	         port);
	return NV_DENY;
}

bool net_policy_dns(const struct net_policy *p, const char *name, char *why, size_t whylen)
{
	for (size_t i = 0; i < p->nallow; i++)
		if (name_match(&p->allow[i], name))
			return true;
	for (size_t i = 0; i < p->ndeny; i++) {
		if (name_match(&p->deny[i], name)) {
			snprintf(why, whylen, "denied by the rule '%s'", p->deny[i].text);
			return false;
		}
		if (p->deny[i].kind == NR_ALL) {
			snprintf(why, whylen, "all traffic is denied and no allow rule names it");
			return false;
		}
	}
	if (p->internet)
		return true;
	snprintf(why, whylen, "internet access is off and no allow rule names it");
	return false;
}

/* ---------------------------------------------------------------- pins */

bool net_pins_add(struct net_pins *pins, const uint8_t a[16], const char *name, int64_t expires_ms,
                  struct net_pin *evicted)
{
	struct net_pin *p = NULL;
	bool fresh = true;

	if (evicted)
		evicted->name[0] = 0;
	for (size_t i = 0; i < pins->n; i++) {
		if (!memcmp(pins->v[i].addr, a, 16) && !strcmp(pins->v[i].name, name)) {
			p = &pins->v[i];
			fresh = false;
			break;
		}
	}
	if (!p && pins->n < pins->cap) {
		p = &pins->v[pins->n++];
	} else if (!p && pins->cap < NET_PINS_MAX) {
		size_t cap = pins->cap ? pins->cap * 2 : 64;
		struct net_pin *v = realloc(pins->v, cap * sizeof(*v));

		if (!v)
			return false;
		pins->v = v;
		pins->cap = cap;
		p = &pins->v[pins->n++];
	} else if (!p) {
		p = &pins->v[pins->next++ % pins->n]; /* the oldest slot */
		if (evicted)
			*evicted = *p;
	}
	if (!fresh && p->expires_ms >= expires_ms)
		return false;
	memcpy(p->addr, a, 16);
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->expires_ms = expires_ms;
	return true;
}

void net_pins_free(struct net_pins *pins)
{
	free(pins->v);
	memset(pins, 0, sizeof(*pins));
}
