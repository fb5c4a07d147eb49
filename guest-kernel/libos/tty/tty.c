/* SPDX-License-Identifier: MIT */
/*
 * Terminals: creating one, the output side of the line discipline (OPOST
 * processing, echo, the output queue the device drains, writes) and the
 * file operations of an open tty. The input side is in tty_input.c,
 * sessions, job control and the ioctls in tty_ioctl.c.
 */
#include <asm/signal.h>
#include <linux/fcntl.h>

#include "errno_k.h"
#include "kpoll.h"
#include "mm.h"
#include "tty_impl.h"
#include "vfs.h"

#define OMASK   (TTY_OBUF - 1)
#define CTRL(c) ((c)&0x1f)

_Static_assert((TTY_IBUF & (TTY_IBUF - 1)) == 0 && (TTY_OBUF & OMASK) == 0,
               "queues are powers of two");

struct tty *tty_all;

/* Linux's tty_std_termios; cooked adds IUTF8 (every terminal kiln meets
 * speaks UTF-8) so erase takes whole characters. */
static const struct termios2 tio_default = {
    .c_iflag = ICRNL | IXON | IUTF8,
    .c_oflag = OPOST | ONLCR,
    .c_cflag = B38400 | CS8 | CREAD | HUPCL,
    .c_lflag = ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
    .c_cc =
        {
            [VINTR] = CTRL('C'),
            [VQUIT] = CTRL('\\'),
            [VERASE] = 0177,
            [VKILL] = CTRL('U'),
            [VEOF] = CTRL('D'),
            [VMIN] = 1,
            [VSTART] = CTRL('Q'),
            [VSTOP] = CTRL('S'),
            [VSUSP] = CTRL('Z'),
            [VREPRINT] = CTRL('R'),
            [VDISCARD] = CTRL('O'),
            [VWERASE] = CTRL('W'),
            [VLNEXT] = CTRL('V'),
        },
    .c_ispeed = 38400,
    .c_ospeed = 38400,
};

struct tty *tty_create(const struct tty_driver *drv, void *drv_data, bool cooked)
{
	struct tty *tty = kzalloc(sizeof(*tty));

	if (!tty)
		return NULL;
	tty->drv = drv;
	tty->drv_data = drv_data;
	tty->tio = tio_default;
	if (!cooked) { /* cfmakeraw() */
		tty->tio.c_iflag = 0;
		tty->tio.c_oflag = 0;
		tty->tio.c_cflag = B38400 | CS8 | CREAD;
		tty->tio.c_lflag = 0;
	}
	tty->next = tty_all;
	tty_all = tty;
	return tty;
}

void tty_destroy(struct tty *tty)
{
	for (struct tty **pp = &tty_all; *pp; pp = &(*pp)->next)
		if (*pp == tty) {
			*pp = tty->next;
			break;
		}
	kfree(tty);
}
/* ---------------------------------------------------------------- output */

size_t tty_out_pending(const struct tty *tty)
{
	return tty->ohead - tty->otail;
}

bool tty_out_ready(const struct tty *tty)
{
	return tty->ohead != tty->otail && !tty->stopped;
}
/* What c becomes on output into out (at most 8 bytes), the column
 * following along: ONLCR, OCRNL, ONOCR, ONLRET and tab expansion under
 * OPOST. The column is kept even without OPOST, for erasing. */
static unsigned opost(const struct tty *tty, uint8_t c, char *out, unsigned *col)
{
	tcflag_t o = tty->tio.c_oflag;
	bool post = o & OPOST;
	unsigned n;

	out[0] = (char)c;
	switch (c) {
	case '\n':
		if (post && (o & ONLCR)) {
			out[0] = '\r';
			out[1] = '\n';
			*col = 0;
			return 2;
		}
		if (post && (o & ONLRET))
			*col = 0;
		return 1;
	case '\r':
		if (post && (o & ONOCR) && *col == 0)
			return 0;
		if (post && (o & OCRNL)) {
			out[0] = '\n';
			if (o & ONLRET)
				*col = 0;
			return 1;
		}
		*col = 0;
		return 1;
	case '\t':
		n = 8 - (*col & 7);
		*col += n;
		if (post && (o & TABDLY) == XTABS) {
			memset(out, ' ', n);
			return n;
		}
		return 1;
	case '\b':
		if (*col)
			(*col)--;
		return 1;
	default:
		if (!tty_is_cntrl(c) && !tty_is_continuation(tty, c))
			(*col)++;
		return 1;
	}
}

static void out_bytes(struct tty *tty, const char *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		tty->obuf[tty->ohead++ & OMASK] = s[i];
}

/* Queue one character, processed; false (and nothing queued) if it does
 * not fit. */
bool tty_out_char(struct tty *tty, uint8_t c)
{
	char buf[8];
	unsigned col = tty->column, n = opost(tty, c, buf, &col);

	if (n > tty_out_room(tty))
		return false;
	out_bytes(tty, buf, n);
	tty->column = col;
	return true;
}

/* Echo c as typed: control characters as ^X under ECHOCTL. */
void tty_echo_char(struct tty *tty, uint8_t c)
{
	if (LFLAG(tty, ECHOCTL) && tty_is_cntrl(c) && c != '\t' && c != '\n') {
		if (tty_out_room(tty) >= 2) {
			tty_out_char(tty, '^');
			tty_out_char(tty, c ^ 0100);
		}
		return;
	}
	tty_out_char(tty, c);
}

void tty_echo_str(struct tty *tty, const char *s)
{
	while (*s)
		tty_out_char(tty, (uint8_t)*s++);
}

void tty_start_output(struct tty *tty)
{
	tty->stopped = false;
	if (tty_out_ready(tty))
		tty->drv->start(tty);
}

void tty_flush_output(struct tty *tty)
{
	tty->otail = tty->ohead;
	wake_all(&tty->write_wq);
}

static size_t out_take(struct tty *tty, void *kbuf, const struct iobuf *b, size_t n, int *err)
{
	size_t done = 0;

	*err = 0;
	if (tty->stopped)
		return 0;
	n = MIN(n, tty_out_pending(tty));
	while (done < n) {
		unsigned at = tty->otail & OMASK;
		size_t run = MIN(n - done, (size_t)(TTY_OBUF - at));

		if (kbuf) {
			memcpy((char *)kbuf + done, tty->obuf + at, run);
		} else if (iob_to(b, done, tty->obuf + at, run)) {
			*err = -EFAULT;
			break;
		}
		tty->otail += run;
		done += run;
	}
	if (done)
		wake_all(&tty->write_wq);
	return done;
}

size_t tty_out_get(struct tty *tty, void *buf, size_t n)
{
	int err;

	return out_take(tty, buf, NULL, n, &err);
}

long tty_out_read(struct tty *tty, const struct iobuf *b, size_t n)
{
	int err;
	size_t done = out_take(tty, NULL, b, n, &err);

	return done ? (long)done : err;
}

/* ---------------------------------------------------------------- write */

/* Queue what of buf fits, processed; returns the bytes of buf taken. */
static size_t out_some(struct tty *tty, const char *buf, size_t n)
{
	size_t i = 0;

	if (!(tty->tio.c_oflag & OPOST)) {
		i = MIN(n, (size_t)tty_out_room(tty));
		out_bytes(tty, buf, (unsigned)i);
		return i;
	}
	while (i < n && tty_out_char(tty, (uint8_t)buf[i]))
		i++;
	return i;
}

long tty_write_buf(struct tty *tty, const struct iobuf *b, size_t n, bool nonblock)
{
	char buf[256];
	size_t done = 0;
	long err = 0;

	while (done < n && !err) {
		size_t chunk = MIN(sizeof(buf), n - done), i = 0;

		if (iob_from(buf, b, done, chunk)) {
			err = -EFAULT;
			break;
		}
		while (!err && (i += out_some(tty, buf + i, chunk - i)) < chunk) {
			/* Full: let the device take some, else wait for it. */
			tty->drv->start(tty);
			if (tty_out_room(tty) >= 8)
				continue;
			if (nonblock)
				err = -EAGAIN;
			else if (WAIT_EVENT(&tty->write_wq, tty_out_room(tty) >= 8 || tty->hungup,
			                    0))
				err = -ERESTARTSYS;
			else if (tty->hungup)
				err = -EIO;
		}
		done += i;
	}
	if (tty_out_ready(tty))
		tty->drv->start(tty);
	return done ? (long)done : err;
}

static long tty_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct tty *tty = f->priv;

	if (tty->hungup)
		return -EIO;
	if (LFLAG(tty, TOSTOP)) {
		long err = tty_job_control(tty, SIGTTOU);
		if (err)
			return err;
	}
	return tty_write_buf(tty, b, n, f->flags & O_NONBLOCK);
}

/* Wait until the device took every queued byte (tcdrain). */
long tty_drain(struct tty *tty)
{
	if (tty_out_ready(tty))
		tty->drv->start(tty);
	if (WAIT_EVENT(&tty->write_wq, !tty_out_ready(tty) || tty->hungup, 0))
		return -ERESTARTSYS;
	return 0;
}

/* TCXONC's TCIOFF/TCION: the STOP or START character to the other side. */
void tty_send_char(struct tty *tty, uint8_t c)
{
	if (tty_out_room(tty)) {
		out_bytes(tty, (const char *)&c, 1);
		if (tty_out_ready(tty))
			tty->drv->start(tty);
	}
}

static long tty_op_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	return tty_ioctl(f->priv, cmd, arg, false);
}

static unsigned int tty_op_poll(struct file *f)
{
	return tty_poll(f->priv);
}

static void tty_op_poll_wait(struct file *f, struct poll_table *pt)
{
	struct tty *tty = f->priv;

	poll_add_wait(pt, &tty->read_wq);
	poll_add_wait(pt, &tty->write_wq);
}

static void tty_op_release(struct file *f)
{
	struct tty *tty = f->priv;

	tty->opens--;
	if (tty->drv->close)
		tty->drv->close(tty); /* may free the tty */
}

const struct file_ops tty_file_ops = {
    .read = tty_read,
    .write = tty_write,
    .ioctl = tty_op_ioctl,
    .poll = tty_op_poll,
    .poll_wait = tty_op_poll_wait,
    .release = tty_op_release,
    .stream = true,
};
