/* SPDX-License-Identifier: MIT */
/*
 * Starting a VM from a snapshot instead of booting it. The VM is built as a
 * boot would build it (same memory slots, made before the irqchip; same
 * devices in the same slots; same initramfs and image mappings), minus the
 * kernel load, the boot page tables and the device tree, which are all in
 * the saved memory. Then, in this order:
 *   - the snapshot must fit: memory layout, vCPUs, boot ABI, the identity
 *     of kernel and initramfs, CPUID and XCR0 (before anything heavy), then
 *     the devices slot by slot;
 *   - every vCPU section, the VM section and every device blob is checked
 *     before a single one is applied;
 *   - memory: eager (every chunk, in parallel, while the guest already
 *     runs; or before it starts without userfaultfd), lazy (mostly on first
 *     touch; both vmm/uffd.c) or template (a private mapping of shared
 *     memory, vmm/template.c);
 *   - VM state (irqchip, clock), vCPU state (vmm/vcpu_state.c), device
 *     state, then each device's restored hook (vsock resets its
 *     connections) and a kick of every ready queue.
 * The vCPU resumes right after the quiesce point's `out`, with the resume
 * registers saying KILN_RESUME_RESTORED (kiln/boot.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageid.h"
#include "snap_vm.h"
#include "vcpu_state.h"
#include "virtio/virtio.h"
#include "x86.h"

#define MIB (1ULL << 20)

/* Every chunk's checksum, which an eager restore checks before the guest
 * runs (it loads memory while the guest runs), is checked from the moment
 * the file is open, while the VM, its memory and devices are made. */
struct chunk_check {
	struct vm *vm;
	const struct snap *s;
	pthread_t thread;
	int ret;
	struct snap_err err;
};

static void *check_chunks(void *arg)
{
	struct chunk_check *c = arg;

	jail_thread(c->vm, JAIL_T_LOADER);
	c->ret = snap_check_chunks(c->s, 0, &c->err);
	return NULL;
}

static void start_check(struct vm *vm)
{
	struct chunk_check *c = calloc(1, sizeof(*c));

	if (!c)
		return; /* checked when memory is filled */
	c->vm = vm;
	c->s = vm->snap.src;
	if (pthread_create(&c->thread, NULL, check_chunks, c)) {
		free(c);
		return;
	}
	vm->snap.check = c;
}

/* The check's result: waited for, or (not started) done now. */
static int check_result(struct vm *vm, struct snap_err *err)
{
	struct chunk_check *c = vm->snap.check;
	int ret;

	if (!c)
		return snap_check_chunks(vm->snap.src, 0, err);
	pthread_join(c->thread, NULL);
	ret = c->ret;
	if (ret)
		*err = c->err;
	free(c);
	vm->snap.check = NULL;
	return ret;
}

/* RAM the guest had not asked for when the snapshot was taken: registered
 * with KVM only when it does, as in the boot it came from (vm.h: a slot's
 * metadata costs KVM ~1 ms per GiB up front). The guest's own count of it
 * is in the restored memory. Past this VM's RAM (another --mem): all of it
 * now, and the guest's later ask finds it done. */
static void late_ram(struct vm *vm, const struct snap_vm_state *st)
{
	uint64_t end = (uint64_t)st->late_ram_mib << 20;

	vm->late.early_end = 0;
	if ((st->flags & SNAP_VM_LATE_RAM) && end <= vm->mem.low_size && end < vm->mem.size)
		vm->late.early_end = end;
}

int vm_restore_open(struct vm *vm, char *why, size_t len)
{
	const struct vm_config *cfg = &vm->cfg;
	const struct snap_vm_config *c;
	struct snap_err err;
	struct snap *s, *p = NULL;
	int ret;

	ret = snap_open(cfg->restore_path, &s, &err);
	if (ret) {
		snprintf(why, len, "%s", err.msg);
		return ret;
	}
	vm->snap.src = s;
	if (snap_is_diff(s) && !cfg->parent_path) {
		snprintf(why, len,
		         "snapshot '%s' holds only what changed since snapshot %016llx: name that "
		         "one with --parent FILE",
		         cfg->restore_path, (unsigned long long)snap_header(s)->parent_id);
		return -EINVAL;
	}
	if (!snap_is_diff(s) && cfg->parent_path) {
		snprintf(why, len, "--parent: snapshot '%s' is not a diff snapshot",
		         cfg->restore_path);
		return -EINVAL;
	}
	if (cfg->parent_path) {
		ret = snap_open(cfg->parent_path, &p, &err);
		if (!ret) {
			vm->snap.src_parent = p;
			ret = snap_attach_parent(s, p, &err);
		}
		if (!ret && snap_is_diff(p)) {
			snprintf(err.msg, sizeof(err.msg),
			         "--parent '%s' is itself a diff snapshot; kiln diffs are taken "
			         "against a full snapshot",
			         cfg->parent_path);
			ret = -EINVAL;
		}
		if (ret) {
			snprintf(why, len, "%s", err.msg);
			return ret;
		}
	}
	c = snap_config(s);
	if (!cfg->mem_size_given)
		vm->cfg.mem_size = c->mem_size;
	vm->mem.size = vm->cfg.mem_size;
	vm->mem.low_size = vm->mem.size < KILN_GPA_HOLE_START ? vm->mem.size : KILN_GPA_HOLE_START;
	late_ram(vm, snap_vm(s));
	vm->nr_vcpus = cfg->nr_cpus;
	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		ret = -errno;
		snprintf(why, len, "/dev/kvm: %s (is KVM available and are you allowed to use it?)",
		         strerror(errno));
		return ret;
	}
	x86_pick_xcr0(vm);
	if (stat(cfg->kernel_path, &vm->snap.kernel_st) < 0) {
		ret = -errno;
		snprintf(why, len, "kernel image '%s': %s", cfg->kernel_path, strerror(errno));
		return ret;
	}
	if (cfg->restore_mode == RESTORE_EAGER)
		start_check(vm);
	return 0;
}

int vm_restore_check(struct vm *vm, bool devices, char *why, size_t len)
{
	const struct snap_vm_config *have = snap_config(vm->snap.src);
	struct snap_vm_config want;
	struct snap_err err;
	int ret = vm_snap_config(vm, &want, why, len);

	if (ret)
		return ret;
	if (have->boot_version >= KILN_BOOT_VERSION_MIN && have->boot_version <= KILN_BOOT_VERSION)
		/* A kernel of an older ABI this VMM still serves: the VM
		 * stays of that version, and so do its snapshots. */
		vm->boot_version = want.boot_version = have->boot_version;
	if (!devices) {
		/* Devices are checked once they exist. */
		want.nr_devices = have->nr_devices;
		memcpy(want.devices, have->devices, sizeof(want.devices));
	}
	ret = snap_check_compat(vm->snap.src, &want, &err);
	if (ret)
		snprintf(why, len, "%s", err.msg);
	return ret;
}

int vm_restore_memory(struct vm *vm, char *why, size_t len)
{
	const struct snap *s = vm->snap.src;
	int err, fd;

	if (vm->cfg.restore_mode != RESTORE_TEMPLATE) {
		err = mem_init_backed(&vm->mem, vm->cfg.mem_size, vm->cfg.mem_backing);
		if (err)
			snprintf(why, len, "cannot allocate %llu MiB of guest memory: %s",
			         (unsigned long long)(vm->cfg.mem_size / MIB), strerror(-err));
		atomic_store(&vm->mem.lazy, vm->cfg.restore_mode == RESTORE_LAZY);
		return err;
	}
	/* A diff's clone starts from its parent's template. */
	fd = template_open(vm, vm->snap.src_parent ? vm->snap.src_parent : s, why, len);
	if (fd < 0)
		return fd;
	err = mem_init_private(&vm->mem, vm->cfg.mem_size, fd);
	if (err) {
		snprintf(why, len, "mapping the template memory: %s", strerror(-err));
		close(fd);
	}
	return err;
}

static int check_all(struct vm *vm, char *why, size_t len)
{
	const struct snap *s = vm->snap.src;
	int err;

	for (int i = 0; i < vm->nr_vcpus; i++) {
		err = vcpu_state_check(snap_vcpu(s, (unsigned)i), (unsigned)i, why, len);
		if (err)
			return err;
	}
	err = vm_state_check(snap_vm(s), why, len);
	for (int i = 0; i < vm->nr_devs && !err; i++) {
		struct virtio_dev *dev = vm->devs[i];
		const void *data;
		uint32_t dlen, version, type;

		if (snap_device(s, dev->slot, &data, &dlen, &version, &type)) {
			snprintf(why, len, "the snapshot has no device in slot %u (%s)", dev->slot,
			         dev->ops->name);
			return -EINVAL;
		}
		err = virtio_mmio_restore(dev, data, dlen, version, false, why, len);
	}
	return err;
}

static int fill_memory(struct vm *vm, char *why, size_t len)
{
	const struct snap *s = vm->snap.src;
	struct snap_err err;
	unsigned flags = SNAP_RESTORE_SPARSE;
	int ret;

	switch (vm->cfg.restore_mode) {
	case RESTORE_LAZY:
		return uffd_start(vm, s, false, why, len);
	case RESTORE_TEMPLATE:
		if (!snap_is_diff(s))
			return 0;
		/* The template is the parent's memory: write the diff's chunks
		 * over it, only the pages that differ (each one a private copy). */
		flags |= SNAP_RESTORE_PRESENT_ONLY;
		break;
	case RESTORE_EAGER:
		if (vm->mem.fd < 0)
			break;
		/* Loaded while the guest already runs, if userfaultfd can
		 * serve its touches first (vmm/uffd.c). A damaged chunk is
		 * still refused before the guest runs: every checksum is
		 * checked first (a few ms, since the file was opened;
		 * decompressing is what takes long). */
		ret = check_result(vm, &err);
		if (ret) {
			snprintf(why, len, "%s", err.msg);
			return ret;
		}
		atomic_store(&vm->mem.lazy, true);
		if (uffd_start(vm, s, true, why, len) == 0)
			return 0;
		uffd_stop(vm);
		atomic_store(&vm->mem.lazy, false);
		/* Else now, straight into the (empty) memfd: no page faults,
		 * and pages of zeros are never allocated. */
		ret = snap_restore_file(s, vm->mem.fd, 0, &err);
		if (ret)
			snprintf(why, len, "%s", err.msg);
		return ret;
	}
	ret = snap_restore_mem(s, vm->mem.host, vm->mem.size, 0, flags, &err);
	if (ret)
		snprintf(why, len, "%s", err.msg);
	return ret;
}

int vm_restore_state(struct vm *vm, char *why, size_t len)
{
	const struct snap *s = vm->snap.src;
	int err;

	err = check_all(vm, why, len);
	vm->snap.restore_checked_ns = vm_now_ns() - vm->t.start;
	/* Memory is the snapshot's from here (a lazy or eager restore loads
	 * the rest of it as it was), before any device or vCPU writes it:
	 * the first pause reads only what changed (vmm/dirty.c). */
	if (!err)
		vm_dirty_begin(vm, snap_id(s));
	if (!err)
		err = fill_memory(vm, why, len);
	vm->snap.restore_mem_ns = vm_now_ns() - vm->t.start;
	if (!err)
		err = vm_load_kvm_state(vm, snap_vm(s), why, len);
	for (int i = 0; i < vm->nr_vcpus && !err; i++)
		err = vcpu_load_state(&vm->vcpus[i], snap_vcpu(s, (unsigned)i), why, len);
	for (int i = 0; i < vm->nr_devs && !err; i++) {
		struct virtio_dev *dev = vm->devs[i];
		const void *data;
		uint32_t dlen, version, type;

		snap_device(s, dev->slot, &data, &dlen, &version, &type);
		err = virtio_mmio_restore(dev, data, dlen, version, true, why, len);
	}
	if (err)
		return err;
	virtio_mmio_restored_all(vm);
	/* Stopped at the quiesce point, in a new VM: either the vCPUs wait
	 * for "resume" (--paused), or they go on now. */
	vm->pause.resume_flags = KILN_RESUME_PAUSED | KILN_RESUME_RESTORED;
	if (vm->cfg.start_paused) {
		vm->pause.requested = true;
		vm->pause.since = vm_now_ns();
		vm->snap.restore_ns = vm_now_ns() - vm->t.start;
		return 0;
	}
	for (int i = 0; i < vm->nr_vcpus && !err; i++) {
		err = vcpu_set_resume_regs(&vm->vcpus[i], vm->pause.resume_flags);
		if (err)
			snprintf(why, len, "vCPU %d: setting the resume registers: %s", i,
			         strerror(-err));
	}
	vm->snap.restore_ns = vm_now_ns() - vm->t.start;
	return err;
}

void vm_restore_close(struct vm *vm)
{
	struct snap_err err;

	if (vm->snap.check)
		check_result(vm, &err);
	uffd_stop(vm);
	vm_snapshot_retire(vm);
	/* A diff holds on to its parent: close it first. */
	if (vm->snap.src)
		snap_close(vm->snap.src);
	if (vm->snap.src_parent)
		snap_close(vm->snap.src_parent);
	vm->snap.src = vm->snap.src_parent = NULL;
	free(vm->snap.last_path);
	vm->snap.last_path = NULL;
}
