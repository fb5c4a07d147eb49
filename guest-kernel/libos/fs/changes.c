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
 * copies in while tracking, has its bits cleared node by node
 * (KILN_PR_ROOTCHG_CLEAR) once copied: its base, not its change.
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
