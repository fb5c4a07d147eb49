/* SPDX-License-Identifier: MIT */
/*
 * Guest memory back out of a snapshot: one chunk (lazy restore), all of it
 * in parallel (eager), or into a memfd that clones share (template).
 *
 * Every chunk's stored bytes are checksummed before zstd sees them, and a
 * chunk must decompress to exactly its length. Diffs resolve absent chunks
 * through the attached parent chain.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "internal.h"

#define U(x) ((unsigned long long)(x))

struct snap_chunk_ctx {
	ZSTD_DCtx *dctx;
	uint8_t *cbuf, *bounce;
	size_t cap;
};

struct snap_chunk_ctx *snap_chunk_ctx_new(const struct snap *s)
{
	struct snap_chunk_ctx *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return NULL;
	ctx->dctx = ZSTD_createDCtx();
	if (!ctx->dctx) {
		free(ctx);
		return NULL;
	}
	return ctx;
}

void snap_chunk_ctx_free(struct snap_chunk_ctx *ctx)
{
	if (!ctx)
		return;
	ZSTD_freeDCtx(ctx->dctx);
	free(ctx->cbuf);
	free(ctx->bounce);
	free(ctx);
}

static int chunk_err(const struct snap *s, struct snap_err *err, int ret, uint64_t idx,
                     const char *what)
{
	return snap_errf(err, ret, "snapshot '%s': chunk %llu: %s", s->path, U(idx), what);
}

static int read_err(const struct snap *s, struct snap_err *err, int ret, uint64_t idx)
{
	char what[96];

	snprintf(what, sizeof(what), "read: %s", ret == -ENODATA ? "file shrank" : strerror(-ret));
	return chunk_err(s, err, -EIO, idx, what);
}

/* Chunk idx's stored bytes, their checksum checked: in the mapping, or
 * read into ctx->cbuf. */
static int read_stored(const struct snap *s, struct snap_chunk_ctx *ctx, uint64_t idx,
                       const uint8_t **out, struct snap_err *err)
{
	const struct snap_chunk *c = &s->chunks[idx];
	const uint8_t *p = s->map ? s->map + c->offset : NULL;
	int ret;

	if (!p && ctx->cap < c->stored_len) {
		free(ctx->cbuf);
		ctx->cap = s->max_stored > c->stored_len ? s->max_stored : c->stored_len;
		ctx->cbuf = malloc(ctx->cap);
		if (!ctx->cbuf) {
			ctx->cap = 0;
			return chunk_err(s, err, -ENOMEM, idx, "out of memory");
		}
	}
	if (!p) {
		ret = snap_pread(s->fd, ctx->cbuf, c->stored_len, c->offset);
		if (ret < 0)
			return read_err(s, err, ret, idx);
		p = ctx->cbuf;
	}
	if (snap_xxh64(p, c->stored_len, 0) != c->checksum)
		return chunk_err(s, err, -EIO, idx, "checksum mismatch");
	*out = p;
	return 0;
}

int snap_decode_chunk(const struct snap *s, struct snap_chunk_ctx *ctx, uint64_t idx, void *dst,
                      struct snap_err *err)
{
	const struct snap_chunk *c = &s->chunks[idx];
	uint64_t len = snap_chunk_len_of(s->mi.mem_size, s->chunk_size, idx);
	const uint8_t *src;
	char what[96];
	size_t r;
	int ret;

	if (c->enc == SNAP_ENC_RAW && !s->map) {
		ret = snap_pread(s->fd, dst, len, c->offset);
		if (ret < 0)
			return read_err(s, err, ret, idx);
		if (snap_xxh64(dst, len, 0) != c->checksum)
			return chunk_err(s, err, -EIO, idx, "checksum mismatch");
		return 0;
	}
	ret = read_stored(s, ctx, idx, &src, err);
	if (ret < 0)
		return ret;
	if (c->enc == SNAP_ENC_RAW) {
		memcpy(dst, src, len);
		return 0;
	}
	r = ZSTD_decompressDCtx(ctx->dctx, dst, len, src, c->stored_len);
	if (ZSTD_isError(r)) {
		snprintf(what, sizeof(what), "zstd: %s", ZSTD_getErrorName(r));
		return chunk_err(s, err, -EIO, idx, what);
	}
	if (r != len) {
		snprintf(what, sizeof(what), "decompressed to %zu bytes, expected %llu", r, U(len));
		return chunk_err(s, err, -EIO, idx, what);
	}
	return 0;
}

int snap_read_chunk(const struct snap *s, struct snap_chunk_ctx *ctx, uint64_t idx, void *buf,
                    struct snap_err *err)
{
	struct snap_chunk_ctx *tmp = NULL;
	const struct snap *h;
	int ret;

	if (idx >= s->nchunks)
		return chunk_err(s, err, -EINVAL, idx, "out of range");
	h = snap_holder(s, idx);
	if (!h)
		return chunk_err(s, err, -ENOENT, idx, "not in this diff and no parent attached");
	if (bm_test(h->zero, idx))
		return SNAP_CHUNK_ZERO;
	if (!ctx && !(ctx = tmp = snap_chunk_ctx_new(s)))
		return chunk_err(s, err, -ENOMEM, idx, "out of memory");
	ret = snap_decode_chunk(h, ctx, idx, buf, err);
	snap_chunk_ctx_free(tmp);
	return ret < 0 ? ret : SNAP_CHUNK_DATA;
}

/* ---------------------------------------------------------------------------
 * Parallel restore and verification.
 */
struct rjob {
	const struct snap *s;
	uint8_t *dst; /* NULL: verify only, or into fd */
	int fd;       /* >= 0: pwrite into this file (known empty) */
	bool sums;    /* only check the stored bytes' checksums */
	unsigned flags;
	atomic_uint_fast64_t next;
	atomic_int failed;
	pthread_mutex_t lock;
	int error;
	struct snap_err err;
};

struct rworker {
	struct rjob *job;
};

/* SPARSE: write the pages of src that differ from dst (dst known zero:
 * the non-zero pages, without reading dst). */
static void sparse_copy(uint8_t *dst, const uint8_t *src, uint64_t len, bool dst_zero)
{
	for (uint64_t o = 0; o < len; o += SNAP_PAGE_SIZE) {
		uint64_t n = len - o < SNAP_PAGE_SIZE ? len - o : SNAP_PAGE_SIZE;

		if (dst_zero ? !snap_is_zero(src + o, n) : memcmp(dst + o, src + o, n) != 0)
			memcpy(dst + o, src + o, n);
	}
}

static bool page_zero(const uint8_t *buf, uint64_t len, uint64_t o)
{
	return snap_is_zero(buf + o, len - o < SNAP_PAGE_SIZE ? len - o : SNAP_PAGE_SIZE);
}

/* The non-zero pages of buf into fd at off, a run of them per write. */
static int write_pages(int fd, const uint8_t *buf, uint64_t len, uint64_t off)
{
	uint64_t o = 0;

	while (o < len) {
		uint64_t a;
		int ret;

		while (o < len && page_zero(buf, len, o))
			o += SNAP_PAGE_SIZE;
		if (o >= len)
			break;
		for (a = o; o < len && !page_zero(buf, len, o);)
			o += SNAP_PAGE_SIZE;
		ret = snap_pwrite(fd, buf + a, (o < len ? o : len) - a, off + a);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int restore_one(struct rjob *j, struct snap_chunk_ctx *ctx, uint64_t i, struct snap_err *err)
{
	const struct snap *s = j->s, *h;
	uint64_t len = snap_chunk_len_of(s->mi.mem_size, s->chunk_size, i);
	bool sparse = j->flags & SNAP_RESTORE_SPARSE;
	bool dst_zero = !(j->flags & (SNAP_RESTORE_ZERO_FILL | SNAP_RESTORE_PRESENT_ONLY));
	uint8_t *dst = j->dst ? j->dst + i * s->chunk_size : NULL;
	const uint8_t *stored;
	int ret;

	if (j->sums) {
		if (!(h = snap_holder(s, i)))
			return chunk_err(s, err, -ENOENT, i,
			                 "not in this diff and no parent attached");
		return bm_test(h->zero, i) ? 0 : read_stored(h, ctx, i, &stored, err);
	}
	if (!dst && j->fd >= 0) { /* into a file: every chunk, zero ones left as holes */
		if (!(h = snap_holder(s, i)))
			return chunk_err(s, err, -ENOENT, i,
			                 "not in this diff and no parent attached");
		if (bm_test(h->zero, i))
			return 0;
		if (!ctx->bounce && !(ctx->bounce = malloc(s->chunk_size)))
			return chunk_err(s, err, -ENOMEM, i, "out of memory");
		ret = snap_decode_chunk(h, ctx, i, ctx->bounce, err);
		if (ret == 0 && (ret = write_pages(j->fd, ctx->bounce, len, i * s->chunk_size)) < 0)
			return chunk_err(s, err, ret, i,
			                 ret == -ENOSPC ? "out of memory for guest RAM"
			                                : "writing guest RAM failed");
		return ret;
	}
	if (!dst) /* verify: only this file's own data */
		h = bm_test(s->present, i) && !bm_test(s->zero, i) ? s : NULL;
	else if (j->flags & SNAP_RESTORE_PRESENT_ONLY)
		h = bm_test(s->present, i) ? s : NULL;
	else if (!(h = snap_holder(s, i)))
		return chunk_err(s, err, -ENOENT, i, "not in this diff and no parent attached");
	if (!h)
		return 0;
	if (bm_test(h->zero, i)) {
		if (dst_zero)
			return 0;
		if (sparse)
			for (uint64_t o = 0; o < len; o += SNAP_PAGE_SIZE)
				if (!snap_is_zero(dst + o, SNAP_PAGE_SIZE))
					memset(dst + o, 0, SNAP_PAGE_SIZE);
		if (!sparse)
			memset(dst, 0, len);
		return 0;
	}
	if (dst && !sparse)
		return snap_decode_chunk(h, ctx, i, dst, err);
	if (!ctx->bounce && !(ctx->bounce = malloc(s->chunk_size)))
		return chunk_err(s, err, -ENOMEM, i, "out of memory");
	ret = snap_decode_chunk(h, ctx, i, ctx->bounce, err);
	if (ret == 0 && dst)
		sparse_copy(dst, ctx->bounce, len, dst_zero);
	if (ret == 0 && !dst && snap_xxh64(ctx->bounce, len, 0) != h->chunks[i].content)
		return chunk_err(s, err, -EIO, i, "content hash mismatch after decompressing");
	return ret;
}

static void *rworker(void *arg)
{
	struct rjob *j = ((struct rworker *)arg)->job;
	struct snap_chunk_ctx *ctx = snap_chunk_ctx_new(j->s);
	struct snap_err err;
	int ret = ctx ? 0 : -ENOMEM;

	if (!ctx)
		snap_errf(&err, ret, "snapshot '%s': out of memory", j->s->path);
	while (!ret && !atomic_load(&j->failed)) {
		uint64_t i = atomic_fetch_add(&j->next, 1);

		if (i >= j->s->nchunks)
			break;
		ret = restore_one(j, ctx, i, &err);
	}
	if (ret < 0) {
		atomic_store(&j->failed, 1);
		pthread_mutex_lock(&j->lock);
		if (!j->error) {
			j->error = ret;
			j->err = err;
		}
		pthread_mutex_unlock(&j->lock);
	}
	snap_chunk_ctx_free(ctx);
	return NULL;
}

static int run(const struct snap *s, uint8_t *dst, int fd, bool sums, unsigned threads,
               unsigned flags, struct snap_err *err)
{
	struct rjob j = {.s = s, .dst = dst, .fd = fd, .sums = sums, .flags = flags};
	struct rworker w[256];

	if (!threads)
		threads = snap_default_threads();
	if (threads > 256)
		threads = 256;
	if (threads > s->nchunks)
		threads = (unsigned)s->nchunks;
	atomic_init(&j.next, 0);
	atomic_init(&j.failed, 0);
	pthread_mutex_init(&j.lock, NULL);
	for (unsigned t = 0; t < threads; t++)
		w[t].job = &j;
	snap_parallel(threads, rworker, w, sizeof(w[0]));
	pthread_mutex_destroy(&j.lock);
	if (j.error && err)
		*err = j.err;
	return j.error;
}

int snap_restore_mem(const struct snap *s, void *dst, uint64_t dst_size, unsigned threads,
                     unsigned flags, struct snap_err *err)
{
	if (dst_size < s->mi.mem_size)
		return snap_errf(err, -EINVAL,
		                 "snapshot '%s': needs %llu bytes of memory, got %llu", s->path,
		                 U(s->mi.mem_size), U(dst_size));
	if (snap_is_diff(s) && !s->parent && !(flags & SNAP_RESTORE_PRESENT_ONLY))
		return snap_errf(err, -EINVAL,
		                 "snapshot '%s': a diff snapshot needs its parent attached",
		                 s->path);
	return run(s, dst, -1, false, threads, flags, err);
}

int snap_verify(const struct snap *s, unsigned threads, struct snap_err *err)
{
	return run(s, NULL, -1, false, threads, 0, err);
}

int snap_check_chunks(const struct snap *s, unsigned threads, struct snap_err *err)
{
	return run(s, NULL, -1, true, threads, 0, err);
}

int snap_restore_file(const struct snap *s, int fd, unsigned threads, struct snap_err *err)
{
	if (snap_is_diff(s) && !s->parent)
		return snap_errf(err, -EINVAL,
		                 "snapshot '%s': a diff snapshot needs its parent attached",
		                 s->path);
	return run(s, NULL, fd, false, threads, 0, err);
}

int snap_restore_template(const struct snap *s, int memfd, unsigned threads, bool seal,
                          struct snap_err *err)
{
	uint64_t size = s->mi.mem_size;
	struct stat st;
	int ret;

	if (fstat(memfd, &st) < 0)
		return snap_errf(err, -errno, "template memfd: %s", strerror(errno));
	if ((uint64_t)st.st_size < size && ftruncate(memfd, (off_t)size) < 0)
		return snap_errf(err, -errno, "template memfd: resize: %s", strerror(errno));
	ret = snap_restore_file(s, memfd, threads, err);
	if (ret == 0 && seal &&
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
		ret = snap_errf(err, -errno, "template memfd: seal: %s", strerror(errno));
	return ret;
}
