/* SPDX-License-Identifier: MIT */
/* Stubs for vmm/kvm.c's irqfd and ioeventfd: plain eventfds, so the virtio
 * device tests need no KVM. */
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>

struct vm;

int vm_msi_irqfd(struct vm *v, unsigned vector)
{
	(void)v;
	(void)vector;
	return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int vm_ioeventfd(struct vm *v, uint64_t gpa, unsigned len, bool match, uint64_t data)
{
	(void)v;
	(void)gpa;
	(void)len;
	(void)match;
	(void)data;
	return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

/* The devices' worker threads load their seccomp filter here in kiln-vmm
 * (vmm/jail/): the unit tests run them without one. */
void jail_thread(struct vm *vm, int kind);
void jail_thread(struct vm *vm, int kind)
{
	(void)vm;
	(void)kind;
}
