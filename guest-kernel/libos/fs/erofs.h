/* SPDX-License-Identifier: MIT */
/*
 * A reader of erofs images held in memory (the virtio-pmem window): the
 * superblock, compact and extended inodes, the uncompressed data layouts
 * (flat, flat with an inline tail, chunk-based), directories and symlinks.
 * Extended attributes are skipped; compressed files are refused.
 *
 * The image is untrusted: every offset, length, nid, block address, name
 * and count is checked against the image before it is used, and a bad one
 * gives -EUCLEAN ("structure needs cleaning", Linux's EFSCORRUPTED) or
 * -EIO, never a read outside [img, img + size). Pure functions over the
 * caller's bytes, no allocation: also built on the host (KILN_HOSTED).
 */
#ifndef KILN_LIBOS_EROFS_H
#define KILN_LIBOS_EROFS_H

#include "klib.h"

#ifndef EUCLEAN
#define EUCLEAN 117
#endif

#define EROFS_NAME_LEN 255
#define EROFS_LINK_MAX 4095 /* longest symlink target we accept (PATH_MAX - 1) */

/* Directory entry types (Linux's FT_*). */
enum {
	EROFS_FT_UNKNOWN,
	EROFS_FT_REG,
	EROFS_FT_DIR,
	EROFS_FT_CHR,
	EROFS_FT_BLK,
	EROFS_FT_FIFO,
	EROFS_FT_SOCK,
	EROFS_FT_LNK,
};

/* Data layouts (i_format bits 1-3). */
enum {
	EROFS_LAYOUT_FLAT_PLAIN = 0,
	EROFS_LAYOUT_COMPRESSED_FULL = 1,
	EROFS_LAYOUT_FLAT_INLINE = 2,
	EROFS_LAYOUT_COMPRESSED_COMPACT = 3,
	EROFS_LAYOUT_CHUNK_BASED = 4,
};

/* A mounted image. */
struct erofs {
	const uint8_t *img;
	uint64_t size; /* bytes that may be read */
	unsigned blkbits;
	uint64_t meta_off; /* byte offset of nid 0 */
	uint64_t root_nid;
	uint64_t inos, blocks;
	int64_t build_time_ns; /* the mtime of compact inodes */
};

/* One inode, decoded and checked. */
struct erofs_inode {
	uint64_t nid;
	uint32_t mode; /* S_IFMT type and permission bits */
	uint32_t nlink, uid, gid, rdev;
	uint64_t size;
	int64_t mtime_ns;
	unsigned layout;
	uint32_t blkaddr;      /* flat layouts: the first data block */
	uint16_t chunk_format; /* chunk-based */
	uint64_t meta_end;     /* image offset just past the inode and its xattrs:
	                        * where an inline tail or chunk table starts */
};

/* Check the superblock of the image img[0, size) and fill fs. 0, or
 * -EINVAL (not erofs: bad magic, too small), -EUCLEAN (inconsistent) or
 * -EOPNOTSUPP (a feature this reader lacks), with *why naming it. */
int erofs_mount(struct erofs *fs, const void *img, uint64_t size, const char **why);

/* Decode inode nid. 0, -EUCLEAN (out of the image, bad type or layout,
 * data beyond the image), -EOPNOTSUPP (compressed). */
int erofs_iget(const struct erofs *fs, uint64_t nid, struct erofs_inode *ip);

/* Where the file's bytes at off (< size) are: *p points at *len contiguous
 * bytes of the image (*len >= 1, never past the end of the file), or *p is
 * NULL for a hole of *len zero bytes. 0 or -EUCLEAN/-EINVAL. */
int erofs_map(const struct erofs *fs, const struct erofs_inode *ip, uint64_t off, const uint8_t **p,
              uint64_t *len);

/* Copy up to n bytes at off into buf; short at end of file. Returns the
 * count or -errno. Any file type (a symlink's bytes are its target). */
long erofs_read(const struct erofs *fs, const struct erofs_inode *ip, void *buf, size_t n,
                uint64_t off);

/* Called for each entry but "." and ".."; nonzero stops the walk and is
 * returned by erofs_readdir. name is not NUL-terminated. */
typedef int (*erofs_filldir)(void *ctx, const char *name, size_t len, uint64_t nid, unsigned type);

/* List directory dir. The whole directory is checked before the first
 * callback, so a corrupt one (-EUCLEAN) reports nothing. cb may be NULL to
 * check only. Names are 1..255 bytes without '/' or NUL. */
int erofs_readdir(const struct erofs *fs, const struct erofs_inode *dir, erofs_filldir cb,
                  void *ctx);

/* Whether directory dir has no entries but "." and "..": 1, 0, or
 * -EUCLEAN/-ENOTDIR. Reads at most one block. */
int erofs_dir_empty(const struct erofs *fs, const struct erofs_inode *dir);

/* Find name in directory dir: its nid, or -ENOENT / -EUCLEAN. */
int erofs_lookup(const struct erofs *fs, const struct erofs_inode *dir, const char *name,
                 size_t len, uint64_t *nid);

/* A symlink's target, NUL-terminated in buf (cap >= EROFS_LINK_MAX + 1
 * always suffices). Returns its length, or -EUCLEAN for an empty target,
 * one longer than EROFS_LINK_MAX or containing a NUL; -EINVAL if ip is not
 * a symlink; -ENAMETOOLONG if cap is too small. */
long erofs_readlink(const struct erofs *fs, const struct erofs_inode *ip, char *buf, size_t cap);

#endif
