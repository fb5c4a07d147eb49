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
#include <time.h>

#include "kiln/boot.h"

struct ev_loop;
struct ev_async;
struct virtio_dev;

/* Guest RAM: one memfd, mapped once in the VMM. RAM below the device hole
 * sits at GPA 0, the rest at 4 GiB; both come from the same memfd. */
struct guest_mem {
	int fd;
	uint8_t *host;     /* mapping of the whole memfd */
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
};

struct vm {
	struct vm_config cfg;
	int kvm_fd;
	int fd;
	struct guest_mem mem;
	struct vcpu *vcpus;
	int nr_vcpus;

	/* Filled by the kernel loader. */
	struct kernel_info kernel;
	uint64_t initrd_pa, initrd_size;
	uint64_t fdt_pa;
	uint64_t boot_area_end; /* boot area is [0x1000, boot_area_end) */
	uint64_t xcr0;          /* XCR0 given to the guest */

	/* Devices, in MMIO slot order. */
	struct virtio_dev *devs[KILN_MMIO_MAX_DEVICES];
	int nr_devs;

	/* MSI routes handed to KVM (KVM_SET_GSI_ROUTING replaces the table). */
	struct kvm_irq_routing *routes;
	int nr_routes;

	/* Event loop for device I/O; runs on the main thread. */
	struct ev_loop *loop;
	struct ev_async *stop_async;

	/* Milestones (CLOCK_MONOTONIC ns) for --stats and benchmarks. */
	struct {
		uint64_t start, vm_created, first_run, first_output, stopped;
	} t;

	/* Set once, by whichever thread stops the VM first. */
	atomic_int stop;
	int exit_status;
	char stop_msg[256];
	pthread_mutex_t stop_lock;
};

/* Guest memory (vmm/mem.c). */
int mem_init(struct guest_mem *mem, uint64_t size);
void mem_destroy(struct guest_mem *mem);
/*
 * The one checked path from a guest-physical range to host memory: returns
 * NULL unless all of [gpa, gpa + len) is RAM in a single region (no wrap, no
 * straddling the hole). Every guest-controlled address goes through here.
 */
void *gpa_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len);
/* True if gpa is RAM (len 1). */
bool gpa_is_ram(const struct guest_mem *mem, uint64_t gpa);

/* KVM plumbing (vmm/kvm.c). */
int vm_create(struct vm *vm);
void vm_destroy(struct vm *vm);
/* An eventfd that, when written, raises `vector` on CPU 0 as an MSI. */
int vm_msi_irqfd(struct vm *vm, unsigned vector);
/* Install the MSI routes of every vm_msi_irqfd() so far. */
int vm_commit_irq_routes(struct vm *vm);
/* An eventfd signalled when the guest writes `len` bytes to MMIO `gpa`
 * (with datamatch `data` when match is true), without a VM exit. */
int vm_ioeventfd(struct vm *vm, uint64_t gpa, unsigned len, bool match, uint64_t data);

static inline uint64_t vm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Stop the VM from any thread; the first caller's status and message win. */
void vm_stop(struct vm *vm, enum vm_stop why, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
