/* SPDX-License-Identifier: MIT */
/*
 * Starting a jailed VMM as pid 1 of a pid namespace of its own, as
 * Firecracker's jailer does: kiln-vmm then needs no waiting parent outside
 * the namespace (vmm/jail/jail.c), and our pidfd ends only when the VMM and
 * everything in its namespace have, so its connections are closed by the
 * time we see it gone. The child shares our memory until its exec
 * (CLONE_VM | CLONE_VFORK, as posix_spawn does): a fork would copy all of
 * kilnd's page tables only for the exec to drop them, a cost per clone
 * (issue 21). It does only what is safe between clone and exec (no
 * allocation, nothing written but its own stack and errno), and writes
 * the caller's files first (the shim's: the pod's cgroups, oom_score_adj);
 * an exec or write that fails says why through a pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm_proc.h"

#define CHILD_STACK (64 * 1024)

struct child_args {
	const char *path;
	char *const *argv;
	const char *dir;
	struct vmm_writes *pre;
	int log_fd, err_fd;
};

/* What a failed child says through the pipe. */
struct child_err {
	int err;
	size_t failed; /* which of pre, or pre->n: its exec */
};

int vmm_writes_apply(struct vmm_writes *w)
{
	for (w->failed = 0; w->failed < w->n; w->failed++) {
		const struct vmm_write *f = &w->v[w->failed];
		size_t len = strlen(f->val);
		int fd = open(f->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		ssize_t r;

		if (fd < 0)
			return -errno;
		r = write(fd, f->val, len);
		if (r != (ssize_t)len) {
			int e = r < 0 ? errno : EIO;

			close(fd);
			return -e;
		}
		close(fd);
	}
	return 0;
}

static int child(void *arg)
{
	const struct child_args *c = arg;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	struct child_err ce = {0, c->pre ? c->pre->n : 0};
	sigset_t none;
	int null;

	/* Its own handlers (no CLONE_SIGHAND): ours are untouched. */
	for (int s = 1; s < 65; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL);
	sigemptyset(&none);
	/* Own process group: a Ctrl-C on kilnd's terminal must not reach the
	 * VMs, and a kill of the group takes all of a VMM's processes. */
	if (setpgid(0, 0) < 0 || (c->dir && chdir(c->dir) < 0))
		goto fail;
	null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(c->log_fd, 1) < 0 || dup2(c->log_fd, 2) < 0)
		goto fail;
	if (c->err_fd < 3 || dup2(c->err_fd, 3) < 0)
		goto fail;
	syscall(SYS_close_range, 4, ~0U, 0);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* a copy on our stack: pre is the parent's memory */
	if (c->pre && c->pre->n) {
		struct vmm_writes w = *c->pre;

		if ((ce.err = -vmm_writes_apply(&w))) {
			ce.failed = w.failed;
			goto report;
		}
	}
	execve(c->path, c->argv, environ);
fail:
	ce.err = errno;
report:
	if (write(3, &ce, sizeof(ce)) < 0)
		_exit(127);
	_exit(127);
}

int vmm_clone(const char *path, char *const argv[], const char *dir, int log_fd,
              struct vmm_writes *pre, pid_t *pid)
{
	struct child_args c = {
	    .path = path, .argv = argv, .dir = dir, .pre = pre, .log_fd = log_fd};
	struct child_err ce;
	sigset_t all, old;
	int p[2], e = 0;
	void *stack;
	ssize_t n;
	pid_t r;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
	             MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	c.err_fd = p[1];
	/* No handler of ours may run in the child, on its stack in our
	 * memory, before it has reset them: it unblocks them itself. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = clone(child, (char *)stack + CHILD_STACK,
	          CLONE_VM | CLONE_VFORK | CLONE_NEWPID | SIGCHLD, &c);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* Back only once the child has exec'd or exited. */
	munmap(stack, CHILD_STACK);
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		return -e;
	}
	if (pre)
		pre->failed = pre->n;
	while ((n = read(p[0], &ce, sizeof(ce))) < 0 && errno == EINTR)
		;
	close(p[0]);
	if (n == (ssize_t)sizeof(ce)) {
		waitpid(r, NULL, 0);
		if (pre && ce.failed < pre->n)
			pre->failed = ce.failed;
		return ce.err ? -ce.err : -EIO;
	}
	*pid = r;
	return 0;
}
