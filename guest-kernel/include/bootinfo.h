/* SPDX-License-Identifier: MIT */
/* What the VMM told us in the device tree (bindings: kiln/boot.h). */
#ifndef KILN_BOOTINFO_H
#define KILN_BOOTINFO_H

#include "klib.h"
#include "kiln/boot.h"

#define BOOT_MAX_RANGES 16

struct mem_range {
	uint64_t base, size;
};

struct bootinfo {
	struct mem_range ram[BOOT_MAX_RANGES];
	int nr_ram;
	struct mem_range reserved[BOOT_MAX_RANGES];
	int nr_reserved;
	const char *bootargs; /* points into the FDT */
	const char *argv;     /* init's argv: argc NUL-terminated strings */
	int argc;
	uint64_t initrd_start, initrd_end;
	/* The archive's index (cpio.h) in reserved RAM; size 0: none. */
	uint64_t initrd_index, initrd_index_size;
	/* The pmem window (kiln,pmem-*); size 0: no image. image_size <= size. */
	uint64_t pmem_start, pmem_size, pmem_image_size;
	uint8_t rng_seed[32];
	bool has_rng_seed;
	uint32_t tsc_khz;
	uint64_t boot_tsc, boot_realtime_ns;
	uint64_t pml4;
	/* RAM at and above it is usable once host_ram_online() has returned;
	 * 0: all RAM is usable at once (kiln,early-ram-end). */
	uint64_t early_ram_end;
	int nr_cpus;
	struct {
		uint64_t base;
		uint32_t vector;
		uint32_t device_id;
		uint64_t features; /* offered by the device */
		uint32_t queue_max;
	} virtio[KILN_MMIO_MAX_DEVICES];
	int nr_virtio;
};

/* Split bootargs into words at spaces, copied NUL-terminated into buf.
 * Returns the number of words or -E2BIG if buf or max words are too few. */
int bootargs_split(const char *args, char *buf, size_t buflen, char **words, int max);

/* Parse and sanity-check the FDT; -EINVAL with *err naming the problem. */
int bootinfo_parse(const void *fdt, struct bootinfo *bi, const char **err);

#endif
