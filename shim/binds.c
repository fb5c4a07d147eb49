/* SPDX-License-Identifier: MIT */
/*
 * The spec's bind mounts, copied into the guest once it boots and before
 * its process starts: kiln has no file share between host and guest, but
 * its agent has a file API (include/kiln/agent.h, FILE streams), and what
 * containers bind (the kubelet's /etc/hosts, /etc/hostname,
 * /etc/resolv.conf and termination log, ConfigMaps, Secrets, ctr run
 * --mount, docker -v) is mostly a few small files. A file bind is one
 * WRITE at the destination (its parent made first); a directory bind
 * removes what the image has at the destination (a bind hides it), makes
 * the directory and copies the tree. The copy is a snapshot: guest writes
 * stay in the guest's memory, later host changes do not reach it.
 *
 * The source tree is the host's: links in it are followed, but only to
 * what stays inside the source (as a Kubernetes ConfigMap's "..data"
 * links do): each opened node's real path is checked against the
 * source's, so a link out, or a rename racing the walk, is refused.
 * Device nodes, fifos and sockets are refused; so are trees of more than
 * BIND_MAX_ENTRIES entries or BIND_MAX_DEPTH levels, and more bytes than
 * BIND_MAX_BYTES or a quarter of the VM's memory (the copy lives in it).
 * All of it is checked in a first pass that copies nothing, then again
 * as it is copied. Files are root's in the guest with their host modes but set-id bits; a
 * read-only bind's files lose their write bits (root in the guest could
 * still write them; nothing it writes reaches the host either way).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_proto.h"
#include "shim.h"

#define BIND_MAX_ENTRIES 4096
#define BIND_MAX_DEPTH   16
#define BIND_MAX_BYTES   (64ull << 20)
#define FILE_TIMEOUT_MS  10000

struct copy {
	struct shim *s;
	size_t i; /* the bind's index, for messages */
	const struct shim_bind *b;
	char root[PATH_MAX]; /* the source's real path */
	size_t entries;
	uint64_t bytes, max_bytes;
	uint8_t *chunk; /* KILN_DATA_CHUNK bytes */
	bool dry;       /* the first pass: every check, no copy */
	char *msg;
	size_t n;
};

static int send_buf(int fd, struct buf *b, int err)
{
	if (!err)
		err = vm_write_all(fd, buf_head(b), buf_avail(b));
	buf_free(b);
	return err;
}

/* The agent's next frame is want (HELLO, DONE), or its ERROR: msg says. */
static int file_reply(struct copy *c, int fd, uint16_t want, const char *what, const char *path)
{
	char why[1100];
	int err = agent_expect(fd, want, FILE_TIMEOUT_MS, why, sizeof(why));

	if (err)
		snprintf(c->msg, c->n, "bind mount %.1000s, %s %.1000s in the guest: %s", c->b->src,
		         what, path, why);
	return err;
}

/* One FILE stream: op on path, with src's first size bytes for a WRITE. */
static int file_op(struct copy *c, uint32_t op, const char *path, uint32_t arg, int src,
                   uint64_t size)
{
	static const char *const what[] = {[KILN_FILE_WRITE] = "writing",
	                                   [KILN_FILE_MKDIR] = "making the directory",
	                                   [KILN_FILE_REMOVE] = "removing"};
	struct buf b = {0};
	char why[400];
	int fd, err;

	if (c->dry)
		return 0;
	fd = vm_dial(c->s, KILN_STREAM_FILE, FILE_TIMEOUT_MS);
	if (fd < 0) {
		vm_dial_explain(fd, c->s->vm.vsock, FILE_TIMEOUT_MS, why, sizeof(why));
		snprintf(c->msg, c->n,
		         "bind mount: cannot reach the VM's agent to copy %.1000s: %s", c->b->src,
		         why);
		return fd;
	}
	err = file_reply(c, fd, KILN_MSG_HELLO, what[op], path);
	if (!err)
		err = send_buf(fd, &b, agent_msg_file(&b, op, path, arg, NULL));
	while (!err && op == KILN_FILE_WRITE && size) {
		ssize_t r = read(src, c->chunk, size < KILN_DATA_CHUNK ? size : KILN_DATA_CHUNK);

		if (r <= 0) {
			err = r < 0 ? -errno : 0;
			break; /* the file shrank: what there was */
		}
		size -= (uint64_t)r;
		err = send_buf(fd, &b, agent_msg_data(&b, KILN_MSG_DATA, c->chunk, (size_t)r));
	}
	if (!err && op == KILN_FILE_WRITE)
		err = send_buf(fd, &b, agent_msg_empty(&b, KILN_MSG_DONE));
	/* a refusal may have come before all was sent: read it either way */
	if (!err || err == -EPIPE || err == -ECONNRESET)
		err = file_reply(c, fd, KILN_MSG_DONE, what[op], path) ?: err;
	close(fd);
	return err;
}

/* The node behind an O_PATH fd is inside the source (its real path). */
static bool confined(struct copy *c, int fd)
{
	char link[64], real[PATH_MAX];
	size_t k = strlen(c->root);
	ssize_t r;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	r = readlink(link, real, sizeof(real) - 1);
	if (r <= 0)
		return false;
	real[r] = 0;
	return !strcmp(c->root, "/") ||
	       (!strncmp(real, c->root, k) && (real[k] == 0 || real[k] == '/'));
}

static int reopen(int fd, int flags)
{
	char link[64];

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	return open(link, flags | O_CLOEXEC);
}

static int copy_node(struct copy *c, int fd, const char *host, const char *guest, int depth);

static int copy_dir(struct copy *c, int fd, const char *host, const char *guest, int depth)
{
	char h[PATH_MAX], g[PATH_MAX];
	struct dirent *e;
	int dfd = reopen(fd, O_RDONLY | O_DIRECTORY), err = 0;
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (!d) {
		snprintf(c->msg, c->n, "bind mount: %.1000s: %s", host, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return -EIO;
	}
	while (!err && (e = readdir(d))) {
		int child;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(h, sizeof(h), "%s/%s", host, e->d_name) >= (int)sizeof(h) ||
		    snprintf(g, sizeof(g), "%s/%s", guest, e->d_name) >= (int)sizeof(g)) {
			snprintf(c->msg, c->n, "bind mount: %.1000s/%.255s: the path is too long",
			         host, e->d_name);
			err = -ENAMETOOLONG;
			break;
		}
		child = openat(dirfd(d), e->d_name, O_PATH | O_CLOEXEC);
		if (child < 0) {
			err = -errno;
			snprintf(c->msg, c->n, "bind mount: %.1000s: %s (a link to nothing?)", h,
			         strerror(errno));
			break;
		}
		err = copy_node(c, child, h, g, depth + 1);
		close(child);
	}
	closedir(d);
	return err;
}

static int copy_node(struct copy *c, int fd, const char *host, const char *guest, int depth)
{
	struct stat st;
	int err;

	if (++c->entries > BIND_MAX_ENTRIES || depth > BIND_MAX_DEPTH) {
		snprintf(
		    c->msg, c->n,
		    "bind mount %zu: %.1000s has more than %d entries or %d levels: kiln's shim "
		    "copies bind mounts into the VM and takes trees up to that; put larger ones "
		    "in the image",
		    c->i, c->b->src, BIND_MAX_ENTRIES, BIND_MAX_DEPTH);
		return -E2BIG;
	}
	if (!confined(c, fd)) {
		snprintf(c->msg, c->n,
		         "bind mount %zu: %.1000s leads out of the bind's source %.1000s (a link "
		         "out of it): refused",
		         c->i, host, c->root);
		return -EXDEV;
	}
	if (fstat(fd, &st)) {
		snprintf(c->msg, c->n, "bind mount: %.1000s: %s", host, strerror(errno));
		return -errno;
	}
	if (S_ISDIR(st.st_mode))
		return file_op(c, KILN_FILE_MKDIR, guest, st.st_mode & 01777, -1, 0)
		           ?: copy_dir(c, fd, host, guest, depth);
	if (!S_ISREG(st.st_mode)) {
		snprintf(
		    c->msg, c->n,
		    "bind mount %zu: %.1000s is a device node, fifo or socket: kiln's shim copies "
		    "bind mounts into the VM and cannot copy that",
		    c->i, host);
		return -ENOTSUP;
	}
	c->bytes += (uint64_t)st.st_size;
	if (c->bytes > c->max_bytes) {
		snprintf(
		    c->msg, c->n,
		    "bind mount %zu: the bind mounts hold more than %llu MiB (at %.1000s): kiln's "
		    "shim copies them into the VM's memory and takes up to that (a quarter of "
		    "its memory, at most %llu MiB); put larger files in the image",
		    c->i, (unsigned long long)(c->max_bytes >> 20), host,
		    (unsigned long long)(BIND_MAX_BYTES >> 20));
		return -E2BIG;
	}
	int rfd = reopen(fd, O_RDONLY);

	if (rfd < 0) {
		snprintf(c->msg, c->n, "bind mount: %.1000s: %s", host, strerror(errno));
		return -EIO;
	}
	err = file_op(c, KILN_FILE_WRITE, guest, st.st_mode & (c->b->ro ? 0555 : 0777), rfd,
	              (uint64_t)st.st_size);
	close(rfd);
	return err;
}

static int copy_bind(struct copy *c)
{
	char parent[PATH_MAX];
	struct stat st;
	int fd = open(c->b->src, O_PATH | O_CLOEXEC), err;

	if (fd < 0) {
		err = -errno;
		snprintf(c->msg, c->n, "bind mount %zu: its source %.1000s: %s", c->i, c->b->src,
		         strerror(errno));
		return err;
	}
	if (!realpath(c->b->src, c->root) || fstat(fd, &st)) {
		err = -errno;
		snprintf(c->msg, c->n, "bind mount %zu: its source %.1000s: %s", c->i, c->b->src,
		         strerror(errno));
		close(fd);
		return err;
	}
	if (S_ISDIR(st.st_mode)) {
		/* what the image has there is hidden by a bind: gone here */
		file_op(c, KILN_FILE_REMOVE, c->b->dst, 1, -1, 0);
	} else {
		snprintf(parent, sizeof(parent), "%s", c->b->dst);
		*strrchr(parent, '/') = 0;
		err = parent[0] ? file_op(c, KILN_FILE_MKDIR, parent, 0755, -1, 0) : 0;
		if (err) {
			close(fd);
			return err;
		}
	}
	err = copy_node(c, fd, c->b->src, c->b->dst, 0);
	close(fd);
	return err;
}

int binds_copy(struct shim *s, const struct spec_binds *b, char *msg, size_t n)
{
	struct copy c = {.s = s, .msg = msg, .n = n};
	int err = 0;

	if (!b->n)
		return 0;
	if (!(c.chunk = malloc(KILN_DATA_CHUNK))) {
		snprintf(msg, n, "out of memory");
		return -ENOMEM;
	}
	c.max_bytes = ((uint64_t)s->res.mem_mb << 20) / 4;
	if (c.max_bytes > BIND_MAX_BYTES)
		c.max_bytes = BIND_MAX_BYTES;
	/* everything is checked before anything is copied: a tree past a
	 * bound is refused at once, not after thousands of copies */
	for (int pass = 0; !err && pass < 2; pass++) {
		c.dry = pass == 0;
		c.entries = 0;
		c.bytes = 0;
		for (size_t i = 0; !err && i < b->n; i++) {
			c.i = i;
			c.b = &b->v[i];
			err = copy_bind(&c);
		}
	}
	free(c.chunk);
	return err;
}
