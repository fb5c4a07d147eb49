/* SPDX-License-Identifier: MIT */
/* fake-vmm (tests only): a minimal implementation of the agent protocol
 * (include/kiln/agent.h) over blocking I/O, one forked process per stream,
 * with the host's file system standing in for the guest's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <kiln/agent.h>

#include "fake_vmm.h"

/* ---------------------------------------------------------------- I/O */

int read_full(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = read(fd, c, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

int write_full(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t r = send(fd, c, n, MSG_NOSIGNAL);

		if (r < 0 && errno == ENOTSOCK)
			r = write(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

struct msg {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct msg *m, const void *p, size_t n)
{
	if (m->len + n > m->cap) {
		m->cap = (m->len + n) * 2 + 64;
		m->p = realloc(m->p, m->cap);
		if (!m->p)
			_exit(99);
	}
	memcpy(m->p + m->len, p, n);
	m->len += n;
}

static void put_u16(struct msg *m, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};

	put(m, b, 2);
}

static void put_u32(struct msg *m, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};

	put(m, b, 4);
}

static void put_u64(struct msg *m, uint64_t v)
{
	put_u32(m, (uint32_t)v);
	put_u32(m, (uint32_t)(v >> 32));
}

static void put_str(struct msg *m, const char *s, size_t n)
{
	put_u32(m, (uint32_t)n);
	put(m, s, n);
}

static int send_frame(int fd, uint16_t type, const void *p, size_t n)
{
	struct msg m = {0};
	int rc;

	put_u32(&m, (uint32_t)n);
	put_u16(&m, type);
	put_u16(&m, 0);
	if (n)
		put(&m, p, n);
	rc = write_full(fd, m.p, m.len);
	free(m.p);
	return rc;
}

static int send_msg(int fd, uint16_t type, struct msg *m)
{
	int rc = send_frame(fd, type, m->p, m->len);

	free(m->p);
	memset(m, 0, sizeof(*m));
	return rc;
}

static int send_error(int fd, int err, const char *what)
{
	struct msg m = {0};
	char text[512];

	snprintf(text, sizeof(text), "%s: %s", what, strerror(err));
	put_u32(&m, (uint32_t)err);
	put_str(&m, text, strlen(text));
	return send_msg(fd, KILN_MSG_ERROR, &m);
}

/* One frame into *buf (malloc'd, NUL-terminated for convenience). */
static int recv_frame(int fd, uint16_t *type, uint8_t **buf, uint32_t *len)
{
	uint8_t h[8];

	if (read_full(fd, h, 8))
		return -1;
	*len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
	*type = (uint16_t)(h[4] | h[5] << 8);
	/* KILN_FRAME_KEEP is ignored, as by an agent that predates it: a
	 * restored fake VM starts afresh anyway, keeping nothing. */
	if (*len > MAX_PAYLOAD || *type == 0 || *type >= KILN_MSG_MAX ||
	    ((h[6] | h[7] << 8) & ~KILN_FRAME_KEEP))
		return -2;
	*buf = malloc(*len + 1);
	if (!*buf || read_full(fd, *buf, *len))
		return -1;
	(*buf)[*len] = 0;
	return 0;
}

struct rd {
	const uint8_t *p;
	uint32_t len, off;
	bool bad;
};

static uint32_t get_u32(struct rd *r)
{
	uint32_t v;

	if (r->len - r->off < 4) {
		r->bad = true;
		return 0;
	}
	v = (uint32_t)r->p[r->off] | (uint32_t)r->p[r->off + 1] << 8 |
	    (uint32_t)r->p[r->off + 2] << 16 | (uint32_t)r->p[r->off + 3] << 24;
	r->off += 4;
	return v;
}

static uint16_t get_u16(struct rd *r)
{
	uint16_t v;

	if (r->len - r->off < 2) {
		r->bad = true;
		return 0;
	}
	v = (uint16_t)(r->p[r->off] | r->p[r->off + 1] << 8);
	r->off += 2;
	return v;
}

static char *get_str(struct rd *r)
{
	uint32_t n = get_u32(r);
	char *s;

	if (r->bad || n > KILN_MAX_STRING || r->len - r->off < n) {
		r->bad = true;
		return NULL;
	}
	s = strndup((const char *)r->p + r->off, n);
	if (!s || strlen(s) != n) {
		r->bad = true;
		free(s);
		return NULL;
	}
	r->off += n;
	return s;
}

static char **get_strv(struct rd *r)
{
	uint32_t n = get_u32(r);
	char **v;

	if (r->bad || n > KILN_MAX_ARGS) {
		r->bad = true;
		return NULL;
	}
	v = calloc(n + 1, sizeof(*v));
	for (uint32_t i = 0; v && i < n && !r->bad; i++)
		v[i] = get_str(r);
	return v;
}

/* ---------------------------------------------------------------- file streams */

static void put_stat(struct msg *m, const struct stat *st, const char *name, const char *target)
{
	put_u32(m, st->st_mode);
	put_u64(m, (uint64_t)st->st_size);
	put_u64(m, (uint64_t)st->st_mtime);
	put_str(m, name, strlen(name));
	put_str(m, target, strlen(target));
	put_u32(m, (uint32_t)st->st_mtim.tv_nsec);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static int mkdir_parents(char *path, mode_t mode)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	if (mkdir(path, mode) && errno != EEXIST)
		return -1;
	return 0;
}

static void file_stream(int fd)
{
	uint8_t *buf = NULL;
	uint16_t type;
	uint32_t len, op;
	struct rd r;
	char *path, *path2 = NULL;
	uint32_t arg = 0;
	struct stat st;
	struct msg m = {0};

	if (recv_frame(fd, &type, &buf, &len) || type != KILN_MSG_FILE_REQUEST)
		return;
	r = (struct rd){.p = buf, .len = len};
	op = get_u32(&r);
	path = get_str(&r);
	if (op == KILN_FILE_WRITE || op == KILN_FILE_MKDIR || op == KILN_FILE_REMOVE)
		arg = get_u32(&r);
	else if (op == KILN_FILE_RENAME)
		path2 = get_str(&r);
	if (r.bad || r.off != r.len || !path) {
		send_error(fd, EPROTO, "bad file request");
		return;
	}
	switch (op) {
	case KILN_FILE_READ: {
		int f = open(path, O_RDONLY | O_CLOEXEC);
		char *dup = strdup(path);
		static char chunk[KILN_DATA_CHUNK];
		ssize_t n;

		if (f < 0 || fstat(f, &st)) {
			send_error(fd, errno, path);
			return;
		}
		put_stat(&m, &st, basename(dup), "");
		send_msg(fd, KILN_MSG_STAT, &m);
		while (!S_ISDIR(st.st_mode) && (n = read(f, chunk, sizeof(chunk))) > 0)
			if (send_frame(fd, KILN_MSG_DATA, chunk, (size_t)n))
				return;
		send_frame(fd, KILN_MSG_DONE, NULL, 0);
		return;
	}
	case KILN_FILE_WRITE: {
		char *dir = strdup(path), *base = strdup(path), tmp[PATH_MAX];
		int f;

		snprintf(tmp, sizeof(tmp), "%s/.%s.fake-tmp-%d", dirname(dir), basename(base),
		         getpid());
		f = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, arg & 07777);
		if (f < 0) {
			send_error(fd, errno, path);
			return;
		}
		for (;;) {
			free(buf);
			buf = NULL;
			if (recv_frame(fd, &type, &buf, &len)) {
				unlink(tmp); /* a broken stream leaves path untouched */
				return;
			}
			if (type == KILN_MSG_DONE)
				break;
			if (type != KILN_MSG_DATA || len > KILN_DATA_CHUNK ||
			    write_full(f, buf, len)) {
				int e = type == KILN_MSG_DATA ? errno : EPROTO;

				unlink(tmp);
				send_error(fd, e, path);
				return;
			}
		}
		fchmod(f, arg & 07777);
		if (close(f) || rename(tmp, path)) {
			unlink(tmp);
			send_error(fd, errno, path);
			return;
		}
		send_frame(fd, KILN_MSG_DONE, NULL, 0);
		return;
	}
	case KILN_FILE_LIST: {
		DIR *d = opendir(path);
		struct dirent *e;

		if (!d) {
			send_error(fd, errno, path);
			return;
		}
		while ((e = readdir(d))) {
			char sub[PATH_MAX], target[PATH_MAX] = "";

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			if (lstat(sub, &st))
				continue;
			if (S_ISLNK(st.st_mode)) {
				ssize_t n = readlink(sub, target, sizeof(target) - 1);

				target[n > 0 ? n : 0] = 0;
			}
			put_stat(&m, &st, e->d_name, target);
			if (send_msg(fd, KILN_MSG_ENTRY, &m))
				break;
		}
		closedir(d);
		send_frame(fd, KILN_MSG_DONE, NULL, 0);
		return;
	}
	case KILN_FILE_STAT: {
		char *dup = strdup(path);

		if (stat(path, &st)) {
			send_error(fd, errno, path);
			return;
		}
		put_stat(&m, &st, basename(dup), "");
		send_msg(fd, KILN_MSG_STAT, &m);
		return;
	}
	case KILN_FILE_MKDIR:
		if (mkdir_parents(path, arg & 07777)) {
			send_error(fd, errno, path);
			return;
		}
		break;
	case KILN_FILE_REMOVE:
		if (arg ? nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) : remove(path)) {
			send_error(fd, errno, path);
			return;
		}
		break;
	case KILN_FILE_RENAME:
		if (rename(path, path2)) {
			send_error(fd, errno, path);
			return;
		}
		break;
	default:
		send_error(fd, EINVAL, "unknown file operation");
		return;
	}
	send_frame(fd, KILN_MSG_DONE, NULL, 0);
}

/* ---------------------------------------------------------------- exec and pty streams */

struct proc {
	pid_t pid;
	int in, out, err; /* in: -1 once closed; pty: in == out == master */
	bool pty, in_eof;
	struct msg pending; /* stdin not yet written */
	size_t pending_off;
};

static int spawn(struct proc *p, char **argv, char **env, const char *cwd, uint16_t cols,
                 uint16_t rows)
{
	int inp[2], outp[2], errp[2], report[2], master = -1, e = 0;
	struct winsize wz = {.ws_col = cols ? cols : 80, .ws_row = rows ? rows : 24};
	pid_t pid;

	if (pipe2(report, O_CLOEXEC))
		return -errno;
	if (p->pty) {
		pid = forkpty(&master, NULL, NULL, &wz);
	} else {
		if (pipe(inp) || pipe(outp) || pipe(errp))
			return -errno;
		pid = fork();
	}
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(report[0]);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		/* The VM is gone when its VMM is: take the command along. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (!p->pty) {
			setsid();
			dup2(inp[0], 0);
			dup2(outp[1], 1);
			dup2(errp[1], 2);
			close(inp[0]);
			close(inp[1]);
			close(outp[0]);
			close(outp[1]);
			close(errp[0]);
			close(errp[1]);
		}
		if (cwd && *cwd && chdir(cwd)) {
			e = errno;
			if (write(report[1], &e, sizeof(e)) < 0)
				_exit(126);
			_exit(126);
		}
		execvpe(argv[0], argv, env);
		e = errno;
		if (write(report[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(report[1]);
	if (read(report[0], &e, sizeof(e)) == sizeof(e)) {
		close(report[0]);
		waitpid(pid, NULL, 0);
		if (!p->pty) {
			close(inp[0]);
			close(inp[1]);
			close(outp[0]);
			close(outp[1]);
			close(errp[0]);
			close(errp[1]);
		} else {
			close(master);
		}
		return -e;
	}
	close(report[0]);
	p->pid = pid;
	if (p->pty) {
		p->in = p->out = master;
		p->err = -1;
	} else {
		close(inp[0]);
		close(outp[1]);
		close(errp[1]);
		p->in = inp[1];
		p->out = outp[0];
		p->err = errp[0];
		fcntl(p->in, F_SETFL, O_NONBLOCK);
	}
	fcntl(p->out, F_SETFL, O_NONBLOCK);
	if (p->err >= 0)
		fcntl(p->err, F_SETFL, O_NONBLOCK);
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read what is there now from an output fd; -1 at its end. */
static int pump(int conn, int *fd, uint16_t type)
{
	static char chunk[KILN_DATA_CHUNK];

	for (;;) {
		ssize_t n = read(*fd, chunk, sizeof(chunk));

		if (n > 0) {
			if (send_frame(conn, type, chunk, (size_t)n))
				return -2;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		/* EOF, or EIO from a pty whose last slave fd closed */
		close(*fd);
		*fd = -1;
		return -1;
	}
}

static void exec_stream(int conn, bool pty, int exit_fd)
{
	uint8_t *buf = NULL;
	uint16_t type, cols, rows;
	uint32_t len, uid, timeout_ms, flags = 0;
	struct rd r;
	char **argv, **env, *cwd;
	struct proc p = {.pty = pty, .in = -1, .out = -1, .err = -1};
	struct msg m = {0};
	int64_t deadline = 0;
	int status = 0, rc, pidfd;
	bool exited = false;

	if (recv_frame(conn, &type, &buf, &len) || type != KILN_MSG_START)
		return;
	r = (struct rd){.p = buf, .len = len};
	argv = get_strv(&r);
	env = get_strv(&r);
	cwd = get_str(&r);
	uid = get_u32(&r);
	timeout_ms = get_u32(&r);
	cols = get_u16(&r);
	rows = get_u16(&r);
	(void)uid;
	if (r.bad || r.off != r.len || !argv || !argv[0]) {
		send_error(conn, EPROTO, "bad START");
		return;
	}
	if (!strcmp(argv[0], "kiln-fake-exit")) {
		unsigned char code = (unsigned char)(argv[1] ? atoi(argv[1]) : 0);

		if (write(exit_fd, &code, 1) != 1)
			_exit(98);
		pause();
	}
	rc = spawn(&p, argv, env, cwd, cols, rows);
	if (rc) {
		send_error(conn, -rc, argv[0]);
		return;
	}
	put_u32(&m, (uint32_t)p.pid);
	send_msg(conn, KILN_MSG_STARTED, &m);
	pidfd = pidfd_open(p.pid, 0); /* readable when the command exits */
	if (timeout_ms)
		deadline = mono_ms() + timeout_ms;

	while (p.out >= 0 || p.err >= 0 || !exited) {
		struct pollfd pf[5];
		int n = 0, ic = -1, io = -1, ie = -1, iw = -1, wait_ms = 1000;

		if (p.pending.len - p.pending_off < (1u << 20))
			pf[ic = n++] = (struct pollfd){.fd = conn, .events = POLLIN};
		if (p.out >= 0)
			pf[io = n++] = (struct pollfd){.fd = p.out, .events = POLLIN};
		if (p.err >= 0)
			pf[ie = n++] = (struct pollfd){.fd = p.err, .events = POLLIN};
		if (!p.pty && p.in >= 0 && p.pending.len > p.pending_off)
			pf[iw = n++] = (struct pollfd){.fd = p.in, .events = POLLOUT};
		if (!exited && pidfd >= 0)
			pf[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		if (deadline) {
			int64_t left = deadline - mono_ms();

			wait_ms = left < 0 ? 0 : left < wait_ms ? (int)left : wait_ms;
		}
		if (poll(pf, (nfds_t)n, wait_ms) < 0 && errno != EINTR)
			break;
		if (deadline && mono_ms() >= deadline && !exited) {
			kill(-p.pid, SIGKILL);
			flags |= KILN_EXIT_TIMEOUT;
			deadline = 0;
		}
		if (ic >= 0 && pf[ic].revents) {
			free(buf);
			buf = NULL;
			if (recv_frame(conn, &type, &buf, &len)) {
				kill(-p.pid, SIGKILL); /* the host went away */
				waitpid(p.pid, NULL, 0);
				return;
			}
			r = (struct rd){.p = buf, .len = len};
			switch (type) {
			case KILN_MSG_STDIN:
				if (p.pty) {
					if (write_full(p.in, buf, len))
						break;
				} else if (p.in >= 0) {
					put(&p.pending, buf, len);
				}
				break;
			case KILN_MSG_STDIN_EOF:
				if (p.pty) {
					struct termios t;
					char eof = 4;

					if (!tcgetattr(p.in, &t))
						eof = (char)t.c_cc[VEOF];
					if (write(p.in, &eof, 1) < 0)
						break;
				} else {
					p.in_eof = true;
				}
				break;
			case KILN_MSG_SIGNAL: {
				uint32_t sig = get_u32(&r);

				if (!r.bad)
					kill(-p.pid, (int)sig);
				break;
			}
			case KILN_MSG_RESIZE: {
				struct winsize wz = {0};

				wz.ws_col = get_u16(&r); /* in this order: cols, rows */
				wz.ws_row = get_u16(&r);

				if (p.pty && !r.bad)
					ioctl(p.in, TIOCSWINSZ, &wz);
				break;
			}
			default:
				send_error(conn, EPROTO, "unexpected frame");
				kill(-p.pid, SIGKILL);
				waitpid(p.pid, NULL, 0);
				return;
			}
		}
		if (iw >= 0 && pf[iw].revents) {
			ssize_t w =
			    write(p.in, p.pending.p + p.pending_off, p.pending.len - p.pending_off);

			if (w > 0)
				p.pending_off += (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				p.pending_off = p.pending.len; /* EPIPE: nobody reads */
		}
		if (!p.pty && p.in >= 0 && p.in_eof && p.pending_off == p.pending.len) {
			close(p.in);
			p.in = -1;
		}
		if (io >= 0 && pf[io].revents && pump(conn, &p.out, KILN_MSG_STDOUT) == -2)
			return;
		if (ie >= 0 && pf[ie].revents && pump(conn, &p.err, KILN_MSG_STDERR) == -2)
			return;
		if (!exited && waitpid(p.pid, &status, WNOHANG) == p.pid) {
			exited = true;
			/* What the command wrote before it exited is in the pipes:
			 * drain it; a background child holding them open must not
			 * keep the exit status back. */
			if (p.out >= 0 && pump(conn, &p.out, KILN_MSG_STDOUT) == -2)
				return;
			if (p.err >= 0 && pump(conn, &p.err, KILN_MSG_STDERR) == -2)
				return;
			if (p.out >= 0 && !p.pty) {
				close(p.out);
				p.out = -1;
			}
			if (p.err >= 0) {
				close(p.err);
				p.err = -1;
			}
			if (p.pty && p.out >= 0) {
				close(p.out);
				p.out = -1;
			}
		}
	}
	put_u32(&m, WIFEXITED(status) ? (uint32_t)WEXITSTATUS(status) : (uint32_t)-1);
	put_u32(&m, WIFSIGNALED(status) ? (uint32_t)WTERMSIG(status) : 0);
	put_u32(&m, flags);
	send_msg(conn, KILN_MSG_EXIT, &m);
}

/* ---------------------------------------------------------------- connections */

void serve_builtin(int conn, int exit_fd)
{
	uint8_t *buf = NULL;
	uint16_t type;
	uint32_t len, kind;
	struct rd r;
	struct msg m = {0};

	if (recv_frame(conn, &type, &buf, &len) || type != KILN_MSG_HELLO)
		return;
	r = (struct rd){.p = buf, .len = len};
	if (get_u32(&r) != KILN_AGENT_VERSION) {
		send_error(conn, EPROTONOSUPPORT, "protocol version");
		return;
	}
	kind = get_u32(&r);
	put_u32(&m, KILN_AGENT_VERSION);
	put_u32(&m, 0);
	send_msg(conn, KILN_MSG_HELLO, &m);
	switch (kind) {
	case KILN_STREAM_INFO:
		put_str(&m, "fake-vmm-0.1", 12);
		put_u64(&m, 0);
		put_u64(&m, 262144);
		put_u64(&m, 131072);
		put_u32(&m, 1);
		send_msg(conn, KILN_MSG_INFO, &m);
		break;
	case KILN_STREAM_EXEC:
	case KILN_STREAM_PTY:
		exec_stream(conn, kind == KILN_STREAM_PTY, exit_fd);
		break;
	case KILN_STREAM_FILE:
		file_stream(conn);
		break;
	default:
		send_error(conn, EINVAL, "unknown stream kind");
	}
}
