/* SPDX-License-Identifier: MIT */
/*
 * Guest memory → compressed chunks, on all cores.
 *
 * Workers claim chunks from a shared counter and classify each one: absent
 * (a diff, not dirty), zero (inside a hole of the memfd, or all zero bytes),
 * or data, compressed with ZSTD_compressCCtx into the worker's own buffer
 * (stored raw if zstd does not shrink it). File offsets are then handed out
 * in chunk order under a lock, so chunks land at increasing offsets and the
 * file reads front to back on restore; the pwrite itself runs outside the
 * lock. A worker whose chunk is ready before its predecessor's waits for it,
 * which costs at most one chunk's time per thread.
 *
 * Holes of the memfd are never read: a read fault on a shmem hole allocates
 * a page, so scanning would grow a 40 MiB guest to its full size (and cost a
 * fault, 4-8 us on our hosts, per page). The memfd's data extents come from
 * SEEK_DATA/SEEK_HOLE (page-exact; swapped-out pages count as data), or for
 * anonymous memory from the caller's bitmap of pages; a chunk only partly
 * backed is assembled in a zeroed buffer from its extents.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "internal.h"

struct extent {
	uint64_t start, end;
};

struct cjob {
	const struct snap_save *in;
	const uint8_t *mem;
	int fd;
	uint64_t mem_size, chunk_size, nchunks;
	struct extent *ext; /* memfd data extents; NULL: read everything */
	size_t n_ext;
	int level;
	struct snap_mem_out *out;
	atomic_uint_fast64_t next_claim;

	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t turn;
	uint64_t next_seq; /* the chunk whose offset is handed out next */
	uint64_t cur_off;
	int error;
	struct snap_err err;
	struct snap_write_stats st;
};

struct cworker {
	struct cjob *job;
};

/* The memfd's allocated ranges into j->ext; left NULL (read everything)
 * if the file cannot tell. */
static void data_extents(struct cjob *j, int fd)
{
	struct extent *ext = NULL, *grown;
	size_t n = 0, cap = 0;
	uint64_t pos = 0;

	while (pos < j->mem_size) {
		off_t d = lseek(fd, (off_t)pos, SEEK_DATA), h;

		if ((d < 0 && errno == ENXIO) || (d >= 0 && (uint64_t)d >= j->mem_size))
			break;
		if (d < 0)
			goto unknown;
		h = lseek(fd, d, SEEK_HOLE);
		if (h <= d)
			goto unknown;
		if ((uint64_t)h > j->mem_size)
			h = (off_t)j->mem_size;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			grown = realloc(ext, cap * sizeof(*ext));
			if (!grown)
				goto unknown;
			ext = grown;
		}
		ext[n++] = (struct extent){(uint64_t)d, (uint64_t)h};
		pos = (uint64_t)h;
	}
	j->ext = ext ? ext : malloc(sizeof(*ext)); /* no data at all: empty list */
	j->n_ext = n;
	return;
unknown:
	free(ext);
}

/* The runs of set bits of the caller's page bitmap into j->ext; left NULL
 * (read everything) if out of memory. */
static void page_extents(struct cjob *j, const uint64_t *pages)
{
	uint64_t npages = j->mem_size / SNAP_PAGE_SIZE, p = 0;
	struct extent *ext = NULL, *grown;
	size_t n = 0, cap = 0;

	while (p < npages) {
		uint64_t start;

		for (; p < npages && !bm_test(pages, p); p++)
			;
		if (p == npages)
			break;
		for (start = p; p < npages && bm_test(pages, p); p++)
			;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			grown = realloc(ext, cap * sizeof(*ext));
			if (!grown) {
				free(ext);
				return;
			}
			ext = grown;
		}
		ext[n++] = (struct extent){start * SNAP_PAGE_SIZE, p * SNAP_PAGE_SIZE};
	}
	j->ext = ext ? ext : malloc(sizeof(*ext)); /* no data at all: empty list */
	j->n_ext = n;
}

/* Index of the first extent ending after off (n_ext if none). */
static size_t find_extent(const struct cjob *j, uint64_t off)
{
	size_t lo = 0, hi = j->n_ext;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (j->ext[mid].end <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The chunk's bytes without touching holes: the memory itself when one
 * extent covers it, else bounce with the backed parts copied in; NULL
 * when nothing of it is backed. */
static const uint8_t *chunk_source(const struct cjob *j, uint64_t start, size_t n, uint8_t *bounce)
{
	size_t e = find_extent(j, start);
	uint64_t end = start + n;

	if (e == j->n_ext || j->ext[e].start >= end)
		return NULL;
	if (j->ext[e].start <= start && j->ext[e].end >= end)
		return j->mem + start;
	memset(bounce, 0, n);
	for (; e < j->n_ext && j->ext[e].start < end; e++) {
		uint64_t a = j->ext[e].start > start ? j->ext[e].start : start;
		uint64_t b = j->ext[e].end < end ? j->ext[e].end : end;

		memcpy(bounce + (a - start), j->mem + a, b - a);
	}
	return bounce;
}

static void fail_locked(struct cjob *j, int error, uint64_t idx, const char *what)
{
	if (!j->error) {
		j->error = error;
		snap_errf(&j->err, error, "chunk %llu: %s: %s", (unsigned long long)idx, what,
		          strerror(-error));
	}
	pthread_cond_broadcast(&j->turn);
}

/* Classify and compress chunk i. Returns the stored bytes in data and len
 * (len 0: no data), the entry's encoding, and what the chunk was. */
enum kind { K_ABSENT, K_HOLE, K_ZERO, K_DATA };

static int encode(struct cjob *j, ZSTD_CCtx *cctx, uint8_t *buf, size_t cap, uint8_t *bounce,
                  uint64_t i, const void **data, size_t *len, uint16_t *enc, enum kind *kind)
{
	const uint8_t *src = j->mem + i * j->chunk_size;
	size_t n = snap_chunk_len_of(j->mem_size, j->chunk_size, i);
	size_t r;

	*len = 0;
	*enc = SNAP_ENC_NONE;
	*kind = K_ABSENT;
	if (j->in->dirty_chunks && !bm_test(j->in->dirty_chunks, i))
		return 0;
	*kind = K_HOLE;
	if (j->ext && !(src = chunk_source(j, i * j->chunk_size, n, bounce)))
		return 0;
	*kind = K_ZERO;
	if (snap_is_zero(src, n))
		return 0;
	*kind = K_DATA;
	r = ZSTD_compressCCtx(cctx, buf, cap, src, n, j->level);
	if (ZSTD_isError(r))
		return -EIO;
	if (r >= n) {
		/* Stored as is; a bounce buffer is reused, so keep a copy. */
		if (src == bounce)
			memcpy(buf, bounce, n);
		*data = src == bounce ? buf : src;
		*len = n;
		*enc = SNAP_ENC_RAW;
	} else {
		*data = buf;
		*len = r;
		*enc = SNAP_ENC_ZSTD;
	}
	return 0;
}

static void *worker(void *arg)
{
	struct cjob *j = ((struct cworker *)arg)->job;
	size_t cap = ZSTD_compressBound(j->chunk_size);
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	uint8_t *buf = malloc(cap > j->chunk_size ? cap : j->chunk_size);
	uint8_t *bounce = malloc(j->chunk_size);

	for (;;) {
		uint64_t i = atomic_fetch_add(&j->next_claim, 1), off = 0;
		const void *data = NULL;
		size_t len = 0;
		uint16_t enc = 0;
		enum kind kind = K_ABSENT;
		int ret = -ENOMEM;
		struct snap_chunk *c;

		if (i >= j->nchunks)
			break;
		if (cctx && buf && bounce)
			ret = encode(j, cctx, buf, cap, bounce, i, &data, &len, &enc, &kind);

		pthread_mutex_lock(&j->lock);
		while (j->next_seq != i && !j->error)
			pthread_cond_wait(&j->turn, &j->lock);
		if (ret < 0)
			fail_locked(j, ret, i, ret == -EIO ? "zstd failed" : "no memory");
		if (j->error) {
			pthread_mutex_unlock(&j->lock);
			break;
		}
		c = &j->out->chunks[i];
		if (kind != K_ABSENT)
			bm_set(j->out->present, i);
		if (kind == K_HOLE || kind == K_ZERO)
			bm_set(j->out->zero, i);
		j->st.nabsent += kind == K_ABSENT;
		j->st.nholes += kind == K_HOLE;
		j->st.nzero += kind == K_HOLE || kind == K_ZERO;
		if (len) {
			off = j->cur_off;
			j->cur_off += len;
			j->st.ndata++;
			j->st.nraw += enc == SNAP_ENC_RAW;
			j->st.data_in += snap_chunk_len_of(j->mem_size, j->chunk_size, i);
			j->st.data_out += len;
			c->offset = off;
			c->stored_len = (uint32_t)len;
			c->enc = enc;
		}
		j->next_seq++;
		pthread_cond_broadcast(&j->turn);
		pthread_mutex_unlock(&j->lock);

		if (!len)
			continue;
		/* Only this thread writes entry i from here on. */
		c->checksum = snap_xxh64(data, len, 0);
		ret = snap_pwrite(j->fd, data, len, off);
		if (ret < 0) {
			pthread_mutex_lock(&j->lock);
			fail_locked(j, ret, i, "write");
			pthread_mutex_unlock(&j->lock);
			break;
		}
	}
	ZSTD_freeCCtx(cctx);
	free(buf);
	free(bounce);
	return NULL;
}

int snap_write_memory(int fd, uint64_t data_off, const struct snap_save *in, unsigned shift,
                      int level, struct snap_mem_out *out, struct snap_write_stats *st,
                      struct snap_err *err)
{
	unsigned threads = in->threads ? in->threads : snap_default_threads();
	struct cworker *w = NULL;
	struct cjob j = {
	    .in = in,
	    .mem = in->mem,
	    .fd = fd,
	    .mem_size = in->config->mem_size,
	    .chunk_size = 1ULL << shift,
	    .level = level,
	    .out = out,
	    .cur_off = data_off,
	};
	int ret;

	j.nchunks = (j.mem_size + j.chunk_size - 1) >> shift;
	if (in->mem_fd >= 0)
		data_extents(&j, in->mem_fd);
	else if (in->mem_pages)
		page_extents(&j, in->mem_pages);
	if (threads > j.nchunks)
		threads = (unsigned)j.nchunks;
	w = calloc(threads, sizeof(*w));
	if (!w) {
		free(j.ext);
		return snap_errf(err, -ENOMEM, "out of memory");
	}
	for (unsigned t = 0; t < threads; t++)
		w[t].job = &j;
	pthread_mutex_init(&j.lock, NULL);
	pthread_cond_init(&j.turn, NULL);
	atomic_init(&j.next_claim, 0);

	snap_parallel(threads, worker, w, sizeof(*w));

	ret = j.error;
	if (ret < 0)
		snap_errf(err, ret, "%s", j.err.msg);
	out->data_end = j.cur_off;
	st->nchunks = j.nchunks;
	st->nzero = j.st.nzero;
	st->nholes = j.st.nholes;
	st->nabsent = j.st.nabsent;
	st->ndata = j.st.ndata;
	st->nraw = j.st.nraw;
	st->data_in = j.st.data_in;
	st->data_out = j.st.data_out;
	pthread_cond_destroy(&j.turn);
	pthread_mutex_destroy(&j.lock);
	free(j.ext);
	free(w);
	return ret;
}

void snap_chunks_from_pages(uint64_t *chunks, unsigned chunk_shift, const uint64_t *pages,
                            uint64_t npages, uint64_t first)
{
	for (uint64_t w = 0; w < BM_WORDS(npages); w++) {
		uint64_t bits = pages[w];

		while (bits) {
			uint64_t p = w * 64 + (uint64_t)__builtin_ctzll(bits);

			bits &= bits - 1;
			if (p >= npages)
				break;
			bm_set(chunks, (first + p * SNAP_PAGE_SIZE) >> chunk_shift);
		}
	}
}
