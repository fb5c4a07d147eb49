/* SPDX-License-Identifier: MIT */
/*
 * What guest RAM was written since the last snapshot, so that the next one
 * reads, hashes and writes only those chunks and copies the rest from the
 * last file (vm_snapshot, snap_save.written). Two sources:
 *
 *  - the guest's own writes: KVM's dirty log on every RAM slot, with manual
 *    re-protection (KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2), so that reading it
 *    at a snapshot and re-protecting what was written are two steps, the
 *    second taken only once the snapshot is on disk. After a snapshot, the
 *    first write to each page it re-protected takes one fault. Logging is
 *    not free before that either: KVM's shadow MMU fills the entries of up
 *    to 8 neighbouring pages on a fault, but never writable ones of a
 *    logged slot, so a python3 -c pass in a booted VM took 760 host shadow
 *    faults with the log on and 308 without (make bench, AMD EPYC PVM
 *    host). A booted VM has no snapshot to compare with until it writes
 *    one, so its slots log only from its first snapshot on; a restored
 *    VM's log from the start;
 *  - the VMM's own writes into guest RAM (virtqueue buffers and rings,
 *    batched MMIO results), which KVM does not see: gpa_ptr() marks every
 *    range it hands out in mem.marks, reads too (a few chunks more than
 *    needed, never fewer).
 *
 * The log is valid from a point where memory was exactly a known snapshot:
 * the one this VM was restored from (before any device runs) or the one it
 * last wrote (cleared while every vCPU is parked and the devices are at
 * rest). Only RAM in 4 KiB host pages (the memfd) is tracked: KVM maps
 * logged slots in 4 KiB pages, which would undo --mem-backing thp.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vm.h"

#define PAGE     4096ULL
#define WORDS(n) (((n) + 63) / 64)

bool vm_dirty_enable(struct vm *vm)
{
	struct kvm_enable_cap cap = {
	    .cap = KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2,
	    .args = {KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE},
	};
	struct vm_dirty *d = &vm->dirty;
	uint64_t npages = vm->mem.size / PAGE;
	int have;

	if (vm->mem.anon || !vm->mem.marks || vm->cfg.no_dirty_log)
		return false;
	have = ioctl(vm->fd, KVM_CHECK_EXTENSION, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2);
	if (have < 0 || (have & cap.args[0]) != cap.args[0])
		return false;
	d->scratch = calloc(WORDS(npages), 8);
	if (!d->scratch || ioctl(vm->fd, KVM_ENABLE_CAP, &cap) < 0) {
		free(d->scratch);
		d->scratch = NULL;
		return false;
	}
	d->on = true;
	d->logging = vm->cfg.restore_path != NULL;
	return true;
}

void vm_dirty_free(struct vm *vm)
{
	free(vm->dirty.scratch);
	vm->dirty.scratch = NULL;
	vm->dirty.on = vm->dirty.valid = vm->dirty.logging = false;
}

/* KVM's log of each RAM slot into d->scratch, at the slots' offsets in the
 * mapping of RAM (a slot starts at a multiple of 256 KiB, see vm_ram_slots). */
static int get_logs(struct vm *vm, struct ram_slot *s, int n)
{
	uint64_t *bm = vm->dirty.scratch;

	memset(bm, 0, WORDS(vm->mem.size / PAGE) * 8);
	for (int i = 0; i < n; i++) {
		struct kvm_dirty_log log = {.slot = s[i].slot,
		                            .dirty_bitmap = bm + s[i].host_off / PAGE / 64};

		if (ioctl(vm->fd, KVM_GET_DIRTY_LOG, &log) < 0)
			return -errno;
	}
	return 0;
}

int vm_dirty_collect(struct vm *vm, uint64_t *pages)
{
	struct vm_dirty *d = &vm->dirty;
	uint64_t words = WORDS(vm->mem.size / PAGE);
	struct ram_slot s[VM_RAM_SLOTS_MAX];
	int n = vm_ram_slots(vm, s), err;

	if (!d->on || !d->valid)
		return -ENODATA;
	err = get_logs(vm, s, n);
	if (err)
		return err;
	for (uint64_t w = 0; w < words; w++)
		pages[w] =
		    d->scratch[w] | atomic_load_explicit(&vm->mem.marks[w], memory_order_relaxed);
	return 0;
}

void vm_dirty_begin(struct vm *vm, uint64_t ref_id)
{
	if (!vm->dirty.on)
		return;
	for (uint64_t w = 0; w < WORDS(vm->mem.size / PAGE); w++)
		atomic_store_explicit(&vm->mem.marks[w], 0, memory_order_relaxed);
	vm->dirty.valid = true;
	vm->dirty.ref_id = ref_id;
}

int vm_dirty_restart(struct vm *vm, uint64_t ref_id)
{
	struct vm_dirty *d = &vm->dirty;
	struct ram_slot s[VM_RAM_SLOTS_MAX];
	int n = vm_ram_slots(vm, s), err;

	if (!d->on)
		return 0;
	d->valid = false;
	/* The first snapshot of a booted VM: a slot that starts logging has
	 * every page protected and nothing logged. */
	if (!d->logging) {
		err = vm_ram_log_dirty(vm);
		if (!err)
			vm_dirty_begin(vm, ref_id);
		return err;
	}
	/* Read again: cheap, and it keeps the caller from clearing bits of a
	 * log it did not look at. */
	err = get_logs(vm, s, n);
	for (int i = 0; i < n && !err; i++) {
		struct kvm_clear_dirty_log c = {
		    .slot = s[i].slot,
		    .num_pages = (uint32_t)(s[i].size / PAGE),
		    .first_page = 0,
		    .dirty_bitmap = d->scratch + s[i].host_off / PAGE / 64,
		};
		if (ioctl(vm->fd, KVM_CLEAR_DIRTY_LOG, &c) < 0)
			err = -errno;
	}
	if (!err)
		vm_dirty_begin(vm, ref_id);
	return err;
}
