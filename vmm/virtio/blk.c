/* SPDX-License-Identifier: MIT */
/*
 * virtio-blk (virtio 1.2, 5.2): a raw file or block device as a disk, read
 * and write or read-only. One request queue.
 *
 * Requests are checked on the main loop (queue_notify) and the I/O is done by
 * one worker thread, a batch at a time, straight between the file and the
 * guest's buffers (preadv/pwritev on guest RAM): the loop never waits for the
 * disk, and the host holds no guest data, so memory stays fixed at one batch
 * of descriptors whatever the guest sends. A batch is at most BLK_BATCH
 * requests or BLK_BATCH_BYTES, which bounds how long a device reset or the
 * VM's stop waits for it.
 *
 * Locking: everything below is under dev->lock, except that while `busy` the
 * batch in reqs[] belongs to the worker, which does its I/O unlocked.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "virtio.h"

#define VIRTIO_BLK_F_SIZE_MAX 1
#define VIRTIO_BLK_F_SEG_MAX  2
#define VIRTIO_BLK_F_RO       5
#define VIRTIO_BLK_F_BLK_SIZE 6
#define VIRTIO_BLK_F_FLUSH    9

#define VIRTIO_BLK_T_IN     0
#define VIRTIO_BLK_T_OUT    1
#define VIRTIO_BLK_T_FLUSH  4
#define VIRTIO_BLK_T_GET_ID 8

#define VIRTIO_BLK_S_OK     0
#define VIRTIO_BLK_S_IOERR  1
#define VIRTIO_BLK_S_UNSUPP 2

#define SECTOR          512
#define HDR_SIZE        16
#define BLK_ID_BYTES    20
#define BLK_QUEUE_SIZE  128
#define BLK_SEG_MAX     (BLK_QUEUE_SIZE - 2) /* a chain also holds header and status */
#define BLK_SIZE_MAX    (1u << 20)
#define BLK_BATCH       32
#define BLK_BATCH_BYTES (16u << 20)
#define BLK_QUEUED      256 /* blk_parse(): for the worker, not a status */

#define LOG_LINES_PER_SEC 10

#define BLK_FEATURES                                                        \
	((1ULL << VIRTIO_BLK_F_SIZE_MAX) | (1ULL << VIRTIO_BLK_F_SEG_MAX) | \
	 (1ULL << VIRTIO_BLK_F_BLK_SIZE) | (1ULL << VIRTIO_BLK_F_FLUSH) |   \
	 (1ULL << VIRTIO_RING_F_EVENT_IDX))

/* struct virtio_blk_config up to num_queues; the rest is not offered. */
struct blk_config_le {
	uint64_t capacity;
	uint32_t size_max;
	uint32_t seg_max;
	uint16_t cylinders;
	uint8_t heads, sectors;
	uint32_t blk_size;
	uint8_t physical_block_exp, alignment_offset;
	uint16_t min_io_size;
	uint32_t opt_io_size;
	uint8_t writeback, unused0;
	uint16_t num_queues;
} __attribute__((packed));
_Static_assert(sizeof(struct blk_config_le) == 36, "virtio_blk_config layout");

struct blk_req {
	uint16_t head;
	uint32_t type;
	uint32_t used; /* used length: the whole writable part, as QEMU reports */
	uint64_t sector;
	uint8_t *status;
	int err; /* errno of a failed host I/O, for the log */
	unsigned niov;
	struct iovec iov[BLK_QUEUE_SIZE]; /* the data, header and status cut off */
};

struct blk {
	struct virtio_dev *dev;
	int fd;
	bool ro;
	uint64_t capacity; /* 512-byte sectors */
	char id[BLK_ID_BYTES];
	pthread_t worker;
	bool have_worker;
	pthread_cond_t work, idle; /* used with dev->lock */
	bool busy;                 /* reqs[0, nreq) belong to the worker */
	bool more;                 /* work may be left in the queue: kick after the batch */
	bool stop;
	unsigned gen, batch_gen; /* a reset bumps gen; older batches are not pushed */
	unsigned nreq;
	struct blk_req reqs[BLK_BATCH];
};

static void blk_log(struct virtio_dev *dev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A guest can misbehave at line rate: the transport's budget of lines per
 * second, shared with its own messages. */
static void blk_log(struct virtio_dev *dev, const char *fmt, ...)
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
	fprintf(stderr, "kiln-vmm: blk: %s%s\n", msg,
	        dev->log_count == LOG_LINES_PER_SEC ? " (more suppressed)" : "");
}

/*
 * Check one chain and fill r. Returns BLK_QUEUED when the worker has to do
 * I/O, a status to answer with at once, or -1 when there is no status byte
 * to answer in.
 */
static int blk_parse(struct blk *b, const struct virtq_chain *c, struct blk_req *r)
{
	const struct iovec *in = c->iov + c->n_out;
	struct {
		uint32_t type, reserved;
		uint64_t sector;
	} hdr;
	uint64_t len;

	r->head = c->head;
	r->niov = 0;
	r->err = 0;
	if (!c->in_len) {
		blk_log(b->dev, "request without a status byte dropped");
		return -1;
	}
	/* walk_chain() gives no iovec to empty buffers: the last is >= 1 byte. */
	r->status = (uint8_t *)in[c->n_in - 1].iov_base + in[c->n_in - 1].iov_len - 1;
	r->used = (uint32_t)c->in_len;
	if (c->out_len < HDR_SIZE) {
		blk_log(b->dev, "request header of %llu bytes is too short",
		        (unsigned long long)c->out_len);
		return VIRTIO_BLK_S_IOERR;
	}
	virtq_iov_read(c->iov, c->n_out, 0, &hdr, HDR_SIZE);
	r->type = le32toh(hdr.type);
	r->sector = le64toh(hdr.sector);
	switch (r->type) {
	case VIRTIO_BLK_T_IN:
		if (c->out_len != HDR_SIZE) {
			blk_log(b->dev, "read request with data for the device");
			return VIRTIO_BLK_S_IOERR;
		}
		len = c->in_len - 1;
		r->niov = virtq_iov_slice(in, c->n_in, 0, len, r->iov);
		break;
	case VIRTIO_BLK_T_OUT:
		if (c->in_len != 1) {
			blk_log(b->dev, "write request with writable data buffers");
			return VIRTIO_BLK_S_IOERR;
		}
		if (b->ro) {
			blk_log(b->dev, "write to a read-only disk refused");
			return VIRTIO_BLK_S_IOERR;
		}
		len = c->out_len - HDR_SIZE;
		r->niov = virtq_iov_slice(c->iov, c->n_out, HDR_SIZE, len, r->iov);
		break;
	case VIRTIO_BLK_T_FLUSH:
		/* Nothing was written through a read-only disk. */
		return b->ro ? VIRTIO_BLK_S_OK : BLK_QUEUED;
	case VIRTIO_BLK_T_GET_ID:
		r->niov = virtq_iov_slice(in, c->n_in, 0, c->in_len - 1, r->iov);
		virtq_iov_write(r->iov, r->niov, 0, b->id, sizeof(b->id));
		return VIRTIO_BLK_S_OK;
	default:
		return VIRTIO_BLK_S_UNSUPP;
	}
	if (len % SECTOR) {
		blk_log(b->dev, "request of %llu bytes is not a whole number of sectors",
		        (unsigned long long)len);
		return VIRTIO_BLK_S_IOERR;
	}
	if (r->sector > b->capacity || len / SECTOR > b->capacity - r->sector) {
		blk_log(b->dev, "request for %llu sectors at sector %llu is beyond the disk's %llu",
		        (unsigned long long)(len / SECTOR), (unsigned long long)r->sector,
		        (unsigned long long)b->capacity);
		return VIRTIO_BLK_S_IOERR;
	}
	return len ? BLK_QUEUED : VIRTIO_BLK_S_OK;
}

/* Move all the data (worker, unlocked). The iovecs are consumed. */
static uint8_t blk_rw(struct blk *b, struct blk_req *r)
{
	off_t off = (off_t)(r->sector * SECTOR);
	struct iovec *iov = r->iov;
	unsigned n = r->niov;

	while (n) {
		ssize_t done = r->type == VIRTIO_BLK_T_IN ? preadv(b->fd, iov, (int)n, off)
		                                          : pwritev(b->fd, iov, (int)n, off);

		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0) {
			/* 0: the file shrank under us since capacity was read. */
			r->err = done ? errno : EIO;
			return VIRTIO_BLK_S_IOERR;
		}
		off += done;
		while (n && (size_t)done >= iov->iov_len) {
			done -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (uint8_t *)iov->iov_base + done;
			iov->iov_len -= (size_t)done;
		}
	}
	return VIRTIO_BLK_S_OK;
}

static void blk_run_batch(struct blk *b)
{
	for (unsigned i = 0; i < b->nreq; i++) {
		struct blk_req *r = &b->reqs[i];
		uint8_t s = VIRTIO_BLK_S_OK;

		if (r->type == VIRTIO_BLK_T_FLUSH) {
			if (fdatasync(b->fd) < 0) {
				r->err = errno;
				s = VIRTIO_BLK_S_IOERR;
			}
		} else {
			s = blk_rw(b, r);
		}
		__atomic_store_n(r->status, s, __ATOMIC_RELAXED);
	}
}

/* Hand the finished batch back to the driver (lock held). */
static void blk_complete(struct blk *b)
{
	struct virtio_dev *dev = b->dev;

	for (unsigned i = 0; i < b->nreq; i++) {
		struct blk_req *r = &b->reqs[i];

		if (r->err)
			blk_log(dev, "%s at sector %llu failed: %s",
			        r->type == VIRTIO_BLK_T_IN    ? "read"
			        : r->type == VIRTIO_BLK_T_OUT ? "write"
			                                      : "flush",
			        (unsigned long long)r->sector, strerror(r->err));
		if (b->batch_gen == b->gen)
			virtq_push(&dev->vm->mem, &dev->vq[0], r->head, r->used);
	}
	if (b->batch_gen == b->gen) {
		virtio_dev_notify(dev, 0);
		if (b->more)
			virtio_dev_kick(dev, 0);
	}
	b->nreq = 0;
	b->busy = b->more = false;
	pthread_cond_broadcast(&b->idle);
}

/* Pop a batch into reqs[], answering at once what needs no I/O. At most one
 * queue's worth of chains per call, so a flood of bad requests cannot hold
 * the loop. */
static void blk_fill(struct blk *b)
{
	struct virtio_dev *dev = b->dev;
	struct virtq *q = &dev->vq[0];
	struct virtq_chain chain;
	uint64_t bytes = 0;
	unsigned n;
	int r, s;

	b->more = true;
	for (n = 0; n < q->size && b->nreq < BLK_BATCH && bytes < BLK_BATCH_BYTES; n++) {
		struct blk_req *req = &b->reqs[b->nreq];

		r = virtq_pop(&dev->vm->mem, q, &chain);
		if (r < 0)
			virtio_dev_fail(dev, q->error);
		if (r <= 0) {
			b->more = false;
			break;
		}
		s = blk_parse(b, &chain, req);
		if (s == BLK_QUEUED) {
			b->nreq++;
			bytes += chain.in_len + chain.out_len;
			continue;
		}
		if (s >= 0)
			*req->status = (uint8_t)s;
		virtq_push(&dev->vm->mem, q, chain.head, s >= 0 ? req->used : 0);
	}
	virtio_dev_notify(dev, 0);
}

static void blk_notify(struct virtio_dev *dev, unsigned qi)
{
	struct blk *b = dev->priv;

	if (b->busy) {
		b->more = true;
		return;
	}
	blk_fill(b);
	if (b->nreq) {
		b->busy = true;
		b->batch_gen = b->gen;
		pthread_cond_signal(&b->work);
	} else if (b->more) {
		virtio_dev_kick(dev, 0);
	}
}

static void *blk_worker(void *arg)
{
	struct blk *b = arg;
	pthread_mutex_t *lock = &b->dev->lock;

	jail_thread(b->dev->vm, JAIL_T_BLK);
	pthread_mutex_lock(lock);
	for (;;) {
		while (!b->busy && !b->stop)
			pthread_cond_wait(&b->work, lock);
		if (!b->busy)
			break;
		pthread_mutex_unlock(lock);
		blk_run_batch(b);
		pthread_mutex_lock(lock);
		blk_complete(b);
	}
	pthread_mutex_unlock(lock);
	return NULL;
}

/* vCPU thread, lock held, queues already cleared. The worker may still be
 * writing into buffers of the old rings: wait, so that nothing touches guest
 * memory for this device once the driver sees the reset done. */
static void blk_reset(struct virtio_dev *dev)
{
	struct blk *b = dev->priv;

	b->gen++;
	while (b->busy)
		pthread_cond_wait(&b->idle, &dev->lock);
}

/* The VM is stopping (vCPUs joined): finish everything the guest submitted,
 * here, so that its writes reach the file before the VMM exits. */
static void blk_drain(struct virtio_dev *dev)
{
	struct blk *b = dev->priv;

	while (b->busy)
		pthread_cond_wait(&b->idle, &dev->lock);
	if (!dev->vq[0].ready || !(dev->status & VIRTIO_STATUS_DRIVER_OK))
		return;
	for (;;) {
		bool more;

		blk_fill(b);
		more = b->more;
		if (b->nreq) {
			b->busy = true;
			b->batch_gen = b->gen;
			blk_run_batch(b);
			blk_complete(b);
		}
		if (!more || dev->vq[0].broken)
			break;
	}
}

static void blk_destroy(struct virtio_dev *dev)
{
	struct blk *b = dev->priv;

	if (b->have_worker) {
		pthread_mutex_lock(&dev->lock);
		b->stop = true;
		pthread_cond_signal(&b->work);
		pthread_mutex_unlock(&dev->lock);
		pthread_join(b->worker, NULL);
	}
	pthread_cond_destroy(&b->work);
	pthread_cond_destroy(&b->idle);
	close(b->fd);
	free(b);
}

static void blk_config_read(struct virtio_dev *dev, uint32_t off, void *buf, uint32_t len)
{
	struct blk *b = dev->priv;
	struct blk_config_le c = {
	    .capacity = htole64(b->capacity),
	    .size_max = htole32(BLK_SIZE_MAX),
	    .seg_max = htole32(BLK_SEG_MAX),
	    .blk_size = htole32(SECTOR),
	};

	memcpy(buf, (uint8_t *)&c + off, len);
}

/* ---------------------------------------------------------------- snapshots */

/* Persisted (the snapshot format): a change bumps BLK_STATE_VERSION. The
 * disk's content is not in the snapshot; what the guest knows of the disk
 * (capacity, serial, read-only) must be the same after a restore. */
#define BLK_STATE_VERSION 1
struct blk_state {
	uint32_t version;
	uint8_t ro;
	uint8_t reserved[3];
	uint64_t capacity;
	char id[BLK_ID_BYTES];
	uint32_t reserved2;
};
_Static_assert(sizeof(struct blk_state) == 40, "blk_state layout");

/* The batch in flight finishes first: its requests complete in this VM,
 * and the rings the snapshot holds are at rest. */
static int blk_save(struct virtio_dev *dev, void *buf, uint32_t len)
{
	struct blk *b = dev->priv;
	struct blk_state st = {.version = BLK_STATE_VERSION, .ro = b->ro, .capacity = b->capacity};

	if (len < sizeof(st))
		return -ENOSPC;
	while (b->busy)
		pthread_cond_wait(&b->idle, &dev->lock);
	memcpy(st.id, b->id, sizeof(st.id));
	memcpy(buf, &st, sizeof(st));
	return sizeof(st);
}

static int blk_restore(struct virtio_dev *dev, const void *buf, uint32_t len, bool apply, char *why,
                       size_t why_len)
{
	struct blk *b = dev->priv;
	struct blk_state st;

	if (len != sizeof(st)) {
		snprintf(why, why_len, "state of %u bytes, expected %zu", len, sizeof(st));
		return -EINVAL;
	}
	memcpy(&st, buf, sizeof(st));
	if (st.version != BLK_STATE_VERSION || st.ro > 1 || st.reserved[0] || st.reserved[1] ||
	    st.reserved[2] || st.reserved2) {
		snprintf(why, why_len, "state version %u, this kiln-vmm reads %u", st.version,
		         BLK_STATE_VERSION);
		return -EINVAL;
	}
	if (st.capacity != b->capacity || st.ro != b->ro || memcmp(st.id, b->id, sizeof(st.id))) {
		snprintf(why, why_len,
		         "the disk differs: the snapshot's was '%.20s', %llu sectors, %s; this one "
		         "is '%.20s', %llu sectors, %s",
		         st.id, (unsigned long long)st.capacity, st.ro ? "read-only" : "read-write",
		         b->id, (unsigned long long)b->capacity,
		         b->ro ? "read-only" : "read-write");
		return -EINVAL;
	}
	return 0;
}

static const struct virtio_dev_ops blk_ops = {
    .name = "blk",
    .device_id = VIRTIO_ID_BLOCK,
    .features = BLK_FEATURES,
    .nr_queues = 1,
    .queue_max = BLK_QUEUE_SIZE,
    .config_size = sizeof(struct blk_config_le),
    .config_read = blk_config_read,
    .queue_notify = blk_notify,
    .reset = blk_reset,
    .drain = blk_drain,
    .destroy = blk_destroy,
    .save = blk_save,
    .restore = blk_restore,
};

/* The same with VIRTIO_BLK_F_RO: offered features are per ops table. */
static const struct virtio_dev_ops blk_ro_ops = {
    .name = "blk",
    .device_id = VIRTIO_ID_BLOCK,
    .features = BLK_FEATURES | (1ULL << VIRTIO_BLK_F_RO),
    .nr_queues = 1,
    .queue_max = BLK_QUEUE_SIZE,
    .config_size = sizeof(struct blk_config_le),
    .config_read = blk_config_read,
    .queue_notify = blk_notify,
    .reset = blk_reset,
    .drain = blk_drain,
    .destroy = blk_destroy,
    .save = blk_save,
    .restore = blk_restore,
};

static int blk_open(struct blk *b, const char *path, const char **why)
{
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	uint64_t size;
	struct stat st;

	b->fd = open(path, (b->ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (b->fd < 0)
		return -errno;
	if (fstat(b->fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(b->fd, BLKGETSIZE64, &size) < 0)
			return -errno;
	} else {
		*why = "not a regular file or block device";
		return -EINVAL;
	}
	if (size < SECTOR) {
		*why = "smaller than one 512-byte sector";
		return -EINVAL;
	}
	/* Two VMs writing one disk would corrupt it; readers may share. */
	if (flock(b->fd, (b->ro ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		*why = errno == EWOULDBLOCK ? "in use by another process" : NULL;
		return -errno;
	}
	b->capacity = size / SECTOR;
	/* The serial: 20 bytes, NUL-padded only when shorter (calloc). */
	memcpy(b->id, name, strnlen(name, sizeof(b->id)));
	return 0;
}

int blk_create(struct vm *vm, const char *path, bool ro, const char **why)
{
	sigset_t all, old;
	struct blk *b;
	int err;

	*why = NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->ro = ro;
	err = blk_open(b, path, why);
	if (err)
		goto fail;
	pthread_cond_init(&b->work, NULL);
	pthread_cond_init(&b->idle, NULL);
	b->dev = virtio_mmio_add(vm, ro ? &blk_ro_ops : &blk_ops, b);
	if (!b->dev) {
		err = -errno;
		pthread_cond_destroy(&b->work);
		pthread_cond_destroy(&b->idle);
		goto fail;
	}
	/* The worker takes no signals: those are for the main loop and vCPUs.
	 * If it cannot start, the device is already the VM's and is freed
	 * with the rest by virtio_mmio_destroy_all(). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&b->worker, NULL, blk_worker, b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	b->have_worker = !err;
	return err;
fail:
	if (b->fd >= 0)
		close(b->fd);
	free(b);
	return err;
}
