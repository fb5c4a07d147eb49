/* SPDX-License-Identifier: MIT */
/* The guest driver's side of virtio-mmio for the device tests (test_blk,
 * test_pmem, test_vsock): register offsets, descriptor flags, the VM and
 * device under test, and register and guest-memory accessors that fail the
 * test on error. virtio_driver.c also stubs vmm/kvm.c's irqfd and
 * ioeventfd with plain eventfds, so no KVM is needed. */
#ifndef KILN_TEST_VIRTIO_DRIVER_H
#define KILN_TEST_VIRTIO_DRIVER_H

#include <stdint.h>

#include "../../vmm/virtio/virtio.h"

enum {
	DEVICE_ID = 0x008,
	DEV_FEAT = 0x010,
	DEV_FEAT_SEL = 0x014,
	DRV_FEAT = 0x020,
	DRV_FEAT_SEL = 0x024,
	QSEL = 0x030,
	QNUM_MAX = 0x034,
	QNUM = 0x038,
	QREADY = 0x044,
	QNOTIFY = 0x050,
	STATUS = 0x070,
	QDESC = 0x080,
	QDRIVER = 0x090,
	QDEVICE = 0x0a0,
	CONFIG = 0x100,
};

#define D_NEXT  1
#define D_WRITE 2

extern struct vm vm;
extern struct virtio_dev *dev;

/* The host address of guest range [gpa, gpa + len), which must exist. */
void *gp(uint64_t gpa, uint64_t len);
/* A 32-bit register write / read of dev at offset off. */
void wr(uint32_t off, uint32_t val);
uint32_t rd(uint32_t off);

#endif
