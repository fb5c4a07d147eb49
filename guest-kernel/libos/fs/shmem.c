/* SPDX-License-Identifier: MIT */
/*
 * Shared memory: a tmpfs file's pages as the object of shared mappings
 * (vm.h VMA_SHARED), the unnamed files behind MAP_SHARED|MAP_ANONYMOUS
 * and memfd_create, and file seals.
 *
 * A mapping maps the pages the file owns (ramfs.c), so that writes through
 * any mapping, in any process, and write() all land in the same memory.
 * Each mapping holds a reference on the inode (an unlinked file lives on
 * while mapped) and counts in ip->maps: a truncate takes the pages it cuts
 * off out of every mapping (vm_object_cut: a touch is then SIGBUS) but
 * zeroes them instead of freeing them (the kernel may hold one it
 * translated for a copy), and the last mapping to go frees them. Private
 * mappings know their file too (vfs_file_map_ops, counted in ip->pmaps). Bytes of an image file (erofs, the
 * initramfs) that a mapping without PROT_WRITE maps are its image pages,
 * mapped in place as private read-only mappings are.
 */
#include "vfs_impl.h"
#include "mm.h"
#include "vm.h"

bool vfs_inode_shareable(const struct inode *ip)
{
	return S_ISREG(ip->mode) && !ip->synth;
}

static int map_page(void *obj, uint64_t idx, uint32_t prot, bool create, uint64_t *pa,
                    bool *borrowed)
{
	struct inode *ip = obj;

	if (idx >= ALIGN_UP(ip->size, PAGE_SIZE) >> PAGE_SHIFT)
		return -ERANGE;
	*pa = ramfs_page(ip, idx, false);
	if (!*pa && !(prot & PROT_WRITE) && (*pa = vfs_inode_page(ip, idx)))
		*borrowed = true;
	else if (!*pa && create && !(*pa = ramfs_page(ip, idx, true)))
		return -ENOMEM;
	return 0;
}

static void map_get(void *obj)
{
	struct inode *ip = obj;

	inode_get(ip);
	ip->maps++;
}

static void map_put(void *obj)
{
	struct inode *ip = obj;

	if (!--ip->maps)
		ramfs_trim_unmapped(ip);
	inode_put(ip);
}

const struct vm_object_ops vfs_map_ops = {
    .page = map_page,
    .get = map_get,
    .put = map_put,
};

/* A private mapping's page: the file's bytes as read() gives them. */
static int private_copy(void *obj, uint64_t idx, void *dst)
{
	struct inode *ip = obj;
	long got;

	if (idx >= ALIGN_UP(ip->size, PAGE_SIZE) >> PAGE_SHIFT)
		return -ERANGE;
	got = vfs_inode_read(ip, dst, PAGE_SIZE, idx << PAGE_SHIFT);
	if (got < 0)
		return (int)got;
	memset((char *)dst + got, 0, PAGE_SIZE - (size_t)got);
	return 0;
}

static void private_get(void *obj)
{
	struct inode *ip = obj;

	inode_get(ip);
	ip->pmaps++;
}

static void private_put(void *obj)
{
	struct inode *ip = obj;

	ip->pmaps--;
	inode_put(ip);
}

/* Private mappings know their file too (vm.h VMA_FILE), but own their
 * pages: no pages of the file are kept for them. */
const struct vm_object_ops vfs_file_map_ops = {
    .page = map_page,
    .copy = private_copy,
    .get = private_get,
    .put = private_put,
};

/* In ramfs_data.seals: seals may be added (a memfd made with
 * MFD_ALLOW_SEALING). Other files are sealed with F_SEAL_SEAL, as Linux's
 * tmpfs files are. */
#define SEALABLE (1U << 31)

struct inode *vfs_inode_shmem(uint64_t size, uint32_t mode, bool sealable)
{
	struct inode *ip;

	if (size > RAMFS_MAX_SIZE)
		return NULL;
	ip = inode_alloc(S_IFREG | (mode & 07777));
	if (ip) {
		ip->size = size;
		ip->reg.seals = sealable ? SEALABLE : 0;
	}
	return ip;
}

uint32_t vfs_inode_seals(const struct inode *ip)
{
	if (!S_ISREG(ip->mode))
		return 0;
	return ip->reg.seals & SEALABLE ? ip->reg.seals & ~SEALABLE : F_SEAL_SEAL;
}

int vfs_inode_add_seals(struct inode *ip, uint32_t seals)
{
	if (!S_ISREG(ip->mode))
		return -EINVAL;
	if (seals & ~(uint32_t)(F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
	                        F_SEAL_FUTURE_WRITE))
		return -EINVAL;
	if (!(ip->reg.seals & SEALABLE) || (ip->reg.seals & F_SEAL_SEAL))
		return -EPERM;
	if ((seals & F_SEAL_WRITE) && !(ip->reg.seals & F_SEAL_WRITE) && ip->maps)
		return -EBUSY;
	ip->reg.seals |= seals;
	return 0;
}
