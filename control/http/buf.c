/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

char *buf_reserve(struct buf *b, size_t n)
{
	if (b->off && b->off == b->len) {
		b->off = b->len = 0;
	} else if (b->off > 4096 && b->off >= b->len / 2) {
		/* Slide the live bytes down instead of growing forever. */
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (n > SIZE_MAX / 2 - b->len)
		return NULL;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p)
			return NULL;
		b->data = p;
		b->cap = cap;
	}
	return b->data + b->len;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	char *dst;

	if (!n)
		return 0;
	dst = buf_reserve(b, n);
	if (!dst)
		return -ENOMEM;
	memcpy(dst, p, n);
	b->len += n;
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *dst;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	dst = buf_reserve(b, (size_t)n + 1);
	if (!dst)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(dst, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n > buf_avail(b))
		n = buf_avail(b);
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
}

void buf_reset(struct buf *b)
{
	b->off = b->len = 0;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->off = b->len = b->cap = 0;
}

char *buf_strdup(const struct buf *b)
{
	char *s = malloc(buf_avail(b) + 1);

	if (!s)
		return NULL;
	if (buf_avail(b)) /* (an empty buf may have no memory at all) */
		memcpy(s, buf_head(b), buf_avail(b));
	s[buf_avail(b)] = 0;
	return s;
}
