/* SPDX-License-Identifier: MIT */
/*
 * Guest side of virtio-mmio: register accesses batched through the
 * supervisor into one exit each (KILN_PORT_MMIO) and split virtqueues
 * filled at CPL3.
 */
#ifndef KILN_VIRTIO_H
#define KILN_VIRTIO_H

#include "klib.h"

#define VIO_DESC_F_NEXT  1
#define VIO_DESC_F_WRITE 2

struct vio_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

struct vio_avail {
	uint16_t flags, idx;
	uint16_t ring[];
};

struct vio_used_elem {
	uint32_t id, len;
};

struct vio_used {
	uint16_t flags, idx;
	struct vio_used_elem ring[];
};

struct vio_queue {
	unsigned index;
	uint16_t size;
	struct vio_desc *desc;
	struct vio_avail *avail;
	struct vio_used *used;
	uint16_t free_head, nr_free, last_used;
	volatile uint32_t *notify; /* QueueNotify register (user-mapped) */
};

struct vio_dev {
	uint64_t base_pa;
	volatile uint8_t *regs; /* KILN_VA_MMIO window */
	unsigned irq_bit;       /* bit in kcpu0.irq_pending */
	uint32_t device_id;
	uint64_t features;
};

/* Find the first device of `device_id` in bootinfo and bring it up with
 * nq queues of at most max_size entries. feature bits beyond VERSION_1 the
 * driver accepts go in `want`. */
struct bootinfo;
int vio_probe(const struct bootinfo *bi, uint32_t device_id, uint64_t want, unsigned nq,
              uint16_t max_size, struct vio_dev *dev, struct vio_queue *qs);
/* The same, calling fill (when not NULL) once the queues exist and before
 * DRIVER_OK: buffers it posts need no kick, as the VMM looks at each ready
 * queue at DRIVER_OK (one exit less; an MMIO write from CPL3 is an exit).
 * An error from fill fails the probe before the device is made ready. */
int vio_probe_fill(const struct bootinfo *bi, uint32_t device_id, uint64_t want, unsigned nq,
                   uint16_t max_size, struct vio_dev *dev, struct vio_queue *qs, int (*fill)(void));

/* The device-specific configuration: the 32 bits at off (a multiple of 4). */
uint32_t vio_config_read(struct vio_dev *dev, unsigned off);
/* InterruptStatus (bit 0: used buffers, bit 1: configuration changed);
 * the bits of ack that are set are acknowledged. One exit, two if it
 * acknowledges. */
uint32_t vio_interrupt_status(struct vio_dev *dev, uint32_t ack);

/* Post one buffer chain: n_out readable then n_in writable segments given
 * as physical addresses. Returns the head id or -ENOSPC. */
int vio_add(struct vio_queue *q, const uint64_t *addr, const uint32_t *len, unsigned n_out,
            unsigned n_in);
void vio_kick(struct vio_queue *q);
/* Next used element, or false when none. Frees its descriptors. */
bool vio_get_used(struct vio_queue *q, uint32_t *id, uint32_t *len);
bool vio_has_used(const struct vio_queue *q);
/* Ask for (or stop) interrupts when the device uses buffers. */
void vio_want_irq(struct vio_queue *q, bool on);

/* Sleep until cond holds; interrupts (or the deadline) wake us. The halt
 * returns at once while a bit is pending, so the bits are taken for the
 * wait, and put back after it for irq_poll: they are a timer's or another
 * device's as well as ours, and one dropped is a wakeup lost. */
void idle_wait_once(uint64_t tsc_deadline);
#define WAIT_UNTIL(cond)                                                                        \
	do {                                                                                    \
		uint64_t _taken = 0;                                                            \
		while (!(cond)) {                                                               \
			_taken |= __atomic_exchange_n(&kcpu0.irq_pending, 0, __ATOMIC_SEQ_CST); \
			if (cond)                                                               \
				break;                                                          \
			idle_wait_once(0);                                                      \
		}                                                                               \
		if (_taken)                                                                     \
			__atomic_fetch_or(&kcpu0.irq_pending, _taken, __ATOMIC_SEQ_CST);        \
	} while (0)

#endif
