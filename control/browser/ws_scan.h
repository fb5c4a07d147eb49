/* SPDX-License-Identifier: MIT */
/* Following a WebSocket byte stream frame by frame without keeping it
 * (RFC 6455 section 5.2): the CDP relay passes frames on as they are and
 * checks them on the way, in constant memory. A stream from a client must
 * be masked, one from a server must not; reserved bits, unknown opcodes,
 * fragmented or long control frames and frames over the limit are refused
 * with the close code that fits. */
#ifndef KILND_WS_SCAN_H
#define KILND_WS_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ws_scan {
	bool from_client; /* frames must be masked */
	uint64_t max;     /* payload bytes per frame */
	uint8_t hdr[14];
	unsigned hlen;
	uint64_t left; /* payload bytes of the current frame still to come */
	bool closed;   /* a close frame went by */
};

void ws_scan_init(struct ws_scan *s, bool from_client, uint64_t max);
/* 0, or the close code (1002 protocol, 1009 too big) the stream earned. */
int ws_scan_feed(struct ws_scan *s, const uint8_t *p, size_t n);

#endif
