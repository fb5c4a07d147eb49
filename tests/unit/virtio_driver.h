/* SPDX-License-Identifier: MIT */
/* The guest driver's side of virtio-mmio for the device tests (test_blk,
 * test_pmem, test_vsock): register offsets, descriptor flags, the VM and
 * device under test, and register and guest-memory accessors that fail the
 * test on error (register offsets: virtio_regs.h). */
#ifndef KILN_TEST_VIRTIO_DRIVER_H
#define KILN_TEST_VIRTIO_DRIVER_H

#include <stdint.h>

#include "../../vmm/virtio/virtio.h"
#include "virtio_regs.h"

extern struct vm vm;
extern struct virtio_dev *dev;

/* The host address of guest range [gpa, gpa + len), which must exist. */
void *gp(uint64_t gpa, uint64_t len);
/* A 32-bit register write / read of dev at offset off. */
void wr(uint32_t off, uint32_t val);
uint32_t rd(uint32_t off);

#endif
