/* SPDX-License-Identifier: MIT */
/*
 * KVM state of a vCPU and of the VM, to and from the snapshot format's
 * structs (kiln/snapshot.h). Read only while every vCPU is parked at the
 * quiesce point (vmm/pause.c) or before a restored VM first runs.
 *
 * Time: a restored guest's TSC is left alone, equal to the host's (PVM
 * hosts run CPL3 rdtsc natively, so an offset could not be applied to what
 * the guest reads anyway; KVM would then arm its timers against a TSC the
 * guest does not see). The guest learns at the quiesce point that its TSC
 * may have moved and rebases its clocks (guest-kernel/libos/core/time.c). What is
 * kept is the time left on the TSC deadline timer.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "../snapshot/snap.h"
#include "vcpu.h"
#include "vcpu_state.h"
#include "x86.h"

#define MSR_IA32_TSC        0x10
#define MSR_IA32_TSC_ADJUST 0x3b
#define MSR_TSC_DEADLINE    0x6e0

struct msr_buf {
	struct kvm_msrs hdr;
	struct kvm_msr_entry e[SNAP_MAX_MSRS];
};

/* The MSRs to save: KVM_GET_MSR_INDEX_LIST, minus those this host cannot
 * read (KVM_GET_MSRS stops at the first it fails on), at most 64. */
int vm_msr_list_init(struct vm *vm, struct vcpu *c)
{
	struct kvm_msr_list *list;
	struct msr_buf *m;
	unsigned n = 0;
	int err = 0;

	if (vm->snap.nr_msrs)
		return 0;
	list = calloc(1, sizeof(*list) + 1024 * sizeof(uint32_t));
	m = calloc(1, sizeof(*m));
	if (!list || !m) {
		err = -ENOMEM;
		goto out;
	}
	list->nmsrs = 1024;
	if (ioctl(vm->kvm_fd, KVM_GET_MSR_INDEX_LIST, list) < 0) {
		err = -errno;
		goto out;
	}
	for (uint32_t i = 0; i < list->nmsrs && n < SNAP_MAX_MSRS; i++) {
		memset(m, 0, sizeof(*m));
		m->hdr.nmsrs = 1;
		m->e[0].index = list->indices[i];
		if (ioctl(c->fd, KVM_GET_MSRS, m) == 1)
			vm->snap.msr_index[n++] = list->indices[i];
	}
	vm->snap.nr_msrs = n;
	if (!n)
		err = -EIO;
out:
	free(list);
	free(m);
	return err;
}

int vcpu_save_state(struct vcpu *c, struct snap_vcpu_state *s)
{
	struct vm *vm = c->vm;
	struct kvm_xsave *xs;
	struct msr_buf m;
	int n, err;

	err = vm_msr_list_init(vm, c);
	if (err)
		return err;
	memset(s, 0, sizeof(*s));
	s->id = (uint32_t)c->id;
	/* MP state first: reading it makes KVM take pending APIC events. */
	if (ioctl(c->fd, KVM_GET_MP_STATE, s->mp_state) < 0 ||
	    ioctl(c->fd, KVM_GET_REGS, s->regs) < 0 || ioctl(c->fd, KVM_GET_SREGS, s->sregs) < 0 ||
	    ioctl(c->fd, KVM_GET_FPU, s->fpu) < 0)
		return -errno;
	xs = (struct kvm_xsave *)s->xsave;
	if (ioctl(c->fd, KVM_GET_XSAVE, xs) < 0)
		return -errno;
	s->xsave_size = SNAP_KVM_XSAVE_SIZE;
	if (ioctl(c->fd, KVM_GET_XCRS, s->xcrs) < 0 ||
	    ioctl(c->fd, KVM_GET_DEBUGREGS, s->debugregs) < 0 ||
	    ioctl(c->fd, KVM_GET_LAPIC, s->lapic) < 0)
		return -errno;
	memset(&m, 0, sizeof(m));
	m.hdr.nmsrs = vm->snap.nr_msrs;
	for (unsigned i = 0; i < vm->snap.nr_msrs; i++)
		m.e[i].index = vm->snap.msr_index[i];
	n = ioctl(c->fd, KVM_GET_MSRS, &m);
	if (n != (int)vm->snap.nr_msrs)
		return n < 0 ? -errno : -EIO;
	s->nmsrs = (uint32_t)n;
	memcpy(s->msrs, m.e, (size_t)n * sizeof(m.e[0]));
	if (ioctl(c->fd, KVM_GET_VCPU_EVENTS, s->events) < 0)
		return -errno;
	return 0;
}

/* Nothing in a vCPU section that KVM would act on blindly. */
int vcpu_state_check(const struct snap_vcpu_state *s, unsigned id, char *why, size_t len)
{
	if (s->id != id) {
		snprintf(why, len, "vCPU %u: section holds vCPU %u", id, s->id);
		return -EINVAL;
	}
	if (s->nmsrs > SNAP_MAX_MSRS || s->xsave_size > SNAP_KVM_XSAVE_SIZE) {
		snprintf(why, len, "vCPU %u: %u MSRs, %u bytes of xsave", id, s->nmsrs,
		         s->xsave_size);
		return -EINVAL;
	}
	return 0;
}

static uint64_t msr_value(const struct snap_vcpu_state *s, uint32_t index, bool *found)
{
	for (uint32_t i = 0; i < s->nmsrs; i++)
		if (s->msrs[i].index == index) {
			*found = true;
			return s->msrs[i].data;
		}
	*found = false;
	return 0;
}

int vcpu_load_state(struct vcpu *c, const struct snap_vcpu_state *s, char *why, size_t len)
{
	struct msr_buf m;
	uint64_t tsc_then, deadline, now;
	bool have_tsc, have_deadline;
	unsigned n = 0;
	int err;

#define SET(req, arg, what)                                                                  \
	do {                                                                                 \
		if (ioctl(c->fd, req, arg) < 0) {                                            \
			err = -errno;                                                        \
			snprintf(why, len, "vCPU %d: %s: %s", c->id, what, strerror(errno)); \
			return err;                                                          \
		}                                                                            \
	} while (0)

	err = x86_set_cpuid(c);
	if (err) {
		snprintf(why, len, "vCPU %d: KVM_SET_CPUID2: %s", c->id, strerror(-err));
		return err;
	}
	SET(KVM_SET_MP_STATE, s->mp_state, "KVM_SET_MP_STATE");
	SET(KVM_SET_REGS, s->regs, "KVM_SET_REGS");
	SET(KVM_SET_SREGS, s->sregs, "KVM_SET_SREGS");
	SET(KVM_SET_XSAVE, s->xsave, "KVM_SET_XSAVE");
	SET(KVM_SET_XCRS, s->xcrs, "KVM_SET_XCRS");
	SET(KVM_SET_DEBUGREGS, s->debugregs, "KVM_SET_DEBUGREGS");
	SET(KVM_SET_LAPIC, s->lapic, "KVM_SET_LAPIC");

	/* The guest keeps the host's TSC (see the top of this file): skip the
	 * TSC and its adjust, and move the deadline by as much as the TSC
	 * moved, so the timer keeps the time it had left. */
	tsc_then = msr_value(s, MSR_IA32_TSC, &have_tsc);
	deadline = msr_value(s, MSR_TSC_DEADLINE, &have_deadline);
	memset(&m, 0, sizeof(m));
	for (uint32_t i = 0; i < s->nmsrs; i++) {
		uint32_t idx = s->msrs[i].index;

		if (idx == MSR_IA32_TSC || idx == MSR_IA32_TSC_ADJUST || idx == MSR_TSC_DEADLINE)
			continue;
		m.e[n].index = idx;
		m.e[n++].data = s->msrs[i].data;
	}
	m.hdr.nmsrs = n;
	err = ioctl(c->fd, KVM_SET_MSRS, &m);
	if (err != (int)n) {
		snprintf(why, len, "vCPU %d: KVM_SET_MSRS stopped at MSR %#x of %u", c->id,
		         err >= 0 && err < (int)n ? m.e[err].index : 0, n);
		return -EINVAL;
	}
	if (have_deadline && deadline && have_tsc && vcpu_read_tsc(c, &now) == 0) {
		memset(&m, 0, sizeof(m));
		m.hdr.nmsrs = 1;
		m.e[0].index = MSR_TSC_DEADLINE;
		m.e[0].data = deadline > tsc_then ? now + (deadline - tsc_then) : now;
		if (ioctl(c->fd, KVM_SET_MSRS, &m) != 1) {
			snprintf(why, len, "vCPU %d: setting the TSC deadline failed", c->id);
			return -EINVAL;
		}
	}
	SET(KVM_SET_VCPU_EVENTS, s->events, "KVM_SET_VCPU_EVENTS");
#undef SET
	return 0;
}

int vm_save_kvm_state(struct vm *vm, struct snap_vm_state *s)
{
	struct kvm_irqchip chip;

	memset(s, 0, sizeof(*s));
	if (ioctl(vm->fd, KVM_GET_CLOCK, s->clock) < 0)
		return -errno;
	for (unsigned i = 0; i < 3; i++) {
		memset(&chip, 0, sizeof(chip));
		chip.chip_id = i;
		if (ioctl(vm->fd, KVM_GET_IRQCHIP, &chip) < 0)
			return -errno;
		memcpy(s->irqchip[i], &chip, sizeof(chip));
	}
	/* kiln creates no PIT. The late RAM, if the guest never asked for
	 * it: a restore registers it only when the guest asks (vm.h). All
	 * vCPUs are parked: none is registering it. */
	pthread_mutex_lock(&vm->late.lock);
	if (vm->late.early_end && !vm->late.done) {
		s->flags |= SNAP_VM_LATE_RAM;
		s->late_ram_mib = (uint32_t)(vm->late.early_end >> 20);
	}
	pthread_mutex_unlock(&vm->late.lock);
	return 0;
}

int vm_state_check(const struct snap_vm_state *s, char *why, size_t len)
{
	if (s->flags & ~SNAP_VM_F_ALL) {
		snprintf(why, len, "VM state: unknown flags %#x", s->flags);
		return -EINVAL;
	}
	if (s->flags & SNAP_VM_HAS_PIT2) {
		snprintf(why, len,
		         "VM state: the snapshot has an in-kernel PIT, kiln-vmm makes none");
		return -EINVAL;
	}
	for (unsigned i = 0; i < 3; i++) {
		struct kvm_irqchip chip;

		memcpy(&chip, s->irqchip[i], sizeof(chip));
		if (chip.chip_id != i) {
			snprintf(why, len, "VM state: irqchip %u holds chip %u", i, chip.chip_id);
			return -EINVAL;
		}
	}
	return 0;
}

int vm_load_kvm_state(struct vm *vm, const struct snap_vm_state *s, char *why, size_t len)
{
	struct kvm_clock_data clock;

	for (unsigned i = 0; i < 3; i++)
		if (ioctl(vm->fd, KVM_SET_IRQCHIP, s->irqchip[i]) < 0) {
			snprintf(why, len, "KVM_SET_IRQCHIP %u: %s", i, strerror(errno));
			return -errno;
		}
	/* Only the clock value: flags and the host's realtime base were
	 * about the old host. */
	memcpy(&clock, s->clock, sizeof(clock));
	clock = (struct kvm_clock_data){.clock = clock.clock};
	if (ioctl(vm->fd, KVM_SET_CLOCK, &clock) < 0) {
		snprintf(why, len, "KVM_SET_CLOCK: %s", strerror(errno));
		return -errno;
	}
	return 0;
}
