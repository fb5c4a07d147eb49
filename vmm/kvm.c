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

/* GSIs above the IOAPIC's 24 pins: one MSI route per device vector, then
 * one for KILN_VEC_QUIESCE. */
#define MSI_GSI_BASE 32
#define NR_MSI_GSIS  (KILN_MMIO_MAX_DEVICES + 1)

static int msi_gsi(unsigned vector)
{
	if (vector == KILN_VEC_QUIESCE)
		return MSI_GSI_BASE + KILN_MMIO_MAX_DEVICES;
	if (vector >= KILN_VEC_DEVICE0 && vector < KILN_VEC_DEVICE0 + KILN_MMIO_MAX_DEVICES)
		return MSI_GSI_BASE + (int)(vector - KILN_VEC_DEVICE0);
	return -EINVAL;
}

/*
 * The MSI route of every vector a device or the pause code may raise,
 * installed once with the VM: each KVM_SET_GSI_ROUTING waits for an SRCU
 * grace period (milliseconds on a busy host), which this way is paid by
 * whoever creates the VM (a helper thread at boot), not by device set-up.
 */
static int set_msi_routes(struct vm *vm)
{
	struct kvm_irq_routing *r = calloc(1, sizeof(*r) + NR_MSI_GSIS * sizeof(r->entries[0]));
	int err = 0;

	if (!r)
		return -ENOMEM;
	for (unsigned v = 0; v < 256; v++) {
		int gsi = msi_gsi(v);
		struct kvm_irq_routing_entry *e;

		if (gsi < 0)
			continue;
		e = &r->entries[r->nr++];
		e->gsi = (uint32_t)gsi;
		e->type = KVM_IRQ_ROUTING_MSI;
		/* Fixed delivery, physical destination APIC 0, edge. */
		e->u.msi.address_lo = 0xfee00000;
		e->u.msi.data = v;
	}
	if (ioctl(vm->fd, KVM_SET_GSI_ROUTING, r) < 0)
		err = -errno;
	free(r);
	return err;
}

/* Slot 0 holds RAM from 0 up to early_end, slot 4 the rest of the RAM
 * below the hole, slot 1 the RAM above 4 GiB. */
#define SLOT_LOW      0
#define SLOT_HIGH     1
#define SLOT_INITRD   2
#define SLOT_PMEM     3
#define SLOT_LOW_LATE 4

/* RAM slots log dirty pages once snapshots track writes (vmm/dirty.c). */
static uint32_t ram_flags(const struct vm *vm)
{
	return vm->dirty.logging ? KVM_MEM_LOG_DIRTY_PAGES : 0;
}

/* RAM from GPA `from` up: the rest of low RAM, then high RAM. */
static int set_ram_slots(struct vm *vm, uint64_t from)
{
	const struct guest_mem *m = &vm->mem;
	int err = 0;

	if (from < m->low_size)
		err = set_slot(vm, from ? SLOT_LOW_LATE : SLOT_LOW, from, m->low_size - from,
		               m->host + from, ram_flags(vm));
	if (!err && m->size > m->low_size)
		err = set_slot(vm, SLOT_HIGH, KILN_GPA_HIGH_RAM, m->size - m->low_size,
		               m->host + m->low_size, ram_flags(vm));
	return err;
}

int vm_ram_slots(struct vm *vm, struct ram_slot *s)
{
	const struct guest_mem *m = &vm->mem;
	struct vm_late_ram *l = &vm->late;
	uint64_t low_end = m->low_size;
	bool rest;
	int n = 0;

	pthread_mutex_lock(&l->lock);
	rest = l->done;
	pthread_mutex_unlock(&l->lock);
	if (l->early_end) {
		low_end = l->early_end < m->low_size ? l->early_end : m->low_size;
		s[n++] = (struct ram_slot){SLOT_LOW, 0, low_end, 0};
		if (rest && low_end < m->low_size)
			s[n++] = (struct ram_slot){SLOT_LOW_LATE, low_end, m->low_size - low_end,
			                           low_end};
	} else {
		s[n++] = (struct ram_slot){SLOT_LOW, 0, m->low_size, 0};
	}
	if ((rest || !l->early_end) && m->size > m->low_size)
		s[n++] = (struct ram_slot){SLOT_HIGH, KILN_GPA_HIGH_RAM, m->size - m->low_size,
		                           m->low_size};
	return n;
}

int vm_ram_log_dirty(struct vm *vm)
{
	struct ram_slot s[VM_RAM_SLOTS_MAX];
	int n, err = 0;

	/* First: late RAM coming online from here on logs too (set_ram_slots
	 * runs under the lock), and what came before is in s. */
	pthread_mutex_lock(&vm->late.lock);
	vm->dirty.logging = true;
	pthread_mutex_unlock(&vm->late.lock);
	n = vm_ram_slots(vm, s);
	for (int i = 0; i < n && !err; i++)
		err = set_slot(vm, s[i].slot, s[i].gpa, s[i].size, vm->mem.host + s[i].host_off,
		               KVM_MEM_LOG_DIRTY_PAGES);
	return err;
}

int vm_create(struct vm *vm)
{
	struct vm_late_ram *l = &vm->late;
	int ver, err;

	pthread_mutex_init(&l->lock, NULL);
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
	/* Memory before the irqchip: once an irqchip exists, a memslot change
	 * soon after it waits for an SRCU grace period (6-7 ms on PVM hosts;
	 * see struct vm_late_ram for the late RAM). */
	vm_dirty_enable(vm);
	if (l->early_end)
		err = set_slot(vm, SLOT_LOW, 0, l->early_end, vm->mem.host, ram_flags(vm));
	else
		err = set_ram_slots(vm, 0);
	l->done = !l->early_end;
	if (!err && vm->mem.initrd)
		err = set_slot(vm, SLOT_INITRD, KILN_GPA_INITRD, vm->mem.initrd_map_size,
		               vm->mem.initrd, KVM_MEM_READONLY);
	if (!err && vm->mem.pmem)
		err = set_slot(vm, SLOT_PMEM, KILN_GPA_PMEM, vm->mem.pmem_size, vm->mem.pmem,
		               KVM_MEM_READONLY);
	if (!err && ioctl(vm->fd, KVM_CREATE_IRQCHIP, 0) < 0)
		err = -errno;
	if (!err)
		err = set_msi_routes(vm);
	return err;
}

int vm_late_ram_online(struct vm *vm)
{
	struct vm_late_ram *l = &vm->late;
	int err = 0;

	pthread_mutex_lock(&l->lock);
	if (!l->done) {
		l->asked_ns = vm_now_ns();
		err = set_ram_slots(vm, l->early_end);
		l->done = !err;
		l->done_ns = vm_now_ns();
	}
	pthread_mutex_unlock(&l->lock);
	return err;
}

void vm_destroy(struct vm *vm)
{
	if (vm->fd >= 0)
		close(vm->fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	vm->fd = vm->kvm_fd = -1;
	free(vm->supported_cpuid);
	vm->supported_cpuid = NULL;
	vm_dirty_free(vm);
}

int vm_msi_irqfd(struct vm *vm, unsigned vector)
{
	struct kvm_irqfd irqfd;
	int gsi = msi_gsi(vector), fd;

	if (gsi < 0)
		return gsi;
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	memset(&irqfd, 0, sizeof(irqfd));
	irqfd.fd = (uint32_t)fd;
	irqfd.gsi = (uint32_t)gsi;
	if (ioctl(vm->fd, KVM_IRQFD, &irqfd) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
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
