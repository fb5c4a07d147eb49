/* SPDX-License-Identifier: MIT */
/* Unit tests for shim/vm_dial.c against a fake kiln-vmm vsock socket (a
 * thread answering CONNECT lines as scripted): a guest that answers late
 * is reached; one that never answers gives -ETIMEDOUT within the caller's
 * bound; a refusal is tried again with backoff, and a lasting one is
 * reported as such; no VMM at all is told apart from both. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_proto.h"
#include "shim.h"

enum fake_mode {
	ANSWER_LATE, /* OK after late_ms */
	SILENT,      /* never answers; holds the connection until the client goes */
	REFUSE_SOME, /* closes the first `refusals` connections, then OK */
};

struct fake {
	int lfd;
	enum fake_mode mode;
	int late_ms;
	unsigned refusals;
	unsigned conns; /* connections that sent a CONNECT line */
	char line[32];  /* the last CONNECT line */
	pthread_t thr;
};

static char dir[64], sock[108];

static void sleep_ms(int ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&t, NULL);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static bool read_line(int fd, char *line, size_t n)
{
	size_t got = 0;

	while (got + 1 < n) {
		if (read(fd, line + got, 1) != 1)
			return false;
		if (line[got++] == '\n')
			break;
	}
	line[got] = 0;
	return true;
}

/* Serves until the listening socket is shut down (accept fails). */
static void *fake_run(void *arg)
{
	struct fake *f = arg;
	char buf[64];
	int fd;

	while ((fd = accept(f->lfd, NULL, NULL)) >= 0) {
		if (!read_line(fd, f->line, sizeof(f->line))) {
			close(fd);
			continue;
		}
		f->conns++;
		if (f->mode == ANSWER_LATE) {
			sleep_ms(f->late_ms);
			(void)!write(fd, "OK 1073741824\n", 14);
			/* the HELLO frame follows; read it, then hang up */
			(void)!read(fd, buf, sizeof(buf));
		} else if (f->mode == SILENT) {
			while (read(fd, buf, sizeof(buf)) > 0)
				;
		} else if (f->conns > f->refusals) {
			(void)!write(fd, "OK 1073741825\n", 14);
			(void)!read(fd, buf, sizeof(buf));
		}
		close(fd);
	}
	return NULL;
}

static void fake_start(struct fake *f)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	strcpy(a.sun_path, sock);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(f->lfd, 0);
	ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(f->lfd, 16), 0);
	ck_assert_int_eq(pthread_create(&f->thr, NULL, fake_run, f), 0);
}

static void fake_stop(struct fake *f)
{
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->thr, NULL);
	close(f->lfd);
	unlink(sock);
}

/* vm_dial_port on the fake, and how long it took in *took. */
static int timed_dial(int ms, double *took)
{
	double t0 = now_s();
	int fd = vm_dial_port(sock, 1024, ms);

	*took = now_s() - t0;
	return fd;
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kiln-dial-test.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/vsock.sock", dir);
}

static void teardown(void)
{
	unlink(sock);
	rmdir(dir);
}

/* Past the 2 s the VMM once gave a guest: the shim's own bound counts. */
START_TEST(late_answer_is_reached)
{
	struct fake f = {.mode = ANSWER_LATE, .late_ms = 2500};
	struct shim s = {0};
	double t0;
	int fd;

	fake_start(&f);
	snprintf(s.vm.vsock, sizeof(s.vm.vsock), "%s", sock);
	t0 = now_s();
	fd = vm_dial(&s, KILN_STREAM_INFO, 10000);
	ck_assert_int_ge(fd, 0);
	ck_assert_double_ge(now_s() - t0, 2.4);
	ck_assert_str_eq(f.line, "CONNECT 1024\n");
	close(fd);
	fake_stop(&f);
	ck_assert_uint_eq(f.conns, 1);
}
END_TEST

START_TEST(silent_guest_times_out_within_bound)
{
	struct fake f = {.mode = SILENT};
	char msg[400];
	double took;
	int fd;

	fake_start(&f);
	fd = timed_dial(1500, &took);
	ck_assert_int_eq(fd, -ETIMEDOUT);
	ck_assert_double_ge(took, 1.45);
	ck_assert_double_le(took, 2.5);
	vm_dial_explain(fd, sock, 1500, msg, sizeof(msg));
	ck_assert_msg(strstr(msg, "did not take the connection within 1.5 s"), "%s", msg);
	fake_stop(&f);
	ck_assert_uint_eq(f.conns, 1); /* a timeout is not tried again */
}
END_TEST

START_TEST(refusal_is_retried)
{
	struct fake f = {.mode = REFUSE_SOME, .refusals = 2};
	int fd;

	fake_start(&f);
	fd = vm_dial_port(sock, 1024, 10000);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fake_stop(&f);
	ck_assert_uint_eq(f.conns, 3);
}
END_TEST

START_TEST(lasting_refusal)
{
	struct fake f = {.mode = REFUSE_SOME, .refusals = 1000};
	char msg[400];
	double took;
	int fd;

	fake_start(&f);
	fd = timed_dial(10000, &took);
	ck_assert_int_eq(fd, -ECONNREFUSED);
	ck_assert_double_le(took, 2.0); /* the backoff is bounded, far below ms */
	vm_dial_explain(fd, sock, 10000, msg, sizeof(msg));
	ck_assert_msg(strstr(msg, "refused"), "%s", msg);
	fake_stop(&f);
	ck_assert_uint_eq(f.conns, 5);
}
END_TEST

/* A refusal never outlives the caller's bound. */
START_TEST(refusal_retries_end_at_the_bound)
{
	struct fake f = {.mode = REFUSE_SOME, .refusals = 1000};
	double took;
	int fd;

	fake_start(&f);
	fd = timed_dial(50, &took);
	ck_assert(fd == -ECONNREFUSED || fd == -ETIMEDOUT);
	ck_assert_double_le(took, 0.5);
	fake_stop(&f);
	ck_assert_uint_lt(f.conns, 5);
}
END_TEST

START_TEST(no_vmm)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char msg[400];
	int fd;

	/* no socket file */
	ck_assert_int_eq(vm_dial_port(sock, 1024, 1000), -EHOSTDOWN);
	vm_dial_explain(-EHOSTDOWN, sock, 1000, msg, sizeof(msg));
	ck_assert_msg(strstr(msg, "the VM is not running"), "%s", msg);
	/* a socket file nobody listens on (a VMM that exited) */
	strcpy(a.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
	ck_assert_int_eq(vm_dial_port(sock, 1024, 1000), -EHOSTDOWN);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shim-dial");
	TCase *t = tcase_create("dial");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 30);
	tcase_add_test(t, late_answer_is_reached);
	tcase_add_test(t, silent_guest_times_out_within_bound);
	tcase_add_test(t, refusal_is_retried);
	tcase_add_test(t, lasting_refusal);
	tcase_add_test(t, refusal_retries_end_at_the_bound);
	tcase_add_test(t, no_vmm);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
