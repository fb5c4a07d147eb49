/* Resource exhaustion inside the guest must end in an error for the
 * offender, never in a crash of the guest or the host.
 *   stress memhog [KIB]  map and fill KIB-sized blocks (default 1024) until
 *                        mmap fails (or, for blocks large enough to be
 *                        mapped on first touch, until the kernel kills it)
 *   stress forkbomb fork until fork fails, then reap everything
 * Prints what stopped it and exits 0. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int memhog(size_t block)
{
	size_t total = 0;

	for (;;) {
		char *p =
		    mmap(NULL, block, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			printf("memhog: mmap failed with %s after %s MiB\n",
			       errno == ENOMEM ? "ENOMEM" : strerror(errno),
			       total > (10 << 20) ? "more than 10" : "few");
			return 0;
		}
		memset(p, 0x5a, block);
		total += block;
	}
}

static int forkbomb(void)
{
	static pid_t kids[1 << 16];
	int n = 0;

	for (;;) {
		pid_t pid = n < (int)(sizeof(kids) / sizeof(kids[0])) ? fork() : -1;
		if (pid == 0) {
			pause();
			_exit(0);
		}
		if (pid < 0) {
			printf("forkbomb: fork failed with %s after %s processes\n",
			       errno == EAGAIN || errno == ENOMEM ? "EAGAIN/ENOMEM"
			                                          : strerror(errno),
			       n > 10 ? "more than 10" : "few");
			break;
		}
		kids[n++] = pid;
	}
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	printf("forkbomb: reaped all\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "memhog"))
		return memhog((argc > 2 ? strtoul(argv[2], NULL, 0) : 1024) << 10);
	if (argc > 1 && !strcmp(argv[1], "forkbomb"))
		return forkbomb();
	fprintf(stderr, "usage: stress memhog [KIB] | forkbomb\n");
	return 2;
}
