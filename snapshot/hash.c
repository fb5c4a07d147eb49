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

void snap_xxh64_init(struct snap_xxh64_state *st, uint64_t seed)
{
	memset(st, 0, sizeof(*st));
	st->v[0] = seed + P1 + P2;
	st->v[1] = seed + P2;
	st->v[2] = seed;
	st->v[3] = seed - P1;
	st->seed = seed;
}

/* The whole 32-byte stripes of p[0, n) into the four lanes; returns the
 * bytes consumed. */
static size_t stripes(uint64_t v[4], const uint8_t *p, size_t n)
{
	uint64_t v1 = v[0], v2 = v[1], v3 = v[2], v4 = v[3];
	size_t done = 0;

	for (; n - done >= 32; done += 32) {
		v1 = round64(v1, rd64(p + done));
		v2 = round64(v2, rd64(p + done + 8));
		v3 = round64(v3, rd64(p + done + 16));
		v4 = round64(v4, rd64(p + done + 24));
	}
	v[0] = v1;
	v[1] = v2;
	v[2] = v3;
	v[3] = v4;
	return done;
}

void snap_xxh64_update(struct snap_xxh64_state *st, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t done;

	st->total += len;
	if (st->nbuf) {
		size_t take = 32 - st->nbuf < len ? 32 - st->nbuf : len;

		memcpy(st->buf + st->nbuf, p, take);
		st->nbuf += (unsigned)take;
		p += take;
		len -= take;
		if (st->nbuf < 32)
			return;
		stripes(st->v, st->buf, 32);
		st->nbuf = 0;
	}
	done = stripes(st->v, p, len);
	memcpy(st->buf, p + done, len - done);
	st->nbuf = (unsigned)(len - done);
}

uint64_t snap_xxh64_digest(const struct snap_xxh64_state *st)
{
	const uint8_t *p = st->buf, *end = p + st->nbuf;
	uint64_t acc;

	if (st->total >= 32) {
		const uint64_t *v = st->v;

		acc = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
		for (int i = 0; i < 4; i++)
			acc = merge(acc, v[i]);
	} else {
		acc = st->seed + P5;
	}
	acc += st->total;

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

uint64_t snap_xxh64(const void *buf, size_t len, uint64_t seed)
{
	struct snap_xxh64_state st;

	snap_xxh64_init(&st, seed);
	snap_xxh64_update(&st, buf, len);
	return snap_xxh64_digest(&st);
}

void snap_image_id_from_buf(struct snap_image_id *id, const void *buf, size_t len)
{
	uint64_t h = snap_xxh64(buf, len, 0);

	memset(id, 0, sizeof(*id));
	id->size = len;
	id->alg = SNAP_HASH_XXH64;
	memcpy(id->digest, &h, sizeof(h));
}
