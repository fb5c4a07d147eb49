/* SPDX-License-Identifier: MIT */
/* Inside the terminals: what tty.c (output, files), tty_input.c (input)
 * and tty_ioctl.c (sessions, job control, ioctls) share. Drivers use
 * tty.h. */
#ifndef KILN_LIBOS_TTY_IMPL_H
#define KILN_LIBOS_TTY_IMPL_H

#include "tty.h"

struct file;
struct iobuf;

extern struct tty *tty_all; /* every tty, through next */

#define LFLAG(tty, f) ((tty)->tio.c_lflag & (f))
#define IFLAG(tty, f) ((tty)->tio.c_iflag & (f))

static inline bool tty_is_cntrl(uint8_t c)
{
	return c < 32 || c == 127;
}

/* A UTF-8 continuation byte, under IUTF8: part of the character before. */
static inline bool tty_is_continuation(const struct tty *tty, uint8_t c)
{
	return IFLAG(tty, IUTF8) && (c & 0xc0) == 0x80;
}

static inline unsigned tty_out_room(const struct tty *tty)
{
	return TTY_OBUF - (tty->ohead - tty->otail);
}

/* tty.c: output. Queue one character, processed (false, nothing queued,
 * if it does not fit); echo one as typed (^X under ECHOCTL) or a string. */
bool tty_out_char(struct tty *tty, uint8_t c);
void tty_echo_char(struct tty *tty, uint8_t c);
void tty_echo_str(struct tty *tty, const char *s);
void tty_flush_output(struct tty *tty);
void tty_start_output(struct tty *tty);
void tty_send_char(struct tty *tty, uint8_t c);
long tty_drain(struct tty *tty); /* 0 or -ERESTARTSYS */
long tty_write_buf(struct tty *tty, const struct iobuf *b, size_t n, bool nonblock);

/* tty_input.c: input. */
void tty_set_termios(struct tty *tty, const struct termios2 *t);
void tty_flush_input(struct tty *tty, bool notify_driver);
size_t tty_input_available(const struct tty *tty); /* bytes a read would find */
long tty_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos);

/* tty_ioctl.c: may the caller, if outside the foreground group, go on?
 * 0, -EIO, or -ERESTARTSYS after sending sig (SIGTTIN, SIGTTOU) to its
 * group (Linux's __tty_check_change). */
long tty_job_control(struct tty *tty, int sig);

#endif
