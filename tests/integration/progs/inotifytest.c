// SPDX-License-Identifier: MIT
/*
 * inotifytest: inotify as Linux does it, for the events kiln reports:
 * names created, deleted and moved in a watched directory, a watched file
 * modified, closed after writing and deleted, IN_IGNORED, IN_ONESHOT,
 * coalescing, FIONREAD, poll, a blocking read woken by another process,
 * and the errors. Prints only what the calls return, so the host and the
 * guest print the same; exits 0 if every check passed. Works in tmp/.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sockcheck.h"

static int wd_dir, wd_file;
static unsigned int last_cookie;

static const char *mask_name(unsigned int m)
{
	static char buf[128];
	static const struct {
		unsigned int bit;
		const char *name;
	} bits[] = {{IN_CREATE, "CREATE"},
	            {IN_DELETE, "DELETE"},
	            {IN_MOVED_FROM, "MOVED_FROM"},
	            {IN_MOVED_TO, "MOVED_TO"},
	            {IN_MODIFY, "MODIFY"},
	            {IN_CLOSE_WRITE, "CLOSE_WRITE"},
	            {IN_DELETE_SELF, "DELETE_SELF"},
	            {IN_MOVE_SELF, "MOVE_SELF"},
	            {IN_IGNORED, "IGNORED"},
	            {IN_ISDIR, "ISDIR"},
	            {IN_CLOSE_NOWRITE, "CLOSE_NOWRITE"}};

	buf[0] = 0;
	for (unsigned i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (m & bits[i].bit) {
			strcat(buf, buf[0] ? "|" : "");
			strcat(buf, bits[i].name);
			m &= ~bits[i].bit;
		}
	if (m)
		sprintf(buf + strlen(buf), "|%#x", m);
	return buf;
}

/* Print the events waiting: "dir CREATE a", the cookie as "same" when it
 * matches the previous event's. */
static void drain(int fd, const char *what)
{
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n = read(fd, buf, sizeof(buf));

	printf("%s:", what);
	if (n < 0)
		printf(" (errno %s)", errno == EAGAIN ? "EAGAIN" : strerror(errno));
	for (char *p = buf; n > 0 && p < buf + n;) {
		struct inotify_event *e = (struct inotify_event *)p;
		const char *who = e->wd == wd_dir ? "dir" : e->wd == wd_file ? "file" : "other";

		printf(" [%s %s%s%s%s]", who, mask_name(e->mask), e->len ? " " : "",
		       e->len ? e->name : "",
		       e->cookie && e->cookie == last_cookie ? " same-cookie" : "");
		last_cookie = e->cookie;
		p += sizeof(*e) + e->len;
	}
	printf("\n");
	fflush(stdout);
}

static void touch(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (text) {
		write(fd, text, strlen(text));
		write(fd, text, strlen(text)); /* the same event again: coalesced */
	}
	close(fd);
}

int main(void)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), bfd, n = -1, other;
	char small[8];
	struct pollfd pfd;
	pid_t pid;

	check("inotify_init1", fd >= 0);
	checkv("cloexec", fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	mkdir("tmp/in", 0755);
	touch("tmp/in/a", NULL);
	wd_dir = inotify_add_watch(
	    fd, "tmp/in", IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF);
	wd_file = inotify_add_watch(fd, "tmp/in/a", IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF);
	check("add_watch", wd_dir > 0 && wd_file > 0 && wd_dir != wd_file);
	checkv("add_watch again: the same wd",
	       inotify_add_watch(fd, "tmp/in/a", IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF),
	       wd_file);
	check_err("IN_MASK_CREATE on a watched inode",
	          inotify_add_watch(fd, "tmp/in/a", IN_MODIFY | IN_MASK_CREATE), EEXIST);
	drain(fd, "nothing yet");
	pfd = (struct pollfd){fd, POLLIN, 0};
	checkv("poll: nothing", poll(&pfd, 1, 0), 0);

	touch("tmp/in/a", "hello");
	checkv("poll: events", poll(&pfd, 1, 0), 1);
	checkv("FIONREAD", ioctl(fd, FIONREAD, &n), 0);
	checkv("FIONREAD bytes", n, 2 * 16); /* MODIFY and CLOSE_WRITE, no names */
	check_err("read: buffer too small", read(fd, small, sizeof(small)), EINVAL);
	drain(fd, "write a");
	touch("tmp/in/b", NULL);
	drain(fd, "create b");
	rename("tmp/in/a", "tmp/in/c");
	drain(fd, "rename a c");
	mkdir("tmp/in/sub", 0755);
	rmdir("tmp/in/sub");
	drain(fd, "mkdir rmdir sub");
	link("tmp/in/b", "tmp/in/d");
	unlink("tmp/in/d");
	drain(fd, "link unlink d");
	unlink("tmp/in/c");
	drain(fd, "unlink c (was a)");
	check_err("rm_watch: gone", inotify_rm_watch(fd, wd_file), EINVAL);

	/* IN_ONESHOT: one event, then IN_IGNORED. */
	wd_file = inotify_add_watch(fd, "tmp/in/b", IN_MODIFY | IN_ONESHOT);
	touch("tmp/in/b", "x");
	touch("tmp/in/b", "y");
	drain(fd, "oneshot b");

	/* A blocking read, woken by a child's create. */
	bfd = inotify_init();
	wd_dir = inotify_add_watch(bfd, "tmp/in", IN_CREATE);
	pid = fork();
	if (pid == 0) {
		msleep(50);
		touch("tmp/in/late", NULL);
		_exit(0);
	}
	drain(bfd, "blocking read");
	wait_child(pid);
	checkv("rm_watch", inotify_rm_watch(bfd, wd_dir), 0);
	drain(bfd, "after rm_watch");
	close(bfd);

	other = open("tmp/in/b", O_RDONLY);
	check_err("add_watch: no such file", inotify_add_watch(fd, "tmp/in/nope", IN_MODIFY),
	          ENOENT);
	check_err("add_watch: IN_ONLYDIR",
	          inotify_add_watch(fd, "tmp/in/b", IN_ONLYDIR | IN_MODIFY), ENOTDIR);
	check_err("add_watch: no events", inotify_add_watch(fd, "tmp/in", 0), EINVAL);
	check_err("add_watch: not inotify", inotify_add_watch(other, "tmp/in", IN_MODIFY), EINVAL);
	check_err("add_watch: bad fd", inotify_add_watch(999, "tmp/in", IN_MODIFY), EBADF);
	check_err("rm_watch: bad wd", inotify_rm_watch(fd, 12345), EINVAL);
	check_err("init1: bad flags", inotify_init1(0x1), EINVAL);
	close(other);
	unlink("tmp/in/b");
	unlink("tmp/in/late");
	drain(fd, "cleanup");
	rmdir("tmp/in");
	close(fd);
	printf("inotifytest: %s\n", failures ? "FAILED" : "all ok");
	return failures ? 1 : 0;
}
