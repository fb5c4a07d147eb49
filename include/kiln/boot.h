/* SPDX-License-Identifier: MIT */
/*
 * kiln boot ABI: what kiln-vmm promises kiln-kernel at the first instruction,
 * and what the kernel image must tell the VMM about itself.
 *
 * Version 5 (2 added the snapshot quiesce point: KILN_VEC_QUIESCE and
 * KILN_PORT_QUIESCE; 3 KILN_PORT_POPULATE and the batched device-register
 * port KILN_PORT_MMIO; 4 RAM that comes online later: kiln,early-ram-end
 * and KILN_PORT_RAM; kiln_boot_image.syscall_entry_cpl3, LSTAR on PVM
 * hosts; 5 copies by the VMM, KILN_PORT_COPY). Any change to a layout,
 * constant or meaning below bumps KILN_BOOT_VERSION; the VMM refuses
 * images that carry a version outside KILN_BOOT_VERSION_MIN..VERSION, and
 * refuses to restore a snapshot taken with one (a change that is not only
 * an addition raises KILN_BOOT_VERSION_MIN with it).
 *
 * Why so much is done by the VMM: on PVM hosts every guest CPL0 instruction
 * is emulated (0.3-1 us each, see shared/probes/RESULTS.md), so page tables,
 * GDT, IDT, TSS, MSRs and the local APIC are all prepared by the host and the
 * kernel's own boot path is a handful of instructions.
 *
 * Included by host C (kiln-vmm), guest C and guest assembly.
 */
#ifndef KILN_BOOT_H
#define KILN_BOOT_H

#define KILN_BOOT_VERSION 5
/* The oldest version kiln-vmm still boots and restores: 5 only added a
 * port, which an older kernel never uses, so its snapshots (and the
 * kernels kilnd keeps pinned for them) go on working across an upgrade. */
#define KILN_BOOT_VERSION_MIN 4

/* 64-bit constants usable from C and assembly. */
#ifdef __ASSEMBLER__
#define KILN_U64(x) x
#else
#define KILN_U64(x) x##ULL
#endif

/* ---------------------------------------------------------------------------
 * Guest-physical layout
 *
 * RAM starts at 0. RAM above KILN_GPA_HOLE_START is placed at 4 GiB instead,
 * leaving [KILN_GPA_HOLE_START, 4 GiB) for devices.
 */
#define KILN_GPA_HOLE_START KILN_U64(0xc0000000)
#define KILN_GPA_HIGH_RAM   KILN_U64(0x100000000)

/* The initramfs, when there is one: the archive file itself, mapped
 * read-only (guest writes are dropped) from the host's page cache, so every
 * VM booted from one archive shares its pages. Not RAM. */
#define KILN_GPA_INITRD KILN_U64(0xc0000000)
#define KILN_INITRD_MAX KILN_U64(0x10000000)

/* The virtio-pmem window, when there is an image (kiln-vmm --image): the
 * image file itself, mapped read-only (guest writes are dropped) from the
 * host's page cache, so every VM booted from one image shares its pages.
 * The window is the file's length rounded up to 2 MiB; bytes past the end of
 * the file read as zero. Not RAM. Guest RAM never reaches it: the VMM refuses
 * --mem above 63 GiB together with --image. */
#define KILN_GPA_PMEM KILN_U64(0x1000000000) /* 64 GiB */
#define KILN_PMEM_MAX KILN_U64(0x1000000000) /* largest image: 64 GiB */

/* virtio-mmio windows: device i is at KILN_GPA_MMIO_BASE + i * KILN_MMIO_SIZE. */
#define KILN_GPA_MMIO_BASE    KILN_U64(0xd0000000)
#define KILN_MMIO_SIZE        KILN_U64(0x1000)
#define KILN_MMIO_MAX_DEVICES 32

/* The kernel image is loaded at its p_paddr, which must be >= this. Below it
 * the VMM keeps its boot area (page tables, GDT, TSS, IDT), listed in the
 * FDT's memory reservation block like every other range the guest must not
 * allocate (kernel image, the FDT itself). */
#define KILN_GPA_KERNEL_MIN KILN_U64(0x200000)

/* ---------------------------------------------------------------------------
 * Virtual layout at entry (4-level paging, built by the VMM)
 *
 *  [0, 4 KiB)                 nothing; each process maps its zpoline sled here
 *  KILN_VA_DIRECT_MAP + pa    all RAM, read/write, no-execute, user-accessible
 *                             (the library OS runs at CPL3 and reads virtqueues,
 *                             page tables and the initramfs through it)
 *  KILN_VA_DIRECT_MAP + KILN_GPA_INITRD
 *                             the initramfs, read-only, no-execute, user
 *  KILN_VA_DIRECT_MAP + KILN_GPA_PMEM
 *                             the pmem window (whole, 2 MiB pages), read-only,
 *                             no-execute, user: image data is read in place
 *  KILN_VA_MMIO + (pa - KILN_GPA_MMIO_BASE)
 *                             the virtio-mmio windows, uncached, user-accessible
 *                             (doorbells can be rung from CPL3)
 *  [KILN_VA_SV_START, KILN_VA_SV_END)
 *                             supervisor segments of the kernel image:
 *                             supervisor-only pages
 *  [KILN_VA_LIBOS_START, KILN_VA_LIBOS_END)
 *                             library OS segments: user pages
 *
 * Kernel PT_LOAD segments are mapped page by page with 4 KiB pages: R always,
 * W if PF_W, execute only if PF_X. The lower half (user space) belongs to the
 * guest's processes. Inside one guest there is no privilege boundary between
 * processes; the VM is the isolation boundary.
 */
#define KILN_VA_DIRECT_MAP  KILN_U64(0xffff888000000000)
#define KILN_VA_MMIO        KILN_U64(0xffffc90000000000)
#define KILN_VA_SV_START    KILN_U64(0xffffffff80000000)
#define KILN_VA_SV_END      KILN_U64(0xffffffff90000000)
#define KILN_VA_LIBOS_START KILN_U64(0xffffffff90000000)
#define KILN_VA_LIBOS_END   KILN_U64(0xffffffffc0000000)

/*
 * zpoline: every `syscall` (0f 05) in a program is rewritten to `call *%rax`
 * (ff d0), which lands in a nop sled at virtual address rax (the syscall
 * number). The sled ends at KILN_SLED_END with `jmp rel32` to the library
 * OS's entry. The entry lives at KILN_VA_ZPOLINE_ENTRY so that the rel32
 * bytes are 90 90 90 90: a call that lands inside the jump still slides into
 * it. Past the jump the page is filled with `hlt`, which faults at CPL3 and is
 * reported to the program as -ENOSYS.
 */
#define KILN_SLED_END         512
#define KILN_VA_ZPOLINE_ENTRY KILN_U64(0xffffffff90909295)

/* ---------------------------------------------------------------------------
 * Machine state at entry
 *
 *  - 64-bit mode, CPL0, paging as above; CR0 = PE|MP|ET|NE|WP|AM|PG,
 *    CR4 = PAE|PGE|OSFXSR|OSXMMEXCPT|FSGSBASE, EFER = SCE|LME|LMA|NXE.
 *  - GDT: KILN_SEL_* below; TSS loaded with RSP0 and ISTs from the image's
 *    kiln_boot_image and an I/O bitmap that lets CPL3 use the KILN_PORT_*
 *    ports but KILN_PORT_QUIESCE (and nothing else).
 *  - IDT: built from kiln_boot_image.vector[]; loaded.
 *  - x2APIC enabled, software-enabled (SVR), LVT timer in TSC-deadline mode
 *    on KILN_VEC_TIMER; other LVTs masked.
 *  - MSRs: STAR (KILN_SEL_*), GS_BASE = KERNEL_GS_BASE = FS_BASE = 0, and
 *    LSTAR and FMASK by the kind of host:
 *      hardware virtualization (VMX/SVM), where `syscall` enters CPL0:
 *        LSTAR = kiln_boot_image.syscall_entry, FMASK = TF|DF|IF|AC;
 *      PVM (kvm_pvm; the VMM reads "PVM" from MSR 0x4b564d11), where
 *        `syscall` is reflected to LSTAR without a privilege change (CPL3,
 *        RCX = return RIP, R11 = RFLAGS, FMASK applied, the program's RSP):
 *        LSTAR = kiln_boot_image.syscall_entry_cpl3, FMASK = TF|DF|AC (IF
 *        must stay set: CPL3 code cannot set it again).
 *  - RIP = kiln_boot_image.entry, RSP = kiln_boot_image.boot_stack,
 *    RDI = guest-physical address of the FDT, RFLAGS = 0x2 (IF clear).
 *  - CPUID hides CX16 (CPL0 cmpxchg16b cannot be emulated on PVM hosts) and
 *    whatever else the host lets the VMM hide; see vmm/cpuid.c.
 */
#define KILN_SEL_KCODE   0x10
#define KILN_SEL_KDATA   0x18
#define KILN_SEL_UCODE32 0x23
#define KILN_SEL_UDATA   0x2b
#define KILN_SEL_UCODE   0x33
#define KILN_SEL_TSS     0x40

#define KILN_VEC_TIMER    0xec /* LAPIC TSC-deadline timer */
#define KILN_VEC_SPURIOUS 0xff /* LAPIC spurious vector */
#define KILN_VEC_DEVICE0  0x40 /* device i interrupts on KILN_VEC_DEVICE0 + i */
/* Snapshot quiesce request: the VMM raises it (an MSI, like device
 * interrupts) when it wants the vCPUs stopped at a known point; see
 * KILN_PORT_QUIESCE. Highest priority class, so it is taken before queued
 * device and timer interrupts. */
#define KILN_VEC_QUIESCE 0xf0

/* ---------------------------------------------------------------------------
 * I/O ports (PIO, all handled by the VMM; all are usable from CPL0 and
 * CPL3 but QUIESCE and MMIO, from CPL0 only)
 *
 * Arguments travel in general registers, read by the VMM at the exit.
 */
#define KILN_PORT_BASE 0x700
/* out to EXIT: the guest is done; EDI = exit status (0-255). The VMM drains
 * its devices (console output is written out) and exits with that status. */
#define KILN_PORT_EXIT (KILN_PORT_BASE + 0)
/* out to LOG: RDI = guest-physical address, RSI = length (<= 4096) of a
 * message the VMM writes to its stderr. For panics before the console runs. */
#define KILN_PORT_LOG (KILN_PORT_BASE + 1)
/* out to FATAL: the supervisor hit an exception it cannot handle.
 * RDI = vector, RSI = error code, R8 = faulting RIP, R9 = CS,
 * R10 = RFLAGS, R11 = RSP, R12 = CR2. The VMM prints a one-line diagnosis. */
#define KILN_PORT_FATAL (KILN_PORT_BASE + 2)
/*
 * out to QUIESCE: the quiesce point, reached only from the supervisor's
 * KILN_VEC_QUIESCE handler, at CPL0 with interrupts off (CPL3 may not use
 * this port: the TSS I/O bitmap denies it). Pausing and taking snapshots
 * happen only here, at a guest-initiated exit: an asynchronous stop can lose
 * an exception in mid-delivery on PVM hosts (shared/probes/RESULTS.md §7).
 *
 * The VMM stops the vCPU at this exit for as long as the VM is paused; the
 * vCPU may then resume in the same VM or, from a snapshot, in another VM on
 * another host. Either way the VMM sets, just before the vCPU runs again:
 *   RDI    CLOCK_REALTIME (ns since the epoch) of the host, read at ...
 *   RSI    ... this value of the guest's TSC
 *   RDX    KILN_RESUME_* flags (0: no pause took place; the rest of the
 *          registers are then meaningless)
 *   R8-R11 32 bytes of fresh host entropy (getrandom)
 * Every other register (and all of memory) is as the handler left it. The
 * guest's TSC may have jumped either way across a pause (a restore on
 * another host); the handler records its own TSC just before the `out`.
 */
#define KILN_PORT_QUIESCE (KILN_PORT_BASE + 3)
/*
 * out to POPULATE (CPL0 and CPL3): RDI = guest-physical address, RSI =
 * length (both page-aligned, at most 2 MiB) of RAM the guest is about to
 * use. A hint: the VMM may make the host memory behind it present now, and
 * ignores a range that is not RAM. (On PVM hosts the first touch of a guest
 * page is a host fault, ~15 us when the host has yet to allocate the page;
 * of pages it has, the host maps the 8 around a fault at once.)
 */
#define KILN_PORT_POPULATE (KILN_PORT_BASE + 4)
/*
 * out to MMIO (CPL0): RSI = guest-physical address of an array of RCX (at most
 * KILN_MMIO_BATCH_MAX) struct kiln_mmio_op, RDI = guest-physical base of a
 * virtio-mmio window. The VMM does the 32-bit register accesses in order,
 * exactly as that many single MMIO accesses, and stores what each read
 * returns in its op (all-ones where nothing answers). One exit for a whole
 * device set-up instead of one per register. The array lies in guest RAM.
 */
#define KILN_PORT_MMIO      (KILN_PORT_BASE + 5)
#define KILN_MMIO_BATCH_MAX 64
#define KILN_MMIO_WRITE     0x80000000U

#ifndef __ASSEMBLER__
#include <stdint.h>

/* One 8-byte word per access, so the guest builds it with one store. */
struct kiln_mmio_op {
	uint32_t off;   /* register offset from the base (< 4096), | KILN_MMIO_WRITE */
	uint32_t value; /* written, or filled in by the VMM for reads */
};
#endif
/*
 * out to RAM (CPL0 and CPL3): the guest wants the RAM at and past
 * kiln,early-ram-end (see /chosen), typically once the RAM below it has run
 * out. Returns once all RAM in /memory@0 is usable: the VMM registers the
 * rest with KVM then (on PVM hosts ~0.4 ms for 256 MiB of RAM, ~1 ms per
 * GiB, which a boot no longer pays up front). No arguments: the registers
 * are ignored. Harmless at any time and any number of times: answered at
 * once when the RAM is usable already (no kiln,early-ram-end, a VM restored
 * from a snapshot, a second call).
 */
#define KILN_PORT_RAM (KILN_PORT_BASE + 6)
/*
 * out to COPY (CPL0 and CPL3): RDI = guest-physical address of an array of
 * RSI (at most KILN_COPY_BATCH_MAX) struct kiln_copy_op in RAM, which must
 * not cross a page boundary. For each op in order the VMM copies len bytes
 * (at most 4096) from src, in RAM, the pmem window or the initramfs, to
 * dst, in RAM, and then sets its done to 1; an op it refuses (a range
 * outside those, a bad length) or cannot do now (RAM still being restored
 * lazily) keeps done as it was, for the guest to copy itself. Each range is
 * read once. Why: on PVM hosts the guest's first touch of a page through
 * its own mappings costs a host shadow fault (~15 us), and an image page
 * copied into a fresh page through the direct map is two of them; one exit
 * does a batch with none.
 */
#define KILN_PORT_COPY      (KILN_PORT_BASE + 7)
#define KILN_COPY_BATCH_MAX 128
#define KILN_PORT_COUNT     8

#ifndef __ASSEMBLER__
struct kiln_copy_op {
	uint64_t dst, src; /* guest-physical */
	uint32_t len;      /* 1..4096 */
	uint32_t done;     /* 0 from the guest; 1 once the VMM copied it */
};
#endif
/*
 * RDX at resume from the quiesce point. RESTORED: this is a new VM, restored
 * from a snapshot; devices were reset where the host side could not be kept
 * (vsock connections), and clones of one snapshot share all guest state,
 * random generator included, until the guest reseeds it.
 */
#define KILN_RESUME_PAUSED   0x1 /* the vCPU was held stopped: time passed */
#define KILN_RESUME_RESTORED 0x2

/* Exit status the VMM uses when the guest dies without reporting one. */
#define KILN_EXIT_GUEST_CRASH 125

/* ---------------------------------------------------------------------------
 * The kernel image's self-description
 *
 * The image carries one ELF note with name "KILN" and type KILN_NOTE_BOOT whose
 * descriptor is a struct kiln_boot_image. All addresses are kernel virtual
 * addresses inside the image's PT_LOAD segments.
 */
#define KILN_NOTE_NAME        "KILN"
#define KILN_NOTE_BOOT        1
#define KILN_BOOT_IMAGE_MAGIC 0x4b494c4eU /* "KILN" */

#define KILN_NR_VECTORS 256
/* vector_flags[i] */
#define KILN_VF_IST_MASK 0x07 /* IST slot 1..7, 0 = none */
#define KILN_VF_DPL3     0x08 /* gate callable from CPL3 (int3) */
#define KILN_VF_TRAP     0x10 /* trap gate: IF stays as it was */

#ifndef __ASSEMBLER__
#include <stdint.h>

struct kiln_boot_image {
	uint32_t magic;                   /* KILN_BOOT_IMAGE_MAGIC */
	uint32_t version;                 /* KILN_BOOT_VERSION */
	uint64_t entry;                   /* CPL0 entry point */
	uint64_t boot_stack;              /* initial RSP (top of a stack in the image) */
	uint64_t syscall_entry;           /* LSTAR where `syscall` enters CPL0 */
	uint64_t syscall_entry_cpl3;      /* LSTAR on PVM hosts: a user page */
	uint64_t rsp0;                    /* TSS.RSP0: stack for traps from CPL3 */
	uint64_t ist[7];                  /* TSS.IST1..7, 0 = unused */
	uint64_t vector[KILN_NR_VECTORS]; /* handler address, 0 = no gate */
	uint8_t vector_flags[KILN_NR_VECTORS];
};
#endif

/* ---------------------------------------------------------------------------
 * Flattened device tree (built by the VMM with libfdt, read by the kernel)
 *
 *  /  #address-cells = <2>, #size-cells = <2>, compatible = "kiln,vm"
 *  /memory@0      device_type = "memory"; reg = RAM ranges (64-bit pairs)
 *  /chosen
 *      bootargs            kernel options, separated by spaces
 *      kiln,argv           init's argv as a string list (absent: none)
 *      linux,initrd-start  u64 GPA of the cpio archive (absent: none)
 *      linux,initrd-end    u64 GPA one past its end
 *      kiln,initrd-index-start
 *                          u64 GPA of the archive's index in reserved RAM
 *                          (absent: none): its members without their data,
 *                          so that unpacking it need not touch every page
 *                          holding a header; records as in
 *                          guest-kernel/libos/fs/cpio.h. Given only for an
 *                          archive whose every member name passes
 *                          cpio_name_ok(), which the guest then need not
 *                          check again
 *      kiln,initrd-index-size
 *                          u64 bytes in the index
 *      kiln,pmem-start     u64 GPA of the pmem window, KILN_GPA_PMEM
 *                          (absent: no image)
 *      kiln,pmem-size      u64 bytes in the window (a multiple of 2 MiB)
 *      kiln,pmem-image-size
 *                          u64 exact length of the image file; the window
 *                          past it reads as zero (a filesystem larger than
 *                          this was truncated)
 *      rng-seed            32 bytes of host entropy
 *      kiln,tsc-khz        u32 guest TSC frequency
 *      kiln,boot-tsc       u64 guest TSC at kiln,boot-realtime
 *      kiln,boot-realtime  u64 CLOCK_REALTIME in ns at that moment
 *      kiln,pml4           u64 GPA of the boot page-table root (its upper
 *                          half is the kernel half of every address space;
 *                          its lower half is empty: the guest may make it
 *                          a process's root, never freeing the page)
 *      kiln,early-ram-end  u64 GPA, a multiple of 2 MiB inside the first
 *                          /memory@0 range (absent: all RAM is usable at
 *                          once). RAM at and above it (the rest of that range
 *                          and every later one) is not usable, not even to
 *                          read, until an out to KILN_PORT_RAM has returned.
 *                          It is RAM all the same: the guest counts it in
 *                          its totals from the start. Everything the VMM
 *                          places in RAM (the reservations below, the FDT)
 *                          lies below it
 *  /cpus/cpu@N    reg = <N> (x2APIC id)
 *  /virtio_mmio@ADDR  compatible = "virtio,mmio"; reg = <ADDR 0x1000>;
 *                 kiln,device-id = <virtio device ID> (saves probing);
 *                 kiln,device-features = u64 features the device offers
 *                 and kiln,queue-max = <QueueNumMax of every queue> (save
 *                 reading them: each MMIO access is a VM exit);
 *                 interrupts = <vector> (delivered as an MSI to CPU 0,
 *                 edge-triggered; the InterruptStatus register is kept
 *                 up to date but need not be acknowledged)
 *  memory reservation block: boot area, kernel image, FDT.
 *
 * virtio-console (device 3), single port, no optional features. kiln adds
 * one convention: when the host's input reaches end of file, the device
 * returns one receive buffer with used length 0, and no input after it.
 *
 * virtio-pmem (device 27), present with an image: no feature bits; config
 * space {le64 start; le64 size} equals kiln,pmem-start/-size. One request
 * queue: the driver posts {le32 type} and a writable {le32 ret}; FLUSH (type
 * 0) always answers ret 0, as the window is read-only; any other type gets
 * ret 1 (EIO).
 *
 * virtio-blk (device 2), present with a disk (kiln-vmm --disk FILE[,ro]):
 * a raw file or block device. Features FLUSH, SEG_MAX (126), SIZE_MAX
 * (1 MiB per segment), BLK_SIZE (512), RO for a read-only disk, and
 * VIRTIO_RING_F_EVENT_IDX. capacity is in 512-byte sectors (a partial last
 * sector of the file is not visible). Requests IN, OUT, FLUSH (fdatasync on
 * the host) and GET_ID; anything else gets VIRTIO_BLK_S_UNSUPP. A request
 * out of range, not a multiple of 512 bytes, with its buffers in the wrong
 * direction, or a write to a read-only disk, gets VIRTIO_BLK_S_IOERR.
 *
 * Kernel options in bootargs:
 *   kiln.stats=1   print counts of unimplemented syscalls at exit
 *   init=PATH      program to run when there is no kiln,argv (default /init;
 *                  with an image and no initramfs, /sbin/kiln-init)
 *   kiln.borrow=0  copy image pages into programs instead of mapping them in
 *                  place (to measure what mapping in place saves)
 */
#define KILN_FDT_MAX_SIZE 0x10000

#endif
