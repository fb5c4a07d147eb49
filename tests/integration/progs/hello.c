// SPDX-License-Identifier: MIT
/*
 * The smallest guest program: one line naming how it was built (KILN_TEST_LIBC,
 * set by progs.mk: "glibc", "glibc static-pie" or "musl"), then argc and argv,
 * one per line.
 */
#include <stdio.h>

#ifndef KILN_TEST_LIBC
#error "build with -DKILN_TEST_LIBC='\"name\"'"
#endif

int main(int argc, char **argv)
{
	printf("hello from %s\n", KILN_TEST_LIBC);
	printf("argc=%d\n", argc);
	for (int i = 0; i < argc; i++)
		printf("argv[%d]=%s\n", i, argv[i]);
	return 0;
}
