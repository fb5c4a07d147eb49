// SPDX-License-Identifier: MIT
/*
 * ramport MIB: a program at the VMM's KILN_PORT_RAM (kiln/boot.h), which
 * user code may reach like the kernel: three calls with garbage in every
 * register, before the kernel has asked for the RAM past the early part
 * itself, then MIB MiB touched and checked (more than the early part), then
 * one more call. Each call must return and change nothing. Guest only: on
 * Linux the `out` is a SIGSEGV.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/boot.h"

static void port_ram(uint64_t junk)
{
	asm volatile("outb %%al, %%dx" ::"d"(KILN_PORT_RAM), "a"(junk), "D"(~junk), "S"(junk << 7),
	             "c"(junk ^ 0x5555), "b"(junk >> 3)
	             : "memory");
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 150, bytes = mib << 20;
	unsigned char *p;
	size_t bad = 0;

	port_ram(0);
	port_ram(~0ULL);
	port_ram(0xdeadbeefcafef00dULL);
	p = malloc(bytes);
	if (!p) {
		printf("malloc of %zu MiB failed\n", mib);
		return 1;
	}
	for (size_t i = 0; i < bytes; i += 4096)
		p[i] = (unsigned char)(i >> 12);
	for (size_t i = 0; i < bytes; i += 4096)
		bad += p[i] != (unsigned char)(i >> 12);
	port_ram(42);
	printf("touched %zu MiB: %s\n", mib, bad ? "NO" : "yes");
	return bad != 0;
}
