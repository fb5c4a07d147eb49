/* SPDX-License-Identifier: MIT */
/*
 * erofs on-disk format, read-only (see erofs.h). Facts from Linux's
 * Documentation/filesystems/erofs.rst and fs/erofs/erofs_fs.h:
 *  - the superblock is at byte 1024; all fields are little-endian;
 *  - inode nid lives at meta_blkaddr * block_size + nid * 32, 32 bytes
 *    (compact) or 64 (extended), followed by its inline xattrs and then,
 *    for FLAT_INLINE, the file's tail, which must not cross a block;
 *  - a directory is blocks of 12-byte dirents {le64 nid, le16 nameoff,
 *    u8 file_type, u8 reserved} followed by the names they point at; the
 *    first nameoff / 12 is the count; the last name ends at the block's
 *    end or at a NUL.
 */
#include "erofs.h"

#define SB_OFFSET        1024
#define SB_MAGIC         0xE0F5E1E2u
#define SB_SIZE          128
#define COMPAT_SB_CHKSUM 0x1u
/* Incompatible features: compression-only ones are harmless here because
 * compressed inodes are refused one by one; extra devices are refused at
 * mount. Anything unknown is refused. */
#define INCOMPAT_KNOWN     0x7fu
#define INODE_COMPACT      32
#define INODE_EXTENDED     64
#define I_VERSION_BIT      0x1u
#define I_LAYOUT_SHIFT     1
#define I_LAYOUT_MASK      0x7u
#define I_ALL              0xfu
#define DIRENT_SIZE        12
#define CHUNK_BLKBITS_MASK 0x1fu
#define CHUNK_INDEXES      0x20u
#define CHUNK_ALL          0x3fu
#define NULL_ADDR          0xffffffffu
#define NSEC_PER_SEC       1000000000LL

/* st_mode types, spelled out so that the host and the guest agree. */
#define M_IFMT   0170000u
#define M_IFSOCK 0140000u
#define M_IFLNK  0120000u
#define M_IFREG  0100000u
#define M_IFBLK  0060000u
#define M_IFDIR  0040000u
#define M_IFCHR  0020000u
#define M_IFIFO  0010000u

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Is [off, off + len) inside the image? Overflow-safe. */
static bool in_image(const struct erofs *fs, uint64_t off, uint64_t len)
{
	return off <= fs->size && len <= fs->size - off;
}

/* crc32c (Castagnoli, reflected), without the final inversion, as Linux's
 * crc32c() that erofs uses for the superblock checksum. Bitwise: it runs
 * once per mount over less than a block. */
static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return crc;
}

static bool sb_checksum_ok(const struct erofs *fs)
{
	const uint8_t *sb = fs->img + SB_OFFSET;
	size_t len = ((size_t)1 << fs->blkbits) - SB_OFFSET;
	static const uint8_t zero[4];
	uint32_t crc;

	/* The checksum covers the rest of the superblock's block with the
	 * checksum field itself read as zero. */
	crc = crc32c(~0u, sb, 4);
	crc = crc32c(crc, zero, 4);
	crc = crc32c(crc, sb + 8, len - 8);
	return crc == le32(sb + 4);
}

int erofs_mount(struct erofs *fs, const void *img, uint64_t size, const char **why)
{
	const uint8_t *sb;
	uint32_t incompat, meta_blkaddr;
	unsigned extslots;

	memset(fs, 0, sizeof(*fs));
	fs->img = img;
	fs->size = size;
	if (size < SB_OFFSET + SB_SIZE) {
		*why = "image too small for an erofs superblock";
		return -EINVAL;
	}
	sb = fs->img + SB_OFFSET;
	if (le32(sb) != SB_MAGIC) {
		*why = "not an erofs image (bad magic)";
		return -EINVAL;
	}
	fs->blkbits = sb[12];
	if (fs->blkbits < 9 || fs->blkbits > 12) {
		*why = "unsupported erofs block size";
		return -EOPNOTSUPP;
	}
	extslots = sb[13];
	if (!in_image(fs, SB_OFFSET, SB_SIZE + 16 * extslots) ||
	    (fs->blkbits > 10 && !in_image(fs, 0, 1u << fs->blkbits))) {
		*why = "image too small for its superblock";
		return -EUCLEAN;
	}
	/* The checksum covers the superblock's block: only when that is
	 * larger than the 1024 bytes before the superblock. */
	if ((le32(sb + 8) & COMPAT_SB_CHKSUM) && fs->blkbits > 10 && !sb_checksum_ok(fs)) {
		*why = "erofs superblock checksum mismatch";
		return -EUCLEAN;
	}
	incompat = le32(sb + 80);
	if (incompat & ~INCOMPAT_KNOWN) {
		*why = "erofs image uses features this kernel does not know";
		return -EOPNOTSUPP;
	}
	if (le16(sb + 86)) {
		*why = "multi-device erofs images are not supported";
		return -EOPNOTSUPP;
	}
	fs->root_nid = le16(sb + 14);
	fs->inos = le64(sb + 16);
	fs->build_time_ns =
	    (int64_t)MIN(le64(sb + 24), (uint64_t)INT64_MAX / NSEC_PER_SEC - 1) * NSEC_PER_SEC +
	    le32(sb + 32) % NSEC_PER_SEC;
	fs->blocks = le32(sb + 36);
	meta_blkaddr = le32(sb + 40);
	fs->meta_off = (uint64_t)meta_blkaddr << fs->blkbits;
	if (fs->meta_off >= size) {
		*why = "erofs metadata area lies beyond the end of the image";
		return -EUCLEAN;
	}
	return 0;
}

static bool mode_ok(uint32_t mode)
{
	switch (mode & M_IFMT) {
	case M_IFREG:
	case M_IFDIR:
	case M_IFLNK:
	case M_IFCHR:
	case M_IFBLK:
	case M_IFIFO:
	case M_IFSOCK:
		return true;
	default:
		return false;
	}
}

/* Where the data of a flat file lives, and that it is all in the image. */
static int check_flat(const struct erofs *fs, const struct erofs_inode *ip)
{
	uint64_t bsz = 1ULL << fs->blkbits, nblocks, plain, tail;

	if (!ip->size)
		return 0;
	nblocks = (ip->size + bsz - 1) >> fs->blkbits;
	plain = ip->layout == EROFS_LAYOUT_FLAT_INLINE ? nblocks - 1 : nblocks;
	/* Plain blocks: whole blocks (the last one may be read to its end by
	 * a page mapping); the image must hold them. */
	if (plain && !in_image(fs, (uint64_t)ip->blkaddr << fs->blkbits, plain << fs->blkbits))
		return -EUCLEAN;
	if (ip->layout != EROFS_LAYOUT_FLAT_INLINE)
		return 0;
	tail = ip->size - (plain << fs->blkbits);
	/* The tail sits right after the inode, in the inode's block. */
	if (!in_image(fs, ip->meta_end, tail) || (ip->meta_end & (bsz - 1)) + tail > bsz)
		return -EUCLEAN;
	return 0;
}

static unsigned chunk_bits(const struct erofs *fs, const struct erofs_inode *ip)
{
	return fs->blkbits + (ip->chunk_format & CHUNK_BLKBITS_MASK);
}

static uint64_t chunk_table(const struct erofs_inode *ip, unsigned *entsize)
{
	if (ip->chunk_format & CHUNK_INDEXES) {
		*entsize = 8;
		return ALIGN_UP(ip->meta_end, 8);
	}
	*entsize = 4;
	return ip->meta_end;
}

static int check_chunked(const struct erofs *fs, const struct erofs_inode *ip)
{
	unsigned bits = chunk_bits(fs, ip), entsize;
	uint64_t table = chunk_table(ip, &entsize), n;

	if (ip->chunk_format & ~CHUNK_ALL || bits > 40)
		return -EUCLEAN;
	n = ip->size ? ((ip->size - 1) >> bits) + 1 : 0;
	/* n < 2^52 here, so n * 8 cannot overflow. */
	return in_image(fs, table, n * entsize) ? 0 : -EUCLEAN;
}

int erofs_iget(const struct erofs *fs, uint64_t nid, struct erofs_inode *ip)
{
	uint64_t off;
	const uint8_t *p;
	uint16_t format, icount;
	unsigned isize, xsize;

	memset(ip, 0, sizeof(*ip));
	if (nid > (fs->size - fs->meta_off) / 32)
		return -EUCLEAN;
	off = fs->meta_off + nid * 32;
	if (!in_image(fs, off, INODE_COMPACT))
		return -EUCLEAN;
	p = fs->img + off;
	format = le16(p);
	if (format & ~I_ALL)
		return -EOPNOTSUPP;
	isize = (format & I_VERSION_BIT) ? INODE_EXTENDED : INODE_COMPACT;
	icount = le16(p + 2);
	xsize = icount ? 12 + 4 * (unsigned)(icount - 1) : 0;
	if (!in_image(fs, off, (uint64_t)isize + xsize))
		return -EUCLEAN;
	ip->nid = nid;
	ip->layout = (format >> I_LAYOUT_SHIFT) & I_LAYOUT_MASK;
	ip->mode = le16(p + 4);
	ip->meta_end = off + isize + xsize;
	if (isize == INODE_EXTENDED) {
		uint64_t sec = le64(p + 32);
		uint32_t nsec = le32(p + 40);

		ip->size = le64(p + 8);
		ip->uid = le32(p + 24);
		ip->gid = le32(p + 28);
		ip->nlink = le32(p + 44);
		if (nsec >= NSEC_PER_SEC)
			return -EUCLEAN;
		ip->mtime_ns =
		    (int64_t)MIN(sec, (uint64_t)INT64_MAX / NSEC_PER_SEC - 1) * NSEC_PER_SEC + nsec;
	} else {
		ip->size = le32(p + 8);
		ip->nlink = le16(p + 6);
		ip->uid = le16(p + 24);
		ip->gid = le16(p + 26);
		ip->mtime_ns = fs->build_time_ns;
	}
	/* The union of the inode: a block address, a device number or the
	 * chunk format. */
	ip->blkaddr = le32(p + 16);
	ip->rdev = ip->blkaddr;
	ip->chunk_format = le16(p + 16);
	if (!mode_ok(ip->mode))
		return -EUCLEAN;
	if ((ip->mode & M_IFMT) == M_IFCHR || (ip->mode & M_IFMT) == M_IFBLK ||
	    (ip->mode & M_IFMT) == M_IFIFO || (ip->mode & M_IFMT) == M_IFSOCK) {
		ip->size = 0; /* no data to check or read */
		return 0;
	}
	ip->rdev = 0;
	/* Nothing in the image is larger than the image (a hole-filled chunked
	 * file could be, but 2^44 bytes is plenty). */
	if (ip->size > (1ULL << 44))
		return -EUCLEAN;
	switch (ip->layout) {
	case EROFS_LAYOUT_FLAT_PLAIN:
	case EROFS_LAYOUT_FLAT_INLINE:
		return check_flat(fs, ip);
	case EROFS_LAYOUT_CHUNK_BASED:
		return check_chunked(fs, ip);
	case EROFS_LAYOUT_COMPRESSED_FULL:
	case EROFS_LAYOUT_COMPRESSED_COMPACT:
		return -EOPNOTSUPP;
	default:
		return -EUCLEAN;
	}
}

static int map_chunked(const struct erofs *fs, const struct erofs_inode *ip, uint64_t off,
                       const uint8_t **p, uint64_t *len)
{
	unsigned bits = chunk_bits(fs, ip), entsize;
	uint64_t table = chunk_table(ip, &entsize), idx = off >> bits;
	uint64_t in_chunk = off & ((1ULL << bits) - 1), pos;
	const uint8_t *e = fs->img + table + idx * entsize; /* checked by iget */
	uint32_t blk;

	*len = MIN((1ULL << bits) - in_chunk, ip->size - off);
	if (entsize == 8) {
		if (le16(e + 2)) /* on another device */
			return -EUCLEAN;
		blk = le32(e + 4);
	} else {
		blk = le32(e);
	}
	if (blk == NULL_ADDR) {
		*p = NULL;
		return 0;
	}
	pos = ((uint64_t)blk << fs->blkbits) + in_chunk;
	if (!in_image(fs, pos, *len))
		return -EUCLEAN;
	*p = fs->img + pos;
	return 0;
}

int erofs_map(const struct erofs *fs, const struct erofs_inode *ip, uint64_t off, const uint8_t **p,
              uint64_t *len)
{
	uint64_t bsz = 1ULL << fs->blkbits, plain_end;

	if (off >= ip->size)
		return -EINVAL;
	switch (ip->layout) {
	case EROFS_LAYOUT_FLAT_PLAIN:
		*p = fs->img + ((uint64_t)ip->blkaddr << fs->blkbits) + off;
		*len = ip->size - off;
		return 0;
	case EROFS_LAYOUT_FLAT_INLINE:
		plain_end = ((ip->size - 1) >> fs->blkbits) << fs->blkbits;
		if (off < plain_end) {
			*p = fs->img + ((uint64_t)ip->blkaddr << fs->blkbits) + off;
			*len = plain_end - off;
		} else {
			*p = fs->img + ip->meta_end + (off & (bsz - 1));
			*len = ip->size - off;
		}
		return 0;
	case EROFS_LAYOUT_CHUNK_BASED:
		return map_chunked(fs, ip, off, p, len);
	default:
		return -EUCLEAN;
	}
}

long erofs_read(const struct erofs *fs, const struct erofs_inode *ip, void *buf, size_t n,
                uint64_t off)
{
	uint8_t *out = buf;
	size_t done = 0;

	if (off >= ip->size)
		return 0;
	n = MIN(n, ip->size - off);
	while (done < n) {
		const uint8_t *p;
		uint64_t len;
		int err = erofs_map(fs, ip, off + done, &p, &len);

		if (err)
			return err;
		len = MIN(len, n - done);
		if (p)
			memcpy(out + done, p, len);
		else
			memset(out + done, 0, len);
		done += len;
	}
	return (long)done;
}

/* ---------------------------------------------------------------- directories */

/* strcmp order, which erofs keeps a directory's names in. */
static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, MIN(alen, blen));

	return c ? c : (alen > blen) - (alen < blen);
}

/* One directory block, checked: its dirents, the name bounds and order
 * (sorted, so no name twice). */
struct dblock {
	const uint8_t *p;
	unsigned len, count;
};

static int dir_block(const struct erofs *fs, const struct erofs_inode *dir, uint64_t i,
                     struct dblock *b)
{
	uint64_t bsz = 1ULL << fs->blkbits, off = i << fs->blkbits, len;
	unsigned first;
	int err = erofs_map(fs, dir, off, &b->p, &len);

	if (err)
		return err;
	b->len = (unsigned)MIN(bsz, dir->size - off);
	if (!b->p || len < b->len || b->len < DIRENT_SIZE)
		return -EUCLEAN;
	first = le16(b->p + 8);
	if (first < DIRENT_SIZE || first % DIRENT_SIZE || first >= b->len)
		return -EUCLEAN;
	b->count = first / DIRENT_SIZE;
	for (unsigned k = 0; k < b->count; k++) {
		unsigned start = le16(b->p + k * DIRENT_SIZE + 8), end, nlen;

		/* A name's length is where the next begins: they must follow
		 * the dirents in order. */
		if (start < first)
			return -EUCLEAN;
		end = k + 1 < b->count ? le16(b->p + (k + 1) * DIRENT_SIZE + 8) : b->len;
		if (end <= start || end > b->len)
			return -EUCLEAN;
		nlen = end - start;
		if (k + 1 == b->count) /* the last name may be NUL-padded */
			nlen = (unsigned)strnlen((const char *)b->p + start, nlen);
		if (!nlen || nlen > EROFS_NAME_LEN || memchr(b->p + start, '/', nlen) ||
		    memchr(b->p + start, 0, nlen))
			return -EUCLEAN;
		if (b->p[k * DIRENT_SIZE + 10] > EROFS_FT_LNK)
			return -EUCLEAN;
		if (k && name_cmp((const char *)b->p + le16(b->p + (k - 1) * DIRENT_SIZE + 8),
		                  start - le16(b->p + (k - 1) * DIRENT_SIZE + 8),
		                  (const char *)b->p + start, nlen) >= 0)
			return -EUCLEAN;
	}
	return 0;
}

static const char *dent_name(const struct dblock *b, unsigned k, size_t *len)
{
	unsigned start = le16(b->p + k * DIRENT_SIZE + 8);
	unsigned end = k + 1 < b->count ? le16(b->p + (k + 1) * DIRENT_SIZE + 8) : b->len;

	*len = strnlen((const char *)b->p + start, end - start);
	return (const char *)b->p + start;
}

static bool is_dot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

int erofs_readdir(const struct erofs *fs, const struct erofs_inode *dir, erofs_filldir cb,
                  void *ctx)
{
	uint64_t nblocks;
	struct dblock b;
	int err;

	if ((dir->mode & M_IFMT) != M_IFDIR)
		return -ENOTDIR;
	nblocks = (dir->size + (1ULL << fs->blkbits) - 1) >> fs->blkbits;
	for (uint64_t i = 0; i < nblocks; i++) {
		const char *last = NULL, *first;
		size_t last_len = 0, first_len;

		if (i) {
			last = dent_name(&b, b.count - 1, &last_len);
		}
		err = dir_block(fs, dir, i, &b);
		if (err)
			return err;
		first = dent_name(&b, 0, &first_len);
		if (last && name_cmp(last, last_len, first, first_len) >= 0)
			return -EUCLEAN;
	}
	for (uint64_t i = 0; cb && i < nblocks; i++) {
		dir_block(fs, dir, i, &b);
		for (unsigned k = 0; k < b.count; k++) {
			size_t len;
			const char *name = dent_name(&b, k, &len);

			if (is_dot(name, len))
				continue;
			err = cb(ctx, name, len, le64(b.p + k * DIRENT_SIZE),
			         b.p[k * DIRENT_SIZE + 10]);
			if (err)
				return err;
		}
	}
	return 0;
}

int erofs_dir_empty(const struct erofs *fs, const struct erofs_inode *dir)
{
	struct dblock b;
	int err;

	if ((dir->mode & M_IFMT) != M_IFDIR)
		return -ENOTDIR;
	if (dir->size > (1ULL << fs->blkbits))
		return 0; /* a block holds far more than "." and ".." */
	if (!dir->size)
		return 1;
	err = dir_block(fs, dir, 0, &b);
	if (err)
		return err;
	for (unsigned k = 0; k < b.count; k++) {
		size_t len;
		const char *name = dent_name(&b, k, &len);

		if (!is_dot(name, len))
			return 0;
	}
	return 1;
}

struct lookup_ctx {
	const char *name;
	size_t len;
	uint64_t nid;
};

static int lookup_one(void *ctx, const char *name, size_t len, uint64_t nid, unsigned type)
{
	struct lookup_ctx *l = ctx;

	if (len != l->len || memcmp(name, l->name, len))
		return 0;
	l->nid = nid;
	return 1;
}

int erofs_lookup(const struct erofs *fs, const struct erofs_inode *dir, const char *name,
                 size_t len, uint64_t *nid)
{
	struct lookup_ctx l = {name, len, 0};
	int r = erofs_readdir(fs, dir, lookup_one, &l);

	if (r < 0)
		return r;
	if (!r)
		return -ENOENT;
	*nid = l.nid;
	return 0;
}

long erofs_readlink(const struct erofs *fs, const struct erofs_inode *ip, char *buf, size_t cap)
{
	long n;

	if ((ip->mode & M_IFMT) != M_IFLNK)
		return -EINVAL;
	if (!ip->size || ip->size > EROFS_LINK_MAX)
		return -EUCLEAN;
	if (cap <= ip->size)
		return -ENAMETOOLONG;
	n = erofs_read(fs, ip, buf, ip->size, 0);
	if (n < 0)
		return n;
	if ((uint64_t)n != ip->size || memchr(buf, 0, (size_t)n))
		return -EUCLEAN;
	buf[n] = 0;
	return n;
}
