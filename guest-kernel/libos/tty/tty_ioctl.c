/* SPDX-License-Identifier: MIT */
/*
 * Terminals and processes: controlling terminals, foreground process
 * groups, job-control checks, hangup, and the tty ioctls (termios, window
 * size, process groups, flushing).
 *
 * A tty belongs to the session whose id is tty->session; that session's
 * leader being gone (Linux drops the terminal in exit()) is noticed here,
 * lazily, whenever the session is looked at.
 */
#include <asm/signal.h>
#include <linux/fcntl.h>
#include <linux/poll.h>

#include "errno_k.h"
#include "pidns.h"
#include "proc.h"
#include "tty_impl.h"
#include "uaccess.h"
#include "vfs.h"

#define KSIG_IGN 1

/* ---------------------------------------------------------------- sessions */

static void check_session(struct tty *tty)
{
	struct proc *leader = tty->session ? proc_find(tty->session) : NULL;

	if (!tty->session)
		return;
	if (!leader || leader->sid != tty->session ||
	    (tty->session_start && leader->start_ns != tty->session_start)) {
		tty->session = tty->pgrp = 0;
		return;
	}
	tty->session_start = leader->start_ns;
}

static bool is_ctty(struct tty *tty, const struct proc *p)
{
	check_session(tty);
	return p && tty->session && tty->session == p->sid;
}

struct tty *tty_current(void)
{
	struct proc *p = cur_proc();

	for (struct tty *t = tty_all; t && p; t = t->next)
		if (is_ctty(t, p))
			return t;
	return NULL;
}

void tty_set_ctty(struct tty *tty, int sid, int pgrp)
{
	struct proc *leader = proc_find(sid);

	tty->session = sid;
	tty->pgrp = pgrp;
	tty->session_start = leader ? leader->start_ns : 0;
}

void tty_signal_pgrp(int pgrp, int sig)
{
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (!p->zombie && p->pgid == pgrp)
			signal_send_proc(p, sig, NULL);
}

/* POSIX: no member has a parent in another group of the same session,
 * so nobody is left to continue a stopped job. */
static bool pgrp_orphaned(int pgrp)
{
	for (struct proc *p = proc_first(); p; p = p->next_all) {
		struct proc *up = p->parent;

		if (!p->zombie && p->pgid == pgrp && up && !up->zombie && up->pgid != pgrp &&
		    up->sid == p->sid)
			return false;
	}
	return true;
}

static bool pgrp_exists(int pgrp, int *sid)
{
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (!p->zombie && p->pgid == pgrp) {
			*sid = p->sid;
			return true;
		}
	return false;
}

long tty_job_control(struct tty *tty, int sig)
{
	struct thread *t = cur_thread();
	struct proc *p = t->proc;

	if (!is_ctty(tty, p) || !tty->pgrp || p->pgid == tty->pgrp)
		return 0;
	if (p->sighand->action[sig].handler == KSIG_IGN || (t->sigmask & SIGBIT(sig)))
		return sig == SIGTTIN ? -EIO : 0;
	if (pgrp_orphaned(p->pgid))
		return -EIO;
	tty_signal_pgrp(p->pgid, sig);
	return -ERESTARTSYS;
}

/* The session lets go of its terminal: its foreground group is told. */
static void disassociate(struct tty *tty)
{
	if (tty->pgrp) {
		tty_signal_pgrp(tty->pgrp, SIGHUP);
		tty_signal_pgrp(tty->pgrp, SIGCONT);
	}
	tty->session = tty->pgrp = 0;
	tty->session_start = 0;
}

void tty_proc_exit(struct proc *p)
{
	if (p->pid != p->sid)
		return;
	for (struct tty *t = tty_all; t; t = t->next)
		if (t->session == p->sid &&
		    (!t->session_start || t->session_start == p->start_ns)) {
			if (t->pgrp)
				tty_signal_pgrp(t->pgrp, SIGHUP);
			t->session = t->pgrp = 0;
			t->session_start = 0;
		}
}

void tty_hangup(struct tty *tty)
{
	struct proc *leader;

	if (tty->hungup)
		return;
	tty->hungup = true;
	tty->stopped = false;
	check_session(tty);
	leader = tty->session ? proc_find(tty->session) : NULL;
	if (leader) {
		signal_send_proc(leader, SIGHUP, NULL);
		signal_send_proc(leader, SIGCONT, NULL);
	}
	disassociate(tty);
	wake_all(&tty->read_wq);
	wake_all(&tty->write_wq);
}

void tty_set_winsize(struct tty *tty, const struct winsize *ws)
{
	if (!memcmp(&tty->ws, ws, sizeof(*ws)))
		return;
	tty->ws = *ws;
	if (tty->pgrp)
		tty_signal_pgrp(tty->pgrp, SIGWINCH);
}

/* ---------------------------------------------------------------- open, poll */

int tty_open(struct tty *tty, struct file *f, unsigned int oflags)
{
	struct proc *p = cur_proc();
	int err = tty->drv->open ? tty->drv->open(tty) : 0;

	if (err)
		return err;
	tty->opens++;
	f->ops = &tty_file_ops;
	f->priv = tty;
	if (!(oflags & O_NOCTTY) && p && p->pid == p->sid && !tty->hungup) {
		check_session(tty);
		if (!tty->session && !tty_current())
			tty_set_ctty(tty, p->sid, p->pgid);
	}
	return 0;
}

static int ctty_dev_open(struct file *f, unsigned int oflags)
{
	struct tty *tty = tty_current();

	return tty ? tty_open(tty, f, oflags | O_NOCTTY) : -ENXIO;
}

const struct file_ops tty_ctty_dev_ops = {.open = ctty_dev_open, .stream = true};

unsigned int tty_poll(struct tty *tty)
{
	unsigned int mask = 0;
	size_t want = 1;

	/* Readable as read(2) would see it: a line, or VMIN bytes. */
	if (!(tty->tio.c_lflag & ICANON) && !tty->tio.c_cc[VTIME] && tty->tio.c_cc[VMIN])
		want = tty->tio.c_cc[VMIN];
	if (tty->chead - tty->rtail >= want || tty->hungup || tty->input_eof)
		mask |= POLLIN | POLLRDNORM;
	if (TTY_OBUF - tty_out_pending(tty) >= 8 || tty->hungup)
		mask |= POLLOUT | POLLWRNORM;
	if (tty->hungup)
		mask |= POLLHUP;
	return mask;
}

/* ---------------------------------------------------------------- ioctls */

static long put_int(unsigned long arg, int v)
{
	return copy_to_user((void *)arg, &v, sizeof(v));
}

static long get_int(unsigned long arg, int *v)
{
	return copy_from_user(v, (const void *)arg, sizeof(*v));
}

enum { SET_NOW, SET_DRAIN, SET_FLUSH };

static long set_termios(struct tty *tty, unsigned long arg, size_t size, int how)
{
	struct termios2 t = tty->tio; /* TCSETS keeps the speeds */
	long err = tty_job_control(tty, SIGTTOU);

	if (err)
		return err;
	if (copy_from_user(&t, (const void *)arg, size))
		return -EFAULT;
	if (how != SET_NOW && (err = tty_drain(tty)))
		return err;
	if (how == SET_FLUSH)
		tty_flush_input(tty, true);
	tty_set_termios(tty, &t);
	return 0;
}

/* TIOCSCTTY: a session leader without a terminal takes this one; arg 1
 * takes it from another session (everyone is root in kiln). */
static long set_ctty(struct tty *tty, unsigned long arg)
{
	struct proc *p = cur_proc();

	check_session(tty);
	if (p->pid == p->sid && tty->session == p->sid)
		return 0;
	if (p->pid != p->sid || tty_current())
		return -EPERM;
	if (tty->session && arg != 1)
		return -EPERM;
	tty_set_ctty(tty, p->sid, p->pgid);
	return 0;
}

static long set_pgrp(struct tty *tty, unsigned long arg)
{
	struct proc *p = cur_proc();
	long err = tty_job_control(tty, SIGTTOU);
	int pgrp, sid;

	if (err)
		return err == -EIO ? -ENOTTY : err;
	if (!is_ctty(tty, p))
		return -ENOTTY;
	if (get_int(arg, &pgrp))
		return -EFAULT;
	if (pgrp < 0)
		return -EINVAL;
	pgrp = pid_from_user(p, pgrp); /* (0: of another namespace) */
	if (!pgrp_exists(pgrp, &sid))
		return -ESRCH;
	if (sid != p->sid)
		return -EPERM;
	tty->pgrp = pgrp;
	return 0;
}

/* TCFLSH; the master's input is the slave's output and the other way. */
static long flush(struct tty *tty, unsigned long arg, bool as_master)
{
	bool in = arg == TCIFLUSH || arg == TCIOFLUSH, out = arg == TCOFLUSH || arg == TCIOFLUSH;
	long err = tty_job_control(tty, SIGTTOU);

	if (err)
		return err;
	if (arg > TCIOFLUSH)
		return -EINVAL;
	if (as_master) {
		bool t = in;
		in = out;
		out = t;
	}
	if (in)
		tty_flush_input(tty, true);
	if (out)
		tty_flush_output(tty);
	return 0;
}

static long flow(struct tty *tty, unsigned long arg)
{
	long err = tty_job_control(tty, SIGTTOU);

	if (err)
		return err;
	switch (arg) {
	case TCOOFF:
		tty->stopped = true;
		return 0;
	case TCOON:
		tty_start_output(tty);
		return 0;
	case TCIOFF:
	case TCION:
		if (tty->tio.c_cc[arg == TCIOFF ? VSTOP : VSTART])
			tty_send_char(tty, tty->tio.c_cc[arg == TCIOFF ? VSTOP : VSTART]);
		return 0;
	default:
		return -EINVAL;
	}
}

long tty_ioctl(struct tty *tty, unsigned int cmd, unsigned long arg, bool as_master)
{
	struct proc *p = cur_proc();
	struct winsize ws;
	size_t n;
	int v;

	switch (cmd) {
	case TCGETS:
		return copy_to_user((void *)arg, &tty->tio, sizeof(struct termios));
	case TCGETS2:
		return copy_to_user((void *)arg, &tty->tio, sizeof(struct termios2));
	case TCSETS:
	case TCSETSW:
	case TCSETSF:
		return set_termios(tty, arg, sizeof(struct termios), (int)(cmd - TCSETS));
	case TCSETS2:
	case TCSETSW2:
	case TCSETSF2:
		return set_termios(tty, arg, sizeof(struct termios2), (int)(cmd - TCSETS2));
	case TIOCGWINSZ:
		return copy_to_user((void *)arg, &tty->ws, sizeof(tty->ws));
	case TIOCSWINSZ:
		if (copy_from_user(&ws, (const void *)arg, sizeof(ws)))
			return -EFAULT;
		tty_set_winsize(tty, &ws);
		return 0;
	case TIOCGPGRP:
		if (!as_master && !is_ctty(tty, p))
			return -ENOTTY;
		return put_int(arg, pid_to_user(p, tty->pgrp));
	case TIOCSPGRP:
		return set_pgrp(tty, arg);
	case TIOCGSID:
		if ((!as_master && !is_ctty(tty, p)) || !tty->session)
			return -ENOTTY;
		return put_int(arg, pid_to_user(p, tty->session));
	case TIOCSCTTY:
		return set_ctty(tty, arg);
	case TIOCNOTTY:
		if (!is_ctty(tty, p))
			return -ENOTTY;
		if (p->pid == p->sid)
			disassociate(tty);
		return 0;
	case TIOCOUTQ:
		return put_int(arg, (int)tty_out_pending(tty));
	case FIONREAD:
		n = tty_input_available(tty);
		return put_int(arg, (int)n);
	case TCFLSH:
		return flush(tty, arg, as_master);
	case TCXONC:
		return flow(tty, arg);
	case TCSBRK: /* tcdrain(), and a break that takes no time */
	case TCSBRKP:
		return tty_drain(tty);
	case TIOCSBRK:
	case TIOCCBRK:
	case TIOCEXCL:
	case TIOCNXCL:
		return 0;
	case TIOCGETD: /* the line discipline: N_TTY is the only one */
		return put_int(arg, 0);
	case TIOCSETD:
		if (get_int(arg, &v))
			return -EFAULT;
		return v == 0 ? 0 : -EINVAL;
	case TIOCSTI:
		if (copy_from_user(&v, (const void *)arg, 1))
			return -EFAULT;
		tty_receive(tty, &v, 1);
		return 0;
	default:
		return -ENOTTY;
	}
}
