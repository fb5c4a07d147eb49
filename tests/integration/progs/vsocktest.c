/* AF_VSOCK in the guest, driven from the host by tests/integration/vsock_test.py.
 *
 *   vsocktest serve PORT     listen on PORT, print "listening PORT", and serve
 *                            each connection in a child process; its first
 *                            line is a command:
 *       ECHO             echo everything back in upper case until end of file
 *       HALF             read to end of file, then write "got N\n"
 *       RECV N           read N bytes, write "<sha256> N\n"
 *       SEND N           write N bytes (xorshift), then "<sha256>\n"
 *       DIAL PORT N [nb] connect to the host (CID 2) at PORT (non-blocking
 *                        connect with "nb"), send N bytes, shut down writing,
 *                        read the host's sha256 line; write "DIAL ok <sha>" or
 *                        "DIAL err <errno name>"
 *       SINK N           read N bytes, write "done N" (no hashing: for benchmarks)
 *       SOURCE N         write N bytes of one repeated buffer (ditto)
 *       INTR             a blocked read: interrupted (EINTR), restarted
 *                        (SA_RESTART), timed out (SO_RCVTIMEO); report
 *       POLL             non-blocking reads, poll, FIONREAD, MSG_PEEK, POLLRDHUP
 *       HOLD             write "holding", read until an error or end of file and
 *                        print how it ended on the console (transport reset test)
 *       SIGPIPE          write "ready", then write until the host's close makes it
 *                        fail: EPIPE with one SIGPIPE, none with MSG_NOSIGNAL;
 *                        prints "sigpipe ok" (or what went wrong) on the console
 *       MEMFREE          write the MemFree line of /proc/meminfo (leak checks)
 *       PING             write "pong"
 *       QUIT             write "bye" and end the server (exit status 0)
 *   vsocktest selftest       socket calls that need no peer; prints "selftest ok"
 *   vsocktest nodev          without a vsock device: socket() fails with EAFNOSUPPORT
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------------- sha256 */

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t n;
};

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++)
		w[i] = w[i - 16] + (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3)) +
		       w[i - 7] + (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10));
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
	e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 =
		    h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
	s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static void sha_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->n = 0;
}

static void sha_update(struct sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;

	s->len += len;
	while (len) {
		if (!s->n && len >= 64) {
			sha_block(s, p);
			p += 64, len -= 64;
			continue;
		}
		size_t take = 64 - s->n < len ? 64 - s->n : len;
		memcpy(s->buf + s->n, p, take);
		s->n += take, p += take, len -= take;
		if (s->n == 64) {
			sha_block(s, s->buf);
			s->n = 0;
		}
	}
}

static void sha_hex(struct sha256 *s, char out[65])
{
	uint64_t bits = s->len * 8;
	uint8_t pad[72] = {0x80};
	size_t padlen = (s->n < 56 ? 56 : 120) - s->n;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (uint8_t)(bits >> (56 - 8 * i));
	sha_update(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++)
		sprintf(out + 8 * i, "%08x", s->h[i]);
}

/* ---------------------------------------------------------------- helpers */

static uint64_t xs_state;

static void fill(uint8_t *buf, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t x = xs_state;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		xs_state = x;
		memcpy(buf + i, &x, n - i < 8 ? n - i : 8);
	}
}

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w, n -= (size_t)w;
	}
	return 0;
}

static int say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(int fd, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return write_all(fd, line, (size_t)n);
}

/* One line, byte by byte, so that no byte after it is consumed. */
static int read_line(int fd, char *buf, size_t size)
{
	size_t n = 0;

	while (n + 1 < size) {
		ssize_t r = read(fd, buf + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return (int)n;
}

static const char *errname(int e)
{
	switch (e) {
	case ECONNRESET:
		return "ECONNRESET";
	case ECONNREFUSED:
		return "ECONNREFUSED";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case ENETUNREACH:
		return "ENETUNREACH";
	case EPIPE:
		return "EPIPE";
	default:
		return strerror(e);
	}
}

#define CHUNK (256 * 1024)
static uint8_t buf[CHUNK];

/* ---------------------------------------------------------------- commands */

static void cmd_echo(int fd)
{
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] >= 'a' && buf[i] <= 'z')
				buf[i] -= 32;
		if (n > 0 && write_all(fd, buf, (size_t)n))
			return;
	}
}

static void cmd_half(int fd)
{
	unsigned long long total = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += (size_t)n;
	say(fd, "got %llu\n", total);
}

static void cmd_recv(int fd, unsigned long long want)
{
	unsigned long long got = 0;
	struct sha256 s;
	char hex[65];
	ssize_t n;

	sha_init(&s);
	while (got < want) {
		size_t ask = want - got < sizeof(buf) ? (size_t)(want - got) : sizeof(buf);
		n = read(fd, buf, ask);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sha_update(&s, buf, (size_t)n);
		got += (size_t)n;
	}
	sha_hex(&s, hex);
	say(fd, "%s %llu\n", hex, got);
}

static int send_stream(int fd, unsigned long long n, char hex[65])
{
	struct sha256 s;

	sha_init(&s);
	xs_state = 0x9e3779b97f4a7c15ULL ^ n;
	while (n) {
		size_t len = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		fill(buf, len);
		sha_update(&s, buf, len);
		if (write_all(fd, buf, len))
			return -1;
		n -= len;
	}
	sha_hex(&s, hex);
	return 0;
}

static void cmd_sink(int fd, unsigned long long want)
{
	unsigned long long got = 0;
	ssize_t n;

	while (got < want) {
		n = read(fd, buf, want - got < sizeof(buf) ? (size_t)(want - got) : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	say(fd, "done %llu\n", got);
}

static void cmd_source(int fd, unsigned long long n)
{
	memset(buf, 0x5a, sizeof(buf));
	while (n) {
		size_t len = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		if (write_all(fd, buf, len))
			return;
		n -= len;
	}
}

static void cmd_send(int fd, unsigned long long n)
{
	char hex[65];

	if (send_stream(fd, n, hex) == 0)
		say(fd, "%s\n", hex);
}

static int connect_host(unsigned port, int nonblock)
{
	struct sockaddr_vm a = {
	    .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_HOST, .svm_port = port};
	int fd = socket(AF_VSOCK, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0), err;
	socklen_t len = sizeof(err);
	struct pollfd p;

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return fd;
	if (!nonblock || errno != EINPROGRESS) {
		err = errno;
		close(fd);
		return -err;
	}
	p = (struct pollfd){.fd = fd, .events = POLLOUT};
	if (poll(&p, 1, 10000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
		close(fd);
		return -ETIMEDOUT;
	}
	if (err) {
		close(fd);
		return -err;
	}
	fcntl(fd, F_SETFL, 0);
	return fd;
}

static void cmd_dial(int fd, unsigned port, unsigned long long n, int nonblock)
{
	char hex[65], line[128];
	int s = connect_host(port, nonblock);

	if (s < 0) {
		say(fd, "DIAL err %s\n", errname(-s));
		return;
	}
	if (send_stream(s, n, hex) || shutdown(s, SHUT_WR) ||
	    read_line(s, line, sizeof(line)) < 0) {
		say(fd, "DIAL err %s\n", errname(errno));
	} else if (strcmp(line, hex)) {
		say(fd, "DIAL mismatch guest %s host %s\n", hex, line);
	} else {
		say(fd, "DIAL ok %s\n", hex);
	}
	close(s);
}

static void on_alarm(int sig)
{
}

static void arm(int restart)
{
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = restart ? SA_RESTART : 0};
	struct itimerval it = {.it_value = {.tv_usec = 200000}};

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

static void cmd_intr(int fd)
{
	struct timeval tv = {.tv_usec = 100000};
	char c;
	ssize_t n;

	arm(0);
	n = read(fd, &c, 1);
	if (n >= 0 || errno != EINTR) {
		say(fd, "INTR read gave %zd (%s), not EINTR\n", n, strerror(errno));
		return;
	}
	say(fd, "eintr\n");
	arm(1); /* the host writes a byte after 500 ms: the read restarts */
	n = read(fd, &c, 1);
	if (n != 1 || c != 'x') {
		say(fd, "INTR restarted read gave %zd (%s)\n", n, strerror(errno));
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = read(fd, &c, 1);
	if (n >= 0 || errno != EAGAIN) {
		say(fd, "INTR read with SO_RCVTIMEO gave %zd (%s)\n", n, strerror(errno));
		return;
	}
	say(fd, "INTR ok\n");
}

static void cmd_poll(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
	char got[8];
	int avail = -1;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (read(fd, got, 1) >= 0 || errno != EAGAIN) {
		say(fd, "POLL non-blocking read did not give EAGAIN\n");
		return;
	}
	if (poll(&p, 1, 0) != 0) {
		say(fd, "POLL: ready with nothing to read (%#x)\n", p.revents);
		return;
	}
	say(fd, "ready\n"); /* the host sends "abc" */
	if (poll(&p, 1, 5000) != 1 || p.revents != POLLIN) {
		say(fd, "POLL: revents %#x, expected POLLIN\n", p.revents);
		return;
	}
	usleep(100000); /* all three bytes */
	if (ioctl(fd, FIONREAD, &avail) || avail != 3 || recv(fd, got, 8, MSG_PEEK) != 3 ||
	    memcmp(got, "abc", 3) || read(fd, got, 8) != 3) {
		say(fd, "POLL: FIONREAD %d, peek or read wrong\n", avail);
		return;
	}
	say(fd, "drained\n"); /* the host shuts down writing */
	if (poll(&p, 1, 5000) != 1 || p.revents != (POLLIN | POLLRDHUP) || read(fd, got, 8) != 0) {
		say(fd, "POLL: revents %#x at end of file\n", p.revents);
		return;
	}
	say(fd, "POLL ok\n");
}

static void cmd_hold(int fd)
{
	ssize_t n;
	int e1, e2;

	say(fd, "holding\n");
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	e1 = n < 0 ? errno : 0;
	n = write(fd, "x", 1);
	e2 = n < 0 ? errno : 0;
	printf("HOLD read: %s, then write: %s\n", e1 ? errname(e1) : "eof",
	       e2 ? errname(e2) : "ok");
}

static volatile sig_atomic_t pipe_signals;

static void on_pipe(int sig)
{
	pipe_signals++;
}

static void cmd_sigpipe(int fd)
{
	struct sigaction sa = {.sa_handler = on_pipe};
	ssize_t n;
	int e1, e2;

	sigaction(SIGPIPE, &sa, NULL);
	say(fd, "ready\n");
	memset(buf, 'p', sizeof(buf));
	while ((n = write(fd, buf, sizeof(buf))) > 0)
		;
	e1 = errno;
	n = send(fd, buf, 10, MSG_NOSIGNAL);
	e2 = errno;
	if (e1 == EPIPE && n < 0 && e2 == EPIPE && pipe_signals == 1)
		printf("sigpipe ok\n");
	else
		printf("sigpipe: write %s, send %zd %s, %d signals\n", errname(e1), n, errname(e2),
		       (int)pipe_signals);
}

static void serve_one(int fd)
{
	char line[128], arg[32] = "";
	unsigned long long n = 0;
	unsigned port = 0;

	if (read_line(fd, line, sizeof(line)) < 0)
		return;
	if (!strcmp(line, "ECHO"))
		cmd_echo(fd);
	else if (!strcmp(line, "HALF"))
		cmd_half(fd);
	else if (sscanf(line, "RECV %llu", &n) == 1)
		cmd_recv(fd, n);
	else if (sscanf(line, "SEND %llu", &n) == 1)
		cmd_send(fd, n);
	else if (sscanf(line, "SINK %llu", &n) == 1)
		cmd_sink(fd, n);
	else if (sscanf(line, "SOURCE %llu", &n) == 1)
		cmd_source(fd, n);
	else if (sscanf(line, "DIAL %u %llu %31s", &port, &n, arg) >= 2)
		cmd_dial(fd, port, n, !strcmp(arg, "nb"));
	else if (!strcmp(line, "INTR"))
		cmd_intr(fd);
	else if (!strcmp(line, "POLL"))
		cmd_poll(fd);
	else if (!strcmp(line, "HOLD"))
		cmd_hold(fd);
	else if (!strcmp(line, "SIGPIPE"))
		cmd_sigpipe(fd);
	else if (!strcmp(line, "MEMFREE")) {
		FILE *f = fopen("/proc/meminfo", "r");
		char l[128];
		while (f && fgets(l, sizeof(l), f))
			if (!strncmp(l, "MemFree:", 8))
				say(fd, "%s", l);
		if (f)
			fclose(f);
	} else if (!strcmp(line, "PING"))
		say(fd, "pong\n");
	else if (!strcmp(line, "QUIT")) {
		say(fd, "bye\n");
		kill(getppid(), SIGUSR1);
	} else
		say(fd, "unknown command '%s'\n", line);
}

static volatile sig_atomic_t quit;

static void on_usr1(int sig)
{
	quit = 1;
}

static int serve(unsigned port)
{
	struct sockaddr_vm a = {
	    .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = port};
	struct sigaction sa = {.sa_handler = on_usr1}; /* no SA_RESTART: accept fails with EINTR */
	int lfd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 128)) {
		printf("serve: %s\n", strerror(errno));
		return 1;
	}
	printf("listening %u\n", port);
	fflush(stdout);
	while (!quit) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), err = errno;
		pid_t pid;

		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (fd < 0) {
			if (err != EINTR) {
				printf("accept: %s\n", strerror(err));
				return 1;
			}
			continue;
		}
		pid = fork();
		if (pid == 0) {
			close(lfd);
			serve_one(fd);
			close(fd);
			_exit(0);
		}
		if (pid < 0)
			printf("fork: %s\n", strerror(errno));
		close(fd);
	}
	while (wait(NULL) > 0)
		;
	printf("server done\n");
	return 0;
}

/* ---------------------------------------------------------------- selftest */

static int failures;

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			printf("FAIL %s:%d: %s (errno %s)\n", __FILE__, __LINE__, #cond, \
			       strerror(errno));                                         \
			failures++;                                                      \
		}                                                                        \
	} while (0)

static int selftest(void)
{
	struct sockaddr_vm a = {
	    .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = 7000};
	struct sockaddr_vm b;
	socklen_t len;
	struct stat st;
	int fd, fd2, v, sv[2];
	char c;

	errno = 0;
	CHECK(socket(AF_APPLETALK, SOCK_DGRAM, 0) < 0 && errno == EAFNOSUPPORT);
	CHECK(socket(AF_VSOCK, SOCK_DGRAM, 0) < 0 && errno == ESOCKTNOSUPPORT);
	CHECK(socket(AF_VSOCK, SOCK_STREAM, 99) < 0 && errno == EPROTONOSUPPORT);
	CHECK(socketpair(AF_VSOCK, SOCK_STREAM, 0, sv) < 0 && errno == EOPNOTSUPP);
	CHECK(bind(0, (struct sockaddr *)&a, sizeof(a)) < 0 && errno == ENOTSOCK);
	CHECK(bind(999, (struct sockaddr *)&a, sizeof(a)) < 0 && errno == EBADF);

	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	CHECK(fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode));
	CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC);
	len = sizeof(v);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) == 0 && v == SOCK_STREAM);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) == 0 && v == AF_VSOCK);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &len) == 0 && v == 0);
	v = 1;
	CHECK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)) == 0);
	v = 65536;
	CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) == 0);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) == 0);
	CHECK(listen(fd, 5) < 0 && errno == EINVAL); /* not bound */
	CHECK(read(fd, &c, 1) < 0 && errno == ENOTCONN);
	CHECK(write(fd, &c, 1) < 0 && (errno == ENOTCONN || errno == EPIPE));
	CHECK(shutdown(fd, SHUT_RDWR) < 0 && errno == ENOTCONN);
	len = sizeof(b);
	CHECK(getpeername(fd, (struct sockaddr *)&b, &len) < 0 && errno == ENOTCONN);
	CHECK(bind(fd, (struct sockaddr *)&a, 4) < 0 && errno == EINVAL);
	b = a;
	b.svm_cid = 77;
	CHECK(bind(fd, (struct sockaddr *)&b, sizeof(b)) < 0 && errno == EADDRNOTAVAIL);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno == EINVAL);
	len = sizeof(b);
	CHECK(getsockname(fd, (struct sockaddr *)&b, &len) == 0 && len == sizeof(b) &&
	      b.svm_family == AF_VSOCK && b.svm_port == 7000 && b.svm_cid == VMADDR_CID_ANY);
	CHECK(listen(fd, 5) == 0);
	len = sizeof(v);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v == 1);
	fd2 = socket(AF_VSOCK, SOCK_STREAM, 0);
	CHECK(bind(fd2, (struct sockaddr *)&a, sizeof(a)) < 0 && errno == EADDRINUSE);
	b = a;
	b.svm_port = VMADDR_PORT_ANY;
	CHECK(bind(fd2, (struct sockaddr *)&b, sizeof(b)) == 0);
	len = sizeof(b);
	CHECK(getsockname(fd2, (struct sockaddr *)&b, &len) == 0 && b.svm_port != VMADDR_PORT_ANY);
	close(fd2);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	CHECK(accept(fd, NULL, NULL) < 0 && errno == EAGAIN);
	{
		struct pollfd p = {.fd = fd, .events = POLLIN};
		CHECK(poll(&p, 1, 0) == 0);
	}
	close(fd);
	/* The port is free again once closed. */
	fd = socket(AF_VSOCK, SOCK_STREAM, 0);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	close(fd);

	fd = socket(AF_VSOCK, SOCK_STREAM, 0);
	b = (struct sockaddr_vm){.svm_family = AF_VSOCK, .svm_cid = 5, .svm_port = 1};
	CHECK(connect(fd, (struct sockaddr *)&b, sizeof(b)) < 0 && errno == ENETUNREACH);
	CHECK(sendto(fd, "x", 1, 0, (struct sockaddr *)&b, sizeof(b)) < 0 && errno == EOPNOTSUPP);
	{
		struct timeval tv = {.tv_sec = 3};
		len = sizeof(tv);
		CHECK(setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT, &tv, sizeof(tv)) ==
		      0);
		tv.tv_sec = 0;
		CHECK(getsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT, &tv, &len) == 0 &&
		      tv.tv_sec == 3);
		tv = (struct timeval){.tv_usec = 200000};
		CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
		tv.tv_usec = 0;
		len = sizeof(tv);
		CHECK(getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) == 0 &&
		      tv.tv_usec == 200000);
	}
	{
		unsigned long long sz = 0;
		len = sizeof(sz);
		CHECK(getsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_BUFFER_SIZE, &sz, &len) == 0 &&
		      sz > 0);
	}
	close(fd);
	if (failures)
		return 1;
	printf("selftest ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve((unsigned)strtoul(argv[2], NULL, 10));
	if (argc == 2 && !strcmp(argv[1], "selftest"))
		return selftest();
	if (argc == 2 && !strcmp(argv[1], "nodev")) {
		errno = 0;
		CHECK(socket(AF_VSOCK, SOCK_STREAM, 0) < 0 && errno == EAFNOSUPPORT);
		if (!failures)
			printf("nodev ok\n");
		return failures != 0;
	}
	fprintf(stderr, "usage: vsocktest serve PORT | selftest | nodev\n");
	return 2;
}
