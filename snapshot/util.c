/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the writer and the reader: messages, I/O, threads. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int snap_errf(struct snap_err *err, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return ret;
}

void snap_err_prefix(struct snap_err *err, const char *path)
{
	char msg[sizeof(err->msg)];
	size_t n, len;

	if (!err)
		return;
	memcpy(msg, err->msg, sizeof(msg));
	n = (size_t)snprintf(err->msg, sizeof(err->msg), "snapshot '%s': ", path);
	if (n >= sizeof(err->msg) - 1)
		return; /* a path that long leaves no room; the prefix must do */
	len = strnlen(msg, sizeof(msg) - 1);
	if (len > sizeof(err->msg) - 1 - n)
		len = sizeof(err->msg) - 1 - n;
	memcpy(err->msg + n, msg, len);
	err->msg[n + len] = '\0';
}

uint64_t snap_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

unsigned snap_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}

/* 64 bytes per step, ORed together so the compiler can vectorise; exits at
 * the first non-zero block, which for data chunks is the first one. */
bool snap_is_zero(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t i = 0;

	for (; i + 64 <= len; i += 64) {
		uint64_t w[8], acc = 0;

		memcpy(w, p + i, 64);
		for (int k = 0; k < 8; k++)
			acc |= w[k];
		if (acc)
			return false;
	}
	for (; i < len; i++)
		if (p[i])
			return false;
	return true;
}

int snap_pread(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int snap_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Callers hand out work from a shared counter, so when a thread cannot be
 * started the others (at least the caller) simply do its share. */
void snap_parallel(unsigned n, void *(*fn)(void *), void *args, size_t argsz)
{
	pthread_t tid[256];
	unsigned started = 0;

	if (n > 256)
		n = 256;
	for (unsigned i = 1; i < n; i++) {
		if (pthread_create(&tid[started], NULL, fn, (uint8_t *)args + i * argsz))
			break;
		started++;
	}
	fn(args);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
}

const char *snap_section_name(uint32_t type)
{
	static const char *const names[SNAP_SEC_MAX] = {
	    [SNAP_SEC_VCPU] = "vcpu",
	    [SNAP_SEC_VM] = "vm",
	    [SNAP_SEC_DEVICE] = "device",
	    [SNAP_SEC_MEM_INDEX] = "memory index",
	    [SNAP_SEC_MEM_DATA] = "memory data",
	};

	return type < SNAP_SEC_MAX && names[type] ? names[type] : "unknown";
}
