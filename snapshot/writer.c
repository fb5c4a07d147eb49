/* SPDX-License-Identifier: MIT */
/*
 * Writing a snapshot file: lay out the sections, write the state payloads,
 * the memory chunks (compress.c), the chunk index, and last the header and
 * section table, into a temporary file that is fsynced and renamed over the
 * final name, so a crash never leaves half a snapshot under that name.
 *
 * Defaults, measured with tools/bench/snapbench.c on the 2-core PVM dev host
 * (256 MiB guest, 40 MiB of mixed code/text/heap/random data, see there):
 * chunk 256 KiB and zstd level 1. Larger chunks compress a little better but
 * a lazy-restore fault has to decompress a whole chunk, and zero detection
 * gets coarser; smaller ones cost ratio and index size. Level 3 buys a few
 * percent of size for about twice the compression time.
 *
 * Again on the memory of a VM running `snaptest touch 40` (42 MiB of data
 * chunks; stored bytes / non-zero bytes, and one core's CPU time): level -7
 * 0.67 in 138 ms, -3 0.56 / 159 ms, -1 0.56 / 168 ms, 1 0.49 / 185 ms, 3
 * 0.49 / 403 ms, 6 0.47 / 1.1 s, 12 0.47 / 6.2 s, 16 0.41 / 13 s. Fast
 * (negative) levels save at most a quarter of the time for a third more
 * bytes; only the optimal parsers (16 and up) reach 0.41, 70 times slower.
 * Chunk size at level 1: 64 KiB 0.51, 256 KiB 0.49, 2 MiB 0.48. So level 1
 * stays, and the time goes instead into not compressing what an older
 * snapshot already holds (snap_save.ref, compress.c). Smaller zstd blocks
 * (16 KiB, compress.c, new_cctx()) store 12% fewer bytes of this memory
 * at level 1, and cost nothing in size on a real Python heap; with 4 KiB
 * blocks, level 2 and 5 store only 2% and 3% less than level 1, for twice
 * and four times the time.
 *
 * A later snapshot to ref's own file (snap_save.append) appends a
 * generation instead (append()): ref's chunks stay where they are, so its
 * cost is what changed, not the ~16 MiB of unchanged chunks a new file had
 * to copy (3 of 167 data chunks change between pauses of an idle 256 MiB
 * guest). Two fsyncs then: the appended bytes before the header slot
 * names them, and the slot.
 *
 * fsync: kept by default. After a pause the VMM is killed and this file is
 * the sandbox's only copy, so it must survive a host crash. On the dev
 * host's ext4 (virtio disk) the fsync of an 18 MiB snapshot takes ~40 ms;
 * starting writeback early (sync_file_range as chunks are written) cut it
 * to ~29 ms but slowed the writes by more, so it is not done. On tmpfs
 * fsync costs nothing. Callers that keep the VMM, or write to tmpfs, may
 * pass no_fsync.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct layout {
	struct snap_section *sec;
	uint32_t nsec;
	uint64_t off; /* next free byte */
};

/* Generations of one file at most; the writer compacts long before. */
#define SNAP_MAX_GENERATION (1ULL << 32)

static int check_input(const struct snap_save *in, unsigned *shift, struct snap_err *err)
{
	const struct snap_vm_config *c = in->config;
	uint32_t slots = 0;

	if (!c || !in->vcpus || !in->vm || !in->mem || (c->nr_devices && !in->devs))
		return snap_errf(err, -EINVAL, "incomplete snapshot input");
	if (!c->nr_vcpus || c->nr_vcpus > SNAP_MAX_VCPUS)
		return snap_errf(err, -EINVAL, "%u vCPUs (1..%u)", c->nr_vcpus, SNAP_MAX_VCPUS);
	if (!c->mem_size || c->mem_size > SNAP_MAX_MEM || c->mem_size % SNAP_PAGE_SIZE ||
	    c->mem_low_size > c->mem_size)
		return snap_errf(err, -EINVAL, "bad memory size %llu (low %llu)",
		                 (unsigned long long)c->mem_size,
		                 (unsigned long long)c->mem_low_size);
	if (c->nr_devices > SNAP_MAX_DEVICES)
		return snap_errf(err, -EINVAL, "%u devices (max %u)", c->nr_devices,
		                 SNAP_MAX_DEVICES);
	if (in->format && in->format != SNAP_FORMAT_V2)
		return snap_errf(err, -EINVAL, "format version %u (%u, or 0: %u)", in->format,
		                 SNAP_FORMAT_V2, SNAP_FORMAT_VERSION);
	for (uint32_t d = 0; d < c->nr_devices; d++) {
		uint32_t slot = c->devices[d].slot;

		if (slot >= SNAP_MAX_DEVICES || (slots & (1u << slot)))
			return snap_errf(err, -EINVAL, "device %u: bad or repeated slot %u", d,
			                 slot);
		slots |= 1u << slot;
		if (in->devs[d].len > SNAP_MAX_DEV_STATE || (in->devs[d].len && !in->devs[d].data))
			return snap_errf(err, -EINVAL, "device in slot %u: state of %u bytes", slot,
			                 in->devs[d].len);
	}
	for (uint32_t v = 0; v < c->nr_vcpus; v++)
		if (in->vcpus[v].nmsrs > SNAP_MAX_MSRS ||
		    in->vcpus[v].xsave_size > SNAP_KVM_XSAVE_SIZE)
			return snap_errf(err, -EINVAL, "vcpu %u: %u MSRs, xsave %u bytes", v,
			                 in->vcpus[v].nmsrs, in->vcpus[v].xsave_size);

	*shift = in->chunk_shift ? in->chunk_shift : SNAP_DEFAULT_CHUNK_SHIFT;
	if (in->ref && !in->chunk_shift)
		*shift = in->ref->mi.chunk_shift;
	if (!in->parent != !in->dirty_chunks)
		return snap_errf(err, -EINVAL, "a diff snapshot needs both parent and dirty map");
	if (in->parent) {
		int ret = snap_check_compat(in->parent, c, err);

		if (ret < 0)
			return ret;
		if (in->chunk_shift && in->chunk_shift != in->parent->mi.chunk_shift)
			return snap_errf(err, -EINVAL, "diff chunk size must be the parent's");
		*shift = in->parent->mi.chunk_shift;
	}
	if (in->holes_from_ref &&
	    (!in->ref || (in->mem_fd < 0 && !in->mem_pages) || *shift != in->ref->mi.chunk_shift ||
	     in->ref->mi.mem_size != c->mem_size))
		return snap_errf(err, -EINVAL,
		                 "memory partly held by an older snapshot needs that snapshot, "
		                 "the memfd or page bitmap, and the same memory and chunk size");
	if (*shift < SNAP_CHUNK_SHIFT_MIN || *shift > SNAP_CHUNK_SHIFT_MAX)
		return snap_errf(err, -EINVAL, "chunk shift %u (%u..%u)", *shift,
		                 SNAP_CHUNK_SHIFT_MIN, SNAP_CHUNK_SHIFT_MAX);
	return 0;
}

/* Write one state payload at the next aligned offset and record it. */
static int put_section(int fd, struct layout *l, uint32_t type, uint32_t version, uint32_t instance,
                       const void *data, uint64_t len)
{
	struct snap_section *s = &l->sec[l->nsec++];
	int ret;

	l->off = align_up(l->off, SNAP_SECTION_ALIGN);
	*s = (struct snap_section){
	    .type = type,
	    .version = version,
	    .instance = instance,
	    .offset = l->off,
	    .length = len,
	    .checksum = snap_xxh64(data, len, 0),
	};
	ret = snap_pwrite(fd, data, len, l->off);
	l->off += len;
	return ret;
}

/* The chunk index: header, present and zero bitmaps, entries. */
static int put_index(int fd, struct layout *l, const struct snap_mem_index *mi,
                     const struct snap_mem_out *mo)
{
	uint64_t words = BM_WORDS(mi->nchunks);
	uint64_t len = sizeof(*mi) + 2 * words * 8 + mi->nchunks * sizeof(struct snap_chunk);
	uint8_t *buf = malloc(len), *p = buf;
	int ret;

	if (!buf)
		return -ENOMEM;
	memcpy(p, mi, sizeof(*mi));
	p += sizeof(*mi);
	memcpy(p, mo->present, words * 8);
	p += words * 8;
	memcpy(p, mo->zero, words * 8);
	p += words * 8;
	memcpy(p, mo->chunks, mi->nchunks * sizeof(struct snap_chunk));
	ret = put_section(fd, l, SNAP_SEC_MEM_INDEX, SNAP_MEM_INDEX_VERSION, 0, buf, len);
	free(buf);
	return ret;
}

static int sync_dir(const char *path)
{
	char *copy = strdup(path);
	int fd, ret = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		ret = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return ret;
}

/* The state sections: vCPUs, VM, devices. */
static int put_state(int fd, const struct snap_save *in, struct layout *l)
{
	const struct snap_vm_config *c = in->config;
	int ret;

	for (uint32_t v = 0; v < c->nr_vcpus; v++) {
		ret = put_section(fd, l, SNAP_SEC_VCPU, SNAP_VCPU_STATE_VERSION, v, &in->vcpus[v],
		                  sizeof(in->vcpus[v]));
		if (ret < 0)
			return ret;
	}
	ret = put_section(fd, l, SNAP_SEC_VM, SNAP_VM_STATE_VERSION, 0, in->vm, sizeof(*in->vm));
	for (uint32_t d = 0; d < c->nr_devices && ret == 0; d++)
		ret = put_section(fd, l, SNAP_SEC_DEVICE, in->devs[d].version, c->devices[d].slot,
		                  in->devs[d].data, in->devs[d].len);
	return ret;
}

/*
 * Everything but the header: version 2 (in->format) state, memory from the
 * next 4 KiB boundary, index; version 3 memory from data_off (a 4 KiB
 * boundary: SNAP_BODY_OFFSET, or the end of the file a generation is
 * appended to), state, index, and the section table after them, its entry
 * for the memory spanning every generation's chunks.
 */
static int write_body(int fd, const struct snap_save *in, unsigned shift, uint64_t data_off,
                      bool keep, struct snap_header *h, struct layout *l,
                      struct snap_write_stats *st, struct snap_err *err)
{
	const struct snap_vm_config *c = in->config;
	bool v2 = in->format == SNAP_FORMAT_V2;
	struct snap_mem_index mi = {
	    .mem_size = c->mem_size,
	    .chunk_shift = shift,
	    .codec = SNAP_CODEC_ZSTD,
	    .level = (uint32_t)(in->level ? in->level : SNAP_DEFAULT_LEVEL),
	};
	struct snap_mem_out mo = {0};
	struct snap_section *data_sec;
	struct timespec now;
	uint64_t t0;
	int ret = -ENOMEM;

	mi.nchunks = (uint32_t)((c->mem_size + (1ULL << shift) - 1) >> shift);
	if (v2) {
		ret = put_state(fd, in, l);
		if (ret < 0)
			goto io;
		data_off = align_up(l->off, SNAP_DATA_ALIGN);
	}
	data_sec = &l->sec[l->nsec++];

	mo.present = calloc(BM_WORDS(mi.nchunks), 8);
	mo.zero = calloc(BM_WORDS(mi.nchunks), 8);
	mo.chunks = calloc(mi.nchunks, sizeof(*mo.chunks));
	ret = -ENOMEM;
	if (!mo.present || !mo.zero || !mo.chunks)
		goto out;
	t0 = snap_now_ns();
	ret = snap_write_memory(fd, data_off, in, shift, (int)mi.level, keep, &mo, st, err);
	st->mem_ns = snap_now_ns() - t0;
	if (ret < 0)
		goto out;
	mi.nzero = st->nzero;
	mi.ndata = st->ndata;
	*data_sec = (struct snap_section){
	    .type = SNAP_SEC_MEM_DATA,
	    .version = SNAP_MEM_DATA_VERSION,
	    .offset = v2 ? data_off : SNAP_BODY_OFFSET,
	    .length = mo.data_end - (v2 ? data_off : SNAP_BODY_OFFSET),
	};
	l->off = mo.data_end;
	if (!v2) {
		ret = put_state(fd, in, l);
		if (ret < 0)
			goto io;
	}
	ret = put_index(fd, l, &mi, &mo);
	if (ret < 0)
		goto io;

	memcpy(h->magic, SNAP_MAGIC, sizeof(h->magic));
	h->version = v2 ? SNAP_FORMAT_V2 : SNAP_FORMAT_VERSION;
	h->header_size = sizeof(*h);
	h->arch = SNAP_ARCH_X86_64;
	h->flags = in->parent ? SNAP_F_DIFF : 0;
	clock_gettime(CLOCK_REALTIME, &now);
	h->created_ns = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
	h->parent_id = in->parent ? snap_id(in->parent) : 0;
	h->section_table_offset = v2 ? sizeof(*h) : align_up(l->off, 8);
	h->nsections = l->nsec;
	h->section_entry_size = sizeof(struct snap_section);
	h->file_size = v2 ? l->off : h->section_table_offset + l->nsec * sizeof(*l->sec);
	h->config = *c;
	goto out;
io:
	snap_errf(err, ret, "write: %s", strerror(-ret));
out:
	free(mo.present);
	free(mo.zero);
	free(mo.chunks);
	return ret;
}

/* The section table where h says, its checksum into h, and h's: the
 * snapshot's id. */
static int put_table(int fd, struct snap_header *h, const struct layout *l, uint64_t *id)
{
	size_t tlen = l->nsec * sizeof(struct snap_section);

	h->table_checksum = snap_xxh64(l->sec, tlen, 0);
	h->checksum = 0;
	h->checksum = snap_xxh64(h, sizeof(*h), 0);
	*id = h->checksum;
	return snap_pwrite(fd, l->sec, tlen, h->section_table_offset);
}

static int put_slot(int fd, const struct snap_header *h, unsigned slot)
{
	return snap_pwrite(fd, h, sizeof(*h), (uint64_t)slot * SNAP_SLOT_SIZE);
}

/* What the state sections and index of one generation take, with room. */
static uint64_t gen_overhead(const struct snap_save *in, uint64_t nchunks)
{
	const struct snap_vm_config *c = in->config;
	uint64_t n = (uint64_t)c->nr_vcpus * (sizeof(struct snap_vcpu_state) + 64) +
	             sizeof(struct snap_vm_state) + nchunks * (sizeof(struct snap_chunk) + 1) +
	             SNAP_MAX_SECTIONS * sizeof(struct snap_section) + 2 * SNAP_DATA_ALIGN;

	for (uint32_t d = 0; d < c->nr_devices; d++)
		n += in->devs[d].len + 64;
	return n;
}

/* Dead bytes a file may hold, against its live ones: 1/8. Measured with
 * tools/bench/snapshot_bench.sh (256 MiB guest, 40 MiB touched: ~16 MiB
 * live, ~0.3 MiB added per later pause): with 1/2 the file grew to 19-24
 * MiB (median 18 MiB, 0.42x the memory touched, the ratio goal is 0.4x);
 * with 1/8 one later pause in ~7 writes the file anew (the cost of a
 * later pause before generations) and it stays within 18 MiB. */
#define SNAP_DEAD_SHARE 8

/* Whether in may be appended to the file open as fd (path, which must be
 * ref's file, in version 3, and not too much of it dead). */
static bool can_append(int fd, const struct snap_save *in, unsigned shift, struct stat *st)
{
	const struct snap *r = in->ref;
	struct snap_mem_info mi;
	struct stat rst;
	uint64_t live;

	if (!in->append || !r || in->parent || in->holes_from_ref || in->format ||
	    r->hdr.version != SNAP_FORMAT_VERSION || snap_is_diff(r) ||
	    r->mi.chunk_shift != shift || r->mi.mem_size != in->config->mem_size ||
	    r->hdr.generation >= SNAP_MAX_GENERATION)
		return false;
	if (fstat(fd, st) < 0 || fstat(r->fd, &rst) < 0 || st->st_dev != rst.st_dev ||
	    st->st_ino != rst.st_ino || (uint64_t)st->st_size < r->hdr.file_size)
		return false;
	/* Compaction: a new file once the dead bytes (older generations'
	 * chunks and state) pass 1 / SNAP_DEAD_SHARE of the live ones. */
	snap_mem_info(r, &mi);
	live = mi.stored_bytes + gen_overhead(in, mi.nchunks);
	return (uint64_t)st->st_size <= SNAP_BODY_OFFSET + live + live / SNAP_DEAD_SHARE;
}

/* A new generation at the end of the file open as fd (can_append()),
 * durable before its header goes into the slot ref's does not hold. 1 if
 * in cannot be appended there (a whole new file is written instead). */
static int append(int fd, const struct snap_save *in, unsigned shift, struct snap_write_stats *st,
                  struct snap_err *err)
{
	uint32_t nsec = in->config->nr_vcpus + in->config->nr_devices + 3;
	struct snap_header h = {0};
	struct layout l = {0};
	struct stat fst;
	uint64_t t1;
	int ret, cut;

	if (!can_append(fd, in, shift, &fst))
		return 1;
	l.sec = calloc(nsec, sizeof(*l.sec));
	if (!l.sec)
		return snap_errf(err, -ENOMEM, "out of memory");
	l.off = align_up((uint64_t)fst.st_size, SNAP_DATA_ALIGN);
	ret = write_body(fd, in, shift, l.off, true, &h, &l, st, err);
	if (ret < 0)
		goto fail;
	h.generation = in->ref->hdr.generation + 1;
	st->file_size = h.file_size;
	st->generation = h.generation;
	t1 = snap_now_ns();
	/* All of the generation durable, then the header naming it. */
	ret = put_table(fd, &h, &l, &st->id);
	if (ret == 0 && !in->no_fsync && fsync(fd) < 0)
		ret = -errno;
	if (ret == 0)
		ret = put_slot(fd, &h, 1 - in->ref->slot);
	if (ret == 0 && !in->no_fsync && fsync(fd) < 0)
		ret = -errno;
	st->sync_ns = snap_now_ns() - t1;
	if (ret < 0) {
		snap_errf(err, ret, "write: %s", strerror(-ret));
		goto fail;
	}
	st->appended = true;
	free(l.sec);
	return 0;
fail:
	/* Cut what was added: ref's generation ends before it, and a
	 * header slot written in part fails its checksum. If the cut fails,
	 * the bytes stay past the end, where readers ignore them. */
	cut = ftruncate(fd, fst.st_size);
	(void)cut;
	free(l.sec);
	return ret;
}

/* A whole new file (generation 1; or version 2), renamed over path. */
static int write_new(const char *path, const struct snap_save *in, unsigned shift,
                     struct snap_write_stats *st, struct snap_err *err)
{
	uint32_t nsec = in->config->nr_vcpus + in->config->nr_devices + 3;
	bool v2 = in->format == SNAP_FORMAT_V2;
	struct snap_header h = {0};
	struct layout l = {0};
	char *tmp = NULL;
	int fd = -1, ret = -ENOMEM;
	uint64_t t1;

	l.sec = calloc(nsec, sizeof(*l.sec));
	if (!l.sec || asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) {
		tmp = NULL;
		snap_errf(err, ret, "out of memory");
		goto fail;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = snap_errf(err, -errno, "cannot create '%s': %s", tmp, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto fail;
	}
	l.off = v2 ? sizeof(h) + nsec * sizeof(struct snap_section) : SNAP_BODY_OFFSET;
	ret = write_body(fd, in, shift, SNAP_BODY_OFFSET, false, &h, &l, st, err);
	if (ret < 0)
		goto fail;
	h.generation = v2 ? 0 : 1;
	st->file_size = h.file_size;
	st->generation = h.generation;
	ret = put_table(fd, &h, &l, &st->id);
	if (ret == 0)
		ret = put_slot(fd, &h, 0); /* version 3: slot 1 stays zero */
	if (ret < 0) {
		snap_errf(err, ret, "write: %s", strerror(-ret));
		goto fail;
	}
	t1 = snap_now_ns();
	if (!in->no_fsync && fsync(fd) < 0) {
		ret = snap_errf(err, -errno, "fsync: %s", strerror(errno));
		goto fail;
	}
	close(fd);
	fd = -1;
	if (rename(tmp, path) < 0) {
		ret = snap_errf(err, -errno, "rename to '%s': %s", path, strerror(errno));
		goto fail;
	}
	/* Without it the rename may not survive a crash: after a pause the
	 * VMM is stopped, and the old file (or none) would be what is left. */
	if (!in->no_fsync && (ret = sync_dir(path)) < 0) {
		snap_errf(err, ret, "renamed into place, but syncing its directory failed: %s",
		          strerror(-ret));
		tmp[0] = '\0'; /* nothing to remove: it is path now */
		goto fail;
	}
	st->sync_ns = snap_now_ns() - t1;
	free(tmp);
	free(l.sec);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (tmp && tmp[0])
		unlink(tmp);
	free(tmp);
	free(l.sec);
	return ret;
}

int snap_write(const char *path, const struct snap_save *in, struct snap_write_stats *stats,
               struct snap_err *err)
{
	struct snap_write_stats st = {0};
	uint64_t t0 = snap_now_ns();
	unsigned shift = 0;
	int fd, ret;

	ret = check_input(in, &shift, err);
	if (ret == 0 && in->append && (fd = open(path, O_RDWR | O_CLOEXEC)) >= 0) {
		ret = append(fd, in, shift, &st, err);
		close(fd);
		if (ret == 1) {
			memset(&st, 0, sizeof(st));
			ret = 0;
		} else if (ret == 0) {
			goto done;
		}
	}
	if (ret == 0)
		ret = write_new(path, in, shift, &st, err);
	if (ret < 0) {
		snap_err_prefix(err, path);
		return ret;
	}
done:
	st.total_ns = snap_now_ns() - t0;
	if (stats)
		*stats = st;
	return 0;
}
