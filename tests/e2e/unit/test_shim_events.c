/* SPDX-License-Identifier: MIT */
/* Unit tests for shim/events.c across containerd's restart: an event
 * published while containerd's ttrpc socket is away waits for it (it is
 * dialled again) and reaches it when it is back, events keep their order,
 * and one that waited longer than the bound is dropped without holding up
 * the next. Built with EVENTS_RETRY_MS=1500 (the shim's: 30 s). A fake
 * containerd here reads the Forward calls and answers them. */
#include <arpa/inet.h>
#include <check.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gen/events.pb-c.h"
#include "gen/ttrpc.pb-c.h"
#include "shim.h"

struct shim g_shim = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};

void shim_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* the events' timestamps: not what is tested here */
int64_t now_ns(void)
{
	return 1700000000LL * 1000000000;
}

static char dir[64], sock[96];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kiln-events-test.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/ttrpc.sock", dir);
	setenv("TTRPC_ADDRESS", sock, 1);
	g_shim.id = "c1";
	g_shim.ns = "default";
	g_shim.address = "/unused";
}

static void teardown(void)
{
	unlink(sock);
	rmdir(dir);
}

static void pause_ms(int ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&t, NULL);
}

/* containerd (back): a listening socket at sock */
static int listen_sock(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	strcpy(a.sun_path, sock);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	return fd;
}

static int read_n(int fd, void *p, size_t n)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};

	for (size_t got = 0; got < n;) {
		ssize_t r;

		if (poll(&pf, 1, 10000) != 1)
			return -1; /* bounded: 10 s */
		r = read(fd, (char *)p + got, n - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* One Forward call on c, answered; its topic (malloc'd), or NULL. */
static char *serve_one(int c)
{
	Ttrpc__Response rs = TTRPC__RESPONSE__INIT;
	Containerd__Events__ForwardRequest *fr;
	uint8_t hdr[10], *body, out[64];
	Ttrpc__Request *rq;
	char *topic = NULL;
	uint32_t n;
	size_t m;

	if (read_n(c, hdr, sizeof(hdr)))
		return NULL;
	n = ntohl(*(uint32_t *)hdr);
	ck_assert_uint_lt(n, 1u << 16);
	body = malloc(n + 1);
	ck_assert_int_eq(read_n(c, body, n), 0);
	rq = ttrpc__request__unpack(NULL, n, body);
	ck_assert_ptr_nonnull(rq);
	ck_assert_str_eq(rq->service, "containerd.services.events.ttrpc.v1.Events");
	ck_assert_str_eq(rq->method, "Forward");
	fr = containerd__events__forward_request__unpack(NULL, rq->payload.len, rq->payload.data);
	ck_assert_ptr_nonnull(fr);
	ck_assert_ptr_nonnull(fr->envelope);
	ck_assert_str_eq(fr->envelope->namespace_, "default");
	topic = strdup(fr->envelope->topic);
	containerd__events__forward_request__free_unpacked(fr, NULL);
	ttrpc__request__free_unpacked(rq, NULL);
	free(body);
	m = ttrpc__response__pack(&rs, out + 10);
	memcpy(out, hdr, 10); /* the same stream */
	*(uint32_t *)out = htonl((uint32_t)m);
	out[8] = 2; /* a response */
	ck_assert_int_eq(write(c, out, 10 + m), (ssize_t)(10 + m));
	return topic;
}

static int accept_one(int l)
{
	struct pollfd pf = {.fd = l, .events = POLLIN};

	ck_assert_int_eq(poll(&pf, 1, 10000), 1);
	return accept(l, NULL, NULL);
}

START_TEST(waits_for_containerd)
{
	int l, c;
	char *t1, *t2;

	/* containerd away: two events queue behind the first's dials */
	event_task(EV_PAUSED, NULL, 0);
	event_task(EV_RESUMED, NULL, 0);
	pause_ms(400);
	l = listen_sock();
	c = accept_one(l);
	ck_assert_int_ge(c, 0);
	t1 = serve_one(c);
	t2 = serve_one(c);
	ck_assert_ptr_nonnull(t1);
	ck_assert_ptr_nonnull(t2);
	ck_assert_str_eq(t1, "/tasks/paused");
	ck_assert_str_eq(t2, "/tasks/resumed");
	events_flush();
	free(t1);
	free(t2);
	/* containerd goes (the connection breaks) and comes back: the next
	 * event is dialled again on the new socket */
	close(c);
	close(l);
	unlink(sock);
	event_task(EV_PAUSED, NULL, 0);
	pause_ms(300);
	l = listen_sock();
	c = accept_one(l);
	t1 = serve_one(c);
	ck_assert_ptr_nonnull(t1);
	ck_assert_str_eq(t1, "/tasks/paused");
	free(t1);
	events_flush();
	close(c);
	close(l);
}
END_TEST

START_TEST(bounded)
{
	struct timespec t0, t1;
	int l, c;
	char *t;

	/* away for longer than the bound: the first event is dropped after
	 * it, the next one still goes */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	event_task(EV_PAUSED, NULL, 0);
	event_task(EV_RESUMED, NULL, 0);
	/* the first is dropped at 1.55 s (its pauses: 50 ms doubling, summed
	 * past the bound), the second's dials are then at 1.6 ... 2.35, 3.1 s */
	pause_ms(EVENTS_RETRY_MS + 1000);
	l = listen_sock();
	c = accept_one(l);
	t = serve_one(c);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t, "/tasks/resumed");
	ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 3 * EVENTS_RETRY_MS / 1000 + 10);
	free(t);
	events_flush();
	close(c);
	close(l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shim_events");
	TCase *tc = tcase_create("core");
	SRunner *r;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, waits_for_containerd);
	tcase_add_test(tc, bounded);
	suite_add_tcase(s, tc);
	r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
