/* SPDX-License-Identifier: MIT */
/* Webhook signatures: Kiln-Signature: t=UNIX,v1=HEX, where HEX is
 * HMAC-SHA256(secret, "<t>.<body>") in lower-case hex (control/API.md,
 * "Webhooks", says how a receiver checks it). */
#ifndef KILND_WH_SIGN_H
#define KILND_WH_SIGN_H

#include <stddef.h>
#include <stdint.h>

#define WH_HEX_LEN 64

/* hex(HMAC-SHA256(key, data)), NUL-terminated. */
void wh_hmac_hex(const void *key, size_t klen, const void *data, size_t dlen,
                 char out[WH_HEX_LEN + 1]);
/* The header's value for body signed at time t: "t=...,v1=..."; returns
 * its length, or -1 if out (n bytes) is too small. */
int wh_signature(const void *key, size_t klen, int64_t t, const void *body, size_t blen, char *out,
                 size_t n);

#endif
