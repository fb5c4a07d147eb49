// SPDX-License-Identifier: MIT
/*
 * Unit tests for the line discipline (guest-kernel/libos/tty/tty.c and
 * tty_ioctl.c): input goes in through tty_receive() as a device gives it,
 * reads and writes go through the tty's file operations, and what the
 * device is handed to send (echo, processed output) is collected in `out`.
 * Expectations are Linux's n_tty behaviour. The library OS's services are
 * host stubs below; cur_thread() reads %gs, so it points at a fake thread
 * whose process is the session leader and foreground group of the tty.
 * Nothing ever blocks: reads are O_NONBLOCK, and a wait is "interrupted".
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errno_k.h"
#include "kpoll.h"
#include "proc.h"
#include "tty.h"
#include "vfs.h"

/* ------------------------------------------------------------ host stubs */

void *kmalloc(size_t n)
{
	return malloc(n ? n : 1);
}

void *kzalloc(size_t n)
{
	return calloc(1, n ? n : 1);
}

void kfree(void *p)
{
	free(p);
}

int copy_from_user(void *dst, const void *usrc, size_t n)
{
	memcpy(dst, usrc, n);
	return 0;
}

int copy_to_user(void *udst, const void *src, size_t n)
{
	memcpy(udst, src, n);
	return 0;
}

void wake_all(struct waitq *wq)
{
}

long wait_block(struct waitq *wq, uint64_t deadline_ns)
{
	return -EINTR;
}

void poll_add_wait(struct poll_table *pt, struct waitq *wq)
{
}

uint64_t time_monotonic_ns(void)
{
	return 1;
}

/* Two processes of session 1: P (the caller) and its parent Q. */
static struct proc P, Q;
static struct thread T;
static struct sighand SH;

struct proc *proc_find(int pid)
{
	return pid == P.pid ? &P : pid == Q.pid ? &Q : NULL;
}

struct proc *proc_first(void)
{
	return &P;
}

/* Signals sent, as "SIG@pid " words. */
static char sigs[256];

void signal_send_proc(struct proc *p, int sig, const struct siginfo_k *info)
{
	size_t n = strlen(sigs);

	snprintf(sigs + n, sizeof(sigs) - n, "%d@%d ", sig, p->pid);
}

/* ------------------------------------------------------------ harness */

static struct tty *tty;
static struct file F;
static char out[16384];
static size_t out_len;

static void drv_start(struct tty *t)
{
	out_len += tty_out_get(t, out + out_len, sizeof(out) - 1 - out_len);
	out[out_len] = 0;
}

static const struct tty_driver drv = {.start = drv_start};

static void setup(void)
{
	memset(&P, 0, sizeof(P));
	memset(&Q, 0, sizeof(Q));
	memset(&SH, 0, sizeof(SH));
	P.pid = P.sid = P.pgid = 1;
	Q.pid = 9;
	Q.sid = Q.pgid = 1;
	P.parent = &Q;
	P.next_all = &Q;
	P.sighand = Q.sighand = &SH;
	T.proc = &P;
	T.sigmask = 0;
	asm volatile("wrgsbase %0" ::"r"(&T));
	tty = tty_create(&drv, NULL, true);
	ck_assert_ptr_nonnull(tty);
	tty_set_ctty(tty, 1, 1);
	F = (struct file){
	    .refs = 1, .flags = O_RDWR | O_NONBLOCK, .ops = &tty_file_ops, .priv = tty};
	out_len = 0;
	out[0] = 0;
	sigs[0] = 0;
}

static void teardown(void)
{
	tty_destroy(tty);
}

static size_t in(const char *s)
{
	return tty_receive(tty, s, strlen(s));
}

/* A read of at most n bytes into buf (n + 1 bytes: NUL-terminated). */
static long rd(char *buf, size_t n)
{
	struct iobuf b = iob_kernel(buf);
	uint64_t pos = 0;
	long r = tty_file_ops.read(&F, &b, n, &pos);

	buf[r > 0 ? r : 0] = 0;
	return r;
}

static long wr(const char *s)
{
	struct iobuf b = iob_kernel((void *)s);
	uint64_t pos = 0;

	return tty_file_ops.write(&F, &b, strlen(s), &pos);
}

/* What the device was given since the last call. */
static const char *took(void)
{
	static char copy[sizeof(out)];

	memcpy(copy, out, out_len + 1);
	out_len = 0;
	out[0] = 0;
	return copy;
}

static void lflags(tcflag_t on, tcflag_t off)
{
	struct termios2 t = tty->tio;

	t.c_lflag = (t.c_lflag | on) & ~off;
	ck_assert_int_eq(tty_ioctl(tty, TCSETS, (unsigned long)&t, false), 0);
}

static void flags(tcflag_t *field, tcflag_t on, tcflag_t off)
{
	struct termios2 t = tty->tio;
	tcflag_t *f = (tcflag_t *)((char *)&t + ((char *)field - (char *)&tty->tio));

	*f = (*f | on) & ~off;
	ck_assert_int_eq(tty_ioctl(tty, TCSETS, (unsigned long)&t, false), 0);
}

/* ------------------------------------------------------------ canonical input */

START_TEST(canon_lines)
{
	char buf[64];

	ck_assert_uint_eq(in("ab\177c"), 4);
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), -EAGAIN); /* no line yet */
	in("\r");                                            /* ICRNL */
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 3);
	ck_assert_str_eq(buf, "ac\n");
	ck_assert_str_eq(took(), "ab\b \bc\r\n");
	/* two lines, read one at a time; a short read leaves the rest */
	in("one\ntwo\n");
	ck_assert_int_eq(rd(buf, 2), 2);
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 2);
	ck_assert_str_eq(buf, "e\n");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 4);
	/* VEOF ends a line without itself; alone it is end of file */
	in("ab\004\004");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 2);
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 0);
	/* VEOL is a line end that is kept */
	tty->tio.c_cc[VEOL] = '|';
	in("x|");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 2);
	ck_assert_str_eq(buf, "x|");
}
END_TEST

START_TEST(canon_erase)
{
	char buf[64];

	/* a tab goes back to where it began */
	in("a\tb\177\177");
	ck_assert_str_eq(took(), "a\tb\b \b\b\b\b\b\b\b\b");
	/* a UTF-8 character is one erase, a control character two cells */
	in("\xc3\xa9\177\001\177");
	ck_assert_str_eq(took(), "\xc3\xa9\b \b^A\b \b\b \b");
	/* word erase takes the word and not the space before it */
	in("foo bar\027");
	ck_assert_str_eq(took(), "foo bar\b \b\b \b\b \b");
	/* kill ("afoo " is left), visually (ECHOKE) and the old way (ECHOK:
	 * ^U and a newline) */
	in("\025");
	ck_assert_str_eq(took(), "\b \b\b \b\b \b\b \b\b \b");
	in("\n");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 1);
	took();
	lflags(0, ECHOKE);
	in("xy\025z\n");
	ck_assert_str_eq(took(), "xy^U\r\nz\r\n");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 2);
	/* without ECHOE the erase character itself is echoed */
	lflags(0, ECHOE);
	in("q\177\n");
	ck_assert_str_eq(took(), "q^?\r\n");
	/* erase at the start of a line does nothing */
	rd(buf, sizeof(buf) - 1);
	in("\177\n");
	ck_assert_str_eq(took(), "\r\n");
}
END_TEST

START_TEST(canon_lnext_reprint)
{
	char buf[64];

	in("\026\003\n"); /* ^V^C: a literal ^C, no signal */
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 2);
	ck_assert_int_eq(buf[0], 3);
	ck_assert_str_eq(sigs, "");
	ck_assert_str_eq(took(), "^\b^C\r\n");
	in("ab\022"); /* ^R */
	ck_assert_str_eq(took(), "ab^R\r\nab");
}
END_TEST

START_TEST(canon_overflow)
{
	static char big[5001], buf[8192];

	memset(big, 'x', 5000);
	ck_assert_uint_eq(in(big), 5000); /* taken, past the line limit dropped */
	in("\n");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), TTY_IBUF);
	ck_assert_int_eq(buf[TTY_IBUF - 1], '\n');
}
END_TEST

/* ------------------------------------------------------------ raw input */

START_TEST(raw_input)
{
	static char big[5001];
	char buf[64];

	lflags(0, ICANON | ECHO);
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), -EAGAIN);
	in("abc");
	ck_assert_int_eq(rd(buf, 2), 2);
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 1);
	ck_assert_str_eq(took(), "");
	tty->tio.c_cc[VMIN] = 0;
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 0); /* VMIN 0, VTIME 0: no wait */
	/* a full queue pushes back on the device */
	memset(big, 'x', 5000);
	ck_assert_uint_eq(in(big), TTY_IBUF);
	ck_assert(!tty_can_receive(tty));
	rd(buf, sizeof(buf) - 1);
	ck_assert(tty_can_receive(tty));
	/* ICANON again: what is pending is readable as it is */
	tty_ioctl(tty, TCFLSH, TCIFLUSH, false);
	in("ab\ncd");
	lflags(ICANON, 0);
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 5);
	ck_assert_str_eq(buf, "ab\ncd");
}
END_TEST

START_TEST(input_flags)
{
	char buf[64];

	flags(&tty->tio.c_iflag, IGNCR, 0);
	in("a\r\n");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 2);
	flags(&tty->tio.c_iflag, INLCR, IGNCR | ICRNL);
	lflags(0, ICANON);
	in("\n\r");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 2);
	ck_assert_str_eq(buf, "\r\r");
	flags(&tty->tio.c_iflag, ISTRIP, 0);
	in("\xe1");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 1);
	ck_assert_int_eq(buf[0], 'a');
}
END_TEST

/* ------------------------------------------------------------ signals */

START_TEST(signal_chars)
{
	char buf[64];

	in("ab");
	in("\003");
	ck_assert_str_eq(sigs, "2@1 2@9 "); /* SIGINT to group 1: P and Q */
	ck_assert_str_eq(took(), "ab^C");
	in("\n"); /* the line was flushed */
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 1);
	sigs[0] = 0;
	in("\032\034");
	ck_assert_str_eq(sigs, "20@1 20@9 3@1 3@9 "); /* SIGTSTP, SIGQUIT */
	/* NOFLSH keeps the line */
	lflags(NOFLSH, 0);
	in("xy\003\n");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 3);
	/* without ISIG they are characters */
	sigs[0] = 0;
	lflags(0, ISIG);
	in("\003\n");
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 2);
	ck_assert_str_eq(sigs, "");
}
END_TEST

START_TEST(flow_control)
{
	in("\023"); /* ^S */
	ck_assert_int_eq(wr("hi"), 2);
	ck_assert_str_eq(took(), "");
	in("\021"); /* ^Q */
	ck_assert_str_eq(took(), "hi");
	ck_assert_int_eq(tty_ioctl(tty, TCXONC, TCOOFF, false), 0);
	wr("x");
	ck_assert_str_eq(took(), "");
	ck_assert_int_eq(tty_ioctl(tty, TCXONC, TCOON, false), 0);
	ck_assert_str_eq(took(), "x");
}
END_TEST

/* ------------------------------------------------------------ output */

START_TEST(output_flags)
{
	ck_assert_int_eq(wr("a\nb"), 3);
	ck_assert_str_eq(took(), "a\r\nb");
	flags(&tty->tio.c_oflag, OCRNL, ONLCR);
	wr("x\ry");
	ck_assert_str_eq(took(), "x\ny");
	flags(&tty->tio.c_oflag, ONOCR | XTABS, OCRNL);
	wr("\n\r"); /* without ONLCR a newline keeps the column */
	ck_assert_str_eq(took(), "\n\r");
	wr("\rab\tc\r");
	ck_assert_str_eq(took(), "ab      c\r"); /* the CR at column 0 dropped */
	flags(&tty->tio.c_oflag, 0, OPOST);
	wr("\n\t");
	ck_assert_str_eq(took(), "\n\t");
}
END_TEST

/* ------------------------------------------------------------ sessions, job control */

START_TEST(job_control)
{
	struct termios2 t;
	char buf[8];
	int v = 0;

	/* P alone in background group 5; its parent Q in group 1 keeps it
	 * from being orphaned */
	P.pgid = 5;
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), -ERESTARTSYS);
	ck_assert_str_eq(sigs, "21@1 "); /* SIGTTIN to group 5: P */
	SH.action[SIGTTIN].handler = 1;  /* SIG_IGN */
	ck_assert_int_eq(rd(buf, sizeof(buf) - 1), -EIO);
	/* writes are fine; changing the terminal is not */
	ck_assert_int_eq(wr("w"), 1);
	t = tty->tio;
	t.c_lflag |= TOSTOP;
	ck_assert_int_eq(tty_ioctl(tty, TCSETS, (unsigned long)&t, false), -ERESTARTSYS);
	ck_assert_str_eq(sigs, "21@1 22@1 "); /* SIGTTOU */
	T.sigmask = SIGBIT(SIGTTOU);          /* blocked: allowed */
	ck_assert_int_eq(tty_ioctl(tty, TCSETS, (unsigned long)&t, false), 0);
	ck_assert_int_eq(wr("w"), 1);
	T.sigmask = 0; /* TOSTOP: writes need the foreground too */
	ck_assert_int_eq(wr("w"), -ERESTARTSYS);
	Q.pgid = 5; /* orphaned: EIO instead of a stop nobody would end */
	ck_assert_int_eq(wr("w"), -EIO);
	Q.pgid = 1;
	/* taking the terminal back, SIGTTOU ignored */
	SH.action[SIGTTOU].handler = 1;
	v = 1;
	ck_assert_int_eq(tty_ioctl(tty, TIOCSPGRP, (unsigned long)&v, false), 0);
	v = 5;
	ck_assert_int_eq(tty_ioctl(tty, TIOCSPGRP, (unsigned long)&v, false), 0);
	v = 77;
	ck_assert_int_eq(tty_ioctl(tty, TIOCSPGRP, (unsigned long)&v, false), -ESRCH);
	ck_assert_int_eq(tty_ioctl(tty, TIOCGPGRP, (unsigned long)&v, false), 0);
	ck_assert_int_eq(v, 5);
	ck_assert_int_eq(tty_ioctl(tty, TIOCGSID, (unsigned long)&v, false), 0);
	ck_assert_int_eq(v, 1);
}
END_TEST

START_TEST(sessions)
{
	struct winsize ws = {.ws_row = 50, .ws_col = 132}, got;
	int v;

	/* the window size, and SIGWINCH to the foreground group on change */
	ck_assert_int_eq(tty_ioctl(tty, TIOCSWINSZ, (unsigned long)&ws, false), 0);
	ck_assert_int_eq(tty_ioctl(tty, TIOCSWINSZ, (unsigned long)&ws, false), 0);
	ck_assert_str_eq(sigs, "28@1 28@9 ");
	ck_assert_int_eq(tty_ioctl(tty, TIOCGWINSZ, (unsigned long)&got, false), 0);
	ck_assert_int_eq(got.ws_col, 132);
	/* another session (P's, 3) cannot take it, nor ask it, while its
	 * session's leader (Q, now pid 1) lives; root can steal it */
	Q.pid = 1;
	P.pid = P.sid = P.pgid = 3;
	P.start_ns = 7;
	ck_assert_ptr_null(tty_current());
	ck_assert_int_eq(tty_ioctl(tty, TIOCGPGRP, (unsigned long)&v, false), -ENOTTY);
	ck_assert_int_eq(tty_ioctl(tty, TIOCSCTTY, 0, false), -EPERM);
	ck_assert_int_eq(tty_ioctl(tty, TIOCSCTTY, 1, false), 0);
	ck_assert_ptr_eq(tty_current(), tty);
	/* the leader gone, a new session takes it */
	tty_set_ctty(tty, 1, 1);
	Q.pid = 4;
	ck_assert_int_eq(tty_ioctl(tty, TIOCSCTTY, 0, false), 0);
	ck_assert_ptr_eq(tty_current(), tty);
	ck_assert_int_eq(tty_ioctl(tty, TIOCGSID, (unsigned long)&v, false), 0);
	ck_assert_int_eq(v, 3);
	/* a new process with the old leader's pid is not the old session */
	P.start_ns = 42;
	ck_assert_ptr_null(tty_current());
	/* the leader exits: its foreground group hears of it */
	P.start_ns = 7;
	tty_set_ctty(tty, 3, 3);
	sigs[0] = 0;
	tty_proc_exit(&Q); /* not a leader: nothing */
	ck_assert_ptr_eq(tty_current(), tty);
	tty_proc_exit(&P);
	ck_assert_str_eq(sigs, "1@3 ");
	ck_assert_ptr_null(tty_current());
	/* hangup: the leader is told, reads end, writes fail */
	tty_set_ctty(tty, 3, 3);
	sigs[0] = 0;
	tty_hangup(tty);
	ck_assert_str_eq(sigs, "1@3 18@3 1@3 18@3 "); /* the leader, then group 3 */
	ck_assert_ptr_null(tty_current());
	{
		char buf[8];
		ck_assert_int_eq(rd(buf, sizeof(buf) - 1), 0);
		ck_assert_int_eq(wr("x"), -EIO);
	}
}
END_TEST

START_TEST(queue_ioctls)
{
	int v;

	in("ab\ncd");
	ck_assert_int_eq(tty_ioctl(tty, FIONREAD, (unsigned long)&v, false), 0);
	ck_assert_int_eq(v, 3);
	in("\004");
	ck_assert_int_eq(tty_ioctl(tty, FIONREAD, (unsigned long)&v, false), 0);
	ck_assert_int_eq(v, 5); /* the EOF character is not counted */
	tty->stopped = true;
	wr("xyz");
	ck_assert_str_eq(took(), "ab\r\ncd");
	ck_assert_int_eq(tty_ioctl(tty, TIOCOUTQ, (unsigned long)&v, false), 0);
	ck_assert_int_eq(v, 3); /* the echo went before ^S */
	ck_assert_int_eq(tty_ioctl(tty, TCFLSH, TCIOFLUSH, false), 0);
	ck_assert_int_eq(tty_ioctl(tty, TIOCOUTQ, (unsigned long)&v, false), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(tty_ioctl(tty, FIONREAD, (unsigned long)&v, false), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(tty_ioctl(tty, TCFLSH, 7, false), -EINVAL);
	ck_assert_int_eq(tty_ioctl(tty, 0x5401 + 0x1000, 0, false), -ENOTTY);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tty");
	TCase *tc = tcase_create("tty");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, canon_lines);
	tcase_add_test(tc, canon_erase);
	tcase_add_test(tc, canon_lnext_reprint);
	tcase_add_test(tc, canon_overflow);
	tcase_add_test(tc, raw_input);
	tcase_add_test(tc, input_flags);
	tcase_add_test(tc, signal_chars);
	tcase_add_test(tc, flow_control);
	tcase_add_test(tc, output_flags);
	tcase_add_test(tc, job_control);
	tcase_add_test(tc, sessions);
	tcase_add_test(tc, queue_ioctls);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
