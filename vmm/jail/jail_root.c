/* SPDX-License-Identifier: MIT */
/*
 * The jailed VMM's root: a tmpfs that holds, at the paths the VMM was
 * given, only its files, bind-mounted in (the kernel, initramfs, image,
 * disk, snapshots and template memory read-only where the VMM only reads
 * them; the directories of its sockets writable; /dev/kvm, /dev/null and
 * /dev/userfaultfd; a /proc of its own pid namespace), then pivot_root()
 * into it. Paths keep their meaning, relative ones too (the working
 * directory is there, empty unless it is one of the writable ones), so
 * nothing the VMM opens later needs rewriting. The tmpfs itself is
 * read-only, nosuid, nodev and noexec.
 *
 * Sources are opened before the tmpfs is mounted and bound from
 * /proc/self/fd, so a tmpfs over a source's path hides nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../vm.h"
#include "jail.h"

#define STAGE     "/tmp" /* where the new root is put together */
#define MAX_BINDS 16

enum kind { RO, RW, RW_OWNED, DEV };

struct bind {
	char path[PATH_MAX]; /* absolute, as the VMM names it */
	enum kind kind;
	int fd; /* O_PATH, the host's file */
	bool dir;
};

struct plan {
	struct bind b[MAX_BINDS];
	int n;
	char cwd[PATH_MAX];
};

static int add(struct plan *p, const char *path, enum kind kind, char *why, size_t len)
{
	struct bind *b;
	struct stat st;

	if (!path)
		return 0;
	if (p->n == MAX_BINDS) {
		snprintf(why, len, "too many files for the jail");
		return -E2BIG;
	}
	b = &p->b[p->n];
	if (!strcmp(path, "."))
		snprintf(b->path, sizeof(b->path), "%s", p->cwd);
	else if (snprintf(b->path, sizeof(b->path), "%s%s%s", path[0] == '/' ? "" : p->cwd,
	                  path[0] == '/' ? "" : "/", path) >= (int)sizeof(b->path)) {
		snprintf(why, len, "'%s': path too long", path);
		return -ENAMETOOLONG;
	}
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->b[i].path, b->path)) {
			if (kind != RO && p->b[i].kind == RO)
				p->b[i].kind = kind;
			return 0;
		}
	b->fd = open(path, O_PATH | O_CLOEXEC);
	if (b->fd < 0 || fstat(b->fd, &st) < 0) {
		snprintf(why, len, "'%s': %s", path, strerror(errno));
		return -errno;
	}
	b->dir = S_ISDIR(st.st_mode);
	b->kind = kind;
	p->n++;
	return 0;
}

/* The directory a socket will be made in: the VMM's (given to its uid)
 * unless --jail-rw names the one it may write. */
static int add_dir_of(struct plan *p, const char *path, enum kind kind, char *why, size_t len)
{
	char dir[PATH_MAX];
	const char *slash;

	if (!path)
		return 0;
	slash = strrchr(path, '/');
	if (!slash)
		return add(p, ".", kind, why, len);
	if (slash == path)
		return add(p, "/", RW, why, len);
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	return add(p, dir, kind, why, len);
}

/* mkdir -p of path's directories inside root (path absolute). */
static int make_parents(const char *root, const char *path, bool last_too)
{
	char buf[PATH_MAX + 16];
	size_t rl = strlen(root);

	if (snprintf(buf, sizeof(buf), "%s%s", root, path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *q = buf + rl + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = 0;
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*q = '/';
	}
	if (last_too && mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* A writable directory of the VMM's, for a VMM that will run as id: its
 * own, unless it is shared (sticky, as /tmp) or the root. */
static int own_dir(const struct bind *b, uint32_t id)
{
	struct stat st;
	int fd = openat(b->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && !(st.st_mode & S_ISVTX) && strcmp(b->path, "/") &&
	    fchown(fd, id, id) < 0)
		err = -errno;
	close(fd);
	return err;
}

static int bind_one(const struct bind *b, char *why, size_t len)
{
	char dst[PATH_MAX + 16], src[64];
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID;
	int fd;

	snprintf(dst, sizeof(dst), STAGE "%s", b->path);
	if (b->dir) {
		if (make_parents(STAGE, b->path, true))
			goto fail;
	} else {
		if (make_parents(STAGE, b->path, false))
			goto fail;
		fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			goto fail;
		close(fd);
	}
	snprintf(src, sizeof(src), "/proc/self/fd/%d", b->fd);
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
		goto fail;
	if (b->kind != DEV)
		flags |= MS_NODEV | MS_NOEXEC;
	if (b->kind == RO || b->kind == DEV)
		flags |= b->kind == RO ? MS_RDONLY : 0;
	if (mount(NULL, dst, NULL, flags, NULL) < 0)
		goto fail;
	return 0;
fail:
	snprintf(why, len, "putting '%s' in the jail: %s", b->path, strerror(errno));
	return -errno;
}

static int plan_files(struct plan *p, const struct vm_config *cfg, char *why, size_t len)
{
	enum kind sockets = cfg->jail.rw_dir ? RW : RW_OWNED;
	int err = 0;

	if (!getcwd(p->cwd, sizeof(p->cwd))) {
		snprintf(why, len, "getcwd: %s", strerror(errno));
		return -errno;
	}
	/* Writable places first: a file or directory in one of them is bound
	 * with it (--jail-rw is kilnd's sandbox directory's vmm-out). */
	err = err ?: add_dir_of(p, cfg->vsock_path, sockets, why, len);
	err = err ?: add_dir_of(p, cfg->api_path, sockets, why, len);
	err = err ?: add(p, cfg->jail.rw_dir, RW_OWNED, why, len);
	if (!err && cfg->restore_path && cfg->restore_mode == RESTORE_TEMPLATE && cfg->mem_fd < 0)
		err = add(p, cfg->template_dir ? cfg->template_dir : "/dev/shm", RW, why, len);
	err = err ?: add(p, cfg->kernel_path, RO, why, len);
	err = err ?: add(p, cfg->initrd_path, RO, why, len);
	err = err ?: add(p, cfg->image_path, RO, why, len);
	err = err ?: add(p, cfg->disk_path, cfg->disk_ro ? RO : RW, why, len);
	err = err ?: add(p, cfg->restore_path, RO, why, len);
	err = err ?: add(p, cfg->parent_path, RO, why, len);
	err = err ?: add(p, "/dev/kvm", DEV, why, len);
	err = err ?: add(p, "/dev/null", DEV, why, len);
	if (!err && access("/dev/userfaultfd", F_OK) == 0)
		err = add(p, "/dev/userfaultfd", DEV, why, len);
	return err;
}

/* Is b inside a directory bound before it (bound with it, then)? */
static bool covered(const struct plan *p, int i)
{
	for (int j = 0; j < i; j++) {
		size_t n = strlen(p->b[j].path);

		if (p->b[j].dir && !strncmp(p->b[i].path, p->b[j].path, n) &&
		    (p->b[i].path[n] == '/' || n == 1))
			return true;
	}
	return false;
}

int jail_root_build(struct vm_config *cfg, uint32_t id, char *why, size_t len)
{
	struct plan p = {.n = 0};
	/* The root's directories must be searchable by the jail's uid
	 * whatever umask the caller has (kilnd's is 077). */
	mode_t mask = umask(022);
	int err = plan_files(&p, cfg, why, len);

	if (err)
		goto out;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("kiln-jail", STAGE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	          "mode=0755,size=1m,nr_inodes=256") < 0) {
		err = -errno;
		snprintf(why, len, "mounting the jail's root: %s", strerror(errno));
		goto out;
	}
	for (int i = 0; i < p.n && !err; i++) {
		if (p.b[i].kind == RW_OWNED && (err = own_dir(&p.b[i], id))) {
			snprintf(why, len, "giving '%s' to uid %u: %s", p.b[i].path, id,
			         strerror(-err));
			break;
		}
		if (!covered(&p, i))
			err = bind_one(&p.b[i], why, len);
	}
	if (!err && (err = make_parents(STAGE, p.cwd, true)))
		snprintf(why, len, "the working directory '%s' in the jail: %s", p.cwd,
		         strerror(-err));
	if (!err && (err = make_parents(STAGE, "/proc", true)))
		snprintf(why, len, "/proc in the jail: %s", strerror(-err));
	if (err)
		goto out;
	if (chdir(STAGE) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
	    mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
	        0 ||
	    chdir(p.cwd) < 0) {
		err = -errno;
		snprintf(why, len, "entering the jail's root: %s", strerror(errno));
	}
out:
	umask(mask);
	for (int i = 0; i < p.n; i++)
		close(p.b[i].fd);
	return err;
}
