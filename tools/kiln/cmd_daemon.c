/* SPDX-License-Identifier: MIT */
/* kiln up / kiln down: start kilnd in the background (idempotent, waits
 * until its socket answers) and stop it. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kiln.h"
#include "util.h"

#define UP_WAIT   15.0
#define DOWN_WAIT 10.0

static bool answers(struct kc *k)
{
	struct kc_resp r = {0};
	bool quiet = k->quiet_errors, ok;

	k->quiet_errors = true;
	kc_disconnect(k);
	ok = kc_connect(k) >= 0 && !kc_request(k, "GET", "/health", NULL, NULL, 0, &r) &&
	     r.status == 200;
	kc_resp_free(&r);
	kc_disconnect(k);
	k->quiet_errors = quiet;
	return ok;
}

static char *kilnd_path(void)
{
	char self[PATH_MAX], *p;
	ssize_t n;

	if (getenv("KILND"))
		return strdup(getenv("KILND"));
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return strdup("kilnd");
	self[n] = 0;
	if (asprintf(&p, "%s/kilnd", dirname(self)) < 0)
		die_oom();
	return p;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Has this process (not our child) exited? Reaped by init or a zombie. */
static bool gone(pid_t pid)
{
	char path[64], *s, *paren;
	bool dead;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	s = read_small_file(path, 1024, NULL);
	if (!s)
		return true;
	paren = strrchr(s, ')'); /* "pid (comm) S ..." */
	dead = paren && paren[1] == ' ' && paren[2] == 'Z';
	free(s);
	return dead;
}

int cmd_up(struct kc *k, int argc, char **argv)
{
	char *kilnd, *dd, *log;
	char **args;
	int n = 0, logfd, rc = 0, pfd[2];
	pid_t pid, kpid = 0;
	double deadline;
	struct stat lst;
	bool exited = false;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf(
			    "usage: kiln up [-- KILND_OPTIONS...]\n\n"
			    "Start kilnd in the background unless it already answers, and wait\n"
			    "until it does. Its log goes to DATA_DIR/kilnd.log. Options after --\n"
			    "go to kilnd (e.g. --vmm PATH, --listen-tcp 127.0.0.1:3000).\n");
			return 0;
		}
		fprintf(stderr, "kiln up: unexpected argument '%s' (kilnd options go after --)\n",
		        argv[i]);
		return 2;
	}
	if (!k->socket_path) {
		fprintf(stderr, "kiln up: starts a local kilnd; not with --url\n");
		return 2;
	}
	if (answers(k)) {
		printf("kilnd is running (%s)\n", k->socket_path);
		return 0;
	}
	kilnd = kilnd_path();
	dd = k->data_dir ? strdup(k->data_dir) : kiln_default_data_dir();
	if (!dd || mkdir_p(dd, 0700) || asprintf(&log, "%s/kilnd.log", dd) < 0) {
		fprintf(stderr, "kiln: cannot create %s: %s\n", dd ? dd : "data dir",
		        strerror(errno));
		return 1;
	}
	args = calloc((size_t)argc + 8, sizeof(*args));
	if (!args)
		die_oom();
	args[n++] = kilnd;
	args[n++] = "--data-dir";
	args[n++] = dd;
	args[n++] = "--socket";
	args[n++] = k->socket_path;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") || i != 1)
			args[n++] = argv[i];
	if (access(kilnd, X_OK)) {
		fprintf(stderr, "kiln up: cannot run %s: %s (build it with make, or set $KILND)\n",
		        kilnd, strerror(errno));
		rc = 1;
		goto out;
	}
	logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (logfd < 0 || fstat(logfd, &lst) || pipe2(pfd, O_CLOEXEC)) {
		fprintf(stderr, "kiln: %s: %s\n", log, strerror(errno));
		if (logfd >= 0)
			close(logfd);
		rc = 1;
		goto out;
	}
	if (stderr_tty())
		fprintf(stderr, "starting kilnd...");
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "kiln: fork: %s\n", strerror(errno));
		rc = 1;
		goto out;
	}
	if (pid == 0) {
		/* Detach: a session of its own, then a grandchild that init adopts,
		 * whose pid we learn through the pipe to tell when it exits. */
		int null = open("/dev/null", O_RDWR);
		pid_t g;

		setsid();
		g = fork();
		if (g != 0) {
			write_all(pfd[1], &g, sizeof(g));
			_exit(0);
		}
		dup2(null, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		execv(kilnd, args);
		dprintf(2, "kiln up: cannot run %s: %s\n", kilnd, strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	if (read(pfd[0], &kpid, sizeof(kpid)) != sizeof(kpid))
		kpid = 0;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	close(logfd);
	deadline = mono_now() + UP_WAIT;
	while (mono_now() < deadline) {
		if (answers(k)) {
			if (stderr_tty())
				fprintf(stderr, "\r\033[K");
			printf("kilnd is running (%s)\n", k->socket_path);
			goto out;
		}
		if (kpid > 0 && gone(kpid)) {
			exited = true;
			break;
		}
		sleep_ms(50);
	}
	if (stderr_tty())
		fprintf(stderr, "\r\033[K");
	{
		char *tail = file_tail_from(log, lst.st_size, 10, 4096);

		if (exited)
			fprintf(stderr, "kiln: kilnd exited at start; %s says:\n%s\n", log,
			        tail && *tail ? tail : "(nothing)");
		else
			fprintf(stderr, "kiln: kilnd did not come up within %.0f s; %s says:\n%s\n",
			        UP_WAIT, log, tail && *tail ? tail : "(nothing)");
		free(tail);
	}
	rc = 1;
out:
	free(args);
	free(kilnd);
	free(dd);
	free(log);
	return rc;
}

int cmd_down(struct kc *k, int argc, char **argv)
{
	char *dd, *pidfile, *s;
	int pid;
	double deadline;

	if (argc > 1) {
		bool help = want_help(argc, argv);

		fprintf(help ? stdout : stderr,
		        "usage: kiln down\n\nStop kilnd. Sandboxes keep running; the next kilnd "
		        "adopts them.\n");
		return help ? 0 : 2;
	}
	dd = k->data_dir ? strdup(k->data_dir) : kiln_default_data_dir();
	if (!dd || asprintf(&pidfile, "%s/kilnd.pid", dd) < 0)
		die_oom();
	/* kilnd holds a lock on its pid file: no lock, no kilnd (and a stale
	 * pid must not get a signal meant for kilnd). */
	{
		int fd = open(pidfile, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || !flock(fd, LOCK_SH | LOCK_NB)) {
			if (fd >= 0)
				close(fd);
			free(pidfile);
			free(dd);
			printf("kilnd is not running\n");
			return 0;
		}
		close(fd);
	}
	s = read_small_file(pidfile, 32, NULL);
	pid = s ? atoi(s) : 0;
	free(s);
	free(pidfile);
	free(dd);
	if (pid <= 0 || kill(pid, SIGTERM)) {
		fprintf(stderr, "kiln: cannot signal kilnd (pid %d): %s\n", pid, strerror(errno));
		return 1;
	}
	deadline = mono_now() + DOWN_WAIT;
	while (mono_now() < deadline && !kill(pid, 0))
		sleep_ms(20);
	if (!kill(pid, 0)) {
		fprintf(stderr, "kiln: kilnd (pid %d) did not stop\n", pid);
		return 1;
	}
	printf("kilnd stopped\n");
	return 0;
}
