/* SPDX-License-Identifier: MIT */
/* containerd-shim-kiln-v2: how containerd runs a shim v2 binary.
 *
 *   containerd-shim-kiln-v2 -namespace NS -address ADDR -publish-binary BIN
 *                           -id ID [-debug] start     (cwd: the bundle)
 *       starts the shim server for the container (a daemon of its own
 *       session), prints its ttrpc address and exits. A container of a pod
 *       (its config.json's annotation io.containerd.runc.v2.group, else
 *       io.kubernetes.cri.sandbox-id, as runc's shim reads them) is served
 *       by the shim of its group: when one listens on the group's socket,
 *       its address is printed instead, and containerd sends it the
 *       container's Create (a pod is one VM, task.c).
 *   containerd-shim-kiln-v2 ... -id ID -bundle DIR delete
 *       cleans up after a shim that died: kills the VM recorded in the
 *       bundle, unmounts its rootfs, prints a DeleteResponse.
 *
 * The server's socket is BUNDLE/shim.sock (or /run/kiln-shim/HASH.sock if
 * that path is too long), a group's /run/kiln-shim/HASH.sock (a hash of
 * containerd's address, the namespace and the group); its log goes to the
 * bundle's "log" fifo, which containerd copies into its own log. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <nettle/sha2.h>

#include "gen/shim.pb-c.h"
#include "shim.h"

struct shim g_shim = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .changed = PTHREAD_COND_INITIALIZER,
    .vm.jail_lock = -1,
};

void shim_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "containerd-shim-kiln-v2[%s]: ", g_shim.id ? g_shim.id : "?");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void *shim_exit_soon(void *unused)
{
	struct timespec t = {0, 50 * 1000 * 1000};

	(void)unused;
	nanosleep(&t, NULL);
	events_flush();
	exit(0);
}

static void usage(void)
{
	fprintf(stderr, "usage: containerd-shim-kiln-v2 -namespace NS -address ADDR -id ID "
	                "[-bundle DIR] start|delete\n"
	                "containerd runs this as runtime io.containerd.kiln.v2; it is not a "
	                "command for people.\n");
	exit(2);
}

/* The pod the bundle's container belongs to (malloc'd), or NULL: its
 * config.json's grouping annotation, as runc's shim takes it. */
static char *group_of(const char *bundle)
{
	static const char *const keys[] = {"io.containerd.runc.v2.group",
	                                   "io.kubernetes.cri.sandbox-id"};
	char path[PATH_MAX + 16];
	json_t *j, *a, *v;
	char *g = NULL;

	snprintf(path, sizeof(path), "%s/config.json", bundle);
	j = json_load_file(path, 0, NULL);
	a = json_object_get(j, "annotations");
	for (size_t i = 0; i < 2 && !g; i++) {
		v = json_object_get(a, keys[i]);
		if (json_is_string(v) && json_string_length(v) && json_string_length(v) < 256)
			g = strdup(json_string_value(v));
	}
	json_decref(j);
	return g;
}

static void socket_path(struct shim *s, const char *group, char *out, size_t n)
{
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];

	if (!group && snprintf(out, n, "%s/shim.sock", s->bundle) < 100)
		return;
	sha256_init(&h);
	if (group) {
		const char *a = s->address ? s->address : "", *ns = s->ns ? s->ns : "";

		sha256_update(&h, strlen(a) + 1, (const uint8_t *)a);
		sha256_update(&h, strlen(ns) + 1, (const uint8_t *)ns);
		sha256_update(&h, strlen(group), (const uint8_t *)group);
	} else {
		sha256_update(&h, strlen(s->bundle), (const uint8_t *)s->bundle);
	}
	sha256_digest(&h, sizeof(d), d);
	mkdir("/run/kiln-shim", 0700);
	snprintf(out, n, "/run/kiln-shim/");
	for (int i = 0; i < 16; i++)
		snprintf(out + strlen(out), n - strlen(out), "%02x", d[i]);
	snprintf(out + strlen(out), n - strlen(out), ".sock");
}

static void write_address(const char *path)
{
	FILE *f = fopen("address", "w");

	if (f) {
		fprintf(f, "unix://%s", path);
		fclose(f);
	}
	printf("unix://%s\n", path);
}

/* A shim of the group answers at a: its socket is not a stale one. */
static bool serving(const struct sockaddr_un *a)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && !connect(fd, (const struct sockaddr *)a, sizeof(*a));

	if (fd >= 0)
		close(fd);
	return ok;
}

static int cmd_start(struct shim *s)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char *group = group_of(s->bundle);
	int fd, log;
	pid_t pid;

	socket_path(s, group, s->socket_path, sizeof(s->socket_path));
	s->grouped = group != NULL;
	free(group);
	if (strlen(s->socket_path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "containerd-shim-kiln-v2: the socket path %s is too long\n",
		        s->socket_path);
		return 1;
	}
	memcpy(a.sun_path, s->socket_path, strlen(s->socket_path) + 1);
	if (s->grouped && serving(&a)) {
		write_address(s->socket_path); /* the pod's shim takes this container */
		return 0;
	}
	/* a group's shim that died left its socket: ours now (a race of two
	 * starts of one pod is containerd's to avoid: it creates a pod's
	 * sandbox before its containers) */
	unlink(s->socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16)) {
		fprintf(stderr, "containerd-shim-kiln-v2: cannot listen on %s: %s\n",
		        s->socket_path, strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		setsid();
		signal(SIGPIPE, SIG_IGN);
		/* containerd waits for our stdout to close: it must not stay ours */
		dup2(null, 0);
		dup2(null, 1);
		log = open("log", O_WRONLY | O_CLOEXEC | O_NONBLOCK);
		if (log >= 0) {
			fcntl(log, F_SETFL, 0);
			dup2(log, 2);
		} else {
			dup2(null, 2);
		}
		shim_log("serving on %s", s->socket_path);
		return ttrpc_serve(fd) ? 1 : 0;
	}
	write_address(s->socket_path);
	return 0;
}

/* pid has ended and was reaped (a zombie still counts as its uid's). */
static bool gone(int pid)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d", pid);
	return access(path, F_OK) < 0;
}

/* After a shim that died: nothing of the container may go on running,
 * nor anything it held be left (its jail id's lock file, cgroup leaves,
 * a socket outside the bundle). */
static int cmd_delete(struct shim *s)
{
	Containerd__Task__V2__DeleteResponse r = CONTAINERD__TASK__V2__DELETE_RESPONSE__INIT;
	Google__Protobuf__Timestamp t = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	struct timespec tick = {0, 5 * 1000 * 1000};
	char path[PATH_MAX + 16];
	uint8_t out[128];
	char *group;
	int pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/vmm.pid", s->bundle);
	f = fopen(path, "r");
	if (f && fscanf(f, "%d", &pid) == 1 && pid > 1) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		/* its new parent reaps it: then its jail id and cgroups are free */
		for (int i = 0; i < 400 && !gone(pid); i++)
			nanosleep(&tick, NULL);
	}
	if (f)
		fclose(f);
	jail_cleanup(s->bundle);
	snprintf(path, sizeof(path), "%s/rootfs", s->bundle);
	umount2(path, MNT_DETACH);
	group = group_of(s->bundle);
	/* a group's socket is the pod's shim's: its own container (the one
	 * it was started for) ends it; containerd runs this for every other
	 * container of the pod too, while that shim still serves */
	if (!group || !strcmp(group, s->id)) {
		socket_path(s, group, path, sizeof(path));
		if (strncmp(path, s->bundle, strlen(s->bundle)))
			unlink(path); /* one of /run/kiln-shim's */
	}
	free(group);
	t.seconds = now_ns() / 1000000000;
	r.exit_status = 128 + SIGKILL;
	r.exited_at = &t;
	fwrite(out, 1, containerd__task__v2__delete_response__pack(&r, out), stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct shim *s = &g_shim;
	const char *cmd = NULL;
	char cwd[PATH_MAX];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-debug") || !strcmp(a, "--debug") || !strcmp(a, "-v")) {
			if (!strcmp(a, "-v")) {
				printf("containerd-shim-kiln-v2 (%s)\n", SHIM_VERSION);
				return 0;
			}
			continue;
		}
		if (a[0] == '-' && !v)
			usage();
		if (!strcmp(a, "-namespace"))
			s->ns = argv[++i];
		else if (!strcmp(a, "-address"))
			s->address = argv[++i];
		else if (!strcmp(a, "-id"))
			s->id = argv[++i];
		else if (!strcmp(a, "-bundle"))
			s->bundle = argv[++i];
		else if (!strcmp(a, "-publish-binary"))
			s->publish_binary = argv[++i];
		else if (a[0] == '-')
			i++; /* an option of a later containerd: ignored */
		else
			cmd = a;
	}
	if (!cmd || !s->id)
		usage();
	if (!s->bundle) {
		if (!getcwd(cwd, sizeof(cwd)))
			return 1;
		s->bundle = cwd;
	}
	if (!strcmp(cmd, "start"))
		return cmd_start(s);
	if (!strcmp(cmd, "delete"))
		return cmd_delete(s);
	usage();
	return 2;
}
