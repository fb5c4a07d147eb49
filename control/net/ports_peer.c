/* SPDX-License-Identifier: MIT */
/* Whom the guest's server sees as the client of a forwarded connection
 * (ports.h): kilnd's own HTTP client, or, for a client that holds the API
 * key, the address it names in Kiln-Peer (`kiln port-forward` names the
 * program that connected to its local listener). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ports.h"

/* "a.b.c.d:PORT" or "[v6]:PORT", PORT 1..65535, nothing else. */
static bool parse_peer(const char *v, struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN + 1], *end;
	const char *colon;
	size_t n;
	long port;

	memset(ss, 0, sizeof(*ss));
	if (*v == '[') {
		const char *close = strchr(v, ']');

		if (!close || close[1] != ':')
			return false;
		n = (size_t)(close - v - 1);
		colon = close + 1;
		v++;
	} else {
		colon = strrchr(v, ':');
		if (!colon)
			return false;
		n = (size_t)(colon - v);
	}
	if (!n || n >= sizeof(host) || colon[1] < '1' || colon[1] > '9')
		return false;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || errno || port > 65535)
		return false;
	memcpy(host, v, n);
	host[n] = 0;
	if (v[-1] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		return inet_pton(AF_INET6, host, &a->sin6_addr) == 1;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &a->sin_addr) == 1;
}

int ports_peer(struct http_conn *c, const struct http_req *req, bool keyed,
               struct sockaddr_storage *ss)
{
	const char *named = http_header(req, "Kiln-Peer");

	/* Only a client that may do anything with the sandbox speaks for
	 * another: an anonymous one (public ports) is what it is. */
	if (named && keyed)
		return parse_peer(named, ss) ? 0 : -EINVAL;
	if (!http_conn_peer(c, ss))
		ss->ss_family = AF_UNSPEC; /* the unix socket: no address */
	return 0;
}

bool ports_peer_text(const struct sockaddr_storage *ss, char *out, size_t n)
{
	const void *a;

	if (ss->ss_family == AF_INET)
		a = &((const struct sockaddr_in *)ss)->sin_addr;
	else if (ss->ss_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	else
		return false;
	return inet_ntop(ss->ss_family, a, out, (socklen_t)n) != NULL;
}
