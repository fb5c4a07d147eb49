/* SPDX-License-Identifier: MIT */
/*
 * virtio-mmio transport, register layout version 2 (virtio 1.x, 4.2.2).
 *
 * Register accesses arrive on vCPU threads; queue kicks arrive as ioeventfds
 * on the main loop. ops->queue_notify only ever runs on the main loop: a
 * QueueNotify that exits to us, or a kick we owe the driver, is turned into a
 * write to that queue's ioeventfd so that devices see one calling context.
 */
#include <endian.h>
#include <errno.h>
#include <ev.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kiln/trace.h>

#include "virtio.h"

#define MMIO_MAGIC   0x74726976 /* "virt" */
#define MMIO_VERSION 2
#define MMIO_VENDOR  0x4e4c494b /* "KILN" */

enum {
	REG_MAGIC = 0x000,
	REG_VERSION = 0x004,
	REG_DEVICE_ID = 0x008,
	REG_VENDOR_ID = 0x00c,
	REG_DEV_FEATURES = 0x010,
	REG_DEV_FEATURES_SEL = 0x014,
	REG_DRV_FEATURES = 0x020,
	REG_DRV_FEATURES_SEL = 0x024,
	REG_QUEUE_SEL = 0x030,
	REG_QUEUE_NUM_MAX = 0x034,
	REG_QUEUE_NUM = 0x038,
	REG_QUEUE_READY = 0x044,
	REG_QUEUE_NOTIFY = 0x050,
	REG_INT_STATUS = 0x060,
	REG_INT_ACK = 0x064,
	REG_STATUS = 0x070,
	REG_QUEUE_DESC_LO = 0x080,
	REG_QUEUE_DESC_HI = 0x084,
	REG_QUEUE_DRIVER_LO = 0x090,
	REG_QUEUE_DRIVER_HI = 0x094,
	REG_QUEUE_DEVICE_LO = 0x0a0,
	REG_QUEUE_DEVICE_HI = 0x0a4,
	REG_SHM_SEL = 0x0ac,
	REG_SHM_LEN_LO = 0x0b0,
	REG_SHM_BASE_HI = 0x0bc,
	REG_CONFIG_GEN = 0x0fc,
	REG_CONFIG = 0x100,
};

/* The bits a driver may set; DEVICE_NEEDS_RESET is the device's. */
#define DRIVER_STATUS_BITS                                                            \
	(VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_DRIVER_OK | \
	 VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_FAILED)

#define INT_VRING  0x1
#define INT_CONFIG 0x2

#define LOG_LINES_PER_SEC 10
#define NR_VQ             (sizeof(((struct virtio_dev *)0)->vq) / sizeof(struct virtq))

struct kick {
	ev_io io; /* first: the watcher pointer is the kick pointer */
	struct virtio_dev *dev;
	unsigned q;
};

static void dev_log(struct virtio_dev *dev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A hostile guest can fault in a loop; keep stderr readable and cheap. */
static void dev_log(struct virtio_dev *dev, const char *fmt, ...)
{
	struct timespec now;
	char msg[200];
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((uint64_t)now.tv_sec != dev->log_window) {
		dev->log_window = (uint64_t)now.tv_sec;
		dev->log_count = 0;
	}
	if (dev->log_count >= LOG_LINES_PER_SEC)
		return;
	dev->log_count++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "kiln-vmm: %s: %s%s\n", dev->ops->name, msg,
	        dev->log_count == LOG_LINES_PER_SEC ? " (more suppressed)" : "");
}

static void raise_irq(struct virtio_dev *dev, uint32_t why)
{
	uint64_t one = 1;

	dev->interrupt_status |= why;
	kiln_trace(dev->vm->cfg.trace_fd, KILN_TRACE_VMM_IRQ);
	if (write(dev->irq_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		dev_log(dev, "interrupt eventfd: %s", strerror(errno));
}

void virtio_dev_kick(struct virtio_dev *dev, unsigned q)
{
	uint64_t one = 1;

	if (q < dev->ops->nr_queues && dev->kick_fd[q] >= 0)
		(void)!write(dev->kick_fd[q], &one, sizeof(one));
}

void virtio_dev_notify(struct virtio_dev *dev, unsigned q)
{
	if (q >= dev->ops->nr_queues || !(dev->status & VIRTIO_STATUS_DRIVER_OK))
		return;
	if (virtq_need_irq(&dev->vm->mem, &dev->vq[q]))
		raise_irq(dev, INT_VRING);
}

void virtio_dev_push(struct virtio_dev *dev, unsigned q, uint16_t head, uint32_t len)
{
	if (q >= dev->ops->nr_queues)
		return;
	virtq_push(&dev->vm->mem, &dev->vq[q], head, len);
	virtio_dev_notify(dev, q);
}

void virtio_dev_config_changed(struct virtio_dev *dev)
{
	dev->config_generation++;
	if (dev->status & VIRTIO_STATUS_DRIVER_OK)
		raise_irq(dev, INT_CONFIG);
}

void virtio_dev_fail(struct virtio_dev *dev, const char *why)
{
	if (dev->status & VIRTIO_STATUS_NEEDS_RESET)
		return;
	dev_log(dev, "%s; device needs reset", why ? why : "driver error");
	dev->status |= VIRTIO_STATUS_NEEDS_RESET;
	/* 2.1.2: after DRIVER_OK the driver learns of it by a config change. */
	if (dev->status & VIRTIO_STATUS_DRIVER_OK)
		raise_irq(dev, INT_CONFIG);
}

static void reset_queue(struct virtio_dev *dev, unsigned i)
{
	struct virtq *q = &dev->vq[i];

	memset(q, 0, sizeof(*q));
	q->max = dev->ops->queue_max;
	q->size = q->max;
}

static void reset_dev(struct virtio_dev *dev)
{
	unsigned i;

	dev->status = 0;
	dev->dev_features_sel = dev->drv_features_sel = 0;
	dev->driver_features = 0;
	dev->queue_sel = 0;
	dev->interrupt_status = 0;
	for (i = 0; i < dev->ops->nr_queues; i++)
		reset_queue(dev, i);
	if (dev->ops->reset)
		dev->ops->reset(dev);
}

static bool features_ok(struct virtio_dev *dev)
{
	uint64_t offered = dev->ops->features | (1ULL << VIRTIO_F_VERSION_1);
	uint64_t extra = dev->driver_features & ~offered;

	if (extra) {
		dev_log(dev, "driver accepted features %#llx that were not offered",
		        (unsigned long long)extra);
		return false;
	}
	if (!(dev->driver_features & (1ULL << VIRTIO_F_VERSION_1))) {
		dev_log(dev, "driver did not accept VIRTIO_F_VERSION_1");
		return false;
	}
	return true;
}

static void write_status(struct virtio_dev *dev, uint32_t val)
{
	uint32_t add = val & ~dev->status & DRIVER_STATUS_BITS;
	unsigned i;

	if (!val) {
		reset_dev(dev);
		return;
	}
	/* Bits only go away by reset (3.1.1); the rest of val is ignored. */
	if ((add & VIRTIO_STATUS_FEATURES_OK) && !features_ok(dev))
		add &= ~VIRTIO_STATUS_FEATURES_OK;
	if ((add & VIRTIO_STATUS_DRIVER_OK) && !((dev->status | add) & VIRTIO_STATUS_FEATURES_OK)) {
		dev_log(dev, "DRIVER_OK without FEATURES_OK refused");
		add &= ~VIRTIO_STATUS_DRIVER_OK;
	}
	dev->status |= add;
	if (!(add & VIRTIO_STATUS_DRIVER_OK))
		return;
	if (dev->ops->activate)
		dev->ops->activate(dev);
	/* Drivers often post buffers and kick before DRIVER_OK; those kicks
	 * were dropped, so owe each ready queue one. */
	for (i = 0; i < dev->ops->nr_queues; i++)
		if (dev->vq[i].ready)
			virtio_dev_kick(dev, i);
}

static struct virtq *sel_queue(struct virtio_dev *dev, bool for_write)
{
	struct virtq *q;

	if (dev->queue_sel >= dev->ops->nr_queues) {
		if (for_write)
			dev_log(dev, "write to queue %u, which does not exist", dev->queue_sel);
		return NULL;
	}
	q = &dev->vq[dev->queue_sel];
	if (for_write && q->ready) {
		dev_log(dev, "queue %u reconfigured while ready; ignored", dev->queue_sel);
		return NULL;
	}
	return q;
}

static void set_lo(uint64_t *v, uint32_t lo)
{
	*v = (*v & ~0xffffffffULL) | lo;
}

static void set_hi(uint64_t *v, uint32_t hi)
{
	*v = (*v & 0xffffffffULL) | (uint64_t)hi << 32;
}

static void queue_addr(struct virtio_dev *dev, uint32_t off, uint32_t val)
{
	struct virtq *q = sel_queue(dev, true);
	uint64_t *addr;

	if (!q)
		return;
	if (off < REG_QUEUE_DRIVER_LO)
		addr = &q->desc_gpa;
	else if (off < REG_QUEUE_DEVICE_LO)
		addr = &q->avail_gpa;
	else
		addr = &q->used_gpa;
	if (off & 4)
		set_hi(addr, val);
	else
		set_lo(addr, val);
}

static void queue_ready(struct virtio_dev *dev, uint32_t val)
{
	struct virtq *q = sel_queue(dev, false);

	if (!q)
		return;
	if (!val) {
		q->ready = false;
		return;
	}
	if (q->ready)
		return;
	q->last_avail = q->used_idx = q->signalled_used = 0;
	q->broken = false;
	q->error = NULL;
	q->event_idx = dev->driver_features & (1ULL << VIRTIO_RING_F_EVENT_IDX);
	if (virtq_check_layout(&dev->vm->mem, q) < 0) {
		dev_log(dev,
		        "queue %u: bad layout (size %u, desc %#llx, driver %#llx, device %#llx)",
		        dev->queue_sel, q->size, (unsigned long long)q->desc_gpa,
		        (unsigned long long)q->avail_gpa, (unsigned long long)q->used_gpa);
		return;
	}
	q->ready = true;
}

static void reg_write(struct virtio_dev *dev, uint32_t off, uint32_t val)
{
	struct virtq *q;

	switch (off) {
	case REG_DEV_FEATURES_SEL:
		dev->dev_features_sel = val;
		return;
	case REG_DRV_FEATURES_SEL:
		dev->drv_features_sel = val;
		return;
	case REG_DRV_FEATURES:
		if (dev->status & VIRTIO_STATUS_FEATURES_OK)
			dev_log(dev, "features changed after FEATURES_OK; ignored");
		else if (dev->drv_features_sel == 0)
			set_lo(&dev->driver_features, val);
		else if (dev->drv_features_sel == 1)
			set_hi(&dev->driver_features, val);
		else if (val)
			dev_log(dev, "driver features word %u set", dev->drv_features_sel);
		return;
	case REG_QUEUE_SEL:
		dev->queue_sel = val;
		return;
	case REG_QUEUE_NUM:
		q = sel_queue(dev, true);
		if (q && (val == 0 || (val & (val - 1)) || val > q->max))
			dev_log(dev, "queue %u: bad size %u (max %u)", dev->queue_sel, val, q->max);
		else if (q)
			q->size = (uint16_t)val;
		return;
	case REG_QUEUE_READY:
		queue_ready(dev, val);
		return;
	case REG_QUEUE_NOTIFY:
		if (val < dev->ops->nr_queues)
			virtio_dev_kick(dev, val);
		else
			dev_log(dev, "notify of queue %u, which does not exist", val);
		return;
	case REG_INT_ACK:
		dev->interrupt_status &= ~val;
		return;
	case REG_STATUS:
		write_status(dev, val);
		return;
	case REG_QUEUE_DESC_LO:
	case REG_QUEUE_DESC_HI:
	case REG_QUEUE_DRIVER_LO:
	case REG_QUEUE_DRIVER_HI:
	case REG_QUEUE_DEVICE_LO:
	case REG_QUEUE_DEVICE_HI:
		queue_addr(dev, off, val);
		return;
	case REG_SHM_SEL:
		return;
	}
	dev_log(dev, "write to read-only or unknown register %#x ignored", off);
}

static uint32_t reg_read(struct virtio_dev *dev, uint32_t off)
{
	uint64_t features = dev->ops->features | (1ULL << VIRTIO_F_VERSION_1);
	struct virtq *q;

	switch (off) {
	case REG_MAGIC:
		return MMIO_MAGIC;
	case REG_VERSION:
		return MMIO_VERSION;
	case REG_DEVICE_ID:
		return dev->ops->device_id;
	case REG_VENDOR_ID:
		return MMIO_VENDOR;
	case REG_DEV_FEATURES:
		if (dev->dev_features_sel > 1)
			return 0;
		return (uint32_t)(features >> (32 * dev->dev_features_sel));
	case REG_QUEUE_NUM_MAX:
		q = sel_queue(dev, false);
		return q ? q->max : 0;
	case REG_QUEUE_READY:
		q = sel_queue(dev, false);
		return q ? q->ready : 0;
	case REG_INT_STATUS:
		return dev->interrupt_status;
	case REG_STATUS:
		return dev->status;
	case REG_CONFIG_GEN:
		return dev->config_generation;
	}
	/* No shared memory regions: length and base read as -1 (4.2.2). */
	if (off >= REG_SHM_LEN_LO && off <= REG_SHM_BASE_HI)
		return 0xffffffff;
	return 0;
}

static void config_access(struct virtio_dev *dev, uint64_t off, uint8_t *data, uint32_t len,
                          bool is_write)
{
	uint32_t size = dev->ops->config_size;

	if (len > size || off > size - len) {
		dev_log(dev, "config %s of %u bytes at %#llx outside %u-byte config space",
		        is_write ? "write" : "read", len, (unsigned long long)off, size);
		if (!is_write)
			memset(data, 0, len);
		return;
	}
	if (is_write && dev->ops->config_write)
		dev->ops->config_write(dev, (uint32_t)off, data, len);
	else if (!is_write && dev->ops->config_read)
		dev->ops->config_read(dev, (uint32_t)off, data, len);
	else if (!is_write)
		memset(data, 0, len);
}

int virtio_mmio_access(struct vm *vm, uint64_t gpa, uint8_t *data, uint32_t len, bool is_write)
{
	struct virtio_dev *dev;
	uint64_t slot, off;
	uint32_t val;

	if (gpa < KILN_GPA_MMIO_BASE)
		return -ENOENT;
	slot = (gpa - KILN_GPA_MMIO_BASE) / KILN_MMIO_SIZE;
	if (slot >= (uint64_t)vm->nr_devs)
		return -ENOENT;
	dev = vm->devs[slot];
	off = gpa - dev->base;
	pthread_mutex_lock(&dev->lock);
	if (off >= REG_CONFIG) {
		config_access(dev, off - REG_CONFIG, data, len, is_write);
	} else if (len != 4 || (off & 3)) {
		dev_log(dev, "%u-byte %s at register %#llx ignored", len,
		        is_write ? "write" : "read", (unsigned long long)off);
		if (!is_write)
			memset(data, 0, len);
	} else if (is_write) {
		memcpy(&val, data, 4);
		reg_write(dev, (uint32_t)off, le32toh(val));
	} else {
		val = htole32(reg_read(dev, (uint32_t)off));
		memcpy(data, &val, 4);
	}
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

static void kick_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct kick *k = (struct kick *)w;
	struct virtio_dev *dev = k->dev;
	struct virtq *q = &dev->vq[k->q];
	uint64_t n;

	/* Reset the counter, or the level-triggered watcher would spin. */
	if (read(w->fd, &n, sizeof(n)) < 0)
		return;
	pthread_mutex_lock(&dev->lock);
	if (q->ready && !q->broken && (dev->status & VIRTIO_STATUS_DRIVER_OK))
		dev->ops->queue_notify(dev, k->q);
	pthread_mutex_unlock(&dev->lock);
}

static int add_kick(struct virtio_dev *dev, unsigned q)
{
	struct kick *k;
	int fd = vm_ioeventfd(dev->vm, dev->base + REG_QUEUE_NOTIFY, 4, true, q);

	if (fd < 0)
		return fd;
	dev->kick_fd[q] = fd;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->dev = dev;
	k->q = q;
	ev_io_init(&k->io, kick_cb, fd, EV_READ);
	ev_io_start(dev->vm->loop, &k->io);
	dev->kick_watch[q] = &k->io;
	return 0;
}

static void free_transport(struct virtio_dev *dev)
{
	unsigned i;

	for (i = 0; i < NR_VQ; i++) {
		if (dev->kick_watch[i]) {
			ev_io_stop(dev->vm->loop, dev->kick_watch[i]);
			free(dev->kick_watch[i]);
		}
		if (dev->kick_fd[i] >= 0)
			close(dev->kick_fd[i]);
	}
	if (dev->irq_fd >= 0)
		close(dev->irq_fd);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

struct virtio_dev *virtio_mmio_add(struct vm *vm, const struct virtio_dev_ops *ops, void *priv)
{
	struct virtio_dev *dev;
	unsigned i;
	int err;

	if (vm->nr_devs >= KILN_MMIO_MAX_DEVICES) {
		errno = ENOSPC;
		return NULL;
	}
	if (ops->nr_queues > NR_VQ || !ops->queue_max || ops->queue_max > VIRTQ_MAX_SIZE ||
	    ops->config_size > KILN_MMIO_SIZE - REG_CONFIG || !ops->queue_notify) {
		errno = EINVAL;
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->vm = vm;
	dev->ops = ops;
	dev->priv = priv;
	dev->slot = (unsigned)vm->nr_devs;
	dev->base = KILN_GPA_MMIO_BASE + dev->slot * KILN_MMIO_SIZE;
	dev->vector = KILN_VEC_DEVICE0 + dev->slot;
	for (i = 0; i < NR_VQ; i++)
		dev->kick_fd[i] = -1;
	pthread_mutex_init(&dev->lock, NULL);
	err = dev->irq_fd = vm_msi_irqfd(vm, dev->vector);
	if (err < 0)
		goto fail;
	for (i = 0; i < ops->nr_queues; i++) {
		err = add_kick(dev, i);
		if (err < 0)
			goto fail;
	}
	for (i = 0; i < ops->nr_queues; i++)
		reset_queue(dev, i);
	vm->devs[vm->nr_devs++] = dev;
	return dev;
fail:
	free_transport(dev);
	errno = -err;
	return NULL;
}

void virtio_mmio_drain_all(struct vm *vm)
{
	int i;

	for (i = 0; i < vm->nr_devs; i++) {
		struct virtio_dev *dev = vm->devs[i];

		pthread_mutex_lock(&dev->lock);
		if (dev->ops->drain)
			dev->ops->drain(dev);
		pthread_mutex_unlock(&dev->lock);
	}
}

void virtio_mmio_destroy_all(struct vm *vm)
{
	while (vm->nr_devs > 0) {
		struct virtio_dev *dev = vm->devs[--vm->nr_devs];

		if (dev->ops->destroy)
			dev->ops->destroy(dev);
		vm->devs[vm->nr_devs] = NULL;
		free_transport(dev);
	}
}
