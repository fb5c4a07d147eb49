/* SPDX-License-Identifier: MIT */
/*
 * virtio-console driver. Output is copied into per-descriptor pages and
 * kicked at once; the host writes it out. Input arrives in posted pages and
 * is handed out in order. A used receive buffer of length 0 is the host's
 * end of input (kiln/boot.h). Interrupts are requested only while we wait.
 */
#include "bootinfo.h"
#include "console.h"
#include "kcpu.h"
#include "mm.h"
#include "printk.h"
#include "uaccess.h"
#include "virtio.h"
#include "errno_k.h"
#include "proc.h"
#include "sched.h"

#define VIRTIO_ID_CONSOLE 3
#define QUEUE_SIZE        32
#define RX_BUFS           16
#define BUF_SIZE          PAGE_SIZE

static struct vio_dev dev;
static struct vio_queue q[2]; /* 0: receive, 1: transmit */
#define RXQ (&q[0])
#define TXQ (&q[1])

static uint64_t tx_page[QUEUE_SIZE]; /* by descriptor index (one-descriptor chains) */
static uint64_t rx_page[QUEUE_SIZE]; /* page posted at each descriptor index */
/* Filled receive buffers, oldest first. */
static struct {
	uint64_t page;
	uint32_t len, off;
} rx_done[QUEUE_SIZE];
static unsigned rx_head, rx_count;
static bool rx_eof, ready;
struct waitq console_rx_wq, console_tx_wq;

static void console_irq(void)
{
	wake_all(&console_rx_wq);
	wake_all(&console_tx_wq);
}

/* Before the first process exists nothing can be scheduled: spin on the
 * device instead (boot messages only). */
static bool can_block(void)
{
	return cur_thread()->proc != NULL;
}

static int post_rx(uint64_t page)
{
	uint32_t len = BUF_SIZE;
	uint16_t slot = RXQ->free_head;
	int id;

	rx_page[slot] = page;
	id = vio_add(RXQ, &page, &len, 0, 1);
	return id < 0 ? id : 0;
}

int console_init(const struct bootinfo *bi)
{
	int err = vio_probe(bi, VIRTIO_ID_CONSOLE, 0, 2, QUEUE_SIZE, &dev, q);

	if (err)
		return err;
	for (unsigned i = 0; i < TXQ->size; i++)
		if (!(tx_page[i] = pmem_alloc(false)))
			return -ENOMEM;
	for (unsigned i = 0; i < MIN(RXQ->size, RX_BUFS); i++) {
		uint64_t page = pmem_alloc(false);
		if (!page || post_rx(page))
			return -ENOMEM;
	}
	vio_want_irq(TXQ, false);
	vio_want_irq(RXQ, true);
	vio_kick(RXQ);
	irq_register(dev.irq_bit, console_irq);
	ready = true;
	return 0;
}

bool console_ready(void)
{
	return ready;
}

static void reclaim_tx(void)
{
	uint32_t id, len;
	while (vio_get_used(TXQ, &id, &len))
		;
}

static bool tx_room(void)
{
	reclaim_tx();
	return TXQ->nr_free > 0;
}

static int copy_in(void *dst, const void *src, size_t n)
{
	if ((uint64_t)src < USER_TOP)
		return copy_from_user(dst, src, n);
	memcpy(dst, src, n);
	return 0;
}

long console_write(const void *buf, size_t n)
{
	const char *p = buf;
	size_t done = 0;

	if (!ready)
		return -ENODEV;
	while (done < n) {
		uint32_t chunk = (uint32_t)MIN(n - done, BUF_SIZE);
		uint16_t slot;
		uint64_t pa;

		if (!tx_room()) {
			long err = 0;
			vio_want_irq(TXQ, true);
			if (can_block())
				err = WAIT_EVENT(&console_tx_wq, tx_room(), 0);
			else
				WAIT_UNTIL(tx_room());
			vio_want_irq(TXQ, false);
			if (err) {
				vio_kick(TXQ);
				return done ? (long)done : -ERESTARTSYS;
			}
		}
		slot = TXQ->free_head;
		pa = tx_page[slot];
		if (copy_in(phys_to_virt(pa), p + done, chunk))
			return done ? (long)done : -EFAULT;
		vio_add(TXQ, &pa, &chunk, 1, 0);
		done += chunk;
	}
	vio_kick(TXQ);
	return (long)n;
}

void console_flush(void)
{
	if (!ready)
		return;
	reclaim_tx();
	if (TXQ->nr_free == TXQ->size)
		return;
	vio_want_irq(TXQ, true);
	/* Output must get out even if a signal is pending: wait through it. */
	WAIT_UNTIL((reclaim_tx(), TXQ->nr_free == TXQ->size));
	vio_want_irq(TXQ, false);
}

static void collect_rx(void)
{
	uint32_t id, len;

	while (vio_get_used(RXQ, &id, &len)) {
		unsigned slot = (rx_head + rx_count) % QUEUE_SIZE;
		if (len == 0) {
			rx_eof = true;
			continue;
		}
		rx_done[slot].page = rx_page[id];
		rx_done[slot].len = MIN(len, (uint32_t)BUF_SIZE);
		rx_done[slot].off = 0;
		rx_count++;
	}
}

size_t console_input_ready(void)
{
	size_t n = 0;

	if (!ready)
		return 0;
	collect_rx();
	for (unsigned i = 0; i < rx_count; i++) {
		unsigned s = (rx_head + i) % QUEUE_SIZE;
		n += rx_done[s].len - rx_done[s].off;
	}
	return n;
}

static bool rx_available(void)
{
	collect_rx();
	return rx_count || rx_eof;
}

long console_read(void *buf, size_t n, bool nonblock)
{
	size_t done = 0;
	bool reposted = false;

	if (!ready)
		return -ENODEV;
	if (!rx_available()) {
		if (nonblock)
			return -EAGAIN;
		if (WAIT_EVENT(&console_rx_wq, rx_available(), 0))
			return -ERESTARTSYS;
	}
	while (done < n && rx_count) {
		unsigned s = rx_head;
		uint32_t take = (uint32_t)MIN(n - done, rx_done[s].len - rx_done[s].off);
		char *src = (char *)phys_to_virt(rx_done[s].page) + rx_done[s].off;

		if ((uint64_t)buf < USER_TOP) {
			if (copy_to_user((char *)buf + done, src, take))
				return done ? (long)done : -EFAULT;
		} else {
			memcpy((char *)buf + done, src, take);
		}
		done += take;
		rx_done[s].off += take;
		if (rx_done[s].off == rx_done[s].len) {
			post_rx(rx_done[s].page);
			reposted = true;
			rx_head = (rx_head + 1) % QUEUE_SIZE;
			rx_count--;
		}
	}
	if (reposted)
		vio_kick(RXQ);
	return (long)done;
}

bool console_input_eof(void)
{
	return ready && rx_available() && !rx_count && rx_eof;
}
