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
 * allocation, nothing written but its own stack and errno); an exec that
 * fails says why through a pipe.
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
	int log_fd, err_fd;
};

static int child(void *arg)
{
	const struct child_args *c = arg;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	int e, null;

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
	execve(c->path, c->argv, environ);
fail:
	e = errno;
	if (write(3, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int vmm_clone(const char *path, char *const argv[], const char *dir, int log_fd, pid_t *pid)
{
	struct child_args c = {.path = path, .argv = argv, .dir = dir, .log_fd = log_fd};
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
	while ((n = read(p[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(p[0]);
	if (n == (ssize_t)sizeof(e)) {
		waitpid(r, NULL, 0);
		return -e;
	}
	*pid = r;
	return 0;
}
