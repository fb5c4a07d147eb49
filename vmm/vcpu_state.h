/* SPDX-License-Identifier: MIT */
/* KVM state of vCPUs and the VM for snapshots (vmm/vcpu_state.c). */
#ifndef KILN_VMM_VCPU_STATE_H
#define KILN_VMM_VCPU_STATE_H

#include <stddef.h>

#include "kiln/snapshot.h"
#include "vm.h"

/* The MSRs a snapshot saves (once per VM). */
int vm_msr_list_init(struct vm *vm, struct vcpu *c);
/* A parked vCPU's state; -errno. */
int vcpu_save_state(struct vcpu *c, struct snap_vcpu_state *s);
/* Sanity of a saved vCPU before anything is applied. */
int vcpu_state_check(const struct snap_vcpu_state *s, unsigned id, char *why, size_t len);
/* Apply to a new vCPU: CPUID, then the saved state (see the order there). */
int vcpu_load_state(struct vcpu *c, const struct snap_vcpu_state *s, char *why, size_t len);
int vm_save_kvm_state(struct vm *vm, struct snap_vm_state *s);
int vm_state_check(const struct snap_vm_state *s, char *why, size_t len);
int vm_load_kvm_state(struct vm *vm, const struct snap_vm_state *s, char *why, size_t len);

#endif
