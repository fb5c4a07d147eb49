/* SPDX-License-Identifier: MIT */
/* See virtio_driver.h. */
#include <check.h>
#include <endian.h>

#include "virtio_driver.h"

struct vm vm;
struct virtio_dev *dev;

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
