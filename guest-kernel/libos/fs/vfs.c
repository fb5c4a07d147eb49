/* SPDX-License-Identifier: MIT */
/*
 * Inodes and the root file system: allocation and reference counts, the
 * attributes stat reports, the boot-time tree and the initramfs unpacker.
 *
 * An inode lives while it has a name in a directory (nlink) or a user
 * (refs: open files, working directories, walks in progress, and each
 * subdirectory holding its ".."). Directories can only lose their name when
 * empty, so freeing never cascades down a tree, only up through "..".
 */
#include <linux/inotify.h>

#include "vfs_impl.h"
#include "cpio.h"
#include "mm.h"
#include "printk.h"
#include "ktime.h"

#define NSEC_PER_SEC 1000000000LL

static struct {
	struct inode *root;
	uint64_t next_ino;
} vfs = {.next_ino = 1};

struct inode *vfs_root(void)
{
	return vfs.root;
}

bool vfs_chg_on; /* changes.c */

int64_t vfs_now(void)
{
	return (int64_t)time_realtime_ns();
}

struct inode *inode_alloc(uint32_t mode)
{
	struct inode *ip = kzalloc(sizeof(*ip));

	if (!ip)
		return NULL;
	ip->ino = vfs.next_ino++;
	ip->mode = mode;
	ip->refs = 1;
	vfs_new_owner(ip, NULL);
	ip->atime = ip->mtime = ip->ctime = ip->btime = vfs_now();
	if (S_ISDIR(mode))
		ip->dir.next_seq = 2; /* 0 and 1 are "." and ".." */
	return ip;
}

void inode_get(struct inode *ip)
{
	ip->refs++;
}

/* Iterative: a freed directory releases its parent, which may go too. */
void inode_put(struct inode *ip)
{
	while (ip && --ip->refs == 0 && ip->nlink == 0) {
		struct inode *next = NULL;

		if (S_ISDIR(ip->mode))
			next = ip->dir.parent;
		else if (S_ISREG(ip->mode))
			ramfs_free_data(ip);
		else if (S_ISLNK(ip->mode))
			kfree(ip->target);
		if (ip->synth)
			ip->synth->ops->evict(ip);
		kfree(ip);
		ip = next;
	}
}

void inode_touch(struct inode *ip, bool mtime)
{
	vfs_chg_mark(ip, KILN_CHG_SELF);
	ip->ctime = vfs_now();
	if (mtime)
		ip->mtime = ip->ctime;
}

uint32_t inode_nlink(const struct inode *ip)
{
	if (S_ISDIR(ip->mode))
		return ip->nlink ? 2 + ip->dir.nsubdirs : 0;
	return ip->nlink;
}

uint64_t inode_blocks(const struct inode *ip)
{
	uint64_t pages;

	if (!S_ISREG(ip->mode))
		return 0;
	/* Pages copied from the initramfs are counted twice; cap at the size. */
	pages = ip->reg.npages + ALIGN_UP(ip->reg.ext_len, PAGE_SIZE) / PAGE_SIZE;
	return MIN(pages, ALIGN_UP(ip->size, PAGE_SIZE) / PAGE_SIZE) * (PAGE_SIZE / 512);
}

uint32_t vfs_inode_mode(const struct inode *ip)
{
	return ip->mode;
}

void vfs_inode_owner(const struct inode *ip, uint32_t *uid, uint32_t *gid)
{
	*uid = ip->uid;
	*gid = ip->gid;
}

uint64_t vfs_inode_size(const struct inode *ip)
{
	return ip->size;
}

uint64_t vfs_inode_ino(const struct inode *ip)
{
	return ip->ino;
}

long vfs_inode_read(struct inode *ip, void *buf, size_t n, uint64_t off)
{
	struct iobuf b = iob_kernel(buf);

	if (S_ISDIR(ip->mode))
		return -EISDIR;
	if (!S_ISREG(ip->mode))
		return -EINVAL;
	return ramfs_read(ip, &b, MIN(n, (size_t)VFS_MAX_RW), off);
}

const void *vfs_inode_direct(struct inode *ip, size_t *len)
{
	const struct ramfs_data *d = &ip->reg;

	if (!S_ISREG(ip->mode) || d->npages || !d->ext || d->ext_len != ip->size)
		return NULL;
	*len = d->ext_len;
	return d->ext;
}

struct inode *vfs_inode_anon(uint32_t mode)
{
	return inode_alloc(mode);
}

int vfs_create(struct inode *dir, const char *name, size_t len, uint32_t mode, struct inode **out)
{
	struct inode *ip;
	int err;

	if (len > VFS_NAME_MAX)
		return -ENAMETOOLONG;
	ip = inode_alloc(mode);
	if (!ip)
		return -ENOMEM;
	vfs_new_owner(ip, dir);
	err = ramfs_link(dir, name, len, ip);
	if (!err)
		inotify_event(dir, IN_CREATE | (S_ISDIR(mode) ? IN_ISDIR : 0), 0, name, len);
	if (err || !out)
		inode_put(ip);
	else
		*out = ip;
	return err;
}

int vfs_symlink(struct inode *dir, const char *name, size_t len, const char *target, size_t tlen,
                struct inode **out)
{
	struct inode *ip;
	char *t;
	int err;

	if (tlen == 0)
		return -ENOENT;
	if (tlen >= VFS_PATH_MAX)
		return -ENAMETOOLONG;
	t = kstrndup(target, tlen);
	if (!t)
		return -ENOMEM;
	err = vfs_create(dir, name, len, S_IFLNK | 0777, &ip);
	if (err) {
		kfree(t);
		return err;
	}
	ip->target = t;
	ip->size = tlen;
	if (out)
		*out = ip;
	else
		inode_put(ip);
	return 0;
}

int vfs_init(void)
{
	struct inode *root, *dev;
	int err;

	if (vfs.root)
		return 0;
	root = inode_alloc(S_IFDIR | 0755);
	if (!root)
		return -ENOMEM;
	root->nlink = 1; /* named by the boot, forever */
	vfs.root = root;
	err = vfs_create(root, "dev", 3, S_IFDIR | 0755, &dev);
	if (err)
		return err;
	err = devfs_populate(dev);
	inode_put(dev);
	if (!err)
		err = vfs_create(root, "tmp", 3, S_IFDIR | 01777, NULL);
#ifndef KILN_HOSTED /* procfs needs the process table: not in the unit tests */
	if (!err)
		err = procfs_init(root);
#endif
	return err;
}

/* ---------------------------------------------------------------- initramfs */

/* Inodes the unpacker holds on to: members of a hard-link group (newc
 * gives the data only with the group's last member, so the earlier ones
 * must share its inode), and directories, whose mtime is set at the end
 * because adding to a directory changes it. */
struct held {
	struct inode *ip; /* a reference */
	bool dir;
	uint32_t ino, major, minor, mtime;
};

struct unpack {
	struct held *held;
	size_t n, cap;
};

static struct inode *hardlink_find(struct unpack *u, const struct cpio_entry *e)
{
	for (size_t i = 0; i < u->n; i++) {
		struct held *h = &u->held[i];

		if (!h->dir && h->ino == e->ino && h->major == e->devmajor &&
		    h->minor == e->devminor)
			return h->ip;
	}
	return NULL;
}

static int hold(struct unpack *u, const struct cpio_entry *e, struct inode *ip)
{
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 16;
		struct held *n = kmalloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		if (u->n)
			memcpy(n, u->held, u->n * sizeof(*n));
		kfree(u->held);
		u->held = n;
		u->cap = cap;
	}
	inode_get(ip);
	u->held[u->n++] =
	    (struct held){ip, S_ISDIR(ip->mode), e->ino, e->devmajor, e->devminor, e->mtime};
	return 0;
}

static void unpack_done(struct unpack *u)
{
	for (size_t i = 0; i < u->n; i++) {
		struct held *h = &u->held[i];

		if (h->dir)
			h->ip->atime = h->ip->mtime = (int64_t)h->mtime * NSEC_PER_SEC;
		inode_put(h->ip);
	}
	kfree(u->held);
}

static void set_attrs(struct inode *ip, const struct cpio_entry *e)
{
	ip->uid = e->uid;
	ip->gid = e->gid;
	ip->atime = ip->mtime = (int64_t)e->mtime * NSEC_PER_SEC;
	if (S_ISREG(ip->mode) && e->size) {
		ip->reg.ext = e->data;
		ip->reg.ext_len = ip->size = e->size;
	}
}

static int create_member(struct nameidata *nd, const struct cpio_entry *e, struct inode **out)
{
	uint32_t type = e->mode & S_IFMT, perm = e->mode & 07777;
	int err;

	switch (type) {
	case S_IFLNK:
		return vfs_symlink(nd->dir, nd->last, nd->lastlen, e->data,
		                   strnlen(e->data, e->size), out);
	case S_IFDIR:
	case S_IFREG:
	case S_IFCHR:
		err = vfs_create(nd->dir, nd->last, nd->lastlen, type | perm, out);
		if (!err && type == S_IFCHR) {
			(*out)->rdev = VFS_MKDEV(e->rdevmajor, e->rdevminor);
			(*out)->dev = devfs_driver((*out)->rdev);
		}
		return err;
	default: /* block devices, FIFOs, sockets: nothing here serves them */
		*out = NULL;
		return 0;
	}
}

/* Add one member at nd's final component, replacing what is there. */
static int unpack_at(struct unpack *u, struct nameidata *nd, const struct cpio_entry *e)
{
	bool linked = S_ISREG(e->mode) && e->nlink > 1;
	struct inode *prev = linked ? hardlink_find(u, e) : NULL, *ip;
	struct dentry *de;
	int err;

	if (nd->last_type != LAST_NORM)
		return 0;
	de = ramfs_find(nd->dir, nd->last, nd->lastlen);
	if (de && S_ISDIR(de->ip->mode) && S_ISDIR(e->mode)) {
		de->ip->mode = e->mode;
		set_attrs(de->ip, e);
		return hold(u, e, de->ip);
	}
	if (de && prev && de->ip == prev) {
		set_attrs(prev, e);
		return 0;
	}
	if (de && S_ISDIR(de->ip->mode) && de->ip->dir.count)
		return -ENOTEMPTY;
	if (de)
		ramfs_unlink(nd->dir, de);
	if (prev) {
		err = ramfs_link(nd->dir, nd->last, nd->lastlen, prev);
		if (!err)
			set_attrs(prev, e);
		return err;
	}
	err = create_member(nd, e, &ip);
	if (err || !ip)
		return err;
	set_attrs(ip, e);
	if (linked || S_ISDIR(ip->mode))
		err = hold(u, e, ip);
	inode_put(ip);
	return err;
}

/* Walk name (a cpio_name_ok path less any trailing "/") to its parent. */
static int walk_member(const char *name, size_t len, struct nameidata *nd)
{
	char *buf = kmalloc(VFS_PATH_MAX);

	if (buf) {
		memcpy(buf, name, len);
		buf[len] = '\0';
	}
	nd_init(nd, vfs.root, vfs.root, buf);
	return buf ? nd_walk_parent(nd) : -ENOMEM;
}

/* Archives made from a list of files need not list every directory. */
static int make_parents(const char *name, size_t len)
{
	for (size_t i = 1; i < len; i++) {
		struct nameidata nd;
		int err;

		if (name[i] != '/')
			continue;
		err = walk_member(name, i, &nd);
		if (!err && nd.last_type == LAST_NORM && !ramfs_find(nd.dir, nd.last, nd.lastlen))
			err = vfs_create(nd.dir, nd.last, nd.lastlen, S_IFDIR | 0755, NULL);
		nd_end(&nd);
		if (err)
			return err;
	}
	return 0;
}

static int unpack_member(void *ctx, const struct cpio_entry *e)
{
	size_t len = e->namelen;
	struct nameidata nd;
	int err;

	if (e->name[len - 1] == '/')
		len--;
	if (len == 1 && e->name[0] == '.')
		return 0; /* the root itself */
	err = walk_member(e->name, len, &nd);
	if (err == -ENOENT) {
		nd_end(&nd);
		err = make_parents(e->name, len);
		if (!err)
			err = walk_member(e->name, len, &nd);
	}
	if (!err)
		err = unpack_at(ctx, &nd, e);
	nd_end(&nd);
	if (err == -ENOMEM)
		return err;
	if (err) /* as Linux: a member that does not fit is left out */
		kprintf("initramfs: %s: not added (error %d)\n", e->name, -err);
	return 0;
}

static int check_member(void *ctx, const struct cpio_entry *e)
{
	return cpio_name_ok(e->name, e->namelen) ? 0 : 1;
}

int vfs_unpack_initramfs(const void *buf, size_t len, const void *index, size_t index_len,
                         const char **err)
{
	struct unpack u = {0};
	const char *msg = NULL;
	int r;

	if (!vfs.root)
		return -EINVAL;
	/* Check every name first so that a bad archive changes nothing. The
	 * VMM gives an index only when all names are good (kiln/boot.h). */
	r = index_len ? 0 : cpio_parse(buf, len, check_member, NULL, &msg, NULL);
	if (r == 1) {
		msg = "bad member name";
		r = -EINVAL;
	}
	if (!r) {
		r = index_len ? cpio_parse_index(buf, len, index, index_len, unpack_member, &u,
		                                 &msg, NULL)
		              : cpio_parse(buf, len, unpack_member, &u, &msg, NULL);
		if (r == -ENOMEM)
			msg = "out of memory";
	}
	unpack_done(&u);
	if (err)
		*err = msg;
	return r;
}
