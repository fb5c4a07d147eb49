/* SPDX-License-Identifier: MIT */
/* See virtio_driver.h. */
#include <check.h>
#include <endian.h>
#include <sys/eventfd.h>

#include "virtio_driver.h"

struct vm vm;
struct virtio_dev *dev;

/* Stubs for vmm/kvm.c. */
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

void *gp(uint64_t gpa, uint64_t len)
{
	void *p = gpa_ptr(&vm.mem, gpa, len);

	ck_assert_ptr_nonnull(p);
	return p;
}

void wr(uint32_t off, uint32_t val)
{
	uint32_t le = htole32(val);

	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + off, (uint8_t *)&le, 4, true), 0);
}

uint32_t rd(uint32_t off)
{
	uint32_t le = 0;

	ck_assert_int_eq(virtio_mmio_access(&vm, dev->base + off, (uint8_t *)&le, 4, false), 0);
	return le32toh(le);
}
