/* SPDX-License-Identifier: MIT */
/*
 * virtio-pmem (virtio 1.2, 5.19): a read-only image file as guest-physical
 * memory at KILN_GPA_PMEM (include/kiln/boot.h).
 *
 * The file is mapped MAP_SHARED, so every VM on the host booted from one
 * image reads the same page-cache pages; nothing is read or allocated up
 * front, whatever the file's size. The VMM itself never touches the mapping:
 * only KVM does, through a read-only memslot made in vm_create(). Populating
 * it (MADV_POPULATE_READ of the cached pages, so that the shadow MMU's
 * prefetch finds them mapped) was measured to change no shadow fault count
 * of a first python3 run, while costing ~0.2 ms of CPU and 2 KiB of page
 * tables per MiB of image: it is not done.
 *
 * Pages wholly past the end of the file would fault in KVM (SIGBUS for a
 * process), so the window is backed by the file only up to its last page;
 * the rest, up to the 2 MiB boundary, is an anonymous read-only mapping that
 * reads as zero.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../snapshot/snap.h"
#include "virtio.h"

#define PAGE 4096ULL
#define HUGE (2ULL << 20)

#define VIRTIO_PMEM_REQ_TYPE_FLUSH 0
#define VIRTIO_PMEM_RESP_OK        0
#define VIRTIO_PMEM_RESP_EIO       1

#define PMEM_QUEUE_SIZE   16
#define LOG_LINES_PER_SEC 10

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) & ~(to - 1);
}

/* The image's length: regular files by size, block devices by ioctl. */
static int image_size(int fd, uint64_t *size, const char **why)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, size) < 0)
			return -errno;
	} else {
		*why = "not a regular file or block device";
		return -EINVAL;
	}
	if (!*size) {
		*why = "the image is empty";
		return -EINVAL;
	}
	if (*size > KILN_PMEM_MAX) {
		*why = "larger than the 64 GiB kiln supports for an image";
		return -EFBIG;
	}
	return 0;
}

/* Reserve the whole window 2 MiB-aligned (so KVM and the host can use large
 * pages where the page cache has them), then put the file over its start. */
static void *map_window(int fd, uint64_t window, uint64_t file_pages)
{
	uint8_t *p, *base;
	uint64_t lead;

	p = mmap(NULL, window + HUGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
	         0);
	if (p == MAP_FAILED)
		return NULL;
	base = (uint8_t *)round_up((uint64_t)(uintptr_t)p, HUGE);
	lead = (uint64_t)(base - p);
	if (lead)
		munmap(p, lead);
	munmap(base + window, HUGE - lead);
	if (mmap(base, file_pages, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		int err = errno;

		munmap(base, window);
		errno = err;
		return NULL;
	}
	return base;
}

int pmem_map(struct guest_mem *mem, const char *path, const char **why)
{
	uint64_t ram_end = KILN_GPA_HIGH_RAM + (mem->size - mem->low_size);
	uint64_t size = 0;
	void *p;
	int fd, err;

	*why = NULL;
	if (mem->size > mem->low_size && ram_end > KILN_GPA_PMEM) {
		*why = "guest memory would reach the image window at 64 GiB; use --mem 63G or less";
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = image_size(fd, &size, why);
	if (err)
		goto out;
	p = map_window(fd, round_up(size, HUGE), round_up(size, PAGE));
	if (!p) {
		err = -errno;
		*why = err == -ENOMEM ? "no address space left to map it" : NULL;
		goto out;
	}
	mem->pmem = p;
	mem->pmem_size = round_up(size, HUGE);
	mem->pmem_file_size = size;
out:
	close(fd);
	return err;
}

void pmem_unmap(struct guest_mem *mem)
{
	if (mem->pmem)
		munmap((void *)mem->pmem, mem->pmem_size);
	mem->pmem = NULL;
	mem->pmem_size = mem->pmem_file_size = 0;
}

/* A guest can misbehave at line rate: the transport's budget of lines per
 * second, shared with its own messages. */
static void pmem_log(struct virtio_dev *dev, const char *msg)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((uint64_t)now.tv_sec != dev->log_window) {
		dev->log_window = (uint64_t)now.tv_sec;
		dev->log_count = 0;
	}
	if (dev->log_count >= LOG_LINES_PER_SEC)
		return;
	dev->log_count++;
	fprintf(stderr, "kiln-vmm: pmem: %s%s\n", msg,
	        dev->log_count == LOG_LINES_PER_SEC ? " (more suppressed)" : "");
}

/* One request: {le32 type} readable, {le32 ret} writable. Returns the used
 * length. */
static uint32_t pmem_request(struct virtio_dev *dev, const struct virtq_chain *c)
{
	const struct iovec *out = c->iov, *in = c->iov + c->n_out;
	uint32_t type, ret;

	if (!c->n_in || in[0].iov_len < sizeof(ret)) {
		pmem_log(dev, "request without room for a response dropped");
		return 0;
	}
	if (!c->n_out || out[0].iov_len < sizeof(type)) {
		pmem_log(dev, "request shorter than its type answered EIO");
		ret = VIRTIO_PMEM_RESP_EIO;
	} else {
		memcpy(&type, out[0].iov_base, sizeof(type));
		/* A read-only window has nothing to write back. */
		ret = le32toh(type) == VIRTIO_PMEM_REQ_TYPE_FLUSH ? VIRTIO_PMEM_RESP_OK
		                                                  : VIRTIO_PMEM_RESP_EIO;
	}
	ret = htole32(ret);
	memcpy(in[0].iov_base, &ret, sizeof(ret));
	return sizeof(ret);
}

static void pmem_notify(struct virtio_dev *dev, unsigned qi)
{
	struct virtq *q = &dev->vq[0];
	struct virtq_chain chain;
	unsigned n;
	int r;

	for (n = 0; n < q->size; n++) {
		r = virtq_pop(&dev->vm->mem, q, &chain);
		if (r < 0)
			virtio_dev_fail(dev, q->error);
		if (r <= 0)
			break;
		virtq_push(&dev->vm->mem, q, chain.head, pmem_request(dev, &chain));
	}
	if (n == q->size)
		virtio_dev_kick(dev, 0);
	virtio_dev_notify(dev, 0);
}

static void pmem_config_read(struct virtio_dev *dev, uint32_t off, void *buf, uint32_t len)
{
	const struct guest_mem *m = &dev->vm->mem;
	uint64_t cfg[2] = {htole64(KILN_GPA_PMEM), htole64(m->pmem_size)};

	memcpy(buf, (uint8_t *)cfg + off, len);
}

/* ---------------------------------------------------------------- snapshots */

/* Persisted (the snapshot format): a change bumps PMEM_STATE_VERSION. The
 * image is the guest's file system, so a restore must get the same one.
 * Hashing gigabytes would cost seconds per restore; the identity is the
 * size and a hash of samples (its first and last 64 KiB, where erofs keeps
 * its superblock and a file system's tail, and 64 pages spread evenly),
 * which tells any two different images apart but not an edit in place. */
#define PMEM_STATE_VERSION 1
#define SAMPLE_EDGE        (64 * 1024ULL)
#define SAMPLE_PAGES       64
struct pmem_state {
	uint32_t version;
	uint32_t reserved;
	uint64_t image_size;
	uint64_t window_size;
	uint64_t sample_hash; /* XXH64 chain over the samples */
};
_Static_assert(sizeof(struct pmem_state) == 32, "pmem_state layout");

static uint64_t sample_hash(const struct guest_mem *m)
{
	const uint8_t *p = m->pmem;
	uint64_t size = m->pmem_file_size;
	uint64_t edge = size < SAMPLE_EDGE ? size : SAMPLE_EDGE;
	uint64_t h = snap_xxh64(p, edge, size);

	h = snap_xxh64(p + size - edge, edge, h);
	for (uint64_t i = 1; i <= SAMPLE_PAGES && size > 2 * PAGE; i++) {
		uint64_t off = (size - PAGE) / (SAMPLE_PAGES + 1) * i & ~(PAGE - 1);

		h = snap_xxh64(p + off, PAGE, h);
	}
	return h;
}

static int pmem_save(struct virtio_dev *dev, void *buf, uint32_t len)
{
	const struct guest_mem *m = &dev->vm->mem;
	struct pmem_state st = {
	    .version = PMEM_STATE_VERSION,
	    .image_size = m->pmem_file_size,
	    .window_size = m->pmem_size,
	    .sample_hash = sample_hash(m),
	};

	if (len < sizeof(st))
		return -ENOSPC;
	memcpy(buf, &st, sizeof(st));
	return sizeof(st);
}

static int pmem_restore(struct virtio_dev *dev, const void *buf, uint32_t len, bool apply,
                        char *why, size_t why_len)
{
	const struct guest_mem *m = &dev->vm->mem;
	struct pmem_state st;

	if (len != sizeof(st)) {
		snprintf(why, why_len, "state of %u bytes, expected %zu", len, sizeof(st));
		return -EINVAL;
	}
	memcpy(&st, buf, sizeof(st));
	if (st.version != PMEM_STATE_VERSION || st.reserved) {
		snprintf(why, why_len, "state version %u, this kiln-vmm reads %u", st.version,
		         PMEM_STATE_VERSION);
		return -EINVAL;
	}
	if (st.image_size != m->pmem_file_size || st.window_size != m->pmem_size) {
		snprintf(why, why_len,
		         "the image differs: the snapshot's was %llu bytes, this one is %llu",
		         (unsigned long long)st.image_size, (unsigned long long)m->pmem_file_size);
		return -EINVAL;
	}
	if (!apply && st.sample_hash != sample_hash(m)) {
		snprintf(why, why_len,
		         "the image differs: same size (%llu bytes), other content (sampled "
		         "hash %016llx, the snapshot's %016llx)",
		         (unsigned long long)st.image_size, (unsigned long long)sample_hash(m),
		         (unsigned long long)st.sample_hash);
		return -EINVAL;
	}
	return 0;
}

static const struct virtio_dev_ops pmem_ops = {
    .name = "pmem",
    .device_id = VIRTIO_ID_PMEM,
    .features = 0,
    .nr_queues = 1,
    .queue_max = PMEM_QUEUE_SIZE,
    .config_size = 16, /* le64 start, le64 size */
    .config_read = pmem_config_read,
    .queue_notify = pmem_notify,
    .save = pmem_save,
    .restore = pmem_restore,
};

int pmem_create(struct vm *vm)
{
	if (!vm->mem.pmem)
		return -EINVAL;
	return virtio_mmio_add(vm, &pmem_ops, NULL) ? 0 : -errno;
}
