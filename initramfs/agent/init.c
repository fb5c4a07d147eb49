/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: what PID 1 sets up before serving. Everything is best effort:
 * the guest kernel may lack a file system type or a syscall (ENOSYS), and
 * the agent must come up regardless.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kiln/net.h>
#include <kiln/rootchg.h>

#include "agent.h"

static const struct {
	const char *dir;
	mode_t mode;
	const char *fstype; /* NULL: only create the directory */
	unsigned long flags;
	const char *data;
} boot_fs[] = {
    {"/proc", 0555, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL},
    {"/sys", 0555, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL},
    {"/dev", 0755, "devtmpfs", MS_NOSUID, "mode=0755"},
    {"/dev/pts", 0755, "devpts", MS_NOSUID | MS_NOEXEC, "mode=0620,ptmxmode=0666"},
    {"/dev/shm", 01777, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
    {"/tmp", 01777, NULL, 0, NULL},
    {"/run", 0755, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"},
    {"/root", 0700, NULL, 0, NULL},
};

/*
 * Descriptors 0-2 must be taken before the agent opens anything: a socket
 * or pipe landing on 0-2 would be clobbered by a child's dup2().
 */
void init_stdio(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int nfd = open("/dev/null", O_RDWR);
		if (nfd < 0)
			nfd = open("/dev/console", O_RDWR | O_NOCTTY);
		if (nfd < 0)
			nfd = open("/", O_RDONLY | O_DIRECTORY);
		if (nfd >= 0 && nfd != fd) {
			dup2(nfd, fd);
			close(nfd);
		}
	}
}

/* The image's environment (/etc/kiln-env: mkimage's recipe env lines, or a
 * container image's config Env, from kiln-image-import): NAME=value lines
 * over the defaults, for every command. Bounded: a line of at most
 * IMAGE_ENV_LINE bytes, IMAGE_ENV_MAX of them; others are skipped. */
#define IMAGE_ENV_LINE 4096
#define IMAGE_ENV_MAX  256

static void load_image_env(void)
{
	char line[IMAGE_ENV_LINE];
	FILE *f = fopen("/etc/kiln-env", "re");
	unsigned n = 0;

	if (!f)
		return;
	while (n < IMAGE_ENV_MAX && fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		char *eq = strchr(line, '=');

		if (len && line[len - 1] != '\n' && !feof(f)) {
			int c;

			while ((c = fgetc(f)) != EOF && c != '\n')
				; /* too long: skip the rest of it */
			continue;
		}
		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		if (line[0] == '#' || !eq || eq == line)
			continue;
		*eq = 0;
		setenv(line, eq + 1, 1);
		n++;
	}
	fclose(f);
}

/* The guest's names: its resolver is kilnd's (include/kiln/net.h), which
 * the library OS reaches over vsock. An image's own resolv.conf names
 * servers the guest cannot reach; its /etc/hosts is kept if it has one. */
static void write_file(const char *path, const char *text, int oflags)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | oflags, 0644);

	if (fd < 0)
		return;
	for (size_t n = strlen(text), k; n; n -= k, text += k) {
		ssize_t w = write(fd, text, n);

		if (w <= 0)
			break;
		k = (size_t)w;
	}
	close(fd);
}

static void init_names(void)
{
	static const uint8_t r[4] = KILN_NET_RESOLVER4;
	struct stat st;
	char conf[128];

	mkdir("/etc", 0755);
	snprintf(conf, sizeof(conf),
	         "# kiln: kilnd resolves for the sandbox\nnameserver %u.%u.%u.%u\n", r[0], r[1],
	         r[2], r[3]);
	if (!lstat("/etc/resolv.conf", &st) && S_ISLNK(st.st_mode))
		unlink("/etc/resolv.conf"); /* into /run in some images */
	write_file("/etc/resolv.conf", conf, O_TRUNC);
	write_file("/etc/hosts",
	           "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	           "127.0.1.1\tkiln\n",
	           O_EXCL);
}

void init_pid1(void)
{
	static const char hostname[] = "kiln";

	umask(022);
	for (size_t i = 0; i < sizeof(boot_fs) / sizeof(boot_fs[0]); i++) {
		if (mkdir(boot_fs[i].dir, boot_fs[i].mode) == 0)
			chmod(boot_fs[i].dir, boot_fs[i].mode); /* past the umask */
		if (boot_fs[i].fstype)
			mount(boot_fs[i].fstype, boot_fs[i].dir, boot_fs[i].fstype,
			      boot_fs[i].flags, boot_fs[i].data);
	}
	if (access("/dev/ptmx", F_OK) < 0)
		symlink("pts/ptmx", "/dev/ptmx");
	sethostname(hostname, sizeof(hostname) - 1);
	init_names();
	if (chdir("/") < 0) {
		/* nothing better to do */
	}
	/* The base environment of every command (requests add to it). */
	clearenv();
	setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
	setenv("HOME", "/root", 1);
	setenv("LANG", "C.UTF-8", 1);
	load_image_env();
	init_stdio();
	/* What changes in the root from here on is the container's (the
	 * CHANGES operation); a kernel without it (Linux) says EINVAL. */
	prctl(KILN_PR_ROOTCHG_TRACK, 0, 0, 0, 0);
}
