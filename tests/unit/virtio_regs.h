/* SPDX-License-Identifier: MIT */
/* virtio-mmio register offsets (virtio 1.2, 4.2.2) and descriptor flags,
 * for the unit tests that play a guest driver. */
#ifndef KILN_TEST_VIRTIO_REGS_H
#define KILN_TEST_VIRTIO_REGS_H

enum {
	MAGIC = 0x000,
	VERSION = 0x004,
	DEVICE_ID = 0x008,
	VENDOR_ID = 0x00c,
	DEV_FEAT = 0x010,
	DEV_FEAT_SEL = 0x014,
	DRV_FEAT = 0x020,
	DRV_FEAT_SEL = 0x024,
	QSEL = 0x030,
	QNUM_MAX = 0x034,
	QNUM = 0x038,
	QREADY = 0x044,
	QNOTIFY = 0x050,
	INT_STATUS = 0x060,
	INT_ACK = 0x064,
	STATUS = 0x070,
	QDESC = 0x080,
	QDRIVER = 0x090,
	QDEVICE = 0x0a0,
	SHM_LEN = 0x0b0,
	CONFIG = 0x100,
};

#define D_NEXT  1
#define D_WRITE 2

#endif
