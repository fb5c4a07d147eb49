/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: byte buffers, frame encoding and bounds-checked payload
 * parsing for the protocol of include/kiln/agent.h.
 */
#ifndef AGENT_PROTO_H
#define AGENT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <kiln/agent.h>

#define FRAME_HDR 8u /* sizeof(struct kiln_frame) on the wire */

/* A growable byte queue: valid bytes are data[off .. off+len). */
struct kbuf {
	uint8_t *data;
	size_t off, len, cap;
};

int kbuf_reserve(struct kbuf *b, size_t room); /* room free bytes after the tail */
int kbuf_put(struct kbuf *b, const void *p, size_t n);
void kbuf_consume(struct kbuf *b, size_t n);
void kbuf_trim(struct kbuf *b, size_t keep_cap); /* free a large empty buffer */
void kbuf_free(struct kbuf *b);

static inline uint8_t *kbuf_head(const struct kbuf *b)
{
	return b->data + b->off;
}

static inline uint8_t *kbuf_tail(const struct kbuf *b)
{
	return b->data + b->off + b->len;
}

/* Decoded frame header; frame_check() returns NULL or why it is invalid. */
struct frame_hdr {
	uint32_t len;
	uint16_t type;
	uint16_t flags;
};
void frame_decode(const uint8_t *p, struct frame_hdr *h);
void frame_encode(uint8_t *p, uint16_t type, uint32_t len);
const char *frame_check(const struct frame_hdr *h);

/*
 * Building frames in a kbuf: frame_begin() reserves the header and returns a
 * mark, the put_* helpers append payload, frame_end() fills in the length.
 * All return 0 or -ENOMEM; a failed frame is discarded by frame_end().
 */
struct frame_mark {
	size_t at; /* header position relative to b->off */
	int err;
};
void frame_begin(struct kbuf *b, struct frame_mark *m, uint16_t type);
void put_u16(struct kbuf *b, struct frame_mark *m, uint16_t v);
void put_u32(struct kbuf *b, struct frame_mark *m, uint32_t v);
void put_u64(struct kbuf *b, struct frame_mark *m, uint64_t v);
void put_bytes(struct kbuf *b, struct frame_mark *m, const void *p, size_t n);
void put_str(struct kbuf *b, struct frame_mark *m, const char *s);
int frame_end(struct kbuf *b, struct frame_mark *m);

/* An empty frame, or one with a payload of n raw bytes. */
int frame_put(struct kbuf *b, uint16_t type, const void *p, size_t n);
/*
 * Read up to max bytes from fd straight into a data frame of the given type:
 * returns the byte count, 0 at EOF, or -1 with errno (ENOMEM if b could not
 * grow). Nothing is queued unless data was read.
 */
ssize_t frame_read(struct kbuf *b, int fd, uint16_t type, size_t max);
/* KILN_MSG_ERROR with a printf-style message (truncated to a sane size). */
int frame_error(struct kbuf *b, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Payload reader. Every accessor checks the remaining length; the first
 * failure sets `why` and makes every later accessor return 0/NULL, so a
 * parser reads all its fields and checks rd_ok() once at the end, which
 * also demands that the payload was consumed exactly.
 */
struct rd {
	const uint8_t *p;
	size_t left;
	const char *why;
};

static inline void rd_init(struct rd *r, const uint8_t *p, size_t n)
{
	r->p = p;
	r->left = n;
	r->why = NULL;
}

/* n raw bytes in place (NULL on error). */
const uint8_t *rd_bytes(struct rd *r, size_t n);
uint16_t rd_u16(struct rd *r);
uint32_t rd_u32(struct rd *r);
uint64_t rd_u64(struct rd *r);
/* A string as a malloc'd NUL-terminated copy (NULL on error). */
char *rd_str(struct rd *r);
/* A list of strings as a malloc'd NULL-terminated vector of min..KILN_MAX_ARGS items. */
char **rd_strlist(struct rd *r, uint32_t min, uint32_t *count);
bool rd_ok(struct rd *r);
/* CONNECT's peer trailer (include/kiln/agent.h), the rest of r, into ss
 * and len: 0, or EPROTO (cut short, or bytes after it) or EINVAL (a bad
 * version, family, port or IPv4 padding) with why. */
struct sockaddr_storage;
int rd_peer(struct rd *r, struct sockaddr_storage *ss, socklen_t *len, char *why, size_t n);
void strv_free(char **v);

#endif
