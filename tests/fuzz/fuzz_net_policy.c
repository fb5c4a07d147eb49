/* SPDX-License-Identifier: MIT */
/* libFuzzer: kilnd's egress rules and decisions (control/net/policy.c),
 * which every create request's network lists and every guest hello reach.
 * The input is a rule, a name and an address: parsing must refuse or
 * accept without reading past it, and a decision must always say why a
 * refusal is one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_policy p = {.internet = size & 1};
	struct net_pins pins = {0};
	char err[256], name[NET_NAME_MAX + 1], why[512];
	uint8_t a[16] = {0};
	size_t cut = size / 2;
	char *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size); /* exact size: ASan sees any read past it */
	net_policy_add(&p, true, copy, cut, err, sizeof(err));
	net_policy_add(&p, false, copy + cut, size - cut, err, sizeof(err));
	if (net_name_norm(copy, size, name)) {
		net_policy_dns(&p, name, why, sizeof(why));
		memcpy(a, data, size < 16 ? size : 16);
		net_pins_add(&pins, a, name, 1, NULL);
	}
	memcpy(a, data + (size > 16 ? size - 16 : 0), size < 16 ? size : 16);
	why[0] = 0;
	if (net_policy_check(&p, &pins, a, (uint16_t)size, NULL, 0, 0, why, sizeof(why)) ==
	        NV_DENY &&
	    !why[0])
		abort();
	net_pins_free(&pins);
	net_policy_clear(&p);
	free(copy);
	return 0;
}
