/* SPDX-License-Identifier: MIT */
/* A growable byte buffer with a consumed prefix: append at the end, consume
 * from the front. Used for socket input and output queues. */
#ifndef KILND_BUF_H
#define KILND_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data;
	size_t off; /* bytes already consumed */
	size_t len; /* bytes written, including the consumed prefix */
	size_t cap;
};

static inline size_t buf_avail(const struct buf *b)
{
	return b->len - b->off;
}

/* NULL for a buffer that never held anything (NULL + 0 is undefined). */
static inline char *buf_head(const struct buf *b)
{
	return b->data ? b->data + b->off : NULL;
}

/* Make room for at least n more bytes; returns a pointer to them. */
char *buf_reserve(struct buf *b, size_t n);
int buf_append(struct buf *b, const void *p, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_consume(struct buf *b, size_t n);
void buf_reset(struct buf *b);
void buf_free(struct buf *b);
/* A NUL-terminated copy of the unconsumed bytes (malloc'd), or NULL. */
char *buf_strdup(const struct buf *b);

#endif
