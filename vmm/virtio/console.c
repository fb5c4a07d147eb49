/* SPDX-License-Identifier: MIT */
/*
 * virtio-console (virtio 1.x, 5.3): one port; VIRTIO_CONSOLE_F_SIZE when
 * the input is a terminal. Queue 0 carries host input to the guest, queue 1
 * guest output to the host.
 *
 * The host side never blocks the loop and holds no guest data of its own:
 * input is read straight into posted receive buffers, and only while some are
 * posted; output is written straight from the transmit buffer, and while
 * out_fd is full that buffer stays unreturned and the rest of the transmit
 * queue waits, which is the backpressure the guest sees.
 *
 * A terminal on in_fd is the guest's terminal: it is put in raw mode for the
 * life of the VM (the guest does line editing, echo, ^C and output
 * processing; ^C no longer stops kiln-vmm, the VM ends when its init does),
 * its size is offered as F_SIZE and followed on SIGWINCH with a
 * config-change interrupt. Offering F_SIZE is also how the guest learns it
 * has a terminal at all: without it, its console starts raw (kiln-kernel's
 * console.c). The terminal's modes are restored on every way out: the VM
 * stopping, exit() (die), and fatal signals.
 */
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <termios.h>
#include <unistd.h>

#include "virtio.h"

#define RXQ 0
#define TXQ 1

#define VIRTIO_CONSOLE_F_SIZE 0

/*
 * The host terminal's modes before raw mode, for restoring them. Process
 * state rather than VM state, and file-level because exit() and signal
 * handlers, which have no other way to it, must restore them too.
 */
static struct {
	int fd; /* -1: nothing to restore */
	struct termios saved;
} host_tty = {.fd = -1};

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGQUIT};

struct console {
	struct virtio_dev *dev;
	int in_fd, out_fd;
	int in_flags, out_flags; /* file status flags to restore, -1: untouched */
	ev_io in_watch, out_watch;
	bool in_eof;   /* host input ended, or there is none */
	bool eof_sent; /* the driver got its empty receive buffer (boot.h) */
	bool out_dead; /* out_fd failed: output is dropped */
	bool tx_busy;  /* tx holds a chain not yet fully written */
	uint64_t tx_done;
	uint64_t tx_skip; /* bytes of the next chain already written (restore) */
	struct virtq_chain tx;
	bool terminal; /* in_fd is our terminal, in raw mode; F_SIZE offered */
	struct winsize ws;
	ev_signal winch_watch;
};

/* ---------------------------------------------------------------- the host terminal */

/* Async-signal-safe: tcsetattr is. */
static void tty_restore(void)
{
	if (host_tty.fd >= 0) {
		tcsetattr(host_tty.fd, TCSANOW, &host_tty.saved);
		host_tty.fd = -1;
	}
}

static void on_fatal_signal(int sig)
{
	tty_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Raw mode on fd if it is a terminal we are in the foreground of (a
 * background kiln-vmm would stop at the first tcsetattr). False if fd is
 * not such a terminal or cannot be put in raw mode. */
static bool tty_make_raw(int fd)
{
	static bool hooked; /* atexit and the handlers, once per process */
	struct termios raw;

	if (host_tty.fd >= 0 || !isatty(fd) || tcgetpgrp(fd) != getpgrp() ||
	    tcgetattr(fd, &host_tty.saved) < 0)
		return false;
	raw = host_tty.saved;
	cfmakeraw(&raw);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	if (!hooked) {
		struct sigaction sa = {.sa_handler = on_fatal_signal, .sa_flags = SA_RESETHAND};

		sigemptyset(&sa.sa_mask);
		for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
			sigaction(fatal_signals[i], &sa, NULL);
		atexit(tty_restore);
		hooked = true;
	}
	host_tty.fd = fd;
	if (tcsetattr(fd, TCSANOW, &raw) < 0) {
		host_tty.fd = -1;
		return false;
	}
	return true;
}

/* The window size; false if unknown. */
static bool tty_size(int fd, struct winsize *ws)
{
	return ioctl(fd, TIOCGWINSZ, ws) == 0 && ws->ws_col && ws->ws_row;
}

static void winch_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct console *c = w->data;
	struct winsize ws;

	if (!tty_size(c->in_fd, &ws))
		return;
	pthread_mutex_lock(&c->dev->lock);
	if (ws.ws_col != c->ws.ws_col || ws.ws_row != c->ws.ws_row) {
		c->ws = ws;
		virtio_dev_config_changed(c->dev);
	}
	pthread_mutex_unlock(&c->dev->lock);
}

/* ---------------------------------------------------------------- queues */

static bool queue_live(struct virtio_dev *dev, unsigned q)
{
	return dev->vq[q].ready && !dev->vq[q].broken && (dev->status & VIRTIO_STATUS_DRIVER_OK);
}

static void send_eof(struct console *c)
{
	struct virtio_dev *dev = c->dev;
	struct virtq_chain chain;
	int r = virtq_pop(&dev->vm->mem, &dev->vq[RXQ], &chain);

	if (r < 0)
		virtio_dev_fail(dev, dev->vq[RXQ].error);
	if (r <= 0)
		return;
	virtio_dev_push(dev, RXQ, chain.head, 0);
	c->eof_sent = true;
}

static void console_rx(struct console *c)
{
	struct virtio_dev *dev = c->dev;
	struct ev_loop *loop = dev->vm->loop;
	struct virtq *q = &dev->vq[RXQ];
	struct virtq_chain chain;
	unsigned n;
	ssize_t got;
	int r;

	if (!queue_live(dev, RXQ) || c->eof_sent || c->in_eof) {
		ev_io_stop(loop, &c->in_watch);
		if (queue_live(dev, RXQ) && c->in_eof && !c->eof_sent)
			send_eof(c);
		return;
	}
	ev_io_start(loop, &c->in_watch);
	for (n = 0; n < q->size; n++) {
		r = virtq_pop(&dev->vm->mem, q, &chain);
		if (r < 0)
			virtio_dev_fail(dev, q->error);
		if (r <= 0) {
			/* Nowhere to put input: leave it in the host's pipe until
			 * the driver posts buffers and kicks. */
			ev_io_stop(loop, &c->in_watch);
			break;
		}
		if (!chain.in_len) {
			/* Used length 0 means end of input, so an unwritable
			 * buffer cannot be returned honestly. */
			virtio_dev_fail(dev, "receive buffer has no writable space");
			ev_io_stop(loop, &c->in_watch);
			break;
		}
		got = readv(c->in_fd, chain.iov + chain.n_out, (int)chain.n_in);
		if (got > 0) {
			virtq_push(&dev->vm->mem, q, chain.head, (uint32_t)got);
			continue;
		}
		if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
			virtq_unpop(q);
			break;
		}
		if (got < 0)
			fprintf(stderr, "kiln-vmm: console: input: %s; treated as end of file\n",
			        strerror(errno));
		c->in_eof = c->eof_sent = true;
		ev_io_stop(loop, &c->in_watch);
		virtq_push(&dev->vm->mem, q, chain.head, 0);
		break;
	}
	virtio_dev_notify(dev, RXQ);
}

/* Write what is left of the held chain. False if out_fd is full. */
static bool tx_flush(struct console *c)
{
	struct iovec iov[VIRTQ_MAX_SIZE];
	unsigned i, n;
	ssize_t w;

	while (!c->out_dead) {
		uint64_t skip = c->tx_done;

		for (i = n = 0; i < c->tx.n_out; i++) {
			if (skip >= c->tx.iov[i].iov_len) {
				skip -= c->tx.iov[i].iov_len;
				continue;
			}
			iov[n].iov_base = (uint8_t *)c->tx.iov[i].iov_base + skip;
			iov[n++].iov_len = c->tx.iov[i].iov_len - skip;
			skip = 0;
		}
		if (!n)
			return true;
		w = writev(c->out_fd, iov, (int)n);
		if (w > 0) {
			if (!c->dev->vm->t.first_output)
				c->dev->vm->t.first_output = vm_now_ns();
			c->tx_done += (uint64_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return false;
		fprintf(stderr, "kiln-vmm: console: output: %s; further output dropped\n",
		        w < 0 ? strerror(errno) : "nothing written");
		c->out_dead = true;
	}
	return true;
}

static void console_tx(struct console *c)
{
	struct virtio_dev *dev = c->dev;
	struct virtq *q = &dev->vq[TXQ];
	unsigned n;
	int r;

	for (n = 0; n < q->size; n++) {
		if (!c->tx_busy) {
			r = virtq_pop(&dev->vm->mem, q, &c->tx);
			if (r < 0)
				virtio_dev_fail(dev, q->error);
			if (r <= 0)
				break;
			c->tx_busy = true;
			c->tx_done = c->tx_skip;
			c->tx_skip = 0;
		}
		if (!tx_flush(c)) {
			ev_io_start(dev->vm->loop, &c->out_watch);
			break;
		}
		c->tx_busy = false;
		virtq_push(&dev->vm->mem, q, c->tx.head, 0);
	}
	/* Out of budget with work left: let the loop serve others first. */
	if (n == q->size)
		virtio_dev_kick(dev, TXQ);
	virtio_dev_notify(dev, TXQ);
}

static void in_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct console *c = w->data;

	pthread_mutex_lock(&c->dev->lock);
	console_rx(c);
	pthread_mutex_unlock(&c->dev->lock);
}

static void out_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct console *c = w->data;

	pthread_mutex_lock(&c->dev->lock);
	ev_io_stop(loop, w);
	if (queue_live(c->dev, TXQ))
		console_tx(c);
	pthread_mutex_unlock(&c->dev->lock);
}

static void console_notify(struct virtio_dev *dev, unsigned q)
{
	if (q == RXQ)
		console_rx(dev->priv);
	else
		console_tx(dev->priv);
}

/* struct virtio_console_config: cols and rows (F_SIZE, else 0), then
 * max_nr_ports and emerg_wr, whose features are never offered (zero). */
static void console_config_read(struct virtio_dev *dev, uint32_t off, void *buf, uint32_t len)
{
	struct console *c = dev->priv;
	uint8_t cfg[12] = {0};

	if (c->terminal) {
		cfg[0] = (uint8_t)c->ws.ws_col;
		cfg[1] = (uint8_t)(c->ws.ws_col >> 8);
		cfg[2] = (uint8_t)c->ws.ws_row;
		cfg[3] = (uint8_t)(c->ws.ws_row >> 8);
	}
	memcpy(buf, cfg + off, len); /* the transport checked off + len <= 12 */
}

/* Runs on a vCPU thread, so watchers are left alone: each stops itself the
 * next time it finds its queue gone. */
static void console_reset(struct virtio_dev *dev)
{
	struct console *c = dev->priv;

	/* The held chain belongs to the old driver instance. */
	c->tx_busy = false;
	c->tx_skip = 0;
	/* A new driver instance is owed its own end-of-file. */
	c->eof_sent = false;
}

static void console_drain(struct virtio_dev *dev)
{
	struct console *c = dev->priv;
	struct virtq *q = &dev->vq[TXQ];
	unsigned n;

	/* The VM is exiting: wait for out_fd rather than lose output. */
	if (c->out_flags >= 0)
		fcntl(c->out_fd, F_SETFL, c->out_flags & ~O_NONBLOCK);
	ev_io_stop(dev->vm->loop, &c->out_watch);
	for (n = 0; n <= q->size; n++) {
		if (!c->tx_busy) {
			if (virtq_pop(&dev->vm->mem, q, &c->tx) <= 0)
				break;
			c->tx_busy = true;
			c->tx_done = c->tx_skip;
			c->tx_skip = 0;
		}
		if (!tx_flush(c))
			break;
		c->tx_busy = false;
		virtq_push(&dev->vm->mem, q, c->tx.head, 0);
	}
	virtio_dev_notify(dev, TXQ);
	/* The guest's last words are out: the terminal is the user's again
	 * for whatever kiln-vmm still has to say. */
	if (c->terminal)
		tty_restore();
}

/* in and out may share one open file description (a terminal), so flags
 * are restored in the reverse order they were saved. */
static void restore_flags(struct console *c)
{
	if (c->out_flags >= 0)
		fcntl(c->out_fd, F_SETFL, c->out_flags);
	if (c->in_flags >= 0)
		fcntl(c->in_fd, F_SETFL, c->in_flags);
}

static void console_destroy(struct virtio_dev *dev)
{
	struct console *c = dev->priv;

	ev_io_stop(dev->vm->loop, &c->in_watch);
	ev_io_stop(dev->vm->loop, &c->out_watch);
	if (c->terminal) {
		ev_signal_stop(dev->vm->loop, &c->winch_watch);
		tty_restore();
	}
	restore_flags(c);
	free(c);
}

/* ---------------------------------------------------------------- snapshots */

/* Persisted (the snapshot format): a change bumps CONSOLE_STATE_VERSION.
 * Host input not yet read stays with the host: it is not the guest's. A
 * transmit chain written in part is given back to the ring with the count
 * of bytes already out, so a restored VM writes only the rest. */
#define CONSOLE_STATE_VERSION 1
struct console_state {
	uint32_t version;
	uint8_t terminal; /* F_SIZE was offered: the input was a terminal */
	uint8_t eof_sent; /* the driver has had its end of input */
	uint8_t tx_busy;
	uint8_t reserved;
	uint64_t tx_done;
};
_Static_assert(sizeof(struct console_state) == 16, "console_state layout");

static int console_save(struct virtio_dev *dev, void *buf, uint32_t len)
{
	struct console *c = dev->priv;
	struct console_state st = {
	    .version = CONSOLE_STATE_VERSION,
	    .terminal = c->terminal,
	    .eof_sent = c->eof_sent,
	    .tx_busy = c->tx_busy,
	    .tx_done = c->tx_busy ? c->tx_done : 0,
	};

	if (len < sizeof(st))
		return -ENOSPC;
	memcpy(buf, &st, sizeof(st));
	return sizeof(st);
}

static int console_restore(struct virtio_dev *dev, const void *buf, uint32_t len, bool apply,
                           char *why, size_t why_len)
{
	struct console *c = dev->priv;
	struct console_state st;

	if (len != sizeof(st)) {
		snprintf(why, why_len, "state of %u bytes, expected %zu", len, sizeof(st));
		return -EINVAL;
	}
	memcpy(&st, buf, sizeof(st));
	if (st.version != CONSOLE_STATE_VERSION) {
		snprintf(why, why_len, "state version %u, this kiln-vmm reads %u", st.version,
		         CONSOLE_STATE_VERSION);
		return -EINVAL;
	}
	if (st.terminal > 1 || st.eof_sent > 1 || st.tx_busy > 1 || st.reserved ||
	    st.tx_done > UINT32_MAX || (!st.tx_busy && st.tx_done)) {
		snprintf(why, why_len, "malformed state");
		return -EINVAL;
	}
	if (st.terminal != c->terminal) {
		snprintf(why, why_len,
		         "the snapshot's console %s a terminal and this one %s; restore with "
		         "stdin %s a terminal",
		         st.terminal ? "was" : "was not", c->terminal ? "is" : "is not",
		         st.terminal ? "on" : "not on");
		return -EINVAL;
	}
	if (!apply)
		return 0;
	c->eof_sent = st.eof_sent;
	c->tx_busy = false;
	c->tx_skip = 0;
	if (st.tx_busy && dev->vq[TXQ].ready) {
		dev->vq[TXQ].last_avail--;
		c->tx_skip = st.tx_done;
	}
	return 0;
}

static const struct virtio_dev_ops console_ops = {
    .name = "console",
    .device_id = VIRTIO_ID_CONSOLE,
    .features = 0,
    .nr_queues = 2,
    .queue_max = VIRTQ_MAX_SIZE,
    .config_size = 12, /* cols, rows, max_nr_ports, emerg_wr */
    .config_read = console_config_read,
    .queue_notify = console_notify,
    .reset = console_reset,
    .drain = console_drain,
    .destroy = console_destroy,
    .save = console_save,
    .restore = console_restore,
};

/* The same with F_SIZE, for a terminal. */
static const struct virtio_dev_ops console_tty_ops = {
    .name = "console",
    .device_id = VIRTIO_ID_CONSOLE,
    .features = 1ULL << VIRTIO_CONSOLE_F_SIZE,
    .nr_queues = 2,
    .queue_max = VIRTQ_MAX_SIZE,
    .config_size = 12,
    .config_read = console_config_read,
    .queue_notify = console_notify,
    .reset = console_reset,
    .drain = console_drain,
    .destroy = console_destroy,
    .save = console_save,
    .restore = console_restore,
};

static int set_nonblock(int fd, int *saved)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	*saved = fl;
	return 0;
}

/* in_fd -1: no input (immediate end of file); out_fd -1: output dropped. */
int console_create(struct vm *vm, int in_fd, int out_fd)
{
	struct console *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	c->in_fd = in_fd;
	c->out_fd = out_fd;
	c->in_flags = c->out_flags = -1;
	c->in_eof = in_fd < 0;
	c->out_dead = out_fd < 0;
	if (in_fd >= 0 && (err = set_nonblock(in_fd, &c->in_flags)) < 0)
		goto fail;
	if (out_fd >= 0 && (err = set_nonblock(out_fd, &c->out_flags)) < 0)
		goto fail;
	ev_io_init(&c->in_watch, in_cb, in_fd, EV_READ);
	ev_io_init(&c->out_watch, out_cb, out_fd, EV_WRITE);
	c->in_watch.data = c->out_watch.data = c;
	if (in_fd >= 0 && tty_make_raw(in_fd)) {
		c->terminal = true;
		if (!tty_size(in_fd, &c->ws))
			c->ws = (struct winsize){.ws_row = 24, .ws_col = 80};
	}
	c->dev = virtio_mmio_add(vm, c->terminal ? &console_tty_ops : &console_ops, c);
	if (!c->dev) {
		err = -errno;
		goto fail;
	}
	if (c->terminal) {
		ev_signal_init(&c->winch_watch, winch_cb, SIGWINCH);
		c->winch_watch.data = c;
		ev_signal_start(vm->loop, &c->winch_watch);
	}
	return 0;
fail:
	if (c->terminal)
		tty_restore();
	restore_flags(c);
	free(c);
	return err;
}
