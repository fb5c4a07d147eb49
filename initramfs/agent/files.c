/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: file streams, one operation per stream. READ and LIST stream
 * their results through pump() while the connection has room, so neither a
 * large file nor a large directory is ever held in memory. WRITE goes to a
 * temporary file next to the target that is renamed over it only on DONE.
 * A request that names a user (the user trailer) does every step that
 * touches the file system as that user (users.h), except, with
 * KILN_USER_GIVE, the operations that write: root does them, as E2B's envd
 * does, and gives the user what they make.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "changes.h"
#include "fsops.h"
#include "kiln/pidns.h"
#include "untar.h"
#include "users.h"

#define UPLOAD_TEMPLATE "/.kiln-upload.XXXXXX"

struct fop {
	uint32_t op;
	bool requested;
	char *path;
	int fd;    /* READ: the file; WRITE: the temporary file */
	char *tmp; /* WRITE: the temporary file's path until it is renamed */
	uint32_t mode;
	DIR *dir;                 /* LIST */
	struct agent_user *user;  /* the request's, or NULL: root */
	struct agent_user *owner; /* KILN_USER_GIVE: who gets what root makes */
	struct untar *untar;      /* UNTAR */
	struct changes *changes;  /* CHANGES */
};

static void file_open(struct conn *c)
{
	struct fop *f = calloc(1, sizeof(*f));

	if (!f) {
		conn_nomem(c);
		return;
	}
	f->fd = -1;
	c->priv = f;
}

static void file_err(struct conn *c, int err, const char *what, const char *path)
{
	conn_fail(c, err, "cannot %s '%s': %s", what, path, strerror(err));
}

static void file_done(struct conn *c)
{
	if (frame_put(&c->out, KILN_MSG_DONE, NULL, 0))
		conn_nomem(c);
	else
		conn_finish(c);
}

/* STAT or ENTRY: u32 mode, u64 size, i64 mtime, string name, string link,
 * u32 mtime nanoseconds. */
static void put_stat(struct conn *c, uint16_t type, const struct stat *st, const char *name,
                     size_t name_len, const char *link)
{
	struct frame_mark m;

	frame_begin(&c->out, &m, type);
	put_u32(&c->out, &m, st->st_mode);
	put_u64(&c->out, &m, st->st_size);
	put_u64(&c->out, &m, (uint64_t)(int64_t)st->st_mtime);
	put_u32(&c->out, &m, name_len);
	put_bytes(&c->out, &m, name, name_len);
	put_str(&c->out, &m, link);
	put_u32(&c->out, &m, (uint32_t)st->st_mtim.tv_nsec);
	if (frame_end(&c->out, &m))
		conn_nomem(c);
}

/* The last component of path, ignoring trailing slashes ("/" for the root). */
static const char *base_name(const char *path, size_t *len)
{
	size_t end = strlen(path), start;

	while (end > 1 && path[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	if (start == end && end) /* only slashes */
		start = end - 1;
	*len = end - start;
	return path + start;
}

static void file_stat_path(struct conn *c, const char *path)
{
	char link[4096] = "";
	struct stat st;
	size_t len;

	if (lstat(path, &st) < 0) {
		file_err(c, errno, "stat", path);
		return;
	}
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = 0;
	}
	const char *name = base_name(path, &len);
	put_stat(c, KILN_MSG_STAT, &st, name, len, link);
	conn_finish(c);
}

static void file_read_start(struct conn *c, struct fop *f)
{
	struct stat st;
	size_t len;
	int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0) {
		file_err(c, errno, "read", f->path);
		return;
	}
	if (fstat(fd, &st) < 0) {
		file_err(c, errno, "read", f->path);
		close(fd);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		/* A device or FIFO could block the loop or never end. */
		close(fd);
		if (S_ISDIR(st.st_mode))
			file_err(c, EISDIR, "read", f->path);
		else
			conn_fail(c, EINVAL, "cannot read '%s': not a regular file", f->path);
		return;
	}
	f->fd = fd;
	const char *name = base_name(f->path, &len);
	put_stat(c, KILN_MSG_STAT, &st, name, len, "");
}

static void file_write_start(struct conn *c, struct fop *f)
{
	size_t plen = strlen(f->path);
	const char *slash = strrchr(f->path, '/');
	size_t dlen = slash ? (size_t)(slash - f->path) : 0;

	struct stat st;

	/* rename() would refuse a directory too, but only after the upload. */
	if (!plen || f->path[plen - 1] == '/' || (!stat(f->path, &st) && S_ISDIR(st.st_mode))) {
		file_err(c, plen ? EISDIR : ENOENT, "write", f->path);
		return;
	}
	/* envd writes into the file it finds, which keeps its mode. */
	if (f->owner && !lstat(f->path, &st) && S_ISREG(st.st_mode))
		f->mode = st.st_mode & 07777;
	f->tmp = malloc(dlen + sizeof(UPLOAD_TEMPLATE) + 1);
	if (!f->tmp) {
		conn_nomem(c);
		return;
	}
	/* "name" -> ".kiln-upload.X" in the working directory, "/name" -> "/.kiln-upload.X" */
	if (slash)
		memcpy(f->tmp, f->path, dlen);
	strcpy(f->tmp + dlen, slash ? UPLOAD_TEMPLATE : UPLOAD_TEMPLATE + 1);
	f->fd = mkostemp(f->tmp, O_CLOEXEC);
	if (f->fd < 0) {
		free(f->tmp);
		f->tmp = NULL;
		file_err(c, errno, "write", f->path);
	}
}

static void file_write_data(struct conn *c, struct fop *f, const uint8_t *p, uint32_t len)
{
	while (len) {
		ssize_t n = write(f->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			file_err(c, n < 0 ? errno : EIO, "write", f->path);
			return;
		}
		p += n;
		len -= n;
	}
}

static void file_write_commit(struct conn *c, struct fop *f)
{
	int fd = f->fd;

	f->fd = -1;
	/* fsync on a memory file system may be unimplemented: nothing to sync. */
	if ((fsync(fd) < 0 && errno != EINVAL && errno != ENOSYS) ||
	    (f->owner && fchown(fd, f->owner->uid, f->owner->gid) < 0) || fchmod(fd, f->mode) < 0) {
		file_err(c, errno, "write", f->path);
		close(fd);
		return;
	}
	if (close(fd) < 0 || rename(f->tmp, f->path) < 0) {
		file_err(c, errno, "write", f->path);
		return;
	}
	free(f->tmp);
	f->tmp = NULL;
	file_done(c);
}

static void file_untar_start(struct conn *c, struct fop *f)
{
	int err = fs_mkdir_p(f->path, 0755, f->owner), fd;

	if (err) {
		file_err(c, -err, "create directory", f->path);
		return;
	}
	fd = open(f->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		file_err(c, errno, "open directory", f->path);
		return;
	}
	f->untar = untar_new(fd);
	if (!f->untar) {
		close(fd);
		conn_nomem(c);
	}
}

/* A DATA or DONE frame of an UNTAR stream. */
static void file_untar_frame(struct conn *c, struct fop *f, uint16_t type, const uint8_t *buf,
                             uint32_t len)
{
	char why[4200] = "";
	int err = user_enter(f->user);
	bool entered = !err;

	if (!err && type == KILN_MSG_DATA)
		err = untar_feed(f->untar, buf, len, why, sizeof(why));
	else if (!err && !(err = untar_finish(f->untar, why, sizeof(why))) &&
	         (f->mode & KILN_UNTAR_DEV) && (err = untar_link_dev(f->untar)))
		snprintf(why, sizeof(why), "cannot link the device nodes into %.3000s/dev: %s",
		         f->path, strerror(-err));
	else if (!err && type == KILN_MSG_DONE && (f->mode & KILN_UNTAR_PROC) &&
	         (err = untar_mount_proc(f->untar, f->path)))
		snprintf(why, sizeof(why), "cannot mount a procfs on %.3000s/proc: %s", f->path,
		         strerror(-err));
	if (entered)
		user_leave(f->user);
	if (err) {
		conn_fail(c, -err, "cannot unpack into '%.3000s': %s", f->path,
		          why[0] ? why : strerror(-err));
		untar_free(f->untar);
		f->untar = NULL;
	} else if (type == KILN_MSG_DONE) {
		untar_free(f->untar);
		f->untar = NULL;
		file_done(c);
	}
}

static bool writes(uint32_t op)
{
	return op == KILN_FILE_WRITE || op == KILN_FILE_MKDIR || op == KILN_FILE_REMOVE ||
	       op == KILN_FILE_RENAME || op == KILN_FILE_UNTAR;
}

/* FREEZE, LIMIT, CPU and SHARES: on the PID namespace of a START root
 * (pidns.c). */
static void file_pidns(struct conn *c, struct fop *f, uint32_t arg)
{
	bool freeze = f->op == KILN_FILE_FREEZE, shares = f->op == KILN_FILE_SHARES;
	int err;

	if ((freeze && arg > 1) ||
	    (shares && (arg < KILN_PIDNS_SHARES_MIN || arg > KILN_PIDNS_SHARES_MAX)) || f->user) {
		conn_fail(c, EINVAL, "%s takes %s and no user",
		          freeze   ? "FREEZE"
		          : shares ? "SHARES"
		                   : "LIMIT",
		          freeze   ? "0 or 1"
		          : shares ? "2 to 262144 (cpu.shares)"
		                   : "MiB");
		return;
	}
	err = freeze                     ? pidns_freeze(f->path, arg)
	      : f->op == KILN_FILE_LIMIT ? pidns_limit(f->path, arg)
	      : shares                   ? pidns_shares(f->path, arg)
	                                 : pidns_cpu(f->path, arg);
	if (err)
		conn_fail(c, -err, "cannot %s the commands under '%s': %s",
		          !freeze ? "bound"
		          : arg   ? "freeze"
		                  : "thaw",
		          f->path, strerror(-err));
	else
		file_done(c);
}

static void file_request(struct conn *c, struct fop *f, const uint8_t *buf, uint32_t len)
{
	char where[4096]; /* what REMOVE failed on */
	uint32_t arg = 0, user_flags = 0;
	char *to = NULL, *user_name = NULL, **excl = NULL;
	bool entered = false;
	struct rd r;
	int err = 0;

	rd_init(&r, buf, len);
	f->op = rd_u32(&r);
	f->path = rd_str(&r);
	if (f->op == KILN_FILE_WRITE || f->op == KILN_FILE_MKDIR || f->op == KILN_FILE_REMOVE ||
	    f->op == KILN_FILE_UNTAR || f->op == KILN_FILE_FREEZE || f->op == KILN_FILE_LIMIT ||
	    f->op == KILN_FILE_CPU || f->op == KILN_FILE_SHARES)
		arg = rd_u32(&r);
	else if (f->op == KILN_FILE_RENAME)
		to = rd_str(&r);
	else if (f->op == KILN_FILE_CHANGES)
		excl = rd_strlist(&r, 0, NULL);
	if (r.left && !r.why && f->op != KILN_FILE_CHANGES) { /* the user trailer */
		user_name = rd_str(&r);
		user_flags = rd_u32(&r);
	}
	if (!rd_ok(&r)) {
		conn_fail(c, EPROTO, "bad FILE_REQUEST: %s", r.why);
		goto out;
	}
	if (user_name && *user_name) {
		f->user = malloc(sizeof(*f->user));
		if (!f->user) {
			conn_nomem(c);
			goto out;
		}
		err = user_resolve(user_name, user_flags, f->user, where, sizeof(where));
		if (!err && (user_flags & KILN_USER_GIVE) && writes(f->op)) {
			f->owner = f->user;
			f->user = NULL;
		}
		if (!err)
			err = user_enter(f->user);
		if (err) {
			conn_fail(c, -err, "%s",
			          err == -ESRCH || err == -EINVAL ? where : strerror(-err));
			free(f->user);
			f->user = NULL;
			free(f->owner);
			f->owner = NULL;
			err = 0;
			goto out;
		}
		entered = true;
	}
	f->requested = true;
	f->mode = f->op == KILN_FILE_UNTAR ? arg : arg & 07777;
	switch (f->op) {
	case KILN_FILE_READ:
		file_read_start(c, f);
		break;
	case KILN_FILE_WRITE:
		file_write_start(c, f);
		break;
	case KILN_FILE_LIST:
		f->dir = opendir(f->path);
		if (!f->dir)
			file_err(c, errno, "list", f->path);
		break;
	case KILN_FILE_STAT:
		file_stat_path(c, f->path);
		break;
	case KILN_FILE_MKDIR:
		err = fs_mkdir_p(f->path, f->mode, f->owner);
		if (err)
			file_err(c, -err, "create directory", f->path);
		break;
	case KILN_FILE_REMOVE:
		err = fs_remove(f->path, arg != 0, where, sizeof(where));
		if (err)
			file_err(c, -err, "remove", where);
		break;
	case KILN_FILE_UNTAR:
		file_untar_start(c, f);
		break;
	case KILN_FILE_FREEZE:
	case KILN_FILE_LIMIT:
	case KILN_FILE_CPU:
	case KILN_FILE_SHARES:
		file_pidns(c, f, arg);
		break;
	case KILN_FILE_CHANGES:
		err = changes_start(&f->changes, &c->out, f->path, excl, where, sizeof(where));
		excl = NULL; /* taken over */
		if (err)
			conn_fail(c, -err, "%s", where);
		break;
	case KILN_FILE_BASE:
		if (f->user)
			conn_fail(c, EINVAL, "BASE takes no user");
		else if ((err = changes_base(f->path, where, sizeof(where))))
			conn_fail(c, -err, "%s", where);
		else
			file_done(c);
		break;
	case KILN_FILE_RENAME:
		if (rename(f->path, to) < 0)
			conn_fail(c, errno, "cannot rename '%s' to '%s': %s", f->path, to,
			          strerror(errno));
		else
			file_done(c);
		break;
	default:
		conn_fail(c, EINVAL, "unknown file operation %u", f->op);
		break;
	}
	if (!err && (f->op == KILN_FILE_MKDIR || f->op == KILN_FILE_REMOVE))
		file_done(c);
out:
	if (entered)
		user_leave(f->user);
	strv_free(excl);
	free(to);
	free(user_name);
}

static void file_frame(struct conn *c, uint16_t type, const uint8_t *buf, uint32_t len)
{
	struct fop *f = c->priv;
	int err;

	if (!f->requested) {
		if (type == KILN_MSG_FILE_REQUEST)
			file_request(c, f, buf, len);
		else
			conn_fail(c, EPROTO, "expected FILE_REQUEST, got type %u", type);
	} else if (f->op == KILN_FILE_WRITE && f->fd >= 0 && type == KILN_MSG_DATA) {
		if (len > KILN_DATA_CHUNK)
			conn_fail(c, EPROTO, "DATA frame of %u bytes (limit KILN_DATA_CHUNK)", len);
		else
			file_write_data(c, f, buf, len);
	} else if (f->op == KILN_FILE_WRITE && f->fd >= 0 && type == KILN_MSG_DONE) {
		if (len) {
			conn_fail(c, EPROTO, "DONE with a payload");
		} else if ((err = user_enter(f->user))) {
			file_err(c, -err, "write", f->path);
		} else {
			file_write_commit(c, f);
			user_leave(f->user);
		}
	} else if (f->op == KILN_FILE_UNTAR && f->untar &&
	           (type == KILN_MSG_DATA || type == KILN_MSG_DONE)) {
		if (len > KILN_DATA_CHUNK || (type == KILN_MSG_DONE && len))
			conn_fail(c, EPROTO, "a %s frame of %u bytes on an UNTAR stream",
			          type == KILN_MSG_DATA ? "DATA" : "DONE", len);
		else
			file_untar_frame(c, f, type, buf, len);
	} else {
		conn_fail(c, EPROTO, "unexpected message type %u on a file stream", type);
	}
}

static void file_pump_read(struct conn *c, struct fop *f)
{
	while (c->state == CONN_OPEN && conn_has_room(c)) {
		ssize_t n = frame_read(&c->out, f->fd, KILN_MSG_DATA, KILN_DATA_CHUNK);

		if (n == 0) {
			file_done(c);
		} else if (n < 0 && errno == ENOMEM) {
			conn_nomem(c);
		} else if (n < 0 && errno != EINTR) {
			file_err(c, errno, "read", f->path);
		}
	}
}

static void file_pump_list(struct conn *c, struct fop *f)
{
	while (c->state == CONN_OPEN && conn_has_room(c)) {
		char link[4096] = "";
		struct dirent *e;
		struct stat st;

		errno = 0;
		e = readdir(f->dir);
		if (!e) {
			if (errno)
				file_err(c, errno, "list", f->path);
			else
				file_done(c);
			return;
		}
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(f->dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* removed since readdir */
			file_err(c, errno, "stat", e->d_name);
			return;
		}
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlinkat(dirfd(f->dir), e->d_name, link, sizeof(link) - 1);
			link[n > 0 ? n : 0] = 0;
		}
		put_stat(c, KILN_MSG_ENTRY, &st, e->d_name, strlen(e->d_name), link);
	}
}

static void file_pump_changes(struct conn *c, struct fop *f)
{
	while (c->state == CONN_OPEN && conn_has_room(c)) {
		int r = changes_step(f->changes, &c->out);

		if (r == 1) {
			file_done(c);
		} else if (r == -ENOMEM) {
			conn_nomem(c);
		} else if (r < 0) {
			conn_fail(c, -r, "%s", changes_why(f->changes));
		}
	}
}

static void file_pump(struct conn *c)
{
	struct fop *f = c->priv;

	if (f && f->op == KILN_FILE_CHANGES && f->changes) {
		file_pump_changes(c, f);
	} else if (f && f->op == KILN_FILE_READ && f->fd >= 0) {
		file_pump_read(c, f);
	} else if (f && f->op == KILN_FILE_LIST && f->dir) {
		int err = user_enter(f->user);

		if (err) {
			file_err(c, -err, "list", f->path);
			return;
		}
		file_pump_list(c, f);
		user_leave(f->user);
	}
}

static void file_destroy(struct conn *c)
{
	struct fop *f = c->priv;

	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	if (f->tmp && !user_enter(f->user)) {
		unlink(f->tmp); /* an unfinished upload leaves the target untouched */
		user_leave(f->user);
	}
	if (f->dir)
		closedir(f->dir);
	untar_free(f->untar);
	changes_free(f->changes);
	free(f->tmp);
	free(f->path);
	free(f->user);
	free(f->owner);
	free(f);
	c->priv = NULL;
}

const struct stream_ops file_ops = {
    .open = file_open,
    .frame = file_frame,
    .pump = file_pump,
    .destroy = file_destroy,
};
