/* SPDX-License-Identifier: MIT */
/*
 * kiln snapshot file format, version 3 (a reader also takes version 2).
 *
 * A snapshot is one file holding everything needed to resume a VM: the VM
 * configuration it was taken with, the KVM state of every vCPU and of the VM,
 * each device's own state blob, and guest memory. A file holds one or more
 * generations of that VM's state: a later snapshot of the same VM to the same
 * file appends only the chunks that changed, new state, a new index and a new
 * section table, and then names them in a header slot (A/B, below).
 *
 *   offset 0      header slot 0: struct snap_header (SNAP_HEADER_SIZE bytes)
 *   SNAP_SLOT_SIZE  header slot 1: a struct snap_header, or zeros
 *   SNAP_BODY_OFFSET  generations, each appended at a 4 KiB boundary:
 *                   chunks new in this generation (4 KiB aligned)
 *                   section payloads, each 64-byte aligned:
 *                     SNAP_SEC_VCPU       x nr_vcpus  struct snap_vcpu_state
 *                     SNAP_SEC_VM         x 1         struct snap_vm_state
 *                     SNAP_SEC_DEVICE     x nr_devices  opaque, the device's own
 *                     SNAP_SEC_MEM_INDEX  x 1         struct snap_mem_index + bitmaps
 *                                                     + struct snap_chunk[nchunks]
 *                   struct snap_section table[nsections] (section_table_offset)
 *   file_size     end of the header's generation. More may follow: a newer
 *                 generation, or one whose writing was cut short.
 *
 * The table lists SNAP_SEC_MEM_DATA first: [SNAP_BODY_OFFSET, end of this
 * generation's chunks), which spans the chunks of older generations (and
 * their state, which this generation does not use); every chunk entry lies in
 * it. Then the generation's own state sections and index, in file order.
 *
 * Header slots: each generation's header holds its number (generation, 1 for
 * the first). A reader checks both slots and takes the highest generation
 * whose header and everything it names validate; if it does not, the other.
 * The first generation is written to slot 0 of a new file (slot 1 zero),
 * which is renamed into place; generation n + 1 is appended, made durable
 * (fsync), and only then its header written into the slot that does not
 * hold generation n (and fsynced). Bytes of a generation are never written
 * again, so a crash or a kill at any point leaves generation n whole: a torn
 * slot fails its checksum, and bytes past file_size are ignored. A writer
 * rewrites the file (a new first generation) when the dead bytes of older
 * generations pass 1/8 of the live ones.
 *
 * Version 2 (what kiln wrote before): one generation, no slots:
 *
 *   offset 0      struct snap_header (generation 0)
 *   header_size   struct snap_section table[nsections]
 *                 section payloads, in table order, each 64-byte aligned:
 *                 vCPUs, VM, devices, MEM_DATA (4 KiB aligned), MEM_INDEX
 *   file_size     end of file (nothing may follow)
 *
 * Guest memory is the memfd's byte range [0, mem_size): RAM at GPA 0 first
 * (mem_low_size bytes), then the RAM placed at mem_high_gpa. It is cut into
 * chunks of 1 << chunk_shift bytes (the last may be shorter), each compressed
 * on its own with zstd, so chunks can be compressed and decompressed in
 * parallel and one chunk can be restored alone (lazy restore on a page fault).
 * An all-zero chunk is a bit in the zero bitmap and has no data. A diff
 * snapshot (SNAP_F_DIFF) stores only the chunks set in its present bitmap; the
 * others come from the parent, named by its id (see below).
 *
 * Integrity: every checksum is XXH64 with seed 0 (xxHash spec, see
 * snapshot/hash.c), in a chain: snap_header.checksum covers the header (that
 * field taken as 0), which holds table_checksum of the section table, whose
 * entries hold the checksum of each payload (MEM_DATA excepted: it is the
 * concatenation of chunks, and each chunk's checksum of its stored bytes is
 * in the index, itself checksummed). So the header checksum names the whole
 * content, chunks included: it is the snapshot's id, and a diff names its
 * parent by it. The header is checked alone first, so the sizes and counts a
 * reader then relies on are known good.
 *
 * Rules a reader enforces (snapshot/reader.c refuses anything else): exact
 * magic, version, architecture and struct sizes; sane counts and sizes; reserved fields zero;
 * sections in table order, inside the generation and not overlapping (version 3:
 * after the header slots, the table after them all); exactly one
 * vCPU section per vCPU, one VM section, one device section per configured
 * device, one memory index and one memory data section; chunk entries inside
 * the data section (version 2: at strictly increasing offsets).
 *
 * Reuse: each data chunk's index entry also holds the XXH64 of its bytes as
 * restored (snap_chunk.content). A writer that has an older snapshot of the
 * same memory at hand (the one the VM was restored from, a clone's
 * template, or the last one it wrote) hashes a chunk of memory and, when the
 * hash equals the older file's for that chunk, copies the older file's
 * stored bytes (their checksum checked) instead of compressing again. A
 * reader may check the hash after decompressing (kiln-snapshot inspect
 * does).
 *
 * All integers are little-endian (the only architecture is x86-64). Any
 * change to a layout, constant or meaning below bumps SNAP_FORMAT_VERSION (or,
 * for one section's payload, that section type's version).
 *
 * Versions: 1 had 24-byte chunk entries without the content hash (memory
 * index version 1). A reader refuses version 1 files with a message naming
 * the versions; such a snapshot is restored by the kiln that wrote it, and
 * taken again. 2 had one generation and no header slots (above); this
 * build reads it as it is, and writes version 3.
 */
#ifndef KILN_SNAPSHOT_H
#define KILN_SNAPSHOT_H

#include <stdint.h>
#include <stddef.h>

#define SNAP_MAGIC          "KILNSNAP" /* 8 bytes, no NUL stored */
#define SNAP_FORMAT_VERSION 3
#define SNAP_FORMAT_V2      2 /* the oldest version this build reads */

/* Version 3: the header slots and where generations start. */
#define SNAP_SLOT_SIZE   4096
#define SNAP_NSLOTS      2
#define SNAP_BODY_OFFSET (SNAP_NSLOTS * SNAP_SLOT_SIZE)

enum snap_arch {
	SNAP_ARCH_NONE = 0, /* reserved */
	SNAP_ARCH_X86_64 = 1,
	SNAP_ARCH_MAX,
};

/* snap_header.flags */
#define SNAP_F_DIFF 0x1u /* only chunks in the present bitmap are stored */
#define SNAP_F_ALL  SNAP_F_DIFF

/* Bounds a reader enforces before it allocates anything. */
#define SNAP_MAX_VCPUS     256
#define SNAP_MAX_DEVICES   32 /* == KILN_MMIO_MAX_DEVICES */
#define SNAP_MAX_SECTIONS  (SNAP_MAX_VCPUS + SNAP_MAX_DEVICES + 3)
#define SNAP_MAX_MEM       (1ULL << 40) /* 1 TiB */
#define SNAP_MAX_DEV_STATE (1u << 20)   /* one device's blob */
#define SNAP_MAX_MSRS      64
#define SNAP_PAGE_SIZE     4096u

/* Chunk size: 64 KiB .. 4 MiB. The writer's default is 256 KiB (see snap.h). */
#define SNAP_CHUNK_SHIFT_MIN 16
#define SNAP_CHUNK_SHIFT_MAX 22

/* ---------------------------------------------------------------------------
 * VM configuration: what a restoring VMM must match (snap_check_compat()).
 */
enum snap_hash_alg {
	SNAP_HASH_NONE = 0,  /* no image (size must be 0) */
	SNAP_HASH_XXH64 = 1, /* digest[0..7] = XXH64(seed 0) of the file, little-endian */
	SNAP_HASH_SHA256 = 2,
	SNAP_HASH_MAX,
};

/* Identity of a file the guest was booted from (kernel ELF, initramfs). */
struct snap_image_id {
	uint64_t size;
	uint32_t alg; /* enum snap_hash_alg */
	uint32_t reserved;
	uint8_t digest[32];
};

struct snap_device_desc {
	uint32_t type; /* virtio device id (1 net, 2 blk, 3 console, 4 rng, 19 vsock ...) */
	uint32_t slot; /* virtio-mmio slot: window at KILN_GPA_MMIO_BASE + slot * KILN_MMIO_SIZE */
};

struct snap_vm_config {
	uint64_t mem_size;     /* bytes of guest RAM = bytes of the memory image */
	uint64_t mem_low_size; /* RAM at GPA [0, mem_low_size) */
	uint64_t mem_high_gpa; /* the rest of RAM starts at this GPA (KILN_GPA_HIGH_RAM) */
	uint32_t nr_vcpus;     /* 1 .. SNAP_MAX_VCPUS */
	uint32_t nr_devices;   /* 0 .. SNAP_MAX_DEVICES; entries past it are zero */
	uint32_t boot_version; /* KILN_BOOT_VERSION of the kernel image */
	uint32_t reserved;
	uint64_t cpuid_hash; /* the VMM's hash of the CPUID table given to the guest */
	uint64_t xcr0;       /* XCR0 features the guest may use */
	struct snap_image_id kernel;
	struct snap_image_id initrd;
	struct snap_device_desc devices[SNAP_MAX_DEVICES]; /* slots distinct */
};

/* ---------------------------------------------------------------------------
 * Header and section table.
 */
struct snap_header {
	char magic[8];    /* SNAP_MAGIC */
	uint32_t version; /* SNAP_FORMAT_VERSION */
	uint32_t header_size;
	uint32_t arch;  /* enum snap_arch */
	uint32_t flags; /* SNAP_F_* */
	uint64_t file_size;
	uint64_t created_ns;           /* CLOCK_REALTIME when written; informational */
	uint64_t parent_id;            /* SNAP_F_DIFF: the parent's id; else 0 */
	uint64_t section_table_offset; /* version 2: == header_size */
	uint32_t nsections;
	uint32_t section_entry_size; /* sizeof(struct snap_section) */
	struct snap_vm_config config;
	uint64_t generation; /* version 3: 1, 2, ... (see header slots); version 2: 0 */
	uint64_t reserved[14];
	uint64_t table_checksum; /* XXH64 of the section table */
	uint64_t checksum;       /* XXH64 of this header, this field as 0; the id */
};

enum snap_section_type {
	SNAP_SEC_NONE = 0,      /* reserved */
	SNAP_SEC_VCPU = 1,      /* instance = vCPU index */
	SNAP_SEC_VM = 2,        /* instance 0 */
	SNAP_SEC_DEVICE = 3,    /* instance = slot; version = the device's state version */
	SNAP_SEC_MEM_INDEX = 4, /* instance 0 */
	SNAP_SEC_MEM_DATA = 5,  /* instance 0; checksum 0 (chunks carry their own) */
	SNAP_SEC_MAX,
};

/* Payload layout versions of the sections this header defines. */
#define SNAP_VCPU_STATE_VERSION 1
#define SNAP_VM_STATE_VERSION   2 /* 1: late_ram_mib was reserved (0) */
#define SNAP_VM_STATE_V1        1 /* the oldest a reader takes */
#define SNAP_MEM_INDEX_VERSION  2
#define SNAP_MEM_DATA_VERSION   1

#define SNAP_SECTION_ALIGN 64
#define SNAP_DATA_ALIGN    4096

struct snap_section {
	uint32_t type;     /* enum snap_section_type */
	uint32_t version;  /* layout version of the payload */
	uint32_t instance; /* vCPU index or device slot */
	uint32_t flags;    /* none defined: 0 */
	uint64_t offset;   /* file offset of the payload */
	uint64_t length;   /* payload bytes */
	uint64_t checksum; /* XXH64 of the payload */
};

/* ---------------------------------------------------------------------------
 * vCPU state: the KVM_GET_* results of one vCPU, as the kernel UAPI lays them
 * out on x86-64 (sizes asserted against <linux/kvm.h> in snapshot/internal.h).
 * The VMM copies each struct kvm_* into its array and back.
 */
#define SNAP_KVM_REGS_SIZE      144  /* struct kvm_regs */
#define SNAP_KVM_SREGS_SIZE     312  /* struct kvm_sregs */
#define SNAP_KVM_FPU_SIZE       416  /* struct kvm_fpu */
#define SNAP_KVM_XSAVE_SIZE     4096 /* struct kvm_xsave (KVM_CAP_XSAVE2 <= 4096) */
#define SNAP_KVM_XCRS_SIZE      392  /* struct kvm_xcrs */
#define SNAP_KVM_LAPIC_SIZE     1024 /* struct kvm_lapic_state */
#define SNAP_KVM_EVENTS_SIZE    64   /* struct kvm_vcpu_events */
#define SNAP_KVM_DEBUGREGS_SIZE 128  /* struct kvm_debugregs */
#define SNAP_KVM_MP_STATE_SIZE  4    /* struct kvm_mp_state */
#define SNAP_KVM_CLOCK_SIZE     48   /* struct kvm_clock_data */
#define SNAP_KVM_IRQCHIP_SIZE   520  /* struct kvm_irqchip */
#define SNAP_KVM_PIT2_SIZE      112  /* struct kvm_pit_state2 */

struct snap_msr {
	uint32_t index;
	uint32_t pad; /* 0 */
	uint64_t data;
};

struct snap_vcpu_state {
	uint32_t id;         /* vCPU index, == section instance */
	uint32_t nmsrs;      /* used entries of msrs[], <= SNAP_MAX_MSRS */
	uint32_t xsave_size; /* bytes of xsave[] that KVM filled: 576 .. 4096 */
	uint32_t reserved;
	uint8_t regs[SNAP_KVM_REGS_SIZE];
	uint8_t sregs[SNAP_KVM_SREGS_SIZE];
	uint8_t fpu[SNAP_KVM_FPU_SIZE];
	uint8_t xsave[SNAP_KVM_XSAVE_SIZE];
	uint8_t xcrs[SNAP_KVM_XCRS_SIZE];
	uint8_t lapic[SNAP_KVM_LAPIC_SIZE];
	uint8_t events[SNAP_KVM_EVENTS_SIZE];
	uint8_t debugregs[SNAP_KVM_DEBUGREGS_SIZE];
	uint8_t mp_state[SNAP_KVM_MP_STATE_SIZE];
	uint32_t pad; /* 0 */
	struct snap_msr msrs[SNAP_MAX_MSRS];
};

/* snap_vm_state.flags */
#define SNAP_VM_HAS_PIT2 0x1u /* pit2[] is valid (the VM has an in-kernel PIT) */
/* The guest never asked for its late RAM (KILN_PORT_RAM, kiln/boot.h): RAM
 * from late_ram_mib MiB up was not registered with KVM when the snapshot
 * was taken, and a restore registers it only when the guest asks. */
#define SNAP_VM_LATE_RAM 0x2u
#define SNAP_VM_F_ALL    (SNAP_VM_HAS_PIT2 | SNAP_VM_LATE_RAM)

struct snap_vm_state {
	uint32_t flags;        /* SNAP_VM_* */
	uint32_t late_ram_mib; /* SNAP_VM_LATE_RAM: where late RAM starts (2 MiB aligned); else 0 */
	uint8_t clock[SNAP_KVM_CLOCK_SIZE];
	uint8_t irqchip[3][SNAP_KVM_IRQCHIP_SIZE]; /* chip_id 0 PIC master, 1 PIC slave, 2 IOAPIC */
	uint8_t pit2[SNAP_KVM_PIT2_SIZE];
};

/* ---------------------------------------------------------------------------
 * Guest memory.
 *
 * SNAP_SEC_MEM_INDEX payload: struct snap_mem_index, then
 *   uint64_t present[words]   chunk stored in this file (all set unless SNAP_F_DIFF)
 *   uint64_t zero[words]      stored chunk is all zero (no data); implies present
 *   struct snap_chunk chunk[nchunks]
 * with words = (nchunks + 63) / 64; bit i is word i / 64, bit i % 64. Bits past
 * nchunks are zero. Entries of chunks that have no data are all zero.
 */
enum snap_codec {
	SNAP_CODEC_NONE = 0, /* reserved */
	SNAP_CODEC_ZSTD = 1, /* chunks are zstd frames (or raw, see snap_chunk.enc) */
	SNAP_CODEC_MAX,
};

enum snap_chunk_enc {
	SNAP_ENC_NONE = 0, /* no data: zero or absent chunk */
	SNAP_ENC_ZSTD = 1, /* one zstd frame decompressing to exactly the chunk's length */
	SNAP_ENC_RAW = 2,  /* stored as is (did not compress); stored_len == chunk length */
	SNAP_ENC_MAX,
};

struct snap_mem_index {
	uint64_t mem_size;    /* == config.mem_size */
	uint32_t chunk_shift; /* SNAP_CHUNK_SHIFT_MIN .. SNAP_CHUNK_SHIFT_MAX */
	uint32_t nchunks;     /* ceil(mem_size / chunk size) */
	uint32_t codec;       /* enum snap_codec */
	uint32_t level;       /* compression level used; informational */
	uint64_t nzero;       /* zero bits set */
	uint64_t ndata;       /* chunks with data */
	uint64_t reserved[2];
};

struct snap_chunk {
	uint64_t offset;     /* file offset, inside the MEM_DATA section */
	uint32_t stored_len; /* bytes at offset */
	uint16_t enc;        /* enum snap_chunk_enc */
	uint16_t reserved;
	uint64_t checksum; /* XXH64 of the stored bytes */
	uint64_t content;  /* XXH64 of the chunk's bytes as restored (chunk length) */
};

#define SNAP_HEADER_SIZE 608

_Static_assert(sizeof(struct snap_image_id) == 48, "snap_image_id layout");
_Static_assert(sizeof(struct snap_vm_config) == 408, "snap_vm_config layout");
_Static_assert(sizeof(struct snap_header) == SNAP_HEADER_SIZE, "snap_header layout");
_Static_assert(sizeof(struct snap_section) == 40, "snap_section layout");
_Static_assert(sizeof(struct snap_vcpu_state) == 7624, "snap_vcpu_state layout");
_Static_assert(offsetof(struct snap_vcpu_state, msrs) % 8 == 0, "msrs alignment");
_Static_assert(sizeof(struct snap_vm_state) == 1728, "snap_vm_state layout");
_Static_assert(sizeof(struct snap_mem_index) == 56, "snap_mem_index layout");
_Static_assert(sizeof(struct snap_chunk) == 32, "snap_chunk layout");

#endif
