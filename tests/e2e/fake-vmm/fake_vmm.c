/* SPDX-License-Identifier: MIT */
/*
 * fake-vmm: a stand-in for kiln-vmm in kilnd's end-to-end tests. TESTS ONLY.
 *
 * Takes kiln-vmm's command line (--kernel --initrd --mem --cpus --vsock
 * CID,PATH --cmdline --stats, ignoring the images), listens on the vsock
 * unix socket PATH like a VMM doing Firecracker's hybrid vsock
 * ("CONNECT 1024\n" -> "OK <n>\n"), and then behaves as the guest agent:
 *
 *  - if the real agent exists (KILN_AGENT_HOST, else in this binary's build
 *    tree initramfs/kiln-agent-host, tests/agent/kiln-agent-host or
 *    initramfs/kiln-agent), it runs
 *    `kiln-agent --listen unix:PATH.agent --no-init` and relays each
 *    connection to it (KILN_AGENT_HOST="" forces the built-in agent);
 *  - otherwise it answers the agent protocol itself (include/kiln/agent.h):
 *    INFO, EXEC, PTY and FILE streams, with the host's file system as the
 *    guest's.
 *
 * It runs until killed, like a VM. A command named "kiln-fake-exit N" makes
 * it exit with status N (a guest that powers off or crashes). --api-sock,
 * snapshots and --restore are faked in fake_snap.c (pause, resume, fork
 * and templates through kilnd; a restored "VM" starts the agent afresh,
 * so only files survive, not processes).
 * FAKE_VMM_BOOT_DELAY_MS delays the socket (a slow boot); FAKE_VMM_EXIT=N
 * exits with N before listening (a VMM that fails to boot);
 * FAKE_VMM_CONSOLE_FLOOD_MB=N prints N MiB to the console at 200 MiB/s at
 * most, then "console flood done" (a guest that fills the disk).
 */
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

static int ctl_pipe[2]; /* handler -> main: "exit with this status" */

/* Relay a connection to the real agent's unix socket. */
static void serve_relay(int conn, const char *agent_sock)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int a = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char buf[65536];

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", agent_sock);
	if (a < 0 || connect(a, (struct sockaddr *)&sa, sizeof(sa)))
		return;
	for (;;) {
		struct pollfd pf[2] = {{.fd = conn, .events = POLLIN}, {.fd = a, .events = POLLIN}};

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return;
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (!pf[i].revents)
				continue;
			n = read(pf[i].fd, buf, sizeof(buf));
			if (n <= 0 || write_full(pf[1 - i].fd, buf, (size_t)n))
				return;
		}
	}
}

static void handle(int conn, const char *agent_sock)
{
	char line[64];
	size_t n = 0;
	unsigned port;

	/* "CONNECT <port>\n", byte by byte: nothing after it is ours to eat. */
	while (n < sizeof(line) - 1) {
		if (read_full(conn, line + n, 1))
			return;
		if (line[n++] == '\n')
			break;
	}
	line[n] = 0;
	if (sscanf(line, "CONNECT %u", &port) != 1 || port != KILN_AGENT_PORT)
		return; /* like Firecracker: nobody listens there, the connection closes */
	snprintf(line, sizeof(line), "OK %u\n", 1073741824u + (unsigned)getpid() % 1000);
	if (write_full(conn, line, strlen(line)))
		return;
	if (agent_sock)
		serve_relay(conn, agent_sock);
	else
		serve_builtin(conn, ctl_pipe[1]);
}

static char *find_agent(void)
{
	/* relative to build/tests/e2e: host builds first, then the guest's */
	static const char *const names[] = {"../../initramfs/kiln-agent-host",
	                                    "../agent/kiln-agent-host",
	                                    "../../initramfs/kiln-agent"};
	const char *env = getenv("KILN_AGENT_HOST");
	char exe[PATH_MAX], *p;
	ssize_t n;

	if (env)
		return *env ? strdup(env) : NULL; /* "" forces the built-in agent */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (asprintf(&p, "%s/%s", dirname(strdup(exe)), names[i]) < 0)
			return NULL;
		if (!access(p, X_OK))
			return p;
		free(p);
	}
	return NULL;
}

static char *start_agent(const char *agent, const char *vsock_path)
{
	char *sock, *listen;
	pid_t pid;

	if (asprintf(&sock, "%s.agent", vsock_path) < 0 || asprintf(&listen, "unix:%s", sock) < 0)
		exit(1);
	unlink(sock);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(agent, agent, "--listen", listen, "--no-init", (char *)NULL);
		fprintf(stderr, "fake-vmm: cannot run %s: %s\n", agent, strerror(errno));
		_exit(127);
	}
	for (int i = 0; i < 5000 && access(sock, F_OK); i++)
		usleep(1000);
	printf("fake-vmm: relaying to the real agent %s (pid %d)\n", agent, pid);
	return sock;
}

/* A guest that prints without end (a child: the VM goes on meanwhile). */
static void console_flood(int mib)
{
	static char line[1 << 20];

	memset(line, 'x', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	for (int i = 0; i < mib && mib <= 4096; i++) {
		if (write_full(1, line, sizeof(line)))
			break;
		usleep(5000);
	}
	printf("console flood done\n");
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"kernel", required_argument, NULL, 'k'},
	    {"initrd", required_argument, NULL, 'i'},
	    {"mem", required_argument, NULL, 'm'},
	    {"cpus", required_argument, NULL, 'c'},
	    {"vsock", required_argument, NULL, 'v'},
	    {"cmdline", required_argument, NULL, 'l'},
	    {"stats", no_argument, NULL, 's'},
	    {"image", required_argument, NULL, 'I'},
	    {"api-sock", required_argument, NULL, 'A'},
	    {"restore", required_argument, NULL, 'R'},
	    {"restore-mode", required_argument, NULL, 'M'},
	    {"template-dir", required_argument, NULL, 'T'},
	    {"paused", no_argument, NULL, 'P'},
	    /* The jail's options (vmm/jail/): a test double has no jail. */
	    {"no-jail", no_argument, NULL, 'J'},
	    {"jail-id", required_argument, NULL, 'J'},
	    {"jail-rw", required_argument, NULL, 'J'},
	    {"jail-mem-max", required_argument, NULL, 'J'},
	    /* The host's CPUID table: a test double has no vCPUs to give it. */
	    {"host-cpuid", required_argument, NULL, 'J'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char *kernel = NULL, *mem = "256M", *cmdline = "", *vsock = NULL, *path;
	const char *api_path = NULL;
	struct fake_cfg cfg = {0};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *agent, *agent_sock = NULL;
	struct sigaction sa_chld = {.sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT};
	bool paused = false;
	int c, lfd, afd = -1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			kernel = optarg;
			break;
		case 'm':
			mem = optarg;
			break;
		case 'v':
			vsock = optarg;
			break;
		case 'l':
			cmdline = optarg;
			break;
		case 'i':
			cfg.initrd = optarg;
			break;
		case 'I':
			cfg.image = optarg;
			break;
		case 'A':
			api_path = optarg;
			break;
		case 'R':
			cfg.restore = optarg;
			break;
		case 'M':
			cfg.restore_mode = optarg;
			break;
		case 'T':
			cfg.template_dir = optarg;
			break;
		case 'P':
		case 'c':
		case 's':
		case 'J':
			break;
		case 'h':
			printf(
			    "usage: fake-vmm --kernel F [--initrd F] [--mem S] [--cpus N] "
			    "--vsock CID,PATH [--cmdline S]\n(kiln test double; see the source)\n");
			return 0;
		default:
			return 2;
		}
	}
	if (!kernel || !vsock || !(path = strchr(vsock, ',')) ||
	    strlen(++path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "fake-vmm: --kernel and --vsock CID,PATH are required\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	cfg.kernel = kernel;
	if (stat(kernel, &cfg.kernel_st)) {
		fprintf(stderr, "fake-vmm: %s: %s\n", kernel, strerror(errno));
		return 1;
	}
	if (cfg.restore)
		fake_restore(&cfg);
	else
		printf("fake-vmm: booting (mem %s, cmdline '%s')\n", mem, cmdline);
	if (getenv("FAKE_VMM_EXIT")) {
		fprintf(stderr, "fake-vmm: simulated boot failure\n");
		return atoi(getenv("FAKE_VMM_EXIT"));
	}
	if (getenv("FAKE_VMM_CONSOLE_FLOOD_MB") && fork() == 0)
		console_flood(atoi(getenv("FAKE_VMM_CONSOLE_FLOOD_MB")));
	if (getenv("FAKE_VMM_BOOT_DELAY_MS"))
		usleep((useconds_t)atoi(getenv("FAKE_VMM_BOOT_DELAY_MS")) * 1000);
	agent = find_agent();
	if (agent)
		agent_sock = start_agent(agent, path);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sa_chld.sa_mask);
	sigaction(SIGCHLD, &sa_chld, NULL); /* handlers are reaped automatically */
	if (pipe2(ctl_pipe, O_CLOEXEC))
		return 1;
	strcpy(sa.sun_path, path);
	unlink(path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 128)) {
		fprintf(stderr, "fake-vmm: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (api_path) {
		struct sockaddr_un asa = {.sun_family = AF_UNIX};

		snprintf(asa.sun_path, sizeof(asa.sun_path), "%s", api_path);
		unlink(api_path);
		afd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (afd < 0 || bind(afd, (struct sockaddr *)&asa, sizeof(asa)) || listen(afd, 16)) {
			fprintf(stderr, "fake-vmm: %s: %s\n", api_path, strerror(errno));
			return 1;
		}
	}
	printf("fake-vmm: agent listening on vsock port %d\n", KILN_AGENT_PORT);
	for (;;) {
		struct pollfd pf[3] = {{.fd = lfd, .events = POLLIN},
		                       {.fd = ctl_pipe[0], .events = POLLIN},
		                       {.fd = afd, .events = POLLIN}};
		int conn;

		if (poll(pf, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (pf[1].revents) {
			unsigned char code = 0;

			if (read(ctl_pipe[0], &code, 1) != 1)
				return 1;
			printf("fake-vmm: guest powered off with status %d\n", code);
			unlink(path);
			return code;
		}
		if (pf[2].revents) {
			conn = accept4(afd, NULL, NULL, SOCK_CLOEXEC);
			if (conn >= 0) {
				fake_api_serve(conn, &cfg, &paused);
				close(conn);
			}
		}
		if (!pf[0].revents)
			continue;
		conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			continue;
		if (fork() == 0) {
			struct sigaction dfl = {.sa_handler = SIG_DFL};

			sigemptyset(&dfl.sa_mask);
			sigaction(SIGCHLD, &dfl, NULL);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(lfd);
			handle(conn, agent_sock);
			_exit(0);
		}
		close(conn);
	}
}
