/* SPDX-License-Identifier: MIT */
/* The virtio-console driver: the guest's first terminal. */
#ifndef KILN_CONSOLE_H
#define KILN_CONSOLE_H

#include "klib.h"

struct bootinfo;

int console_init(const struct bootinfo *bi);
bool console_ready(void);
/* Queue output; returns n or -errno. Blocks only while the queue is full. */
long console_write(const void *buf, size_t n);
/* Wait until every queued byte has been taken by the host. */
void console_flush(void);
/* Read what input there is, waiting for at least one byte unless nonblock.
 * Returns bytes read, 0 at end of input, -EAGAIN (nonblock, nothing yet). */
long console_read(void *buf, size_t n, bool nonblock);
/* Bytes of input ready to read without waiting. */
size_t console_input_ready(void);
/* True at the host's end of input. */
bool console_input_eof(void);

/* Woken when input arrives / output room frees up (for poll). */
struct waitq;
extern struct waitq console_rx_wq, console_tx_wq;

#endif
