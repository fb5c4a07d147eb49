/* SPDX-License-Identifier: MIT */
/*
 * Template memory: a snapshot's guest RAM, decompressed once into a file on
 * tmpfs, which every clone maps MAP_PRIVATE as its own RAM. Pages a clone
 * only reads stay shared with every other clone (one copy in the host's
 * page cache); the first write to a page gives that clone its own copy.
 *
 * Where the memory comes from:
 *  --mem-fd N       an fd the caller (kilnd) passes down: a memfd it filled
 *                   and sealed once (snap_restore_template()), or any file
 *                   holding exactly the snapshot's memory. Trusted as is.
 *  otherwise        DIR/kiln-template-<snapshot id>.mem, DIR being
 *                   --template-dir (default /dev/shm). The first clone
 *                   creates it (a private temporary name, renamed into
 *                   place when complete, then read-only), later ones open
 *                   it. The id names the whole content of the snapshot, so
 *                   a file of that name is that snapshot's memory. Remove
 *                   it when the template is retired; running clones keep
 *                   their mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snap_vm.h"

static int check_size(int fd, uint64_t size, const char *what, char *why, size_t len)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(why, len, "%s: %s", what, strerror(errno));
		return -errno;
	}
	if ((uint64_t)st.st_size < size) {
		snprintf(why, len, "%s: %llu bytes, the snapshot's memory is %llu", what,
		         (unsigned long long)st.st_size, (unsigned long long)size);
		return -EINVAL;
	}
	return 0;
}

static int create(const struct snap *s, const char *dir, const char *path, char *why, size_t len)
{
	char tmp[4200];
	struct snap_err err;
	uint64_t nonce = 0;
	int fd, ret;

	/* Not the pid: every jailed VMM is pid 1 of its own namespace, and
	 * clones of one snapshot start together. */
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		nonce = (uint64_t)getpid();
	snprintf(tmp, sizeof(tmp), "%s/.kiln-template-%016llx.%016llx", dir,
	         (unsigned long long)snap_id(s), (unsigned long long)nonce);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, len, "template memory '%s': %s", tmp, strerror(errno));
		return ret;
	}
	ret = snap_restore_template(s, fd, 0, false, &err);
	if (ret) {
		snprintf(why, len, "%s", err.msg);
		goto fail;
	}
	/* Read-only from now on (clones map it privately), then published:
	 * a concurrent creator's rename of the same content is harmless. */
	if (fchmod(fd, 0444) < 0 || rename(tmp, path) < 0) {
		ret = -errno;
		snprintf(why, len, "template memory '%s': %s", path, strerror(errno));
		goto fail;
	}
	return fd;
fail:
	unlink(tmp);
	close(fd);
	return ret;
}

int template_open(struct vm *vm, const struct snap *s, char *why, size_t len)
{
	const char *dir = vm->cfg.template_dir ? vm->cfg.template_dir : "/dev/shm";
	uint64_t size = snap_config(s)->mem_size;
	char path[4096];
	int fd, ret;

	if (vm->cfg.mem_fd >= 0) {
		ret = check_size(vm->cfg.mem_fd, size, "--mem-fd", why, len);
		return ret ? ret : vm->cfg.mem_fd;
	}
	if (snprintf(path, sizeof(path), "%s/kiln-template-%016llx.mem", dir,
	             (unsigned long long)snap_id(s)) >= (int)sizeof(path)) {
		snprintf(why, len, "--template-dir: path too long");
		return -ENAMETOOLONG;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return create(s, dir, path, why, len);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, len, "template memory '%s': %s", path, strerror(errno));
		return ret;
	}
	ret = check_size(fd, size, path, why, len);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}
