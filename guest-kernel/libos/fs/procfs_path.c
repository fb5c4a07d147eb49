/* SPDX-License-Identifier: MIT */
/*
 * Paths for procfs's symlinks: of a directory (from its parents), of any
 * other inode (searched for in the tree: files do not know their names),
 * of a process's program, and what /proc/<pid>/fd/N shows.
 */
#include "procfs.h"
#include "mm.h"
#include "printk.h"
#include "pidns.h"
#include "proc.h"

/* Put dir's path in front of buf[pos]: the new start, or -errno. */
static int prepend_dir(struct inode *dir, char *buf, int pos)
{
	struct inode *root = vfs_root();

	while (dir != root && dir->dir.parent) {
		struct dentry *de = ramfs_name_of(dir->dir.parent, dir);

		if (!de)
			return -ENOENT;
		if ((int)de->namelen + 1 > pos)
			return -ENAMETOOLONG;
		pos -= de->namelen;
		memcpy(buf + pos, de->name, de->namelen);
		buf[--pos] = '/';
		dir = dir->dir.parent;
	}
	return pos;
}

/* buf[VFS_PATH_MAX] gets the path of name in dir (dir's own if len is 0). */
int pfs_path_in(struct inode *dir, const char *name, size_t len, char *buf)
{
	int pos = VFS_PATH_MAX - 1;

	buf[pos] = '\0';
	if (len) {
		pos -= (int)len;
		memcpy(buf + pos, name, len);
		buf[--pos] = '/';
	}
	pos = prepend_dir(dir, buf, pos);
	if (pos < 0)
		return pos;
	if (!buf[pos])
		buf[--pos] = '/';
	memmove(buf, buf + pos, VFS_PATH_MAX - pos);
	return 0;
}

/* Every name in the tree, depth first, until visit() says stop: then the
 * name, with its directory in *dirp. Nothing may change the tree meanwhile. */
static struct dentry *tree_walk(bool (*visit)(struct dentry *de, void *arg), void *arg,
                                struct inode **dirp)
{
	struct inode *root = vfs_root(), *dir = root;
	struct dentry *de = root->dir.head;

	for (;;) {
		while (de) {
			struct inode *ip = de->ip;

			if (visit(de, arg)) {
				*dirp = dir;
				return de;
			}
			if (S_ISDIR(ip->mode) && ip->dir.head) {
				dir = ip;
				de = ip->dir.head;
			} else {
				de = de->next;
			}
		}
		if (dir == root || !dir->dir.parent)
			return NULL;
		de = ramfs_name_of(dir->dir.parent, dir);
		dir = dir->dir.parent;
		de = de ? de->next : NULL;
	}
}

static bool is_inode(struct dentry *de, void *arg)
{
	return de->ip == arg;
}

/* Directories know their parent; other files are searched for. */
int pfs_inode_path(struct inode *ip, char *buf)
{
	struct inode *dir;
	struct dentry *de;

	if (S_ISDIR(ip->mode))
		return ip->nlink ? pfs_path_in(ip, NULL, 0, buf) : -ENOENT;
	if (!ip->nlink)
		return -ENOENT;
	de = tree_walk(is_inode, ip, &dir);
	return de ? pfs_path_in(dir, de->name, de->namelen, buf) : -ENOENT;
}

static bool count_pages(struct dentry *de, void *arg)
{
	if (S_ISREG(de->ip->mode))
		*(uint64_t *)arg += de->ip->reg.npages;
	return false;
}

uint64_t pfs_ramfs_pages(void)
{
	uint64_t n = 0;
	struct inode *dir;

	tree_walk(count_pages, &n, &dir);
	return n;
}

/*
 * The program as Linux names it: absolute, symlinks resolved. exec keeps
 * the path it was given, which may itself be /proc/self/exe (busybox runs
 * its applets so): resolving that comes back here, and must instead follow
 * the link as exec did (-EBUSY: keep its target). The resolved path
 * replaces p->exe, so that it no longer depends on /proc or the cwd.
 */
int pfs_exe_path(struct proc *p, char *buf, uint64_t *ino)
{
	static bool busy;
	struct inode *root = p->fs ? p->fs->root : vfs_root(), *ip;
	const char *self = "/proc/self/";
	struct nameidata nd;
	char *exe;
	int err;

	*ino = 0;
	if (busy)
		return -EBUSY;
	if (!p->exe)
		return -ENOENT;
	/* "self" was p when it ran exec, whoever asks now */
	if (!strncmp(p->exe, self, strlen(self)))
		ksnprintf(buf, VFS_PATH_MAX, "/proc/%d/%s", pid_to_user(cur_proc(), p->pid),
		          p->exe + strlen(self));
	else
		ksnprintf(buf, VFS_PATH_MAX, "%s", p->exe);
	busy = true;
	err = nd_init_path(&nd, root, p->fs ? p->fs->cwd : root, buf);
	if (!err)
		err = nd_lookup(&nd, true, &ip);
	if (!err) {
		*ino = ip->ino;
		if (nd.last_type == LAST_NORM)
			err = pfs_path_in(nd.dir, nd.last, nd.lastlen, buf);
		else
			err = pfs_inode_path(ip, buf);
		inode_put(ip);
	}
	nd_end(&nd);
	busy = false;
	if (err) { /* gone or renamed: what exec was given */
		ksnprintf(buf, VFS_PATH_MAX, "%s", p->exe);
	} else if (strcmp(buf, p->exe) && (exe = kstrndup(buf, VFS_PATH_MAX))) {
		kfree(p->exe);
		p->exe = exe;
	}
	return 0;
}

/* What /proc/<pid>/fd/N points to. */
void pfs_fd_target(struct file *f, char *buf)
{
	struct inode *ip = file_inode(f);
	uint32_t type = ip->mode & S_IFMT;

	if (type == S_IFIFO)
		ksnprintf(buf, VFS_PATH_MAX, "pipe:[%lu]", (unsigned long)ip->ino);
	else if (type == S_IFSOCK)
		ksnprintf(buf, VFS_PATH_MAX, "socket:[%lu]", (unsigned long)ip->ino);
	else if (f->ops->anon_name)
		ksnprintf(buf, VFS_PATH_MAX, "%s", f->ops->anon_name);
	else if (!pfs_inode_path(ip, buf))
		return;
	else if (type == S_IFCHR && ip->rdev == DEVFS_CONSOLE)
		ksnprintf(buf, VFS_PATH_MAX, "/dev/console");
	else if (type == S_IFREG || type == S_IFDIR) /* unlinked */
		ksnprintf(buf, VFS_PATH_MAX, "/#%lu (deleted)", (unsigned long)ip->ino);
	else
		ksnprintf(buf, VFS_PATH_MAX, "anon_inode:[%lu]", (unsigned long)ip->ino);
}
