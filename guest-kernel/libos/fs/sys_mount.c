/* SPDX-License-Identifier: MIT */
/*
 * mount(2) and umount2(2) for the one file system a guest program may
 * mount: a procfs of its own on an empty directory, which a pod's app
 * container needs in its root (the agent's UNTAR with KILN_UNTAR_PROC,
 * include/kiln/agent.h). The guest has no other file systems to mount:
 * another type is -ENODEV, a bind, move or remount -EINVAL. Root only, as
 * Linux's CAP_SYS_ADMIN.
 */
#include <linux/fs.h>
#include <linux/mount.h>

#include "proc.h"
#include "syscall.h"
#include "vfs_impl.h"

static long mount_target(long upath, int (*op)(struct inode *))
{
	struct inode *ip;
	int err;

	if (cur_cred()->u.eff != 0)
		return -EPERM;
	err = user_path_inode(AT_FDCWD, (const char *)upath, LOOKUP_FOLLOW, &ip);
	if (err)
		return err;
	err = op(ip);
	inode_put(ip);
	return err;
}

SYSCALL_DEFINE(mount)
{
	char type[8];
	long n;

	if (a3 & (MS_BIND | MS_MOVE | MS_REMOUNT))
		return -EINVAL;
	if (!a2)
		return -ENODEV;
	n = strncpy_from_user(type, (const char *)a2, sizeof(type));
	if (n == -EFAULT)
		return n;
	if (n < 0 || strcmp(type, "proc"))
		return -ENODEV;
	return mount_target(a1, procfs_attach);
}

SYSCALL_DEFINE(umount2)
{
	/* MNT_FORCE, MNT_DETACH, MNT_EXPIRE, UMOUNT_NOFOLLOW: all one here */
	if (a1 & ~0xfL)
		return -EINVAL;
	return mount_target(a0, procfs_detach);
}
