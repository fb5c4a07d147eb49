/* SPDX-License-Identifier: MIT */
/*
 * Does a snapshot fit the VM about to receive it? The restoring VMM builds
 * its own snap_vm_config (memory, vCPUs, devices, the identity of the kernel
 * and initramfs it was started with, CPUID) and any difference is refused
 * with a message naming it, before a byte of state is applied.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define U(x) ((unsigned long long)(x))

const char *snap_device_name(uint32_t type)
{
	switch (type) {
	case 0:
		return "none";
	case 1:
		return "net";
	case 2:
		return "blk";
	case 3:
		return "console";
	case 4:
		return "rng";
	case 5:
		return "balloon";
	case 19:
		return "vsock";
	case 27:
		return "pmem";
	default:
		return "other";
	}
}

static void image_str(const struct snap_image_id *id, char *buf, size_t len)
{
	static const char *const algs[SNAP_HASH_MAX] = {"none", "xxh64", "sha256"};
	size_t dlen = id->alg == SNAP_HASH_XXH64 ? 8 : id->alg == SNAP_HASH_SHA256 ? 32 : 0;
	int n = snprintf(buf, len, "%llu bytes, %s", U(id->size),
	                 id->alg < SNAP_HASH_MAX ? algs[id->alg] : "?");

	if (dlen && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ":");
	/* Digest bytes as stored (XXH64: its little-endian value). */
	for (size_t i = 0; i < dlen && n > 0 && (size_t)n + 3 < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%02x", id->digest[i]);
}

static int image_cmp(const char *what, const struct snap_image_id *have,
                     const struct snap_image_id *want, struct snap_err *err)
{
	char a[120], b[120];

	if (!memcmp(have, want, sizeof(*have)))
		return 0;
	image_str(have, a, sizeof(a));
	image_str(want, b, sizeof(b));
	return snap_errf(err, -EINVAL, "%s differs: snapshot was taken with %s, this VM has %s",
	                 what, a, b);
}

static uint32_t type_in_slot(const struct snap_vm_config *c, uint32_t slot)
{
	for (uint32_t d = 0; d < c->nr_devices && d < SNAP_MAX_DEVICES; d++)
		if (c->devices[d].slot == slot)
			return c->devices[d].type;
	return 0;
}

static int compare(const struct snap_vm_config *h, const struct snap_vm_config *w,
                   struct snap_err *err)
{
	int ret;

	if (h->mem_size != w->mem_size || h->mem_low_size != w->mem_low_size ||
	    h->mem_high_gpa != w->mem_high_gpa)
		return snap_errf(err, -EINVAL,
		                 "memory differs: snapshot has %llu MiB (%llu MiB low, high at "
		                 "0x%llx), this VM %llu MiB (%llu MiB low, high at 0x%llx)",
		                 U(h->mem_size >> 20), U(h->mem_low_size >> 20), U(h->mem_high_gpa),
		                 U(w->mem_size >> 20), U(w->mem_low_size >> 20),
		                 U(w->mem_high_gpa));
	if (h->nr_vcpus != w->nr_vcpus)
		return snap_errf(err, -EINVAL, "vCPUs differ: snapshot has %u, this VM %u",
		                 h->nr_vcpus, w->nr_vcpus);
	for (uint32_t slot = 0; slot < SNAP_MAX_DEVICES; slot++) {
		uint32_t a = type_in_slot(h, slot), b = type_in_slot(w, slot);

		if (a != b)
			return snap_errf(err, -EINVAL,
			                 "device slot %u differs: snapshot has %s (type %u), this "
			                 "VM %s (type %u)",
			                 slot, snap_device_name(a), a, snap_device_name(b), b);
	}
	if (h->nr_devices != w->nr_devices)
		return snap_errf(err, -EINVAL, "device count differs: snapshot has %u, this VM %u",
		                 h->nr_devices, w->nr_devices);
	if (h->boot_version != w->boot_version)
		return snap_errf(err, -EINVAL,
		                 "boot ABI differs: snapshot has version %u, this VM %u",
		                 h->boot_version, w->boot_version);
	ret = image_cmp("kernel image", &h->kernel, &w->kernel, err);
	if (ret)
		return ret;
	ret = image_cmp("initramfs", &h->initrd, &w->initrd, err);
	if (ret)
		return ret;
	if (h->cpuid_hash != w->cpuid_hash || h->xcr0 != w->xcr0)
		return snap_errf(err, -EINVAL,
		                 "CPU differs: snapshot has CPUID %016llx XCR0 0x%llx, this VM "
		                 "CPUID %016llx XCR0 0x%llx",
		                 U(h->cpuid_hash), U(h->xcr0), U(w->cpuid_hash), U(w->xcr0));
	return 0;
}

static int prefixed(const struct snap *s, int ret, struct snap_err *err)
{
	if (ret < 0)
		snap_err_prefix(err, s->path);
	return ret;
}

int snap_check_compat(const struct snap *s, const struct snap_vm_config *want, struct snap_err *err)
{
	return prefixed(s, compare(&s->hdr.config, want, err), err);
}

int snap_attach_parent(struct snap *child, const struct snap *parent, struct snap_err *err)
{
	int ret;

	if (!snap_is_diff(child))
		return prefixed(child, snap_errf(err, -EINVAL, "not a diff snapshot"), err);
	if (child->hdr.parent_id != parent->id)
		return prefixed(
		    child,
		    snap_errf(err, -EINVAL,
		              "parent mismatch: needs snapshot %016llx, '%s' is %016llx",
		              U(child->hdr.parent_id), parent->path, U(parent->id)),
		    err);
	ret = compare(&child->hdr.config, &parent->hdr.config, err);
	if (ret == 0 && child->mi.chunk_shift != parent->mi.chunk_shift)
		ret = snap_errf(err, -EINVAL, "chunk size differs from parent's");
	if (ret < 0)
		return prefixed(child, ret, err);
	child->parent = parent;
	return 0;
}
