/* SPDX-License-Identifier: MIT */
/* virtio-mmio driver core: negotiation and split virtqueues. */
#include "bootinfo.h"
#include "kcpu.h"
#include "mm.h"
#include "printk.h"
#include "sv.h"
#include "virtio.h"

#define REG_DRV_FEATURES     0x020
#define REG_DRV_FEATURES_SEL 0x024
#define REG_QUEUE_SEL        0x030
#define REG_QUEUE_NUM        0x038
#define REG_QUEUE_READY      0x044
#define REG_QUEUE_NOTIFY     0x050
#define REG_INT_STATUS       0x060
#define REG_INT_ACK          0x064
#define REG_STATUS           0x070
#define REG_QUEUE_DESC       0x080
#define REG_QUEUE_DRIVER     0x090
#define REG_QUEUE_DEVICE     0x0a0
#define REG_CONFIG           0x100

#define ST_ACK               1
#define ST_DRIVER            2
#define ST_DRIVER_OK         4
#define ST_FEATURES_OK       8
#define F_VERSION_1          (1ULL << 32)
#define MAX_QUEUES           4
#define AVAIL_F_NO_INTERRUPT 1
#define USED_F_NO_NOTIFY     1

/* Aligned to its size, so it lies in one page of any stack. */
struct batch {
	struct kiln_mmio_op op[KILN_MMIO_BATCH_MAX] __attribute__((aligned(512)));
	unsigned n;
	uint64_t base_pa;
};

static unsigned rd(struct batch *b, unsigned reg)
{
	b->op[b->n] = (struct kiln_mmio_op){.off = reg};
	return b->n++;
}

static void wr(struct batch *b, unsigned reg, uint32_t v)
{
	b->op[b->n++] = (struct kiln_mmio_op){.off = reg | KILN_MMIO_WRITE, .value = v};
}

/* The high halves of queue addresses are 0 after a reset: skip them then. */
static void wr64(struct batch *b, unsigned reg, uint64_t v)
{
	wr(b, reg, (uint32_t)v);
	if (v >> 32)
		wr(b, reg + 4, (uint32_t)(v >> 32));
}

static void run(struct batch *b)
{
	sv_mmio(b->base_pa, virt_to_phys(b->op), b->n);
}

static int alloc_queue(struct vio_queue *q, unsigned index, uint16_t size)
{
	size_t desc = 16UL * size, avail = 6 + 2UL * size, used = 6 + 8UL * size;
	size_t bytes = ALIGN_UP(desc + avail, 4) + used;
	uint64_t pa = pmem_alloc_contig(ALIGN_UP(bytes, PAGE_SIZE) / PAGE_SIZE, 1, true);
	char *p;

	if (!pa)
		return -ENOMEM;
	p = phys_to_virt(pa);
	q->index = index;
	q->size = size;
	q->desc = (struct vio_desc *)p;
	q->avail = (struct vio_avail *)(p + desc);
	q->used = (struct vio_used *)(p + ALIGN_UP(desc + avail, 4));
	for (uint16_t i = 0; i < size; i++)
		q->desc[i].next = (uint16_t)(i + 1);
	q->free_head = 0;
	q->nr_free = size;
	q->last_used = 0;
	return 0;
}

static void queue_regs(struct batch *b, struct vio_queue *q)
{
	uint64_t d = virt_to_phys(q->desc), a = virt_to_phys(q->avail), u = virt_to_phys(q->used);

	wr(b, REG_QUEUE_SEL, q->index);
	wr(b, REG_QUEUE_NUM, q->size);
	wr64(b, REG_QUEUE_DESC, d);
	wr64(b, REG_QUEUE_DRIVER, a);
	wr64(b, REG_QUEUE_DEVICE, u);
	wr(b, REG_QUEUE_READY, 1);
}

static bool taken[KILN_MMIO_MAX_DEVICES];

/*
 * The device tree gives each device's type, features and queue sizes, so
 * the whole set-up is one batch of writes with a status read at the end,
 * which the VMM does in one exit (KILN_PORT_MMIO) instead of one per register.
 */
int vio_probe_fill(const struct bootinfo *bi, uint32_t device_id, uint64_t want, unsigned nq,
                   uint16_t max_size, struct vio_dev *dev, struct vio_queue *qs, int (*fill)(void))
{
	struct batch b;
	uint16_t size;
	unsigned st;
	int i;

	if (nq > MAX_QUEUES)
		return -EINVAL;
	/* The VMM names each device's type in the FDT: no probing of others
	 * (which would reset them). Taken devices are remembered. */
	for (i = 0; i < bi->nr_virtio && (bi->virtio[i].device_id != device_id || taken[i]); i++)
		;
	if (i == bi->nr_virtio)
		return -ENODEV;
	taken[i] = true;
	dev->base_pa = bi->virtio[i].base;
	dev->regs = (volatile uint8_t *)(KILN_VA_MMIO + (dev->base_pa - KILN_GPA_MMIO_BASE));
	dev->irq_bit = bi->virtio[i].vector - KILN_VEC_DEVICE0;
	dev->device_id = device_id;
	dev->features = bi->virtio[i].features;
	if (!(dev->features & F_VERSION_1))
		return -ENODEV;
	dev->features &= want | F_VERSION_1;
	/* Queue sizes are powers of two. */
	size = (uint16_t)MIN(MIN(bi->virtio[i].queue_max, 0x8000U), max_size);
	while (size & (size - 1))
		size &= (uint16_t)(size - 1);
	if (!size)
		return -ENODEV;
	b = (struct batch){.base_pa = dev->base_pa};
	wr(&b, REG_STATUS, 0);
	wr(&b, REG_STATUS, ST_ACK | ST_DRIVER);
	wr(&b, REG_DRV_FEATURES_SEL, 0);
	wr(&b, REG_DRV_FEATURES, (uint32_t)dev->features);
	wr(&b, REG_DRV_FEATURES_SEL, 1);
	wr(&b, REG_DRV_FEATURES, (uint32_t)(dev->features >> 32));
	wr(&b, REG_STATUS, ST_ACK | ST_DRIVER | ST_FEATURES_OK);
	for (unsigned q = 0; q < nq; q++) {
		int err = alloc_queue(&qs[q], q, size);
		if (err)
			return err;
		qs[q].notify = (volatile uint32_t *)(dev->regs + REG_QUEUE_NOTIFY);
		queue_regs(&b, &qs[q]);
	}
	if (fill) {
		int err = fill();
		if (err)
			return err;
	}
	/* The device refuses DRIVER_OK without FEATURES_OK. */
	wr(&b, REG_STATUS, ST_ACK | ST_DRIVER | ST_FEATURES_OK | ST_DRIVER_OK);
	st = rd(&b, REG_STATUS);
	run(&b);
	if (!(b.op[st].value & ST_FEATURES_OK) || !(b.op[st].value & ST_DRIVER_OK))
		return -EIO;
	return 0;
}

int vio_probe(const struct bootinfo *bi, uint32_t device_id, uint64_t want, unsigned nq,
              uint16_t max_size, struct vio_dev *dev, struct vio_queue *qs)
{
	return vio_probe_fill(bi, device_id, want, nq, max_size, dev, qs, NULL);
}

uint32_t vio_config_read(struct vio_dev *dev, unsigned off)
{
	struct batch b = {.base_pa = dev->base_pa};
	unsigned v = rd(&b, REG_CONFIG + off);

	run(&b);
	return b.op[v].value;
}

uint32_t vio_interrupt_status(struct vio_dev *dev, uint32_t ack)
{
	struct batch b = {.base_pa = dev->base_pa};
	unsigned st = rd(&b, REG_INT_STATUS);
	uint32_t v;

	run(&b);
	v = b.op[st].value;
	if (v & ack) {
		b.n = 0;
		wr(&b, REG_INT_ACK, v & ack);
		run(&b);
	}
	return v;
}

int vio_add(struct vio_queue *q, const uint64_t *addr, const uint32_t *len, unsigned n_out,
            unsigned n_in)
{
	unsigned n = n_out + n_in;
	uint16_t head = q->free_head, i = head, last = head;

	if (!n || n > q->nr_free)
		return -ENOSPC;
	for (unsigned k = 0; k < n; k++) {
		struct vio_desc *d = &q->desc[i];
		d->addr = addr[k];
		d->len = len[k];
		d->flags = (uint16_t)((k >= n_out ? VIO_DESC_F_WRITE : 0) |
		                      (k + 1 < n ? VIO_DESC_F_NEXT : 0));
		last = i;
		i = d->next;
	}
	q->free_head = q->desc[last].next;
	q->nr_free = (uint16_t)(q->nr_free - n);
	q->avail->ring[q->avail->idx % q->size] = head;
	__atomic_store_n(&q->avail->idx, (uint16_t)(q->avail->idx + 1), __ATOMIC_RELEASE);
	return head;
}

void vio_kick(struct vio_queue *q)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(&q->used->flags, __ATOMIC_ACQUIRE) & USED_F_NO_NOTIFY))
		*q->notify = q->index;
}

bool vio_has_used(const struct vio_queue *q)
{
	return __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE) != q->last_used;
}

bool vio_get_used(struct vio_queue *q, uint32_t *id, uint32_t *len)
{
	struct vio_used_elem e;
	uint16_t i;

	if (!vio_has_used(q))
		return false;
	e = q->used->ring[q->last_used % q->size];
	q->last_used++;
	if (e.id >= q->size)
		kpanic("virtio queue %u: device returned descriptor %u", q->index, e.id);
	*id = e.id;
	*len = e.len;
	/* Return the chain to the free list. */
	i = (uint16_t)e.id;
	q->nr_free++;
	while (q->desc[i].flags & VIO_DESC_F_NEXT) {
		i = q->desc[i].next;
		q->nr_free++;
	}
	q->desc[i].next = q->free_head;
	q->free_head = (uint16_t)e.id;
	return true;
}

void vio_want_irq(struct vio_queue *q, bool on)
{
	uint16_t f = on ? 0 : AVAIL_F_NO_INTERRUPT;
	if (q->avail->flags != f)
		__atomic_store_n(&q->avail->flags, f, __ATOMIC_SEQ_CST);
}

void idle_wait_once(uint64_t tsc_deadline)
{
	sv_halt(tsc_deadline);
}
