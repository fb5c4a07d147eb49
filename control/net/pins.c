/* SPDX-License-Identifier: MIT */
/* A sandbox's DNS pins, kept in the store as well as in memory, so that a
 * restarted kilnd lets a re-adopted sandbox reach the addresses its own
 * lookups returned (until their TTL runs out) without a new lookup. The
 * rows are the pins held in memory: a pin displaced when the table is full
 * is deleted, expired ones are dropped when they are loaded. */
#include <string.h>

#include "kilnd.h"
#include "net/net_int.h"
#include "sandbox/sandbox.h"
#include "sandbox/store.h"
#include "util.h"

_Static_assert(NET_PINS_MAX == STORE_PINS_MAX, "the store keeps as many pins as memory");

static void put(struct net_sb *ns, const uint8_t a[16], const char *name, int64_t expires_ms,
                const struct net_pin *old)
{
	struct store *st = ns->sb->kd->store;

	if (old->name[0])
		store_pin_delete(st, ns->sb->rec.id, old->addr, old->name);
	store_pin_put(st, ns->sb->rec.id, a, name, expires_ms);
}

static void batch(struct net_sb *ns, bool begin)
{
	store_pins_batch(ns->sb->kd->store, begin);
}

const struct net_pin_store net_store_pins = {put, batch};

static void loaded(void *ctx, const uint8_t addr[16], const char *name, int64_t expires_ms)
{
	struct net_sb *ns = ctx;
	char norm[NET_NAME_MAX + 1];

	if (net_name_norm(name, strlen(name), norm) && !strcmp(norm, name))
		net_pins_add(&ns->pins, addr, name, expires_ms, NULL);
}

void net_pins_restore(struct net_sb *ns)
{
	if (store_pins_load(ns->sb->kd->store, ns->sb->rec.id, now_ms(), loaded, ns))
		log_warn("sandbox %s: its DNS pins could not be loaded: addresses it looked up"
		         " before are refused until it looks them up again",
		         ns->sb->rec.id);
	else if (ns->pins.n)
		log_info("sandbox %s: %zu DNS pins restored", ns->sb->rec.id, ns->pins.n);
}
