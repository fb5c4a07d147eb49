/* SPDX-License-Identifier: MIT */
/* Sandbox directories kept for reuse (dir_pool.h). */
#include "dir_pool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail_out.h"
#include "kilnd.h"
#include "run_dir.h"
#include "store.h"
#include "util.h"

#define POOL_DIR "spare"

struct dir_pool {
	char *path; /* DATA_DIR/spare */
	int fd;
	unsigned head, n; /* a ring, oldest first: a directory rests longest */
	char names[DIR_POOL_MAX][SB_ID_LEN + 1];
};

void dir_pool_init(struct kilnd *kd)
{
	struct dir_pool *p = calloc(1, sizeof(*p));
	int rc = rm_tree(kd->cfg.data_dir, POOL_DIR);
	char *path = NULL;

	kd->dir_pool = NULL;
	if (!p || rc || asprintf(&path, "%s/" POOL_DIR, kd->cfg.data_dir) < 0 ||
	    (mkdir(path, 0700) && errno != EEXIST) ||
	    (p->fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		log_warn("sandbox directories are not reused (%s/" POOL_DIR ": %s)",
		         kd->cfg.data_dir, rc ? strerror(-rc) : strerror(errno));
		free(p);
		free(path);
		return;
	}
	p->path = path;
	kd->dir_pool = p;
}

void dir_pool_free(struct kilnd *kd)
{
	if (!kd->dir_pool)
		return;
	close(kd->dir_pool->fd);
	free(kd->dir_pool->path);
	free(kd->dir_pool);
	kd->dir_pool = NULL;
}

/* Is vmm-out in dfd missing (an unjailed VMM's) or an empty directory
 * (not a link)? Made kilnd's again, mode 0700, as a fresh one: its VMM
 * (gone) had it as its own. */
static bool out_dir_reset(int dfd)
{
	int fd = openat(dfd, SB_OUT_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	bool empty = d != NULL;

	if (fd < 0 && errno == ENOENT) /* (a link is ELOOP) */
		return true;
	if (fd >= 0 && !d)
		close(fd);
	while (d && empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	if (empty)
		empty = !fchown(fd, geteuid(), getegid()) && !fchmod(fd, 0700);
	if (d)
		closedir(d);
	return empty;
}

/* Only the run link and an empty vmm-out (or none) in dfd; the link goes. */
static bool only_ours(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	struct stat st;
	bool ok = d != NULL;

	if (fd >= 0 && !d)
		close(fd);
	while (d && ok && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, SB_RUN_DIR))
			ok = !fstatat(dfd, SB_RUN_DIR, &st, AT_SYMLINK_NOFOLLOW) &&
			     S_ISLNK(st.st_mode);
		else
			ok = !strcmp(e->d_name, SB_OUT_DIR);
	}
	if (d)
		closedir(d);
	return ok && out_dir_reset(dfd) && (!unlinkat(dfd, SB_RUN_DIR, 0) || errno == ENOENT);
}

bool dir_pool_put(struct kilnd *kd, const char *id)
{
	struct dir_pool *p = kd->dir_pool;
	int pfd, dfd;
	bool ok;

	if (!p || p->n == DIR_POOL_MAX || strlen(id) > SB_ID_LEN)
		return false;
	pfd = open(kd->sandboxes_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dfd = pfd < 0 ? -1 : openat(pfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	ok = dfd >= 0 && only_ours(dfd) && !fchmod(dfd, 0700) && !renameat(pfd, id, p->fd, id);
	if (dfd >= 0)
		close(dfd);
	if (pfd >= 0)
		close(pfd);
	if (ok) {
		snprintf(p->names[(p->head + p->n) % DIR_POOL_MAX], SB_ID_LEN + 1, "%s", id);
		p->n++;
	}
	return ok;
}

bool dir_pool_take(struct kilnd *kd, const char *path)
{
	struct dir_pool *p = kd->dir_pool;

	while (p && p->n) {
		const char *name = p->names[p->head];
		int dfd = openat(p->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		bool ok = dfd >= 0 && only_ours(dfd);

		if (dfd >= 0)
			close(dfd);
		ok = ok && !renameat(p->fd, name, AT_FDCWD, path);
		if (!ok)
			rm_tree(p->path, name);
		p->head = (p->head + 1) % DIR_POOL_MAX;
		p->n--;
		if (ok)
			return true;
	}
	return false;
}
