/* SPDX-License-Identifier: MIT */
/*
 * The few libc-style helpers the guest kernel provides for itself, and the
 * bridge that lets pure modules (cpio, ELF parsing ...) also build on the
 * host for unit tests: there KILN_HOSTED is defined and libc supplies these.
 */
#ifndef KILN_KLIB_H
#define KILN_KLIB_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <asm-generic/errno.h>

#ifdef KILN_HOSTED
#include <string.h>
#else
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void *memchr(const void *s, int c, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
unsigned long strtoul(const char *s, char **end, int base);
#endif

#define ARRAY_SIZE(a)                 (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)                     ((a) < (b) ? (a) : (b))
#define MAX(a, b)                     ((a) > (b) ? (a) : (b))
#define ALIGN_UP(x, a)                (((x) + ((a)-1)) & ~((__typeof__(x))(a)-1))
#define ALIGN_DOWN(x, a)              ((x) & ~((__typeof__(x))(a)-1))
#define likely(x)                     __builtin_expect(!!(x), 1)
#define unlikely(x)                   __builtin_expect(!!(x), 0)
#define container_of(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

#endif
