/* SPDX-License-Identifier: MIT */
/*
 * Snapshots of a running kiln VM (vmm/snapshot.c) and VMs started from one
 * (vmm/restore.c, vmm/template.c, vmm/uffd.c). The file format and its
 * library are snapshot/ (include/kiln/snapshot.h).
 */
#ifndef KILN_VMM_SNAP_VM_H
#define KILN_VMM_SNAP_VM_H

#include <stdbool.h>
#include <stddef.h>

#include "../snapshot/snap.h"
#include "vm.h"

struct vm_snapshot_opts {
	const char *path;
	/* Only the chunks that differ from the template this VM is a clone
	 * of (--restore-mode template); the template's snapshot is the diff's
	 * parent. */
	bool diff;
	int level;     /* zstd level; 0: the library's default */
	bool no_fsync; /* benchmarks: skip fsync */
};

/* What this VM is, as a snapshot names it (and a restore must match). */
int vm_snap_config(struct vm *vm, struct snap_vm_config *c, char *why, size_t len);

/* Write a snapshot of the paused VM (every vCPU parked). Main thread. */
int vm_snapshot(struct vm *vm, const struct vm_snapshot_opts *o, struct snap_write_stats *st,
                char *why, size_t len);
/* Close what the last vm_snapshot() left to close; after its reply. */
void vm_snapshot_retire(struct vm *vm);

/*
 * Restore, in the order main() calls them; each fills why on failure.
 *  open:    open the snapshot (and --parent), take the memory size from it,
 *           open /dev/kvm (before guest memory exists)
 *  check:   does the snapshot fit this VMM's configuration? Before the VM
 *           exists everything but the devices (nothing heavy has been done
 *           yet), once the devices exist (devices true) all of it
 *  memory:  guest RAM per --restore-mode (before vm_create)
 *  state:   check every device blob and vCPU section, fill memory (eager),
 *           then apply VM, vCPU and device state (devices and vCPUs
 *           created, not started)
 */
int vm_restore_open(struct vm *vm, char *why, size_t len);
int vm_restore_check(struct vm *vm, bool devices, char *why, size_t len);
int vm_restore_memory(struct vm *vm, char *why, size_t len);
int vm_restore_state(struct vm *vm, char *why, size_t len);
void vm_restore_close(struct vm *vm);

/* Template memory: a file (or an inherited fd) holding the snapshot's RAM,
 * shared by every clone (vmm/template.c). Returns an fd to map privately. */
int template_open(struct vm *vm, const struct snap *s, char *why, size_t len);

/* Guest RAM filled from the snapshot while the guest runs, by loader
 * threads and on first touch (vmm/uffd.c): eager starts a loader per CPU
 * at once, lazy one after a grace period. Register before anything touches
 * RAM. */
int uffd_start(struct vm *vm, const struct snap *s, bool eager, char *why, size_t len);
/* Start the loaders (none without uffd_start()): once the vCPUs run, which
 * they then do not compete with for a CPU. On failure memory still comes
 * in, as it is touched. */
int uffd_load(struct vm *vm);
void uffd_stop(struct vm *vm);
struct uffd_stats {
	uint64_t filled, faults, chunks; /* chunks filled so far, faults served, all chunks */
	uint64_t resident_ns;            /* from the start of main to all memory in; 0: not yet */
};
void uffd_stats(const struct vm *vm, struct uffd_stats *st);
/* A bitmap of the chunks in whole by now (snap_save.loaded; free() it),
 * or NULL if none is known. */
uint64_t *uffd_loaded(const struct vm *vm);

#endif
