/* SPDX-License-Identifier: MIT */
/*
 * kiln-hostile: misbehaving HTTP/WebSocket clients for kilnd's tests.
 *
 *   kiln-hostile raw SOCK                  send stdin as is, print the status line
 *   kiln-hostile slowloris SOCK MAXSECS    a header byte per second; exit 0 if
 *                                          kilnd hangs up within MAXSECS
 *   kiln-hostile headers SOCK N BYTES      N headers of BYTES each; print status
 *   kiln-hostile ws-noread SOCK PATH MAXSECS
 *                                          open a WebSocket, never read; exit 0 if
 *                                          kilnd hangs up within MAXSECS
 *   kiln-hostile ws-unmasked SOCK PATH     send an unmasked frame; print the close code
 *   kiln-hostile hold SOCK N               hold N idle connections, then print the
 *                                          status of one more request
 *   kiln-hostile idle SOCK N SECS          open N connections that send nothing,
 *                                          print "open N", keep them SECS seconds
 *
 * SOCK is a unix socket's path, or tcp:PORT for 127.0.0.1:PORT.
 *   kiln-hostile ws-script SOCK PATH       a well-behaved but demanding client:
 *                                          resize to 100x30, ping, input split over
 *                                          a fragmented message; prints what comes back
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "http/ws.h"

static int dial(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bool tcp = !strncmp(path, "tcp:", 4);
	int fd = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	in.sin_port = htons((uint16_t)atoi(path + 4));
	if (fd < 0 || (tcp ? connect(fd, (struct sockaddr *)&in, sizeof(in))
	                   : connect(fd, (struct sockaddr *)&sa, sizeof(sa)))) {
		perror("connect");
		exit(2);
	}
	return fd;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void put(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* Read until the peer closes (or 10 s); print the first line. */
static int status_line(int fd)
{
	char buf[65536];
	size_t have = 0;
	double end = now() + 10;

	while (have < sizeof(buf) - 1 && now() < end) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pf, 1, 1000) <= 0)
			continue;
		n = recv(fd, buf + have, sizeof(buf) - 1 - have, 0);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = 0;
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[have] = 0;
	if (!have) {
		printf("(closed without an answer)\n");
		return 1;
	}
	*strchrnul(buf, '\r') = 0;
	printf("%s\n", buf);
	return 0;
}

/* Wait without reading until the peer shuts down; seconds it took or -1. */
static double wait_hangup(int fd, double max)
{
	double start = now();

	while (now() - start < max) {
		struct pollfd pf = {.fd = fd, .events = POLLRDHUP};

		if (poll(&pf, 1, 200) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return now() - start;
	}
	return -1;
}

static int ws_open(const char *sock, const char *path)
{
	char req[1024], key[25];
	int fd = dial(sock);

	ws_client_key(key);
	snprintf(req, sizeof(req),
	         "GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	         "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n",
	         path, key);
	put(fd, req, strlen(req));
	return fd;
}

/* Skip the HTTP answer; returns leftover bytes count moved to buf's start. */
static size_t ws_wait_101(int fd, uint8_t *buf, size_t cap)
{
	size_t have = 0;
	char *end;

	while (have < cap) {
		ssize_t n = recv(fd, buf + have, cap - have, 0);

		if (n <= 0)
			exit(1);
		have += (size_t)n;
		if ((end = memmem(buf, have, "\r\n\r\n", 4)))
			break;
	}
	if (strncmp((char *)buf, "HTTP/1.1 101", 12)) {
		printf("no upgrade\n");
		exit(1);
	}
	have -= (size_t)(end + 4 - (char *)buf);
	memmove(buf, end + 4, have);
	return have;
}

static void raw_frame(int fd, uint8_t b0, const char *p, size_t n)
{
	uint8_t f[256] = {b0, (uint8_t)(0x80 | n), 1, 2, 3, 4};

	for (size_t i = 0; i < n; i++)
		f[6 + i] = (uint8_t)p[i] ^ f[2 + (i & 3)];
	put(fd, (char *)f, 6 + n);
}

struct script {
	int fd;
	bool closed;
};

static int sc_write(void *ctx, const void *p, size_t n)
{
	put(((struct script *)ctx)->fd, p, n);
	return 0;
}

static int sc_msg(void *ctx, int op, uint8_t *p, size_t n, bool fin)
{
	if (op == WS_BINARY)
		fwrite(p, 1, n, stdout);
	else
		printf("[text %.*s]\n", (int)n, (char *)p);
	return 0;
}

static void sc_close(void *ctx, uint16_t code)
{
	printf("[close %d]\n", code);
	((struct script *)ctx)->closed = true;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 2 ? argv[1] : "", *sock = argc > 2 ? argv[2] : "";
	int fd;

	if (!strcmp(cmd, "raw")) {
		char buf[65536];
		ssize_t n;

		fd = dial(sock);
		while ((n = read(0, buf, sizeof(buf))) > 0)
			put(fd, buf, (size_t)n);
		return status_line(fd);
	}
	if (!strcmp(cmd, "slowloris") && argc == 4) {
		double max = atof(argv[3]), start = now();
		const char *req = "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ";

		fd = dial(sock);
		put(fd, req, strlen(req));
		while (now() - start < max) {
			struct pollfd pf = {.fd = fd, .events = POLLRDHUP};

			if (send(fd, "a", 1, MSG_NOSIGNAL) != 1 ||
			    (poll(&pf, 1, 1000) > 0 &&
			     (pf.revents & (POLLRDHUP | POLLHUP | POLLERR)))) {
				printf("closed after %.1f s\n", now() - start);
				return 0;
			}
		}
		printf("still open after %.1f s\n", max);
		return 1;
	}
	if (!strcmp(cmd, "headers") && argc == 5) {
		int n = atoi(argv[3]), bytes = atoi(argv[4]);
		char *v = malloc((size_t)bytes + 1);

		memset(v, 'x', (size_t)bytes);
		v[bytes] = 0;
		fd = dial(sock);
		put(fd, "GET /health HTTP/1.1\r\nHost: x\r\n", 31);
		for (int i = 0; i < n; i++) {
			char h[64];

			snprintf(h, sizeof(h), "X-H%d: ", i);
			put(fd, h, strlen(h));
			put(fd, v, (size_t)bytes);
			put(fd, "\r\n", 2);
		}
		put(fd, "\r\n", 2);
		return status_line(fd);
	}
	if (!strcmp(cmd, "ws-noread") && argc == 5) {
		double t;
		int queued = 0;

		fd = ws_open(sock, argv[3]);
		t = wait_hangup(fd, atof(argv[4]));
		ioctl(fd, FIONREAD, &queued);
		if (t < 0) {
			printf("still open after %s s (%d bytes queued)\n", argv[4], queued);
			return 1;
		}
		printf("closed after %.1f s (%d bytes queued)\n", t, queued);
		return 0;
	}
	if (!strcmp(cmd, "ws-unmasked") && argc == 4) {
		uint8_t frame[] = {0x82, 0x03, 'a', 'b', 'c'}, buf[65536];
		size_t have = 0;
		char *end;

		fd = ws_open(sock, argv[3]);
		/* wait for the 101 */
		while (have < sizeof(buf)) {
			ssize_t n = recv(fd, buf + have, sizeof(buf) - have, 0);

			if (n <= 0)
				return 1;
			have += (size_t)n;
			if ((end = memmem(buf, have, "\r\n\r\n", 4)))
				break;
		}
		if (strncmp((char *)buf, "HTTP/1.1 101", 12)) {
			printf("no upgrade\n");
			return 1;
		}
		have -= (size_t)(end + 4 - (char *)buf);
		memmove(buf, end + 4, have);
		put(fd, (char *)frame, sizeof(frame));
		/* find the close frame among whatever the terminal printed */
		for (double t0 = now(); now() - t0 < 5;) {
			for (size_t i = 0; i + 4 <= have;) {
				size_t len = buf[i + 1] & 0x7f, hdr = 2;

				if (len == 126) {
					len = (size_t)buf[i + 2] << 8 | buf[i + 3];
					hdr = 4;
				}
				if (i + hdr + len > have)
					break;
				if ((buf[i] & 0x0f) == WS_CLOSE && len >= 2) {
					printf("close %d\n", buf[i + hdr] << 8 | buf[i + hdr + 1]);
					return 0;
				}
				i += hdr + len;
			}
			ssize_t n = recv(fd, buf + have, sizeof(buf) - have, 0);

			if (n <= 0)
				break;
			have += (size_t)n;
		}
		printf("no close frame\n");
		return 1;
	}
	if (!strcmp(cmd, "hold") && argc == 4) {
		int n = atoi(argv[3]);

		for (int i = 0; i < n; i++)
			dial(sock);
		usleep(200000);
		fd = dial(sock);
		put(fd, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 34);
		return status_line(fd);
	}
	if (!strcmp(cmd, "idle") && argc == 5) {
		int n = atoi(argv[3]);

		if (n < 1 || n > 4096)
			return 2;
		for (int i = 0; i < n; i++)
			dial(sock); /* kept open until exit */
		printf("open %d\n", n);
		fflush(stdout);
		sleep((unsigned)atoi(argv[4]));
		return 0;
	}
	if (!strcmp(cmd, "ws-script") && argc == 4) {
		static const struct ws_ops ops = {
		    .on_message = sc_msg, .on_close = sc_close, .write = sc_write};
		struct script sc;
		struct ws ws;
		uint8_t buf[65536];
		size_t have;
		const char *resize = "{\"resize\":{\"cols\":100,\"rows\":30}}";

		fd = ws_open(sock, argv[3]);
		sc.fd = fd;
		sc.closed = false;
		have = ws_wait_101(fd, buf, sizeof(buf));
		ws_init(&ws, true, &ops, &sc);
		ws_send(&ws, WS_TEXT, resize, strlen(resize));
		raw_frame(fd, 0x80 | WS_PING, "p1", 2);
		usleep(100000);
		raw_frame(fd, WS_BINARY, "stty si", 7);            /* FIN clear */
		raw_frame(fd, 0x80 | WS_CONT, "ze\nexit 5\n", 10); /* the rest */
		setvbuf(stdout, NULL, _IONBF, 0);
		if (have && ws_feed(&ws, buf, have))
			return 1;
		for (double t0 = now(); !sc.closed && now() - t0 < 5;) {
			struct pollfd pf = {.fd = fd, .events = POLLIN};
			ssize_t n;

			if (poll(&pf, 1, 200) <= 0)
				continue;
			n = recv(fd, buf, sizeof(buf), 0);
			if (n <= 0 || ws_feed(&ws, buf, (size_t)n))
				break;
		}
		return sc.closed ? 0 : 1;
	}
	fprintf(stderr, "usage: see the comment at the top of tests/e2e/hostile.c\n");
	return 2;
}
