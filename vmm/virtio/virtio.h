/* SPDX-License-Identifier: MIT */
/*
 * virtio for kiln-vmm: split virtqueues (virtq.c), the virtio-mmio transport
 * (mmio.c, virtio 1.x, register layout version 2) and one file per device.
 *
 * Threads: MMIO register accesses arrive on vCPU threads; queue notifications
 * (ioeventfd) and host-side I/O run on the main thread's libev loop. Each
 * device has one mutex (virtio_dev.lock) that both sides take.
 *
 * The transport never knows which device it serves; a device is a
 * virtio_dev_ops table plus private state.
 */
#ifndef KILN_VMM_VIRTIO_H
#define KILN_VMM_VIRTIO_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "../vm.h"

#define VIRTIO_ID_BLOCK   2
#define VIRTIO_ID_CONSOLE 3
#define VIRTIO_ID_RNG     4
#define VIRTIO_ID_PMEM    27

#define VIRTIO_F_VERSION_1      32
#define VIRTIO_RING_F_EVENT_IDX 29

#define VIRTQ_MAX_SIZE 256 /* largest queue any kiln device offers */

/* Device status bits (2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE 0x01
#define VIRTIO_STATUS_DRIVER      0x02
#define VIRTIO_STATUS_DRIVER_OK   0x04
#define VIRTIO_STATUS_FEATURES_OK 0x08
#define VIRTIO_STATUS_NEEDS_RESET 0x40
#define VIRTIO_STATUS_FAILED      0x80

/* One split virtqueue, as configured by the driver. */
struct virtq {
	uint16_t size; /* QueueNum, a power of two <= max */
	uint16_t max;  /* QueueNumMax offered by the device */
	bool ready;    /* QueueReady */
	bool broken;   /* the driver broke the ring; no more processing */
	uint64_t desc_gpa, avail_gpa, used_gpa;
	uint16_t last_avail;     /* next avail ring entry to consume */
	uint16_t used_idx;       /* next used ring entry to fill */
	bool event_idx;          /* VIRTIO_RING_F_EVENT_IDX negotiated */
	uint16_t signalled_used; /* used_idx at the last interrupt */
	const char *error;       /* why the queue broke (static string) */
};

/* A descriptor chain popped from a queue, mapped into host memory. Readable
 * (driver -> device) buffers come first, then writable ones, as the spec
 * requires; a chain that mixes the order is rejected. */
struct virtq_chain {
	uint16_t head;
	unsigned n_out, n_in;     /* readable, writable segments */
	uint64_t out_len, in_len; /* total bytes of each */
	struct iovec iov[VIRTQ_MAX_SIZE];
};

/*
 * Pop the next available chain. Returns 1 and fills *chain, 0 if the queue
 * is empty, or -EIO if the driver put something invalid in the ring
 * (out-of-range address, loop, chain longer than the queue, bad index,
 * indirect descriptors we did not offer, writable before readable ...).
 * On -EIO the queue is marked broken and the device should set
 * DEVICE_NEEDS_RESET through virtio_dev_fail().
 */
int virtq_pop(const struct guest_mem *mem, struct virtq *q, struct virtq_chain *chain);
/* Give back the chain popped last, untouched (e.g. input was not ready after
 * all); the next virtq_pop() returns it again. */
void virtq_unpop(struct virtq *q);
/* Return a chain to the driver with `len` bytes written into it. */
void virtq_push(const struct guest_mem *mem, struct virtq *q, uint16_t head, uint32_t len);
/* Ask the driver to notify new buffers (on) or to leave them unannounced
 * (VIRTQ_USED_F_NO_NOTIFY; a hint it may ignore). With on, true if buffers
 * are available already: no kick will come for those. No-op with event idx. */
bool virtq_want_kicks(const struct guest_mem *mem, struct virtq *q, bool on);
/* True if the driver wants an interrupt for what was pushed since the last
 * one (honours VIRTQ_AVAIL_F_NO_INTERRUPT and used_event). */
bool virtq_need_irq(const struct guest_mem *mem, struct virtq *q);
/* Validate and adopt a queue configuration at QueueReady = 1. */
int virtq_check_layout(const struct guest_mem *mem, const struct virtq *q);

/* Copies between a chain's buffers (from offset off of the vector) and
 * flat memory, up to the vector's end; they return the bytes copied. */
size_t virtq_iov_read(const struct iovec *iov, unsigned n, size_t off, void *dst, size_t len);
size_t virtq_iov_write(const struct iovec *iov, unsigned n, size_t off, const void *src,
                       size_t len);
/* The bytes [off, off + len) of iov as a new vector in out (which has room
 * for n entries); returns its entry count. */
unsigned virtq_iov_slice(const struct iovec *iov, unsigned n, size_t off, size_t len,
                         struct iovec *out);

struct virtio_dev;

struct virtio_dev_ops {
	const char *name;
	uint32_t device_id;
	uint64_t features; /* offered, besides VIRTIO_F_VERSION_1 */
	unsigned nr_queues;
	uint16_t queue_max;
	uint32_t config_size;
	/* Device-specific configuration space; off + len <= config_size. */
	void (*config_read)(struct virtio_dev *dev, uint32_t off, void *buf, uint32_t len);
	void (*config_write)(struct virtio_dev *dev, uint32_t off, const void *buf, uint32_t len);
	/* The driver kicked queue q (main thread, dev->lock held). */
	void (*queue_notify)(struct virtio_dev *dev, unsigned q);
	/* DRIVER_OK was set (vCPU thread, dev->lock held). Like reset, it must
	 * not touch libev watchers: the loop belongs to the main thread. The
	 * transport follows it with one queue_notify per ready queue. */
	void (*activate)(struct virtio_dev *dev);
	/* The driver reset the device (vCPU thread, lock held; queues already
	 * cleared). Watchers still running must notice and stop themselves. */
	void (*reset)(struct virtio_dev *dev);
	/* The VM is stopping: finish what the guest already submitted
	 * (main thread, lock held). May be NULL. */
	void (*drain)(struct virtio_dev *dev);
	void (*destroy)(struct virtio_dev *dev);
	/*
	 * Snapshots (main thread, lock held, every vCPU parked). The device's
	 * own state follows the transport's (mmio_state.c) in the device's
	 * snapshot section: a fixed-width struct with a version field, whose
	 * layout is part of the snapshot format. NULL: no state of its own.
	 * save writes at most len bytes, returns their count or -errno; it may
	 * first let in-flight host I/O finish. restore is called twice: with
	 * apply false it only checks the blob against this device (writing a
	 * message to why and returning -EINVAL if it cannot take it), then with
	 * apply true, after every device checked, it takes it.
	 */
	int (*save)(struct virtio_dev *dev, void *buf, uint32_t len);
	int (*restore)(struct virtio_dev *dev, const void *buf, uint32_t len, bool apply, char *why,
	               size_t why_len);
	/* Every device is restored, the vCPUs have not run yet: redo what the
	 * host side could not keep (vsock drops its connections). May be NULL. */
	void (*restored)(struct virtio_dev *dev);
};

struct virtio_dev {
	struct vm *vm;
	const struct virtio_dev_ops *ops;
	void *priv;
	pthread_mutex_t lock;
	unsigned slot; /* MMIO slot: base = KILN_GPA_MMIO_BASE + slot * 4 KiB */
	uint64_t base;
	unsigned vector; /* interrupt vector (KILN_VEC_DEVICE0 + slot) */
	int irq_fd;      /* eventfd -> MSI */
	/* transport state */
	uint32_t status;
	uint32_t dev_features_sel, drv_features_sel;
	uint64_t driver_features;
	uint32_t queue_sel;
	uint32_t interrupt_status;
	uint32_t config_generation;
	struct virtq vq[8];
	int kick_fd[8];
	struct ev_io *kick_watch[8];
	/* rate limit for guest-misbehaviour messages */
	uint64_t log_window; /* CLOCK_MONOTONIC second of the current window */
	unsigned log_count;  /* lines printed in it */
};

/* Create a device in the next MMIO slot and wire up its interrupt and queue
 * notifications. Returns the device or NULL with errno set. */
struct virtio_dev *virtio_mmio_add(struct vm *vm, const struct virtio_dev_ops *ops, void *priv);
/* A vCPU exited on an MMIO access: handle it if it falls in a device window.
 * Returns 0 when handled, -ENOENT when no device owns gpa. Bad offsets and
 * sizes are logged (rate-limited) and ignored (reads return 0). */
int virtio_mmio_access(struct vm *vm, uint64_t gpa, uint8_t *data, uint32_t len, bool is_write);
/*
 * Called with dev->lock held. virtio_dev_push() puts one used buffer on queue
 * q and raises the interrupt if the driver wants it. To complete a batch with
 * one interrupt, use virtq_push() on dev->vq[q] for each chain and then
 * virtio_dev_notify() once.
 */
void virtio_dev_push(struct virtio_dev *dev, unsigned q, uint16_t head, uint32_t len);
void virtio_dev_notify(struct virtio_dev *dev, unsigned q);
/* Have ops->queue_notify(q) called again from the main loop, e.g. when a
 * device stopped after a bounded batch with work left. Any thread. */
void virtio_dev_kick(struct virtio_dev *dev, unsigned q);
/* The device's configuration changed: a new generation, and a config-change
 * interrupt once the driver is up (dev->lock held). */
void virtio_dev_config_changed(struct virtio_dev *dev);
/* The driver misbehaved: set DEVICE_NEEDS_RESET and interrupt (config change). */
void virtio_dev_fail(struct virtio_dev *dev, const char *why);
void virtio_mmio_drain_all(struct vm *vm);
void virtio_mmio_destroy_all(struct vm *vm);

/* Snapshots of a device (mmio_state.c): the transport's state then the
 * device's, as one blob of version VIRTIO_STATE_VERSION. */
#define VIRTIO_STATE_VERSION 1
#define VIRTIO_STATE_MAX     4096
int virtio_mmio_save(struct virtio_dev *dev, void *buf, uint32_t len);
/* Check (apply false) or take (apply true) a saved blob; -EINVAL with a
 * message naming the problem. */
int virtio_mmio_restore(struct virtio_dev *dev, const void *buf, uint32_t len, uint32_t version,
                        bool apply, char *why, size_t why_len);
/* After every device took its state: each device's restored hook, and a
 * kick of every ready queue (the guest's buffers wait there). */
void virtio_mmio_restored_all(struct vm *vm);

/* Devices. */
/* in_fd -1: no input (end of file at once); out_fd -1: output dropped. Both
 * are made O_NONBLOCK until destroy restores their flags. */
int console_create(struct vm *vm, int in_fd, int out_fd);
int rng_create(struct vm *vm);
int vsock_create(struct vm *vm, uint64_t guest_cid, const char *uds_path);
/* The vsock device's stream payload bytes from the guest (rx) and to it
 * (tx) since this VMM started; false when the VM has no vsock device. */
bool vsock_bytes(struct vm *vm, uint64_t *rx, uint64_t *tx);
/* The image file for virtio-pmem, mapped at KILN_GPA_PMEM into mem (before
 * vm_create, which makes it a memslot). On failure returns -errno and points
 * *why at a message, or leaves it NULL for strerror(). */
int pmem_map(struct guest_mem *mem, const char *path, const char **why);
void pmem_unmap(struct guest_mem *mem);
/* The virtio-pmem device for the image pmem_map() mapped. */
int pmem_create(struct vm *vm);
/* A virtio-blk device on a raw file or block device; errors as pmem_map(). */
int blk_create(struct vm *vm, const char *path, bool ro, const char **why);

#endif
