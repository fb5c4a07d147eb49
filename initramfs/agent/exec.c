/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: exec and pty streams. After START the command is spawned and
 * the stream waits for its status pipe: EOF means execve succeeded (STARTED),
 * a message means it failed (ERROR). Output is read only while the
 * connection's queue has room, so a slow host slows the command down through
 * its full pipe instead of growing the agent. EXIT goes out once the process
 * has been reaped and its output has reached EOF.
 *
 * A command started with KILN_FRAME_KEEP survives its connection: the
 * stream is detached (agent.h) and goes on reading the command's output,
 * which is kept (the newest KILN_KEEP_OUTPUT bytes at most) until a stream
 * ATTACHes to the pid; it gets STARTED, the kept output, then the rest. A
 * detached command that exited waits KILN_KEEP_EXITED_MS for that.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "exec.h"

#define DRAIN_GRACE_MS 1000 /* after a timeout kill, wait this long for the pipes */
#define MAX_SIGNAL     64
#define OOM_CHUNK      1024 /* output read when a full chunk finds no memory */
#define HOLD_ENV       "KILN_TEST_STARTED_DELAY_MS"

/* The test hook's delay (agent.h, START): 0 unless 1..the most. */
static uint32_t hold_ms(const char *v)
{
	char *end;
	unsigned long ms = strtoul(v, &end, 10);

	if (*v < '1' || *v > '9' || *end || ms > KILN_TEST_STARTED_DELAY_MAX_MS)
		return 0;
	return (uint32_t)ms;
}

enum {
	ROLE_STATUS = ROLE_STREAM,
	ROLE_OUT, /* stdout pipe, or the pty master (read and write) */
	ROLE_ERR,
	ROLE_IN,
};

static void proc_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void exec_open(struct conn *c)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p) {
		conn_nomem(c);
		return;
	}
	p->pty = c->ops == &pty_ops;
	p->status_fd = p->out_fd = p->err_fd = p->in_fd = -1;
	p->deadline = AGENT_NO_DEADLINE;
	p->forget_at = AGENT_NO_DEADLINE;
	p->hold_until = AGENT_NO_DEADLINE;
	c->priv = p;
}

bool exec_describe(const struct conn *c, struct proc_desc *d)
{
	const struct proc *p = (c->ops == &exec_ops || c->ops == &pty_ops) ? c->priv : NULL;

	if (!p || p->pid <= 0 || p->spawn_failed ||
	    (p->phase != PROC_SPAWNING && p->phase != PROC_RUNNING))
		return false;
	d->pid = (uint32_t)p->pid;
	d->tag = p->tag;
	d->kind = p->pty ? KILN_STREAM_PTY : KILN_STREAM_EXEC;
	d->state = p->phase == PROC_SPAWNING ? KILN_PROC_STARTING
	           : p->exited               ? KILN_PROC_EXITED
	                                     : KILN_PROC_RUNNING;
	d->flags = c->state == CONN_DETACHED ? KILN_PROC_DETACHED : 0;
	return true;
}

pid_t exec_pid(const struct conn *c)
{
	const struct proc *p = (c->ops == &exec_ops || c->ops == &pty_ops) ? c->priv : NULL;

	return p ? p->pid : 0;
}

static void kill_group(struct proc *p, int sig)
{
	if (p->pid <= 0)
		return;
	/* Before the child's setsid() its group does not exist yet. */
	if (kill(-p->pid, sig) < 0 && errno == ESRCH && !p->exited)
		kill(p->pid, sig);
}

static uint32_t exit_flags(const struct proc *p)
{
	uint32_t f = p->timed_out ? KILN_EXIT_TIMEOUT : 0;

	if (p->oom ||
	    (!p->timed_out && oom_suspect(p->wstatus) && oom_killed_in(p->pid, p->started_ms)))
		f |= KILN_EXIT_OOM;
	return f;
}

/*
 * The agent has no memory for the command's output: rather than end the
 * stream without a status, end the command (the likely hog, as Linux's OOM
 * killer would choose) and report that. Its further output is dropped.
 */
static void exec_out_of_memory(struct conn *c)
{
	struct proc *p = c->priv;

	if (!p->oom)
		agent_log("out of memory: killing command %d (its output cannot be kept)", p->pid);
	p->oom = true;
	kill_tree(p->pid, SIGKILL);
	kill_group(p, SIGKILL);
	/* Its output is no longer read (exec_poll); the pipes stay open until
	 * it is reaped, so that it dies of the SIGKILL, not of a SIGPIPE. */
}

static void exec_check_done(struct conn *c)
{
	struct proc *p = c->priv;
	struct frame_mark m;
	int32_t code = -1;
	uint32_t sig = 0;

	if (p->phase != PROC_RUNNING || !p->exited || c->state == CONN_DETACHED)
		return; /* (a detached command's EXIT waits for a stream) */
	if (p->oom) {
		p->tty_eof = true; /* the rest of its output is dropped */
		if (!p->pty) {
			proc_close(&p->out_fd);
			proc_close(&p->err_fd);
		}
	}
	if (p->pty ? !p->tty_eof : p->out_fd >= 0 || p->err_fd >= 0)
		return;
	if (WIFEXITED(p->wstatus))
		code = WEXITSTATUS(p->wstatus);
	else if (WIFSIGNALED(p->wstatus))
		sig = WTERMSIG(p->wstatus);
	frame_begin(&c->out, &m, KILN_MSG_EXIT);
	put_u32(&c->out, &m, (uint32_t)code);
	put_u32(&c->out, &m, sig);
	put_u32(&c->out, &m, exit_flags(p));
	if (frame_end(&c->out, &m)) {
		conn_nomem(c);
		return;
	}
	p->phase = PROC_DONE;
	conn_finish(c);
}

/* One read of command output into a data frame: 1 data, 0 EOF, -1 nothing now. */
static int exec_read_output(struct conn *c, int fd, uint16_t type)
{
	ssize_t n = frame_read(&c->out, fd, type, KILN_DATA_CHUNK);

	/* Short of memory: a small frame may still fit. */
	if (n < 0 && errno == ENOMEM)
		n = frame_read(&c->out, fd, type, OOM_CHUNK);
	if (n > 0)
		return 1;
	if (n < 0 && errno == ENOMEM) {
		exec_out_of_memory(c);
		return -1;
	}
	/* EIO is how a pty master reports that the terminal is gone. */
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		return 0;
	return -1;
}

/*
 * A short command has often finished by the time the agent runs again (to
 * report its start, or its output's end): reap it and read its pipes to
 * their end right away, so that STARTED, the output and EXIT leave in one
 * write rather than one per wake-up of the loop.
 */
static void exec_catch_up(struct conn *c)
{
	struct proc *p = c->priv;
	int *fds[2] = {&p->out_fd, &p->err_fd};
	static const uint16_t types[2] = {KILN_MSG_STDOUT, KILN_MSG_STDERR};
	int st;

	if (p->phase != PROC_RUNNING || c->state != CONN_OPEN)
		return;
	if (!p->exited) {
		if (waitpid(p->pid, &st, WNOHANG) != p->pid)
			return;
		p->exited = true;
		p->wstatus = st;
	}
	for (int i = 0; i < 2 && !p->pty && !p->oom; i++) {
		int r = 1;

		while (*fds[i] >= 0 && c->state == CONN_OPEN && conn_has_room(c) && r > 0)
			r = exec_read_output(c, *fds[i], types[i]);
		if (!r)
			proc_close(fds[i]);
	}
}

static void exec_write_input(struct proc *p)
{
	while (p->input.len) {
		ssize_t n = write(p->in_fd, kbuf_head(&p->input), p->input.len);

		if (n > 0) {
			kbuf_consume(&p->input, n);
		} else if (n < 0 && errno == EAGAIN) {
			return;
		} else if (n < 0 && errno != EINTR) {
			/* The reader is gone (EPIPE): the input has nowhere to go. */
			kbuf_free(&p->input);
			if (!p->pty)
				proc_close(&p->in_fd);
			break;
		}
	}
	kbuf_trim(&p->input, 64u << 10);
	if (!p->pty && p->stdin_eof)
		proc_close(&p->in_fd);
}

static void exec_report_started(struct conn *c);

static void exec_status(struct conn *c)
{
	struct proc *p = c->priv;
	ssize_t n =
	    read(p->status_fd, p->status + p->status_len, sizeof(p->status) - p->status_len);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		p->status_len += n;
		if (p->status_len < sizeof(p->status))
			return;
	}
	proc_close(&p->status_fd);
	if (p->status_len && c->state == CONN_DETACHED) {
		/* Nobody to tell: the stream went while the command was starting. */
		p->spawn_failed = true;
		conn_abort(c);
		return;
	}
	if (p->status_len) {
		int err = EIO;

		p->spawn_failed = true;
		if (p->status_len > sizeof(err))
			memcpy(&err, p->status, sizeof(err));
		conn_fail(c, err, "%.*s", (int)(p->status_len - sizeof(err)),
		          p->status + sizeof(err));
		return;
	}
	if (c->state == CONN_DETACHED) {
		/* Started after its stream went: whoever ATTACHes gets STARTED. */
		p->phase = PROC_RUNNING;
		return;
	}
	if (p->hold_ms) {
		p->hold_until = now_ms() + p->hold_ms; /* the test hook (agent.h) */
		p->hold_ms = 0;
		return;
	}
	exec_report_started(c);
}

/* The command runs: STARTED, and what it already did. */
static void exec_report_started(struct conn *c)
{
	struct proc *p = c->priv;
	struct frame_mark m;

	p->hold_until = AGENT_NO_DEADLINE;
	frame_begin(&c->out, &m, KILN_MSG_STARTED);
	put_u32(&c->out, &m, p->pid);
	if (frame_end(&c->out, &m)) {
		conn_nomem(c);
		return;
	}
	p->phase = PROC_RUNNING;
	exec_catch_up(c);
	exec_check_done(c);
}

/* Output is at EOF; for a pty see the comment in exec_output(). */
static void exec_output(struct conn *c, int *fd, uint16_t type)
{
	struct proc *p = c->priv;

	if (exec_read_output(c, *fd, type))
		return;
	/*
	 * A pty master stays open until the stream ends: closing it hangs up
	 * the terminal, and a command that closed its stdio but has not exited
	 * yet would die of SIGHUP.
	 */
	if (p->pty) {
		p->tty_eof = true;
		kbuf_free(&p->input);
	} else {
		proc_close(fd);
		exec_catch_up(c);
	}
	exec_check_done(c);
}

static void exec_ready(struct conn *c, int role, short revents)
{
	struct proc *p = c->priv;

	switch (role) {
	case ROLE_STATUS:
		exec_status(c);
		return;
	case ROLE_IN:
		exec_write_input(p);
		return;
	case ROLE_ERR:
		/* The queue may have filled up earlier in this round. */
		if (conn_has_room(c))
			exec_output(c, &p->err_fd, KILN_MSG_STDERR);
		return;
	case ROLE_OUT:
		if (p->pty && (revents & POLLOUT))
			exec_write_input(p);
		if (p->pty && !(revents & (POLLIN | POLLHUP | POLLERR)))
			return;
		if (conn_has_room(c))
			exec_output(c, &p->out_fd, KILN_MSG_STDOUT);
		else if (p->pty && (revents & (POLLHUP | POLLERR)))
			kbuf_free(&p->input); /* the terminal is gone: input has no reader */
		return;
	}
}

static void exec_poll(struct conn *c, struct pollset *ps)
{
	struct proc *p = c->priv;

	if (!p)
		return;
	bool out = p->phase == PROC_RUNNING && conn_has_room(c) && !p->oom;
	if (p->status_fd >= 0)
		pollset_add(ps, p->status_fd, POLLIN, c, ROLE_STATUS);
	if (p->pty) {
		/* Input waits until the child has opened the terminal. */
		short ev = (out ? POLLIN : 0) | (p->input.len ? POLLOUT : 0);
		if (p->out_fd >= 0 && p->phase == PROC_RUNNING && !p->tty_eof && ev)
			pollset_add(ps, p->out_fd, ev, c, ROLE_OUT);
		return;
	}
	if (out && p->out_fd >= 0)
		pollset_add(ps, p->out_fd, POLLIN, c, ROLE_OUT);
	if (out && p->err_fd >= 0)
		pollset_add(ps, p->err_fd, POLLIN, c, ROLE_ERR);
	if (p->in_fd >= 0 && p->input.len)
		pollset_add(ps, p->in_fd, POLLOUT, c, ROLE_IN);
}

static bool exec_want_input(struct conn *c)
{
	struct proc *p = c->priv;

	return !p || p->input.len < AGENT_IN_LIMIT;
}

static void exec_start(struct conn *c, const uint8_t *buf, uint32_t len)
{
	struct proc *p = c->priv;
	struct start_req s = {0};
	struct agent_user user;
	char *user_name = NULL, why[160];
	uint32_t user_flags = 0;
	struct rd r;
	int err;

	rd_init(&r, buf, len);
	s.argv = rd_strlist(&r, 1, NULL);
	s.env = rd_strlist(&r, 0, NULL);
	s.cwd = rd_str(&r);
	s.uid = rd_u32(&r);
	s.timeout_ms = rd_u32(&r);
	s.cols = rd_u16(&r);
	s.rows = rd_u16(&r);
	if (r.left && !r.why) { /* the user trailer */
		user_name = rd_str(&r);
		user_flags = rd_u32(&r);
	}
	if (r.left && !r.why) { /* the rlimits trailer */
		s.n_rlimits = rd_u32(&r);
		if (s.n_rlimits > KILN_MAX_RLIMITS) {
			conn_fail(c, EINVAL, "START has %u rlimits, more than %u", s.n_rlimits,
			          KILN_MAX_RLIMITS);
			goto out;
		}
		for (uint32_t i = 0; i < s.n_rlimits; i++) {
			s.rlimits[i].resource = rd_u32(&r);
			s.rlimits[i].soft = rd_u64(&r);
			s.rlimits[i].hard = rd_u64(&r);
		}
	}
	if (r.left && !r.why) /* the root trailer */
		s.root = rd_str(&r);
	if (r.left && !r.why) /* the tag trailer */
		s.tag = rd_u64(&r);
	if (r.left && !r.why) /* the pidns trailer */
		s.pidns = rd_str(&r);
	if (!rd_ok(&r)) {
		conn_fail(c, EPROTO, "bad START: %s", r.why);
		goto out;
	}
	if (s.root && *s.root && s.root[0] != '/') {
		conn_fail(c, EINVAL, "START's root '%s' is not an absolute path", s.root);
		goto out;
	}
	if (s.pidns && *s.pidns && s.pidns[0] != '/') {
		conn_fail(c, EINVAL, "START's pidns '%s' is not an absolute path", s.pidns);
		goto out;
	}
	if (user_name && *user_name) {
		err = user_resolve(user_name, user_flags, &user, why, sizeof(why));
		if (err) {
			conn_fail(c, -err, "%s", why);
			goto out;
		}
		s.user = &user;
	}
	for (char **e = s.env; *e; e++) {
		if (**e == '=' || !strchr(*e, '=')) {
			conn_fail(c, EINVAL, "bad environment entry '%s' (want NAME=value)", *e);
			goto out;
		}
		if (!strncmp(*e, HOLD_ENV "=", sizeof(HOLD_ENV)))
			p->hold_ms = hold_ms(*e + sizeof(HOLD_ENV));
	}
	p->tag = s.tag;
	p->started_ms = now_ms();
	err = p->pty ? pty_spawn(p, &s) : pipes_spawn(p, &s);
	if (err) {
		conn_fail(c, -err, "cannot start '%s': %s", s.argv[0], strerror(-err));
		goto out;
	}
	p->phase = PROC_SPAWNING;
	p->keep = c->rx_flags & KILN_FRAME_KEEP;
	if (s.timeout_ms)
		p->deadline = now_ms() + s.timeout_ms;
	/* The child may have reached execve already (always, were it started
	 * with vfork): then STARTED goes out with the HELLO answer. */
	exec_status(c);
out:
	strv_free(s.argv);
	strv_free(s.env);
	free(s.cwd);
	free(s.root);
	free(s.pidns);
	free(user_name);
}

/* ATTACH: take over the process of a detached stream. */
static void exec_attach(struct conn *c, const uint8_t *buf, uint32_t len)
{
	struct proc *p = c->priv, *kept;
	struct frame_mark m;
	struct conn *d;
	struct rd r;
	uint32_t pid;

	rd_init(&r, buf, len);
	pid = rd_u32(&r);
	if (!rd_ok(&r)) {
		conn_fail(c, EPROTO, "bad ATTACH: %s", r.why);
		return;
	}
	d = pid && pid <= INT32_MAX ? agent_find_detached((pid_t)pid) : NULL;
	kept = d ? d->priv : NULL;
	if (!kept || kept->pty != p->pty) {
		conn_fail(c, ESRCH, "no process %u waits for a%s stream", pid,
		          p->pty ? " pty" : "n exec");
		return;
	}
	/* (One that has not reached execve yet gets it from exec_status.) */
	if (kept->phase == PROC_RUNNING) {
		frame_begin(&c->out, &m, KILN_MSG_STARTED);
		put_u32(&c->out, &m, pid);
		if (frame_end(&c->out, &m)) {
			conn_nomem(c);
			return;
		}
	}
	if (d->out.len && kbuf_put(&c->out, kbuf_head(&d->out), d->out.len)) {
		conn_nomem(c);
		return;
	}
	free(p); /* fresh from exec_open: nothing open */
	c->priv = kept;
	d->priv = NULL;
	conn_abort(d);
	kept->forget_at = AGENT_NO_DEADLINE;
	exec_check_done(c);
}

static void exec_frame(struct conn *c, uint16_t type, const uint8_t *buf, uint32_t len)
{
	struct proc *p = c->priv;
	bool first = type == KILN_MSG_START || type == KILN_MSG_ATTACH;
	struct rd r;

	if (first != (p->phase == PROC_WAIT_START)) {
		conn_fail(c, EPROTO,
		          first ? "START or ATTACH twice" : "expected START or ATTACH, got type %u",
		          type);
		return;
	}
	rd_init(&r, buf, len);
	switch (type) {
	case KILN_MSG_START:
		exec_start(c, buf, len);
		return;
	case KILN_MSG_ATTACH:
		exec_attach(c, buf, len);
		return;
	case KILN_MSG_STDIN:
		if (p->in_fd >= 0 && !p->stdin_eof && !p->tty_eof && kbuf_put(&p->input, buf, len))
			conn_nomem(c);
		return;
	case KILN_MSG_STDIN_EOF:
		if (!rd_ok(&r))
			break;
		if (p->pty) {
			pty_eof(p);
		} else {
			p->stdin_eof = true;
			if (!p->input.len)
				proc_close(&p->in_fd);
		}
		return;
	case KILN_MSG_SIGNAL: {
		uint32_t sig = rd_u32(&r);
		if (!rd_ok(&r))
			break;
		if (sig < 1 || sig > MAX_SIGNAL) {
			conn_fail(c, EINVAL, "bad signal number %u", sig);
			return;
		}
		kill_group(p, sig);
		return;
	}
	case KILN_MSG_RESIZE: {
		uint16_t cols = rd_u16(&r), rows = rd_u16(&r);
		if (!rd_ok(&r))
			break;
		if (!p->pty) {
			conn_fail(c, EPROTO, "RESIZE on an exec stream");
			return;
		}
		pty_resize(p, cols, rows);
		return;
	}
	default:
		conn_fail(c, EPROTO, "message type %u not valid on an %s stream", type,
		          p->pty ? "pty" : "exec");
		return;
	}
	conn_fail(c, EPROTO, "bad message type %u: %s", type, r.why);
}

static int64_t exec_deadline(struct conn *c)
{
	struct proc *p = c->priv;
	int64_t at;

	if (!p || p->phase == PROC_DONE)
		return AGENT_NO_DEADLINE;
	at = p->deadline < p->forget_at ? p->deadline : p->forget_at;
	return p->hold_until < at ? p->hold_until : at;
}

static void exec_timeout(struct conn *c, int64_t now)
{
	struct proc *p = c->priv;

	if (now >= p->forget_at) {
		conn_abort(c); /* exited long ago, and nobody came for it */
		return;
	}
	if (now >= p->hold_until && p->phase == PROC_SPAWNING) {
		exec_report_started(c);
		if (p->phase != PROC_RUNNING || c->state != CONN_OPEN)
			return;
	}
	if (now < p->deadline)
		return;
	/* The command stopped first, so that it cannot see a child die and
	 * exit of it (a shell's 137) before its own SIGKILL; then the tree,
	 * while the parents are there to find it by (a child whose parent is
	 * gone is init's). */
	if (!p->timed_out && p->pid > 0)
		kill(p->pid, SIGSTOP);
	kill_tree(p->pid, SIGKILL);
	kill_group(p, SIGKILL);
	if (!p->timed_out) {
		p->timed_out = true;
		p->deadline = now + DRAIN_GRACE_MS;
		return;
	}
	/* Something outside the process group still holds the output open. */
	p->deadline = AGENT_NO_DEADLINE;
	if (p->pty) {
		p->tty_eof = true;
	} else {
		proc_close(&p->out_fd);
		proc_close(&p->err_fd);
	}
	exec_check_done(c);
}

static bool exec_child(struct conn *c, pid_t pid, int wstatus)
{
	struct proc *p = c->priv;

	if (!p || p->pid != pid || p->exited)
		return false;
	p->exited = true;
	p->wstatus = wstatus;
	if (c->state == CONN_DETACHED)
		p->forget_at = now_ms() + KILN_KEEP_EXITED_MS;
	exec_check_done(c);
	return true;
}

static bool exec_detach(struct conn *c)
{
	struct proc *p = c->priv;

	if (!p || !p->keep || p->spawn_failed ||
	    (p->phase != PROC_RUNNING && p->phase != PROC_SPAWNING))
		return false;
	if (p->phase == PROC_SPAWNING && p->status_fd < 0) {
		/* Started, its STARTED held (the test hook): whoever ATTACHes
		 * gets it. */
		p->phase = PROC_RUNNING;
		p->hold_until = AGENT_NO_DEADLINE;
	}
	if (p->exited)
		p->forget_at = now_ms() + KILN_KEEP_EXITED_MS;
	return true;
}

static void exec_destroy(struct conn *c)
{
	struct proc *p = c->priv;

	if (!p)
		return;
	/* The host left before EXIT: nothing of the command may outlive it. */
	if (p->phase != PROC_DONE && !p->spawn_failed) {
		kill_tree(p->pid, SIGKILL); /* (before its parents die) */
		kill_group(p, SIGKILL);
	}
	if (p->pty)
		p->in_fd = -1;
	proc_close(&p->status_fd);
	proc_close(&p->out_fd);
	proc_close(&p->err_fd);
	proc_close(&p->in_fd);
	kbuf_free(&p->input);
	free(p);
	c->priv = NULL;
}

#define PROC_OPS                                                                                  \
	.open = exec_open, .frame = exec_frame, .want_input = exec_want_input, .poll = exec_poll, \
	.ready = exec_ready, .deadline = exec_deadline, .timeout = exec_timeout,                  \
	.child = exec_child, .detach = exec_detach, .destroy = exec_destroy

const struct stream_ops exec_ops = {PROC_OPS};
const struct stream_ops pty_ops = {PROC_OPS};
