/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: a command's stdio — three pipes for exec streams, a
 * pseudo-terminal for pty streams — and the spawn around it. Every
 * descriptor the agent keeps is CLOEXEC and non-blocking; the child's ends
 * are blocking (programs expect that) and become 0/1/2 in the child.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "agent.h"
#include "exec.h"

#define DEFAULT_COLS 80
#define DEFAULT_ROWS 24
#define CTRL_D       4

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Spawn r with a status pipe; on success p owns the pid and the pipe's read end. */
static int spawn_with(struct proc *p, const struct start_req *s, struct spawn_req *r)
{
	int st[2], err = 0;

	r->argv = s->argv;
	r->cwd = *s->cwd ? s->cwd : s->user ? s->user->home : "/";
	r->cwd_default = !*s->cwd;
	r->uid = s->uid;
	r->user = s->user;
	r->rlimits = s->rlimits;
	r->n_rlimits = s->n_rlimits;
	r->root = s->root && *s->root && strcmp(s->root, "/") ? s->root : NULL;
	r->ns_join = s->pidns && *s->pidns;
	r->ns_of = r->ns_join ? s->pidns : s->root && *s->root ? s->root : NULL;
	r->envp = spawn_env(s->env, p->pty, s->user);
	if (!r->envp)
		return -ENOMEM;
	if (pipe2(st, O_CLOEXEC) < 0)
		return -errno;
	r->status_fd = st[1];
	pid_t pid = spawn(r);
	close(st[1]);
	if (pid < 0 || (err = set_nonblock(st[0]))) {
		err = pid < 0 ? pid : err;
		close(st[0]);
		if (pid > 0)
			kill(pid, SIGKILL);
		return err;
	}
	p->pid = pid;
	p->status_fd = st[0];
	return 0;
}

int pipes_spawn(struct proc *p, const struct start_req *s)
{
	int fds[6] = {-1, -1, -1, -1, -1, -1}; /* stdin r/w, stdout r/w, stderr r/w */
	struct spawn_req r = {0};
	int err = 0;

	for (int i = 0; i < 3; i++)
		if (pipe2(fds + 2 * i, O_CLOEXEC) < 0)
			err = -errno;
	if (!err)
		err = set_nonblock(fds[1]);
	if (!err)
		err = set_nonblock(fds[2]);
	if (!err)
		err = set_nonblock(fds[4]);
	if (err) {
		close_all(fds, 6);
		return err;
	}
	r.fd[0] = fds[0];
	r.fd[1] = fds[3];
	r.fd[2] = fds[5];
	err = spawn_with(p, s, &r);
	close(fds[0]);
	close(fds[3]);
	close(fds[5]);
	if (err) {
		close(fds[1]);
		close(fds[2]);
		close(fds[4]);
		return err;
	}
	p->in_fd = fds[1];
	p->out_fd = fds[2];
	p->err_fd = fds[4];
	return 0;
}

int pty_spawn(struct proc *p, const struct start_req *s)
{
	struct spawn_req r = {0};
	char name[128];
	int m, err;

	m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0)
		return -errno;
	if (fcntl(m, F_SETFD, FD_CLOEXEC) < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
		err = -errno;
	else if ((err = ptsname_r(m, name, sizeof(name))) > 0)
		err = -err;
	if (!err)
		err = set_nonblock(m);
	if (!err) {
		r.tty = name;
		r.cols = s->cols ? s->cols : DEFAULT_COLS;
		r.rows = s->rows ? s->rows : DEFAULT_ROWS;
		r.fd[0] = r.fd[1] = r.fd[2] = -1;
		err = spawn_with(p, s, &r);
	}
	if (err) {
		close(m);
		return err;
	}
	p->out_fd = p->in_fd = m;
	return 0;
}

void pty_resize(struct proc *p, uint16_t cols, uint16_t rows)
{
	struct winsize ws = {
	    .ws_row = rows ? rows : DEFAULT_ROWS,
	    .ws_col = cols ? cols : DEFAULT_COLS,
	};

	if (p->out_fd >= 0)
		ioctl(p->out_fd, TIOCSWINSZ, &ws);
}

/* The terminal's EOF character, as if typed: ends a read at the start of a line. */
void pty_eof(struct proc *p)
{
	struct termios t;
	uint8_t ch = CTRL_D;

	if (p->out_fd < 0)
		return;
	if (tcgetattr(p->out_fd, &t) == 0 && t.c_cc[VEOF] != _POSIX_VDISABLE)
		ch = t.c_cc[VEOF];
	kbuf_put(&p->input, &ch, 1);
}
