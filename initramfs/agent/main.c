/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: PID 1 of a kiln guest. Serves kilnd over virtio-vsock with the
 * protocol of include/kiln/agent.h, one stream per connection.
 *
 *   kiln-agent [--listen vsock:PORT | --listen unix:PATH] [--no-init]
 *
 * One thread, one poll(2) loop (the first readiness interface the guest
 * kernel has). SIGCHLD reaches the loop through a self-pipe; timeouts are
 * poll's timeout, taken from the nearest stream deadline. Every descriptor
 * is non-blocking, and every queue is bounded: output is only produced
 * while a connection's queue is below AGENT_OUT_LIMIT.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

/* <linux/vm_sockets.h>, which musl does not ship */
struct sockaddr_vm {
	sa_family_t svm_family;
	unsigned short svm_reserved1;
	unsigned int svm_port;
	unsigned int svm_cid;
	unsigned char svm_flags;
	unsigned char svm_zero[3];
};
#define VMADDR_CID_ANY -1U

/* A signal handler can reach only static storage. */
static int sig_wfd = -1;
static pid_t agent_pid;

int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void agent_log(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "kiln-agent: %s\n", msg);
}

static void on_signal(int sig)
{
	int saved = errno;
	char b = sig == SIGCHLD ? 'C' : 'T';

	/* A child between fork and its signal reset must not poke the agent. */
	if (getpid() == agent_pid && write(sig_wfd, &b, 1) < 0) {
		/* the pipe is full: the loop wakes up anyway */
	}
	errno = saved;
}

static int setup_signals(struct agent *a, bool pid1)
{
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
	struct sigaction ign = {.sa_handler = SIG_IGN};
	int p[2];

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	a->sig_r = p[0];
	sig_wfd = p[1];
	agent_pid = getpid();
	sigaction(SIGPIPE, &ign, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	if (pid1) {
		/* The kernel may not spare init from default-action signals. */
		static const int ignored[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
		for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
			sigaction(ignored[i], &ign, NULL);
	} else {
		/* Tests stop the agent with SIGTERM: exit cleanly, killing the commands. */
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
	}
	return 0;
}

static int listen_on(struct agent *a, const char *spec)
{
	int type = SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC;
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int fd;

	if (!strncmp(spec, "vsock:", 6)) {
		struct sockaddr_vm *vm = (struct sockaddr_vm *)&ss;
		char *end;
		unsigned long port = strtoul(spec + 6, &end, 10);
		if (!spec[6] || *end || port > UINT_MAX)
			return -EINVAL;
		vm->svm_family = AF_VSOCK;
		vm->svm_port = port;
		vm->svm_cid = VMADDR_CID_ANY;
		len = sizeof(*vm);
	} else if (!strncmp(spec, "unix:", 5)) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;
		if (!spec[5] || strlen(spec + 5) >= sizeof(un->sun_path))
			return -EINVAL;
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, spec + 5);
		len = sizeof(*un);
		unlink(un->sun_path); /* a stale socket from an earlier run */
		a->unix_path = spec + 5;
	} else {
		return -EINVAL;
	}
	fd = socket(ss.ss_family, type, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	a->lfd = fd;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: kiln-agent [--listen vsock:PORT | --listen unix:PATH] [--no-init]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	char spec[32];
	const char *listen = NULL;
	bool init = true, pid1 = getpid() == 1;
	struct agent a = {.lfd = -1, .sig_r = -1};
	int err;

	init_stdio();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--listen") && i + 1 < argc)
			listen = argv[++i];
		else if (!strcmp(argv[i], "--no-init"))
			init = false;
		else
			usage();
	}
	if (!listen) {
		snprintf(spec, sizeof(spec), "vsock:%u", KILN_AGENT_PORT);
		listen = spec;
	}
	if (pid1 && init)
		init_pid1();
	err = setup_signals(&a, pid1);
	if (!err)
		err = listen_on(&a, listen);
	/* PID 1 must not exit (the kernel would panic): wait for the device. */
	for (int tries = 0; err && pid1 && a.sig_r >= 0 && err != -EINVAL; tries++) {
		if (!tries)
			agent_log("cannot listen on %s: %s; retrying", listen, strerror(-err));
		sleep(1);
		err = listen_on(&a, listen);
	}
	if (err) {
		agent_log("cannot listen on %s: %s", listen, strerror(-err));
		while (pid1)
			pause();
		return 1;
	}
	agent_log("%s listening on %s", AGENT_VERSION_STRING, listen);
	agent_loop(&a);
	agent_shutdown(&a);
	close(a.sig_r);
	close(sig_wfd);
	return 0;
}
