/* SPDX-License-Identifier: MIT */
#ifndef KILN_VMM_VCPU_H
#define KILN_VMM_VCPU_H

#include "vm.h"

int vcpu_create(struct vm *vm, struct vcpu *c, int id);
/* Start the KVM_RUN thread; it stops when vm->stop is set. */
int vcpu_start(struct vcpu *c);
void vcpu_kick_and_join(struct vcpu *c);
void vcpu_destroy(struct vcpu *c);
int vcpu_tsc_khz(struct vcpu *c);
/* One MSR (-EIO if KVM has no such MSR). */
int vcpu_read_msr(struct vcpu *c, uint32_t index, uint64_t *val);
int vcpu_read_tsc(struct vcpu *c, uint64_t *tsc);
/* " (guest at RIP ..., CPLn)" for messages, or nothing. */
void vcpu_describe(struct vcpu *c, char *buf, size_t len);

#endif
