/* SPDX-License-Identifier: MIT */
/*
 * The in-memory file system: directories as lists of names in creation
 * order, regular files as radix trees of pages.
 *
 * A directory entry's seq is its getdents position. It only grows, so a
 * reader resuming at "the first entry with seq >= pos" neither repeats nor
 * loops however the directory changed in between.
 *
 * File pages come from pmem_alloc() one at a time as bytes are written, so
 * a file costs what was written to it (plus one index page per 2 MiB);
 * holes read as zeros. Bytes past the end of file in a page are kept zero,
 * so growing a file never uncovers old data. A file from the initramfs
 * reads from the archive until a page is written, then that page is copied.
 */
#include <linux/inotify.h>

#include "vfs_impl.h"
#include "mm.h"
#include "vm.h"

#define NODE_SHIFT 9
#define NODE_SLOTS (1U << NODE_SHIFT)

/* ---------------------------------------------------------------- directories */

static uint32_t name_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (n--) {
		h ^= (unsigned char)*s++;
		h *= 16777619u;
	}
	return h;
}

struct dentry *ramfs_find(struct inode *dir, const char *name, size_t len)
{
	uint32_t h = name_hash(name, len);

	if (dir->synth)
		dir->synth->ops->refresh(dir, name, len);
	for (struct dentry *de = dir->dir.head; de; de = de->next)
		if (de->hash == h && de->namelen == len && !memcmp(de->name, name, len))
			return de;
	return NULL;
}

static void dir_attach(struct inode *dir, struct inode *ip)
{
	ip->nlink++;
	if (S_ISDIR(ip->mode)) {
		struct inode *old = ip->dir.parent;

		inode_get(dir);
		ip->dir.parent = dir;
		dir->dir.nsubdirs++;
		if (old)
			inode_put(old);
	}
	vfs_chg_mark(ip, KILN_CHG_NEW);
	inode_touch(ip, false);
}

/* ip may be freed here: it holds a reference only while in use. */
static void dir_detach(struct inode *dir, struct inode *ip)
{
	ip->nlink--;
	if (S_ISDIR(ip->mode))
		dir->dir.nsubdirs--;
	inode_touch(ip, false);
	inode_get(ip);
	inode_put(ip);
}

int ramfs_link(struct inode *dir, const char *name, size_t len, struct inode *ip)
{
	if (dir->synth)
		return -ENOENT; /* as procfs: its lookups fail for names it lacks */
	if (ip->synth && !ip->synth->ops->movable)
		return -EXDEV;
	return ramfs_add(dir, name, len, ip);
}

int ramfs_add(struct inode *dir, const char *name, size_t len, struct inode *ip)
{
	struct dentry *de;

	if (!dir->nlink)
		return -ENOENT; /* removed directories take no new names */
	de = kmalloc(sizeof(*de) + len + 1);
	if (!de)
		return -ENOMEM;
	memcpy(de->name, name, len);
	de->name[len] = '\0';
	de->namelen = len;
	de->hash = name_hash(name, len);
	de->ip = ip;
	de->seq = dir->dir.next_seq++;
	de->next = NULL;
	de->prev = dir->dir.tail;
	if (de->prev)
		de->prev->next = de;
	else
		dir->dir.head = de;
	dir->dir.tail = de;
	dir->dir.count++;
	dir_attach(dir, ip);
	inode_touch(dir, true);
	vfs_chg_mark(dir, KILN_CHG_ENTRIES);
	return 0;
}

void ramfs_unlink(struct inode *dir, struct dentry *de)
{
	struct inode *ip = de->ip;

	if (de->prev)
		de->prev->next = de->next;
	else
		dir->dir.head = de->next;
	if (de->next)
		de->next->prev = de->prev;
	else
		dir->dir.tail = de->prev;
	dir->dir.count--;
	kfree(de);
	inode_touch(dir, true);
	vfs_chg_mark(dir, KILN_CHG_ENTRIES);
	dir_detach(dir, ip);
}

void ramfs_relink(struct inode *dir, struct dentry *de, struct inode *ip)
{
	struct inode *old = de->ip;

	de->ip = ip;
	dir_attach(dir, ip);
	inode_touch(dir, true);
	vfs_chg_mark(dir, KILN_CHG_ENTRIES);
	dir_detach(dir, old);
}

struct dentry *ramfs_dir_from(struct inode *dir, uint64_t pos)
{
	struct dentry *de;

	if (dir->synth)
		dir->synth->ops->refresh(dir, NULL, 0);
	de = dir->dir.head;
	while (de && de->seq < pos)
		de = de->next;
	return de;
}

struct dentry *ramfs_name_of(struct inode *dir, const struct inode *child)
{
	struct dentry *de = dir->dir.head;

	while (de && de->ip != child)
		de = de->next;
	return de;
}

/* ---------------------------------------------------------------- file pages */

static uint64_t *node(uint64_t pa)
{
	return phys_to_virt(pa);
}

/* The slot that holds page idx's address. Without alloc, NULL when the
 * tree has no place for it; with alloc, the tree grows to make one (NULL:
 * out of memory). idx < 512^RAMFS_MAX_HEIGHT. */
static uint64_t *page_slot(struct ramfs_data *d, uint64_t idx, bool alloc)
{
	uint64_t *slot = &d->root;

	while (idx >> (NODE_SHIFT * d->height)) {
		if (!alloc)
			return NULL;
		if (d->root) {
			uint64_t pa = pmem_alloc_user(true);

			if (!pa)
				return NULL;
			node(pa)[0] = d->root;
			d->root = pa;
		}
		d->height++;
	}
	for (unsigned int level = d->height; level > 0; level--) {
		if (!*slot) {
			if (!alloc || !(*slot = pmem_alloc_user(true)))
				return NULL;
		}
		slot = &node(*slot)[(idx >> (NODE_SHIFT * (level - 1))) & (NODE_SLOTS - 1)];
	}
	return slot;
}

static char *page_of(struct ramfs_data *d, uint64_t idx)
{
	uint64_t *slot = page_slot(d, idx, false);

	return slot && *slot ? phys_to_virt(*slot) : NULL;
}

/* A page of the tree for writing, copied from the initramfs if it was there. */
static char *page_for_write(struct ramfs_data *d, uint64_t idx)
{
	uint64_t *slot = page_slot(d, idx, true), start = idx << PAGE_SHIFT, pa;

	if (!slot)
		return NULL;
	if (*slot)
		return phys_to_virt(*slot);
	pa = pmem_alloc_user(true);
	if (!pa)
		return NULL;
	if (start < d->ext_len)
		memcpy(phys_to_virt(pa), d->ext + start, MIN(PAGE_SIZE, d->ext_len - start));
	*slot = pa;
	d->npages++;
	return phys_to_virt(pa);
}

/* Free the data pages from index first on, under the node in *slot at
 * level (0: a data page) whose first page is base; and the node if that
 * empties it. With keep (the file is mapped shared: programs may still
 * reach the pages), zero them instead. Recursion depth is the tree height,
 * at most 4. */
static void trim(struct ramfs_data *d, uint64_t *slot, unsigned int level, uint64_t base,
                 uint64_t first, bool keep)
{
	uint64_t span = level ? 1ULL << (NODE_SHIFT * (level - 1)) : 0;
	bool empty = true;

	if (!*slot)
		return;
	if (level == 0 && keep) {
		if (base >= first)
			memset(phys_to_virt(*slot), 0, PAGE_SIZE);
		return;
	}
	if (level == 0) {
		if (base >= first) {
			pmem_free(*slot);
			*slot = 0;
			d->npages--;
		}
		return;
	}
	for (unsigned int i = 0; i < NODE_SLOTS; i++) {
		uint64_t *child = &node(*slot)[i];

		if (base + (i + 1) * span > first)
			trim(d, child, level - 1, base + i * span, first, keep);
		empty &= !*child;
	}
	if (empty && !keep) {
		pmem_free(*slot);
		*slot = 0;
	}
}

/* External bytes are image memory (the pmem window or the initramfs), which
 * is mapped to the end of its last page. */
uint64_t vfs_inode_page(struct inode *ip, uint64_t idx)
{
	const struct ramfs_data *d = &ip->reg;
	uint64_t off = idx << PAGE_SHIFT, va;
	size_t valid;

	if (!S_ISREG(ip->mode) || !d->ext || off >= d->ext_len || page_of(&ip->reg, idx))
		return 0;
	va = (uint64_t)(uintptr_t)(d->ext + off);
	if ((va & (PAGE_SIZE - 1)) || va < KILN_VA_DIRECT_MAP || va >= KILN_VA_MMIO)
		return 0;
	valid = MIN(PAGE_SIZE, d->ext_len - off);
	for (size_t i = valid; i < PAGE_SIZE; i++)
		if (d->ext[off + i])
			return 0;
	return va - KILN_VA_DIRECT_MAP;
}

/* ---------------------------------------------------------------- file I/O */

static int read_unowned(const struct ramfs_data *d, const struct iobuf *b, size_t boff,
                        uint64_t pos, size_t n)
{
	size_t ext = pos < d->ext_len ? MIN(n, d->ext_len - pos) : 0;
	int err = ext ? iob_to(b, boff, d->ext + pos, ext) : 0;

	if (!err && n > ext)
		err = iob_zero(b, boff + ext, n - ext);
	return err;
}

long ramfs_read(struct inode *ip, const struct iobuf *b, size_t n, uint64_t off)
{
	struct ramfs_data *d = &ip->reg;
	size_t done = 0;

	if (off >= ip->size)
		return 0;
	n = MIN(n, ip->size - off);
	while (done < n) {
		uint64_t pos = off + done;
		size_t poff = pos & (PAGE_SIZE - 1), chunk = MIN(PAGE_SIZE - poff, n - done);
		char *page = page_of(d, pos >> PAGE_SHIFT);
		int err;

		if (page)
			err = iob_to(b, done, page + poff, chunk);
		else
			err = read_unowned(d, b, done, pos, chunk);
		if (err)
			return done ? (long)done : err;
		done += chunk;
	}
	return done;
}

long vfs_inode_read_batch(struct inode *ip, char *buf, size_t n, uint64_t off, struct host_copy *hc)
{
	struct ramfs_data *d = &ip->reg;
	size_t done = 0;

	if (!S_ISREG(ip->mode))
		return vfs_inode_read(ip, buf, n, off);
	if (off >= ip->size)
		return 0;
	n = MIN(MIN(n, (size_t)VFS_MAX_RW), ip->size - off);
	while (done < n) {
		uint64_t pos = off + done;
		size_t poff = pos & (PAGE_SIZE - 1), chunk = MIN(PAGE_SIZE - poff, n - done);
		size_t ext = pos < d->ext_len ? MIN(chunk, d->ext_len - pos) : 0;
		char *page = page_of(d, pos >> PAGE_SHIFT);

		if (page) {
			memcpy(buf + done, page + poff, chunk);
		} else {
			host_copy_add(hc, buf + done, d->ext + pos, ext);
			memset(buf + done + ext, 0, chunk - ext);
		}
		done += chunk;
	}
	return (long)done;
}

/* The file grows from its size on: the bytes past its end in its last page
 * are zero again (a shared mapping may have written there, as on Linux). */
static void zero_tail(struct inode *ip)
{
	size_t tail = ip->size & (PAGE_SIZE - 1);
	char *page = tail && ip->maps ? page_of(&ip->reg, ip->size >> PAGE_SHIFT) : NULL;

	if (page)
		memset(page + tail, 0, PAGE_SIZE - tail);
}

long ramfs_write(struct inode *ip, const struct iobuf *b, size_t n, uint64_t off)
{
	struct ramfs_data *d = &ip->reg;
	size_t done = 0;
	long err = 0;

	if (off >= RAMFS_MAX_SIZE)
		return -EFBIG;
	n = MIN(n, RAMFS_MAX_SIZE - off);
	if (d->seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) ||
	    ((d->seals & F_SEAL_GROW) && off + n > ip->size))
		return -EPERM;
	if (off > ip->size)
		zero_tail(ip);
	while (done < n) {
		uint64_t pos = off + done;
		size_t poff = pos & (PAGE_SIZE - 1), chunk = MIN(PAGE_SIZE - poff, n - done);
		char *page = page_for_write(d, pos >> PAGE_SHIFT);

		if (!page) {
			err = -ENOSPC; /* what tmpfs says when memory runs out */
			break;
		}
		if (iob_from(page + poff, b, done, chunk)) {
			/* A fault part way: keep the bytes past the end zero. */
			size_t keep = ip->size > pos ? MIN(ip->size - pos, chunk) : 0;

			memset(page + poff + keep, 0, chunk - keep);
			err = -EFAULT;
			break;
		}
		done += chunk;
		ip->size = MAX(ip->size, pos + chunk);
	}
	if (done) {
		inode_touch(ip, true);
		inotify_event(ip, IN_MODIFY, 0, NULL, 0);
	}
	return done ? (long)done : err;
}

int ramfs_truncate(struct inode *ip, uint64_t size)
{
	struct ramfs_data *d = &ip->reg;
	size_t tail = size & (PAGE_SIZE - 1);

	if (size > RAMFS_MAX_SIZE)
		return -EFBIG;
	if ((size < ip->size && (d->seals & F_SEAL_SHRINK)) ||
	    (size > ip->size && (d->seals & F_SEAL_GROW)))
		return -EPERM;
	if (size > ip->size)
		zero_tail(ip);
	/* Mappings lose the pages cut off (a later touch: SIGBUS, as on
	 * Linux). Shared ones still have them zeroed below, in case the
	 * kernel holds one (vm_translate_write) across a sleep. */
	if (size < ip->size && (ip->maps || ip->pmaps))
		vm_object_cut(ip, ALIGN_UP(size, PAGE_SIZE) >> PAGE_SHIFT);
	if (size < ip->size) {
		char *page = tail ? page_of(d, size >> PAGE_SHIFT) : NULL;

		if (page)
			memset(page + tail, 0, PAGE_SIZE - tail);
		trim(d, &d->root, d->height, 0, ALIGN_UP(size, PAGE_SIZE) >> PAGE_SHIFT,
		     ip->maps > 0);
		if (!d->root)
			d->height = 0;
		d->ext_len = MIN(d->ext_len, size);
		if (!d->ext_len)
			d->ext = NULL;
	}
	ip->size = size;
	inode_touch(ip, true);
	inotify_event(ip, IN_MODIFY, 0, NULL, 0);
	return 0;
}

void ramfs_free_data(struct inode *ip)
{
	trim(&ip->reg, &ip->reg.root, ip->reg.height, 0, 0, false);
	ip->reg.height = 0;
}

uint64_t ramfs_page(struct inode *ip, uint64_t idx, bool create)
{
	uint64_t *slot = page_slot(&ip->reg, idx, false);
	char *page;

	if (slot && *slot)
		return *slot;
	if (!create || !(page = page_for_write(&ip->reg, idx)))
		return 0;
	vfs_chg_mark(ip, KILN_CHG_SELF); /* a shared mapping writes it */
	return (uint64_t)(uintptr_t)page - DIRECT_MAP_BASE;
}

void ramfs_trim_unmapped(struct inode *ip)
{
	struct ramfs_data *d = &ip->reg;

	trim(d, &d->root, d->height, 0, ALIGN_UP(ip->size, PAGE_SIZE) >> PAGE_SHIFT, false);
	if (!d->root)
		d->height = 0;
}

/* ---------------------------------------------------------------- open files */

/* relatime: atime moves when it is older than the last change or a day. */
static void file_accessed(struct inode *ip)
{
	int64_t now = vfs_now();

	if (ip->atime <= ip->mtime || ip->atime <= ip->ctime ||
	    now - ip->atime >= 86400LL * 1000000000LL)
		ip->atime = now;
}

static long file_op_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	long r = ramfs_read(f->ip, b, n, *pos);

	if (r > 0) {
		*pos += r;
		file_accessed(f->ip);
	}
	return r;
}

static long file_op_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	long r;

	if (f->flags & O_APPEND)
		*pos = f->ip->size;
	r = ramfs_write(f->ip, b, n, *pos);
	if (r > 0)
		*pos += r;
	return r;
}

static long dir_op_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	return -EISDIR;
}

const struct file_ops ramfs_file_ops = {
    .read = file_op_read,
    .write = file_op_write,
};

const struct file_ops ramfs_dir_ops = {
    .read = dir_op_read,
};
