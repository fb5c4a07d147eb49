/* SPDX-License-Identifier: MIT */
/*
 * libkilnsnap: write, validate and restore kiln snapshot files (format in
 * include/kiln/snapshot.h). Pure host code: the VMM gathers KVM and device
 * state into the structs below and applies them back; this library never
 * touches a VM.
 *
 * Errors: functions return 0 (or a documented non-negative value) or -errno,
 * and fill a struct snap_err with a message for the user that names the file
 * and what is wrong ("snapshot 'x': chunk 123: checksum mismatch"). No global
 * state: any number of snapshots may be open, and the readers are safe to use
 * from several threads at once.
 */
#ifndef KILN_SNAP_H
#define KILN_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/snapshot.h"

struct snap_err {
	char msg[320];
};

/* XXH64 (seed 0 is the format's). */
uint64_t snap_xxh64(const void *buf, size_t len, uint64_t seed);
/* The same over data given in pieces: init, update per piece, digest. */
struct snap_xxh64_state {
	uint64_t v[4], seed, total;
	uint8_t buf[32]; /* a stripe not complete yet */
	unsigned nbuf;
};
void snap_xxh64_init(struct snap_xxh64_state *st, uint64_t seed);
void snap_xxh64_update(struct snap_xxh64_state *st, const void *buf, size_t len);
uint64_t snap_xxh64_digest(const struct snap_xxh64_state *st);
/* Identity of a boot file for snap_vm_config.kernel/initrd (XXH64 of buf). */
void snap_image_id_from_buf(struct snap_image_id *id, const void *buf, size_t len);

/* A device type (virtio device ID) for messages: "blk", "vsock", ... */
const char *snap_device_name(uint32_t type);

/* All online CPUs, at least 1. */
unsigned snap_default_threads(void);

struct snap; /* an open snapshot (reader.c) */

/* ---------------------------------------------------------------------------
 * Writing
 */
#define SNAP_DEFAULT_CHUNK_SHIFT 18 /* 256 KiB: see the measurements in writer.c */
#define SNAP_DEFAULT_LEVEL       1

struct snap_dev_blob {
	uint32_t version; /* the device's own state version */
	const void *data;
	uint32_t len; /* <= SNAP_MAX_DEV_STATE */
};

struct snap_save {
	const struct snap_vm_config *config;
	const struct snap_vcpu_state *vcpus; /* config->nr_vcpus, in index order */
	const struct snap_vm_state *vm;
	const struct snap_dev_blob *devs; /* config->nr_devices, same order as config */
	/* Guest memory: config->mem_size bytes (the memfd mapping). */
	const void *mem;
	/* The memfd behind mem, or -1. With it, chunks that lie in holes of the
	 * file (never written) are known zero without being read. Pass it only
	 * when mem is a MAP_SHARED mapping of this fd: a MAP_PRIVATE mapping
	 * (a clone of a template) keeps its writes out of the file. */
	int mem_fd;
	/* Without a memfd: a bitmap of the 4 KiB pages of mem that may hold data
	 * (anonymous memory: the present or swapped pages in
	 * /proc/self/pagemap), or NULL. Chunks of pages not in it are known zero
	 * without being read: reading anonymous memory maps pages into it. */
	const uint64_t *mem_pages;
	/* An older snapshot of this memory (open; its parents attached if it
	 * is a diff), or NULL. A data chunk whose bytes hash to ref's content
	 * hash for the same chunk is not compressed: ref's stored bytes are
	 * copied (checked against their checksum first). The chunk size is
	 * then ref's unless chunk_shift says otherwise (a different size
	 * disables reuse). Typically the snapshot the VM was restored from, or
	 * the last one this VM wrote. */
	const struct snap *ref;
	/* With ref, and mem_fd or mem_pages: the holes of mem_fd (or the
	 * pages not in mem_pages) are not zero but ref's memory: a lazy
	 * restore filling guest RAM from ref on first touch, or a clone's
	 * pages it never wrote, its template's. A chunk with no page of its
	 * own is taken from ref as it is; one partly there is ref's chunk
	 * with its own pages laid over it. Holes are never read through mem,
	 * so nothing here faults on memory that userfaultfd still serves.
	 * Needs ref's chunk size. */
	bool holes_from_ref;
	/* With holes_from_ref, or NULL: a bitmap of the chunks (at ref's chunk
	 * size) loaded in whole already, whose holes are zero pages: only
	 * the other chunks' holes are ref's. A restore that leaves the zero
	 * pages of a chunk out (vmm/uffd.c) passes it, so that its loaded
	 * chunks are hashed where they lie instead of being rebuilt from
	 * ref. */
	const uint64_t *loaded;
	/* Diff snapshot: the parent (open), and a bitmap of chunks (at the
	 * parent's chunk size) that may differ from it; see
	 * snap_chunks_from_pages(). Both NULL for a full snapshot. */
	const struct snap *parent;
	const uint64_t *dirty_chunks;
	/* With ref, or NULL: a bitmap of the 4 KiB pages of mem that may have
	 * been written since ref was taken (KVM's dirty log and the VMM's own
	 * writes), which the caller vouches for: memory was exactly ref then.
	 * A chunk with none of them is ref's chunk as it is, copied without
	 * reading mem. Needs ref's chunk size. */
	const uint64_t *written;
	/* With written: read such chunks all the same and fail (-EIO) if one
	 * is not ref's (tests: a write the tracking missed). */
	bool check_written;
	unsigned threads;     /* 0: snap_default_threads() */
	int level;            /* zstd level; 0: SNAP_DEFAULT_LEVEL */
	unsigned chunk_shift; /* 0: SNAP_DEFAULT_CHUNK_SHIFT (diff: the parent's) */
	bool no_fsync;        /* skip fsync of file and directory (tests, benchmarks) */
	/* With ref, the snapshot now at the path written to (the same file:
	 * device and inode are compared; its newest generation, format 3,
	 * not a diff): add a generation to that file instead of writing a
	 * new one. Chunks that are ref's stay where they are, unread and
	 * uncopied; only the others, the state and a new index are
	 * appended, and the header goes into the slot ref's is not in (see
	 * the format). A file that cannot take it (another file, an older
	 * format, chunk size or memory differs, or its dead bytes would
	 * pass 1/8 of the live ones: compaction) is written anew as
	 * without append. */
	bool append;
	/* 0: the current format. SNAP_FORMAT_V2: the previous one (tests of
	 * old files; no append). */
	unsigned format;
};

struct snap_write_stats {
	uint64_t nchunks, nzero, nholes, ndata, nraw, nabsent;
	uint64_t nreused;    /* data chunks copied from ref, not compressed (in ndata) */
	uint64_t nunwritten; /* chunks taken from ref unread: no write touched them */
	uint64_t nkept;      /* append: ref's chunks left where they are (in nreused) */
	uint64_t generation; /* of the header written (0: format 2) */
	bool appended;       /* a generation was added to the file at path */
	uint64_t data_in;    /* bytes of chunks that were compressed */
	uint64_t data_out;   /* bytes stored for them */
	uint64_t file_size;
	uint64_t id;
	uint64_t mem_ns;  /* scanning + compressing + writing memory */
	uint64_t sync_ns; /* fsync + rename + directory fsync */
	uint64_t total_ns;
};

/*
 * Write a snapshot to path, atomically: a temporary file in the same
 * directory is written, fsynced and renamed over path; or with in->append,
 * a generation added to the file there, fsynced before and after its
 * header is written. On failure nothing is left behind and path holds
 * what it held. stats may be NULL.
 */
int snap_write(const char *path, const struct snap_save *in, struct snap_write_stats *stats,
               struct snap_err *err);

/* Bits of chunks touched by dirty pages: pages is a bitmap of npages 4 KiB
 * pages starting at memory-image byte first (KVM's dirty log of one memslot,
 * translated to memfd offsets); chunks is ORed into. */
void snap_chunks_from_pages(uint64_t *chunks, unsigned chunk_shift, const uint64_t *pages,
                            uint64_t npages, uint64_t first);

/* ---------------------------------------------------------------------------
 * Reading. snap_open() validates the whole file except chunk payloads (whose
 * checksums are verified whenever a chunk is read, or by snap_verify()).
 */
int snap_open(const char *path, struct snap **out, struct snap_err *err);
void snap_close(struct snap *s);

const char *snap_path(const struct snap *s);
const struct snap_header *snap_header(const struct snap *s);
const struct snap_vm_config *snap_config(const struct snap *s);
uint64_t snap_id(const struct snap *s); /* the header checksum */
/* Format 3: the header slot (0 or 1) the newest valid generation was read from. */
unsigned snap_slot(const struct snap *s);
bool snap_is_diff(const struct snap *s);

/* Entry i of the section table (i < snap_header(s)->nsections). */
const struct snap_section *snap_section(const struct snap *s, unsigned i);
const struct snap_vcpu_state *snap_vcpu(const struct snap *s, unsigned idx);
const struct snap_vm_state *snap_vm(const struct snap *s);
/* The device in slot: its blob, the blob's version and the device type.
 * -ENOENT if the snapshot has no device in that slot. */
int snap_device(const struct snap *s, unsigned slot, const void **data, uint32_t *len,
                uint32_t *version, uint32_t *type);

/* Compare the saved config with the restoring VMM's; -EINVAL and a message
 * naming the first difference (memory layout, vCPUs, devices, kernel,
 * initramfs, CPUID) if they differ. */
int snap_check_compat(const struct snap *s, const struct snap_vm_config *want,
                      struct snap_err *err);

/* Link a diff snapshot to its parent (which must stay open until child is
 * closed). Checks the parent's id, config and chunk size. Chunks absent from
 * child are then read from parent (recursively). */
int snap_attach_parent(struct snap *child, const struct snap *parent, struct snap_err *err);

struct snap_mem_info {
	uint64_t mem_size, chunk_size, nchunks;
	uint64_t npresent, nzero, ndata, nraw;
	uint64_t stored_bytes; /* sum of stored_len */
	unsigned chunk_shift, level;
};
void snap_mem_info(const struct snap *s, struct snap_mem_info *info);
/* Bytes of chunk idx (the last chunk may be short); 0 if idx is out of range. */
uint64_t snap_chunk_len(const struct snap *s, uint64_t idx);

/* Check every stored chunk: checksum, and (decompress) that it yields
 * exactly its length. Nothing is written anywhere. */
int snap_verify(const struct snap *s, unsigned threads, struct snap_err *err);
/* Only the checksums of the stored bytes of every chunk the memory is made
 * of (through attached parents), without decompressing: what a restore
 * that loads memory while the guest runs checks before it starts. */
int snap_check_chunks(const struct snap *s, unsigned threads, struct snap_err *err);

/* ---------------------------------------------------------------------------
 * Memory restore.
 */
#define SNAP_RESTORE_ZERO_FILL 0x1u /* memset zero chunks (dst is not known zero) */
#define SNAP_RESTORE_PRESENT_ONLY \
	0x2u /* diff onto dst holding the parent's memory:
                                          write only this file's chunks (zero ones too) */
#define SNAP_RESTORE_SPARSE \
	0x4u /* write only 4 KiB pages that differ from dst,
                                          so untouched memfd pages stay unallocated and
                                          MAP_PRIVATE clones copy only what changed */

/* Per-thread scratch for snap_read_chunk() (zstd context and buffer). */
struct snap_chunk_ctx;
struct snap_chunk_ctx *snap_chunk_ctx_new(const struct snap *s);
void snap_chunk_ctx_free(struct snap_chunk_ctx *ctx);

#define SNAP_CHUNK_DATA 0 /* buf holds the chunk */
#define SNAP_CHUNK_ZERO 1 /* the chunk is all zero; buf untouched */

/*
 * Lazy restore: chunk idx into buf (snap_chunk_len() bytes), resolving a
 * diff through attached parents. Returns SNAP_CHUNK_DATA or SNAP_CHUNK_ZERO
 * (the caller may then use UFFDIO_ZEROPAGE), -ENOENT if the chunk is absent
 * and no parent is attached, or -EIO on a bad chunk. ctx may be NULL (slower:
 * a zstd context is made for the call).
 */
int snap_read_chunk(const struct snap *s, struct snap_chunk_ctx *ctx, uint64_t idx, void *buf,
                    struct snap_err *err);

/* Eager restore: all of memory into dst (mem_size bytes), with threads
 * threads (0: all CPUs). Zero chunks are skipped unless ZERO_FILL. A diff
 * needs an attached parent, or PRESENT_ONLY. On error dst is partly written. */
int snap_restore_mem(const struct snap *s, void *dst, uint64_t dst_size, unsigned threads,
                     unsigned flags, struct snap_err *err);

/* Eager restore into a file (guest RAM's memfd, empty: its holes read as
 * zero) with pwritev: only the non-zero 4 KiB pages are written, and the
 * pages are allocated without page faults or mappings. Chunks are
 * decompressed in parallel (threads 0: all CPUs); a diff needs its parent
 * attached. */
int snap_restore_file(const struct snap *s, int fd, unsigned threads, struct snap_err *err);

/* Template: eager restore into memfd (sized to mem_size if smaller; it is
 * expected to be empty), which clones then map MAP_PRIVATE. With seal, the
 * memfd (created with MFD_ALLOW_SEALING) is sealed against writes and
 * resizes afterwards. Always restores sparse. */
int snap_restore_template(const struct snap *s, int memfd, unsigned threads, bool seal,
                          struct snap_err *err);

#endif
