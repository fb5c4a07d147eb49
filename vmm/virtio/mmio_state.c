/* SPDX-License-Identifier: MIT */
/*
 * A virtio-mmio device's snapshot state: the transport's registers and
 * queue configuration (struct virtio_state below), then the device's own
 * (its ops->save/restore). Restore validates everything the guest could
 * have put there, as if the driver had just written it, before touching
 * the live device: a snapshot file is input like any other.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "virtio.h"

#define DRIVER_STATUS_BITS                                                            \
	(VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_DRIVER_OK | \
	 VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_FAILED)
#define NR_VQ (sizeof(((struct virtio_dev *)0)->vq) / sizeof(struct virtq))

/* Persisted: a change to either struct bumps VIRTIO_STATE_VERSION. */
struct virtq_state {
	uint64_t desc_gpa, avail_gpa, used_gpa;
	uint16_t size, last_avail, used_idx, signalled_used;
	uint8_t ready, broken, event_idx, reserved[5];
};

struct virtio_state {
	uint32_t device_id;
	uint32_t nr_queues;
	uint64_t device_features; /* offered when saved */
	uint64_t driver_features;
	uint32_t status;
	uint32_t queue_sel;
	uint32_t dev_features_sel, drv_features_sel;
	uint32_t interrupt_status, config_generation;
	uint32_t dev_len; /* bytes of the device's own state that follow */
	uint32_t reserved;
	struct virtq_state vq[8];
};

_Static_assert(sizeof(struct virtq_state) == 40, "virtq_state layout");
_Static_assert(sizeof(struct virtio_state) == 376, "virtio_state layout");
_Static_assert(NR_VQ == 8, "virtio_state holds 8 queues");

static uint64_t offered(const struct virtio_dev *dev)
{
	return dev->ops->features | (1ULL << VIRTIO_F_VERSION_1);
}

static bool is_pow2(unsigned v)
{
	return v && !(v & (v - 1));
}

int virtio_mmio_save(struct virtio_dev *dev, void *buf, uint32_t len)
{
	struct virtio_state st;
	int n = 0;

	if (len < sizeof(st))
		return -ENOSPC;
	memset(&st, 0, sizeof(st));
	pthread_mutex_lock(&dev->lock);
	/* Device first: it may wait for in-flight I/O, which moves the rings. */
	if (dev->ops->save) {
		n = dev->ops->save(dev, (uint8_t *)buf + sizeof(st), len - (uint32_t)sizeof(st));
		if (n < 0) {
			pthread_mutex_unlock(&dev->lock);
			return n;
		}
	}
	st.device_id = dev->ops->device_id;
	st.nr_queues = dev->ops->nr_queues;
	st.device_features = offered(dev);
	st.driver_features = dev->driver_features;
	st.status = dev->status;
	st.queue_sel = dev->queue_sel;
	st.dev_features_sel = dev->dev_features_sel;
	st.drv_features_sel = dev->drv_features_sel;
	st.interrupt_status = dev->interrupt_status;
	st.config_generation = dev->config_generation;
	st.dev_len = (uint32_t)n;
	for (unsigned i = 0; i < dev->ops->nr_queues; i++) {
		const struct virtq *q = &dev->vq[i];

		st.vq[i] = (struct virtq_state){
		    .desc_gpa = q->desc_gpa,
		    .avail_gpa = q->avail_gpa,
		    .used_gpa = q->used_gpa,
		    .size = q->size,
		    .last_avail = q->last_avail,
		    .used_idx = q->used_idx,
		    .signalled_used = q->signalled_used,
		    .ready = q->ready,
		    .broken = q->broken,
		    .event_idx = q->event_idx,
		};
	}
	pthread_mutex_unlock(&dev->lock);
	memcpy(buf, &st, sizeof(st));
	return (int)sizeof(st) + n;
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static int bad(char *why, size_t len, const struct virtio_dev *dev, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int bad(char *why, size_t len, const struct virtio_dev *dev, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(why, len, "device in slot %u (%s): ", dev->slot, dev->ops->name);

	if (n > 0 && (size_t)n < len) {
		va_start(ap, fmt);
		vsnprintf(why + n, len - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int check_queue(const struct virtio_dev *dev, const struct virtio_state *st, unsigned i,
                       char *why, size_t len)
{
	const struct virtq_state *qs = &st->vq[i];
	struct virtq q = {0};

	if (!all_zero(qs->reserved, sizeof(qs->reserved)) || qs->ready > 1 || qs->broken > 1 ||
	    qs->event_idx > 1)
		return bad(why, len, dev, "queue %u: malformed state", i);
	if (!is_pow2(qs->size) || qs->size > dev->ops->queue_max)
		return bad(why, len, dev, "queue %u: size %u is not a power of two up to %u", i,
		           qs->size, dev->ops->queue_max);
	if (qs->event_idx && !(st->driver_features & (1ULL << VIRTIO_RING_F_EVENT_IDX)))
		return bad(why, len, dev, "queue %u: event index without the feature", i);
	if (!qs->ready)
		return 0;
	q.size = qs->size;
	q.max = dev->ops->queue_max;
	q.desc_gpa = qs->desc_gpa;
	q.avail_gpa = qs->avail_gpa;
	q.used_gpa = qs->used_gpa;
	if (virtq_check_layout(&dev->vm->mem, &q) < 0)
		return bad(why, len, dev,
		           "queue %u: rings outside guest RAM or misaligned (desc %#llx, "
		           "driver %#llx, device %#llx, size %u)",
		           i, (unsigned long long)q.desc_gpa, (unsigned long long)q.avail_gpa,
		           (unsigned long long)q.used_gpa, q.size);
	return 0;
}

static int check(const struct virtio_dev *dev, const struct virtio_state *st, uint32_t len,
                 char *why, size_t why_len)
{
	uint64_t extra = st->driver_features & ~offered(dev);
	int err;

	if (st->device_id != dev->ops->device_id)
		return bad(why, why_len, dev, "the snapshot has device type %u here",
		           st->device_id);
	if (st->dev_len != len - sizeof(*st) || st->reserved)
		return bad(why, why_len, dev, "state of %u bytes does not match its header", len);
	if (st->nr_queues != dev->ops->nr_queues)
		return bad(why, why_len, dev, "%u queues saved, the device has %u", st->nr_queues,
		           dev->ops->nr_queues);
	if (st->device_features != offered(dev))
		return bad(why, why_len, dev,
		           "features differ: the snapshot's device offered %#llx, this one offers "
		           "%#llx (a disk read-only in one and not the other, or a console on a "
		           "terminal in one only?)",
		           (unsigned long long)st->device_features,
		           (unsigned long long)offered(dev));
	if (extra)
		return bad(why, why_len, dev, "driver features %#llx were never offered",
		           (unsigned long long)extra);
	if (st->status & ~(DRIVER_STATUS_BITS | VIRTIO_STATUS_NEEDS_RESET))
		return bad(why, why_len, dev, "bad status %#x", st->status);
	if ((st->status & VIRTIO_STATUS_DRIVER_OK) && !(st->status & VIRTIO_STATUS_FEATURES_OK))
		return bad(why, why_len, dev, "status DRIVER_OK without FEATURES_OK");
	if ((st->status & VIRTIO_STATUS_FEATURES_OK) &&
	    !(st->driver_features & (1ULL << VIRTIO_F_VERSION_1)))
		return bad(why, why_len, dev, "FEATURES_OK without VIRTIO_F_VERSION_1");
	for (unsigned i = 0; i < NR_VQ; i++) {
		if (i >= st->nr_queues) {
			if (!all_zero(&st->vq[i], sizeof(st->vq[i])))
				return bad(why, why_len, dev,
				           "state for queue %u, which does not exist", i);
			continue;
		}
		err = check_queue(dev, st, i, why, why_len);
		if (err)
			return err;
	}
	return 0;
}

static void apply(struct virtio_dev *dev, const struct virtio_state *st)
{
	dev->driver_features = st->driver_features;
	dev->status = st->status;
	dev->queue_sel = st->queue_sel;
	dev->dev_features_sel = st->dev_features_sel;
	dev->drv_features_sel = st->drv_features_sel;
	dev->interrupt_status = st->interrupt_status;
	dev->config_generation = st->config_generation;
	for (unsigned i = 0; i < dev->ops->nr_queues; i++) {
		const struct virtq_state *qs = &st->vq[i];
		struct virtq *q = &dev->vq[i];

		*q = (struct virtq){
		    .size = qs->size,
		    .max = dev->ops->queue_max,
		    .ready = qs->ready,
		    .broken = qs->broken,
		    .desc_gpa = qs->desc_gpa,
		    .avail_gpa = qs->avail_gpa,
		    .used_gpa = qs->used_gpa,
		    .last_avail = qs->last_avail,
		    .used_idx = qs->used_idx,
		    .event_idx = qs->event_idx,
		    .signalled_used = qs->signalled_used,
		    .error = qs->broken ? "broken before the snapshot was taken" : NULL,
		};
	}
}

int virtio_mmio_restore(struct virtio_dev *dev, const void *buf, uint32_t len, uint32_t version,
                        bool do_apply, char *why, size_t why_len)
{
	const uint8_t *own = (const uint8_t *)buf + sizeof(struct virtio_state);
	struct virtio_state st;
	char msg[256];
	int err;

	if (version != VIRTIO_STATE_VERSION)
		return bad(why, why_len, dev, "state version %u, this kiln-vmm reads version %u",
		           version, VIRTIO_STATE_VERSION);
	if (len < sizeof(st))
		return bad(why, why_len, dev, "state of %u bytes is too short", len);
	memcpy(&st, buf, sizeof(st));
	pthread_mutex_lock(&dev->lock);
	err = check(dev, &st, len, why, why_len);
	if (!err && !dev->ops->restore && st.dev_len)
		err = bad(why, why_len, dev, "%u bytes of device state, the device has none",
		          st.dev_len);
	if (!err && dev->ops->restore) {
		err = dev->ops->restore(dev, own, st.dev_len, false, msg, sizeof(msg));
		if (err)
			bad(why, why_len, dev, "%s", msg);
	}
	if (!err && do_apply) {
		apply(dev, &st);
		if (dev->ops->restore &&
		    dev->ops->restore(dev, own, st.dev_len, true, msg, sizeof(msg)))
			err = bad(why, why_len, dev, "%s", msg);
	}
	pthread_mutex_unlock(&dev->lock);
	return err;
}

void virtio_mmio_restored_all(struct vm *vm)
{
	for (int i = 0; i < vm->nr_devs; i++) {
		struct virtio_dev *dev = vm->devs[i];

		pthread_mutex_lock(&dev->lock);
		if (dev->ops->restored)
			dev->ops->restored(dev);
		if (dev->status & VIRTIO_STATUS_DRIVER_OK)
			for (unsigned q = 0; q < dev->ops->nr_queues; q++)
				if (dev->vq[q].ready)
					virtio_dev_kick(dev, q);
		pthread_mutex_unlock(&dev->lock);
	}
}
