/* SPDX-License-Identifier: MIT */
/* The flattened device tree handed to the guest (bindings: kiln/boot.h). */
#include <errno.h>
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "fdt.h"
#include "virtio/virtio.h"

#define CHECK(x)                                                           \
	do {                                                               \
		int _r = (x);                                              \
		if (_r < 0)                                                \
			return _r == -FDT_ERR_NOSPACE ? -ENOSPC : -EINVAL; \
	} while (0)

static int prop_u64(void *fdt, const char *name, uint64_t v)
{
	return fdt_property_u64(fdt, name, v);
}

/* bootargs: the kernel options, with kiln.stats=1 added for --stats. */
static int build_bootargs(const struct vm_config *cfg, char *out, size_t size)
{
	int n = snprintf(out, size, "%s%s%s", cfg->cmdline ? cfg->cmdline : "",
	                 cfg->cmdline && cfg->stats ? " " : "", cfg->stats ? "kiln.stats=1" : "");
	return n < 0 || (size_t)n >= size ? -E2BIG : 0;
}

/* init's argv as an FDT string list: every argument exactly, empty ones too. */
static int prop_argv(void *fdt, const struct vm_config *cfg)
{
	size_t len = 0;
	char *buf, *p;
	int rc;

	for (int i = 0; i < cfg->init_argc; i++)
		len += strlen(cfg->init_argv[i]) + 1;
	if (len > KILN_FDT_MAX_SIZE / 2)
		return -E2BIG;
	p = buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < cfg->init_argc; i++) {
		size_t l = strlen(cfg->init_argv[i]) + 1;
		memcpy(p, cfg->init_argv[i], l);
		p += l;
	}
	rc = fdt_property(fdt, "kiln,argv", buf, (int)len);
	free(buf);
	return rc == -FDT_ERR_NOSPACE ? -ENOSPC : rc < 0 ? -EINVAL : 0;
}

static int build_tree(struct vm *vm, const struct fdt_params *p, void *buf, size_t size)
{
	const struct guest_mem *m = &vm->mem;
	char bootargs[4096], name[64];
	uint8_t seed[32];
	uint64_t reg[4];
	int nreg = 0;

	if (build_bootargs(&vm->cfg, bootargs, sizeof(bootargs)))
		return -E2BIG;
	if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
		return -EIO;

	CHECK(fdt_create(buf, (int)size));
	CHECK(fdt_add_reservemap_entry(buf, 0x1000, vm->boot_area_end - 0x1000));
	CHECK(fdt_add_reservemap_entry(buf, vm->kernel.pa_start,
	                               vm->kernel.pa_end - vm->kernel.pa_start));
	CHECK(fdt_add_reservemap_entry(buf, vm->fdt_pa, KILN_FDT_MAX_SIZE));
	if (vm->initrd_index_size)
		CHECK(fdt_add_reservemap_entry(buf, vm->initrd_index_pa, vm->initrd_index_size));
	CHECK(fdt_finish_reservemap(buf));

	CHECK(fdt_begin_node(buf, ""));
	CHECK(fdt_property_u32(buf, "#address-cells", 2));
	CHECK(fdt_property_u32(buf, "#size-cells", 2));
	CHECK(fdt_property_string(buf, "compatible", "kiln,vm"));

	reg[nreg++] = cpu_to_fdt64(0);
	reg[nreg++] = cpu_to_fdt64(m->low_size);
	if (m->size > m->low_size) {
		reg[nreg++] = cpu_to_fdt64(KILN_GPA_HIGH_RAM);
		reg[nreg++] = cpu_to_fdt64(m->size - m->low_size);
	}
	CHECK(fdt_begin_node(buf, "memory@0"));
	CHECK(fdt_property_string(buf, "device_type", "memory"));
	CHECK(fdt_property(buf, "reg", reg, nreg * (int)sizeof(reg[0])));
	CHECK(fdt_end_node(buf));

	CHECK(fdt_begin_node(buf, "chosen"));
	CHECK(fdt_property_string(buf, "bootargs", bootargs));
	if (vm->cfg.init_argc > 0) {
		int rc = prop_argv(buf, &vm->cfg);
		if (rc)
			return rc;
	}
	if (vm->initrd_size) {
		CHECK(prop_u64(buf, "linux,initrd-start", vm->initrd_pa));
		CHECK(prop_u64(buf, "linux,initrd-end", vm->initrd_pa + vm->initrd_size));
		if (vm->initrd_index_size) {
			CHECK(prop_u64(buf, "kiln,initrd-index-start", vm->initrd_index_pa));
			CHECK(prop_u64(buf, "kiln,initrd-index-size", vm->initrd_index_size));
		}
	}
	if (m->pmem) {
		CHECK(prop_u64(buf, "kiln,pmem-start", KILN_GPA_PMEM));
		CHECK(prop_u64(buf, "kiln,pmem-size", m->pmem_size));
		CHECK(prop_u64(buf, "kiln,pmem-image-size", m->pmem_file_size));
	}
	CHECK(fdt_property(buf, "rng-seed", seed, sizeof(seed)));
	CHECK(fdt_property_u32(buf, "kiln,tsc-khz", p->tsc_khz));
	CHECK(prop_u64(buf, "kiln,boot-tsc", p->boot_tsc));
	CHECK(prop_u64(buf, "kiln,boot-realtime", p->boot_realtime_ns));
	CHECK(prop_u64(buf, "kiln,pml4", p->pml4_pa));
	if (vm->late.early_end)
		CHECK(prop_u64(buf, "kiln,early-ram-end", vm->late.early_end));
	CHECK(fdt_end_node(buf));

	CHECK(fdt_begin_node(buf, "cpus"));
	CHECK(fdt_property_u32(buf, "#address-cells", 1));
	CHECK(fdt_property_u32(buf, "#size-cells", 0));
	for (int i = 0; i < vm->nr_vcpus; i++) {
		snprintf(name, sizeof(name), "cpu@%d", i);
		CHECK(fdt_begin_node(buf, name));
		CHECK(fdt_property_string(buf, "device_type", "cpu"));
		CHECK(fdt_property_u32(buf, "reg", (uint32_t)i));
		CHECK(fdt_end_node(buf));
	}
	CHECK(fdt_end_node(buf));

	for (int i = 0; i < vm->nr_devs; i++) {
		const struct virtio_dev *d = vm->devs[i];
		uint64_t r[2] = {cpu_to_fdt64(d->base), cpu_to_fdt64(KILN_MMIO_SIZE)};

		snprintf(name, sizeof(name), "virtio_mmio@%llx", (unsigned long long)d->base);
		CHECK(fdt_begin_node(buf, name));
		CHECK(fdt_property_string(buf, "compatible", "virtio,mmio"));
		CHECK(fdt_property(buf, "reg", r, sizeof(r)));
		CHECK(fdt_property_u32(buf, "interrupts", d->vector));
		CHECK(fdt_property_u32(buf, "kiln,device-id", d->ops->device_id));
		CHECK(prop_u64(buf, "kiln,device-features",
		               d->ops->features | (1ULL << VIRTIO_F_VERSION_1)));
		CHECK(fdt_property_u32(buf, "kiln,queue-max", d->ops->queue_max));
		CHECK(fdt_end_node(buf));
	}

	CHECK(fdt_end_node(buf));
	CHECK(fdt_finish(buf));
	return 0;
}

/*
 * libfdt's fdt_create clears all of the buffer it is given. In guest RAM
 * each page it clears is a page the host allocates: 16 of them (~0.1 ms on
 * PVM hosts) for the largest tree kiln allows, where a usual one fits in
 * one page. So the tree is built in a page first, and again in a 4 times
 * larger buffer while it does not fit.
 */
int fdt_build(struct vm *vm, const struct fdt_params *p, void *buf, size_t size)
{
	size_t try = size < 4096 ? size : 4096;
	int err;

	while ((err = build_tree(vm, p, buf, try)) == -ENOSPC && try < size)
		try = size / 4 > try ? try * 4 : size;
	return err;
}
