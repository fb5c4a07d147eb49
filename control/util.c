/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nettle/base64.h>

#include "util.h"

int kd_log_level = LOG_INFO;

void kd_log(int level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	char ts[32];
	va_list ap;

	if (level > kd_log_level)
		return;
	iso8601(now_ms(), ts);
	fprintf(stderr, "%s kilnd %s: ", ts, names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void iso8601(int64_t ms, char out[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	/* Years past 9999 do not fit; clamp rather than truncate silently. */
	if (tm.tm_year > 9999 - 1900)
		tm.tm_year = 9999 - 1900;
	snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", (tm.tm_year + 1900) % 10000,
	         (tm.tm_mon + 1) % 100, tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100,
	         tm.tm_sec % 100, (int)((ms % 1000 + 1000) % 1000));
}

static int fill_random(void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = getrandom(b, n, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

int random_id(char *out, size_t n)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint8_t r[64];
	int rc;

	if (n == 0 || n > sizeof(r))
		return -EINVAL;
	rc = fill_random(r, n);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		out[i] = i == 0 ? alnum[r[i] % 26] : alnum[r[i] % 36];
	out[n] = 0;
	return 0;
}

int random_hex(char *out, size_t nbytes)
{
	uint8_t r[64];
	int rc;

	if (nbytes > sizeof(r))
		return -EINVAL;
	rc = fill_random(r, nbytes);
	if (rc)
		return rc;
	for (size_t i = 0; i < nbytes; i++)
		sprintf(out + 2 * i, "%02x", r[i]);
	out[2 * nbytes] = 0;
	return 0;
}

int b64_encode(struct buf *out, const void *p, size_t n)
{
	char *dst = buf_reserve(out, BASE64_ENCODE_RAW_LENGTH(n) + 1);

	if (!dst)
		return -ENOMEM;
	base64_encode_raw(dst, n, p);
	out->len += BASE64_ENCODE_RAW_LENGTH(n);
	return 0;
}

int b64_decode(struct buf *out, const char *s, size_t n)
{
	struct base64_decode_ctx ctx;
	size_t dlen = BASE64_DECODE_LENGTH(n);
	char *dst = buf_reserve(out, dlen + 1);

	if (!dst)
		return -ENOMEM;
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, &dlen, (uint8_t *)dst, n, s) || !base64_decode_final(&ctx))
		return -EINVAL;
	out->len += dlen;
	return 0;
}

char *kiln_default_data_dir(void)
{
	const char *home = getenv("HOME");
	char *p;

	if (!home || !*home)
		home = "/";
	if (asprintf(&p, "%s/.local/share/kiln", home) < 0)
		return NULL;
	return p;
}

char *kiln_default_socket(const char *data_dir)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char *p, *dd = NULL;
	int n;

	if (data_dir)
		n = asprintf(&p, "%s/kilnd.sock", data_dir);
	else if (rt && *rt)
		n = asprintf(&p, "%s/kiln/kilnd.sock", rt);
	else {
		dd = kiln_default_data_dir();
		if (!dd)
			return NULL;
		n = asprintf(&p, "%s/kilnd.sock", dd);
	}
	free(dd);
	return n < 0 ? NULL : p;
}

int mkdir_p(const char *path, unsigned mode)
{
	char tmp[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

bool name_ok(const char *s)
{
	size_t n = strlen(s);

	/* A letter or digit first: never ".", "..", a hidden file or an option. */
	if (!n || n > NAME_MAX_LEN || !isalnum((unsigned char)s[0]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return false;
	return true;
}

#define RM_DEPTH 64 /* a guest never writes into kilnd's directories */

/* Empty the directory open as dfd (closed here), depth levels deep at most. */
static int rm_contents(int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	int rc = 0;

	if (!d) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	while ((e = readdir(d))) {
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!unlinkat(dirfd(d), e->d_name, 0))
			continue;
		if (errno != EISDIR && errno != EPERM) {
			rc = -errno;
			break;
		}
		/* O_NOFOLLOW: a link is removed above, never followed */
		sub = depth ? openat(dirfd(d), e->d_name,
		                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		            : (errno = ELOOP, -1);
		if (sub < 0 || (rc = rm_contents(sub, depth - 1))) {
			rc = rc ? rc : -errno;
			break;
		}
		if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR)) {
			rc = -errno;
			break;
		}
	}
	closedir(d);
	return rc;
}

int rm_tree(const char *parent, const char *name)
{
	int pfd, dfd, rc;

	if (!name_ok(name))
		return -EINVAL;
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!unlinkat(pfd, name, 0) || errno == ENOENT) {
		close(pfd);
		return 0;
	}
	dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		rc = -errno;
		close(pfd);
		return rc;
	}
	rc = rm_contents(dfd, RM_DEPTH);
	if (!rc && unlinkat(pfd, name, AT_REMOVEDIR))
		rc = -errno;
	close(pfd);
	return rc;
}

int fsync_parent(const char *path)
{
	char *copy = strdup(path);
	const char *slash;
	int fd, rc = 0;

	if (!copy)
		return -ENOMEM;
	slash = strrchr(copy, '/');
	if (slash == copy)
		copy[1] = '\0';
	else if (slash)
		copy[slash - copy] = '\0';
	fd = open(slash ? copy : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

char *read_small_file(const char *path, size_t max, size_t *lenp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *p;
	size_t len = 0;

	if (fd < 0)
		return NULL;
	p = malloc(max + 1);
	if (!p) {
		close(fd);
		return NULL;
	}
	while (len < max) {
		ssize_t r = read(fd, p + len, max - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	p[len] = 0;
	if (lenp)
		*lenp = len;
	return p;
}

char *file_tail(const char *path, int lines, size_t max_bytes)
{
	return file_tail_from(path, 0, lines, max_bytes);
}

char *file_tail_from(const char *path, off_t from, int lines, size_t max_bytes)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *p, *start;
	ssize_t r;
	off_t off;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	off = st.st_size > (off_t)max_bytes ? st.st_size - (off_t)max_bytes : 0;
	if (off < from)
		off = from < st.st_size ? from : st.st_size;
	p = malloc(max_bytes + 1);
	if (!p) {
		close(fd);
		return NULL;
	}
	r = pread(fd, p, max_bytes, off);
	close(fd);
	if (r < 0)
		r = 0;
	p[r] = 0;
	while (r > 0 && p[r - 1] == '\n')
		p[--r] = 0;
	start = p + r;
	while (start > p && lines > 0) {
		start--;
		if (*start == '\n' && --lines == 0) {
			start++;
			break;
		}
	}
	memmove(p, start, strlen(start) + 1);
	/* Console output may hold anything; keep the reason printable. */
	for (char *c = p; *c; c++)
		if ((unsigned char)*c < 0x20 && *c != '\n')
			*c = '?';
	return p;
}

char *strdup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}
