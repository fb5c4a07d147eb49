/* SPDX-License-Identifier: MIT */
/* Shared by the snapshot library's files only. */
#ifndef KILN_SNAP_INTERNAL_H
#define KILN_SNAP_INTERNAL_H

#include <linux/kvm.h>
#include <stdarg.h>

#include "snap.h"

/* The format's fixed arrays hold the kernel UAPI structs byte for byte. */
_Static_assert(sizeof(struct kvm_regs) == SNAP_KVM_REGS_SIZE, "kvm_regs");
_Static_assert(sizeof(struct kvm_sregs) == SNAP_KVM_SREGS_SIZE, "kvm_sregs");
_Static_assert(sizeof(struct kvm_fpu) == SNAP_KVM_FPU_SIZE, "kvm_fpu");
_Static_assert(sizeof(struct kvm_xsave) == SNAP_KVM_XSAVE_SIZE, "kvm_xsave");
_Static_assert(sizeof(struct kvm_xcrs) == SNAP_KVM_XCRS_SIZE, "kvm_xcrs");
_Static_assert(sizeof(struct kvm_lapic_state) == SNAP_KVM_LAPIC_SIZE, "kvm_lapic_state");
_Static_assert(sizeof(struct kvm_vcpu_events) == SNAP_KVM_EVENTS_SIZE, "kvm_vcpu_events");
_Static_assert(sizeof(struct kvm_debugregs) == SNAP_KVM_DEBUGREGS_SIZE, "kvm_debugregs");
_Static_assert(sizeof(struct kvm_mp_state) == SNAP_KVM_MP_STATE_SIZE, "kvm_mp_state");
_Static_assert(sizeof(struct kvm_clock_data) == SNAP_KVM_CLOCK_SIZE, "kvm_clock_data");
_Static_assert(sizeof(struct kvm_irqchip) == SNAP_KVM_IRQCHIP_SIZE, "kvm_irqchip");
_Static_assert(sizeof(struct kvm_pit_state2) == SNAP_KVM_PIT2_SIZE, "kvm_pit_state2");
_Static_assert(sizeof(struct kvm_msr_entry) == sizeof(struct snap_msr), "kvm_msr_entry");

struct snap_devstate {
	uint32_t slot, type, version, len;
	void *data;
};

/* An open, validated snapshot. Immutable after snap_open() except parent. */
struct snap {
	char *path;
	int fd;
	uint64_t file_size;
	uint64_t id;
	struct snap_header hdr;
	unsigned slot;            /* version 3: the header slot hdr was read from */
	struct snap_section *sec; /* hdr.nsections */
	struct snap_vcpu_state *vcpus;
	struct snap_vm_state vm;
	struct snap_devstate devs[SNAP_MAX_DEVICES];
	unsigned ndevs;

	/* Memory: the index payload, and pointers into it. */
	void *index;
	struct snap_mem_index mi;
	const uint64_t *present, *zero;
	const struct snap_chunk *chunks;
	uint64_t chunk_size, nchunks;
	uint64_t data_off, data_len; /* the MEM_DATA section */
	uint32_t max_stored;         /* largest stored_len */
	/* The whole file mapped read-only (NULL if mmap failed: chunks are
	 * then pread). Chunk bytes are checksummed and decompressed where
	 * they lie: pread() copies cost about three times what hashing the
	 * same bytes does, and read faults on page cache map 16 pages at
	 * once. The files are written once and renamed into place, never
	 * rewritten; one truncated while open faults (SIGBUS) when read. */
	const uint8_t *map;
	const struct snap *parent;
};

#define BM_WORDS(n) (((n) + 63) / 64)

static inline bool bm_test(const uint64_t *bm, uint64_t i)
{
	return (bm[i / 64] >> (i % 64)) & 1;
}

static inline void bm_set(uint64_t *bm, uint64_t i)
{
	bm[i / 64] |= 1ULL << (i % 64);
}

static inline uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* The snapshot in s's parent chain that holds chunk idx, or NULL. */
static inline const struct snap *snap_holder(const struct snap *s, uint64_t idx)
{
	while (s && !bm_test(s->present, idx))
		s = s->parent;
	return s;
}

/* util.c */
int snap_errf(struct snap_err *err, int ret, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "snapshot 'path': " before the message. */
void snap_err_prefix(struct snap_err *err, const char *path);
uint64_t snap_now_ns(void);
bool snap_is_zero(const void *buf, size_t len);
/* Whole-buffer I/O; a short read is -ENODATA. */
int snap_pread(int fd, void *buf, size_t len, uint64_t off);
int snap_pwrite(int fd, const void *buf, size_t len, uint64_t off);
/* Run fn(args + i * argsz) for i in [0, n): n - 1 new threads plus the
 * caller; returns when all are done. Work must be handed out dynamically
 * (a shared counter): a thread that fails to start does nothing. */
void snap_parallel(unsigned n, void *(*fn)(void *), void *args, size_t argsz);
const char *snap_section_name(uint32_t type);

static inline uint64_t snap_chunk_len_of(uint64_t mem_size, uint64_t chunk_size, uint64_t i)
{
	uint64_t left = mem_size - i * chunk_size;

	return left < chunk_size ? left : chunk_size;
}

/* compress.c: memory chunks written from data_off on; the caller allocates
 * the bitmaps and entries (zeroed) for every chunk. */
struct snap_mem_out {
	uint64_t *present, *zero;
	struct snap_chunk *chunks;
	uint64_t data_end;
};
/* keep: fd is in->ref's file, which a generation is appended to: ref's
 * chunks are left where they are (K_KEPT). */
int snap_write_memory(int fd, uint64_t data_off, const struct snap_save *in, unsigned shift,
                      int level, bool keep, struct snap_mem_out *out, struct snap_write_stats *st,
                      struct snap_err *err);

/* index.c: read and validate the memory index in section sec. */
int snap_load_index(struct snap *s, uint32_t sec, struct snap_err *err);

/* restore.c: chunk idx of s (which must hold it) into dst. */
int snap_decode_chunk(const struct snap *s, struct snap_chunk_ctx *ctx, uint64_t idx, void *dst,
                      struct snap_err *err);

#endif
