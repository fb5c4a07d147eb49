/* SPDX-License-Identifier: MIT */
/*
 * XXH64, written from the xxHash specification (doc/xxhash_spec.md in
 * github.com/Cyan4973/xxHash). The format's checksums and ids are XXH64 with
 * seed 0. Portable C reaches several GB/s, which keeps checksumming out of
 * the restore budget; libzstd has its own copy but does not export it.
 */
#include <string.h>

#include "internal.h"

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/* Little-endian loads; memcpy keeps unaligned input legal. */
static inline uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t round64(uint64_t acc, uint64_t lane)
{
	acc += lane * P2;
	acc = rotl(acc, 31);
	return acc * P1;
}

static inline uint64_t merge(uint64_t acc, uint64_t v)
{
	acc ^= round64(0, v);
	return acc * P1 + P4;
}

uint64_t snap_xxh64(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf, *end = p + len;
	uint64_t acc;

	if (len >= 32) {
		uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
		const uint8_t *limit = end - 32;

		do {
			v1 = round64(v1, rd64(p));
			v2 = round64(v2, rd64(p + 8));
			v3 = round64(v3, rd64(p + 16));
			v4 = round64(v4, rd64(p + 24));
			p += 32;
		} while (p <= limit);
		acc = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
		acc = merge(acc, v1);
		acc = merge(acc, v2);
		acc = merge(acc, v3);
		acc = merge(acc, v4);
	} else {
		acc = seed + P5;
	}
	acc += (uint64_t)len;

	while (end - p >= 8) {
		acc ^= round64(0, rd64(p));
		acc = rotl(acc, 27) * P1 + P4;
		p += 8;
	}
	if (end - p >= 4) {
		acc ^= (uint64_t)rd32(p) * P1;
		acc = rotl(acc, 23) * P2 + P3;
		p += 4;
	}
	while (p < end) {
		acc ^= (uint64_t)*p * P5;
		acc = rotl(acc, 11) * P1;
		p++;
	}

	acc ^= acc >> 33;
	acc *= P2;
	acc ^= acc >> 29;
	acc *= P3;
	acc ^= acc >> 32;
	return acc;
}

void snap_image_id_from_buf(struct snap_image_id *id, const void *buf, size_t len)
{
	uint64_t h = snap_xxh64(buf, len, 0);

	memset(id, 0, sizeof(*id));
	id->size = len;
	id->alg = SNAP_HASH_XXH64;
	memcpy(id->digest, &h, sizeof(h));
}
