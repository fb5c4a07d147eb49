/* SPDX-License-Identifier: MIT */
/*
 * Taking a snapshot of a paused VM: its configuration (what a restore must
 * match), every vCPU's and the VM's KVM state, each device's state blob and
 * guest memory, written by libkilnsnap (snapshot/snap.h).
 *
 * Diff snapshots: a clone's RAM is a private mapping of its template's
 * memory (vmm/template.c), so the pages it changed are exactly the pages
 * of that mapping that are no longer the template file's, which
 * /proc/self/pagemap tells without any tracking while the guest runs (KVM's
 * dirty log would slow every first write and misses the VMM's own writes
 * into guest buffers). The chunks holding them are the diff; the template's
 * snapshot is its parent.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageid.h"
#include "snap_vm.h"
#include "vcpu_state.h"
#include "virtio/virtio.h"
#include "x86.h"

#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_FILE    (1ULL << 61)

static int boot_file_id(struct vm *vm, bool kernel, struct snap_image_id *id, char *why, size_t len)
{
	bool *have = kernel ? &vm->snap.have_kernel_id : &vm->snap.have_initrd_id;
	uint8_t *saved = kernel ? vm->snap.kernel_id : vm->snap.initrd_id;
	const char *path = kernel ? vm->cfg.kernel_path : vm->cfg.initrd_path;
	struct stat now;
	int err;

	_Static_assert(sizeof(vm->snap.kernel_id) == sizeof(*id), "image id size");
	if (*have) {
		memcpy(id, saved, sizeof(*id));
		return 0;
	}
	if (kernel) {
		/* Not known at boot (the cache usually knows it): hash the file
		 * now, if it is still the one the VM booted from. */
		if (jail_known_file(&vm->cfg.jail, JAIL_KERNEL, &vm->snap.kernel_st, id))
			err = stat(path, &now) < 0 ? -errno : 0;
		else
			err = image_id_of_path(path, &now, id);
		if (!err && (now.st_ino != vm->snap.kernel_st.st_ino ||
		             now.st_dev != vm->snap.kernel_st.st_dev ||
		             now.st_mtim.tv_sec != vm->snap.kernel_st.st_mtim.tv_sec ||
		             now.st_mtim.tv_nsec != vm->snap.kernel_st.st_mtim.tv_nsec ||
		             now.st_size != vm->snap.kernel_st.st_size))
			err = -ESTALE;
	} else if (jail_known_file(&vm->cfg.jail, JAIL_INITRD, &vm->snap.initrd_st, id)) {
		err = 0;
	} else {
		err = image_id_of(&vm->snap.initrd_st, vm->mem.initrd, vm->initrd_size, id);
	}
	if (err) {
		snprintf(why, len, "%s '%s': %s", kernel ? "kernel image" : "initramfs", path,
		         err == -ESTALE ? "replaced since the VM booted, so the snapshot could "
		                          "not name it"
		                        : strerror(-err));
		return err;
	}
	memcpy(saved, id, sizeof(*id));
	*have = true;
	return 0;
}

int vm_snap_config(struct vm *vm, struct snap_vm_config *c, char *why, size_t len)
{
	int err;

	memset(c, 0, sizeof(*c));
	c->mem_size = vm->mem.size;
	c->mem_low_size = vm->mem.low_size;
	c->mem_high_gpa = vm->mem.size > vm->mem.low_size ? KILN_GPA_HIGH_RAM : 0;
	c->nr_vcpus = (uint32_t)vm->nr_vcpus;
	c->nr_devices = (uint32_t)vm->nr_devs;
	c->boot_version = vm->boot_version ? vm->boot_version : KILN_BOOT_VERSION;
	for (int i = 0; i < vm->nr_devs; i++) {
		c->devices[i].type = vm->devs[i]->ops->device_id;
		c->devices[i].slot = vm->devs[i]->slot;
	}
	err = x86_cpuid_hash(vm, &c->cpuid_hash);
	if (err) {
		snprintf(why, len, "KVM_GET_SUPPORTED_CPUID: %s", strerror(-err));
		return err;
	}
	c->xcr0 = vm->xcr0;
	err = boot_file_id(vm, true, &c->kernel, why, len);
	if (!err && vm->cfg.initrd_path)
		err = boot_file_id(vm, false, &c->initrd, why, len);
	return err;
}

/* The pages of guest RAM that are this process's own (anonymous: written
 * or swapped out), from /proc/self/pagemap: what a template clone changed
 * (see the top of this file), or all that anonymous RAM (--mem-backing
 * thp) holds, the rest never touched and zero. */
static int own_pages(struct vm *vm, uint64_t **out, char *why, size_t len)
{
	uint64_t npages = vm->mem.size / SNAP_PAGE_SIZE, *pages;
	uint64_t batch[512];
	int fd, err = 0;

	pages = calloc((npages + 63) / 64, 8);
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (!pages || fd < 0) {
		err = fd < 0 ? -errno : -ENOMEM;
		snprintf(why, len, "finding the pages guest memory holds: %s", strerror(-err));
		goto out;
	}
	for (uint64_t p = 0; p < npages; p += 512) {
		uint64_t n = npages - p < 512 ? npages - p : 512;
		off_t off = (off_t)(((uintptr_t)vm->mem.host / SNAP_PAGE_SIZE + p) * 8);

		if (pread(fd, batch, n * 8, off) != (ssize_t)(n * 8)) {
			err = -EIO;
			snprintf(why, len, "reading /proc/self/pagemap failed");
			goto out;
		}
		for (uint64_t i = 0; i < n; i++)
			if ((batch[i] & PM_SWAPPED) ||
			    ((batch[i] & PM_PRESENT) && !(batch[i] & PM_FILE)))
				pages[(p + i) / 64] |= 1ULL << ((p + i) % 64);
	}
	*out = pages;
	pages = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(pages);
	return err;
}

/* The chunks a clone changed, at the template snapshot's chunk size. */
static int clone_dirty_chunks(struct vm *vm, const struct snap *base, uint64_t **out, char *why,
                              size_t len)
{
	struct snap_mem_info mi;
	uint64_t *pages, *chunks;
	int err = own_pages(vm, &pages, why, len);

	if (err)
		return err;
	snap_mem_info(base, &mi);
	chunks = calloc((mi.nchunks + 63) / 64, 8);
	if (!chunks) {
		free(pages);
		snprintf(why, len, "finding the pages this clone changed: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	snap_chunks_from_pages(chunks, mi.chunk_shift, pages, vm->mem.size / SNAP_PAGE_SIZE, 0);
	free(pages);
	*out = chunks;
	return 0;
}

/* The pages written since memory was snapshot vm->dirty.ref_id, or NULL
 * (not known, or out of memory: then every chunk is read). */
static uint64_t *collect_written(struct vm *vm)
{
	uint64_t *pages = malloc((vm->mem.size / SNAP_PAGE_SIZE + 63) / 64 * 8);

	if (pages && vm_dirty_collect(vm, pages)) {
		free(pages);
		pages = NULL;
	}
	return pages;
}

/* KILN_SNAP_CHECK_WRITTEN=1 (the tests): read the chunks the dirty log
 * says nobody wrote all the same, and fail the snapshot if one changed. */
static bool check_written(void)
{
	const char *v = getenv("KILN_SNAP_CHECK_WRITTEN");

	return v && strcmp(v, "0");
}

/* The last snapshot this VM wrote, if it is still there as written: the
 * reference for the next one. NULL otherwise (deleted, replaced, a diff
 * whose parent is not at hand): the next snapshot compresses everything. */
static struct snap *open_last(struct vm *vm)
{
	struct snap_err err;
	struct snap *s;

	if (!vm->snap.last_path || snap_open(vm->snap.last_path, &s, &err))
		return NULL;
	if (snap_id(s) != vm->snap.last_id || snap_is_diff(s)) {
		snap_close(s);
		return NULL;
	}
	return s;
}

static void remember_last(struct vm *vm, const char *path, uint64_t id)
{
	char *copy = strdup(path);

	if (!copy)
		return;
	free(vm->snap.last_path);
	vm->snap.last_path = copy;
	vm->snap.last_id = id;
}

void vm_snapshot_retire(struct vm *vm)
{
	if (vm->snap.retired)
		snap_close(vm->snap.retired);
	vm->snap.retired = NULL;
}

int vm_snapshot(struct vm *vm, const struct vm_snapshot_opts *o, struct snap_write_stats *st,
                char *why, size_t len)
{
	struct snap_vm_config cfg;
	struct snap_vm_state vms;
	struct snap_vcpu_state *vcpus = NULL;
	struct snap_dev_blob devs[KILN_MMIO_MAX_DEVICES] = {{0}};
	const struct snap *base = vm->snap.src_parent ? vm->snap.src_parent : vm->snap.src;
	uint64_t *dirty = NULL, *held = NULL, *loaded = NULL, *written = NULL, t0 = vm_now_ns();
	struct snap *last = NULL;
	struct snap_save in = {0};
	struct snap_err serr;
	int err;

	vm_snapshot_retire(vm);
	err = vm_snap_config(vm, &cfg, why, len);
	if (err)
		return err;
	if (o->diff && (!vm->mem.private || !base)) {
		snprintf(why, len,
		         "a diff snapshot needs a VM cloned from a template "
		         "(kiln-vmm --restore FILE --restore-mode template); this one "
		         "has memory of its own");
		return -EINVAL;
	}
	vcpus = calloc((size_t)vm->nr_vcpus, sizeof(*vcpus));
	if (!vcpus) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < vm->nr_vcpus && !err; i++) {
		err = vcpu_save_state(&vm->vcpus[i], &vcpus[i]);
		if (err)
			snprintf(why, len, "reading vCPU %d: %s", i, strerror(-err));
	}
	if (!err && (err = vm_save_kvm_state(vm, &vms)))
		snprintf(why, len, "reading the VM's interrupt controllers and clock: %s",
		         strerror(-err));
	for (int i = 0; i < vm->nr_devs && !err; i++) {
		void *buf = malloc(VIRTIO_STATE_MAX);

		err = buf ? virtio_mmio_save(vm->devs[i], buf, VIRTIO_STATE_MAX) : -ENOMEM;
		devs[i].data = buf;
		if (err < 0) {
			snprintf(why, len, "saving device %d (%s): %s", i, vm->devs[i]->ops->name,
			         strerror(-err));
			break;
		}
		devs[i].len = (uint32_t)err;
		devs[i].version = VIRTIO_STATE_VERSION;
		err = 0;
	}
	if (!err && o->diff)
		err = clone_dirty_chunks(vm, base, &dirty, why, len);
	if (!err && vm->dirty.valid)
		written = collect_written(vm);
	if (!err && (vm->mem.anon || vm->mem.private))
		err = own_pages(vm, &held, why, len);
	if (err)
		goto out;
	in.config = &cfg;
	in.vcpus = vcpus;
	in.vm = &vms;
	in.devs = devs;
	in.mem = vm->mem.host;
	/* A clone's writes are not in the file at all. Holes in a memfd
	 * still loading (eager or lazy restore) are pages not loaded yet, not
	 * zeros: they are taken from the snapshot being loaded, never read
	 * through the mapping, where each page would wait on the userfaultfd
	 * thread (and a hang there was reported); except in the chunks loaded
	 * in whole by now, whose holes are zero pages. Once loading is done
	 * the holes are zero pages everywhere (lazy is cleared after the last
	 * chunk is in), and either reading is right. */
	in.mem_fd = vm->mem.private ? -1 : vm->mem.fd;
	in.holes_from_ref = !vm->mem.private && atomic_load(&vm->mem.lazy);
	if (in.holes_from_ref)
		in.loaded = loaded = uffd_loaded(vm);
	/* Chunks that did not change since the last snapshot written or the
	 * one restored from are copied from it, not compressed again. */
	if (!in.holes_from_ref)
		last = open_last(vm);
	in.ref = last ? last : vm->snap.src;
	/* A clone: the pages it never wrote are its template's, which is
	 * the template snapshot's memory. Those are taken from that snapshot
	 * without reading them: reading would fault each one in, and
	 * allocate the template file's holes for every clone. */
	if (vm->mem.private && base) {
		in.holes_from_ref = true;
		in.ref = base;
	}
	in.mem_pages = held;
	/* Chunks nothing wrote since the snapshot memory last equalled are
	 * that snapshot's, if it is the one reused. */
	if (written && in.ref && snap_id(in.ref) == vm->dirty.ref_id) {
		in.written = written;
		in.check_written = check_written();
	}
	/* A later snapshot to the file ref is (the last one written, or the
	 * one restored from): a generation added to it, holding only the
	 * chunks that changed; snap_write() checks it is that file, and
	 * writes a new one when it is not or has too many dead bytes. */
	in.append = !in.holes_from_ref;
	in.parent = o->diff ? base : NULL;
	in.dirty_chunks = dirty;
	in.level = o->level;
	in.no_fsync = o->no_fsync;
	err = snap_write(o->path, &in, st, &serr);
	if (err)
		snprintf(why, len, "%s", serr.msg);
	vm->snap.count++;
	vm->snap.last_ms = (vm_now_ns() - t0) / 1000000;
	if (!err) {
		remember_last(vm, o->path, st->id);
		/* Not fatal: the next snapshot reads all of memory. */
		if (vm->dirty.on && vm_dirty_restart(vm, st->id))
			fprintf(stderr, "kiln-vmm: dirty log: cannot restart it; the next snapshot "
			                "reads all memory\n");
	}
	vm->snap.retired = last;
out:
	for (int i = 0; i < vm->nr_devs; i++)
		free((void *)devs[i].data);
	free(vcpus);
	free(dirty);
	free(held);
	free(loaded);
	free(written);
	return err;
}
