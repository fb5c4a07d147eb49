/* SPDX-License-Identifier: MIT */
/*
 * Starting a jailed VMM as pid 1 of a pid namespace of its own, as
 * Firecracker's jailer does: kiln-vmm then needs no waiting parent outside
 * the namespace (vmm/jail/jail.c), and our pidfd ends only when the VMM and
 * everything in its namespace have, so its connections are closed by the
 * time we see it gone. The child does only what is safe between clone and
 * exec (no allocation); an exec that fails says why through a pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm_proc.h"

static void __attribute__((noreturn))
child(const char *path, char *const argv[], const char *dir, int log_fd, int err_fd)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	int e, null;

	for (int s = 1; s < 65; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL);
	sigemptyset(&none);
	/* Own process group: a Ctrl-C on kilnd's terminal must not reach the
	 * VMs, and a kill of the group takes all of a VMM's processes. */
	if (setpgid(0, 0) < 0 || (dir && chdir(dir) < 0))
		goto fail;
	null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
		goto fail;
	if (err_fd < 3 || dup2(err_fd, 3) < 0)
		goto fail;
	syscall(SYS_close_range, 4, ~0U, 0);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(path, argv, environ);
fail:
	e = errno;
	if (write(3, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int vmm_clone(const char *path, char *const argv[], const char *dir, int log_fd, pid_t *pid)
{
	struct clone_args ca = {.flags = CLONE_NEWPID, .exit_signal = SIGCHLD};
	int p[2], e = 0;
	ssize_t n;
	long r;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r < 0) {
		e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (r == 0) {
		close(p[0]);
		child(path, argv, dir, log_fd, p[1]);
	}
	close(p[1]);
	while ((n = read(p[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(p[0]);
	if (n == (ssize_t)sizeof(e)) {
		waitpid((pid_t)r, NULL, 0);
		return -e;
	}
	*pid = (pid_t)r;
	return 0;
}
