// SPDX-License-Identifier: MIT
/*
 * mounttest: the guest kernel's mount(2) and umount2(2), which take one
 * file system, a procfs of its own on an empty directory (a pod's app
 * container's /proc, guest-kernel/libos/fs/sys_mount.c). Guest only: Linux
 * mounts over a non-empty directory and has other file systems. One line
 * per check, "NAME: ok" or the errno's name.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errname.h"

static void show(const char *what, int rc)
{
	printf("%s: %s\n", what, ename(rc < 0 ? errno : 0));
}

int main(void)
{
	char buf[64] = "";
	pid_t pid;
	int fd, st;

	mkdir("/mt", 0755);
	mkdir("/mt/p", 0555);
	mkdir("/mt/full", 0755);
	close(open("/mt/full/f", O_CREAT | O_WRONLY, 0644));
	show("mount", mount("proc", "/mt/p", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
	fd = open("/mt/p/self/comm", O_RDONLY);
	if (fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0)
		printf("comm: %s", buf);
	if (fd >= 0)
		close(fd);
	show("again", mount("proc", "/mt/p", "proc", 0, NULL));
	show("non-empty", mount("proc", "/mt/full", "proc", 0, NULL));
	show("on a file", mount("proc", "/mt/full/f", "proc", 0, NULL));
	show("tmpfs", mount("tmpfs", "/mt/full", "tmpfs", 0, NULL));
	show("bind", mount("/mt/full", "/mt/p", NULL, MS_BIND, NULL));
	show("umount /proc", umount2("/proc", 0));
	show("umount a dir", umount2("/mt/full", 0));
	pid = fork();
	if (pid == 0) {
		if (setuid(1000) < 0)
			_exit(1);
		show("as a user", mount("proc", "/mt/p", "proc", 0, NULL));
		show("umount as a user", umount2("/mt/p", MNT_DETACH));
		_exit(0);
	}
	waitpid(pid, &st, 0);
	show("umount", umount2("/mt/p", MNT_DETACH));
	show("self after", access("/mt/p/self", F_OK));
	show("rmdir", rmdir("/mt/p"));
	show("boot /proc", access("/proc/self/comm", F_OK));
	return 0;
}
