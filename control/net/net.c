/* SPDX-License-Identifier: MIT */
/* A sandbox's network state in kilnd: its listener (net_lib.c) at its
 * vsock path, its counters; policies to and from JSON; the kilnd-wide
 * context. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/net.h>
#include <kiln/trace.h>

#include "net/net_int.h"
#include "sandbox/sandbox.h"
#include "util.h"

/* ---------------------------------------------------------------- kilnd-wide */

int net_init(struct kilnd *kd, const char *servers)
{
	struct net_ctx *nc = calloc(1, sizeof(*nc));
	int rc;

	if (!nc)
		return -ENOMEM;
	nc->loop = kd->loop;
	nc->trace_fd = kiln_trace_open("kilnd");
	rc = resolver_new(kd->loop, servers, NULL, &nc->res);
	if (rc) {
		free(nc);
		return rc;
	}
	kd->net = nc;
	return 0;
}

void net_fini(struct kilnd *kd)
{
	struct net_ctx *nc = kd->net;

	if (!nc)
		return;
	resolver_free(nc->res);
	if (nc->trace_fd >= 0)
		close(nc->trace_fd);
	free(nc->host);
	free(nc);
	kd->net = NULL;
}

/* ---------------------------------------------------------------- policies */

static int add_list(struct net_policy *p, json_t *list, bool allow, const char *what, char *err,
                    size_t errlen)
{
	size_t i;
	json_t *v;

	if (!list)
		return 0;
	if (!json_is_array(list)) {
		snprintf(err, errlen, "'network.%s' must be an array of strings", what);
		return -EINVAL;
	}
	json_array_foreach(list, i, v)
	{
		char e[200];

		if (!json_is_string(v)) {
			snprintf(err, errlen, "'network.%s' must be an array of strings", what);
			return -EINVAL;
		}
		if (net_policy_add(p, allow, json_string_value(v), json_string_length(v), e,
		                   sizeof(e))) {
			snprintf(err, errlen, "network.%s[%zu]: %s", what, i, e);
			return -EINVAL;
		}
	}
	return 0;
}

int net_policy_from_request(json_t *body, const struct net_policy *base, struct net_policy *out,
                            char *err, size_t errlen)
{
	json_t *net = json_object_get(body, "network");
	json_t *inet = json_object_get(body, "allow_internet_access");

	if (!inet)
		inet = json_object_get(body, "allowInternetAccess");
	memset(out, 0, sizeof(*out));
	out->internet = true;
	if (base && net_policy_copy(out, base)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (inet && !json_is_null(inet)) {
		if (!json_is_boolean(inet)) {
			snprintf(err, errlen, "'allow_internet_access' must be a boolean");
			goto fail;
		}
		out->internet = json_is_true(inet);
	}
	if (net && !json_is_null(net)) {
		if (!json_is_object(net)) {
			snprintf(err, errlen, "'network' must be an object");
			goto fail;
		}
		/* Routing through a proxy, or rewriting requests, would be
		 * promises kiln does not keep: refused, not ignored. */
		if (json_object_get(net, "egressProxy") || json_object_get(net, "rules")) {
			snprintf(err, errlen,
			         "'network.%s' is not supported by kiln (allowOut and "
			         "denyOut are)",
			         json_object_get(net, "egressProxy") ? "egressProxy" : "rules");
			goto fail;
		}
		/* A template's lists are replaced by the request's, not merged. */
		if (json_object_get(net, "allowOut") || json_object_get(net, "denyOut")) {
			bool internet = out->internet;

			net_policy_clear(out);
			out->internet = internet;
		}
		if (add_list(out, json_object_get(net, "allowOut"), true, "allowOut", err,
		             errlen) ||
		    add_list(out, json_object_get(net, "denyOut"), false, "denyOut", err, errlen))
			goto fail;
	}
	return 0;
fail:
	net_policy_clear(out);
	return -EINVAL;
}

json_t *net_policy_to_json(const struct net_policy *p)
{
	json_t *allow = json_array(), *deny = json_array();

	for (size_t i = 0; i < p->nallow; i++)
		json_array_append_new(allow, json_string(p->allow[i].text));
	for (size_t i = 0; i < p->ndeny; i++)
		json_array_append_new(deny, json_string(p->deny[i].text));
	return json_pack("{s:b,s:o,s:o}", "internet", p->internet, "allowOut", allow, "denyOut",
	                 deny);
}

char *net_policy_dump(const struct net_policy *p)
{
	json_t *j = net_policy_to_json(p);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return s;
}

void net_policy_load(const char *text, struct net_policy *out)
{
	json_t *j = text ? json_loads(text, 0, NULL) : NULL, *inet = json_object_get(j, "internet");
	json_t *body = json_object();
	char err[256];

	/* The stored form is a create request's, with "internet" for the flag. */
	if (j)
		json_object_set(body, "network", j);
	if (inet)
		json_object_set(body, "allow_internet_access", inet);
	if (net_policy_from_request(body, NULL, out, err, sizeof(err))) {
		if (text)
			log_warn("net: a stored policy does not parse (%s): internet on, no rules",
			         err);
		memset(out, 0, sizeof(*out));
		out->internet = true;
	}
	json_decref(body);
	json_decref(j);
}

/* ---------------------------------------------------------------- per sandbox */

void net_sb_up(struct sandbox *sb)
{
	struct net_sb *ns = sb->net;
	int err;

	if (!sb->kd->net)
		return;
	if (!ns) {
		ns = sb->net = calloc(1, sizeof(*ns));
		if (!ns)
			return;
		ns->sb = sb;
		ns->nc = sb->kd->net;
		ns->loop = sb->kd->loop;
		ns->id = sb->rec.id;
		ns->console = sb->console_path;
		ns->policy = &sb->policy;
		ns->store = &net_store_pins;
		ns->lfd = -1;
		net_pins_restore(ns);
	}
	if (ns->lfd >= 0)
		return;
	free(ns->lpath);
	if (asprintf(&ns->lpath, "%s_%u", sb->vsock_path, KILN_NET_PORT) < 0) {
		ns->lpath = NULL;
		return;
	}
	/* The jailed VMM connects as its own uid. Only it and kilnd can reach
	 * the path: the data directory is kilnd's alone (0700). */
	if ((err = net_listen(ns, ns->lpath)))
		log_warn("sandbox %s: egress listener %s: %s: no network", sb->rec.id, ns->lpath,
		         strerror(-err));
}

void net_sb_down(struct sandbox *sb)
{
	struct net_sb *ns = sb->net;

	if (!ns)
		return;
	if (ns->lfd >= 0)
		unlink(ns->lpath);
	net_unlisten(ns);
}

void net_sb_free(struct sandbox *sb)
{
	struct net_sb *ns = sb->net;

	if (!ns)
		return;
	net_sb_down(sb);
	net_pins_free(&ns->pins);
	free(ns->lpath);
	free(ns);
	sb->net = NULL;
}

json_t *net_sb_metrics(const struct sandbox *sb)
{
	const struct net_sb *ns = sb->net;
	struct net_sb zero = {0};

	if (!ns)
		ns = &zero;
	return json_pack("{s:I,s:I,s:I,s:I,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:i}", "bytesOut",
	                 (json_int_t)ns->bytes_out, "bytesIn", (json_int_t)ns->bytes_in,
	                 "connections", (json_int_t)ns->connections, "refused",
	                 (json_int_t)ns->refused, "open", (int)ns->nconns, "dnsLookups",
	                 (json_int_t)ns->dns_lookups, "dnsRefused", (json_int_t)ns->dns_refused,
	                 "udpDatagramsOut", (json_int_t)ns->udp_dgrams_out, "udpDatagramsIn",
	                 (json_int_t)ns->udp_dgrams_in, "udpBytesOut",
	                 (json_int_t)ns->udp_bytes_out, "udpBytesIn", (json_int_t)ns->udp_bytes_in,
	                 "udpRefused", (json_int_t)ns->udp_refused, "udpDropped",
	                 (json_int_t)ns->udp_dropped, "udpSockets", (int)ns->nudp);
}

int net_sb_set_policy(struct sandbox *sb, json_t *body, char *err, size_t errlen)
{
	static const char *const fields[] = {"allowOut", "denyOut", "egressProxy", "rules"};
	struct net_policy pol, old;
	json_t *wrap, *net, *v;
	const char *k;
	int rc;

	if (!json_is_object(body)) {
		snprintf(err, errlen,
		         "the body must be a JSON object: {\"allowOut\": [...], "
		         "\"denyOut\": [...], \"allow_internet_access\": bool}");
		return 400;
	}
	net = json_object();
	wrap = json_object();
	if (!net || !wrap) {
		json_decref(net);
		json_decref(wrap);
		snprintf(err, errlen, "out of memory");
		return 500;
	}
	json_object_foreach(body, k, v)
	{
		bool known = false;

		for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
			if (!strcmp(k, fields[i])) {
				json_object_set(net, k, v);
				known = true;
			}
		if (!strcmp(k, "allow_internet_access") || !strcmp(k, "allowInternetAccess")) {
			json_object_set(wrap, k, v);
			known = true;
		}
		if (!known) {
			snprintf(
			    err, errlen,
			    "unknown field '%.64s' (allowOut, denyOut and allow_internet_access "
			    "are)",
			    k);
			json_decref(net);
			json_decref(wrap);
			return 400;
		}
	}
	json_object_set_new(wrap, "network", net);
	rc = net_policy_from_request(wrap, NULL, &pol, err, errlen);
	json_decref(wrap);
	if (rc)
		return rc == -ENOMEM ? 500 : 400;
	old = sb->policy;
	sb->policy = pol;
	if (sb_save(sb)) {
		sb->policy = old;
		net_policy_clear(&pol);
		snprintf(err, errlen, "cannot save the sandbox's policy (the old one holds)");
		return 500;
	}
	net_policy_clear(&old);
	if (sb->net)
		egress_recheck(sb->net);
	log_info("sandbox %s: network policy replaced (internet %s, %zu allow, %zu deny rules)",
	         sb->rec.id, pol.internet ? "on" : "off", pol.nallow, pol.ndeny);
	return 0;
}
