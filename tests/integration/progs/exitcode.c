// SPDX-License-Identifier: MIT
/* exitcode N: exit with status N (the kernel keeps the low 8 bits). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	char *end;
	long n;

	if (argc != 2) {
		fprintf(stderr, "usage: exitcode N\n");
		return 2;
	}
	n = strtol(argv[1], &end, 10);
	if (*argv[1] == '\0' || *end) {
		fprintf(stderr, "exitcode: '%s' is not a number\n", argv[1]);
		return 2;
	}
	exit((int)n);
}
