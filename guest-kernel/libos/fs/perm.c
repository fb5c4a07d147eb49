/* SPDX-License-Identifier: MIT */
/*
 * Unix permissions between users, as Linux checks them: the owner's bits
 * for the owner, the group's for a member of the file's group, the
 * others' for the rest; root (file-system uid 0) passes every check but
 * running a file that has no x bit (CAP_DAC_OVERRIDE), and may change any
 * file's owner and mode (CAP_CHOWN, CAP_FOWNER). A sticky directory (/tmp)
 * lets only a file's owner, the directory's owner or root remove or
 * replace the file.
 *
 * procfs's inodes are checked too, with the owners it gives them (a
 * process's files are its user's, procfs.c). Anonymous inodes (pipes,
 * sockets, eventfds: reached by name only through /proc/PID/fd) are not
 * checked: their owner is not kept. The VM is the security boundary
 * (cred.h); this is what lets programs that check, and users that err,
 * meet the errors a Linux system gives.
 */
#include "vfs_impl.h"
#include "proc.h"

const struct cred cred_root;

bool cred_in_group(const struct cred *c, uint32_t gid)
{
	if (gid == c->g.fs)
		return true;
	for (uint32_t i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

static bool unchecked(const struct inode *ip)
{
	if (ip->synth)
		return !ip->synth->ops->owned;
	if (S_ISREG(ip->mode) || S_ISDIR(ip->mode))
		return false;
	return !S_ISCHR(ip->mode) || !ip->nlink;
}

static int mode_permission(const struct cred *c, const struct inode *ip, int mask)
{
	uint32_t bits;

	if (c->u.fs == 0) {
		if (!(mask & VFS_MAY_EXEC) || S_ISDIR(ip->mode) || (ip->mode & 0111))
			return 0;
		return -EACCES;
	}
	if (c->u.fs == ip->uid)
		bits = ip->mode >> 6;
	else if (cred_in_group(c, ip->gid))
		bits = ip->mode >> 3;
	else
		bits = ip->mode;
	return (bits & mask & 7) == (uint32_t)(mask & 7) ? 0 : -EACCES;
}

int vfs_permission_as(const struct cred *c, const struct inode *ip, int mask)
{
	int err;

	if (!mask || unchecked(ip))
		return 0;
	err = mode_permission(c, ip, mask);
	if (ip->synth && ip->synth->ops->permission)
		err = ip->synth->ops->permission(ip, mask, err);
	return err;
}

int vfs_permission(const struct inode *ip, int mask)
{
	return vfs_permission_as(cur_cred(), ip, mask);
}

bool vfs_owner_or_root(const struct inode *ip)
{
	const struct cred *c = cur_cred();

	return c->u.fs == 0 || c->u.fs == ip->uid || unchecked(ip);
}

int vfs_may_create(struct inode *dir)
{
	return vfs_permission(dir, VFS_MAY_WRITE | VFS_MAY_EXEC);
}

int vfs_may_delete(struct inode *dir, const struct inode *victim)
{
	const struct cred *c = cur_cred();
	int err = vfs_may_create(dir);

	if (err)
		return err;
	if ((dir->mode & S_ISVTX) && c->u.fs != 0 && c->u.fs != victim->uid &&
	    c->u.fs != dir->uid && !unchecked(dir))
		return -EPERM;
	return 0;
}

void vfs_new_owner(struct inode *ip, const struct inode *dir)
{
	const struct cred *c = cur_cred();

	ip->uid = c->u.fs;
	ip->gid = c->g.fs;
	if (dir && (dir->mode & S_ISGID) && !dir->synth) {
		ip->gid = dir->gid; /* a set-group-ID directory passes its group on */
		if (S_ISDIR(ip->mode))
			ip->mode |= S_ISGID;
	}
}
