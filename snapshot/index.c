/* SPDX-License-Identifier: MIT */
/*
 * The memory index: which chunks a file holds, which are zero, and where
 * each stored chunk lies. Validated whole at open, so that reading chunk i
 * later is one lookup with no further bounds arithmetic.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "internal.h"

#define U(x) ((unsigned long long)(x))

static int check_bitmaps(const struct snap *s, struct snap_err *err)
{
	uint64_t words = BM_WORDS(s->nchunks), tail = s->nchunks % 64;
	uint64_t mask = tail ? ~0ULL << tail : 0;
	bool diff = s->hdr.flags & SNAP_F_DIFF;

	for (uint64_t w = 0; w < words; w++) {
		uint64_t valid = w == words - 1 ? ~mask : ~0ULL;

		if ((s->present[w] | s->zero[w]) & ~valid)
			return snap_errf(err, -EINVAL, "memory index: bits set past chunk %llu",
			                 U(s->nchunks));
		if (s->zero[w] & ~s->present[w])
			return snap_errf(
			    err, -EINVAL, "memory index: chunk %llu is zero but absent",
			    U(w * 64 + (uint64_t)__builtin_ctzll(s->zero[w] & ~s->present[w])));
		if (!diff && s->present[w] != valid)
			return snap_errf(
			    err, -EINVAL, "memory index: chunk %llu absent from a full snapshot",
			    U(w * 64 + (uint64_t)__builtin_ctzll(~s->present[w] & valid)));
	}
	return 0;
}

static int check_chunks(struct snap *s, struct snap_err *err)
{
	static const struct snap_chunk none;
	uint64_t prev_end = s->data_off, data_end = s->data_off + s->data_len;
	uint64_t nzero = 0, ndata = 0;

	for (uint64_t i = 0; i < s->nchunks; i++) {
		const struct snap_chunk *c = &s->chunks[i];
		uint64_t len = snap_chunk_len_of(s->mi.mem_size, s->chunk_size, i);

		if (!bm_test(s->present, i) || bm_test(s->zero, i)) {
			nzero += bm_test(s->zero, i);
			if (memcmp(c, &none, sizeof(none)))
				return snap_errf(err, -EINVAL,
				                 "chunk %llu: has an entry but no data", U(i));
			continue;
		}
		ndata++;
		if (c->reserved || c->stored_len == 0 ||
		    (c->enc == SNAP_ENC_RAW && c->stored_len != len) ||
		    (c->enc == SNAP_ENC_ZSTD && c->stored_len > ZSTD_compressBound(len)) ||
		    (c->enc != SNAP_ENC_RAW && c->enc != SNAP_ENC_ZSTD))
			return snap_errf(err, -EINVAL, "chunk %llu: encoding %u with %u bytes",
			                 U(i), c->enc, c->stored_len);
		if (c->offset < s->data_off || c->offset > data_end ||
		    c->stored_len > data_end - c->offset)
			return snap_errf(err, -EINVAL,
			                 "chunk %llu: bytes [%llu, %llu) outside the memory data "
			                 "section [%llu, %llu)",
			                 U(i), U(c->offset), U(c->offset + c->stored_len),
			                 U(s->data_off), U(data_end));
		/* Version 3: a chunk kept from an older generation lies before
		 * the ones written after it. */
		if (c->offset < prev_end && s->hdr.version != SNAP_FORMAT_VERSION)
			return snap_errf(err, -EINVAL,
			                 "chunk %llu: at byte %llu, overlaps or precedes the chunk "
			                 "before it (ends at %llu)",
			                 U(i), U(c->offset), U(prev_end));
		prev_end = c->offset + c->stored_len;
		if (c->stored_len > s->max_stored)
			s->max_stored = c->stored_len;
	}
	if (nzero != s->mi.nzero || ndata != s->mi.ndata)
		return snap_errf(
		    err, -EINVAL,
		    "memory index: counts %llu zero / %llu data, bitmaps say %llu / %llu",
		    U(s->mi.nzero), U(s->mi.ndata), U(nzero), U(ndata));
	return 0;
}

int snap_load_index(struct snap *s, uint32_t sec, struct snap_err *err)
{
	const struct snap_section *e = &s->sec[sec];
	const uint8_t *p;
	uint64_t words, want;
	int ret;

	if (e->length < sizeof(s->mi))
		return snap_errf(err, -EINVAL, "memory index: %llu bytes, too short", U(e->length));
	s->index = malloc(e->length);
	if (!s->index)
		return snap_errf(err, -ENOMEM, "out of memory");
	ret = snap_pread(s->fd, s->index, e->length, e->offset);
	if (ret < 0)
		return snap_errf(err, ret, "memory index: read: %s", strerror(-ret));
	if (snap_xxh64(s->index, e->length, 0) != e->checksum)
		return snap_errf(err, -EBADMSG, "section %u (memory index): checksum mismatch",
		                 sec);
	memcpy(&s->mi, s->index, sizeof(s->mi));
	if (s->mi.mem_size != s->hdr.config.mem_size)
		return snap_errf(err, -EINVAL,
		                 "memory index: %llu bytes of memory, config says %llu",
		                 U(s->mi.mem_size), U(s->hdr.config.mem_size));
	if (s->mi.chunk_shift < SNAP_CHUNK_SHIFT_MIN || s->mi.chunk_shift > SNAP_CHUNK_SHIFT_MAX ||
	    s->mi.codec != SNAP_CODEC_ZSTD || s->mi.reserved[0] || s->mi.reserved[1])
		return snap_errf(err, -EINVAL, "memory index: chunk shift %u, codec %u",
		                 s->mi.chunk_shift, s->mi.codec);
	s->chunk_size = 1ULL << s->mi.chunk_shift;
	s->nchunks = (s->mi.mem_size + s->chunk_size - 1) >> s->mi.chunk_shift;
	if (s->mi.nchunks != s->nchunks)
		return snap_errf(err, -EINVAL, "memory index: %u chunks, memory needs %llu",
		                 s->mi.nchunks, U(s->nchunks));
	words = BM_WORDS(s->nchunks);
	want = sizeof(s->mi) + 2 * words * 8 + s->nchunks * sizeof(struct snap_chunk);
	if (e->length != want)
		return snap_errf(err, -EINVAL, "memory index: %llu bytes, %llu chunks need %llu",
		                 U(e->length), U(s->nchunks), U(want));
	p = (const uint8_t *)s->index + sizeof(s->mi);
	s->present = (const uint64_t *)p;
	s->zero = (const uint64_t *)(p + words * 8);
	s->chunks = (const struct snap_chunk *)(p + 2 * words * 8);
	ret = check_bitmaps(s, err);
	return ret ? ret : check_chunks(s, err);
}

uint64_t snap_chunk_len(const struct snap *s, uint64_t idx)
{
	return idx < s->nchunks ? snap_chunk_len_of(s->mi.mem_size, s->chunk_size, idx) : 0;
}

void snap_mem_info(const struct snap *s, struct snap_mem_info *info)
{
	memset(info, 0, sizeof(*info));
	info->mem_size = s->mi.mem_size;
	info->chunk_size = s->chunk_size;
	info->nchunks = s->nchunks;
	info->chunk_shift = s->mi.chunk_shift;
	info->level = s->mi.level;
	for (uint64_t i = 0; i < s->nchunks; i++) {
		if (!bm_test(s->present, i))
			continue;
		info->npresent++;
		if (bm_test(s->zero, i)) {
			info->nzero++;
			continue;
		}
		info->ndata++;
		info->nraw += s->chunks[i].enc == SNAP_ENC_RAW;
		info->stored_bytes += s->chunks[i].stored_len;
	}
}
