/* SPDX-License-Identifier: MIT */
/* memfd_create: an unnamed tmpfs file (shmem.c), which programs size with
 * ftruncate, map shared and pass to other processes over AF_UNIX sockets. */
#include <linux/memfd.h>

#include "vfs_impl.h"
#include "proc.h"
#include "syscall.h"

#define MFD_NAME_MAX 249 /* Linux's, less the "memfd:" prefix */
/* Newer kernels' executable bit controls (6.3): no file of ours runs
 * anything that a program did not ask for, so both only make it sealable. */
#define MFD_NOEXEC_SEAL 0x0008U
#define MFD_EXEC        0x0010U

SYSCALL_DEFINE(memfd_create)
{
	unsigned int flags = (unsigned int)a1;
	char name[MFD_NAME_MAX + 1];
	struct inode *ip;
	struct file *f;
	long n;
	int fd;

	/* (MFD_HUGETLB: there is no hugetlbfs; Linux says EINVAL then too.) */
	if (flags & ~(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL | MFD_EXEC))
		return -EINVAL;
	n = strncpy_from_user(name, (const char *)a0, sizeof(name));
	if (n < 0)
		return n == -ENAMETOOLONG ? -EINVAL : n;
	ip = vfs_inode_shmem(0, 0777, flags & (MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL));
	if (!ip)
		return -ENOMEM;
	f = file_alloc(ip, &ramfs_file_ops, O_RDWR | O_LARGEFILE, NULL);
	if (!f) {
		inode_put(ip);
		return -ENOMEM;
	}
	fd = fd_alloc(cur_proc()->files, f, 0, flags & MFD_CLOEXEC);
	if (fd < 0)
		file_put(f);
	return fd;
}
