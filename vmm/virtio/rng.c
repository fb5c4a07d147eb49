/* SPDX-License-Identifier: MIT */
/*
 * virtio-rng (virtio 1.x, 5.4): one request queue whose writable buffers the
 * device fills with host entropy from getrandom().
 */
#include <errno.h>
#include <stdint.h>
#include <sys/random.h>

#include "virtio.h"

/* A guest may post a 4 GiB buffer; it gets at most this much per request and
 * can ask again, so one request never stalls the loop for long. */
#define RNG_CHAIN_MAX (64 * 1024)

/* Fill the writable buffers in order; returns the bytes written, which form
 * a prefix of them as the used length requires. */
static uint32_t rng_fill(const struct virtq_chain *chain)
{
	uint32_t done = 0;
	unsigned i;

	for (i = chain->n_out; i < chain->n_out + chain->n_in && done < RNG_CHAIN_MAX; i++) {
		uint8_t *p = chain->iov[i].iov_base;
		size_t want = chain->iov[i].iov_len, got = 0;

		if (want > RNG_CHAIN_MAX - done)
			want = RNG_CHAIN_MAX - done;
		while (got < want) {
			ssize_t r = getrandom(p + got, want - got, 0);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return done + (uint32_t)got;
			got += (size_t)r;
		}
		done += (uint32_t)want;
	}
	return done;
}

static void rng_notify(struct virtio_dev *dev, unsigned qi)
{
	struct virtq *q = &dev->vq[0];
	struct virtq_chain chain;
	unsigned n;
	int r;

	/* At most one queue's worth per callback: a driver that refills as
	 * fast as we serve must not monopolise the loop. */
	for (n = 0; n < q->size; n++) {
		r = virtq_pop(&dev->vm->mem, q, &chain);
		if (r < 0)
			virtio_dev_fail(dev, q->error);
		if (r <= 0)
			break;
		virtq_push(&dev->vm->mem, q, chain.head, rng_fill(&chain));
	}
	if (n == q->size)
		virtio_dev_kick(dev, 0);
	virtio_dev_notify(dev, 0);
}

static const struct virtio_dev_ops rng_ops = {
    .name = "rng",
    .device_id = VIRTIO_ID_RNG,
    .features = 0,
    .nr_queues = 1,
    .queue_max = 64,
    .config_size = 0,
    .queue_notify = rng_notify,
};

int rng_create(struct vm *vm)
{
	return virtio_mmio_add(vm, &rng_ops, NULL) ? 0 : -errno;
}
