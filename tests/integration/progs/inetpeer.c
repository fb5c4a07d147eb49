// SPDX-License-Identifier: MIT
/*
 * inetpeer: KILN_SO_PEER (include/kiln/sockpeer.h), kiln only (Linux has
 * no such level). Run as root (init): a connection whose socket names a
 * peer is accepted from that address and port (accept's address and
 * getpeername agree), the connecting socket's own addresses stay loopback,
 * the next connection without it is from 127.0.0.1 again, an IPv4 peer is
 * v4-mapped to an IPv6 listener, an IPv6 peer cannot be told to an IPv4
 * listener (which sees 127.0.0.1), AF_UNSPEC forgets it, and the errors:
 * EINVAL (bad length or family), EISCONN (connected or listening),
 * ENOPROTOOPT (UDP), EOPNOTSUPP (getsockopt), EPERM (uid 1000).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kiln/sockpeer.h>

#include "inetaddr.h"
#include "sockcheck.h"

/* "ADDR PORT" of ss into buf. */
static const char *text(const struct sockaddr_storage *ss, char *buf)
{
	char a[64];

	sprintf(buf, "%s %d", ip_of(ss, a), port_of(ss));
	return buf;
}

/* Connect a socket of family to ip:port of l, naming peer (pfam NULL:
 * none), accept it; want is the "ADDR PORT" the server must see. */
static void one(const char *what, int family, const char *ip, int pfam, const char *pip, int pport,
                const char *want_ip)
{
	struct sockaddr_storage ss, acc, peer, cl;
	socklen_t len, alen = sizeof(acc), plen = sizeof(peer), clen = sizeof(cl);
	int lport, l = listener(family, ip, &lport), c = socket(family, SOCK_STREAM, 0), a = -1;
	char b1[96], b2[96], want[96], msg[256];
	int ok = l >= 0 && c >= 0;

	if (ok && pfam) {
		len = mkaddr(&peer, pfam, pip, pport);
		ok = !setsockopt(c, KILN_SOL_PEER, KILN_SO_PEER, &peer, len);
	}
	len = mkaddr(&ss, family, ip, lport);
	if (ok)
		ok = !connect(c, (struct sockaddr *)&ss, len) &&
		     (a = accept(l, (struct sockaddr *)&acc, &alen)) >= 0 &&
		     !getpeername(a, (struct sockaddr *)&peer, &plen) &&
		     !getsockname(c, (struct sockaddr *)&cl, &clen);
	if (ok) {
		/* the peer the caller named, or the client socket's own address */
		if (strcmp(want_ip, "self"))
			sprintf(want, "%s %d", want_ip, pport);
		else
			text(&cl, want);
		snprintf(msg, sizeof(msg), "%s (accept: %s, getpeername: %s, want %s)", what,
		         text(&acc, b1), text(&peer, b2), want);
		ok = !strcmp(b1, want) && !strcmp(b2, want);
	} else {
		snprintf(msg, sizeof(msg), "%s (a call failed)", what);
	}
	check(msg, ok);
	if (ok) {
		/* the client's own view is unchanged: loopback both ends */
		len = sizeof(ss);
		getpeername(c, (struct sockaddr *)&ss, &len);
		snprintf(msg, sizeof(msg), "%s: the client's addresses stay (%s -> %s)", what,
		         text(&cl, b1), text(&ss, b2));
		check(msg, !strncmp(b1, family == AF_INET ? "127.0.0.1 " : "::1 ", 4) &&
		               !strncmp(b2, ip, strlen(ip)));
	}
	close(a);
	close(c);
	close(l);
}

static void errors(void)
{
	struct sockaddr_storage ss, peer;
	socklen_t plen = mkaddr(&peer, AF_INET, "198.51.100.1", 80), len;
	int lport, l = listener(AF_INET, "127.0.0.1", &lport), c = socket(AF_INET, SOCK_STREAM, 0);
	int u = socket(AF_INET, SOCK_DGRAM, 0), v = 0;
	socklen_t vlen = sizeof(v);
	pid_t pid;
	int st;

	check_err("short sockaddr_in EINVAL",
	          setsockopt(c, KILN_SOL_PEER, KILN_SO_PEER, &peer, plen - 1), EINVAL);
	((struct sockaddr_in *)&peer)->sin_family = AF_UNIX;
	check_err("AF_UNIX EINVAL", setsockopt(c, KILN_SOL_PEER, KILN_SO_PEER, &peer, plen),
	          EINVAL);
	plen = mkaddr(&peer, AF_INET, "198.51.100.1", 80);
	check_err("unknown option ENOPROTOOPT",
	          setsockopt(c, KILN_SOL_PEER, KILN_SO_PEER + 1, &peer, plen), ENOPROTOOPT);
	check_err("UDP ENOPROTOOPT", setsockopt(u, KILN_SOL_PEER, KILN_SO_PEER, &peer, plen),
	          ENOPROTOOPT);
	check_err("getsockopt EOPNOTSUPP", getsockopt(c, KILN_SOL_PEER, KILN_SO_PEER, &v, &vlen),
	          EOPNOTSUPP);
	check_err("a listener EISCONN", setsockopt(l, KILN_SOL_PEER, KILN_SO_PEER, &peer, plen),
	          EISCONN);
	len = mkaddr(&ss, AF_INET, "127.0.0.1", lport);
	check("connect", !connect(c, (struct sockaddr *)&ss, len));
	check_err("connected EISCONN", setsockopt(c, KILN_SOL_PEER, KILN_SO_PEER, &peer, plen),
	          EISCONN);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (setuid(1000))
			_exit(3);
		errno = 0;
		_exit(setsockopt(s, KILN_SOL_PEER, KILN_SO_PEER, &peer, plen) == -1 &&
		              errno == EPERM
		          ? 0
		          : 4);
	}
	check("uid 1000 EPERM",
	      pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(u);
	close(c);
	close(l);
}

/* Set, then AF_UNSPEC: the server sees the client's loopback address. */
static void forget(void)
{
	struct sockaddr_storage ss, peer, acc;
	socklen_t plen = mkaddr(&peer, AF_INET, "198.51.100.2", 81), alen = sizeof(acc), len;
	int lport, l = listener(AF_INET, "127.0.0.1", &lport), c = socket(AF_INET, SOCK_STREAM, 0),
	           a;
	sa_family_t unspec = AF_UNSPEC;
	char b[96];

	len = mkaddr(&ss, AF_INET, "127.0.0.1", lport);
	check("AF_UNSPEC forgets the peer",
	      !setsockopt(c, KILN_SOL_PEER, KILN_SO_PEER, &peer, plen) &&
	          !setsockopt(c, KILN_SOL_PEER, KILN_SO_PEER, &unspec, sizeof(unspec)) &&
	          !connect(c, (struct sockaddr *)&ss, len) &&
	          (a = accept(l, (struct sockaddr *)&acc, &alen)) >= 0 &&
	          !strncmp(text(&acc, b), "127.0.0.1 ", 10));
	close(c);
	close(l);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	one("v4 peer, v4 listener", AF_INET, "127.0.0.1", AF_INET, "203.0.113.9", 4321,
	    "203.0.113.9");
	one("no peer: loopback", AF_INET, "127.0.0.1", 0, NULL, 0, "self");
	one("v4 peer, v6 listener", AF_INET6, "::1", AF_INET, "203.0.113.9", 4322,
	    "::ffff:203.0.113.9");
	one("v6 peer, v6 listener", AF_INET6, "::1", AF_INET6, "2001:db8::5", 4323, "2001:db8::5");
	one("v6 peer, v4 listener: loopback", AF_INET, "127.0.0.1", AF_INET6, "2001:db8::5", 4324,
	    "self");
	forget();
	errors();
	printf("inetpeer: %s\n", failures ? "FAILED" : "all ok");
	return failures ? 1 : 0;
}
