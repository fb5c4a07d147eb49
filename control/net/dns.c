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

#include "net/dns_msg.h"
#include "net/net_int.h"
#include "util.h"

#define DNS_ANS_MAX 32  /* addresses in one answer */
#define PIN_MIN_S   300 /* programs keep addresses longer than TTLs say */
#define HOST_TTL    60

struct lookup;

struct dns_stream {
	struct net_sb *ns;
	bool datagram;
	dns_out_fn out;
	void *ctx;
	struct lookup *lookups; /* at the host resolver */
};

struct lookup {
	struct dns_stream *ds; /* NULL once the stream is gone */
	struct net_sb *ns;
	struct lookup *next;
	struct dns_query q;
	uint8_t question[NET_NAME_MAX + 2 + 4];
};

static void answer(struct dns_stream *ds, const struct dns_query *q, int rcode,
                   const uint8_t (*a)[16], const uint32_t *ttl, size_t n)
{
	size_t len;
	uint8_t *m = dns_answer(q, ds->datagram, rcode, a, ttl, n, &len);

	if (m)
		ds->out(ds->ctx, m, len);
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

		net_pins_batch(ns, true);
		for (int i = 0; i < n; i++)
			net_pin(ns, addrs[i], lk->q.name,
			        now + 1000LL * (ttls[i] > PIN_MIN_S ? ttls[i] : PIN_MIN_S));
		net_pins_batch(ns, false);
	}
	if (ds)
		answer(ds, &lk->q, rc, (const uint8_t(*)[16])addrs, ttls, (size_t)n);
	free(lk);
}

static bool rate_ok(struct net_sb *ns)
{
	ev_tstamp now = ev_now(ns->loop);

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
	struct dns_query q;
	struct lookup *lk;
	char why[256];
	uint32_t ttl = HOST_TTL;

	if (dns_parse(m, n, &q))
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
		size_t len = dns_get16(p + off);

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
