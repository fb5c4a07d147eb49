/* SPDX-License-Identifier: MIT */
/* Loopback addresses for the socket test programs (inetsock, inetpeer). */
#ifndef KILN_TEST_INETADDR_H
#define KILN_TEST_INETADDR_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

/* An address of the family: 127.0.0.1 / ::1 / ::ffff:127.0.0.1 or a
 * wildcard, and a port. */
static inline socklen_t mkaddr(struct sockaddr_storage *ss, int family, const char *ip, int port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, ip, &a->sin_addr);
		return sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, ip, &a->sin6_addr);
		return sizeof(*a);
	}
}

static inline int port_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)ss)->sin_port)
	                                : ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

static inline const char *ip_of(const struct sockaddr_storage *ss, char *buf)
{
	if (ss->ss_family == AF_INET)
		return inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, buf, 64);
	return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, buf, 64);
}

static inline int local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	return getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ? -1 : port_of(&ss);
}

/* A listener on ip and an ephemeral port; *port gets it. */
static inline int listener(int family, const char *ip, int *port)
{
	struct sockaddr_storage ss;
	socklen_t len = mkaddr(&ss, family, ip, 0);
	int fd = socket(family, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 16) < 0)
		return -1;
	*port = local_port(fd);
	return fd;
}

#endif
