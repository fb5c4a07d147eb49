/* SPDX-License-Identifier: MIT */
/* RFC 6455 WebSocket framing as a transport-free state machine, used by
 * kilnd (server role) and the kiln CLI (client role).
 *
 * ws_feed() takes raw bytes from the peer. Binary messages are handed to
 * on_message piece by piece as they arrive (fin marks the last piece of the
 * message); text messages are assembled (up to max_text) and checked for
 * UTF-8 first. Pings are answered, a close is answered and reported. Any
 * protocol violation sends a close frame with the matching status (1002
 * protocol, 1007 bad UTF-8, 1009 too big) and makes ws_feed() fail. */
#ifndef KILND_WS_H
#define KILND_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum {
	WS_CONT = 0x0,
	WS_TEXT = 0x1,
	WS_BINARY = 0x2,
	WS_CLOSE = 0x8,
	WS_PING = 0x9,
	WS_PONG = 0xa,
};

enum {
	WS_CLOSE_NORMAL = 1000,
	WS_CLOSE_GOING_AWAY = 1001,
	WS_CLOSE_PROTOCOL = 1002,
	WS_CLOSE_BAD_DATA = 1007,
	WS_CLOSE_POLICY = 1008,
	WS_CLOSE_TOO_BIG = 1009,
	WS_CLOSE_INTERNAL = 1011,
};

struct ws_ops {
	/* Return < 0 to stop (ws_feed then returns that value). */
	int (*on_message)(void *ctx, int opcode, uint8_t *p, size_t n, bool fin);
	/* The peer sent a close frame (already answered). */
	void (*on_close)(void *ctx, uint16_t code);
	/* Raw bytes to send to the peer. */
	int (*write)(void *ctx, const void *p, size_t n);
};

struct ws {
	bool client; /* we mask what we send and expect unmasked frames */
	size_t max_frame, max_text;
	const struct ws_ops *ops;
	void *ctx;

	uint8_t hdr[14];
	unsigned hdr_len, hdr_need;
	uint64_t left;
	uint8_t mask[4];
	unsigned mask_pos;
	bool masked, fin;
	int opcode;
	int msg_opcode; /* opcode of the fragmented message in progress, or 0 */
	struct buf text;
	uint8_t ctl[125];
	unsigned ctl_len;
	bool close_sent, close_received;
};

void ws_init(struct ws *ws, bool client, const struct ws_ops *ops, void *ctx);
void ws_free(struct ws *ws);
int ws_feed(struct ws *ws, uint8_t *p, size_t n);
int ws_send(struct ws *ws, int opcode, const void *p, size_t n);
int ws_send_close(struct ws *ws, uint16_t code, const char *reason);

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key; -EINVAL unless the key is
 * the base64 form of 16 bytes. */
int ws_accept_key(const char *key, char out[29]);
/* A fresh random Sec-WebSocket-Key. */
int ws_client_key(char out[25]);
bool utf8_valid(const uint8_t *p, size_t n);

#endif
