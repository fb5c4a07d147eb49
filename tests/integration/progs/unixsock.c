// SPDX-License-Identifier: MIT
/*
 * unixsock: AF_UNIX sockets as Linux does them. Every line printed depends
 * only on what the calls return (never on timing or on pids), so the host
 * and the guest must print the same text; exits 0 if every check passed.
 *
 *   socketpair stream/dgram/seqpacket round trips and message boundaries,
 *   MSG_TRUNC, MSG_PEEK, MSG_DONTWAIT, MSG_WAITALL; a forked server and
 *   client over a path socket and over an abstract one; 16 MiB byte-exact;
 *   SCM_RIGHTS (a pipe, a file, MSG_CMSG_CLOEXEC, files in flight released
 *   with the receiver), SCM_CREDENTIALS; ECONNREFUSED, ENOENT, EADDRINUSE;
 *   non-blocking accept and connect; poll; SO_PEERCRED; shutdown; EPIPE and
 *   SIGPIPE; datagram addresses; fstat and /proc/self/fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sockcheck.h"

static ssize_t write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(fd, p + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return (ssize_t)done;
}

static socklen_t path_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	strcpy(a->sun_path, path);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path + 1, name, strlen(name));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
}

/* ---------------------------------------------------------------- socketpair */

static void test_pair_stream(void)
{
	char buf[64];
	struct stat st;
	int sv[2], v;
	socklen_t len;
	char link[64], path[64];
	ssize_t n;

	check("socketpair stream", socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	check("fstat S_IFSOCK", fstat(sv[0], &st) == 0 && S_ISSOCK(st.st_mode));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", sv[0]);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	check("/proc/self/fd says socket:[ino]",
	      n > 0 && !strncmp(link, "socket:[", 8) && link[n - 1] == ']');
	check("write a->b", write(sv[0], "hello", 5) == 5);
	check("write b->a", write(sv[1], "world!", 6) == 6);
	check("FIONREAD 5", ioctl(sv[1], FIONREAD, &v) == 0 && v == 5);
	n = read(sv[1], buf, sizeof(buf));
	check("read at b", n == 5 && !memcmp(buf, "hello", 5));
	n = read(sv[0], buf, sizeof(buf));
	check("read at a", n == 6 && !memcmp(buf, "world!", 6));
	/* A stream read takes parts of several writes. */
	write(sv[0], "abc", 3);
	write(sv[0], "def", 3);
	n = recv(sv[1], buf, sizeof(buf), 0);
	check("stream joins writes", n == 6 && !memcmp(buf, "abcdef", 6));
	write(sv[0], "peekaboo", 8);
	n = recv(sv[1], buf, 4, MSG_PEEK);
	check("MSG_PEEK 4", n == 4 && !memcmp(buf, "peek", 4));
	n = recv(sv[1], buf, sizeof(buf), MSG_PEEK);
	check("MSG_PEEK all", n == 8 && !memcmp(buf, "peekaboo", 8));
	n = recv(sv[1], buf, sizeof(buf), 0);
	check("read after peek", n == 8 && !memcmp(buf, "peekaboo", 8));
	check_err("MSG_DONTWAIT empty EAGAIN", recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	len = sizeof(v);
	check("SO_TYPE stream",
	      getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &v, &len) == 0 && v == SOCK_STREAM);
	len = sizeof(v);
	check("SO_DOMAIN unix",
	      getsockopt(sv[0], SOL_SOCKET, SO_DOMAIN, &v, &len) == 0 && v == AF_UNIX);
	{
		struct ucred c;
		len = sizeof(c);
		check("SO_PEERCRED of a pair is me",
		      getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &c, &len) == 0 &&
		          c.pid == getpid() && c.uid == getuid() && c.gid == getgid());
	}
	{
		struct sockaddr_un a;
		len = sizeof(a);
		check("getsockname unbound: family only",
		      getsockname(sv[0], (struct sockaddr *)&a, &len) == 0 && len == 2 &&
		          a.sun_family == AF_UNIX);
		len = sizeof(a);
		check("getpeername of a pair: family only",
		      getpeername(sv[0], (struct sockaddr *)&a, &len) == 0 && len == 2);
	}
	/* MSG_WAITALL waits for the second write. */
	if (fork() == 0) {
		msleep(50);
		write(sv[0], "12345", 5);
		msleep(50);
		write(sv[0], "67890", 5);
		_exit(0);
	}
	n = recv(sv[1], buf, 10, MSG_WAITALL);
	check("MSG_WAITALL 10 from two writes", n == 10 && !memcmp(buf, "1234567890", 10));
	wait(NULL);
	/* shutdown(SHUT_WR): the peer reads the end, the other way still works. */
	check("shutdown SHUT_WR", shutdown(sv[0], SHUT_WR) == 0);
	checkv("peer reads EOF", read(sv[1], buf, sizeof(buf)), 0);
	check_err("write after SHUT_WR EPIPE", send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
	check("other way still works", write(sv[1], "back", 4) == 4 && read(sv[0], buf, 4) == 4);
	close(sv[0]);
	close(sv[1]);
}

static void test_pair_dgram(void)
{
	char buf[256], big[100];
	int sv[2], v;
	struct iovec iov = {buf, 10};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	check("socketpair dgram", socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	send(sv[0], "one", 3, 0);
	send(sv[0], "second", 6, 0);
	send(sv[0], "", 0, 0);
	send(sv[0], "third!!", 7, 0);
	check("FIONREAD is the next datagram", ioctl(sv[1], FIONREAD, &v) == 0 && v == 3);
	checkv("dgram 1 is 3 bytes", recv(sv[1], buf, sizeof(buf), 0), 3);
	n = recv(sv[1], buf, sizeof(buf), MSG_PEEK);
	checkv("dgram 2 peeked: 6 bytes", n, 6);
	checkv("dgram 2 is 6 bytes", recv(sv[1], buf, sizeof(buf), 0), 6);
	checkv("dgram 3 is empty", recv(sv[1], buf, sizeof(buf), 0), 0);
	checkv("dgram 4 is 7 bytes", recv(sv[1], buf, sizeof(buf), 0), 7);
	memset(big, 'x', sizeof(big));
	send(sv[0], big, sizeof(big), 0);
	send(sv[0], big, sizeof(big), 0);
	n = recvmsg(sv[1], &mh, 0);
	check("short read truncates: MSG_TRUNC in msg_flags",
	      n == 10 && (mh.msg_flags & MSG_TRUNC));
	n = recv(sv[1], buf, 10, MSG_TRUNC);
	checkv("recv MSG_TRUNC returns the real length", n, 100);
	check_err("empty dgram MSG_DONTWAIT EAGAIN", recv(sv[1], buf, 1, MSG_DONTWAIT), EAGAIN);
	close(sv[1]);
	check_err("send to a closed pair ECONNREFUSED", send(sv[0], "x", 1, 0), ECONNREFUSED);
	close(sv[0]);
}

static void test_pair_seqpacket(void)
{
	char buf[64];
	int sv[2];
	struct iovec iov = {buf, 4};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	check("socketpair seqpacket", socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	write(sv[0], "abc", 3);
	write(sv[0], "defgh", 5);
	checkv("record 1", read(sv[1], buf, sizeof(buf)), 3);
	n = recvmsg(sv[1], &mh, 0);
	check("record 2 cut at 4: MSG_TRUNC",
	      n == 4 && (mh.msg_flags & MSG_TRUNC) && !memcmp(buf, "defg", 4));
	write(sv[1], "reply", 5);
	checkv("record back", read(sv[0], buf, sizeof(buf)), 5);
	write(sv[0], "last", 4);
	close(sv[0]);
	checkv("queued record after close", read(sv[1], buf, sizeof(buf)), 4);
	checkv("then end of file", read(sv[1], buf, sizeof(buf)), 0);
	check_err("write to closed peer EPIPE", send(sv[1], "x", 1, MSG_NOSIGNAL), EPIPE);
	close(sv[1]);
}

/* ---------------------------------------------------------------- poll, SIGPIPE */

static int sigpipes;

static void on_sigpipe(int sig)
{
	sigpipes++;
}

static short poll1(int fd, short events, int ms)
{
	struct pollfd p = {fd, events, 0};

	return poll(&p, 1, ms) < 0 ? -1 : p.revents;
}

static void test_poll_sigpipe(void)
{
	int sv[2], total = 0;
	char buf[4096];
	short r;

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
	checkv("poll: fresh pair writable", poll1(sv[0], POLLIN | POLLOUT, 0), POLLOUT);
	write(sv[1], "x", 1);
	checkv("poll: readable and writable", poll1(sv[0], POLLIN | POLLOUT, 0), POLLIN | POLLOUT);
	read(sv[0], buf, 1);
	memset(buf, 'z', sizeof(buf));
	for (;;) {
		ssize_t w = write(sv[0], buf, sizeof(buf));
		if (w < 0)
			break;
		total += (int)w;
	}
	check("full buffer: EAGAIN", errno == EAGAIN);
	check("full buffer: between 64 KiB and 1 MiB", total >= 65536 && total <= 1048576);
	checkv("poll: full, not writable", poll1(sv[0], POLLOUT, 0), 0);
	while (total > 0) {
		ssize_t n = read(sv[1], buf, sizeof(buf));
		if (n <= 0)
			break;
		total -= (int)n;
	}
	checkv("drained: all bytes read back", total, 0);
	checkv("poll: drained, writable again", poll1(sv[0], POLLOUT, 0), POLLOUT);
	/* A thread blocked in poll wakes when the peer writes. */
	if (fork() == 0) {
		msleep(50);
		write(sv[1], "y", 1);
		_exit(0);
	}
	checkv("poll: woken by data", poll1(sv[0], POLLIN, 5000), POLLIN);
	wait(NULL);
	read(sv[0], buf, 1);
	close(sv[1]);
	r = poll1(sv[0], POLLIN | POLLOUT | POLLRDHUP, 0);
	checkv("poll: peer closed", r, POLLIN | POLLOUT | POLLHUP | POLLRDHUP);
	checkv("read after peer closed: EOF", read(sv[0], buf, 1), 0);
	signal(SIGPIPE, on_sigpipe);
	check_err("write to closed peer EPIPE", write(sv[0], "x", 1), EPIPE);
	checkv("... and SIGPIPE", sigpipes, 1);
	check_err("MSG_NOSIGNAL: EPIPE", send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
	checkv("... and no SIGPIPE", sigpipes, 1);
	signal(SIGPIPE, SIG_DFL);
	close(sv[0]);
}

/* ---------------------------------------------------------------- signals, timeouts */

static int alarms;

static void on_alarm(int sig)
{
	alarms++;
}

/* A 50 ms timer whose handler has (or has not) SA_RESTART. */
static void arm(int restart)
{
	struct sigaction sa;
	struct itimerval it = {{0, 0}, {0, 50000}};

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

static void test_signals_timeouts(void)
{
	struct timeval tv = {0, 100000};
	char buf[4096];
	int sv[2], total = 0;
	pid_t pid;

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	arm(0);
	check_err("recv interrupted by a signal: EINTR", recv(sv[0], buf, 1, 0), EINTR);
	checkv("the handler ran", alarms, 1);
	pid = fork();
	if (pid == 0) {
		msleep(200);
		write(sv[1], "r", 1);
		_exit(0);
	}
	arm(1);
	check("SA_RESTART: recv restarted, gets the byte",
	      recv(sv[0], buf, 1, 0) == 1 && buf[0] == 'r' && alarms == 2);
	wait_child(pid);
	check("SO_RCVTIMEO", setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	check_err("recv timed out: EAGAIN", recv(sv[0], buf, 1, 0), EAGAIN);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(buf, 's', sizeof(buf));
	for (;;) {
		ssize_t w = send(sv[0], buf, sizeof(buf), 0);
		if (w < 0)
			break;
		total += (int)w;
	}
	check("send on a full buffer timed out: EAGAIN", errno == EAGAIN && total > 0);
	signal(SIGALRM, SIG_DFL);
	close(sv[0]);
	close(sv[1]);
}

/* ---------------------------------------------------------------- server and client */

/* One client in a child: connect, say "ping", expect "pong". */
static void client(const struct sockaddr_un *a, socklen_t alen, int type, pid_t server)
{
	int fd = socket(AF_UNIX, type, 0);
	struct ucred c;
	socklen_t len = sizeof(c);
	char buf[16];
	int ok = 1;

	if (connect(fd, (const struct sockaddr *)a, alen) < 0)
		_exit(10);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) < 0 || c.pid != server)
		ok = 0;
	if (write(fd, "ping", 4) != 4 || read(fd, buf, sizeof(buf)) != 4 || memcmp(buf, "pong", 4))
		ok = 0;
	_exit(ok ? 0 : 11);
}

static void serve_one(const char *what, const struct sockaddr_un *a, socklen_t alen, int type)
{
	int l = socket(AF_UNIX, type, 0), c, st, v;
	struct sockaddr_un got;
	socklen_t len = sizeof(got);
	char msg[128], buf[16];
	struct ucred cred;
	pid_t pid;

	snprintf(msg, sizeof(msg), "%s: bind", what);
	check(msg, bind(l, (const struct sockaddr *)a, alen) == 0);
	snprintf(msg, sizeof(msg), "%s: getsockname is the address", what);
	check(msg, getsockname(l, (struct sockaddr *)&got, &len) == 0 && len == alen &&
	               !memcmp(&got, a, alen));
	snprintf(msg, sizeof(msg), "%s: listen", what);
	check(msg, listen(l, 5) == 0);
	len = sizeof(v);
	snprintf(msg, sizeof(msg), "%s: SO_ACCEPTCONN", what);
	check(msg, getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v == 1);
	pid = fork();
	if (pid == 0)
		client(a, alen, type, getppid());
	len = sizeof(got);
	c = accept(l, (struct sockaddr *)&got, &len);
	snprintf(msg, sizeof(msg), "%s: accept, the client is unnamed", what);
	check(msg, c >= 0 && len == 2 && got.sun_family == AF_UNIX);
	len = sizeof(got);
	snprintf(msg, sizeof(msg), "%s: accepted socket's name is the listener's", what);
	check(msg, getsockname(c, (struct sockaddr *)&got, &len) == 0 && len == alen &&
	               !memcmp(&got, a, alen));
	len = sizeof(cred);
	snprintf(msg, sizeof(msg), "%s: SO_PEERCRED pid is the client's", what);
	check(msg, getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid == pid);
	snprintf(msg, sizeof(msg), "%s: ping", what);
	check(msg, read(c, buf, sizeof(buf)) == 4 && !memcmp(buf, "ping", 4));
	write(c, "pong", 4);
	st = wait_child(pid);
	snprintf(msg, sizeof(msg), "%s: client done", what);
	checkv(msg, WIFEXITED(st) ? WEXITSTATUS(st) : 100 + st, 0);
	close(c);
	close(l);
}

static void test_server_client(void)
{
	struct sockaddr_un a;
	socklen_t alen;
	struct stat st;
	int fd, fd2, r;

	unlink("/tmp/srv.sock");
	alen = path_addr(&a, "/tmp/srv.sock");
	serve_one("path stream", &a, alen, SOCK_STREAM);
	check("the path is a socket node", stat("/tmp/srv.sock", &st) == 0 && S_ISSOCK(st.st_mode));
	check_err("open() of a socket node ENXIO", open("/tmp/srv.sock", O_RDONLY), ENXIO);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	check_err("connect to a closed server ECONNREFUSED",
	          connect(fd, (struct sockaddr *)&a, alen), ECONNREFUSED);
	fd2 = socket(AF_UNIX, SOCK_STREAM, 0);
	check_err("bind to an existing path EADDRINUSE", bind(fd2, (struct sockaddr *)&a, alen),
	          EADDRINUSE);
	close(fd2);
	unlink("/tmp/srv.sock");
	check_err("connect after unlink ENOENT", connect(fd, (struct sockaddr *)&a, alen), ENOENT);
	close(fd);

	alen = abstract_addr(&a, "kiln-unixsock-test");
	serve_one("abstract stream", &a, alen, SOCK_STREAM);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	check_err("connect to a gone abstract name ECONNREFUSED",
	          connect(fd, (struct sockaddr *)&a, alen), ECONNREFUSED);
	close(fd);

	alen = path_addr(&a, "/tmp/seq.sock");
	serve_one("path seqpacket", &a, alen, SOCK_SEQPACKET);
	unlink("/tmp/seq.sock");

	/* One abstract name: taken per socket type. */
	alen = abstract_addr(&a, "kiln-dup");
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	fd2 = socket(AF_UNIX, SOCK_STREAM, 0);
	r = socket(AF_UNIX, SOCK_DGRAM, 0);
	check("bind abstract", bind(fd, (struct sockaddr *)&a, alen) == 0);
	check_err("bind abstract again EADDRINUSE", bind(fd2, (struct sockaddr *)&a, alen),
	          EADDRINUSE);
	check_err("bind a bound socket EINVAL", bind(fd, (struct sockaddr *)&a, alen), EINVAL);
	check_err("dgram connect to a stream's abstract name ECONNREFUSED",
	          connect(r, (struct sockaddr *)&a, alen), ECONNREFUSED);
	check("the same name for a dgram socket", bind(r, (struct sockaddr *)&a, alen) == 0);
	close(fd);
	close(fd2);
	close(r);
	/* A path socket of another type: EPROTOTYPE. */
	alen = path_addr(&a, "/tmp/dgram.sock");
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	fd2 = socket(AF_UNIX, SOCK_STREAM, 0);
	bind(fd, (struct sockaddr *)&a, alen);
	check_err("stream connect to a dgram path EPROTOTYPE",
	          connect(fd2, (struct sockaddr *)&a, alen), EPROTOTYPE);
	close(fd);
	close(fd2);
	unlink("/tmp/dgram.sock");

	/* Autobind: bind with just the family. */
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	a.sun_family = AF_UNIX;
	check("autobind", bind(fd, (struct sockaddr *)&a, sizeof(sa_family_t)) == 0);
	alen = sizeof(a);
	getsockname(fd, (struct sockaddr *)&a, &alen);
	check("autobind: an abstract name of 5 hex digits", alen == 8 && a.sun_path[0] == 0);
	close(fd);

	/* Connecting to a listener that is not a socket, or not listening. */
	fd = open("/tmp/plain", O_CREAT | O_WRONLY, 0644);
	close(fd);
	alen = path_addr(&a, "/tmp/plain");
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	check_err("connect to a regular file ECONNREFUSED",
	          connect(fd, (struct sockaddr *)&a, alen), ECONNREFUSED);
	check_err("bind over a regular file EADDRINUSE", bind(fd, (struct sockaddr *)&a, alen),
	          EADDRINUSE);
	close(fd);
	unlink("/tmp/plain");
	alen = path_addr(&a, "/tmp/nodir/x.sock");
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	check_err("bind in a missing directory ENOENT", bind(fd, (struct sockaddr *)&a, alen),
	          ENOENT);
	check_err("listen unbound EINVAL", listen(fd, 1), EINVAL);
	alen = path_addr(&a, "/tmp/nl.sock");
	bind(fd, (struct sockaddr *)&a, alen);
	r = socket(AF_UNIX, SOCK_STREAM, 0);
	check_err("connect to a bound, not listening socket ECONNREFUSED",
	          connect(r, (struct sockaddr *)&a, alen), ECONNREFUSED);
	close(r);
	close(fd);
	unlink("/tmp/nl.sock");
}

/* Non-blocking accept and connect, a full backlog, poll on a listener. */
static void test_nonblocking(void)
{
	struct sockaddr_un a;
	socklen_t alen = abstract_addr(&a, "kiln-nb");
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int c1 = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int c2 = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int c3 = socket(AF_UNIX, SOCK_STREAM, 0), s1, s2;
	char buf[8];

	bind(l, (struct sockaddr *)&a, alen);
	listen(l, 0);
	check_err("accept, nothing pending: EAGAIN", accept(l, NULL, NULL), EAGAIN);
	checkv("poll listener: nothing", poll1(l, POLLIN | POLLOUT, 0), 0);
	check("non-blocking connect: done at once", connect(c1, (struct sockaddr *)&a, alen) == 0);
	check("data before accept", write(c1, "early", 5) == 5);
	checkv("poll listener: POLLIN", poll1(l, POLLIN | POLLOUT, 0), POLLIN);
	check_err("backlog full: EAGAIN", connect(c2, (struct sockaddr *)&a, alen), EAGAIN);
	s1 = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	check("accept4 SOCK_CLOEXEC", s1 >= 0 && fcntl(s1, F_GETFD) == FD_CLOEXEC);
	check("accepted socket is blocking", !(fcntl(s1, F_GETFL) & O_NONBLOCK));
	check("early data arrives", read(s1, buf, sizeof(buf)) == 5 && !memcmp(buf, "early", 5));
	check("room again: connect", connect(c2, (struct sockaddr *)&a, alen) == 0);
	check_err("connect again, backlog full: EAGAIN first",
	          connect(c2, (struct sockaddr *)&a, alen), EAGAIN);
	check_err("connect to a missing name: ECONNREFUSED first",
	          connect(c2, (struct sockaddr *)&(struct sockaddr_un){AF_UNIX, "\0nope"}, 8),
	          ECONNREFUSED);
	/* A blocking connect waits for the backlog to have room. */
	if (fork() == 0) {
		msleep(100);
		close(accept(l, NULL, NULL));
		msleep(100);
		_exit(0);
	}
	check("blocking connect waits for room", connect(c3, (struct sockaddr *)&a, alen) == 0);
	s2 = accept4(l, NULL, NULL, SOCK_NONBLOCK);
	while (s2 < 0 && errno == EAGAIN) {
		msleep(10);
		s2 = accept4(l, NULL, NULL, SOCK_NONBLOCK);
	}
	check("accept4 SOCK_NONBLOCK", s2 >= 0 && (fcntl(s2, F_GETFL) & O_NONBLOCK));
	wait(NULL);
	close(l);
	/* c2 was accepted by the child and closed: end of file. */
	checkv("accepted then closed: EOF", read(c2, buf, sizeof(buf)), 0);
	close(c1);
	close(c2);
	close(c3);
	close(s1);
	close(s2);

	/* A listener closed with a connection never accepted resets it. */
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	c1 = socket(AF_UNIX, SOCK_STREAM, 0);
	bind(l, (struct sockaddr *)&a, alen);
	listen(l, 5);
	connect(c1, (struct sockaddr *)&a, alen);
	close(l);
	check_err("listener closed before accept: ECONNRESET", read(c1, buf, sizeof(buf)),
	          ECONNRESET);
	checkv("then EOF", read(c1, buf, sizeof(buf)), 0);
	close(c1);
}

/* ---------------------------------------------------------------- 16 MiB */

#define BIG (16 * 1024 * 1024)

static unsigned char pattern_at(size_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13);
}

static void test_bulk(void)
{
	static unsigned char buf[70001];
	int sv[2], st;
	size_t got = 0, bad = 0;
	pid_t pid;

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	pid = fork();
	if (pid == 0) {
		static unsigned char out[65536 + 13];
		size_t off = 0, sz = 1;

		close(sv[1]);
		while (off < BIG) {
			size_t n = MIN(sz, (size_t)BIG - off);
			for (size_t i = 0; i < n; i++)
				out[i] = pattern_at(off + i);
			if (write_all(sv[0], out, n) < 0)
				_exit(1);
			off += n;
			sz = sz * 3 + 7;
			if (sz > sizeof(out))
				sz = sz % sizeof(out) + 1;
		}
		_exit(0);
	}
	close(sv[0]);
	for (;;) {
		ssize_t n = read(sv[1], buf, sizeof(buf));
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern_at(got + (size_t)i))
				bad++;
		got += (size_t)n;
	}
	st = wait_child(pid);
	checkv("16 MiB: bytes", (long)got, BIG);
	checkv("16 MiB: byte-exact", (long)bad, 0);
	check("16 MiB: writer exited 0", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(sv[1]);
}

/* ---------------------------------------------------------------- SCM_RIGHTS */

static int send_fds(int sock, const void *data, size_t len, const int *fds, int nfds)
{
	char ctl[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = {(void *)data, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	memset(ctl, 0, sizeof(ctl));
	if (nfds) {
		mh.msg_control = ctl;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	return (int)sendmsg(sock, &mh, 0);
}

/* Receive: returns the bytes, the fds in fds[] (count in *nfds). */
static ssize_t recv_fds(int sock, void *data, size_t len, int *fds, int *nfds, int flags,
                        int *mflags, size_t ctl_room)
{
	char ctl[CMSG_SPACE(sizeof(int) * 8) + CMSG_SPACE(sizeof(struct ucred))];
	struct iovec iov = {data, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl};
	struct cmsghdr *c;
	ssize_t n;

	mh.msg_controllen = ctl_room ? ctl_room : sizeof(ctl);
	*nfds = 0;
	n = recvmsg(sock, &mh, flags);
	if (mflags)
		*mflags = mh.msg_flags;
	if (n < 0)
		return n;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(fds + *nfds, CMSG_DATA(c), sizeof(int) * (size_t)k);
			*nfds += k;
		}
	}
	return n;
}

static void test_scm_rights(void)
{
	int sv[2], p[2], fds[8], n, fd, st, mflags;
	char buf[64];
	pid_t pid;
	ssize_t r;

	fd = open("/tmp/passed.txt", O_CREAT | O_TRUNC | O_RDWR, 0644);
	write(fd, "contents of the file", 20);
	lseek(fd, 0, SEEK_SET);
	pipe(p);
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	pid = fork();
	if (pid == 0) {
		/* The receiver reads through the passed descriptors. */
		int ok = 1, got[8];
		close(sv[0]);
		close(p[0]);
		close(fd);
		r = recv_fds(sv[1], buf, sizeof(buf), got, &n, MSG_CMSG_CLOEXEC, NULL, 0);
		if (r != 4 || memcmp(buf, "fds!", 4) || n != 2)
			_exit(20);
		if (fcntl(got[0], F_GETFD) != FD_CLOEXEC)
			ok = 0;
		if (read(got[0], buf, 6) != 6 || memcmp(buf, "piped!", 6))
			ok = 0;
		if (read(got[1], buf, 20) != 20 || memcmp(buf, "contents of the file", 20))
			ok = 0;
		write(sv[1], ok ? "Y" : "N", 1);
		_exit(ok ? 0 : 21);
	}
	close(sv[1]);
	write(p[1], "piped!", 6);
	fds[0] = p[0];
	fds[1] = fd;
	checkv("sendmsg with SCM_RIGHTS", send_fds(sv[0], "fds!", 4, fds, 2), 4);
	close(p[0]);
	close(fd);
	check("receiver read through both", read(sv[0], buf, 1) == 1 && buf[0] == 'Y');
	st = wait_child(pid);
	checkv("receiver exited 0", WIFEXITED(st) ? WEXITSTATUS(st) : 100 + st, 0);
	close(sv[0]);
	close(p[1]);

	/* Peek gives copies; the descriptors come once more with the read. */
	socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	pipe(p);
	send_fds(sv[0], "x", 1, &p[1], 1);
	r = recv_fds(sv[1], buf, sizeof(buf), fds, &n, MSG_PEEK, NULL, 0);
	check("MSG_PEEK: a descriptor", r == 1 && n == 1);
	if (n == 1)
		close(fds[0]);
	r = recv_fds(sv[1], buf, sizeof(buf), fds, &n, 0, NULL, 0);
	check("then read: the descriptor again", r == 1 && n == 1 && fcntl(fds[0], F_GETFD) == 0);
	if (n == 1) {
		write(fds[0], "w", 1);
		close(fds[0]);
	}
	check("it is the pipe's write end", read(p[0], buf, 1) == 1 && buf[0] == 'w');

	/* Too little room for the descriptors: MSG_CTRUNC, the rest closed. */
	fds[0] = p[1];
	fds[1] = p[1];
	send_fds(sv[0], "y", 1, fds, 2);
	r = recv_fds(sv[1], buf, sizeof(buf), fds, &n, 0, &mflags, CMSG_LEN(sizeof(int)));
	check("room for one of two: MSG_CTRUNC", r == 1 && n == 1 && (mflags & MSG_CTRUNC));
	for (int i = 0; i < n; i++)
		close(fds[i]);
	/* read() drops the descriptors of the message. */
	send_fds(sv[0], "z", 1, &p[1], 1);
	check("read() of a message with files", read(sv[1], buf, 1) == 1);

	/* Files in flight are released when the receiver closes: the pipe's
	 * write end exists only in the queue, so closing it gives EOF. */
	send_fds(sv[0], "q", 1, &p[1], 1);
	close(p[1]);
	close(sv[1]);
	checkv("in-flight write end released: EOF", poll1(p[0], POLLIN, 2000) & POLLHUP, POLLHUP);
	checkv("read gives EOF", read(p[0], buf, 1), 0);
	close(p[0]);
	close(sv[0]);

	/* A socket sent over itself: a cycle only the collector frees. */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	pipe(p);
	fds[0] = sv[1];
	fds[1] = p[1];
	send_fds(sv[0], "c", 1, fds, 2);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	close(socket(AF_UNIX, SOCK_DGRAM, 0)); /* a close runs the collector */
	checkv("cycle collected: EOF", poll1(p[0], POLLIN, 2000) & POLLHUP, POLLHUP);
	close(p[0]);

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	fds[0] = 999;
	check_err("SCM_RIGHTS with a bad fd EBADF", send_fds(sv[0], "b", 1, fds, 1), EBADF);
	close(sv[0]);
	close(sv[1]);
	unlink("/tmp/passed.txt");
}

static void test_scm_credentials(void)
{
	char ctl[CMSG_SPACE(sizeof(struct ucred))], buf[8];
	struct iovec iov = {buf, sizeof(buf)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;
	struct ucred cr = {0};
	int sv[2], on = 1, got = 0;
	pid_t pid;

	socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	check("SO_PASSCRED", setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) == 0);
	pid = fork();
	if (pid == 0) {
		send(sv[0], "cred", 4, 0);
		_exit(0);
	}
	wait_child(pid);
	mh.msg_control = ctl;
	mh.msg_controllen = sizeof(ctl);
	check("recvmsg", recvmsg(sv[1], &mh, 0) == 4);
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			memcpy(&cr, CMSG_DATA(c), sizeof(cr));
			got = 1;
		}
	}
	check("SCM_CREDENTIALS: the sender's pid and ids",
	      got && cr.pid == pid && cr.uid == getuid() && cr.gid == getgid());
	close(sv[0]);
	close(sv[1]);
}

/* ---------------------------------------------------------------- datagram addresses */

static void test_dgram_addresses(void)
{
	struct sockaddr_un sa, ca, got;
	socklen_t slen = path_addr(&sa, "/tmp/dg.sock"), clen = path_addr(&ca, "/tmp/dgc.sock");
	socklen_t len;
	int s = socket(AF_UNIX, SOCK_DGRAM, 0), c = socket(AF_UNIX, SOCK_DGRAM, 0);
	int u = socket(AF_UNIX, SOCK_DGRAM, 0);
	char buf[16];
	ssize_t n;

	unlink("/tmp/dg.sock");
	unlink("/tmp/dgc.sock");
	check("bind dgram server", bind(s, (struct sockaddr *)&sa, slen) == 0);
	check("bind dgram client", bind(c, (struct sockaddr *)&ca, clen) == 0);
	check("sendto", sendto(c, "hi", 2, 0, (struct sockaddr *)&sa, slen) == 2);
	len = sizeof(got);
	n = recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&got, &len);
	check("recvfrom: the client's path",
	      n == 2 && len == clen && !strcmp(got.sun_path, "/tmp/dgc.sock"));
	sendto(u, "anon", 4, 0, (struct sockaddr *)&sa, slen);
	len = sizeof(got);
	n = recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&got, &len);
	check("recvfrom an unbound sender: no address", n == 4 && len == 0);
	check_err("send unconnected ENOTCONN", send(u, "x", 1, 0), ENOTCONN);
	check("connect dgram", connect(u, (struct sockaddr *)&sa, slen) == 0);
	len = sizeof(got);
	check("getpeername of a connected dgram",
	      getpeername(u, (struct sockaddr *)&got, &len) == 0 && len == slen);
	check("send connected", send(u, "conn", 4, 0) == 4);
	checkv("received", recv(s, buf, sizeof(buf), 0), 4);
	/* The server connects to the client: others may not send to it. */
	connect(s, (struct sockaddr *)&ca, clen);
	check_err("send to a socket connected elsewhere EPERM", send(u, "x", 1, 0), EPERM);
	close(s);
	check_err("send to a closed socket ECONNREFUSED", send(u, "x", 1, 0), ECONNREFUSED);
	check_err("then not connected any more ENOTCONN", send(u, "x", 1, 0), ENOTCONN);
	check_err("sendto a path nobody is bound to ECONNREFUSED",
	          sendto(c, "x", 1, 0, (struct sockaddr *)&sa, slen), ECONNREFUSED);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	unlink("/tmp/dg.sock");
	bind(s, (struct sockaddr *)&sa, slen);
	check_err("sendto a stream socket EPROTOTYPE",
	          sendto(c, "x", 1, 0, (struct sockaddr *)&sa, slen), EPROTOTYPE);
	close(s);
	close(c);
	close(u);
	unlink("/tmp/dg.sock");
	unlink("/tmp/dgc.sock");
}

/* ---------------------------------------------------------------- errors */

static void test_errors(void)
{
	int sv[2], fd;
	struct sockaddr_un a;

	check_err("socket AF_UNIX SOCK_RAW-ish type 9", socket(AF_UNIX, 9, 0), ESOCKTNOSUPPORT);
	check_err("socket AF_UNIX protocol 5", socket(AF_UNIX, SOCK_STREAM, 5), EPROTONOSUPPORT);
	check_err("socketpair AF_INET EOPNOTSUPP", socketpair(AF_INET, SOCK_STREAM, 0, sv),
	          EOPNOTSUPP);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_INET;
	check_err("bind with the wrong family EINVAL", bind(fd, (struct sockaddr *)&a, sizeof(a)),
	          EINVAL);
	check_err("read unconnected stream EINVAL", read(fd, &a, 1), EINVAL);
	check_err("write unconnected stream ENOTCONN", send(fd, "x", 1, MSG_NOSIGNAL), ENOTCONN);
	check_err("getpeername unconnected ENOTCONN",
	          getpeername(fd, (struct sockaddr *)&a, &(socklen_t){sizeof(a)}), ENOTCONN);
	close(fd);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	check_err("listen on dgram EOPNOTSUPP", listen(fd, 1), EOPNOTSUPP);
	close(fd);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_pair_stream();
	test_pair_dgram();
	test_pair_seqpacket();
	test_poll_sigpipe();
	test_signals_timeouts();
	test_server_client();
	test_nonblocking();
	test_bulk();
	test_scm_rights();
	test_scm_credentials();
	test_dgram_addresses();
	test_errors();
	printf("unixsock: %s\n", failures ? "FAILED" : "all ok");
	return failures ? 1 : 0;
}
