// SPDX-License-Identifier: MIT
/*
 * resolve NAME PORT PATH: getaddrinfo() NAME (this libc's resolver, which
 * reads /etc/resolv.conf), connect to the first address that takes it and
 * print the body of GET PATH. Built static with musl-gcc by tests/e2e/net.sh
 * so that musl's resolver is tried in the guest besides glibc's.
 */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
	char req[512], buf[4096];
	int fd = -1, rc, body = 0;
	ssize_t n;

	if (argc != 4) {
		fprintf(stderr, "usage: resolve NAME PORT PATH\n");
		return 2;
	}
	rc = getaddrinfo(argv[1], argv[2], &hints, &res);
	if (rc) {
		fprintf(stderr, "resolve: %s: %s\n", argv[1], gai_strerror(rc));
		return 1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		perror("resolve: connect");
		return 1;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", argv[3], argv[1]);
	if (write(fd, req, strlen(req)) < 0)
		return 1;
	while ((n = read(fd, buf, sizeof(buf) - 1)) > 0) {
		char *p = buf;

		buf[n] = 0;
		if (!body) {
			p = strstr(buf, "\r\n\r\n");
			if (!p)
				continue; /* headers fit one read from a test server */
			p += 4;
			body = 1;
		}
		fputs(p, stdout);
	}
	close(fd);
	return 0;
}
