/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: starting a command. The child runs between vfork and execve
 * only here: new session, signals back to their defaults, stdio (pipes or a
 * terminal, given to the user), the user's groups, gid and uid, working
 * directory, then a PATH search with the command's own environment. A failure before execve is written to the CLOEXEC status
 * pipe as a native int errno followed by a message; success closes the pipe
 * with nothing written, so the parent learns the outcome from one read.
 *
 * vfork, not fork: the child borrows the agent's memory until it execs, so
 * starting a command copies nothing (in a kiln guest a fork copies the
 * agent's pages and page tables, most of the cost of an exec request). The
 * child therefore writes no memory the agent uses after vfork returns (its
 * own stack frames lie below the agent's), and signals stay blocked until
 * it has put every handler back to the default: until then an agent
 * handler would run on the agent's memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "agent.h"
#include "users.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define DEFAULT_TERM "TERM=xterm-256color"

/* The dispositions the agent changes (see main.c); the rest are default already. */
static const int agent_signals[] = {SIGPIPE, SIGCHLD, SIGTERM, SIGINT,
                                    SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2};

static __attribute__((noreturn)) void child_fail(int fd, int err, const char *what, const char *arg)
{
	char buf[SPAWN_STATUS_MAX];
	int n;

	memcpy(buf, &err, sizeof(err));
	n = snprintf(buf + sizeof(err), sizeof(buf) - sizeof(err), "%s '%s': %s", what, arg,
	             strerror(err));
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf) - sizeof(err))
		n = sizeof(buf) - sizeof(err) - 1;
	if (write(fd, buf, sizeof(err) + n) < 0) {
		/* nobody to tell */
	}
	_exit(127);
}

static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* execvpe() with the command's environment; returns the errno to report.
 * Each directory is probed with access() first: an execve that fails
 * still copies the arguments and environment (in a kiln guest ~1.5 us a
 * directory, 7 for the first), and `true` is in the sixth of DEFAULT_PATH. */
static int exec_search(char *const *argv, char *const *envp)
{
	const char *file = argv[0], *path, *seg, *end;
	size_t flen = strlen(file);
	bool eacces = false;
	char buf[4096];

	if (!*file)
		return ENOENT;
	if (strchr(file, '/')) {
		execve(file, argv, envp);
		return errno;
	}
	path = env_get(envp, "PATH");
	if (!path)
		path = DEFAULT_PATH;
	for (seg = path;; seg = end + 1) {
		end = strchrnul(seg, ':');
		size_t dlen = end - seg;
		if (dlen + 1 + flen < sizeof(buf)) {
			memcpy(buf, seg, dlen);
			if (!dlen)
				buf[dlen++] = '.'; /* an empty entry means the working directory */
			buf[dlen] = '/';
			memcpy(buf + dlen + 1, file, flen + 1);
			if (access(buf, X_OK) == 0)
				execve(buf, argv, envp);
			switch (errno) {
			case EACCES:
				eacces = true;
				break;
			case ENOENT:
			case ENOTDIR:
			case ENAMETOOLONG:
			case ELOOP:
				break;
			default:
				return errno;
			}
		}
		if (!*end)
			break;
	}
	return eacces ? EACCES : ENOENT;
}

static __attribute__((noreturn)) void child(const struct spawn_req *r)
{
	struct sigaction sa = {.sa_handler = SIG_DFL};
	sigset_t none;
	int sfd = r->status_fd;
	char num[16];

	/* Signals are blocked (see spawn): reset, then unblock. */
	for (size_t i = 0; i < sizeof(agent_signals) / sizeof(agent_signals[0]); i++)
		sigaction(agent_signals[i], &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	if (setsid() < 0)
		child_fail(sfd, errno, "cannot start a session for", r->argv[0]);
	if (r->tty) {
		struct winsize ws = {.ws_row = r->rows, .ws_col = r->cols};
		int fd = open(r->tty, O_RDWR);

		if (fd < 0)
			child_fail(sfd, errno, "cannot open terminal", r->tty);
		if (ioctl(fd, TIOCSCTTY, 0) < 0)
			child_fail(sfd, errno, "cannot make the controlling terminal", r->tty);
		ioctl(fd, TIOCSWINSZ, &ws); /* a terminal without a size still works */
		for (int i = 0; i < 3; i++)
			if (dup2(fd, i) < 0)
				child_fail(sfd, errno, "cannot set up stdio on", r->tty);
		if (fd > 2)
			close(fd);
	} else {
		for (int i = 0; i < 3; i++) {
			/* dup2 onto itself would keep FD_CLOEXEC */
			int ok = r->fd[i] == i ? fcntl(i, F_SETFD, 0) : dup2(r->fd[i], i);
			if (ok < 0)
				child_fail(sfd, errno, "cannot set up stdio for", r->argv[0]);
		}
	}
	/* as root still: a hard limit may go up only before the uid change */
	for (uint32_t i = 0; i < r->n_rlimits; i++) {
		struct rlimit l = {.rlim_cur = r->rlimits[i].soft, .rlim_max = r->rlimits[i].hard};

		snprintf(num, sizeof(num), "%u", r->rlimits[i].resource);
		if (setrlimit((int)r->rlimits[i].resource, &l) < 0)
			child_fail(sfd, errno, "cannot set rlimit", num);
	}
	/* as root still; the terminal and stdio were opened outside it; the
	 * terminal's node is linked in too, for ttyname() */
	if (r->root && r->tty && !strncmp(r->tty, "/dev/pts/", 9)) {
		char at[4200];
		struct stat st;

		snprintf(at, sizeof(at), "%s/dev", r->root);
		mkdir(at, 0755);
		strcat(at, "/pts");
		mkdir(at, 0755);
		snprintf(at, sizeof(at), "%s%s", r->root, r->tty);
		unlink(at);
		/* another file system (a host running the agent): a node of its own */
		if (link(r->tty, at) < 0 && (errno != EXDEV || stat(r->tty, &st) < 0 ||
		                             mknod(at, st.st_mode, st.st_rdev) < 0))
			child_fail(sfd, errno, "cannot link the terminal into", r->root);
	}
	if (r->root && chroot(r->root) < 0)
		child_fail(sfd, errno, "cannot change root to", r->root);
	if (r->user && r->user->uid) {
		const struct agent_user *u = r->user;

		/* the terminal is the user's, as login(1) makes it */
		if (r->tty && fchown(0, u->uid, u->gid) < 0)
			child_fail(sfd, errno, "cannot give the terminal to", u->name);
		if (setgroups((size_t)u->ngroups, u->groups) < 0 || setgid(u->gid) < 0 ||
		    setuid(u->uid) < 0)
			child_fail(sfd, errno, "cannot switch to user", u->name);
	} else if (!r->user && r->uid) {
		snprintf(num, sizeof(num), "%u", r->uid);
		if (setgroups(0, NULL) < 0 && errno != ENOSYS)
			child_fail(sfd, errno, "cannot drop supplementary groups for uid", num);
		if (setgid(r->uid) < 0 || setuid(r->uid) < 0)
			child_fail(sfd, errno, "cannot switch to uid", num);
	}
	if (chdir(r->cwd) < 0 && (!r->cwd_default || chdir("/") < 0))
		child_fail(sfd, errno, "cannot change directory to", r->cwd);
	child_fail(sfd, exec_search(r->argv, r->envp), "cannot run", r->argv[0]);
}

/* Start a child that runs r; returns its pid or -errno. */
pid_t spawn(const struct spawn_req *r)
{
	sigset_t all, old;
	pid_t pid;
	int err, ns;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	ns = r->ns_join ? pidns_join(r->ns_of) : pidns_enter(r->ns_of);
	if (ns < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return ns;
	}
	pid = vfork();
	if (pid == 0)
		child(r);
	err = errno;
	pidns_leave(ns);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return pid < 0 ? -err : pid;
}

static size_t env_name_len(const char *e)
{
	return strchrnul(e, '=') - e;
}

static void env_set(char **v, size_t *n, char *e)
{
	size_t len = env_name_len(e);

	for (size_t i = 0; i < *n; i++) {
		if (env_name_len(v[i]) == len && !strncmp(v[i], e, len)) {
			v[i] = e;
			return;
		}
	}
	v[(*n)++] = e;
}

/*
 * The command's environment: the agent's own (PATH, HOME, LANG as set at
 * boot), TERM=xterm-256color for a pty, the user's HOME, USER and LOGNAME
 * when the request names one, then the request's entries, each
 * replacing an earlier one of the same name.
 * The vector points into environ and req_env. It is the agent's own, reused
 * by the next spawn (do not free it): a fresh one per command made musl's
 * allocator map and unmap a page around every spawn, ~100 us in a guest.
 */
char **spawn_env(char *const *req_env, bool pty, const struct agent_user *user)
{
	extern char **environ;
	static char **vec;
	static size_t cap;
	size_t n = 0, max = 5;

	for (char **e = environ; *e; e++)
		max++;
	for (char *const *e = req_env; *e; e++)
		max++;
	if (max > cap) {
		char **v = realloc(vec, max * sizeof(*v));

		if (!v)
			return NULL;
		vec = v;
		cap = max;
	}
	for (char **e = environ; *e; e++)
		if (strchr(*e, '='))
			env_set(vec, &n, *e);
	if (pty)
		env_set(vec, &n, (char *)DEFAULT_TERM);
	if (user) {
		env_set(vec, &n, (char *)user->env_home);
		env_set(vec, &n, (char *)user->env_user);
		env_set(vec, &n, (char *)user->env_logname);
	}
	for (char *const *e = req_env; *e; e++)
		env_set(vec, &n, *e);
	vec[n] = NULL;
	return vec;
}
