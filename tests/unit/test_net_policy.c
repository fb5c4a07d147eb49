// SPDX-License-Identifier: MIT
/*
 * Unit tests for kilnd's egress policy (control/net/policy.c): how rules are
 * written and refused, and the decision for destinations and DNS names,
 * the bypass forms among them.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/net.h>

#include "../../control/net/policy.h"

static void addr(const char *s, uint8_t a[16])
{
	memset(a, 0, 16);
	if (inet_pton(AF_INET, s, a + 12) == 1) {
		a[10] = a[11] = 0xff;
		return;
	}
	ck_assert_msg(inet_pton(AF_INET6, s, a) == 1, "bad test address %s", s);
}

static struct net_policy mk(bool internet, const char *const *allow, const char *const *deny)
{
	struct net_policy p = {.internet = internet};
	char err[256];

	for (; allow && *allow; allow++)
		ck_assert_msg(!net_policy_add(&p, true, *allow, strlen(*allow), err, sizeof(err)),
		              "%s: %s", *allow, err);
	for (; deny && *deny; deny++)
		ck_assert_msg(!net_policy_add(&p, false, *deny, strlen(*deny), err, sizeof(err)),
		              "%s: %s", *deny, err);
	return p;
}

static enum net_verdict check(const struct net_policy *p, const struct net_pins *pins,
                              const char *dst, uint16_t port)
{
	uint8_t a[16];
	char why[512] = "";
	enum net_verdict v;

	addr(dst, a);
	v = net_policy_check(p, pins, a, port, NULL, 0, 1000, why, sizeof(why));
	if (v == NV_DENY)
		ck_assert_msg(why[0], "a refusal of %s says why", dst);
	return v;
}

START_TEST(rules_parse_and_print)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
	    {"example.com", "example.com"},
	    {"Example.COM.", "example.com"},
	    {"*.example.com:443", "*.example.com:443"},
	    {"10.0.0.0/8", "10.0.0.0/8"},
	    {"10.1.2.3", "10.1.2.3/32"},
	    {"10.1.2.3/8", "10.0.0.0/8"},
	    {"10.1.2.3:8080", "10.1.2.3/32:8080"},
	    {"2001:db8::1", "2001:db8::1/128"},
	    {"[2001:db8::/32]:443", "[2001:db8::/32]:443"},
	    {"0.0.0.0/0", "0.0.0.0/0"},
	    {"host.kiln.internal:8000", "host.kiln.internal:8000"},
	};
	static const char *const bad[] = {
	    "",
	    "127.1",
	    "2130706433",
	    "0x7f.0.0.1",
	    "0177.0.0.1",
	    "a..b",
	    "-",
	    "exa mple.com",
	    "*.host.kiln.internal",
	    "10.0.0.0/33",
	    "[::1/129]",
	    "example.com:0",
	    "example.com:65536",
	    "[::1]x",
	    "*",
	    "ex*ample.com",
	    "1.2.3.4/",
	};
	char err[256];
	struct net_rule r;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(!net_rule_parse(ok[i].in, strlen(ok[i].in), &r, err, sizeof(err)),
		              "%s: %s", ok[i].in, err);
		ck_assert_str_eq(r.text, ok[i].out);
		net_rule_free(&r);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		ck_assert_msg(net_rule_parse(bad[i], strlen(bad[i]), &r, err, sizeof(err)) ==
		                  -EINVAL,
		              "'%s' is refused", bad[i]);
		ck_assert_msg(err[0], "'%s': the refusal says why", bad[i]);
	}
	/* A NUL inside: "evil.com\0.example.com" */
	ck_assert_int_eq(net_rule_parse("evil.com\0.example.com", 21, &r, err, sizeof(err)),
	                 -EINVAL);
}
END_TEST

START_TEST(default_is_public_only)
{
	struct net_policy p = mk(true, NULL, NULL);
	static const char *const refused[] = {
	    "127.0.0.1",
	    "127.8.9.10",
	    "10.1.2.3",
	    "172.16.0.1",
	    "172.31.255.255",
	    "192.168.1.1",
	    "169.254.169.254",
	    "100.64.0.1",
	    "0.0.0.0",
	    "224.0.0.1",
	    "255.255.255.255",
	    "::1",
	    "::",
	    "fe80::1",
	    "fc00::1",
	    "fd00:ec2::254",
	    "ff02::1",
	    "::ffff:127.0.0.1",
	    "::ffff:10.0.0.1",
	    "::127.0.0.1",
	    "64:ff9b::7f00:1",
	    "64:ff9b::a9fe:a9fe",
	    "2002:7f00:1::",
	    "fec0::1",
	    "198.18.0.1",
	    "2001::1",
	};
	static const char *const allowed[] = {"203.0.113.7", "8.8.8.8", "2606:4700::1111",
	                                      "64:ff9b::808:808", "172.32.0.1"};

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		ck_assert_msg(check(&p, NULL, refused[i], 80) == NV_DENY, "%s refused", refused[i]);
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		ck_assert_msg(check(&p, NULL, allowed[i], 80) == NV_ALLOW, "%s allowed",
		              allowed[i]);
	net_policy_clear(&p);
}
END_TEST

START_TEST(host_addresses_refused)
{
	struct net_policy p = mk(true, NULL, NULL);
	uint8_t host[1][16], a[16];
	char why[256];

	addr("203.0.113.1", host[0]);
	addr("203.0.113.1", a);
	ck_assert_int_eq(
	    net_policy_check(&p, NULL, a, 22, (const uint8_t(*)[16])host, 1, 0, why, sizeof(why)),
	    NV_DENY);
	ck_assert_ptr_nonnull(strstr(why, "host"));
	net_policy_clear(&p);
	/* ... unless a rule names the very address */
	p = mk(true, (const char *const[]){"203.0.113.1", NULL}, NULL);
	ck_assert_int_eq(
	    net_policy_check(&p, NULL, a, 22, (const uint8_t(*)[16])host, 1, 0, why, sizeof(why)),
	    NV_ALLOW);
	net_policy_clear(&p);
}
END_TEST

START_TEST(explicit_cidr_opens_a_range_all_traffic_does_not)
{
	struct net_policy p =
	    mk(false, (const char *const[]){"10.0.0.0/8", "0.0.0.0/0", NULL}, NULL);

	ck_assert_int_eq(check(&p, NULL, "10.9.9.9", 80), NV_ALLOW);
	ck_assert_int_eq(check(&p, NULL, "::ffff:10.9.9.9", 80), NV_ALLOW);
	ck_assert_int_eq(check(&p, NULL, "8.8.8.8", 80), NV_ALLOW); /* all traffic */
	ck_assert_int_eq(check(&p, NULL, "127.0.0.1", 80), NV_DENY);
	ck_assert_int_eq(check(&p, NULL, "169.254.169.254", 80), NV_DENY);
	ck_assert_int_eq(check(&p, NULL, "192.168.0.1", 80), NV_DENY);
	net_policy_clear(&p);
}
END_TEST

/* The containerd shim's policy: whatever the pod's network routes,
 * special ranges too; only the host stand-in and the resolver's other
 * ports are refused. A copy keeps it. */
START_TEST(any_allows_every_routed_address)
{
	static const uint8_t h4[4] = KILN_NET_HOST4, r4[4] = KILN_NET_RESOLVER4;
	struct net_policy p = mk(true, NULL, NULL), q;
	char host[16], res[16];

	p.any = true;
	snprintf(host, sizeof(host), "%u.%u.%u.%u", h4[0], h4[1], h4[2], h4[3]);
	snprintf(res, sizeof(res), "%u.%u.%u.%u", r4[0], r4[1], r4[2], r4[3]);
	ck_assert_int_eq(check(&p, NULL, "10.96.0.10", 53), NV_ALLOW);
	ck_assert_int_eq(check(&p, NULL, "127.0.0.1", 80), NV_ALLOW);
	ck_assert_int_eq(check(&p, NULL, "169.254.169.254", 80), NV_ALLOW);
	ck_assert_int_eq(check(&p, NULL, "fd00::1", 80), NV_ALLOW);
	ck_assert_int_eq(check(&p, NULL, "203.0.113.1", 8080), NV_ALLOW);
	ck_assert_int_eq(check(&p, NULL, host, 80), NV_DENY);
	ck_assert_int_eq(check(&p, NULL, res, 53), NV_RESOLVER);
	ck_assert_int_eq(check(&p, NULL, res, 80), NV_DENY);
	ck_assert_int_eq(net_policy_copy(&q, &p), 0);
	ck_assert(q.any);
	ck_assert_int_eq(check(&q, NULL, "192.168.0.1", 80), NV_ALLOW);
	net_policy_clear(&q);
	net_policy_clear(&p);
}
END_TEST

START_TEST(internet_off_and_deny)
{
	struct net_policy p = mk(false, (const char *const[]){"1.1.1.1:53", NULL}, NULL);

	ck_assert_int_eq(check(&p, NULL, "1.1.1.1", 53), NV_ALLOW);
	ck_assert_int_eq(check(&p, NULL, "1.1.1.1", 80), NV_DENY);
	ck_assert_int_eq(check(&p, NULL, "8.8.8.8", 53), NV_DENY);
	net_policy_clear(&p);
	/* E2B's allowlist: deny all traffic, allow some; allow wins. */
	p = mk(true, (const char *const[]){"8.8.8.0/24", NULL},
	       (const char *const[]){"0.0.0.0/0", NULL});
	ck_assert_int_eq(check(&p, NULL, "8.8.8.8", 443), NV_ALLOW);
	ck_assert_int_eq(check(&p, NULL, "9.9.9.9", 443), NV_DENY);
	ck_assert_int_eq(check(&p, NULL, "2606:4700::1111", 443), NV_DENY);
	net_policy_clear(&p);
	p = mk(true, NULL, (const char *const[]){"9.9.9.0/24", NULL});
	ck_assert_int_eq(check(&p, NULL, "9.9.9.9", 443), NV_DENY);
	ck_assert_int_eq(check(&p, NULL, "8.8.8.8", 443), NV_ALLOW);
	net_policy_clear(&p);
}
END_TEST

START_TEST(domains_are_pinned)
{
	struct net_policy p =
	    mk(false, (const char *const[]){"pypi.org", "*.example.com:443", NULL}, NULL);
	struct net_pins pins = {0};
	uint8_t a[16];

	ck_assert_int_eq(check(&p, &pins, "203.0.113.5", 443), NV_DENY); /* not looked up */
	addr("203.0.113.5", a);
	net_pins_add(&pins, a, "pypi.org", 5000, NULL);
	ck_assert_int_eq(check(&p, &pins, "203.0.113.5", 443), NV_ALLOW);
	ck_assert_int_eq(check(&p, &pins, "203.0.113.6", 443), NV_DENY);
	/* The apex is not under *.example.com, and the port counts. */
	addr("203.0.113.7", a);
	net_pins_add(&pins, a, "example.com", 5000, NULL);
	ck_assert_int_eq(check(&p, &pins, "203.0.113.7", 443), NV_DENY);
	net_pins_add(&pins, a, "a.b.example.com", 5000, NULL);
	ck_assert_int_eq(check(&p, &pins, "203.0.113.7", 443), NV_ALLOW);
	ck_assert_int_eq(check(&p, &pins, "203.0.113.7", 80), NV_DENY);
	/* Rebinding: an allowed name that resolved to loopback opens nothing. */
	addr("127.0.0.1", a);
	net_pins_add(&pins, a, "pypi.org", 5000, NULL);
	ck_assert_int_eq(check(&p, &pins, "127.0.0.1", 443), NV_DENY);
	addr("10.0.0.5", a);
	net_pins_add(&pins, a, "pypi.org", 5000, NULL);
	ck_assert_int_eq(check(&p, &pins, "10.0.0.5", 443), NV_DENY);
	/* Expired pins count no more (now is 1000 in check()). */
	addr("203.0.113.9", a);
	net_pins_add(&pins, a, "pypi.org", 900, NULL);
	ck_assert_int_eq(check(&p, &pins, "203.0.113.9", 443), NV_DENY);
	net_pins_free(&pins);
	net_policy_clear(&p);
}
END_TEST

/* What pins.c persists: a change is reported, a pin held already only when
 * it lives longer, and the pin displaced when full. */
START_TEST(pins_report_changes_and_evictions)
{
	struct net_pins pins = {0};
	struct net_pin old;
	uint8_t a[16] = {0}, first[16] = {0};

	ck_assert(net_pins_add(&pins, a, "pypi.org", 5000, &old));
	ck_assert_str_eq(old.name, "");
	ck_assert(!net_pins_add(&pins, a, "pypi.org", 4000, &old));
	ck_assert(!net_pins_add(&pins, a, "pypi.org", 5000, &old));
	ck_assert(net_pins_add(&pins, a, "pypi.org", 6000, &old));
	ck_assert_int_eq(pins.v[0].expires_ms, 6000);
	for (unsigned i = 1; i < NET_PINS_MAX; i++) {
		a[15] = (uint8_t)i;
		a[14] = (uint8_t)(i >> 8);
		ck_assert(net_pins_add(&pins, a, "pypi.org", 5000, &old));
		ck_assert_str_eq(old.name, "");
	}
	ck_assert_uint_eq(pins.n, NET_PINS_MAX);
	a[13] = 1;
	ck_assert(net_pins_add(&pins, a, "example.com", 7000, &old));
	ck_assert_uint_eq(pins.n, NET_PINS_MAX);
	ck_assert_str_eq(old.name, "pypi.org");
	ck_assert_mem_eq(old.addr, first, 16);
	ck_assert_int_eq(old.expires_ms, 6000);
	net_pins_free(&pins);
}
END_TEST

START_TEST(host_and_resolver_standins)
{
	struct net_policy p = mk(true, NULL, NULL);

	ck_assert_int_eq(check(&p, NULL, "10.0.2.2", 8000), NV_DENY);
	ck_assert_int_eq(check(&p, NULL, "10.0.2.3", 53), NV_RESOLVER);
	ck_assert_int_eq(check(&p, NULL, "10.0.2.3", 80), NV_DENY);
	ck_assert_int_eq(check(&p, NULL, "fec0::3", 53), NV_RESOLVER);
	net_policy_clear(&p);
	p = mk(false, (const char *const[]){"host.kiln.internal:8000", NULL}, NULL);
	ck_assert_int_eq(check(&p, NULL, "10.0.2.2", 8000), NV_HOST);
	ck_assert_int_eq(check(&p, NULL, "fec0::2", 8000), NV_HOST);
	ck_assert_int_eq(check(&p, NULL, "10.0.2.2", 8001), NV_DENY);
	ck_assert_int_eq(check(&p, NULL, "127.0.0.1", 8000), NV_DENY);
	ck_assert(net_policy_names_host(&p));
	net_policy_clear(&p);
}
END_TEST

START_TEST(dns_names)
{
	struct net_policy p =
	    mk(false, (const char *const[]){"pypi.org", "*.pythonhosted.org", NULL}, NULL);
	char why[256], n[NET_NAME_MAX + 1];

	ck_assert(net_policy_dns(&p, "pypi.org", why, sizeof(why)));
	ck_assert(net_policy_dns(&p, "files.pythonhosted.org", why, sizeof(why)));
	ck_assert(!net_policy_dns(&p, "evil.com", why, sizeof(why)));
	ck_assert(!net_policy_dns(&p, "pythonhosted.org", why, sizeof(why)));
	net_policy_clear(&p);
	p = mk(true, NULL, (const char *const[]){"*.evil.com", NULL});
	ck_assert(net_policy_dns(&p, "good.com", why, sizeof(why)));
	ck_assert(!net_policy_dns(&p, "x.evil.com", why, sizeof(why)));
	net_policy_clear(&p);
	p = mk(true, NULL, (const char *const[]){"0.0.0.0/0", NULL});
	ck_assert(!net_policy_dns(&p, "good.com", why, sizeof(why)));
	net_policy_clear(&p);
	ck_assert(net_name_norm("PyPI.org.", 9, n));
	ck_assert_str_eq(n, "pypi.org");
	ck_assert(!net_name_norm("a\0b.com", 7, n));
	ck_assert(!net_name_norm("1.2.3.4", 7, n));
	ck_assert(!net_name_norm("a..com", 6, n));
	ck_assert(!net_name_norm(".", 1, n));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("net_policy");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, rules_parse_and_print);
	tcase_add_test(tc, default_is_public_only);
	tcase_add_test(tc, host_addresses_refused);
	tcase_add_test(tc, explicit_cidr_opens_a_range_all_traffic_does_not);
	tcase_add_test(tc, internet_off_and_deny);
	tcase_add_test(tc, any_allows_every_routed_address);
	tcase_add_test(tc, domains_are_pinned);
	tcase_add_test(tc, pins_report_changes_and_evictions);
	tcase_add_test(tc, host_and_resolver_standins);
	tcase_add_test(tc, dns_names);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
