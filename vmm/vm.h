/* SPDX-License-Identifier: MIT */
/*
 * struct vm: all mutable state of one virtual machine hangs off it, so that a
 * snapshot can find everything from one root. Only main() creates one.
 */
#ifndef KILN_VMM_VM_H
#define KILN_VMM_VM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "jail/jail.h"
#include "kiln/boot.h"

struct ev_loop;
struct ev_async;
struct virtio_dev;
struct snap;
struct chunk_check;
struct vm_api;
struct uffd;

/* How guest RAM is backed (kiln-vmm --mem-backing; vmm/mem.c). */
enum mem_backing {
	MEM_BACKING_MEMFD, /* a memfd mapped shared: 4 KiB host pages */
	MEM_BACKING_THP,   /* anonymous memory in 2 MiB host pages where possible */
};

/* Guest RAM: one memfd (or anonymous mapping), mapped once in the VMM. RAM
 * below the device hole sits at GPA 0, the rest at 4 GiB; both come from
 * the same mapping. */
struct guest_mem {
	int fd;            /* -1 for MEM_BACKING_THP */
	uint8_t *host;     /* mapping of all of RAM */
	uint64_t size;     /* total bytes of RAM */
	uint64_t low_size; /* bytes at GPA [0, low_size) */
	/* The initramfs file, mapped read-only at KILN_GPA_INITRD. Not reachable
	 * through gpa_ptr(): devices must never write into it. */
	const uint8_t *initrd;
	uint64_t initrd_map_size; /* page-aligned */
	/* The --image file, mapped read-only at KILN_GPA_PMEM (virtio/pmem.c);
	 * like the initramfs, not reachable through gpa_ptr(). */
	const uint8_t *pmem;
	uint64_t pmem_size;      /* the window: image length rounded up to 2 MiB */
	uint64_t pmem_file_size; /* the image's length */
	/* RAM is a MAP_PRIVATE mapping of fd, a template's memory shared by
	 * every clone (vmm/template.c): writes stay in this process. */
	bool private;
	/* RAM is filled on demand from a snapshot (vmm/uffd.c): holes in fd
	 * are not zero, they are not loaded yet. Cleared by the userfaultfd
	 * thread once every chunk with data is in. */
	atomic_bool lazy;
	/* RAM is anonymous memory (MEM_BACKING_THP): pages never touched are
	 * not mapped yet, and read as zero. */
	bool anon;
	/* A bit per 4 KiB page of RAM (offsets in the mapping) that gpa_ptr()
	 * handed out since the last snapshot (vmm/dirty.c); NULL for anonymous
	 * RAM, or when it could not be allocated (no tracking then). */
	_Atomic uint64_t *marks;
};

/* A loaded kernel image (vmm/loader.c). */
#define KERNEL_MAX_SEGS 8
struct kernel_seg {
	uint64_t vaddr, paddr, memsz;
	uint32_t flags; /* ELF PF_X/PF_W/PF_R */
};

struct kernel_info {
	struct kiln_boot_image image;
	struct kernel_seg seg[KERNEL_MAX_SEGS];
	int nr_seg;
	uint64_t pa_start, pa_end; /* physical span, page-aligned */
};

/*
 * Validate the ELF kernel image in buf and copy its segments into guest
 * memory. On failure returns -EINVAL (or -ENOSPC when it does not fit) and
 * points *err at a message naming the problem.
 */
int kernel_load(struct guest_mem *mem, const void *buf, size_t len, struct kernel_info *ki,
                const char **err);

struct vcpu {
	struct vm *vm;
	int id;
	int fd;
	struct kvm_run *run;
	size_t run_size;
	pthread_t thread;
	bool parked; /* stopped at the quiesce point (vm->pause.lock) */
};

/* Why the VM stopped, for the one-line diagnosis. */
enum vm_stop {
	VM_RUNNING = 0,
	VM_STOP_EXIT,  /* the guest reported an exit status */
	VM_STOP_CRASH, /* the guest died; reason in vm->stop_msg */
	VM_STOP_ERROR, /* the VMM failed; reason in vm->stop_msg */
};

struct vm_config {
	const char *kernel_path;
	const char *initrd_path;
	uint64_t mem_size;
	int nr_cpus;
	const char *cmdline; /* kernel options */
	int init_argc;       /* argv after "--" */
	char **init_argv;
	int console_in, console_out;
	bool stats;
	uint64_t vsock_cid;
	const char *vsock_path; /* NULL: no vsock device */
	const char *image_path; /* NULL: no virtio-pmem device */
	const char *disk_path;  /* NULL: no virtio-blk device */
	bool disk_ro;
	const char *api_path; /* NULL: no API socket (vmm/api.c) */
	/* Start from a snapshot instead of booting (vmm/restore.c). */
	const char *restore_path;
	const char *parent_path; /* the parent of a diff snapshot */
	enum vm_restore_mode {
		RESTORE_EAGER,
		RESTORE_LAZY,
		RESTORE_TEMPLATE,
	} restore_mode;
	const char *template_dir; /* where template memory files live */
	int mem_fd;               /* template memory handed over, or -1 */
	int trace_fd;             /* hop timestamps (kiln/trace.h); <= 2 without KILN_TRACE */
	bool start_paused;        /* a restored VM waits for "resume" */
	bool mem_size_given;      /* --mem was on the command line */
	bool no_dirty_log;        /* --no-dirty-log: snapshots read all of RAM */
	enum mem_backing mem_backing;
	struct jail_cfg jail; /* vmm/jail/jail.h */
	/* --host-cpuid: kilnd's file of the host's table (host_cpuid.h), or NULL */
	const char *host_cpuid_path;
};

/*
 * Pausing (vmm/pause.c): the VMM raises KILN_VEC_QUIESCE and every vCPU
 * stops at the quiesce point (kiln/boot.h) until resumed. State is read
 * only while all of them are parked there.
 */
struct vm_pause {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int irq_fd;            /* eventfd: KILN_VEC_QUIESCE as an MSI */
	bool requested;        /* vCPUs reaching the quiesce point stay there */
	int nr_parked;         /* vCPUs parked */
	uint32_t resume_flags; /* KILN_RESUME_* for the vCPUs when they go on */
	uint64_t count;        /* pauses so far */
	uint64_t last_ns;      /* the last pause: request to all parked */
	uint64_t since;        /* CLOCK_MONOTONIC ns when the VM last paused */
};

/*
 * RAM registered with KVM only when the guest asks for it (vmm/kvm.c): a
 * memory slot costs KVM per-page metadata for all of it up front (shadow
 * paging), ~0.4 ms for 256 MiB and ~1 ms for 1 GiB, which every boot paid
 * before its first instruction. Now a boot registers [0, early_end) and the
 * guest asks for the rest at KILN_PORT_RAM once it runs out (kiln/boot.h);
 * its vCPU thread registers it then, in 0.3-1.2 ms. Registering it from
 * another thread while the guest boots instead took 4-30 ms on PVM hosts
 * (each slot change waits for an SRCU grace period, and one that follows
 * another closely, as after the device set-up, waits for jiffies), held
 * the slots_lock that device set-up needs, slowed the boot and held up the
 * exit of a VM that ended meanwhile.
 */
struct vm_late_ram {
	uint64_t early_end; /* RAM at GPA >= this comes late; 0: none does */
	pthread_mutex_t lock;
	bool done; /* all RAM is registered */
	/* CLOCK_MONOTONIC ns: the guest asked, and the slots were in. */
	uint64_t asked_ns, done_ns;
};

/* The RAM written since a snapshot (vmm/dirty.c). */
struct vm_dirty {
	bool on;           /* writes are tracked (now or from the first snapshot) */
	bool logging;      /* the RAM slots log dirty pages (KVM_MEM_LOG_DIRTY_PAGES) */
	bool valid;        /* the log and marks cover every write since ref_id */
	uint64_t ref_id;   /* the snapshot memory was last equal to (snap_id) */
	uint64_t *scratch; /* a bit per page of RAM: the slots' logs */
};

/* A memory slot of RAM, at host_off in the mapping of RAM (vmm/kvm.c). */
#define VM_RAM_SLOTS_MAX 3
struct ram_slot {
	uint32_t slot;
	uint64_t gpa, size, host_off;
};

/* Snapshot bookkeeping (vmm/snapshot.c, vmm/restore.c). */
struct vm_snap {
	/* The snapshot this VM was restored from, kept open: the parent of
	 * diff snapshots, and the source of a lazy restore's pages. */
	struct snap *src;
	struct snap *src_parent; /* src's parent when src is a diff */
	/* Identity of the boot files, named in every snapshot. */
	bool have_kernel_id, have_initrd_id;
	uint8_t kernel_id[48], initrd_id[48]; /* struct snap_image_id */
	struct stat kernel_st, initrd_st;     /* the files as they were opened */
	/* MSRs saved per vCPU: KVM_GET_MSR_INDEX_LIST, the readable ones. */
	uint32_t msr_index[64];
	unsigned nr_msrs;
	uint64_t count, last_ms; /* snapshots written, and the last one's time */
	/* The last snapshot this VM wrote (its path and id, or NULL): the
	 * next snapshot reopens it, if it is still there unchanged, and copies
	 * its chunks that did not change instead of compressing them again
	 * (see snap_save.ref). Not kept open: a file the caller deletes must
	 * not keep its space. */
	char *last_path;
	uint64_t last_id;
	/* The older snapshot the last one reused, still open: closing a file
	 * that was replaced frees its pages (milliseconds for a few MiB), so
	 * that waits until the reply is out (vm_snapshot_retire()). */
	struct snap *retired;
	struct uffd *uffd; /* lazy restore (vmm/uffd.c) */
	/* Eager restore: every chunk's checksum, checked on other threads
	 * while the VM is built (vmm/restore.c). */
	struct chunk_check *check;
	/* Restore milestones, ns from the start of main: checked against
	 * this VMM, memory filled (eager) or mapped, state applied. */
	uint64_t restore_checked_ns, restore_mem_ns, restore_ns;
};

struct vm {
	struct vm_config cfg;
	int kvm_fd;
	int fd;
	struct guest_mem mem;
	struct vcpu *vcpus;
	int nr_vcpus;
	uint32_t boot_version; /* the kernel's KILN_BOOT_VERSION (an older one it serves too) */

	/* Filled by the kernel loader. */
	struct kernel_info kernel;
	uint64_t initrd_pa, initrd_size;
	uint64_t initrd_index_pa, initrd_index_size; /* size 0: no index */
	uint64_t fdt_pa;
	uint64_t boot_area_end; /* boot area is [0x1000, boot_area_end) */
	uint64_t xcr0;          /* XCR0 given to the guest */
	/* The host's KVM_GET_SUPPORTED_CPUID (x86_pick_xcr0), or NULL. */
	struct kvm_cpuid2 *supported_cpuid;

	/* Devices, in MMIO slot order. */
	struct virtio_dev *devs[KILN_MMIO_MAX_DEVICES];
	int nr_devs;

	/* Event loop for device I/O; runs on the main thread. */
	struct ev_loop *loop;
	struct ev_async *stop_async;

	struct vm_pause pause;
	struct vm_late_ram late;
	struct vm_dirty dirty;
	struct vm_snap snap;
	struct vm_api *api;

	/* Milestones (CLOCK_MONOTONIC ns) for --stats and benchmarks: main
	 * entered, guest memory mapped, kernel loaded, boot area built, VM
	 * created (memory slots, irqchip), devices created, vCPUs created,
	 * device tree built (the guest's clock reference), vCPU threads
	 * started, first guest instruction, first console byte, stop. */
	struct {
		uint64_t start, mem_ready, kernel_loaded, boot_area, vm_created, devices, vcpus,
		    fdt_built, vcpus_started, first_run, first_output, stopped;
	} t;

	/* Set once, by whichever thread stops the VM first. */
	atomic_int stop;
	int exit_status;
	char stop_msg[256];
	pthread_mutex_t stop_lock;
};

/* Guest memory (vmm/mem.c). */
int mem_init(struct guest_mem *mem, uint64_t size);
/* The same, or as anonymous memory the host backs with huge pages where it
 * can (MEM_BACKING_THP). */
int mem_init_backed(struct guest_mem *mem, uint64_t size, enum mem_backing backing);
/* RAM as a private (copy-on-write) mapping of fd, a template's memory. */
int mem_init_private(struct guest_mem *mem, uint64_t size, int fd);
void mem_destroy(struct guest_mem *mem);
/*
 * The one checked path from a guest-physical range to host memory: returns
 * NULL unless all of [gpa, gpa + len) is RAM in a single region (no wrap, no
 * straddling the hole). Every guest-controlled address goes through here.
 */
void *gpa_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len);
/* True if gpa is RAM (len 1). */
bool gpa_is_ram(const struct guest_mem *mem, uint64_t gpa);
/* The same for memory the VMM only reads: [gpa, gpa + len) in RAM (marked
 * as gpa_ptr does), the initramfs or the pmem window; NULL otherwise. */
const void *gpa_ptr_ro(const struct guest_mem *mem, uint64_t gpa, uint64_t len);

/* The initramfs index, at most room bytes at pa, in guest RAM: built if the
 * archive is valid and it fits, else initrd_index_size stays 0
 * (vmm/initrd_index.c). */
void initrd_index_build(struct vm *vm, uint64_t pa, uint64_t room);

/* KVM plumbing (vmm/kvm.c). */
/* The VM with the RAM below vm->late.early_end (all of it when that is 0),
 * the images, the irqchip and the MSI routes. */
int vm_create(struct vm *vm);
void vm_destroy(struct vm *vm);
/* Register the RAM past vm->late.early_end unless that was done: 0 or
 * -errno. Any thread. */
int vm_late_ram_online(struct vm *vm);
/* The RAM slots registered now, into s (VM_RAM_SLOTS_MAX): their count. */
int vm_ram_slots(struct vm *vm, struct ram_slot *s);
/* Have every RAM slot, and those registered later, log dirty pages from
 * now on (vm->dirty.logging): 0 or -errno. */
int vm_ram_log_dirty(struct vm *vm);

/* Dirty tracking for snapshots (vmm/dirty.c). */
/* Before the RAM slots exist: track writes if this VM and host allow;
 * true if so. A restored VM's slots log from the start, a booted VM's
 * from its first snapshot on (vm_dirty_restart). */
bool vm_dirty_enable(struct vm *vm);
void vm_dirty_free(struct vm *vm);
/* With every vCPU parked and the devices at rest: the pages (a bit per
 * 4 KiB page of RAM) written since memory was last snapshot
 * vm->dirty.ref_id, into pages. -ENODATA if that is not known. */
int vm_dirty_collect(struct vm *vm, uint64_t *pages);
/* Memory is snapshot ref_id, restored from it before any vCPU ran (KVM
 * has logged nothing yet) or a device wrote it: count writes from here. */
void vm_dirty_begin(struct vm *vm, uint64_t ref_id);
/* Memory is snapshot ref_id, just written with the vCPUs parked and the
 * devices at rest: re-protect what was written, count writes from here. */
int vm_dirty_restart(struct vm *vm, uint64_t ref_id);
/* An eventfd that, when written, raises `vector` (a device's or
 * KILN_VEC_QUIESCE) on CPU 0 as an MSI; vm_create installed the routes. */
int vm_msi_irqfd(struct vm *vm, unsigned vector);
/* An eventfd signalled when the guest writes `len` bytes to MMIO `gpa`
 * (with datamatch `data` when match is true), without a VM exit. */
int vm_ioeventfd(struct vm *vm, uint64_t gpa, unsigned len, bool match, uint64_t data);

static inline uint64_t vm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Pause and resume at the quiesce point (vmm/pause.c). Main thread. */
int vm_pause_init(struct vm *vm);
/* 0 when every vCPU is parked (1 if it already was); -ETIMEDOUT (message
 * in why) if the guest did not get there within timeout_ms. */
int vm_pause(struct vm *vm, int timeout_ms, char *why, size_t len);
/* Let the vCPUs go on (0; 1 if they were not paused). */
int vm_resume(struct vm *vm);
bool vm_is_paused(struct vm *vm);
/* The VM is stopping: wake parked vCPUs so they can see it. */
void vm_pause_release(struct vm *vm);
/* A vCPU exited at KILN_PORT_QUIESCE: park it while the VM is paused, then
 * hand the guest the resume registers (kiln/boot.h). vCPU thread. */
void vcpu_quiesce_exit(struct vcpu *c);
/* A vCPU of a VM restored --paused, before its first KVM_RUN: it is at the
 * quiesce point already; park it there. vCPU thread. */
void vcpu_start_parked(struct vcpu *c);
/* Set the resume registers (RDI, RSI, RDX, R8-R11) for flags. */
int vcpu_set_resume_regs(struct vcpu *c, uint32_t flags);

/* Stop the VM from any thread; the first caller's status and message win. */
void vm_stop(struct vm *vm, enum vm_stop why, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
