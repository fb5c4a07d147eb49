/* SPDX-License-Identifier: MIT */
/*
 * virtio-console driver, and the console tty on top of it (tty.c has the
 * line discipline). Output leaves the tty's output queue in per-descriptor
 * pages, kicked at once; the host writes it out. Input arrives in posted
 * pages and goes into the line discipline from the interrupt, so ^C
 * reaches the foreground job while nobody reads; what the tty has no room
 * for stays in its page until a reader makes room. A used receive buffer
 * of length 0 is the host's end of input (kiln/boot.h).
 *
 * The VMM offers VIRTIO_CONSOLE_F_SIZE when its stdin is a terminal (in
 * raw mode). The console is then a cooked terminal of the host's size,
 * following its resizes (config-change interrupts) with SIGWINCH.
 * Otherwise the host's input is a file or a pipe and the console starts
 * raw: bytes pass both ways unchanged, without echo.
 *
 * Kernel messages (console_write) go straight to the device, with CR LF
 * line ends on a terminal as Linux's serial console writes them.
 */
#include "bootinfo.h"
#include "console.h"
#include "kcpu.h"
#include "mm.h"
#include "printk.h"
#include "virtio.h"
#include "errno_k.h"
#include "proc.h"
#include "sched.h"
#include "tty.h"

#define VIRTIO_ID_CONSOLE     3
#define VIRTIO_CONSOLE_F_SIZE (1ULL << 0)
#define VIO_INT_CONFIG        2 /* InterruptStatus: the configuration changed */
#define QUEUE_SIZE            32
#define RX_BUFS               16
#define BUF_SIZE              PAGE_SIZE

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
static bool rx_eof, ready, terminal;
static unsigned tx_waiters; /* kernel writers waiting for the device */
static struct waitq tx_wq;  /* woken by transmit interrupts */
static struct tty *con_tty;

/* Before the first process exists nothing can be scheduled: spin on the
 * device instead (boot messages only). */
static bool can_block(void)
{
	return cur_thread()->proc != NULL;
}

static void reclaim_tx(void)
{
	uint32_t id, len;
	while (vio_get_used(TXQ, &id, &len))
		;
}

/* Interrupts for used transmit buffers only while someone waits on them. */
static void update_tx_irq(void)
{
	vio_want_irq(TXQ, tx_waiters || (con_tty && tty_out_ready(con_tty)));
}

/* The tty's driver: move queued output into transmit buffers. */
static void con_start(struct tty *tty)
{
	bool added = false;

	reclaim_tx();
	while (TXQ->nr_free && tty_out_ready(tty)) {
		uint64_t pa = tx_page[TXQ->free_head];
		uint32_t len = (uint32_t)tty_out_get(tty, phys_to_virt(pa), BUF_SIZE);

		vio_add(TXQ, &pa, &len, 1, 0);
		added = true;
	}
	if (added)
		vio_kick(TXQ);
	update_tx_irq();
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

/* Received bytes into the line discipline, as far as it takes them. Also
 * the tty's unthrottle. */
static void con_pump(struct tty *tty)
{
	bool reposted = false;

	collect_rx();
	while (rx_count) {
		unsigned s = rx_head;
		uint32_t avail = rx_done[s].len - rx_done[s].off;
		size_t took =
		    tty_receive(tty, (char *)phys_to_virt(rx_done[s].page) + rx_done[s].off, avail);

		rx_done[s].off += (uint32_t)took;
		if (took < avail)
			break;
		post_rx(rx_done[s].page);
		reposted = true;
		rx_head = (rx_head + 1) % QUEUE_SIZE;
		rx_count--;
	}
	if (reposted)
		vio_kick(RXQ);
	if (rx_eof && !rx_count && !tty->input_eof)
		tty_input_ended(tty);
}

static const struct tty_driver con_driver = {
    .start = con_start,
    .unthrottle = con_pump,
};

static void read_size(void)
{
	uint32_t v = vio_config_read(&dev, 0); /* cols, rows: 16 bits each */
	struct winsize ws = {.ws_col = (uint16_t)v, .ws_row = (uint16_t)(v >> 16)};

	if (ws.ws_col && ws.ws_row)
		tty_set_winsize(con_tty, &ws);
}

static void console_irq(void)
{
	if (terminal && (vio_interrupt_status(&dev, VIO_INT_CONFIG) & VIO_INT_CONFIG))
		read_size();
	wake_all(&tx_wq);
	con_start(con_tty);
	con_pump(con_tty);
}

/* The buffers, receive buffers posted before DRIVER_OK so that the device
 * has them without a kick. Transmit pages first: the first one shares a
 * 32 KiB group with the rings (one shadow-page fault less at the first
 * output). */
static int fill_buffers(void)
{
	for (unsigned i = 0; i < TXQ->size; i++)
		if (!(tx_page[i] = pmem_alloc(false)))
			return -ENOMEM;
	for (unsigned i = 0; i < MIN(RXQ->size, RX_BUFS); i++) {
		uint64_t page = pmem_alloc(false);
		if (!page || post_rx(page))
			return -ENOMEM;
	}
	vio_want_irq(TXQ, false);
	vio_want_irq(RXQ, false); /* until console_start_input() */
	return 0;
}

int console_init(const struct bootinfo *bi)
{
	int err = vio_probe_fill(bi, VIRTIO_ID_CONSOLE, VIRTIO_CONSOLE_F_SIZE, 2, QUEUE_SIZE, &dev,
	                         q, fill_buffers);

	if (err)
		return err;
	terminal = dev.features & VIRTIO_CONSOLE_F_SIZE;
	con_tty = tty_create(&con_driver, NULL, terminal);
	if (!con_tty)
		return -ENOMEM;
	con_tty->ws = (struct winsize){.ws_row = 24, .ws_col = 80};
	if (terminal)
		read_size();
	/* init (pid 1, its own session and group) has the console as its
	 * controlling terminal, so a shell run as init has job control. */
	tty_set_ctty(con_tty, 1, 1);
	irq_register(dev.irq_bit, console_irq);
	ready = true;
	return 0;
}

void console_start_input(void)
{
	vio_want_irq(RXQ, true);
	/* What the host used before: no interrupt came for it. */
	con_pump(con_tty);
}

bool console_ready(void)
{
	return ready;
}

struct tty *console_tty(void)
{
	return con_tty;
}

static bool tx_room(void)
{
	reclaim_tx();
	return TXQ->nr_free > 0;
}

/* Wait for cond, sleeping if a process can, spinning on the device if not. */
#define TX_WAIT(cond)                                         \
	({                                                    \
		long _err = 0;                                \
		tx_waiters++;                                 \
		update_tx_irq();                              \
		if (can_block())                              \
			_err = WAIT_EVENT(&tx_wq, (cond), 0); \
		else                                          \
			WAIT_UNTIL(cond);                     \
		tx_waiters--;                                 \
		update_tx_irq();                              \
		_err;                                         \
	})

/* Queue n bytes of kernel memory, waiting only while the queue is full. */
static long tx_put(const char *p, size_t n)
{
	size_t done = 0;

	while (done < n) {
		uint32_t chunk = (uint32_t)MIN(n - done, BUF_SIZE);
		uint64_t pa;

		if (!tx_room() && TX_WAIT(tx_room())) {
			vio_kick(TXQ);
			return done ? (long)done : -ERESTARTSYS;
		}
		pa = tx_page[TXQ->free_head];
		memcpy(phys_to_virt(pa), p + done, chunk);
		vio_add(TXQ, &pa, &chunk, 1, 0);
		done += chunk;
	}
	vio_kick(TXQ);
	return (long)n;
}

long console_write(const void *buf, size_t n)
{
	const char *p = buf;
	char out[512];
	size_t done = 0, k = 0;
	long r;

	if (!ready)
		return -ENODEV;
	con_start(con_tty); /* what programs wrote goes first */
	if (!terminal)
		return tx_put(p, n);
	while (done < n) {
		if (p[done] == '\n')
			out[k++] = '\r';
		out[k++] = p[done++];
		if (k >= sizeof(out) - 1 || done == n) {
			r = tx_put(out, k);
			if (r < 0)
				return r;
			k = 0;
		}
	}
	return (long)n;
}

static bool flushed(void)
{
	con_start(con_tty);
	return !tty_out_ready(con_tty) && TXQ->nr_free == TXQ->size;
}

void console_flush(void)
{
	if (!ready)
		return;
	/* Output must get out even if a signal is pending: wait through it. */
	tx_waiters++;
	update_tx_irq();
	WAIT_UNTIL(flushed());
	tx_waiters--;
	update_tx_irq();
}
