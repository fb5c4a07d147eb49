/* SPDX-License-Identifier: MIT */
/* kiln-agent: buffers, frame encoding, bounds-checked payload parsing. */
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"

#define KBUF_MIN      4096
#define ERROR_MSG_MAX 2048 /* longer messages (long paths) are truncated */

/*
 * Spare buffers: every request allocates the same few buffers (a 64 KiB read
 * buffer, a 4 KiB output queue) and frees them when its connection ends. The
 * allocator would hand those back to the kernel each time, and in the guest
 * every munmap is a TLB flush through the supervisor and every fresh page a
 * shadow fault. A few freed buffers are kept instead, bounded in count and in
 * bytes so that a flood of connections cannot make the cache grow.
 */
#define SPARE_SLOTS    4
#define SPARE_MAX_CAP  (160u << 10) /* larger buffers go back to the allocator */
#define SPARE_MAX_SIZE (256u << 10) /* bytes kept in all spare buffers together */

static struct {
	uint8_t *data[SPARE_SLOTS];
	size_t cap[SPARE_SLOTS];
	size_t bytes;
} spare;

/* The smallest spare buffer of at least `want` bytes (its size in *cap), or NULL. */
static uint8_t *spare_take(size_t want, size_t *cap)
{
	int best = -1;

	for (int i = 0; i < SPARE_SLOTS; i++)
		if (spare.data[i] && spare.cap[i] >= want &&
		    (best < 0 || spare.cap[i] < spare.cap[best]))
			best = i;
	if (best < 0)
		return NULL;
	uint8_t *d = spare.data[best];
	*cap = spare.cap[best];
	spare.data[best] = NULL;
	spare.bytes -= *cap;
	return d;
}

static void spare_give(uint8_t *d, size_t cap)
{
	if (d && cap <= SPARE_MAX_CAP && spare.bytes + cap <= SPARE_MAX_SIZE) {
		for (int i = 0; i < SPARE_SLOTS; i++) {
			if (!spare.data[i]) {
				spare.data[i] = d;
				spare.cap[i] = cap;
				spare.bytes += cap;
				return;
			}
		}
	}
	free(d);
}

int kbuf_reserve(struct kbuf *b, size_t room)
{
	if (b->cap - b->off - b->len >= room)
		return 0;
	if (b->off && b->cap - b->len >= room) {
		memmove(b->data, b->data + b->off, b->len);
		b->off = 0;
		return 0;
	}
	size_t cap = b->cap ? b->cap : KBUF_MIN;
	while (cap - b->len < room)
		cap *= 2;
	uint8_t *d = spare_take(cap, &cap);
	if (!d)
		d = malloc(cap);
	if (!d)
		return -ENOMEM;
	if (b->len)
		memcpy(d, b->data + b->off, b->len);
	spare_give(b->data, b->cap);
	b->data = d;
	b->cap = cap;
	b->off = 0;
	return 0;
}

int kbuf_put(struct kbuf *b, const void *p, size_t n)
{
	if (kbuf_reserve(b, n))
		return -ENOMEM;
	memcpy(kbuf_tail(b), p, n);
	b->len += n;
	return 0;
}

void kbuf_consume(struct kbuf *b, size_t n)
{
	b->off += n;
	b->len -= n;
	if (!b->len)
		b->off = 0;
}

void kbuf_trim(struct kbuf *b, size_t keep_cap)
{
	if (!b->len && b->cap > keep_cap)
		kbuf_free(b);
}

void kbuf_free(struct kbuf *b)
{
	spare_give(b->data, b->cap);
	b->data = NULL;
	b->off = b->len = b->cap = 0;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void st32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

void frame_decode(const uint8_t *p, struct frame_hdr *h)
{
	h->len = le32(p);
	h->type = p[4] | p[5] << 8;
	h->flags = p[6] | p[7] << 8;
}

void frame_encode(uint8_t *p, uint16_t type, uint32_t len)
{
	st32(p, len);
	p[4] = type & 0xff;
	p[5] = type >> 8;
	p[6] = p[7] = 0;
}

const char *frame_check(const struct frame_hdr *h)
{
	if (h->len > KILN_FRAME_MAX)
		return "frame longer than KILN_FRAME_MAX";
	if (h->type == KILN_MSG_INVALID || h->type >= KILN_MSG_MAX)
		return "unknown message type";
	return NULL;
}

void frame_begin(struct kbuf *b, struct frame_mark *m, uint16_t type)
{
	uint8_t hdr[FRAME_HDR];

	frame_encode(hdr, type, 0);
	m->at = b->len;
	m->err = kbuf_put(b, hdr, sizeof(hdr));
}

void put_bytes(struct kbuf *b, struct frame_mark *m, const void *p, size_t n)
{
	if (!m->err && n)
		m->err = kbuf_put(b, p, n);
}

void put_u16(struct kbuf *b, struct frame_mark *m, uint16_t v)
{
	uint8_t x[2] = {v & 0xff, v >> 8};

	put_bytes(b, m, x, sizeof(x));
}

void put_u32(struct kbuf *b, struct frame_mark *m, uint32_t v)
{
	uint8_t x[4];

	st32(x, v);
	put_bytes(b, m, x, sizeof(x));
}

void put_u64(struct kbuf *b, struct frame_mark *m, uint64_t v)
{
	put_u32(b, m, (uint32_t)v);
	put_u32(b, m, (uint32_t)(v >> 32));
}

void put_str(struct kbuf *b, struct frame_mark *m, const char *s)
{
	size_t n = strlen(s);

	if (n > KILN_MAX_STRING)
		n = KILN_MAX_STRING;
	put_u32(b, m, n);
	put_bytes(b, m, s, n);
}

int frame_end(struct kbuf *b, struct frame_mark *m)
{
	if (m->err) {
		if (b->len > m->at)
			b->len = m->at;
		return m->err;
	}
	st32(kbuf_head(b) + m->at, b->len - m->at - FRAME_HDR);
	return 0;
}

int frame_put(struct kbuf *b, uint16_t type, const void *p, size_t n)
{
	struct frame_mark m;

	frame_begin(b, &m, type);
	put_bytes(b, &m, p, n);
	return frame_end(b, &m);
}

ssize_t frame_read(struct kbuf *b, int fd, uint16_t type, size_t max)
{
	if (kbuf_reserve(b, FRAME_HDR + max)) {
		errno = ENOMEM;
		return -1;
	}
	uint8_t *hdr = kbuf_tail(b);
	ssize_t n = read(fd, hdr + FRAME_HDR, max);
	if (n > 0) {
		frame_encode(hdr, type, n);
		b->len += FRAME_HDR + n;
	}
	return n;
}

int frame_error(struct kbuf *b, int err, const char *fmt, ...)
{
	char msg[ERROR_MSG_MAX];
	struct frame_mark m;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	frame_begin(b, &m, KILN_MSG_ERROR);
	put_u32(b, &m, err);
	put_str(b, &m, msg);
	return frame_end(b, &m);
}

static const uint8_t *rd_take(struct rd *r, size_t n, const char *why)
{
	if (r->why)
		return NULL;
	if (n > r->left) {
		r->why = why;
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

const uint8_t *rd_bytes(struct rd *r, size_t n)
{
	return rd_take(r, n, "payload too short");
}

uint16_t rd_u16(struct rd *r)
{
	const uint8_t *p = rd_take(r, 2, "payload too short");

	return p ? p[0] | p[1] << 8 : 0;
}

uint32_t rd_u32(struct rd *r)
{
	const uint8_t *p = rd_take(r, 4, "payload too short");

	return p ? le32(p) : 0;
}

uint64_t rd_u64(struct rd *r)
{
	uint64_t lo = rd_u32(r);

	return lo | (uint64_t)rd_u32(r) << 32;
}

char *rd_str(struct rd *r)
{
	uint32_t n = rd_u32(r);

	if (!r->why && n > KILN_MAX_STRING)
		r->why = "string longer than KILN_MAX_STRING";
	const uint8_t *p = rd_take(r, n, "string runs past the payload");
	if (!p)
		return NULL;
	if (memchr(p, 0, n)) {
		r->why = "NUL inside a string";
		return NULL;
	}
	char *s = malloc((size_t)n + 1);
	if (!s) {
		r->why = "out of memory";
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

char **rd_strlist(struct rd *r, uint32_t min, uint32_t *count)
{
	uint32_t n = rd_u32(r);

	if (r->why)
		return NULL;
	/* Each item takes at least its 4-byte length: check before allocating. */
	if (n > KILN_MAX_ARGS || n < min || (size_t)n * 4 > r->left) {
		r->why = n < min ? "list has too few items" : "list count beyond limit or payload";
		return NULL;
	}
	char **v = calloc((size_t)n + 1, sizeof(*v));
	if (!v) {
		r->why = "out of memory";
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		v[i] = rd_str(r);
		if (!v[i]) {
			strv_free(v);
			return NULL;
		}
	}
	if (count)
		*count = n;
	return v;
}

int rd_peer(struct rd *r, struct sockaddr_storage *ss, socklen_t *len, char *why, size_t n)
{
	static const uint8_t zero[12];
	uint32_t version = rd_u32(r), family = rd_u32(r), port;
	const uint8_t *a = rd_bytes(r, 16);

	port = rd_u32(r);
	if (!rd_ok(r)) {
		snprintf(why, n, "bad CONNECT peer trailer: %s", r->why);
		return EPROTO;
	}
	if (version != KILN_PEER_V1) {
		snprintf(why, n, "peer trailer version %u (this agent takes %u)", version,
		         KILN_PEER_V1);
		return EINVAL;
	}
	if ((family != 4 && family != 6) || port < 1 || port > 65535 ||
	    (family == 4 && memcmp(a + 4, zero, sizeof(zero)))) {
		snprintf(why, n,
		         "bad peer in CONNECT: family %u port %u (want family 4 or 6, port "
		         "1..65535, an IPv4 address in 4 bytes then zeros)",
		         family, port);
		return EINVAL;
	}
	memset(ss, 0, sizeof(*ss));
	if (family == 4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		memcpy(&sin->sin_addr, a, 4);
		*len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		memcpy(&sin6->sin6_addr, a, 16);
		*len = sizeof(*sin6);
	}
	return 0;
}

bool rd_ok(struct rd *r)
{
	if (!r->why && r->left)
		r->why = "trailing bytes after the payload";
	return !r->why;
}

void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}
