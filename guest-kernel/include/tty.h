/* SPDX-License-Identifier: MIT */
/*
 * Terminals: the line discipline the console and the pseudo-terminals
 * share (termios, canonical editing, echo, output processing, job-control
 * signals), controlling terminals, and the pty pairs (pty.c).
 *
 * A tty has an input queue the line discipline fills from its device
 * (tty_receive) and programs read, and an output queue programs and echo
 * fill (after OPOST processing) and the device drains (tty_out_get). The
 * device is a struct tty_driver: the virtio console (console.c) or a pty
 * master (pty.c).
 *
 * A session's controlling terminal is the tty whose session is its id:
 * the processes of a session share it without a pointer of their own, and
 * setsid() leaves it behind by changing the id. A session whose leader is
 * gone loses its terminal the next time anyone asks.
 */
#ifndef KILN_TTY_H
#define KILN_TTY_H

#include <asm/termios.h>

#include "klib.h"
#include "sched.h"

#define TTY_IBUF 4096 /* input queue (a canonical line is at most TTY_IBUF - 1) */
#define TTY_OBUF 8192 /* output queue */

struct file;
struct file_ops;
struct iobuf;
struct tty;

struct tty_driver {
	/* Output waits in the queue: take it with tty_out_get(). */
	void (*start)(struct tty *tty);
	/* A reader made room in the input queue: send held-back input. */
	void (*unthrottle)(struct tty *tty);
	/* A file of this tty is being opened (0 or -errno) / was closed.
	 * Either may be NULL. */
	int (*open)(struct tty *tty);
	void (*close)(struct tty *tty);
};

struct tty {
	const struct tty_driver *drv;
	void *drv_data;
	struct termios2 tio;
	struct winsize ws;
	int session, pgrp;      /* 0: no session / no foreground group */
	uint64_t session_start; /* its leader's start_ns (0: not seen yet): pids are reused */
	int opens;              /* open files */
	bool hungup;            /* no more I/O: reads end, writes fail */
	bool input_eof;         /* the device's input ended: reads end once drained */
	bool stopped;           /* output stopped by STOP (IXON) or TCOOFF */
	/* Input queue, indexes counting up forever: readers take [rtail,
	 * chead); [chead, rhead) is the line being edited (canonical mode). */
	uint8_t ibuf[TTY_IBUF];
	uint8_t idelim[TTY_IBUF / 8]; /* a canonical line ends at this byte */
	uint8_t ieof[TTY_IBUF / 8];   /* ... and it is the EOF character */
	unsigned rtail, chead, rhead;
	bool lnext;         /* the next character is literal (VLNEXT) */
	unsigned canon_col; /* output column where the edited line's echo began */
	/* Output queue, after OPOST. */
	char obuf[TTY_OBUF];
	unsigned otail, ohead;
	unsigned column;       /* for tabs and erasing */
	struct waitq read_wq;  /* input to read, hangup */
	struct waitq write_wq; /* output room, output drained, hangup */
	struct tty *next;      /* every tty */
};

/* A new tty on drv, with Linux's default termios if cooked, else raw (no
 * input or output processing, no echo, no signals). NULL: out of memory. */
struct tty *tty_create(const struct tty_driver *drv, void *drv_data, bool cooked);
void tty_destroy(struct tty *tty);

/* ---------------------------------------------------------------- drivers */

/* Input from the device through the line discipline. Returns the bytes
 * taken: fewer than n when the input queue is full (keep the rest until
 * the driver's unthrottle). Never blocks. */
size_t tty_receive(struct tty *tty, const void *buf, size_t n);
/* Would tty_receive() take a byte now? */
bool tty_can_receive(const struct tty *tty);
/* The device's input has ended (the host's stdin): reads return 0 once
 * the queue is drained. */
void tty_input_ended(struct tty *tty);
/* Output for the device: up to n bytes, none while output is stopped. */
size_t tty_out_get(struct tty *tty, void *buf, size_t n);
long tty_out_read(struct tty *tty, const struct iobuf *b, size_t n); /* into a read(2) buffer */
size_t tty_out_pending(const struct tty *tty);                       /* queued bytes */
bool tty_out_ready(const struct tty *tty);                           /* pending and not stopped */
/* A new window size: SIGWINCH to the foreground group if it changed. */
void tty_set_winsize(struct tty *tty, const struct winsize *ws);
/* The other side is gone: SIGHUP (and SIGCONT) to the session leader and
 * the foreground group, the session loses the terminal, reads end and
 * writes fail with EIO. */
void tty_hangup(struct tty *tty);
/* Make tty the controlling terminal of session sid, foreground pgrp. */
void tty_set_ctty(struct tty *tty, int sid, int pgrp);
/* Send sig to every process of group pgrp. */
void tty_signal_pgrp(int pgrp, int sig);

/* ---------------------------------------------------------------- files */

/* Open a file on tty: f gets tty's file operations (read, write, ioctl,
 * poll). Without O_NOCTTY in oflags, a session leader with no terminal
 * acquires tty if it is free. */
int tty_open(struct tty *tty, struct file *f, unsigned int oflags);
/* The operations of an open tty (f->priv is the struct tty). */
extern const struct file_ops tty_file_ops;
/* termios, window size and process-group ioctls, shared with the pty
 * master: as_master skips the controlling-terminal checks. */
long tty_ioctl(struct tty *tty, unsigned int cmd, unsigned long arg, bool as_master);
unsigned int tty_poll(struct tty *tty);
/* The calling process's controlling terminal, or NULL. */
struct tty *tty_current(void);
/* p is exiting. If it leads a session with a terminal, the terminal's
 * foreground group gets SIGHUP and the session loses it (Linux's
 * disassociate_ctty). For proc.c: without the call the terminal is let go
 * silently, the next time anyone looks at the session. */
struct proc;
void tty_proc_exit(struct proc *p);

/* Device-node openers for devfs: /dev/tty (the caller's controlling
 * terminal, ENXIO without one), /dev/ptmx (a new pty pair) and the pty
 * slaves (/dev/pts/N, majors 136-143). */
extern const struct file_ops tty_ctty_dev_ops, pty_ptmx_ops, pty_slave_ops;
/* pty.c: slave nodes go in dir (/dev/pts), which keeps a reference. */
struct inode;
void pty_init(struct inode *dir);

#endif
