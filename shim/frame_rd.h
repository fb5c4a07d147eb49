/* SPDX-License-Identifier: MIT */
/*
 * A buffered reader of an agent stream's frames (include/kiln/agent.h):
 * one read takes in as much as has come, so that a stream of many small
 * frames (a CHANGES walk's NODE, DATA, NODE, ...) costs a read per batch,
 * not a poll and two reads per frame as agent_read_frame does. The frames
 * and their meaning are the same.
 */
#ifndef KILN_SHIM_FRAME_RD_H
#define KILN_SHIM_FRAME_RD_H

#include <stddef.h>
#include <stdint.h>

#include "agent/agent_proto.h"

struct frame_rd {
	int fd;
	uint8_t *buf; /* AGENT_HDR_LEN + KILN_FRAME_MAX bytes: the largest frame */
	size_t at;    /* the next frame's first byte */
	size_t len;   /* bytes in buf */
};

/* 0, or -ENOMEM. */
int frame_rd_init(struct frame_rd *r, int fd);
void frame_rd_free(struct frame_rd *r);
/* The next frame: 0 with *f and *payload (in r's buffer, valid until the
 * next call); -ETIMEDOUT when nothing came for ms (< 0: no limit), -EPIPE
 * at the stream's end, -EPROTO for a bad header, else -errno. */
int frame_rd_next(struct frame_rd *r, struct kiln_frame *f, const uint8_t **payload, int ms);

#endif
