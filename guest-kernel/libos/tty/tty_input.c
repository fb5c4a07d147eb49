/* SPDX-License-Identifier: MIT */
/*
 * The input side of the line discipline, as Linux's n_tty does it: input
 * translation (ICRNL ...), the signal characters, flow control (IXON),
 * canonical lines with erase, word erase, kill, EOF, literal-next and
 * reprint, echo, and reads: a line at a time, or by VMIN and VTIME.
 *
 * Input is pushed in by the device as it arrives (the console from its
 * interrupt), not pulled by readers: ^C must reach the foreground job
 * while nobody reads. So receiving never blocks; echo that finds the
 * output queue full is dropped, and input that finds the input queue full
 * stays with the device until a reader makes room (unthrottle).
 */
#include <asm/signal.h>
#include <linux/fcntl.h>

#include "errno_k.h"
#include "ktime.h"
#include "tty_impl.h"
#include "vfs.h"

#define IMASK (TTY_IBUF - 1)

/* ---------------------------------------------------------------- helpers */

static bool bit_get(const uint8_t *map, unsigned i)
{
	i &= IMASK;
	return map[i >> 3] & (1u << (i & 7));
}

static void bit_put(uint8_t *map, unsigned i, bool on)
{
	i &= IMASK;
	if (on)
		map[i >> 3] |= (uint8_t)(1u << (i & 7));
	else
		map[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}

/* Is c the special character cc[idx] (not disabled)? */
static bool is_cc(const struct tty *tty, int idx, uint8_t c)
{
	uint8_t v = tty->tio.c_cc[idx];

	return v != 0 /* _POSIX_VDISABLE */ && c == v;
}

static unsigned in_count(const struct tty *tty)
{
	return tty->rhead - tty->rtail;
}

/* ---------------------------------------------------------------- input */

static void in_put(struct tty *tty, uint8_t c, bool delim, bool eof)
{
	unsigned i = tty->rhead++;

	tty->ibuf[i & IMASK] = c;
	bit_put(tty->idelim, i, delim);
	bit_put(tty->ieof, i, eof);
}

/* A canonical line is complete: readers may take it. */
static void end_line(struct tty *tty, uint8_t c, bool eof)
{
	in_put(tty, c, true, eof);
	tty->chead = tty->rhead;
}

void tty_flush_input(struct tty *tty, bool notify)
{
	tty->rtail = tty->chead = tty->rhead;
	tty->lnext = false;
	if (notify && tty->drv->unthrottle)
		tty->drv->unthrottle(tty);
}

/* ^C, ^\ or ^Z: the signal to the foreground group, queues flushed
 * unless NOFLSH, the character echoed. */
static void isig(struct tty *tty, int sig, uint8_t c)
{
	if (!LFLAG(tty, NOFLSH)) {
		tty_flush_input(tty, false);
		tty_flush_output(tty);
	}
	if (tty->pgrp)
		tty_signal_pgrp(tty->pgrp, sig);
	if (IFLAG(tty, IXON))
		tty->stopped = false;
	if (LFLAG(tty, ECHO))
		tty_echo_char(tty, c);
}

/* Back over a tab: the columns it took, from the line's start or the
 * tab before it. */
static void erase_tab(struct tty *tty)
{
	unsigned cols = 0, i = tty->rhead;
	bool after_tab = false;

	while (i != tty->chead) {
		uint8_t c = tty->ibuf[--i & IMASK];

		if (c == '\t') {
			after_tab = true;
			break;
		}
		if (tty_is_cntrl(c))
			cols += LFLAG(tty, ECHOCTL) ? 2 : 0;
		else if (!tty_is_continuation(tty, c))
			cols++;
	}
	if (!after_tab)
		cols += tty->canon_col;
	for (unsigned n = MIN(8 - (cols & 7), tty->column); n; n--)
		tty_out_char(tty, '\b');
}

enum { ERASE, WERASE, KILL };

/* VERASE, VWERASE, VKILL on the line being edited. */
static void erase(struct tty *tty, int kind)
{
	bool echo = LFLAG(tty, ECHO);
	unsigned alnums = 0;

	if (tty->rhead == tty->chead)
		return;
	if (kind == KILL &&
	    (!echo || !LFLAG(tty, ECHOK) || !LFLAG(tty, ECHOKE) || !LFLAG(tty, ECHOE))) {
		tty->rhead = tty->chead;
		if (echo) {
			tty_echo_char(tty, tty->tio.c_cc[VKILL]);
			if (LFLAG(tty, ECHOK))
				tty_out_char(tty, '\n');
		}
		return;
	}
	while (tty->rhead != tty->chead) {
		unsigned head = tty->rhead;
		uint8_t c;

		/* One character: a UTF-8 sequence goes whole. */
		do
			c = tty->ibuf[--head & IMASK];
		while (tty_is_continuation(tty, c) && head != tty->chead);
		if (tty_is_continuation(tty, c))
			break;
		if (kind == WERASE) { /* BSD's altwerase, as Linux */
			bool word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			            (c >= 'A' && c <= 'Z') || c == '_';
			if (word)
				alnums++;
			else if (alnums)
				break;
		}
		tty->rhead = head;
		if (echo) {
			if (kind == ERASE && !LFLAG(tty, ECHOE)) {
				tty_echo_char(tty, tty->tio.c_cc[VERASE]);
			} else if (c == '\t') {
				erase_tab(tty);
			} else {
				if (tty_is_cntrl(c) && LFLAG(tty, ECHOCTL))
					tty_echo_str(tty, "\b \b");
				if (!tty_is_cntrl(c) || LFLAG(tty, ECHOCTL))
					tty_echo_str(tty, "\b \b");
			}
		}
		if (kind == ERASE)
			break;
	}
}

/* ^R: the line again, on a line of its own. */
static void reprint(struct tty *tty, uint8_t c)
{
	tty_echo_char(tty, c);
	tty_out_char(tty, '\n');
	tty->canon_col = tty->column;
	for (unsigned i = tty->chead; i != tty->rhead; i++)
		tty_echo_char(tty, tty->ibuf[i & IMASK]);
}

/* Room for one more byte in the input queue? In canonical mode the last
 * byte is kept for the line's end. *drop: the edited line alone fills the
 * queue, so nobody can ever read it: the byte is thrown away (Linux too). */
static bool in_room(const struct tty *tty, bool ends_line, bool *drop)
{
	unsigned need = LFLAG(tty, ICANON) && !ends_line ? 2 : 1;

	*drop = false;
	if (TTY_IBUF - in_count(tty) >= need)
		return true;
	*drop = LFLAG(tty, ICANON) && tty->chead == tty->rtail;
	return false;
}

/* The canonical-mode characters; true if c was one of them (and handled).
 * *full: c ends a line but there is no room for it yet. */
static bool canon_special(struct tty *tty, uint8_t c, bool *full)
{
	bool echo = LFLAG(tty, ECHO), iexten = LFLAG(tty, IEXTEN), drop;

	*full = false;
	if (is_cc(tty, VERASE, c) || is_cc(tty, VKILL, c) || (iexten && is_cc(tty, VWERASE, c))) {
		erase(tty, is_cc(tty, VERASE, c) ? ERASE : is_cc(tty, VKILL, c) ? KILL : WERASE);
		return true;
	}
	if (iexten && is_cc(tty, VLNEXT, c)) {
		tty->lnext = true;
		if (echo && LFLAG(tty, ECHOCTL) && tty_out_room(tty) >= 2) {
			tty_out_char(tty, '^');
			tty_out_char(tty, '\b');
		}
		return true;
	}
	if (iexten && echo && is_cc(tty, VREPRINT, c)) {
		reprint(tty, c);
		return true;
	}
	if (c != '\n' && !is_cc(tty, VEOF, c) && !is_cc(tty, VEOL, c) &&
	    !(iexten && is_cc(tty, VEOL2, c)))
		return false;
	if (!in_room(tty, true, &drop)) {
		/* A line as long as the queue: end it without its terminator. */
		if (drop)
			tty->chead = tty->rhead;
		*full = !drop;
		return true;
	}
	if (c == '\n') {
		if (echo || LFLAG(tty, ECHONL))
			tty_out_char(tty, '\n');
	} else if (!is_cc(tty, VEOF, c) && echo) { /* VEOL, VEOL2 */
		if (tty->chead == tty->rhead)
			tty->canon_col = tty->column;
		tty_echo_char(tty, c);
	}
	end_line(tty, c, c != '\n' && is_cc(tty, VEOF, c));
	return true;
}

/* One character through the discipline: false if it has to wait for room
 * in the input queue. */
static bool receive_char(struct tty *tty, uint8_t c)
{
	bool canon = LFLAG(tty, ICANON), drop, full;

	if (IFLAG(tty, ISTRIP))
		c &= 0x7f;
	if (IFLAG(tty, IUCLC) && LFLAG(tty, IEXTEN) && c >= 'A' && c <= 'Z')
		c += 'a' - 'A';
	if (tty->lnext) {
		if (!in_room(tty, false, &drop))
			return drop;
		tty->lnext = false;
		goto put;
	}
	if (c == '\r') {
		if (IFLAG(tty, IGNCR))
			return true;
		if (IFLAG(tty, ICRNL))
			c = '\n';
	} else if (c == '\n' && IFLAG(tty, INLCR)) {
		c = '\r';
	}
	if (IFLAG(tty, IXON)) {
		if (is_cc(tty, VSTART, c)) {
			tty->stopped = false;
			return true;
		}
		if (is_cc(tty, VSTOP, c)) {
			tty->stopped = true;
			return true;
		}
		if (IFLAG(tty, IXANY))
			tty->stopped = false;
	}
	if (LFLAG(tty, ISIG)) {
		int sig = is_cc(tty, VINTR, c)   ? SIGINT
		          : is_cc(tty, VQUIT, c) ? SIGQUIT
		          : is_cc(tty, VSUSP, c) ? SIGTSTP
		                                 : 0;
		if (sig) {
			isig(tty, sig, c);
			return true;
		}
	}
	if (canon && canon_special(tty, c, &full))
		return !full;
	if (!in_room(tty, false, &drop))
		return drop;
put:
	if (LFLAG(tty, ECHO)) {
		if (c == '\n') {
			tty_out_char(tty, '\n');
		} else {
			if (tty->chead == tty->rhead)
				tty->canon_col = tty->column;
			tty_echo_char(tty, c);
		}
	}
	in_put(tty, c, false, false);
	if (!canon)
		tty->chead = tty->rhead;
	return true;
}

/* No translation, signals, editing or echo: bytes go in as they are. */
static bool passthrough(const struct tty *tty)
{
	return !LFLAG(tty, ICANON | ISIG | ECHO | ECHONL) && !tty->lnext &&
	       !IFLAG(tty, ISTRIP | INLCR | IGNCR | ICRNL | IUCLC | IXON);
}

size_t tty_receive(struct tty *tty, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	unsigned chead = tty->chead, ohead = tty->ohead;
	bool stopped = tty->stopped;
	size_t i = 0;

	if (tty->hungup)
		return n;
	if (passthrough(tty)) {
		n = MIN(n, (size_t)(TTY_IBUF - in_count(tty)));
		for (; i < n; i++)
			in_put(tty, p[i], false, false);
		tty->chead = tty->rhead;
	} else {
		while (i < n && receive_char(tty, p[i]))
			i++;
	}
	if (tty->chead != chead)
		wake_all(&tty->read_wq);
	if ((tty->ohead != ohead || stopped != tty->stopped) && tty_out_ready(tty))
		tty->drv->start(tty);
	return i;
}

/* Exact enough that a writer waiting on it never spins: whenever it holds,
 * tty_receive() takes at least one byte, whatever the byte. */
bool tty_can_receive(const struct tty *tty)
{
	unsigned room = TTY_IBUF - in_count(tty);

	if (tty->hungup)
		return true;
	if (LFLAG(tty, ICANON))
		return room >= 2 || tty->chead == tty->rtail;
	return room >= 1;
}

void tty_input_ended(struct tty *tty)
{
	tty->input_eof = true;
	tty->chead = tty->rhead; /* a last line without its newline */
	wake_all(&tty->read_wq);
}

/* ICANON set with raw input pending: as Linux, all of it becomes one
 * readable chunk (its newlines do not split it), and editing starts after. */
static void input_to_canon(struct tty *tty)
{
	for (unsigned i = tty->rtail; i != tty->rhead; i++) {
		bit_put(tty->idelim, i, i + 1 == tty->rhead);
		bit_put(tty->ieof, i, false);
	}
	tty->chead = tty->rhead;
	tty->canon_col = tty->column;
}

void tty_set_termios(struct tty *tty, const struct termios2 *t)
{
	bool was = LFLAG(tty, ICANON);

	tty->tio = *t;
	if (was && !LFLAG(tty, ICANON)) {
		tty->chead = tty->rhead; /* the edited line is input now */
		tty->lnext = false;
	} else if (!was && LFLAG(tty, ICANON)) {
		input_to_canon(tty);
	}
	if (!IFLAG(tty, IXON) && tty->stopped)
		tty_start_output(tty);
	wake_all(&tty->read_wq);
}

/* ---------------------------------------------------------------- read */

size_t tty_input_available(const struct tty *tty)
{
	size_t n = tty->chead - tty->rtail;

	if (LFLAG(tty, ICANON)) /* EOF characters are not data */
		for (unsigned i = tty->rtail; i != tty->chead; i++)
			n -= bit_get(tty->ieof, i);
	return n;
}

/* Up to one line (the EOF character ends it and is not data). */
static long read_canon(struct tty *tty, const struct iobuf *b, size_t n)
{
	char buf[256];
	size_t done = 0, k = 0;

	while (done + k < n && tty->rtail != tty->chead) {
		unsigned i = tty->rtail++;
		bool delim = bit_get(tty->idelim, i);

		if (delim && bit_get(tty->ieof, i))
			break;
		buf[k++] = (char)tty->ibuf[i & IMASK];
		if (k == sizeof(buf) || delim) {
			if (iob_to(b, done, buf, k))
				return done ? (long)done : -EFAULT;
			done += k;
			k = 0;
		}
		if (delim)
			break;
	}
	if (k && iob_to(b, done, buf, k))
		return done ? (long)done : -EFAULT;
	return (long)(done + k);
}

static long read_raw(struct tty *tty, const struct iobuf *b, size_t off, size_t n)
{
	size_t done = 0;

	n = MIN(n, (size_t)(tty->chead - tty->rtail));
	while (done < n) {
		unsigned at = tty->rtail & IMASK;
		size_t run = MIN(n - done, (size_t)(TTY_IBUF - at));

		if (iob_to(b, off + done, tty->ibuf + at, run))
			return done ? (long)done : -EFAULT;
		tty->rtail += run;
		done += run;
	}
	return (long)done;
}

long tty_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct tty *tty = f->priv;
	uint64_t start = time_monotonic_ns(), deadline = 0;
	size_t done = 0;
	long r = tty_job_control(tty, SIGTTIN);

	if (r)
		return r;
	for (;;) {
		bool canon = LFLAG(tty, ICANON);
		uint64_t vmin = tty->tio.c_cc[VMIN], vtime = tty->tio.c_cc[VTIME] * 100000000ULL;

		r = 0;
		if (tty->chead != tty->rtail) {
			r = canon ? read_canon(tty, b, n) : read_raw(tty, b, done, n - done);
			if (r > 0 && tty->drv->unthrottle)
				tty->drv->unthrottle(tty);
			if (r < 0 || canon)
				return done ? (long)done : r;
			done += (size_t)r;
		}
		if (!canon) {
			/* VMIN bytes (or all asked for); with VTIME, a timer: over
			 * the whole read if VMIN is 0, else from the last byte. */
			if (done >= MIN(vmin ? vmin : 1, (uint64_t)n) || (!vmin && !vtime))
				return (long)done;
			if (vtime && !vmin)
				deadline = start + vtime;
			else if (vtime && r > 0)
				deadline = time_monotonic_ns() + vtime;
		}
		if (tty->hungup || tty->input_eof)
			return (long)done;
		if (f->flags & O_NONBLOCK)
			return done ? (long)done : -EAGAIN;
		r = WAIT_EVENT(&tty->read_wq,
		               tty->chead != tty->rtail || tty->hungup || tty->input_eof, deadline);
		if (r == -ETIMEDOUT)
			return (long)done;
		if (r)
			return done ? (long)done : -ERESTARTSYS;
	}
}
