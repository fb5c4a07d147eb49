/* SPDX-License-Identifier: MIT */
/* The sandbox's resolver: DNS messages from the guest (RFC 1035; over a
 * stream, each behind a 2-byte length), answered by kilnd itself.
 *
 * Only standard queries of one question in class IN are taken. A and AAAA
 * are looked up through the host's resolver if the policy lets the
 * sandbox look the name up (policy.h), and the addresses returned are
 * pinned to the name for domain rules; host.kiln.internal is answered
 * here (when a rule names it). Other types get an empty answer, so
 * nothing but addresses (no TXT, no NULL records) ever comes back: with
 * the rate limit, that is what bounds DNS as a channel out of a sandbox
 * whose traffic is otherwise refused. Answers are built here, the name
 * in the question copied as the guest sent it. */
#include <ares.h>
#include <arpa/nameser.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/net.h>

#include "net/net_int.h"
#include "sandbox/sandbox.h"
#include "util.h"

#define DNS_HDR     12
#define DNS_MSG_MAX 4096 /* a query longer than this is no query */
#define DNS_UDP_MIN 512
#define DNS_ANS_MAX 32  /* addresses in one answer */
#define PIN_MIN_S   300 /* programs keep addresses longer than TTLs say */
#define HOST_TTL    60
#define T_OPT_EDNS  41

struct lookup;

struct dns_stream {
	struct net_sb *ns;
	bool datagram;
	dns_out_fn out;
	void *ctx;
	struct lookup *lookups; /* at the host resolver */
};

struct query {
	uint16_t id, flags, qtype;
	const uint8_t *question; /* name, type, class: copied into the answer */
	size_t qlen;
	bool edns;
	size_t udp_max;
	char name[NET_NAME_MAX + 1];
	bool name_ok;
};

struct lookup {
	struct dns_stream *ds; /* NULL once the stream is gone */
	struct net_sb *ns;
	struct lookup *next;
	struct query q;
	uint8_t question[NET_NAME_MAX + 2 + 4];
};

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* The message's question and EDNS size; -1 if it is no query we answer
 * at all (then it is dropped, as a server drops garbage). */
static int parse(const uint8_t *m, size_t n, struct query *q)
{
	char text[NET_NAME_MAX + 2];
	size_t off = DNS_HDR, tl = 0;
	bool printable = true;

	memset(q, 0, sizeof(*q));
	if (n < DNS_HDR)
		return -1;
	q->id = get16(m);
	q->flags = get16(m + 2);
	if ((q->flags & 0x8000) || get16(m + 4) != 1 || get16(m + 6) || get16(m + 8) ||
	    get16(m + 10) > 1)
		return -1; /* an answer, or not one question */
	while (off < n && m[off]) {
		size_t l = m[off];

		if (l > 63 || off + 1 + l >= n || tl + l + 1 > NET_NAME_MAX + 1)
			return -1; /* a compression pointer or too long */
		for (size_t i = 0; i < l; i++) {
			uint8_t c = m[off + 1 + i];

			printable = printable && c != '.' && c > 0x20 && c < 0x7f;
			text[tl++] = (char)c;
		}
		text[tl++] = '.';
		off += 1 + l;
	}
	if (off + 5 > n)
		return -1;
	off++;
	q->qtype = get16(m + off);
	if (get16(m + off + 2) != 1 /* IN */)
		return -1;
	off += 4;
	q->question = m + DNS_HDR;
	q->qlen = off - DNS_HDR;
	q->udp_max = DNS_UDP_MIN;
	if (get16(m + 10)) { /* EDNS's OPT record: root name, type 41 */
		if (off + 11 > n || m[off] || get16(m + off + 1) != T_OPT_EDNS)
			return -1;
		q->edns = true;
		q->udp_max = get16(m + off + 3) > DNS_UDP_MIN ? get16(m + off + 3) : DNS_UDP_MIN;
		if (q->udp_max > 1232)
			q->udp_max = 1232; /* DNS flag day 2020's size */
	}
	/* A label with a dot or a NUL in it is not a host name we could match. */
	q->name_ok = printable && tl && net_name_norm(text, tl, q->name);
	if (!tl)
		return -1; /* the root */
	return 0;
}

/* The answer: rcode, and n addresses of the query's type. */
static void answer(struct dns_stream *ds, const struct query *q, int rcode, const uint8_t (*a)[16],
                   const uint32_t *ttl, size_t n)
{
	size_t alen = q->qtype == ns_t_a ? 4 : 16, max = ds->datagram ? q->udp_max : 65535, len;
	uint8_t *m = malloc(2 + DNS_HDR + q->qlen + n * (12 + 16) + 11), *p;
	bool tc = false;

	if (!m)
		return;
	if (DNS_HDR + q->qlen + n * (12 + alen) + (q->edns ? 11 : 0) > max) {
		n = 0; /* as UDP: truncated, the guest asks again over TCP */
		tc = true;
	}
	p = m + 2;
	put16(p, q->id);
	/* QR, opcode 0, TC, RD as asked, RA, rcode */
	put16(p + 2, (uint16_t)(0x8000 | (tc ? 0x0200 : 0) | (q->flags & 0x0100) | 0x0080 | rcode));
	put16(p + 4, 1);
	put16(p + 6, (uint16_t)n);
	put16(p + 8, 0);
	put16(p + 10, q->edns ? 1 : 0);
	memcpy(p + DNS_HDR, q->question, q->qlen);
	p += DNS_HDR + q->qlen;
	for (size_t i = 0; i < n; i++) {
		put16(p, 0xc000 | DNS_HDR); /* the question's name */
		put16(p + 2, q->qtype);
		put16(p + 4, 1);
		put32(p + 6, ttl[i]);
		put16(p + 10, (uint16_t)alen);
		memcpy(p + 12, alen == 4 ? a[i] + 12 : a[i], alen);
		p += 12 + alen;
	}
	if (q->edns) {
		memset(p, 0, 11);
		put16(p + 1, T_OPT_EDNS);
		put16(p + 3, 1232);
		p += 11;
	}
	len = (size_t)(p - m) - 2;
	put16(m, (uint16_t)len);
	ds->out(ds->ctx, m, len + 2);
	free(m);
}

static void on_lookup(void *arg, int status, const uint8_t *abuf, int alen)
{
	struct lookup *lk = arg;
	struct dns_stream *ds = lk->ds;
	struct net_sb *ns = lk->ns;
	uint8_t addrs[DNS_ANS_MAX][16] = {{0}};
	uint32_t ttls[DNS_ANS_MAX];
	int n = DNS_ANS_MAX, rc = ns_r_servfail;

	if (ns) /* NULL: the stream is gone */
		ns->dns_inflight--;
	if (ds) {
		for (struct lookup **pp = &ds->lookups; *pp; pp = &(*pp)->next) {
			if (*pp == lk) {
				*pp = lk->next;
				break;
			}
		}
	}
	if (status == ARES_SUCCESS && lk->q.qtype == ns_t_a) {
		struct ares_addrttl v[DNS_ANS_MAX];

		if (ares_parse_a_reply(abuf, alen, NULL, v, &n) == ARES_SUCCESS) {
			for (int i = 0; i < n; i++) {
				addrs[i][10] = addrs[i][11] = 0xff;
				memcpy(addrs[i] + 12, &v[i].ipaddr, 4);
				ttls[i] = (uint32_t)(v[i].ttl > 0 ? v[i].ttl : 0);
			}
			rc = ns_r_noerror;
		}
	} else if (status == ARES_SUCCESS) {
		struct ares_addr6ttl v[DNS_ANS_MAX];

		if (ares_parse_aaaa_reply(abuf, alen, NULL, v, &n) == ARES_SUCCESS) {
			for (int i = 0; i < n; i++) {
				memcpy(addrs[i], &v[i].ip6addr, 16);
				ttls[i] = (uint32_t)(v[i].ttl > 0 ? v[i].ttl : 0);
			}
			rc = ns_r_noerror;
		}
	} else if (status == ARES_ENODATA) {
		rc = ns_r_noerror;
		n = 0;
	} else if (status == ARES_ENOTFOUND) {
		rc = ns_r_nxdomain;
	}
	if (rc != ns_r_noerror)
		n = 0;
	if (ns && rc == ns_r_noerror) {
		int64_t now = now_ms();

		for (int i = 0; i < n; i++)
			net_pins_add(&ns->pins, addrs[i], lk->q.name,
			             now + 1000LL * (ttls[i] > PIN_MIN_S ? ttls[i] : PIN_MIN_S));
	}
	if (ds)
		answer(ds, &lk->q, rc, (const uint8_t(*)[16])addrs, ttls, (size_t)n);
	free(lk);
}

static bool rate_ok(struct net_sb *ns)
{
	ev_tstamp now = ev_now(ns->sb->kd->loop);

	ns->dns_tokens += (now - ns->dns_at) * DNS_RATE;
	if (ns->dns_tokens > DNS_BURST || !ns->dns_at)
		ns->dns_tokens = DNS_BURST;
	ns->dns_at = now;
	if (ns->dns_tokens < 1)
		return false;
	ns->dns_tokens -= 1;
	return true;
}

static void query(struct dns_stream *ds, const uint8_t *m, size_t n)
{
	static const uint8_t h4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 2, 2};
	static const uint8_t h6[16] = KILN_NET_HOST6;
	struct net_sb *ns = ds->ns;
	const struct net_policy *pol = net_sb_policy(ns);
	struct query q;
	struct lookup *lk;
	char why[256];
	uint32_t ttl = HOST_TTL;

	if (parse(m, n, &q))
		return;
	ns->dns_lookups++;
	if ((q.flags >> 11 & 0xf) != 0) {
		answer(ds, &q, ns_r_notimpl, NULL, NULL, 0);
		return;
	}
	if (!rate_ok(ns)) {
		ns->dns_refused++;
		net_log(ns, "DNS: lookup refused: more than %.0f a second (a burst of %.0f)",
		        DNS_RATE, DNS_BURST);
		answer(ds, &q, ns_r_refused, NULL, NULL, 0);
		return;
	}
	if (!q.name_ok) {
		ns->dns_refused++;
		net_log(ns, "DNS: lookup refused: the name has bytes no host name has (NUL, dot or "
		            "space inside a label, or not ASCII)");
		answer(ds, &q, ns_r_nxdomain, NULL, NULL, 0);
		return;
	}
	if (!strcmp(q.name, KILN_NET_HOST_NAME)) {
		if (!net_policy_names_host(pol)) {
			ns->dns_refused++;
			net_log(ns, "DNS: %s: not resolved: no rule names it (--allow-out %s:PORT)",
			        q.name, q.name);
			answer(ds, &q, ns_r_nxdomain, NULL, NULL, 0);
		} else if (q.qtype == ns_t_a || q.qtype == ns_t_aaaa) {
			answer(ds, &q, ns_r_noerror, q.qtype == ns_t_a ? &h4 : &h6, &ttl, 1);
		} else {
			answer(ds, &q, ns_r_noerror, NULL, NULL, 0);
		}
		return;
	}
	if (!net_policy_dns(pol, q.name, why, sizeof(why))) {
		ns->dns_refused++;
		net_log(ns, "DNS: %s: not resolved: %s", q.name, why);
		answer(ds, &q, ns_r_nxdomain, NULL, NULL, 0);
		return;
	}
	if ((q.qtype != ns_t_a && q.qtype != ns_t_aaaa) ||
	    (q.qtype == ns_t_aaaa && !net_host_has_v6(ns->nc))) {
		answer(ds, &q, ns_r_noerror, NULL, NULL, 0); /* addresses only */
		return;
	}
	if (ns->dns_inflight >= DNS_INFLIGHT_MAX || !(lk = calloc(1, sizeof(*lk)))) {
		answer(ds, &q, ns_r_servfail, NULL, NULL, 0);
		return;
	}
	lk->ds = ds;
	lk->ns = ns;
	lk->q = q;
	memcpy(lk->question, q.question, q.qlen);
	lk->q.question = lk->question;
	lk->next = ds->lookups;
	ds->lookups = lk;
	ns->dns_inflight++;
	resolver_query(ns->nc->res, q.name, q.qtype, on_lookup, lk);
}

struct dns_stream *dns_stream_new(struct net_sb *ns, bool datagram, dns_out_fn out, void *ctx)
{
	struct dns_stream *ds = calloc(1, sizeof(*ds));

	if (!ds)
		return NULL;
	ds->ns = ns;
	ds->datagram = datagram;
	ds->out = out;
	ds->ctx = ctx;
	return ds;
}

long dns_stream_input(struct dns_stream *ds, const uint8_t *p, size_t n)
{
	size_t off = 0;

	while (n - off >= 2) {
		size_t len = get16(p + off);

		if (!len || len > DNS_MSG_MAX)
			return -1;
		if (n - off < 2 + len)
			break;
		query(ds, p + off + 2, len);
		off += 2 + len;
	}
	return (long)off;
}

void dns_stream_free(struct dns_stream *ds)
{
	if (!ds)
		return;
	/* Still at the resolver: their answers go nowhere. */
	for (struct lookup *lk = ds->lookups; lk; lk = lk->next) {
		lk->ds = NULL;
		lk->ns->dns_inflight--;
		lk->ns = NULL;
	}
	free(ds);
}
