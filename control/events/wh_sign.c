/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include <nettle/hmac.h>

#include "wh_sign.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = 0;
}

void wh_hmac_hex(const void *key, size_t klen, const void *data, size_t dlen,
                 char out[WH_HEX_LEN + 1])
{
	struct hmac_sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];

	hmac_sha256_set_key(&h, klen, key);
	hmac_sha256_update(&h, dlen, data);
	hmac_sha256_digest(&h, sizeof(d), d);
	hex(d, sizeof(d), out);
}

int wh_signature(const void *key, size_t klen, int64_t t, const void *body, size_t blen, char *out,
                 size_t n)
{
	struct hmac_sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	char ts[24], mac[WH_HEX_LEN + 1];
	int len = snprintf(ts, sizeof(ts), "%lld", (long long)t);

	hmac_sha256_set_key(&h, klen, key);
	hmac_sha256_update(&h, (size_t)len, (const uint8_t *)ts);
	hmac_sha256_update(&h, 1, (const uint8_t *)".");
	hmac_sha256_update(&h, blen, body);
	hmac_sha256_digest(&h, sizeof(d), d);
	hex(d, sizeof(d), mac);
	len = snprintf(out, n, "t=%s,v1=%s", ts, mac);
	return len < 0 || (size_t)len >= n ? -1 : len;
}
