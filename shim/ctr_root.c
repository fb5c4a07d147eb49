/* SPDX-License-Identifier: MIT */
/*
 * A pod container's root inside the pod's VM. The VM booted over the
 * first container's image and kiln has no file share, nor a second image
 * once booted, so the tree containerd mounted for a further container is
 * sent into the running guest: libarchive walks it (symlinks kept as
 * links, hard links as links) and writes a pax tar stream that goes, as it
 * is made, into one agent UNTAR stream (include/kiln/agent.h) unpacking it
 * at /run/kiln/containers/ID, with the guest's device nodes linked into
 * its dev/ and a procfs of its own on its proc/. The container's processes
 * are chrooted there (START's root trailer). The copy lives in guest memory: it is bounded by half of the
 * VM's, and removed at delete. Once it and the binds are in, BASE clears
 * its nodes' change bits: at the container's end its own changes are
 * replayed onto its snapshot (rwlayer.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "agent/agent_proto.h"
#include "shim.h"

#define ROOT_TIMEOUT_MS 30000

struct sink {
	int fd;
	uint64_t sent, max;
	int err;
};

/* libarchive's output: DATA frames on the UNTAR stream. */
static la_ssize_t sink_write(struct archive *a, void *arg, const void *p, size_t n)
{
	struct sink *k = arg;
	struct buf b = {0};

	(void)a;
	if (k->sent + n > k->max) {
		k->err = -EFBIG;
		archive_set_error(a, EFBIG, "the container's root is over %llu MiB",
		                  (unsigned long long)(k->max >> 20));
		return -1;
	}
	k->err = agent_msg_data(&b, KILN_MSG_DATA, p, n);
	if (!k->err)
		k->err = vm_write_all(k->fd, buf_head(&b), buf_avail(&b));
	buf_free(&b);
	if (k->err) {
		archive_set_error(a, -k->err, "the agent's stream: %s", strerror(-k->err));
		return -1;
	}
	k->sent += n;
	return (la_ssize_t)n;
}

/* One entry of the walk, named relative to dir, with its data. */
static int put_entry(struct archive *disk, struct archive *out,
                     struct archive_entry_linkresolver *lr, struct archive_entry *e, size_t dir_len)
{
	struct archive_entry *sparse = NULL;
	const char *path = archive_entry_sourcepath(e);
	const void *blk;
	size_t len;
	la_int64_t off;
	int r;

	if (archive_entry_filetype(e) == AE_IFSOCK)
		return ARCHIVE_OK; /* tar has no sockets; nothing could use one */
	path += dir_len;
	while (*path == '/')
		path++;
	archive_entry_copy_pathname(e, *path ? path : ".");
	archive_entry_linkify(lr, &e, &sparse);
	if (!e)
		return ARCHIVE_OK;
	if ((r = archive_write_header(out, e)) < ARCHIVE_WARN)
		return r;
	if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e))
		return ARCHIVE_OK;
	while ((r = archive_read_data_block(disk, &blk, &len, &off)) == ARCHIVE_OK)
		if (archive_write_data(out, blk, len) < 0)
			return ARCHIVE_FATAL;
	return r == ARCHIVE_EOF ? ARCHIVE_OK : r;
}

/* The tree at dir as a tar stream into fd. */
static int send_tree(const char *dir, struct sink *k, char *msg, size_t n)
{
	struct archive *disk = archive_read_disk_new(), *out = archive_write_new();
	struct archive_entry_linkresolver *lr = archive_entry_linkresolver_new();
	struct archive_entry *e = archive_entry_new();
	int r = ARCHIVE_FATAL;

	if (!disk || !out || !lr || !e) {
		snprintf(msg, n, "out of memory");
		goto out;
	}
	archive_read_disk_set_symlink_physical(disk);
	archive_read_disk_set_behavior(disk, ARCHIVE_READDISK_NO_XATTR | ARCHIVE_READDISK_NO_ACL |
	                                         ARCHIVE_READDISK_NO_FFLAGS);
	archive_write_set_format_pax_restricted(out);
	archive_write_set_bytes_per_block(out, 64 << 10);
	archive_write_set_bytes_in_last_block(out, 1);
	archive_entry_linkresolver_set_strategy(lr, archive_format(out));
	if (archive_write_open(out, k, NULL, sink_write, NULL) ||
	    archive_read_disk_open(disk, dir)) {
		snprintf(msg, n, "cannot read %s: %s", dir,
		         archive_error_string(disk) ?: archive_error_string(out) ?: "?");
		goto out;
	}
	while ((r = archive_read_next_header2(disk, e)) == ARCHIVE_OK) {
		archive_read_disk_descend(disk);
		if ((r = put_entry(disk, out, lr, e, strlen(dir))) != ARCHIVE_OK &&
		    r != ARCHIVE_WARN) {
			snprintf(msg, n, "copying %s into the guest: %s", dir,
			         archive_error_string(out) ?: archive_error_string(disk) ?: "?");
			goto out;
		}
	}
	if (r != ARCHIVE_EOF) {
		snprintf(msg, n, "reading %s: %s", dir, archive_error_string(disk) ?: "?");
		goto out;
	}
	r = archive_write_close(out);
	if (r)
		snprintf(msg, n, "copying %s into the guest: %s", dir,
		         archive_error_string(out) ?: "?");
out:
	if (e)
		archive_entry_free(e);
	if (lr)
		archive_entry_linkresolver_free(lr);
	if (disk)
		archive_read_free(disk);
	if (out)
		archive_write_free(out);
	return r ? (k->err ? k->err : -EIO) : 0;
}

/* The agent's answer to a FILE stream: want, or ERROR (msg says). */
static int reply(int fd, uint16_t want, const char *what, char *msg, size_t n)
{
	char why[2100];
	int err = agent_expect(fd, want, ROOT_TIMEOUT_MS, why, sizeof(why));

	if (err)
		snprintf(msg, n, "%s: %s", what, why);
	return err;
}

int ctr_root_copy(struct shim *s, struct ctr *c, const char *dir, char *msg, size_t n)
{
	struct sink k = {.max = ((uint64_t)s->res.mem_mb << 20) / 2};
	struct buf b = {0};
	char why[2048] = "";
	int err;

	k.fd = vm_dial(s, KILN_STREAM_FILE, ROOT_TIMEOUT_MS);
	if (k.fd < 0) {
		vm_dial_explain(k.fd, s->vm.vsock, ROOT_TIMEOUT_MS, why, sizeof(why));
		snprintf(msg, n, "cannot reach the pod's agent: %s", why);
		return k.fd;
	}
	err = reply(k.fd, KILN_MSG_HELLO, "the pod's agent", msg, n);
	if (!err)
		err = agent_msg_file(&b, KILN_FILE_UNTAR, c->guest_root,
		                     KILN_UNTAR_DEV | KILN_UNTAR_PROC, NULL);
	if (!err)
		err = vm_write_all(k.fd, buf_head(&b), buf_avail(&b));
	buf_free(&b);
	if (!err)
		err = send_tree(dir, &k, why, sizeof(why));
	if (!err) {
		err = agent_msg_empty(&b, KILN_MSG_DONE);
		if (!err)
			err = vm_write_all(k.fd, buf_head(&b), buf_avail(&b));
		buf_free(&b);
	}
	/* a refusal may have come before all was sent: it says more */
	if (!err || err == -EPIPE || err == -ECONNRESET || k.err == -EPIPE) {
		int e = reply(k.fd, KILN_MSG_DONE, "unpacking the root in the guest", msg, n);

		err = e ? e : err;
	} else if (why[0]) {
		snprintf(msg, n, "%s", why);
	}
	close(k.fd);
	return err;
}

/* One file operation of the agent's on guest_root, answered by DONE. */
static int root_op(struct shim *s, uint32_t op, const char *guest_root, uint32_t arg,
                   const char *what, char *msg, size_t n)
{
	struct buf b = {0};
	int fd = vm_dial(s, KILN_STREAM_FILE, ROOT_TIMEOUT_MS), err;

	if (fd < 0) {
		snprintf(msg, n, "cannot reach the pod's agent: %s", strerror(-fd));
		return fd;
	}
	err = reply(fd, KILN_MSG_HELLO, "the pod's agent", msg, n);
	if (!err)
		err = agent_msg_file(&b, op, guest_root, arg, NULL);
	if (!err)
		err = vm_write_all(fd, buf_head(&b), buf_avail(&b));
	buf_free(&b);
	if (!err)
		err = reply(fd, KILN_MSG_DONE, what, msg, n);
	close(fd);
	return err;
}

void ctr_root_remove(struct shim *s, const char *guest_root)
{
	char msg[2400];

	/* (a VM that is gone took the copy with it) */
	if (root_op(s, KILN_FILE_REMOVE, guest_root, 1, "removing the container's root", msg,
	            sizeof(msg)) &&
	    !s->vm.dead)
		shim_log("%s: %s", guest_root, msg);
}

int ctr_root_base(struct shim *s, struct ctr *c, char *msg, size_t n)
{
	int err = root_op(s, KILN_FILE_BASE, c->guest_root, 0,
	                  "telling the container's copied root from its own changes", msg, n);

	c->rw_base = !err;
	if (err == -ENOSYS || err == -EINVAL) {
		/* an older guest: the container runs, its writes stay in the VM */
		shim_log("%s: %s: its writes to its root will not reach its snapshot", c->id, msg);
		return 0;
	}
	return err;
}

int ctr_read_file(struct shim *s, const char *path, char *buf, size_t cap, char *msg, size_t n)
{
	struct buf b = {0};
	int fd = vm_dial(s, KILN_STREAM_FILE, ROOT_TIMEOUT_MS), err;
	size_t got = 0;

	if (fd < 0) {
		snprintf(msg, n, "cannot reach the pod's agent: %s", strerror(-fd));
		return fd;
	}
	err = reply(fd, KILN_MSG_HELLO, "the pod's agent", msg, n);
	if (!err)
		err = agent_msg_file(&b, KILN_FILE_READ, path, 0, NULL);
	if (!err)
		err = vm_write_all(fd, buf_head(&b), buf_avail(&b));
	buf_free(&b);
	if (!err)
		err = reply(fd, KILN_MSG_STAT, path, msg, n);
	while (!err) {
		struct kiln_frame f;
		uint8_t *pl = NULL;

		err = agent_read_frame(fd, &f, &pl, ROOT_TIMEOUT_MS);
		if (!err && f.type == KILN_MSG_DATA && f.len < cap - got) {
			memcpy(buf + got, pl, f.len);
			got += f.len;
		} else if (!err && f.type != KILN_MSG_DONE) {
			err = -EPROTO;
			snprintf(msg, n, "%s: more than %zu bytes, or not a file", path, cap);
		}
		free(pl);
		if (!err && f.type == KILN_MSG_DONE)
			break;
	}
	buf[got] = 0;
	close(fd);
	return err;
}

/* op on c's own PID namespace, which one that shares the pod's has not. */
static int ns_op(struct shim *s, struct ctr *c, uint32_t op, uint32_t arg, const char *what,
                 char *msg, size_t n)
{
	if (c->pid_shared) {
		snprintf(msg, n,
		         "%s: the container shares the pod's PID namespace, it has none of its own",
		         what);
		return -ENOTSUP;
	}
	return root_op(s, op, c->guest_root, arg, what, msg, n);
}

int ctr_limit(struct shim *s, struct ctr *c, uint32_t mib, char *msg, size_t n)
{
	return ns_op(s, c, KILN_FILE_LIMIT, mib, "bounding its memory", msg, n);
}

int ctr_cpu(struct shim *s, struct ctr *c, uint32_t milli, char *msg, size_t n)
{
	return ns_op(s, c, KILN_FILE_CPU, milli, "bounding its CPU", msg, n);
}

int ctr_shares(struct shim *s, struct ctr *c, uint32_t shares, char *msg, size_t n)
{
	return ns_op(s, c, KILN_FILE_SHARES, shares, "weighting its CPU", msg, n);
}

int ctr_freeze(struct shim *s, struct ctr *c, bool on, char *msg, size_t n)
{
	return ns_op(s, c, KILN_FILE_FREEZE, on, on ? "freezing" : "thawing", msg, n);
}
