/* SPDX-License-Identifier: MIT */
/* brk, mmap and friends. Small anonymous mappings get zeroed pages at once,
 * large ones and reservations (PROT_NONE) on first touch (VMA_LAZY);
 * private file mappings are private copies of the file's bytes, except
 * that in mappings made without PROT_WRITE the pages an image holds
 * (vfs_inode_page) are mapped in place, and copied on a first write after
 * mprotect; they know their file (VMA_FILE), so that their pages past its
 * end are missing (SIGBUS) as on Linux, also after a truncate. Shared mappings map the file's own pages (VMA_SHARED, see
 * shmem.c); MAP_SHARED|MAP_ANONYMOUS memory is an unnamed tmpfs file's. */
#include <linux/fcntl.h>
#include <linux/mman.h>
#include <linux/resource.h>
#include <linux/stat.h>

#include "proc.h"
#include "syscall.h"
#include "uaccess.h"
#include "vfs.h"
#include "vm.h"

#define PROT_MASK (PROT_READ | PROT_WRITE | PROT_EXEC)
#define MAX_MAP   (1UL << 40)
/* Above this, anonymous memory is mapped on first touch: a page fault costs
 * microseconds here, so small mappings (mostly used whole) are cheaper
 * filled at once, while big ones are often reservations used in part.
 * Python's object arenas are 1 MiB: lazily they took 16 faults each. */
#define LAZY_MIN (1UL << 20)

static uint32_t anon_flags(uint64_t len, uint32_t prot, uint32_t flags)
{
	return len > LAZY_MIN || !prot ? flags | VMA_LAZY : flags;
}

/* RLIMIT_AS, as Linux's may_expand_vm: the mappings' total once len
 * bytes at addr are mapped (what of them is mapped already, under a
 * MAP_FIXED, counted once) and freed bytes unmapped stays in the limit. */
static bool as_room(struct aspace *as, uint64_t addr, uint64_t len, uint64_t freed)
{
	uint64_t total = 0, lim = cur_proc()->rlim[RLIMIT_AS].cur;

	if (lim == ~0ULL)
		return true;
	for (struct vma *v = as->vmas; v; v = v->next) {
		uint64_t lo = v->start > addr ? v->start : addr;
		uint64_t hi = v->end < addr + len ? v->end : addr + len;

		total += v->end - v->start;
		if (len && hi > lo)
			total -= hi - lo;
	}
	total = total > freed ? total - freed : 0;
	return total <= lim && len <= lim - total;
}

SYSCALL_DEFINE(brk)
{
	struct aspace *as = cur_proc()->as;
	uint64_t want = (uint64_t)a0, old_end = ALIGN_UP(as->brk, PAGE_SIZE), new_end;

	if (want < as->brk_start || want > as->brk_start + MAX_MAP)
		return (long)as->brk;
	new_end = ALIGN_UP(want, PAGE_SIZE);
	if (new_end > old_end) {
		/* Never grow over another mapping. */
		for (struct vma *v = as->vmas; v; v = v->next)
			if (v->start < new_end && v->end > old_end)
				return (long)as->brk;
		if (!as_room(as, old_end, new_end - old_end, 0))
			return (long)as->brk;
		if (vm_map_anon(as, old_end, new_end - old_end, PROT_READ | PROT_WRITE,
		                anon_flags(new_end - old_end, PROT_READ, VMA_HEAP)))
			return (long)as->brk;
	} else if (new_end < old_end) {
		vm_unmap(as, new_end, old_end - new_end);
	}
	as->brk = want;
	return (long)want;
}

struct file_pages {
	struct inode *ip;
	uint64_t first; /* page index in the file */
	uint64_t end;   /* page index past its end, where the mapping gets none */
	uint32_t prot;
};

/* Code (a shared library's text) comes with the syscall sites other
 * processes rewrote (vm_text.c). */
static uint64_t file_page(void *ctx, uint64_t i)
{
	struct file_pages *fp = ctx;
	uint64_t pa;

	if (fp->first + i >= fp->end)
		return VM_NO_PAGE;
	pa = vfs_inode_page(fp->ip, fp->first + i);
	return pa && (fp->prot & PROT_EXEC) ? vm_text_page(pa) : pa;
}

/* A fresh page for the file's bytes (a writable private mapping). */
static uint64_t no_page(void *ctx, uint64_t i)
{
	struct file_pages *fp = ctx;

	return fp->first + i >= fp->end ? VM_NO_PAGE : 0;
}

/* A shared mapping of tmpfs file ip's pages from byte off. Pages made now
 * only for small mappings: big ones are often used in part. */
static long map_shared(struct aspace *as, uint64_t addr, uint64_t len, uint32_t prot,
                       uint32_t flags, struct inode *ip, uint64_t off)
{
	if ((prot & PROT_WRITE) && (vfs_inode_seals(ip) & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
		return -EPERM;
	return vm_map_shared(as, addr, len, prot, flags, &vfs_map_ops, ip, off / PAGE_SIZE,
	                     len <= LAZY_MIN);
}

static long map_anon_shared(struct aspace *as, uint64_t addr, uint64_t len, uint32_t prot);

/* Map a file's pages: in place where the image has them, else copies of
 * its bytes in fresh pages; shared, the file's own pages. /dev/zero's are
 * anonymous memory, as on Linux (shared: what fork shares). */
static long map_file(struct aspace *as, uint64_t addr, uint64_t len, uint32_t prot, bool shared,
                     int fd, uint64_t off)
{
	struct file *f = fd_get(cur_proc()->files, fd);
	struct file_pages fp;
	struct host_copy hc;
	uint64_t done = 0;
	struct inode *ip;
	long err;

	if (!f)
		return -EBADF;
	if ((f->flags & O_ACCMODE) == O_WRONLY || (f->flags & O_PATH))
		return -EACCES;
	if (shared && (prot & PROT_WRITE) && (f->flags & O_ACCMODE) != O_RDWR)
		return -EACCES;
	if (vfs_file_is_zero(f))
		return shared ? map_anon_shared(as, addr, len, prot)
		              : vm_map_anon(as, addr, len, prot, anon_flags(len, prot, VMA_ANON));
	ip = file_inode(f);
	if (!S_ISREG(vfs_inode_mode(ip)))
		return -ENODEV;
	if (shared && vfs_inode_shareable(ip))
		return map_shared(as, addr, len, prot,
		                  (f->flags & O_ACCMODE) != O_RDWR ? VMA_NOWRITE : 0, ip, off);
	/* A file that the mapping knows (vm_map_file below) has no pages past
	 * its end: none are made. ld.so's first mmap of a library spans all of
	 * its segments, bss included, and so ends past the file's end. */
	fp = (struct file_pages){ip, off / PAGE_SIZE,
	                         vfs_inode_shareable(ip)
	                             ? ALIGN_UP(vfs_inode_size(ip), PAGE_SIZE) / PAGE_SIZE
	                             : UINT64_MAX,
	                         prot};
	/* A writable private mapping of a library is its data segment, which
	 * the loader's relocations write nearly all of: copies now cost less
	 * than a copy-on-write fault per page later. */
	err = vm_map_pages(as, addr, len, prot, VMA_ANON, prot & PROT_WRITE ? no_page : file_page,
	                   &fp);
	if (err)
		return err;
	inode_get(ip);
	host_copy_begin(&hc);
	for (; done < len; done += PAGE_SIZE) {
		uint64_t pa = vm_translate_own(as, addr + done);
		long got;

		if (pa == ~0ULL)
			break; /* past the end of the file (VM_NO_PAGE) */
		if (!pa)
			continue;
		got = vfs_inode_read_batch(ip, phys_to_virt(pa), PAGE_SIZE, off + done, &hc);
		if (got < 0) {
			err = got;
			break;
		}
		if (got < (long)PAGE_SIZE)
			break; /* the rest stays zero, as past EOF in a real mapping */
	}
	host_copy_end(&hc);
	/* It knows its file (vm.h VMA_FILE): no pages past the end. */
	if (!err && vfs_inode_shareable(ip))
		err = vm_map_file(as, addr, &vfs_file_map_ops, ip, off / PAGE_SIZE,
		                  ALIGN_UP(vfs_inode_size(ip), PAGE_SIZE) / PAGE_SIZE);
	inode_put(ip);
	if (err)
		vm_unmap(as, addr, len);
	return err;
}

/* MAP_SHARED|MAP_ANONYMOUS: the pages of a file of its own, which fork
 * shares (the mapping holds the only reference). */
static long map_anon_shared(struct aspace *as, uint64_t addr, uint64_t len, uint32_t prot)
{
	struct inode *ip = vfs_inode_shmem(len, 0600, false);
	long err;

	if (!ip)
		return -ENOMEM;
	err = map_shared(as, addr, len, prot, VMA_ANON, ip, 0);
	inode_put(ip);
	return err;
}

SYSCALL_DEFINE(mmap)
{
	struct aspace *as = cur_proc()->as;
	uint64_t addr = (uint64_t)a0, len = (uint64_t)a1, off = (uint64_t)a5;
	uint32_t prot = (uint32_t)a2;
	int flags = (int)a3, type = flags & MAP_TYPE;
	bool fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
	long err;

	if (!len || len > MAX_MAP || (prot & ~PROT_MASK) || (off & (PAGE_SIZE - 1)))
		return -EINVAL;
	if (type != MAP_PRIVATE && type != MAP_SHARED && type != MAP_SHARED_VALIDATE)
		return -EINVAL;
	len = ALIGN_UP(len, PAGE_SIZE);
	if (fixed) {
		if (addr & (PAGE_SIZE - 1))
			return -EINVAL;
		if (addr < PAGE_SIZE)
			return -EPERM;
		if (!user_range_ok(addr, len))
			return -ENOMEM;
		if (flags & MAP_FIXED_NOREPLACE)
			for (struct vma *v = as->vmas; v; v = v->next)
				if (v->start < addr + len && v->end > addr)
					return -EEXIST;
	} else {
		addr = vm_find_free(as, len);
		if (!addr)
			return -ENOMEM;
	}
	if (!as_room(as, addr, len, 0))
		return -ENOMEM;
	/* With its final protection at once: we fill it through the direct
	 * map, and a later vm_protect would cost a TLB flush. */
	if ((flags & MAP_ANONYMOUS) && type != MAP_PRIVATE)
		err = map_anon_shared(as, addr, len, prot);
	else if (flags & MAP_ANONYMOUS)
		err = vm_map_anon(as, addr, len, prot, anon_flags(len, prot, VMA_ANON));
	else
		err = map_file(as, addr, len, prot, type != MAP_PRIVATE, (int)a4, off);
	return err ? err : (long)addr;
}

SYSCALL_DEFINE(munmap)
{
	if ((uint64_t)a0 & (PAGE_SIZE - 1) || !a1 || !user_range_ok((uint64_t)a0, (uint64_t)a1))
		return -EINVAL;
	return vm_unmap(cur_proc()->as, (uint64_t)a0, (uint64_t)a1);
}

SYSCALL_DEFINE(mprotect)
{
	if ((uint64_t)a0 & (PAGE_SIZE - 1) || ((uint32_t)a2 & ~(uint32_t)PROT_MASK) ||
	    !user_range_ok((uint64_t)a0, (uint64_t)a1))
		return -EINVAL;
	if (!a1)
		return 0;
	return vm_protect(cur_proc()->as, (uint64_t)a0, (uint64_t)a1, (uint32_t)a2);
}

/* MADV_DONTNEED on private anonymous memory must read back as zeroes. */
SYSCALL_DEFINE(madvise)
{
	uint64_t addr = (uint64_t)a0, len = ALIGN_UP((uint64_t)a1, PAGE_SIZE);
	struct aspace *as = cur_proc()->as;

	if (addr & (PAGE_SIZE - 1) || !user_range_ok(addr, len))
		return -EINVAL;
	if ((a2 == MADV_DONTNEED || a2 == MADV_FREE) && len)
		vm_discard(as, addr, len);
	return 0;
}

SYSCALL_DEFINE(mremap)
{
	struct aspace *as = cur_proc()->as;
	uint64_t old = (uint64_t)a0, old_len = ALIGN_UP((uint64_t)a1, PAGE_SIZE);
	uint64_t new_len = ALIGN_UP((uint64_t)a2, PAGE_SIZE), nw;
	struct vma *v = vm_find_vma(as, old);
	long err;

	if ((old & (PAGE_SIZE - 1)) || !new_len || new_len > MAX_MAP || (a3 & ~3L))
		return -EINVAL;
	if (!v || old + old_len > v->end)
		return -EFAULT;
	if (new_len <= old_len) {
		if (new_len < old_len)
			vm_unmap(as, old + new_len, old_len - new_len);
		return (long)old;
	}
	if (!(a3 & MREMAP_MAYMOVE))
		return -ENOMEM;
	nw = vm_find_free(as, new_len);
	if (!nw || !as_room(as, nw, new_len, old_len))
		return -ENOMEM;
	if (v->flags & VMA_SHARED) { /* the pages are the object's: map them anew */
		err = vm_map_shared(as, nw, new_len, v->prot, v->flags, v->ops, v->obj,
		                    v->pgoff + (old - v->start) / PAGE_SIZE, false);
		if (!err)
			vm_unmap(as, old, old_len);
		return err ? err : (long)nw;
	}
	/* The pages move; a lazy mapping's holes stay holes, and so do a
	 * private file mapping's (made with none: the pages it grows by are
	 * read from its file when first touched). */
	if (v->flags & VMA_FILE) {
		uint64_t pgoff = v->pgoff + (old - v->start) / PAGE_SIZE;

		err = vm_map_anon(as, nw, new_len, v->prot | PROT_WRITE,
		                  (v->flags & ~VMA_FILE) | VMA_LAZY);
		if (!err)
			err = vm_map_file(as, nw, v->ops, v->obj, pgoff, pgoff);
	} else {
		err = vm_map_anon(as, nw, new_len, v->prot | PROT_WRITE,
		                  v->flags & VMA_LAZY ? v->flags
		                                      : anon_flags(new_len, v->prot, v->flags));
	}
	if (!err)
		err = vm_move_pages(as, old, nw, old_len);
	if (err) {
		vm_unmap(as, nw, new_len);
		return err;
	}
	if (!(v->prot & PROT_WRITE))
		vm_protect(as, nw, new_len, v->prot);
	vm_unmap(as, old, old_len);
	return (long)nw;
}

SYSCALL_DEFINE(msync)
{
	return 0;
}
SYSCALL_ALIAS(mlock, msync);
SYSCALL_ALIAS(munlock, msync);
SYSCALL_ALIAS(mlockall, msync);
SYSCALL_ALIAS(munlockall, msync);
/* One NUMA node: every memory policy is already satisfied. */
SYSCALL_ALIAS(mbind, msync);
