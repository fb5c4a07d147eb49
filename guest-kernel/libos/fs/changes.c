/* SPDX-License-Identifier: MIT */
/*
 * What a container changed in its root (include/kiln/rootchg.h): once the
 * agent says its boot writes are done, every change to an inode leaves a
 * bit on it. inode_touch (a new ctime: bytes, mode, owner, links) and
 * utimensat set KILN_CHG_SELF, a new name KILN_CHG_NEW on the inode and
 * KILN_CHG_ENTRIES on its directory, as do a removal and a rename on the
 * directories they change; a page a shared mapping makes for writing sets
 * KILN_CHG_SELF. Filling an image directory (unionfs.c) is no change: it
 * puts the bits back. The agent then walks the tree and asks each name's
 * bits (its walk skips what is pristine) instead of comparing the tree
 * with the image: the cost is what changed plus what programs looked
 * into, not the image's size. A pod container's root, which the agent
 * copies in while tracking, has its bits cleared once copied, its whole
 * tree in one call (KILN_PR_ROOTCHG_CLEAR_TREE): its base, not its change.
 */
#include "pidns.h"
#include "proc.h"
#include "vfs_impl.h"

static bool may(void)
{
	struct proc *p = cur_proc();

	return !p->pidns && p->cred.u.eff == 0;
}

long vfs_rootchg_track(void)
{
	if (!may())
		return -EPERM;
	vfs_chg_on = true;
	return 0;
}

/* The node at upath (a final symlink not followed), for the root of
 * namespace 0 only: 0 and a reference in *ip, or -errno. */
static int node_at(int dirfd, const char *upath, struct inode **ip)
{
	if (!may())
		return -EPERM;
	return user_path_inode(dirfd, upath, LOOKUP_EMPTY, ip);
}

long vfs_rootchg_get(int dirfd, const char *upath)
{
	struct inode *ip;
	long bits;
	int err = node_at(dirfd, upath, &ip);

	if (err)
		return err;
	bits = ip->chg;
	if (unionfs_pristine(ip))
		bits |= KILN_CHG_PRISTINE;
	else if (ip->synth)
		bits |= KILN_CHG_OTHER;
	inode_put(ip);
	return bits;
}

long vfs_rootchg_clear(int dirfd, const char *upath)
{
	struct inode *ip;
	int err = node_at(dirfd, upath, &ip);

	if (err)
		return err;
	if (!ip->synth)
		ip->chg = 0;
	inode_put(ip);
	return 0;
}

/* The tree below top, depth first over its entries: up[k] is the entry
 * to visit next k levels below top. A directory is entered only through
 * its own name (its parent is the one walked: no loop), a synthesized
 * node (procfs, devfs, an image directory not filled) is neither cleared
 * nor entered, and nothing is followed (a symlink is a node like any). */
static long clear_below(struct inode *top, struct dentry **up)
{
	struct inode *dir = top;
	long nodes = 1;
	int depth = 0;

	up[0] = top->dir.head;
	for (;;) {
		struct dentry *de = up[depth];
		struct inode *ip;

		if (!de) {
			if (!depth)
				return nodes;
			dir = dir->dir.parent;
			depth--;
			continue;
		}
		ip = de->ip;
		up[depth] = de->next;
		if (ip->synth)
			continue;
		if (++nodes > KILN_ROOTCHG_TREE_MAX)
			return -E2BIG;
		ip->chg = 0;
		if (!S_ISDIR(ip->mode) || ip->dir.parent != dir || !ip->dir.head)
			continue;
		if (depth + 1 >= KILN_ROOTCHG_TREE_DEPTH)
			return -ELOOP;
		dir = ip;
		up[++depth] = ip->dir.head;
	}
}

long vfs_rootchg_clear_tree(int dirfd, const char *upath)
{
	struct inode *ip;
	struct dentry **up;
	long r = 1;
	int err = node_at(dirfd, upath, &ip);

	if (err)
		return err;
	if (ip->synth) {
		inode_put(ip);
		return 0;
	}
	ip->chg = 0;
	if (S_ISDIR(ip->mode) && ip->dir.head) {
		up = kmalloc(KILN_ROOTCHG_TREE_DEPTH * sizeof(*up));
		r = -ENOMEM;
		if (up) {
			r = clear_below(ip, up);
			kfree(up);
		}
	}
	inode_put(ip);
	return r;
}
