/* SPDX-License-Identifier: MIT */
/*
 * The root file system over an image: the erofs image (read-only, in the
 * pmem window) below, the ramfs above, one tree.
 *
 * A directory of the image becomes a ramfs directory whose entries are
 * filled in the first time it is looked into (inode_ops.refresh, as procfs
 * does); after that it is an ordinary ramfs directory, and programs create,
 * delete and rename in it as anywhere. A deleted image entry stays deleted
 * because the directory was filled once: that is the whiteout. Regular
 * files are ramfs files whose bytes are the image's, read in place and
 * mapped into programs without a copy, until a page is first written, when
 * the ramfs copies it (copy-up). Symlinks are copied; device nodes, FIFOs
 * and sockets of the image are left out (devfs serves /dev).
 *
 * The image is untrusted (erofs.c checks every structure): a corrupt
 * directory is reported once and shows no entries; an entry whose inode is
 * corrupt is left out; a directory that appears a second time (erofs has no
 * directory hard links, so that would be a loop or a shared subtree) is
 * left out too.
 */
#include "vfs_impl.h"
#include "erofs.h"
#include "mm.h"
#include "printk.h"

/* A directory not yet filled from the image. */
struct lower_dir {
	struct inode_synth synth; /* first, see inode_synth */
	uint64_t nid;
	bool count_marked; /* dir.count holds 1 so that rmdir sees "not empty" */
};

static struct {
	struct erofs fs;
	/* nids of the directories met so far (open addressing, 0 free: the
	 * stored value is nid + 1) */
	uint64_t *dirs;
	size_t ndirs, cap;
} un;

static const struct inode_ops lower_ops;

/* ---------------------------------------------------------------- directory nids */

static size_t nid_slot(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
}

/* Note directory nid as met: 1 if new, 0 if met before, -ENOMEM. */
static int dir_first_seen(uint64_t nid)
{
	uint64_t key = nid + 1;
	size_t i;

	if ((un.ndirs + 1) * 2 > un.cap) {
		size_t cap = un.cap ? un.cap * 2 : 256;
		uint64_t *n = kzalloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (size_t j = 0; j < un.cap; j++) {
			if (!un.dirs[j])
				continue;
			for (i = nid_slot(un.dirs[j], cap); n[i]; i = (i + 1) & (cap - 1))
				;
			n[i] = un.dirs[j];
		}
		kfree(un.dirs);
		un.dirs = n;
		un.cap = cap;
	}
	for (i = nid_slot(key, un.cap); un.dirs[i]; i = (i + 1) & (un.cap - 1))
		if (un.dirs[i] == key)
			return 0;
	un.dirs[i] = key;
	un.ndirs++;
	return 1;
}

/* ---------------------------------------------------------------- inodes */

static const char *err_name(int err)
{
	return err == -EUCLEAN      ? "corrupt"
	       : err == -ELOOP      ? "a second name of a directory (a loop?)"
	       : err == -EOPNOTSUPP ? "unsupported (compressed?)"
	       : err == -ENOMEM     ? "out of memory"
	                            : "unreadable";
}

static void set_attrs(struct inode *ip, const struct erofs_inode *ei)
{
	ip->uid = ei->uid;
	ip->gid = ei->gid;
	ip->atime = ip->mtime = ip->ctime = ip->btime = ei->mtime_ns;
}

/* The file's bytes: in place when they are one run of the image (flat
 * files are), else copied into ramfs pages now. */
static int fill_file(struct inode *ip, const struct erofs_inode *ei)
{
	const uint8_t *p;
	uint64_t len;
	char *buf;
	int err;

	if (!ei->size)
		return 0;
	err = erofs_map(&un.fs, ei, 0, &p, &len);
	if (err)
		return err;
	if (p && len == ei->size) {
		ip->reg.ext = p;
		ip->reg.ext_len = ip->size = ei->size;
		return 0;
	}
	buf = kmalloc(PAGE_SIZE);
	if (!buf)
		return -ENOMEM;
	for (uint64_t off = 0; off < ei->size && !err; off += PAGE_SIZE) {
		struct iobuf b = iob_kernel(buf);
		long n = erofs_read(&un.fs, ei, buf, PAGE_SIZE, off);

		if (n < 0)
			err = (int)n;
		else if (ramfs_write(ip, &b, (size_t)n, off) != n)
			err = -ENOMEM;
	}
	kfree(buf);
	return err;
}

static struct inode *make_dir(const struct erofs_inode *ei, int *err)
{
	struct lower_dir *ld = kzalloc(sizeof(*ld));
	struct inode *ip = ld ? inode_alloc(S_IFDIR | (ei->mode & 07777)) : NULL;

	if (!ip) {
		kfree(ld);
		*err = -ENOMEM;
		return NULL;
	}
	ld->synth.ops = &lower_ops;
	ld->nid = ei->nid;
	ip->synth = &ld->synth;
	/* Not filled yet, but rmdir and rename must not take it for empty. */
	ld->count_marked = erofs_dir_empty(&un.fs, ei) != 1;
	ip->dir.count = ld->count_marked;
	return ip;
}

/* A name in the image becomes an inode of ours (NULL: left out). */
static struct inode *make_inode(const struct erofs_inode *ei, int *err)
{
	struct inode *ip = NULL;
	long n;

	*err = 0;
	switch (ei->mode & S_IFMT) {
	case S_IFDIR:
		*err = dir_first_seen(ei->nid);
		if (*err <= 0) {
			if (!*err)
				*err = -ELOOP; /* met before */
			return NULL;
		}
		ip = make_dir(ei, err);
		break;
	case S_IFREG:
		ip = inode_alloc(S_IFREG | (ei->mode & 07777));
		if (ip && (*err = fill_file(ip, ei))) {
			inode_put(ip);
			return NULL;
		}
		break;
	case S_IFLNK:
		ip = inode_alloc(S_IFLNK | 0777);
		if (!ip)
			break;
		n = MIN(ei->size, EROFS_LINK_MAX + 1) + 1; /* readlink refuses too long */
		ip->target = kmalloc((size_t)n);
		n = ip->target ? erofs_readlink(&un.fs, ei, ip->target, (size_t)n) : -ENOMEM;
		if (n < 0) {
			*err = (int)n;
			inode_put(ip);
			return NULL;
		}
		ip->size = (uint64_t)n;
		break;
	default: /* devices, FIFOs, sockets */
		return NULL;
	}
	if (!ip) {
		*err = *err ? *err : -ENOMEM;
		return NULL;
	}
	set_attrs(ip, ei);
	return ip;
}

/* ---------------------------------------------------------------- filling a directory */

struct fill_ctx {
	struct inode *dir;
	uint64_t dir_nid;
	bool had_entries; /* names of ours came first (the root's /dev ...) and win */
	int oom;
	unsigned bad; /* entries left out for damage */
};

#define BAD_REPORTED 3 /* per directory; then only a count */

static int fill_one(void *ctx, const char *name, size_t len, uint64_t nid, unsigned type)
{
	struct fill_ctx *c = ctx;
	struct erofs_inode ei;
	struct inode *ip;
	int err;

	if (c->had_entries && ramfs_find(c->dir, name, len))
		return 0;
	err = erofs_iget(&un.fs, nid, &ei);
	ip = err ? NULL : make_inode(&ei, &err);
	if (!ip) {
		if (err == -ENOMEM)
			return c->oom = -ENOMEM;
		if (err && c->bad++ < BAD_REPORTED)
			kprintf("kiln: image: \"%.*s\" in directory nid %lu is %s (error %d): left "
			        "out\n",
			        (int)len, name, (unsigned long)c->dir_nid, err_name(err), -err);
		return 0;
	}
	err = ramfs_add(c->dir, name, len, ip);
	if (!err)
		set_attrs(ip, &ei); /* the image's times, not the time of adding */
	ip->chg = 0;                /* the image's, no change (changes.c) */
	inode_put(ip);
	return err == -ENOMEM ? (c->oom = err) : 0;
}

static void fill_dir(struct inode *dir, uint64_t nid)
{
	struct fill_ctx c = {.dir = dir, .dir_nid = nid, .had_entries = dir->dir.head != NULL};
	int64_t mtime = dir->mtime, ctime = dir->ctime;
	uint32_t chg = dir->chg;
	struct erofs_inode ei;
	int err = erofs_iget(&un.fs, nid, &ei);

	if (!err)
		err = erofs_readdir(&un.fs, &ei, fill_one, &c);
	dir->mtime = mtime; /* filling is no change */
	dir->ctime = ctime;
	dir->chg = chg;
	if (c.bad > BAD_REPORTED)
		kprintf("kiln: image: %u more entries of directory nid %lu left out\n",
		        c.bad - BAD_REPORTED, (unsigned long)nid);
	if (err)
		kprintf("kiln: image: directory nid %lu is %s (error %d): its entries are left "
		        "out\n",
		        (unsigned long)nid, err_name(err), -err);
}

static void lower_refresh(struct inode *dir, const char *name, size_t len)
{
	struct lower_dir *ld = container_of(dir->synth, struct lower_dir, synth);
	uint64_t nid = ld->nid;

	/* From here on an ordinary ramfs directory: no more refreshes, and
	 * ramfs_add/ramfs_link work in it. */
	if (ld->count_marked)
		dir->dir.count--;
	dir->synth = NULL;
	kfree(ld);
	fill_dir(dir, nid);
}

static int lower_open(struct file *f)
{
	return -EIO; /* only directories are ours, and those open as ramfs's */
}

static void lower_evict(struct inode *ip)
{
	kfree(container_of(ip->synth, struct lower_dir, synth));
	ip->synth = NULL;
}

bool unionfs_pristine(const struct inode *ip)
{
	return ip->synth && ip->synth->ops == &lower_ops;
}

static const struct inode_ops lower_ops = {
    .refresh = lower_refresh,
    .open = lower_open,
    .evict = lower_evict,
    .movable = true,
    .owned = true,
};

/* ---------------------------------------------------------------- mount */

int vfs_mount_image(const void *img, size_t len, const char **err)
{
	struct inode *root = vfs_root();
	struct erofs_inode ei;
	struct lower_dir *ld;
	int r;

	if (!root || root->synth)
		return -EINVAL;
	r = erofs_mount(&un.fs, img, len, err);
	if (r)
		return r;
	r = erofs_iget(&un.fs, un.fs.root_nid, &ei);
	if (!r && (ei.mode & S_IFMT) != S_IFDIR)
		r = -EUCLEAN;
	/* Check the root directory now: an image without a usable one is
	 * better refused at boot than found empty. */
	if (!r)
		r = erofs_readdir(&un.fs, &ei, NULL, NULL);
	if (r) {
		*err = r == -EOPNOTSUPP ? "the root directory uses an unsupported layout"
		                        : "the root directory is corrupt";
		return r;
	}
	ld = kzalloc(sizeof(*ld));
	if (!ld || dir_first_seen(ei.nid) < 0) {
		kfree(ld);
		*err = "out of memory";
		return -ENOMEM;
	}
	ld->synth.ops = &lower_ops;
	ld->nid = ei.nid;
	root->synth = &ld->synth;
	root->mode = S_IFDIR | (ei.mode & 07777);
	set_attrs(root, &ei);
	return 0;
}
