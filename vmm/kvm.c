/* SPDX-License-Identifier: MIT */
/* The VM object on top of /dev/kvm: memory slots, irqchip, MSI routes,
 * ioeventfds and the stop protocol shared by all threads. */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "vm.h"

static int set_slot(struct vm *vm, uint32_t slot, uint64_t gpa, uint64_t size, const void *host,
                    uint32_t flags)
{
	struct kvm_userspace_memory_region r = {
	    .slot = slot,
	    .flags = flags,
	    .guest_phys_addr = gpa,
	    .memory_size = size,
	    .userspace_addr = (uint64_t)(uintptr_t)host,
	};
	return ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &r) < 0 ? -errno : 0;
}

int vm_create(struct vm *vm)
{
	uint64_t high = vm->mem.size - vm->mem.low_size;
	int ver, err;

	if (vm->kvm_fd < 0)
		vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0)
		return -errno;
	ver = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (ver != KVM_API_VERSION)
		return -ENOTSUP;
	vm->fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->fd < 0)
		return -errno;
	/* Memory before the irqchip: once an irqchip exists, every memslot
	 * change waits for an SRCU grace period (6-7 ms on PVM hosts). */
	err = set_slot(vm, 0, 0, vm->mem.low_size, vm->mem.host, 0);
	if (!err && high)
		err = set_slot(vm, 1, KILN_GPA_HIGH_RAM, high, vm->mem.host + vm->mem.low_size, 0);
	if (!err && vm->mem.initrd)
		err = set_slot(vm, 2, KILN_GPA_INITRD, vm->mem.initrd_map_size, vm->mem.initrd,
		               KVM_MEM_READONLY);
	if (!err && vm->mem.pmem)
		err = set_slot(vm, 3, KILN_GPA_PMEM, vm->mem.pmem_size, vm->mem.pmem,
		               KVM_MEM_READONLY);
	if (!err && ioctl(vm->fd, KVM_CREATE_IRQCHIP, 0) < 0)
		err = -errno;
	return err;
}

void vm_destroy(struct vm *vm)
{
	if (vm->fd >= 0)
		close(vm->fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	vm->fd = vm->kvm_fd = -1;
	free(vm->routes);
	vm->routes = NULL;
	free(vm->supported_cpuid);
	vm->supported_cpuid = NULL;
}

/* GSIs above the IOAPIC's 24 pins, one per MSI route. */
#define MSI_GSI_BASE 32

int vm_msi_irqfd(struct vm *vm, unsigned vector)
{
	struct kvm_irq_routing *r;
	struct kvm_irq_routing_entry *e;
	struct kvm_irqfd irqfd;
	int n = vm->nr_routes + 1, fd;

	r = realloc(vm->routes, sizeof(*r) + n * sizeof(r->entries[0]));
	if (!r)
		return -ENOMEM;
	vm->routes = r;
	e = &r->entries[n - 1];
	memset(e, 0, sizeof(*e));
	e->gsi = MSI_GSI_BASE + n - 1;
	e->type = KVM_IRQ_ROUTING_MSI;
	/* Fixed delivery, physical destination APIC 0, edge. */
	e->u.msi.address_lo = 0xfee00000;
	e->u.msi.data = vector & 0xff;
	r->nr = n;
	r->flags = 0;
	vm->nr_routes = n;

	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	memset(&irqfd, 0, sizeof(irqfd));
	irqfd.fd = (uint32_t)fd;
	irqfd.gsi = e->gsi;
	if (ioctl(vm->fd, KVM_IRQFD, &irqfd) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Hand the MSI routes to KVM, once all devices exist: each routing update
 * waits for an SRCU grace period. An irqfd whose route comes later is fine,
 * KVM looks routes up when the irqfd fires. */
int vm_commit_irq_routes(struct vm *vm)
{
	if (!vm->nr_routes)
		return 0;
	return ioctl(vm->fd, KVM_SET_GSI_ROUTING, vm->routes) < 0 ? -errno : 0;
}

int vm_ioeventfd(struct vm *vm, uint64_t gpa, unsigned len, bool match, uint64_t data)
{
	struct kvm_ioeventfd io;
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	if (fd < 0)
		return -errno;
	memset(&io, 0, sizeof(io));
	io.addr = gpa;
	io.len = len;
	io.fd = fd;
	io.datamatch = data;
	io.flags = match ? KVM_IOEVENTFD_FLAG_DATAMATCH : 0;
	if (ioctl(vm->fd, KVM_IOEVENTFD, &io) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

void vm_stop(struct vm *vm, enum vm_stop why, int status, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&vm->stop_lock);
	if (atomic_load(&vm->stop) == VM_RUNNING) {
		vm->exit_status = status;
		vm->stop_msg[0] = 0;
		if (fmt) {
			va_start(ap, fmt);
			vsnprintf(vm->stop_msg, sizeof(vm->stop_msg), fmt, ap);
			va_end(ap);
		}
		vm->t.stopped = vm_now_ns();
		atomic_store(&vm->stop, why);
		if (vm->stop_async)
			ev_async_send(vm->loop, vm->stop_async);
	}
	pthread_mutex_unlock(&vm->stop_lock);
}
