// SPDX-License-Identifier: MIT
/*
 * inetsock: TCP and UDP over loopback (127.0.0.1 and ::1) as Linux does
 * them. Every line printed depends only on what the calls return (never on
 * timing, ports or pids), so the host and the guest must print the same
 * text; exits 0 if every check passed.
 *
 *   a server on 127.0.0.1 and an ephemeral port, a forked client, echo,
 *   16 MiB; the same over ::1 and v4-mapped; ECONNREFUSED; EADDRINUSE and
 *   SO_REUSEADDR; non-blocking connect and accept; poll; shutdown; a reset
 *   by closing with unread data and by SO_LINGER 0; options; FIONREAD; UDP.
 *
 * "inetsock unreach" checks instead what only kiln can promise: without a
 * host that carries connections (no vsock device, or no kilnd behind it),
 * there is no network but loopback, so 10.0.0.1 is unreachable.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inetaddr.h"
#include "sockcheck.h"

static int exit_code(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + st;
}

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

static short poll1(int fd, short events, int ms)
{
	struct pollfd p = {fd, events, 0};

	return poll(&p, 1, ms) < 0 ? -1 : p.revents;
}

static int connect_to(int family, const char *ip, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = mkaddr(&ss, family, ip, port);
	int fd = socket(family, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* ---------------------------------------------------------------- echo, 16 MiB */

#define BIG (16 * 1024 * 1024)

static unsigned char pattern_at(size_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13);
}

/* The client child: echo, then 16 MiB, then read the server's count. */
static void client(int family, const char *ip, int port)
{
	static unsigned char out[65536 + 13];
	size_t off = 0, sz = 1;
	char buf[64];
	int fd = connect_to(family, ip, port);

	if (fd < 0)
		_exit(10);
	if (write(fd, "hello", 5) != 5 || read(fd, buf, sizeof(buf)) != 5 ||
	    memcmp(buf, "hello", 5))
		_exit(11);
	while (off < BIG) {
		size_t n = MIN(sz, (size_t)BIG - off);
		for (size_t i = 0; i < n; i++)
			out[i] = pattern_at(off + i);
		if (write_all(fd, out, n) < 0)
			_exit(12);
		off += n;
		sz = sz * 3 + 7;
		if (sz > sizeof(out))
			sz = sz % sizeof(out) + 1;
	}
	shutdown(fd, SHUT_WR);
	if (read(fd, buf, sizeof(buf)) != 2 || memcmp(buf, "ok", 2))
		_exit(13);
	if (read(fd, buf, sizeof(buf)) != 0)
		_exit(14);
	_exit(0);
}

static void test_echo(const char *what, int lfamily, const char *lip, int cfamily, const char *cip,
                      const char *peer_ip)
{
	static unsigned char buf[70001];
	struct sockaddr_storage ss, cs;
	socklen_t len = sizeof(ss);
	int l, c, port, st, fl;
	size_t got = 0, bad = 0;
	char msg[128], ip[64];
	ssize_t n;
	pid_t pid;

	l = listener(lfamily, lip, &port);
	snprintf(msg, sizeof(msg), "%s: listen on an ephemeral port", what);
	check(msg, l >= 0 && port >= 32768 && port <= 60999);
	pid = fork();
	if (pid == 0)
		client(cfamily, cip, port);
	c = accept(l, (struct sockaddr *)&ss, &len);
	snprintf(msg, sizeof(msg), "%s: accept: peer %s", what, peer_ip);
	check(msg, c >= 0 && ss.ss_family == lfamily && !strcmp(ip_of(&ss, ip), peer_ip));
	len = sizeof(cs);
	snprintf(msg, sizeof(msg), "%s: getpeername is accept's address", what);
	check(msg,
	      getpeername(c, (struct sockaddr *)&cs, &len) == 0 && port_of(&cs) == port_of(&ss));
	len = sizeof(cs);
	snprintf(msg, sizeof(msg), "%s: getsockname: the listener's port", what);
	check(msg, getsockname(c, (struct sockaddr *)&cs, &len) == 0 && port_of(&cs) == port);
	fl = 1;
	snprintf(msg, sizeof(msg), "%s: TCP_NODELAY", what);
	check(msg, setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &fl, sizeof(fl)) == 0);
	n = read(c, buf, sizeof(buf));
	snprintf(msg, sizeof(msg), "%s: echo", what);
	check(msg, n == 5 && write(c, buf, 5) == 5);
	for (;;) {
		n = read(c, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern_at(got + (size_t)i))
				bad++;
		got += (size_t)n;
	}
	snprintf(msg, sizeof(msg), "%s: 16 MiB", what);
	checkv(msg, (long)got, BIG);
	snprintf(msg, sizeof(msg), "%s: 16 MiB byte-exact", what);
	checkv(msg, (long)bad, 0);
	write(c, "ok", 2);
	close(c);
	st = wait_child(pid);
	snprintf(msg, sizeof(msg), "%s: client done", what);
	checkv(msg, exit_code(st), 0);
	close(l);
}

/* ---------------------------------------------------------------- addresses, errors */

static void test_errors(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int a, b, on = 1, port, v;
	char buf[8];

	/* A port bound but not listening refuses connections. */
	a = socket(AF_INET, SOCK_STREAM, 0);
	len = mkaddr(&ss, AF_INET, "127.0.0.1", 0);
	bind(a, (struct sockaddr *)&ss, len);
	port = local_port(a);
	check_err("connect to a port not listening ECONNREFUSED",
	          connect_to(AF_INET, "127.0.0.1", port), ECONNREFUSED);
	check_err("... over ::1 too", connect_to(AF_INET6, "::1", port), ECONNREFUSED);
	b = socket(AF_INET, SOCK_STREAM, 0);
	len = mkaddr(&ss, AF_INET, "127.0.0.1", port);
	check_err("bind to a taken port EADDRINUSE", bind(b, (struct sockaddr *)&ss, len),
	          EADDRINUSE);
	len = mkaddr(&ss, AF_INET, "0.0.0.0", port);
	check_err("bind the wildcard over it EADDRINUSE", bind(b, (struct sockaddr *)&ss, len),
	          EADDRINUSE);
	close(b);
	close(a);
	/* SO_REUSEADDR on both: two binds, but only one listener. */
	a = socket(AF_INET, SOCK_STREAM, 0);
	b = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(a, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	setsockopt(b, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	len = mkaddr(&ss, AF_INET, "127.0.0.1", port);
	check("SO_REUSEADDR: bind", bind(a, (struct sockaddr *)&ss, len) == 0);
	check("SO_REUSEADDR: bind the same again", bind(b, (struct sockaddr *)&ss, len) == 0);
	check("SO_REUSEADDR: listen", listen(a, 1) == 0);
	check_err("SO_REUSEADDR: a second listener EADDRINUSE", listen(b, 1), EADDRINUSE);
	close(a);
	close(b);
	a = socket(AF_INET, SOCK_STREAM, 0);
	len = mkaddr(&ss, AF_INET, "192.0.2.1", 0);
	check_err("bind a foreign address EADDRNOTAVAIL", bind(a, (struct sockaddr *)&ss, len),
	          EADDRNOTAVAIL);
	len = mkaddr(&ss, AF_INET6, "::1", 0);
	check_err("bind AF_INET with a sockaddr_in6 EAFNOSUPPORT",
	          bind(a, (struct sockaddr *)&ss, len), EAFNOSUPPORT);
	check_err("bind with a short address EINVAL", bind(a, (struct sockaddr *)&ss, 8), EINVAL);
	len = sizeof(ss);
	check_err("getpeername unconnected ENOTCONN", getpeername(a, (struct sockaddr *)&ss, &len),
	          ENOTCONN);
	len = sizeof(ss);
	check("getsockname unbound: 0.0.0.0:0", getsockname(a, (struct sockaddr *)&ss, &len) == 0 &&
	                                            len == sizeof(struct sockaddr_in) &&
	                                            port_of(&ss) == 0);
	check_err("send unconnected EPIPE", send(a, "x", 1, MSG_NOSIGNAL), EPIPE);
	check_err("recv unconnected ENOTCONN", recv(a, buf, 1, 0), ENOTCONN);
	check_err("accept without listen EINVAL", accept(a, NULL, NULL), EINVAL);
	checkv("poll unconnected: POLLOUT|POLLHUP", poll1(a, POLLIN | POLLOUT, 0),
	       POLLOUT | POLLHUP);
	len = sizeof(v);
	check("SO_TYPE", getsockopt(a, SOL_SOCKET, SO_TYPE, &v, &len) == 0 && v == SOCK_STREAM);
	len = sizeof(v);
	check("SO_PROTOCOL tcp",
	      getsockopt(a, SOL_SOCKET, SO_PROTOCOL, &v, &len) == 0 && v == IPPROTO_TCP);
	check("SO_KEEPALIVE set", setsockopt(a, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) == 0);
	len = sizeof(v);
	check("SO_KEEPALIVE get", getsockopt(a, SOL_SOCKET, SO_KEEPALIVE, &v, &len) == 0 && v == 1);
	check("TCP_NODELAY set", setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) == 0);
	len = sizeof(v);
	check("TCP_NODELAY get", getsockopt(a, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0 && v == 1);
	len = sizeof(v);
	check("IP_TTL 64", getsockopt(a, IPPROTO_IP, IP_TTL, &v, &len) == 0 && v == 64);
	close(a);
	a = socket(AF_INET6, SOCK_STREAM, 0);
	len = sizeof(v);
	check("IPV6_V6ONLY off by default",
	      getsockopt(a, IPPROTO_IPV6, IPV6_V6ONLY, &v, &len) == 0 && v == 0);
	check("IPV6_V6ONLY set", setsockopt(a, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) == 0);
	len = sizeof(v);
	check("IPV6_V6ONLY get", getsockopt(a, IPPROTO_IPV6, IPV6_V6ONLY, &v, &len) == 0 && v == 1);
	close(a);
	check_err("socket SOCK_SEQPACKET ESOCKTNOSUPPORT", socket(AF_INET, SOCK_SEQPACKET, 0),
	          ESOCKTNOSUPPORT);
	check_err("socket stream, protocol UDP EPROTONOSUPPORT",
	          socket(AF_INET, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT);
}

/* v6 wildcard listeners take IPv4 unless IPV6_V6ONLY; a v4 wildcard and a
 * v6-only wildcard share a port. */
static void test_v6(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int l, l4, c, s, port, on = 1;
	char ip[64];

	l = listener(AF_INET6, "::", &port);
	c = connect_to(AF_INET, "127.0.0.1", port);
	len = sizeof(ss);
	s = accept(l, (struct sockaddr *)&ss, &len);
	check("v4 client of a :: listener: ::ffff:127.0.0.1",
	      c >= 0 && s >= 0 && !strcmp(ip_of(&ss, ip), "::ffff:127.0.0.1"));
	len = sizeof(ss);
	check("its local address ::ffff:127.0.0.1",
	      getsockname(s, (struct sockaddr *)&ss, &len) == 0 &&
	          !strcmp(ip_of(&ss, ip), "::ffff:127.0.0.1"));
	/* The client closes first: TIME_WAIT stays off the server's port. */
	close(c);
	msleep(20);
	close(s);
	l4 = socket(AF_INET, SOCK_STREAM, 0);
	len = mkaddr(&ss, AF_INET, "0.0.0.0", port);
	check_err("v4 wildcard on a :: port EADDRINUSE", bind(l4, (struct sockaddr *)&ss, len),
	          EADDRINUSE);
	close(l);
	l = socket(AF_INET6, SOCK_STREAM, 0);
	setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	len = mkaddr(&ss, AF_INET6, "::", port);
	check("v6-only :: bind", bind(l, (struct sockaddr *)&ss, len) == 0 && listen(l, 4) == 0);
	len = mkaddr(&ss, AF_INET, "0.0.0.0", port);
	check("and v4 0.0.0.0 on the same port",
	      bind(l4, (struct sockaddr *)&ss, len) == 0 && listen(l4, 4) == 0);
	c = connect_to(AF_INET, "127.0.0.1", port);
	check("v4 client goes to the v4 listener",
	      c >= 0 && poll1(l4, POLLIN, 1000) == POLLIN && poll1(l, POLLIN, 0) == 0);
	close(c);
	close(l);
	close(l4);
	/* Connect to the unspecified address: loopback. */
	l = listener(AF_INET, "127.0.0.1", &port);
	c = connect_to(AF_INET, "0.0.0.0", port);
	check("connect to 0.0.0.0 reaches 127.0.0.1", c >= 0);
	close(c);
	close(l);
}

/* ---------------------------------------------------------------- non-blocking, poll, resets */

static void test_nonblocking(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int l, c, s, port, v;
	char buf[16];

	l = listener(AF_INET, "127.0.0.1", &port);
	fcntl(l, F_SETFL, O_NONBLOCK);
	check_err("accept, nothing pending: EAGAIN", accept(l, NULL, NULL), EAGAIN);
	checkv("poll listener: nothing", poll1(l, POLLIN, 0), 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	len = mkaddr(&ss, AF_INET, "127.0.0.1", port);
	check_err("non-blocking connect EINPROGRESS", connect(c, (struct sockaddr *)&ss, len),
	          EINPROGRESS);
	checkv("poll: connected, writable", poll1(c, POLLOUT, 1000), POLLOUT);
	len = sizeof(v);
	check("SO_ERROR 0", getsockopt(c, SOL_SOCKET, SO_ERROR, &v, &len) == 0 && v == 0);
	len = mkaddr(&ss, AF_INET, "127.0.0.1", port);
	checkv("connect again: 0 once", connect(c, (struct sockaddr *)&ss, len), 0);
	check_err("connect a third time EISCONN", connect(c, (struct sockaddr *)&ss, len), EISCONN);
	checkv("poll listener: POLLIN", poll1(l, POLLIN, 1000), POLLIN);
	s = accept(l, NULL, NULL);
	check("accept", s >= 0);
	check_err("recv nothing yet: EAGAIN", recv(c, buf, sizeof(buf), 0), EAGAIN);
	write(s, "abc", 3);
	checkv("poll: readable", poll1(c, POLLIN, 1000), POLLIN);
	check("FIONREAD 3", ioctl(c, FIONREAD, &v) == 0 && v == 3);
	check("MSG_PEEK", recv(c, buf, sizeof(buf), MSG_PEEK) == 3 && !memcmp(buf, "abc", 3));
	check("read", read(c, buf, sizeof(buf)) == 3);
	shutdown(s, SHUT_WR);
	checkv("peer SHUT_WR: POLLIN|POLLRDHUP", poll1(c, POLLIN | POLLRDHUP, 1000),
	       POLLIN | POLLRDHUP);
	checkv("read EOF", read(c, buf, sizeof(buf)), 0);
	check("other way still open", write(c, "up", 2) == 2 && read(s, buf, 2) == 2);
	close(s);
	close(c);

	/* A non-blocking connect refused: the error comes with SO_ERROR. */
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	s = socket(AF_INET, SOCK_STREAM, 0);
	len = mkaddr(&ss, AF_INET, "127.0.0.1", 0);
	bind(s, (struct sockaddr *)&ss, len);
	len = mkaddr(&ss, AF_INET, "127.0.0.1", local_port(s));
	check_err("non-blocking connect to a closed port: EINPROGRESS",
	          connect(c, (struct sockaddr *)&ss, len), EINPROGRESS);
	check("poll: POLLERR", poll1(c, POLLOUT, 1000) & POLLERR);
	len = sizeof(v);
	check("SO_ERROR ECONNREFUSED",
	      getsockopt(c, SOL_SOCKET, SO_ERROR, &v, &len) == 0 && v == ECONNREFUSED);
	close(c);
	close(s);
	close(l);
}

static void test_resets(void)
{
	int l, c, s, port;
	struct linger lg = {1, 0};
	char buf[16];

	/* Closing with bytes unread resets the connection. */
	l = listener(AF_INET, "127.0.0.1", &port);
	c = connect_to(AF_INET, "127.0.0.1", port);
	s = accept(l, NULL, NULL);
	write(c, "unread", 6);
	msleep(20);
	close(s);
	poll1(c, POLLIN, 1000);
	check_err("close with unread data: ECONNRESET", read(c, buf, sizeof(buf)), ECONNRESET);
	checkv("then EOF", read(c, buf, sizeof(buf)), 0);
	check_err("then EPIPE", send(c, "x", 1, MSG_NOSIGNAL), EPIPE);
	close(c);
	/* SO_LINGER with a zero timeout resets too. */
	c = connect_to(AF_INET, "127.0.0.1", port);
	s = accept(l, NULL, NULL);
	write(s, "data", 4);
	setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(s);
	poll1(c, POLLIN, 1000);
	checkv("SO_LINGER 0: the data sent before", read(c, buf, sizeof(buf)), 4);
	check_err("then ECONNRESET", read(c, buf, sizeof(buf)), ECONNRESET);
	close(c);
	/* A plain close: end of file, then EPIPE. */
	c = connect_to(AF_INET, "127.0.0.1", port);
	s = accept(l, NULL, NULL);
	close(s);
	checkv("peer closed: EOF", read(c, buf, sizeof(buf)), 0);
	close(c);
	/* A listener closed with a connection not accepted resets it. */
	c = connect_to(AF_INET, "127.0.0.1", port);
	msleep(20);
	close(l);
	poll1(c, POLLIN, 1000);
	check_err("listener closed before accept: ECONNRESET", read(c, buf, sizeof(buf)),
	          ECONNRESET);
	close(c);
	check_err("and the port refuses now", connect_to(AF_INET, "127.0.0.1", port), ECONNREFUSED);
}

/* ---------------------------------------------------------------- UDP */

static void test_udp(void)
{
	struct sockaddr_storage ss, from;
	socklen_t len, flen;
	int a, b, c, port, v;
	char buf[64], ip[64];
	ssize_t n;

	a = socket(AF_INET, SOCK_DGRAM, 0);
	b = socket(AF_INET, SOCK_DGRAM, 0);
	len = mkaddr(&ss, AF_INET, "127.0.0.1", 0);
	check("udp bind", bind(a, (struct sockaddr *)&ss, len) == 0);
	port = local_port(a);
	check("udp ephemeral port", port >= 32768 && port <= 60999);
	len = mkaddr(&ss, AF_INET, "127.0.0.1", port);
	check("udp sendto", sendto(b, "dgram1", 6, 0, (struct sockaddr *)&ss, len) == 6);
	check("udp sendto again", sendto(b, "dg2", 3, 0, (struct sockaddr *)&ss, len) == 3);
	check("udp sender got a port", local_port(b) >= 32768);
	check("FIONREAD: the first datagram", ioctl(a, FIONREAD, &v) == 0 && v == 6);
	flen = sizeof(from);
	n = recvfrom(a, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
	check("udp recvfrom: the sender's address",
	      n == 6 && !strcmp(ip_of(&from, ip), "127.0.0.1") && port_of(&from) == local_port(b));
	n = recv(a, buf, 2, MSG_TRUNC);
	checkv("udp MSG_TRUNC: the real length", n, 3);
	check_err("udp empty: EAGAIN", recv(a, buf, 1, MSG_DONTWAIT), EAGAIN);
	check_err("udp send unconnected EDESTADDRREQ", send(b, "x", 1, 0), EDESTADDRREQ);
	check("udp connect", connect(b, (struct sockaddr *)&ss, len) == 0);
	check("udp send connected", send(b, "conn", 4, 0) == 4);
	checkv("udp received", recv(a, buf, sizeof(buf), 0), 4);
	flen = sizeof(from);
	check("udp getpeername",
	      getpeername(b, (struct sockaddr *)&from, &flen) == 0 && port_of(&from) == port);
	/* A connected socket to a closed port: ECONNREFUSED comes back. */
	close(a);
	check("udp send to a closed port", send(b, "lost", 4, 0) == 4);
	check("udp: POLLERR", poll1(b, POLLIN, 2000) & POLLERR);
	check_err("udp recv: ECONNREFUSED", recv(b, buf, sizeof(buf), 0), ECONNREFUSED);
	close(b);
	/* IPv6, and v4 datagrams at a :: socket. */
	a = socket(AF_INET6, SOCK_DGRAM, 0);
	c = socket(AF_INET, SOCK_DGRAM, 0);
	len = mkaddr(&ss, AF_INET6, "::", 0);
	bind(a, (struct sockaddr *)&ss, len);
	port = local_port(a);
	len = mkaddr(&ss, AF_INET6, "::1", port);
	b = socket(AF_INET6, SOCK_DGRAM, 0);
	check("udp6 sendto ::1", sendto(b, "six", 3, 0, (struct sockaddr *)&ss, len) == 3);
	flen = sizeof(from);
	n = recvfrom(a, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
	check("udp6 from ::1", n == 3 && !strcmp(ip_of(&from, ip), "::1"));
	len = mkaddr(&ss, AF_INET, "127.0.0.1", port);
	check("udp4 to a :: socket", sendto(c, "four", 4, 0, (struct sockaddr *)&ss, len) == 4);
	flen = sizeof(from);
	n = recvfrom(a, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
	check("udp6 from ::ffff:127.0.0.1",
	      n == 4 && !strcmp(ip_of(&from, ip), "::ffff:127.0.0.1"));
	close(a);
	close(b);
	close(c);
}

static void test_ioctls(void)
{
	struct ifreq r;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, "lo");
	check("SIOCGIFFLAGS lo: up, loopback",
	      ioctl(fd, SIOCGIFFLAGS, &r) == 0 &&
	          (r.ifr_flags & (IFF_UP | IFF_LOOPBACK)) == (IFF_UP | IFF_LOOPBACK));
	check("SIOCGIFINDEX lo", ioctl(fd, SIOCGIFINDEX, &r) == 0 && r.ifr_ifindex >= 1);
	check("if_nametoindex(lo)", if_nametoindex("lo") >= 1);
	strcpy(r.ifr_name, "nosuch0");
	check_err("SIOCGIFFLAGS nosuch0 ENODEV", ioctl(fd, SIOCGIFFLAGS, &r), ENODEV);
	close(fd);
}

/* A non-blocking connect's failure: at once, or once poll says so. */
static int nonblocking_error(int fd, const struct sockaddr_storage *ss, socklen_t len)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	socklen_t el = sizeof(int);
	int err = 0;

	if (connect(fd, (const struct sockaddr *)ss, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return errno;
	if (poll(&p, 1, 10000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el))
		return -1;
	return err;
}

/* kiln only: nothing but loopback. */
static int test_unreach(void)
{
	struct sockaddr_storage ss;
	socklen_t len = mkaddr(&ss, AF_INET, "10.0.0.1", 80);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	check("connect 10.0.0.1 ENETUNREACH", nonblocking_error(fd, &ss, len) == ENETUNREACH);
	close(fd);
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	len = mkaddr(&ss, AF_INET6, "2001:db8::1", 80);
	check_err("connect 2001:db8::1 ENETUNREACH", connect(fd, (struct sockaddr *)&ss, len),
	          ENETUNREACH);
	close(fd);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	len = mkaddr(&ss, AF_INET, "8.8.8.8", 53);
	check_err("udp sendto 8.8.8.8 ENETUNREACH",
	          sendto(fd, "q", 1, 0, (struct sockaddr *)&ss, len), ENETUNREACH);
	close(fd);
	printf("inetsock unreach: %s\n", failures ? "FAILED" : "all ok");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "unreach"))
		return test_unreach();
	test_echo("127.0.0.1", AF_INET, "127.0.0.1", AF_INET, "127.0.0.1", "127.0.0.1");
	test_echo("::1", AF_INET6, "::1", AF_INET6, "::1", "::1");
	test_echo("v4 to ::", AF_INET6, "::", AF_INET, "127.0.0.1", "::ffff:127.0.0.1");
	test_errors();
	test_v6();
	test_nonblocking();
	test_resets();
	test_udp();
	test_ioctls();
	printf("inetsock: %s\n", failures ? "FAILED" : "all ok");
	return failures ? 1 : 0;
}
