/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "run_dir.h"
#include "sandbox.h"
#include "util.h"

static bool on_tmpfs(const char *path)
{
	struct statfs f;

	return !statfs(path, &f) && (f.f_type == TMPFS_MAGIC || f.f_type == RAMFS_MAGIC);
}

/* Ours alone: a directory (not a link to one) of our uid that nobody else
 * may enter. A name in a shared directory may have been taken by anyone. */
static int check_own(const char *path, char *why, size_t n)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		snprintf(why, n, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(why, n,
		         "%s is not a directory of uid %u that only it may enter (mode 0700): "
		         "someone else made it; remove it or give kilnd another --run-dir",
		         path, (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

/* /run/kilnd-HASH: one per data directory, so that two kilnds never meet. */
static char *default_root(const char *base, const char *data_dir)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	char *p;

	for (const char *s = data_dir; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return asprintf(&p, "%s/kilnd-%016llx", base, (unsigned long long)h) < 0 ? NULL : p;
}

/* Which data directory a default root serves, written in it: a root
 * whose data directory is gone (a test's, a removed one) is swept by the
 * next kilnd, as nobody else would (its VMMs went with their kilnd). */
#define ROOT_OWNER ".data-dir"

static void sweep_abandoned(const char *base, const char *ours)
{
	DIR *d = opendir(base);
	struct dirent *e;
	char path[4200], *owner;
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "kilnd-", 6) || !name_ok(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", base, e->d_name);
		if (!strcmp(path, ours) || lstat(path, &st) || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		snprintf(path, sizeof(path), "%s/%s/" ROOT_OWNER, base, e->d_name);
		owner = read_small_file(path, 4096, NULL);
		if (owner && *owner == '/' && stat(owner, &st) < 0 && errno == ENOENT)
			rm_tree(base, e->d_name);
		free(owner);
	}
	closedir(d);
}

static void claim(const char *root, const char *data_dir)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/" ROOT_OWNER, root);
	f = fopen(path, "we");
	if (!f)
		return;
	fputs(data_dir, f);
	fclose(f);
}

int run_root_init(struct kilnd *kd, const char *dir, char *why, size_t n)
{
	static const char *const bases[] = {"/run", "/dev/shm"};
	char *p;
	int rc;

	kd->run_root = NULL;
	if (dir) {
		rc = mkdir_p(dir, 0700);
		if (rc) {
			snprintf(why, n, "--run-dir %s: %s", dir, strerror(-rc));
			return rc;
		}
		p = realpath(dir, NULL);
		if (!p) {
			snprintf(why, n, "--run-dir %s: %s", dir, strerror(errno));
			return -errno;
		}
		rc = check_own(p, why, n);
		if (rc) {
			free(p);
			return rc;
		}
		kd->run_root = p;
		return 0;
	}
	if (on_tmpfs(kd->sandboxes_dir))
		return 0; /* as cheap where they are */
	for (unsigned i = 0; i < ARRAY_SIZE(bases); i++) {
		if (!on_tmpfs(bases[i]) || access(bases[i], W_OK | X_OK))
			continue;
		p = default_root(bases[i], kd->cfg.data_dir);
		if (!p)
			return -ENOMEM;
		if (mkdir(p, 0700) && errno != EEXIST)
			snprintf(why, n, "%s: %s", p, strerror(errno));
		else if (!check_own(p, why, n)) {
			claim(p, kd->cfg.data_dir);
			sweep_abandoned(bases[i], p);
			kd->run_root = p;
			return 0;
		}
		log_warn("sandboxes' run files not in %s: %s", bases[i], why);
		free(p);
	}
	return 0;
}

int sb_run_paths(struct sandbox *sb, bool legacy)
{
	struct kilnd *kd = sb->kd;
	char *run = NULL, *v = NULL, *c = NULL, *pid = NULL, *api = NULL;
	int r = 0;

	if (legacy)
		run = strdup(sb->dir);
	else if (kd->run_root)
		r = asprintf(&run, "%s/%s", kd->run_root, sb->rec.id);
	else
		r = asprintf(&run, "%s/" SB_RUN_DIR, sb->dir);
	if (r < 0)
		run = NULL;
	if (!run || asprintf(&v, "%s/vsock.sock", run) < 0 ||
	    asprintf(&c, "%s/console.log", run) < 0 || asprintf(&pid, "%s/vmm.pid", run) < 0 ||
	    asprintf(&api, "%s/api.sock", run) < 0) {
		free(run);
		free(v);
		free(c);
		free(pid);
		return -ENOMEM;
	}
	free(sb->run_dir);
	free(sb->vsock_path);
	free(sb->console_path);
	free(sb->pid_path);
	free(sb->api_path);
	sb->run_dir = run;
	sb->vsock_path = v;
	sb->console_path = c;
	sb->pid_path = pid;
	sb->api_path = api;
	return 0;
}

/* dir made 0711 whatever our umask: the VMM's uid connects to kilnd's
 * sockets in it. */
static int make_dir(const char *path)
{
	struct stat st;

	if (mkdir(path, 0711) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return chmod(path, 0711) < 0 ? -errno : 0;
}

int sb_run_make(struct sandbox *sb)
{
	char link[4200], target[4200];
	struct stat st;
	ssize_t len;
	int rc;

	if (snprintf(link, sizeof(link), "%s/" SB_RUN_DIR, sb->dir) >= (int)sizeof(link))
		return -ENAMETOOLONG;
	if (!sb->kd->run_root) {
		/* A link of a kilnd that had a run root goes. */
		if (!lstat(link, &st) && S_ISLNK(st.st_mode))
			unlink(link);
		return make_dir(link);
	}
	rc = make_dir(sb->run_dir);
	if (rc)
		return rc;
	len = readlink(link, target, sizeof(target) - 1);
	if (len >= 0 && (size_t)len == strlen(sb->run_dir) && !memcmp(target, sb->run_dir, len))
		return 0;
	/* Another run root's, or a directory of a kilnd without one. */
	if (len >= 0 || errno == EINVAL)
		rm_tree(sb->dir, SB_RUN_DIR);
	return symlink(sb->run_dir, link) < 0 ? -errno : 0;
}

void run_remove(struct kilnd *kd, const char *id)
{
	if (kd->run_root)
		rm_tree(kd->run_root, id);
}

void run_remove_orphans(struct kilnd *kd)
{
	DIR *d = kd->run_root ? opendir(kd->run_root) : NULL;
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && name_ok(e->d_name) && !sb_find(kd, e->d_name))
			rm_tree(kd->run_root, e->d_name);
	closedir(d);
}
