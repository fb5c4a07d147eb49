/* SPDX-License-Identifier: MIT */
/*
 * Split virtqueues, device side (virtio 1.x, 2.7). The rings live in guest
 * memory that a hostile driver may rewrite at any moment, so every field is
 * loaded exactly once into a local and validated there, and every buffer
 * goes through gpa_ptr(). A ring that breaks a rule marks the queue broken;
 * nothing is read from it again until the driver resets the device.
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "virtio.h"

#define VIRTQ_DESC_F_NEXT          1
#define VIRTQ_DESC_F_WRITE         2
#define VIRTQ_DESC_F_INDIRECT      4
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1
#define VIRTQ_USED_F_NO_NOTIFY     1

struct vdesc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

/* flags, idx, ring[size], used_event */
struct vavail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[];
};

struct vused_elem {
	uint32_t id;
	uint32_t len;
};

/* flags, idx, ring[size], avail_event */
struct vused {
	uint16_t flags;
	uint16_t idx;
	struct vused_elem ring[];
};

struct rings {
	struct vdesc *desc;
	struct vavail *avail;
	struct vused *used;
};

/* Relaxed single loads and stores: the guest may write concurrently, and the
 * compiler must neither re-read a validated field nor tear a store. */
static inline uint16_t ld16(const uint16_t *p)
{
	return le16toh(__atomic_load_n(p, __ATOMIC_RELAXED));
}

static inline void st16(uint16_t *p, uint16_t v)
{
	__atomic_store_n(p, htole16(v), __ATOMIC_RELAXED);
}

static inline void st32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, htole32(v), __ATOMIC_RELAXED);
}

static inline bool is_pow2(unsigned v)
{
	return v && !(v & (v - 1));
}

/*
 * Map all three rings. Done on every use rather than cached at QueueReady:
 * it costs three bounds checks and keeps the queue state plain data (no host
 * pointers) for snapshots.
 */
static int map_rings(const struct guest_mem *mem, const struct virtq *q, struct rings *r)
{
	uint64_t n = q->size;

	if (!is_pow2(n) || n > VIRTQ_MAX_SIZE || n > q->max)
		return -EINVAL;
	/* Alignments required by the spec (2.7); they also keep the atomic
	 * loads and stores below naturally aligned. */
	if ((q->desc_gpa & 15) || (q->avail_gpa & 1) || (q->used_gpa & 3))
		return -EINVAL;
	r->desc = gpa_ptr(mem, q->desc_gpa, 16 * n);
	r->avail = gpa_ptr(mem, q->avail_gpa, 6 + 2 * n);
	r->used = gpa_ptr(mem, q->used_gpa, 6 + 8 * n);
	if (!r->desc || !r->avail || !r->used)
		return -EINVAL;
	return 0;
}

int virtq_check_layout(const struct guest_mem *mem, const struct virtq *q)
{
	struct rings r;

	return map_rings(mem, q, &r);
}

/* The event-idx fields sit just past the rings (2.7.10). */
static uint16_t *avail_event(struct rings *r, uint16_t size)
{
	return (uint16_t *)&r->used->ring[size];
}

static int fail(struct virtq *q, const char *why)
{
	q->broken = true;
	q->error = why;
	return -EIO;
}

static uint16_t avail_idx(struct rings *r)
{
	/* Acquire: the ring entries and descriptors the driver wrote before
	 * publishing idx must be visible to the loads that follow. */
	return le16toh(__atomic_load_n(&r->avail->idx, __ATOMIC_ACQUIRE));
}

static int walk_chain(const struct guest_mem *mem, struct virtq *q, struct rings *r, uint16_t head,
                      struct virtq_chain *c)
{
	unsigned n, niov = 0;
	uint16_t idx = head;
	bool seen_write = false;

	c->head = head;
	c->n_out = c->n_in = 0;
	c->out_len = c->in_len = 0;
	for (n = 0;; n++) {
		struct vdesc *d;
		uint64_t addr;
		uint32_t len;
		uint16_t flags;

		if (idx >= q->size)
			return fail(q, "descriptor index out of range");
		/* A chain can name each descriptor at most once, so one longer
		 * than the table must loop. */
		if (n >= q->size)
			return fail(q, "descriptor chain loops");
		d = &r->desc[idx];
		addr = le64toh(__atomic_load_n(&d->addr, __ATOMIC_RELAXED));
		len = le32toh(__atomic_load_n(&d->len, __ATOMIC_RELAXED));
		flags = ld16(&d->flags);
		if (flags & VIRTQ_DESC_F_INDIRECT)
			return fail(q, "indirect descriptor, but the feature was not offered");
		if (flags & VIRTQ_DESC_F_WRITE)
			seen_write = true;
		else if (seen_write)
			return fail(q, "readable descriptor after a writable one");
		/* Zero-length buffers are legal and need no mapping; giving them
		 * no iovec keeps devices from ever seeing a bogus base. */
		if (len) {
			void *p = gpa_ptr(mem, addr, len);

			if (!p)
				return fail(q, "descriptor buffer outside guest RAM");
			/* 2.7.5: a chain is at most 2^32 bytes, which also keeps
			 * any used length representable. */
			if (c->out_len + c->in_len + len > UINT32_MAX)
				return fail(q, "descriptor chain longer than 4 GiB");
			c->iov[niov].iov_base = p;
			c->iov[niov].iov_len = len;
			niov++;
			if (seen_write) {
				c->n_in++;
				c->in_len += len;
			} else {
				c->n_out++;
				c->out_len += len;
			}
		}
		if (!(flags & VIRTQ_DESC_F_NEXT))
			return 0;
		idx = ld16(&d->next);
	}
}

int virtq_pop(const struct guest_mem *mem, struct virtq *q, struct virtq_chain *chain)
{
	struct rings r;
	uint16_t pending, head;
	int err;

	if (q->broken)
		return -EIO;
	if (!q->ready)
		return 0;
	if (map_rings(mem, q, &r) < 0)
		return fail(q, "queue rings outside guest RAM");
	pending = avail_idx(&r) - q->last_avail;
	if (!pending && q->event_idx) {
		/* Ask for a kick at the next buffer, then look again: one made
		 * available before the driver could see avail_event would
		 * otherwise wait for a kick that never comes. */
		st16(avail_event(&r, q->size), q->last_avail);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		pending = avail_idx(&r) - q->last_avail;
	}
	if (!pending)
		return 0;
	if (pending > q->size)
		return fail(q, "available index ran ahead by more than the queue size");
	head = ld16(&r.avail->ring[q->last_avail & (q->size - 1)]);
	err = walk_chain(mem, q, &r, head, chain);
	if (err)
		return err;
	q->last_avail++;
	if (q->event_idx)
		st16(avail_event(&r, q->size), q->last_avail);
	return 1;
}

void virtq_unpop(struct virtq *q)
{
	if (!q->broken)
		q->last_avail--;
}

void virtq_push(const struct guest_mem *mem, struct virtq *q, uint16_t head, uint32_t len)
{
	struct vused_elem *e;
	struct rings r;

	if (!q->ready || q->broken)
		return;
	if (map_rings(mem, q, &r) < 0) {
		fail(q, "queue rings outside guest RAM");
		return;
	}
	e = &r.used->ring[q->used_idx & (q->size - 1)];
	st32(&e->id, head);
	st32(&e->len, len);
	q->used_idx++;
	/* Release: the element must be visible before the index that
	 * publishes it. */
	__atomic_store_n(&r.used->idx, htole16(q->used_idx), __ATOMIC_RELEASE);
}

bool virtq_want_kicks(const struct guest_mem *mem, struct virtq *q, bool on)
{
	struct rings r;

	/* With event idx the driver looks at avail_event, which virtq_pop()
	 * keeps asking for the next buffer. */
	if (!q->ready || q->broken || q->event_idx || map_rings(mem, q, &r) < 0)
		return false;
	if (ld16(&r.used->flags) != (on ? 0 : VIRTQ_USED_F_NO_NOTIFY))
		st16(&r.used->flags, on ? 0 : VIRTQ_USED_F_NO_NOTIFY);
	if (!on)
		return false;
	/* Store-load ordering against the driver's avail->idx: a buffer it
	 * made available before it could see the flag cleared gets no kick. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return avail_idx(&r) != q->last_avail;
}

bool virtq_need_irq(const struct guest_mem *mem, struct virtq *q)
{
	uint16_t old = q->signalled_used, new = q->used_idx, event;
	struct rings r;

	if (!q->ready || q->broken || old == new)
		return false;
	if (map_rings(mem, q, &r) < 0)
		return false;
	/* Store-load ordering between our used->idx and the driver's
	 * suppression fields; without it we may read a stale used_event, skip
	 * the interrupt and leave the driver waiting forever. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	q->signalled_used = new;
	if (q->event_idx) {
		event = ld16(&r.avail->ring[q->size]); /* used_event */
		/* Interrupt iff used_event lies in [old, new). */
		return (uint16_t)(new - event - 1) < (uint16_t)(new - old);
	}
	return !(ld16(&r.avail->flags) & VIRTQ_AVAIL_F_NO_INTERRUPT);
}

/* ---------------------------------------------------------------- chain buffers */

/* Copies between flat memory buf and the bytes of iov from off on. */
static size_t iov_copy(const struct iovec *iov, unsigned n, size_t off, uint8_t *buf, size_t len,
                       bool to_iov)
{
	size_t done = 0;
	unsigned i;

	for (i = 0; i < n && done < len; i++) {
		size_t l = iov[i].iov_len;
		uint8_t *p;

		if (off >= l) {
			off -= l;
			continue;
		}
		l -= off;
		if (l > len - done)
			l = len - done;
		p = (uint8_t *)iov[i].iov_base + off;
		memcpy(to_iov ? p : buf + done, to_iov ? buf + done : p, l);
		done += l;
		off = 0;
	}
	return done;
}

size_t virtq_iov_read(const struct iovec *iov, unsigned n, size_t off, void *dst, size_t len)
{
	return iov_copy(iov, n, off, dst, len, false);
}

size_t virtq_iov_write(const struct iovec *iov, unsigned n, size_t off, const void *src, size_t len)
{
	return iov_copy(iov, n, off, (uint8_t *)src, len, true);
}

unsigned virtq_iov_slice(const struct iovec *iov, unsigned n, size_t off, size_t len,
                         struct iovec *out)
{
	unsigned i, k = 0;

	for (i = 0; i < n && len; i++) {
		size_t l = iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		l -= off;
		if (l > len)
			l = len;
		out[k].iov_base = (uint8_t *)iov[i].iov_base + off;
		out[k++].iov_len = l;
		len -= l;
		off = 0;
	}
	return k;
}
