/* SPDX-License-Identifier: MIT */
/* Small helpers shared by kilnd's subsystems (and by the kiln CLI): logging,
 * clocks, ids, base64, default paths, directory helpers. */
#ifndef KILND_UTIL_H
#define KILND_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/buf.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* kilnd's and kiln's version (--version, GET / of the API). */
#define KILN_VERSION "0.1.0"

enum { LOG_ERR, LOG_WARN, LOG_INFO, LOG_DEBUG };
/* Messages above this level are dropped; set once at startup. */
extern int kd_log_level;
void kd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_err(...)   kd_log(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  kd_log(LOG_WARN, __VA_ARGS__)
#define log_info(...)  kd_log(LOG_INFO, __VA_ARGS__)
#define log_debug(...) kd_log(LOG_DEBUG, __VA_ARGS__)

int64_t now_ms(void); /* wall clock, ms since the epoch */
void iso8601(int64_t ms, char out[32]);

/* n random lowercase alphanumerics starting with a letter, NUL-terminated. */
int random_id(char *out, size_t n);
int random_hex(char *out, size_t nbytes); /* 2*nbytes hex digits + NUL */
char *strdup_or_null(const char *s);

int b64_encode(struct buf *out, const void *p, size_t n);
int b64_decode(struct buf *out, const char *s, size_t n);

/* Default locations: the data directory, and the API socket (inside
 * $XDG_RUNTIME_DIR/kiln when that is set, else inside the data directory).
 * Both return malloc'd strings. */
char *kiln_default_data_dir(void);
char *kiln_default_socket(const char *data_dir_or_null);

#define NAME_MAX_LEN 64
/* The one rule for every name that becomes a path component (a sandbox id,
 * a template or an image name): 1 to 64 letters, digits, '.', '_' or '-',
 * the first a letter or digit (so never ".", ".." or a hidden file). */
bool name_ok(const char *s);

int mkdir_p(const char *path, unsigned mode);
/* Remove parent/name and everything in it, by *at() calls from the opened
 * parent (symbolic links are removed, never followed). name must pass
 * name_ok() (or be one of kilnd's own "forks", "templates"): -EINVAL. */
int rm_tree(const char *parent, const char *name);
/* fsync the directory holding path: a rename or create in it survives a
 * crash once this returns 0. */
int fsync_parent(const char *path);
/* Read up to max bytes of a small file into a malloc'd NUL-terminated string. */
char *read_small_file(const char *path, size_t max, size_t *len);
/* The last `lines` lines (at most max_bytes) of a file, or NULL. */
char *file_tail(const char *path, int lines, size_t max_bytes);
/* The same, of what lies after offset `from` only. */
char *file_tail_from(const char *path, off_t from, int lines, size_t max_bytes);

#endif
