/* SPDX-License-Identifier: MIT */
/*
 * Inside the VFS: what vfs.c (inodes, the root), namei.c (path walk),
 * ramfs.c (directories and file data), devfs.c (devices), file.c (open
 * files, descriptors) and the sys_*.c syscalls share. Not for other
 * subsystems: they use vfs.h.
 */
#ifndef KILN_LIBOS_VFS_IMPL_H
#define KILN_LIBOS_VFS_IMPL_H

#include <linux/fcntl.h>
#include <linux/stat.h>

#include "kiln/rootchg.h"
#include "vfs.h"

/* <linux/stat.h> leaves these to glibc's <sys/stat.h> when glibc is
 * around: in the host builds of the unit tests. */
#ifndef S_IFMT
#define S_IFMT     0170000
#define S_IFSOCK   0140000
#define S_IFLNK    0120000
#define S_IFREG    0100000
#define S_IFBLK    0060000
#define S_IFDIR    0040000
#define S_IFCHR    0020000
#define S_IFIFO    0010000
#define S_ISUID    0004000
#define S_ISGID    0002000
#define S_IXGRP    0000010
#define S_ISLNK(m) (((m)&S_IFMT) == S_IFLNK)
#define S_ISREG(m) (((m)&S_IFMT) == S_IFREG)
#define S_ISDIR(m) (((m)&S_IFMT) == S_IFDIR)
#define S_ISCHR(m) (((m)&S_IFMT) == S_IFCHR)
#endif

/* A 64-bit device number as st_rdev carries it (glibc's makedev). */
#define VFS_MKDEV(ma, mi)                                                \
	((((uint64_t)(mi)) & 0xff) | ((((uint64_t)(ma)) & 0xfff) << 8) | \
	 ((((uint64_t)(mi)) & ~0xffULL) << 12) | ((((uint64_t)(ma)) & ~0xfffULL) << 32))
#define VFS_MAJOR(d) ((uint32_t)((((d) >> 8) & 0xfff) | (((d) >> 32) & ~0xfffULL)))
#define VFS_MINOR(d) ((uint32_t)(((d)&0xff) | (((d) >> 12) & ~0xffULL)))

/* The file system's own device number (st_dev) and largest file. */
#define VFS_DEV          VFS_MKDEV(0, 0x10)
#define RAMFS_MAX_HEIGHT 4
#define RAMFS_MAX_SIZE   (1ULL << (12 + 9 * RAMFS_MAX_HEIGHT)) /* 256 TiB */

/* A name in a directory. */
struct dentry {
	struct dentry *next, *prev; /* in creation order */
	uint64_t seq;               /* getdents position: grows, never reused */
	struct inode *ip;
	uint32_t hash;
	uint16_t namelen;
	char name[];
};

/* A regular file's bytes: pages in a radix tree of page-sized nodes of
 * 512 physical addresses (height 0: root is the only data page), over an
 * optional run of initramfs bytes that pages not in the tree read from. */
struct ramfs_data {
	uint64_t root;
	unsigned int height;
	uint32_t seals;  /* F_SEAL_* (fcntl F_ADD_SEALS) */
	uint64_t npages; /* data pages in the tree */
	const uint8_t *ext;
	uint64_t ext_len;
};

struct inode {
	uint64_t ino;
	uint32_t mode;
	uint32_t nlink; /* names in directories; a directory: 1 while it has one */
	uint32_t uid, gid;
	uint64_t rdev;
	int refs;       /* open files, working directories, walks, subdirectories, mappings */
	uint32_t maps;  /* S_IFREG: shared mappings of its pages (vm.h VMA_SHARED) */
	uint32_t pmaps; /* S_IFREG: private mappings of it (vm.h VMA_FILE) */
	uint32_t chg;   /* KILN_CHG_* since tracking began (changes.c) */
	uint64_t size;
	int64_t atime, mtime, ctime, btime; /* ns since the epoch */
	union {
		struct { /* S_IFDIR */
			struct dentry *head, *tail;
			struct inode *parent; /* a reference; NULL for the root */
			uint64_t next_seq;
			uint32_t nsubdirs, count;
		} dir;
		struct ramfs_data reg;      /* S_IFREG */
		char *target;               /* S_IFLNK: size bytes, NUL-terminated */
		const struct file_ops *dev; /* S_IFCHR: the driver, NULL if none */
	};
	struct inode_synth *synth; /* NULL: an ordinary ramfs inode */
};

/* The hooks of a file system whose contents are made up on demand (procfs).
 * Its directories are ordinary ramfs directories that it keeps up to date;
 * only it adds names there (ramfs_add), and they cannot be removed or
 * renamed by programs. */
struct inode_ops {
	/* Bring dir's entries up to date before a lookup of name, or before a
	 * listing (name NULL). */
	void (*refresh)(struct inode *dir, const char *name, size_t len);
	/* Opening a non-directory (not O_PATH): check f->flags, set f->ops
	 * and f->priv. 0 or -errno (the file is then dropped). */
	int (*open)(struct file *f);
	void (*evict)(struct inode *ip); /* the inode is being freed */
	/* Programs may rename its inodes as ramfs ones (an image directory not
	 * filled yet, unionfs.c); procfs's they may not. */
	bool movable;
	/* Its inodes keep the owners and modes they were given (the image's):
	 * permission checks apply to them (perm.c). */
	bool owned;
	/* Optional: the answer err (0 or -EACCES) of the checks of the mode
	 * bits, for mask, made final (procfs: a process's own fd directory
	 * is open to it whoever owns it). */
	int (*permission)(const struct inode *ip, int mask, int err);
	/* Optional: may the caller read or follow the symbolic link ip? 0 or
	 * -EACCES (procfs: another user's cwd and exe). */
	int (*link_access)(const struct inode *ip);
};

/* What a synthesized inode carries: its file system's hooks, first in that
 * file system's own per-inode data (a pointer, so inodes stay 128 bytes). */
struct inode_synth {
	const struct inode_ops *ops;
};

struct fs_ctx {
	int refs;
	struct inode *cwd, *root;
	uint32_t umask;
};

/* perm.c (vfs.h has vfs_permission) */
struct cred;
int vfs_permission_as(const struct cred *c, const struct inode *ip, int mask);
/* May it change ip's mode, times or group (the owner, or root)? */
bool vfs_owner_or_root(const struct inode *ip);
/* A new name in dir (write and search on it): 0 or -EACCES. */
int vfs_may_create(struct inode *dir);
/* Removing or replacing victim's name in dir: also -EPERM in a sticky
 * directory for a file neither it nor the directory's owner has. */
int vfs_may_delete(struct inode *dir, const struct inode *victim);
/* A new inode's owner: the caller's file-system ids (the group of a
 * set-group-ID directory dir, which a new directory inherits). */
void vfs_new_owner(struct inode *ip, const struct inode *dir);

/* changes.c: what changed in the root since KILN_PR_ROOTCHG_TRACK
 * (include/kiln/rootchg.h). vfs_chg_mark sets bits while tracking. */
extern bool vfs_chg_on;
static inline void vfs_chg_mark(struct inode *ip, uint32_t bits)
{
	if (vfs_chg_on)
		ip->chg |= bits;
}

/* unionfs.c: an image directory not filled yet */
bool unionfs_pristine(const struct inode *ip);

/* vfs.c */
struct inode *vfs_root(void);
struct inode *inode_alloc(uint32_t mode);
int64_t vfs_now(void);
void inode_touch(struct inode *ip, bool mtime); /* ctime, and mtime too */
/* A new inode named name in dir; *out (if out) gets a reference. */
int vfs_create(struct inode *dir, const char *name, size_t len, uint32_t mode, struct inode **out);
int vfs_symlink(struct inode *dir, const char *name, size_t len, const char *target, size_t tlen,
                struct inode **out);
uint32_t inode_nlink(const struct inode *ip);  /* st_nlink */
uint64_t inode_blocks(const struct inode *ip); /* st_blocks */

/* namei.c: walking a path. The path lives in buf (VFS_PATH_MAX bytes,
 * owned by the walk) because following a symlink rewrites it. */
enum { LAST_NORM, LAST_ROOT, LAST_DOT, LAST_DOTDOT };

struct nameidata {
	struct inode *root; /* where "/" leads */
	struct inode *dir;  /* where the walk is (a reference) */
	char *buf;
	size_t pos;       /* the rest to walk: buf + pos */
	const char *last; /* the final component, in buf, lastlen bytes */
	size_t lastlen;
	int last_type;
	bool must_dir; /* the path ended with "/" */
	int nlinks;    /* symlinks followed */
};

/* Start a walk of the path in buf (taken over, even on error) from start,
 * or from root if the path is absolute. Empty paths are the caller's. */
void nd_init(struct nameidata *nd, struct inode *root, struct inode *start, char *buf);
void nd_end(struct nameidata *nd);
/* Walk up to the final component: nd->dir, nd->last, nd->last_type. */
int nd_walk_parent(struct nameidata *nd);
/* The final component's inode (a reference), following nothing. */
int nd_last_inode(struct nameidata *nd, struct inode **out);
/* Replace the final component by the symlink's target; then walk again. */
int nd_follow(struct nameidata *nd, struct inode *link);
/* Walk the whole path: nd_walk_parent, nd_last_inode, following a final
 * symlink if follow or the path ends with "/". */
int nd_lookup(struct nameidata *nd, bool follow, struct inode **out);
/* A walk of a kernel string; buf is allocated here. */
int nd_init_path(struct nameidata *nd, struct inode *root, struct inode *start, const char *path);

/* ramfs.c: directories */
struct dentry *ramfs_find(struct inode *dir, const char *name, size_t len);
/* Enter ip in dir under name (a new name: the caller checked). -ENOENT in a
 * synthesized directory, -EXDEV for a synthesized inode elsewhere. */
int ramfs_link(struct inode *dir, const char *name, size_t len, struct inode *ip);
/* The same without those checks, for the synthesizing file system. */
int ramfs_add(struct inode *dir, const char *name, size_t len, struct inode *ip);
/* Remove the entry; frees the inode if that was its last name and use. */
void ramfs_unlink(struct inode *dir, struct dentry *de);
/* Point an existing entry at another inode (rename over, exchange). */
void ramfs_relink(struct inode *dir, struct dentry *de, struct inode *ip);
struct dentry *ramfs_dir_from(struct inode *dir, uint64_t pos); /* first with seq >= pos */
struct dentry *ramfs_name_of(struct inode *dir, const struct inode *child);
/* ramfs.c: file data */
long ramfs_read(struct inode *ip, const struct iobuf *b, size_t n, uint64_t off);
long ramfs_write(struct inode *ip, const struct iobuf *b, size_t n, uint64_t off);
int ramfs_truncate(struct inode *ip, uint64_t size);
/* The physical page of page idx that the file owns, made (zeroed, or
 * copied from the image) if create; 0 if none, or out of memory. */
uint64_t ramfs_page(struct inode *ip, uint64_t idx, bool create);
/* Free the pages past the end that a truncate kept while the file was
 * mapped shared (the last mapping went). */
void ramfs_trim_unmapped(struct inode *ip);
void ramfs_free_data(struct inode *ip);
extern const struct file_ops ramfs_file_ops, ramfs_dir_ops;

/* inotify.c: report an event to the watches on ip (about the entry name
 * when ip is its directory; name NULL, len 0 about ip itself). A rename's
 * two halves share a cookie from inotify_cookie. IN_DELETE_SELF (the inode
 * lost its last name) also ends the watches on it. */
void inotify_event(struct inode *ip, uint32_t mask, uint32_t cookie, const char *name, size_t len);
uint32_t inotify_cookie(void);

/* procfs.c: "/proc" in the root. */
int procfs_init(struct inode *root);
/* A procfs of its own on dir, an empty directory of no other file system
 * (sys_mount.c); procfs_detach ends one so made (not the boot /proc).
 * 0 or -errno. */
int procfs_attach(struct inode *dir);
int procfs_detach(struct inode *dir);

/* devfs.c */
int devfs_populate(struct inode *dev);
const struct file_ops *devfs_driver(uint64_t rdev); /* NULL if unknown */
extern const struct file_ops devfs_console_ops;
#define DEVFS_CONSOLE VFS_MKDEV(5, 1)

/* namei.c: the program's paths. LOOKUP_EMPTY allows "" for dirfd itself. */
#define LOOKUP_FOLLOW 1
#define LOOKUP_EMPTY  2
int user_path_inode(int dirfd, const char *upath, unsigned int flags, struct inode **out);
/* Start and walk to the final component of a program's path. */
int user_path_parent(struct nameidata *nd, int dirfd, const char *upath);
/* The inode of a descriptor that is a *at() dirfd (a reference). */
int dirfd_inode(int dirfd, struct inode **out);

#endif
