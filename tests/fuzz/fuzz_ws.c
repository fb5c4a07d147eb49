/* SPDX-License-Identifier: MIT */
/* libFuzzer: kilnd's WebSocket framing (terminals, CDP, port forwards) on
 * what a hostile client sends, cut into pieces at random places, in both
 * roles; messages are bounded by the parser's limits, never by the input. */
#include <stdlib.h>
#include <string.h>

#include "http/ws.h"

/* Reads go here, so that none is optimized away. */
static volatile uint8_t sink;

static int on_message(void *ctx, int opcode, uint8_t *p, size_t n, bool fin)
{
	for (size_t i = 0; i < n; i++)
		sink += p[i];
	return 0;
}

static void on_close(void *ctx, uint16_t code)
{
}

static int out(void *ctx, const void *p, size_t n)
{
	return 0;
}

static const struct ws_ops ops = {.on_message = on_message, .on_close = on_close, .write = out};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ws ws;
	uint8_t *copy;
	size_t off = 1;

	if (size < 2)
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	ws_init(&ws, copy[0] & 1, &ops, NULL);
	ws.max_frame = 1 << 16;
	ws.max_text = 1 << 16;
	/* The first byte also sets the piece size: 1 to 128 bytes a feed. */
	while (off < size) {
		size_t n = (size_t)(copy[0] >> 1) + 1;

		if (n > size - off)
			n = size - off;
		if (ws_feed(&ws, copy + off, n) < 0)
			break;
		off += n;
	}
	ws_free(&ws);
	free(copy);
	return 0;
}
