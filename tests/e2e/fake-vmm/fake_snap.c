/* SPDX-License-Identifier: MIT */
/*
 * fake-vmm (tests only): the API socket and snapshots of a VMM, faked.
 *
 * A "snapshot" is a small text file naming the files the VM ran on (the
 * kernel, initramfs and image, by path and size) and an id, with a
 * checksum over all of it; the guest's state is the host's, so nothing
 * else needs saving. --restore checks it the way kiln-vmm does (damaged
 * file, other kernel or image: a message and exit status 1) and writes
 * DIR/kiln-template-<id>.mem for --restore-mode template. The API socket
 * answers state, pause, resume, snapshot and stop like vmm/API.md.
 * FAKE_VMM_SNAPSHOT_ENOSPC=1 makes every snapshot fail for lack of space;
 * FAKE_VMM_SNAPSHOT_DELAY_MS=N makes writing one take N ms (a slow pause);
 * FAKE_VMM_SNAPSHOT_LINK=TARGET leaves a link to TARGET where the snapshot
 * should be, as a VMM a guest took over could (tests/e2e/jail.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fake_vmm.h"

#define MAGIC "kiln-fake-snapshot 1\n"

static unsigned long long fnv(const char *p, size_t n)
{
	unsigned long long h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ (unsigned char)*p++) * 1099511628211ULL;
	return h;
}

static long long file_size(const char *path)
{
	struct stat st;

	return path && !stat(path, &st) ? (long long)st.st_size : -1;
}

/* The file's text without its sum line; the caller frees it. */
static int describe(const struct fake_cfg *cfg, char *out, size_t n, unsigned long long *id)
{
	int len =
	    snprintf(out, n, MAGIC "kernel %s %lld\ninitrd %s %lld\nimage %s %lld\n", cfg->kernel,
	             file_size(cfg->kernel), cfg->initrd ? cfg->initrd : "-",
	             file_size(cfg->initrd), cfg->image ? cfg->image : "-", file_size(cfg->image));

	if (len < 0 || (size_t)len >= n)
		return -1;
	*id = fnv(out, (size_t)len) ^ (unsigned long long)time(NULL) ^
	      ((unsigned long long)getpid() << 32);
	len += snprintf(out + len, n - (size_t)len, "id %016llx\n", *id);
	return len;
}

/* Like kiln-vmm, which hashes the kernel at its first snapshot: the file
 * must be the one it booted from. */
static bool kernel_replaced(const struct fake_cfg *cfg)
{
	struct stat now;

	return stat(cfg->kernel, &now) || now.st_ino != cfg->kernel_st.st_ino ||
	       now.st_dev != cfg->kernel_st.st_dev || now.st_size != cfg->kernel_st.st_size ||
	       now.st_mtim.tv_sec != cfg->kernel_st.st_mtim.tv_sec ||
	       now.st_mtim.tv_nsec != cfg->kernel_st.st_mtim.tv_nsec;
}

static int write_snapshot(const struct fake_cfg *cfg, const char *path, char *err, size_t errn,
                          unsigned long long *id, long long *size)
{
	char text[8192], tmp[4300];
	int len = describe(cfg, text, sizeof(text) - 64, id), fd;

	if (len < 0) {
		snprintf(err, errn, "paths too long");
		return -1;
	}
	if (getenv("FAKE_VMM_SNAPSHOT_DELAY_MS"))
		usleep((useconds_t)atoi(getenv("FAKE_VMM_SNAPSHOT_DELAY_MS")) * 1000);
	if (kernel_replaced(cfg)) {
		/* kiln-vmm's words (vmm/snapshot.c) */
		snprintf(err, errn,
		         "kernel image '%s': replaced since the VM booted, so the snapshot could "
		         "not name it",
		         cfg->kernel);
		return -1;
	}
	if (getenv("FAKE_VMM_SNAPSHOT_ENOSPC")) {
		snprintf(err, errn, "writing snapshot '%s': %s", path, strerror(ENOSPC));
		return -1;
	}
	len += snprintf(text + len, sizeof(text) - (size_t)len, "sum %016llx\n",
	                fnv(text, (size_t)len));
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write_full(fd, text, (size_t)len) || fsync(fd) || close(fd) ||
	    rename(tmp, path)) {
		snprintf(err, errn, "writing snapshot '%s': %s", path, strerror(errno));
		if (fd >= 0)
			unlink(tmp);
		return -1;
	}
	if (getenv("FAKE_VMM_SNAPSHOT_LINK") &&
	    (unlink(path) || symlink(getenv("FAKE_VMM_SNAPSHOT_LINK"), path))) {
		snprintf(err, errn, "FAKE_VMM_SNAPSHOT_LINK: %s", strerror(errno));
		return -1;
	}
	*size = len;
	return 0;
}

static void refuse(const char *path, const char *why)
{
	fprintf(stderr, "kiln-vmm: cannot restore: %s: %s\n", path, why);
	exit(1);
}

void fake_restore(const struct fake_cfg *cfg)
{
	char text[8192], line[8800], kernel[4200], image[4200], want[4200];
	unsigned long long sum = 0, id = 0;
	long long ksize = -1, isize = -1;
	int fd = open(cfg->restore, O_RDONLY | O_CLOEXEC), n = 0;
	char *sum_at;

	if (fd < 0)
		refuse(cfg->restore, strerror(errno));
	while (n < (int)sizeof(text) - 1) {
		ssize_t r = read(fd, text + n, sizeof(text) - 1 - (size_t)n);

		if (r <= 0)
			break;
		n += (int)r;
	}
	close(fd);
	text[n] = 0;
	if (strncmp(text, MAGIC, strlen(MAGIC)))
		refuse(cfg->restore, "not a snapshot (bad magic)");
	sum_at = strstr(text, "sum ");
	if (!sum_at || sscanf(sum_at, "sum %llx", &sum) != 1 ||
	    fnv(text, (size_t)(sum_at - text)) != sum)
		refuse(cfg->restore, "the checksum over the header does not match: the file is "
		                     "damaged or truncated");
	if (sscanf(strstr(text, "kernel "), "kernel %4199s %lld", kernel, &ksize) != 2 ||
	    sscanf(strstr(text, "image "), "image %4199s %lld", image, &isize) != 2 ||
	    sscanf(strstr(text, "id "), "id %llx", &id) != 1)
		refuse(cfg->restore, "malformed header");
	if (strcmp(kernel, cfg->kernel) || ksize != file_size(cfg->kernel)) {
		snprintf(line, sizeof(line), "the kernel differs from the snapshot's (%s)", kernel);
		refuse(cfg->restore, line);
	}
	snprintf(want, sizeof(want), "%s", cfg->image ? cfg->image : "-");
	if (strcmp(image, want) || isize != file_size(cfg->image)) {
		snprintf(line, sizeof(line),
		         "the image differs from the snapshot's (%s, %lld bytes)", image, isize);
		refuse(cfg->restore, line);
	}
	if (cfg->restore_mode && !strcmp(cfg->restore_mode, "template")) {
		snprintf(line, sizeof(line), "%s/kiln-template-%016llx.mem",
		         cfg->template_dir ? cfg->template_dir : "/dev/shm", id);
		if (access(line, F_OK)) {
			fd = open(line, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
			if (fd < 0)
				refuse(cfg->restore, strerror(errno));
			close(fd);
		}
	}
	printf("fake-vmm: restored from %s (%s)\n", cfg->restore,
	       cfg->restore_mode ? cfg->restore_mode : "eager");
}

static void reply(int conn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(int conn, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(buf) - 1)
		return;
	buf[n++] = '\n';
	write_full(conn, buf, (size_t)n);
}

/* The value of "key":"..." in a request line, into out. */
static int get_str(const char *req, const char *key, char *out, size_t n)
{
	char pat[64];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(req, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	e = strchr(p, '"');
	if (!e || (size_t)(e - p) >= n)
		return -1;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = 0;
	return 0;
}

static void handle(int conn, const char *req, const struct fake_cfg *cfg, bool *paused)
{
	char op[32], path[4200], err[4400];
	unsigned long long id;
	long long size;

	if (get_str(req, "op", op, sizeof(op))) {
		reply(conn, "{\"ok\":false,\"error\":\"missing op\"}");
		return;
	}
	if (!strcmp(op, "state")) {
		reply(conn, "{\"ok\":true,\"state\":\"%s\",\"vcpus\":1}",
		      *paused ? "paused" : "running");
	} else if (!strcmp(op, "pause") || !strcmp(op, "resume")) {
		bool already = *paused == (op[0] == 'p');

		*paused = op[0] == 'p';
		reply(conn, "{\"ok\":true,\"state\":\"%s\",\"already\":%s}",
		      *paused ? "paused" : "running", already ? "true" : "false");
	} else if (!strcmp(op, "snapshot")) {
		if (get_str(req, "path", path, sizeof(path))) {
			reply(conn, "{\"ok\":false,\"error\":\"snapshot: 'path' is required\"}");
			return;
		}
		if (write_snapshot(cfg, path, err, sizeof(err), &id, &size)) {
			reply(conn, "{\"ok\":false,\"error\":\"%s\"}", err);
			return;
		}
		if (strstr(req, "\"resume\":false"))
			*paused = true;
		reply(conn,
		      "{\"ok\":true,\"state\":\"%s\",\"path\":\"%s\",\"id\":\"%016llx\","
		      "\"file_size\":%lld,\"total_ms\":1.0}",
		      *paused ? "paused" : "running", path, id, size);
	} else if (!strcmp(op, "stop")) {
		reply(conn, "{\"ok\":true,\"state\":\"stopping\"}");
		exit(0);
	} else {
		reply(conn, "{\"ok\":false,\"error\":\"unknown op '%s'\"}", op);
	}
}

void fake_api_serve(int conn, const struct fake_cfg *cfg, bool *paused)
{
	struct timeval tv = {.tv_sec = 5};
	char line[8192];
	size_t n = 0;

	/* One client at a time, served in the main loop: kilnd sends its
	 * request at once; a silent client is dropped after 5 s. */
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		char *nl;
		ssize_t r = read(conn, line + n, sizeof(line) - 1 - n);

		if (r <= 0)
			return;
		n += (size_t)r;
		line[n] = 0;
		while ((nl = strchr(line, '\n'))) {
			*nl = 0;
			handle(conn, line, cfg, paused);
			n -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, n + 1);
		}
		if (n == sizeof(line) - 1)
			return;
	}
}
