/* SPDX-License-Identifier: MIT */
/* RLIMIT_NPROC (cases/rlimits.sh): a child that becomes uid 54321 (a user
 * with no other process, here or on the host) under a limit of 3 makes
 * processes until fork fails; a thread counts as one more; once its
 * children are reaped it forks again; root is not held to the limit. The
 * same answers as on the host. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define USER 54321

static void *idle(void *arg)
{
	return arg;
}

static const char *why(int e)
{
	return e == EAGAIN ? "EAGAIN" : e ? "another error" : "no error";
}

static void as_user(void)
{
	struct rlimit rl = {3, 3};
	int gate[2], made = 0, err = 0, st;
	pthread_t t;

	if (pipe(gate) || setrlimit(RLIMIT_NPROC, &rl) || setgid(USER) || setuid(USER)) {
		perror("nproctest: setup");
		_exit(2);
	}
	for (int i = 0; i < 5; i++) {
		pid_t k = fork();

		if (k == 0) {
			char c;

			close(gate[1]);
			_exit(read(gate[0], &c, 1) == 0 ? 0 : 1);
		}
		if (k < 0) {
			err = errno;
			break;
		}
		made++;
	}
	printf("user under NPROC 3: %d forks, then %s\n", made, why(err));
	err = pthread_create(&t, NULL, idle, NULL);
	printf("a thread at the limit: %s\n", why(err));
	if (!err)
		pthread_join(t, NULL);
	close(gate[1]);
	while (wait(&st) > 0)
		;
	pid_t k = fork();

	if (k == 0)
		_exit(0);
	printf("after its children are reaped: %s\n", k > 0 ? "fork works" : why(errno));
	if (k > 0)
		waitpid(k, &st, 0);
	fflush(stdout);
	_exit(0);
}

int main(void)
{
	struct rlimit rl = {1, 1};
	int st;
	pid_t c = fork();

	if (c == 0)
		as_user();
	waitpid(c, &st, 0);
	setrlimit(RLIMIT_NPROC, &rl);
	c = fork();
	if (c == 0)
		_exit(0);
	printf("root under NPROC 1: %s\n", c > 0 ? "fork works" : why(errno));
	if (c > 0)
		waitpid(c, &st, 0);
	return 0;
}
