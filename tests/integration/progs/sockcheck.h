/* SPDX-License-Identifier: MIT */
/* Checks shared by the socket test programs (unixsock, inetsock): each
 * prints "WHAT: ok" or "WHAT: FAIL (...)" and counts failures. */
#ifndef KILN_TEST_SOCKCHECK_H
#define KILN_TEST_SOCKCHECK_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))

static int failures;

static inline void check(const char *what, int ok)
{
	printf("%s: %s\n", what, ok ? "ok" : "FAIL");
	if (!ok) {
		printf("    (errno %d %s)\n", errno, strerror(errno));
		failures++;
	}
	fflush(stdout);
}

static inline void checkv(const char *what, long got, long want)
{
	if (got == want) {
		printf("%s: ok\n", what);
	} else {
		printf("%s: FAIL (got %ld, want %ld, errno %d %s)\n", what, got, want, errno,
		       strerror(errno));
		failures++;
	}
	fflush(stdout);
}

/* The call failed with err. */
static inline void check_err(const char *what, long r, int err)
{
	if (r < 0 && errno == err) {
		printf("%s: ok\n", what);
	} else {
		printf("%s: FAIL (got %ld, errno %d %s, want %s)\n", what, r, errno,
		       strerror(errno), strerror(err));
		failures++;
	}
	fflush(stdout);
}

static inline int wait_child(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return st;
}

static inline void msleep(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

#endif
