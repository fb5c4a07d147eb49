/* SPDX-License-Identifier: MIT */
/* Streams to the VM's agent through kiln-vmm's hybrid vsock socket: we send
 * "CONNECT <port>\n" and get "OK <n>\n" once the guest has accepted, or end
 * of file if it refused (vmm/virtio/vsock.c). The VMM waits for the guest as
 * long as we do, so the three ways a dial fails are told apart: nothing
 * listens on the socket (the VMM is not running), no OK before our
 * deadline (the guest did not run in time: a loaded host, or a hung
 * guest), or a refusal (nothing listens on the agent's port: the agent has
 * exited, or its backlog was full for a moment, which is why a refusal is
 * tried again, a few times with backoff, while time remains). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_proto.h"
#include "shim.h"

#define DIAL_TRIES      5  /* refusals before we believe them */
#define DIAL_BACKOFF_MS 20 /* the wait after the first, doubled after each */

int vm_connect_unix(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int vm_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int64_t vm_mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Milliseconds left before deadline (at least 0); -1: no deadline. */
static int left_ms(int64_t deadline)
{
	int64_t now;

	if (deadline < 0)
		return -1;
	now = vm_mono_ms();
	return now >= deadline ? 0 : (int)(deadline - now > 1 << 30 ? 1 << 30 : deadline - now);
}

/* The VMM's answer to our CONNECT: 0 for OK, -ECONNREFUSED for end of
 * file (the guest refused), -ETIMEDOUT, -EPROTO for anything else. */
static int read_answer(int fd, int64_t deadline)
{
	char line[32];
	size_t n = 0;

	while (n < sizeof(line) - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, left_ms(deadline));
		ssize_t got;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		got = read(fd, line + n, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return errno == ECONNRESET ? -ECONNREFUSED : -errno;
		if (got == 0)
			return -ECONNREFUSED;
		if (line[n++] == '\n')
			break;
	}
	line[n] = 0;
	return strncmp(line, "OK ", 3) ? -EPROTO : 0;
}

/* One try: the stream's fd, or -EHOSTDOWN when no VMM listens. */
static int dial_once(const char *vsock, unsigned port, int64_t deadline)
{
	char line[32];
	int fd = vm_connect_unix(vsock), len, err;

	if (fd == -ENOENT || fd == -ECONNREFUSED)
		return -EHOSTDOWN;
	if (fd < 0)
		return fd;
	len = snprintf(line, sizeof(line), "CONNECT %u\n", port);
	err = vm_write_all(fd, line, (size_t)len);
	/* The VMM closes at once when it is at its connection limit. */
	if (err == -EPIPE || err == -ECONNRESET)
		err = -ECONNREFUSED;
	if (!err)
		err = read_answer(fd, deadline);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int vm_dial_port(const char *vsock, unsigned port, int ms)
{
	int64_t deadline = ms < 0 ? -1 : vm_mono_ms() + ms;
	int backoff = DIAL_BACKOFF_MS, fd;

	for (unsigned tries = 1;; tries++) {
		struct timespec pause;
		int left;

		fd = dial_once(vsock, port, deadline);
		if (fd != -ECONNREFUSED || tries == DIAL_TRIES)
			return fd;
		left = left_ms(deadline);
		if (left == 0)
			return fd;
		if (left > 0 && backoff > left)
			backoff = left;
		pause = (struct timespec){backoff / 1000, (long)(backoff % 1000) * 1000000};
		while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
			;
		backoff *= 2;
	}
}

void vm_dial_explain(int err, const char *vsock, int ms, char *msg, size_t n)
{
	switch (-err) {
	case EHOSTDOWN:
		snprintf(msg, n, "the VM is not running (nothing listens on its vsock socket %s)",
		         vsock);
		break;
	case ETIMEDOUT:
		snprintf(msg, n,
		         "the guest did not take the connection within %d.%d s (it is not "
		         "running, or not getting the CPU: a loaded host or a hung guest; see "
		         "console.log)",
		         ms / 1000, ms % 1000 / 100);
		break;
	case ECONNREFUSED:
		snprintf(msg, n,
		         "the guest refused the connection, also when tried again: nothing "
		         "listens on the agent's port (has the agent exited? see console.log)");
		break;
	case EPROTO:
		snprintf(msg, n, "kiln-vmm answered the CONNECT on %s with something else than OK",
		         vsock);
		break;
	default:
		snprintf(msg, n, "%s", strerror(-err));
	}
}

int vm_dial(struct shim *s, uint32_t kind, int ms)
{
	struct buf b = {0};
	int fd = vm_dial_port(s->vm.vsock, KILN_AGENT_PORT, ms), err;

	if (fd < 0)
		return fd;
	err = agent_msg_hello(&b, kind, 0);
	if (!err)
		err = vm_write_all(fd, buf_head(&b), buf_avail(&b));
	buf_free(&b);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}
