/* SPDX-License-Identifier: MIT */
/* Device tree → struct bootinfo. Pure: also built on the host for tests. */
#include <libfdt.h>

#include "bootinfo.h"

static int get_u64(const void *fdt, int node, const char *name, uint64_t *v)
{
	int len;
	const fdt64_t *p = fdt_getprop(fdt, node, name, &len);

	if (!p || len != 8)
		return -1;
	*v = fdt64_ld(p);
	return 0;
}

static int get_u32(const void *fdt, int node, const char *name, uint32_t *v)
{
	int len;
	const fdt32_t *p = fdt_getprop(fdt, node, name, &len);

	if (!p || len != 4)
		return -1;
	*v = fdt32_ld(p);
	return 0;
}

static int parse_memory(const void *fdt, struct bootinfo *bi, const char **err)
{
	int node = fdt_path_offset(fdt, "/memory@0"), len;
	const fdt64_t *reg;

	if (node < 0 || !(reg = fdt_getprop(fdt, node, "reg", &len)) || len <= 0 || len % 16) {
		*err = "no /memory@0 node with 64-bit reg pairs";
		return -EINVAL;
	}
	for (int i = 0; i < len / 16; i++) {
		if (bi->nr_ram == BOOT_MAX_RANGES) {
			*err = "too many memory ranges";
			return -EINVAL;
		}
		bi->ram[bi->nr_ram].base = fdt64_ld(&reg[2 * i]);
		bi->ram[bi->nr_ram].size = fdt64_ld(&reg[2 * i + 1]);
		bi->nr_ram++;
	}
	for (int i = 0; i < fdt_num_mem_rsv(fdt); i++) {
		uint64_t a, s;
		if (fdt_get_mem_rsv(fdt, i, &a, &s) < 0 || bi->nr_reserved == BOOT_MAX_RANGES) {
			*err = "bad memory reservation block";
			return -EINVAL;
		}
		bi->reserved[bi->nr_reserved].base = a;
		bi->reserved[bi->nr_reserved].size = s;
		bi->nr_reserved++;
	}
	return 0;
}

/* Whether [base, base + size) is non-empty and inside one of r[0, n). */
static bool in_ranges(const struct mem_range *r, int n, uint64_t base, uint64_t size)
{
	for (int i = 0; i < n; i++)
		if (size && base >= r[i].base && base - r[i].base <= r[i].size &&
		    size <= r[i].size - (base - r[i].base))
			return true;
	return false;
}

static int parse_chosen(const void *fdt, struct bootinfo *bi, const char **err)
{
	int node = fdt_path_offset(fdt, "/chosen"), len;
	const void *p;

	if (node < 0) {
		*err = "no /chosen node";
		return -EINVAL;
	}
	p = fdt_getprop(fdt, node, "bootargs", &len);
	if (p && len > 0 && ((const char *)p)[len - 1] == 0)
		bi->bootargs = p;
	else
		bi->bootargs = "";
	p = fdt_getprop(fdt, node, "kiln,argv", &len);
	if (p && len > 0) {
		if (((const char *)p)[len - 1] != 0) {
			*err = "kiln,argv is not a string list";
			return -EINVAL;
		}
		bi->argv = p;
		for (int i = 0; i < len; i++)
			bi->argc += ((const char *)p)[i] == 0;
	}
	if (!get_u64(fdt, node, "linux,initrd-start", &bi->initrd_start) &&
	    (get_u64(fdt, node, "linux,initrd-end", &bi->initrd_end) ||
	     bi->initrd_end < bi->initrd_start)) {
		*err = "bad linux,initrd-end";
		return -EINVAL;
	}
	if (!get_u64(fdt, node, "kiln,initrd-index-start", &bi->initrd_index) &&
	    (!bi->initrd_end ||
	     get_u64(fdt, node, "kiln,initrd-index-size", &bi->initrd_index_size) ||
	     !in_ranges(bi->ram, bi->nr_ram, bi->initrd_index, bi->initrd_index_size) ||
	     !in_ranges(bi->reserved, bi->nr_reserved, bi->initrd_index, bi->initrd_index_size))) {
		*err = "bad kiln,initrd-index-start or kiln,initrd-index-size";
		return -EINVAL;
	}
	if (!get_u64(fdt, node, "kiln,pmem-start", &bi->pmem_start) &&
	    (get_u64(fdt, node, "kiln,pmem-size", &bi->pmem_size) ||
	     get_u64(fdt, node, "kiln,pmem-image-size", &bi->pmem_image_size) ||
	     bi->pmem_image_size > bi->pmem_size)) {
		*err = "bad kiln,pmem-size or kiln,pmem-image-size";
		return -EINVAL;
	}
	p = fdt_getprop(fdt, node, "rng-seed", &len);
	if (p && len >= (int)sizeof(bi->rng_seed)) {
		memcpy(bi->rng_seed, p, sizeof(bi->rng_seed));
		bi->has_rng_seed = true;
	}
	if (get_u32(fdt, node, "kiln,tsc-khz", &bi->tsc_khz) || !bi->tsc_khz ||
	    get_u64(fdt, node, "kiln,boot-tsc", &bi->boot_tsc) ||
	    get_u64(fdt, node, "kiln,boot-realtime", &bi->boot_realtime_ns)) {
		*err = "missing kiln clock properties in /chosen";
		return -EINVAL;
	}
	if (get_u64(fdt, node, "kiln,pml4", &bi->pml4)) {
		*err = "missing kiln,pml4 in /chosen";
		return -EINVAL;
	}
	if (!get_u64(fdt, node, "kiln,early-ram-end", &bi->early_ram_end) &&
	    (bi->early_ram_end % (2ULL << 20) || bi->early_ram_end <= bi->ram[0].base ||
	     bi->early_ram_end - bi->ram[0].base > bi->ram[0].size)) {
		*err = "kiln,early-ram-end is not a 2 MiB boundary inside the first RAM range";
		return -EINVAL;
	}
	return 0;
}

static int parse_devices(const void *fdt, struct bootinfo *bi, const char **err)
{
	int node;

	fdt_for_each_subnode(node, fdt, 0)
	{
		int len;
		const fdt64_t *reg;
		uint32_t vec;

		if (fdt_node_check_compatible(fdt, node, "virtio,mmio"))
			continue;
		if (bi->nr_virtio == KILN_MMIO_MAX_DEVICES) {
			*err = "too many virtio devices";
			return -EINVAL;
		}
		reg = fdt_getprop(fdt, node, "reg", &len);
		if (!reg || len != 16 || get_u32(fdt, node, "interrupts", &vec) || vec > 255 ||
		    get_u32(fdt, node, "kiln,device-id", &bi->virtio[bi->nr_virtio].device_id) ||
		    get_u64(fdt, node, "kiln,device-features",
		            &bi->virtio[bi->nr_virtio].features) ||
		    get_u32(fdt, node, "kiln,queue-max", &bi->virtio[bi->nr_virtio].queue_max)) {
			*err =
			    "virtio,mmio node without a 64-bit reg, interrupt vector, device id, "
			    "features or queue size";
			return -EINVAL;
		}
		bi->virtio[bi->nr_virtio].base = fdt64_ld(&reg[0]);
		bi->virtio[bi->nr_virtio].vector = vec;
		bi->nr_virtio++;
	}
	node = fdt_path_offset(fdt, "/cpus");
	bi->nr_cpus = 0;
	if (node >= 0) {
		int cpu;
		fdt_for_each_subnode(cpu, fdt, node) bi->nr_cpus++;
	}
	if (!bi->nr_cpus)
		bi->nr_cpus = 1;
	return 0;
}

int bootinfo_parse(const void *fdt, struct bootinfo *bi, const char **err)
{
	int rc;

	memset(bi, 0, sizeof(*bi));
	if (fdt_check_header(fdt) || fdt_totalsize(fdt) > KILN_FDT_MAX_SIZE) {
		*err = "the device tree header is invalid";
		return -EINVAL;
	}
	rc = parse_memory(fdt, bi, err);
	if (!rc)
		rc = parse_chosen(fdt, bi, err);
	if (!rc)
		rc = parse_devices(fdt, bi, err);
	return rc;
}

int bootargs_split(const char *s, char *buf, size_t buflen, char **words, int max)
{
	size_t used = 0;
	int n = 0;

	for (;;) {
		while (*s == ' ')
			s++;
		if (!*s)
			return n;
		if (n == max)
			return -E2BIG;
		words[n++] = buf + used;
		for (; *s && *s != ' '; s++) {
			if (used + 1 >= buflen)
				return -E2BIG;
			buf[used++] = *s;
		}
		if (used + 1 > buflen)
			return -E2BIG;
		buf[used++] = 0;
	}
}
