/* SPDX-License-Identifier: MIT */
/* The virtio-console driver: the guest's first terminal. Programs use it
 * as a tty (console_tty(), tty.h); the kernel writes its messages here. */
#ifndef KILN_CONSOLE_H
#define KILN_CONSOLE_H

#include "klib.h"

struct bootinfo;
struct tty;

int console_init(const struct bootinfo *bi);
/* Input from now on, by interrupt. Until then (the boot) the host's input
 * waits in the receive buffers: with no input at all (stdin /dev/null) the
 * host's end of input came as an interrupt in the middle of every boot. */
void console_start_input(void);
bool console_ready(void);
/* The console's tty (/dev/console), NULL before console_init. */
struct tty *console_tty(void);
/* A kernel message: queued for the device, past the line discipline.
 * Returns n or -errno. Blocks only while the queue is full. */
long console_write(const void *buf, size_t n);
/* Wait until every queued byte (the tty's too) has been taken by the host. */
void console_flush(void);

#endif
