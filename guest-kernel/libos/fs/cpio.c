// SPDX-License-Identifier: MIT
/*
 * cpio newc parser. A member is a 110-byte ASCII header (6-byte magic and 13
 * fields of 8 hex digits), the name with its NUL, padding to a multiple of 4
 * (counted from the start of the archive), the data, padding again.
 */
#include "klib.h"
#include "cpio.h"

#define CPIO_HDR_LEN   110
#define CPIO_MAGIC_LEN 6
#define CPIO_FIELD_LEN 8
#define CPIO_TRAILER   "TRAILER!!!"
#define CPIO_S_IFMT    0170000
#define CPIO_S_IFREG   0100000
#define CPIO_S_IFLNK   0120000

enum cpio_field {
	F_INO,
	F_MODE,
	F_UID,
	F_GID,
	F_NLINK,
	F_MTIME,
	F_FILESIZE,
	F_DEVMAJOR,
	F_DEVMINOR,
	F_RDEVMAJOR,
	F_RDEVMINOR,
	F_NAMESIZE,
	F_CHECK,
	F_COUNT,
};

static const char *const field_err[F_COUNT] = {
    [F_INO] = "cpio: non-hex digit in c_ino",
    [F_MODE] = "cpio: non-hex digit in c_mode",
    [F_UID] = "cpio: non-hex digit in c_uid",
    [F_GID] = "cpio: non-hex digit in c_gid",
    [F_NLINK] = "cpio: non-hex digit in c_nlink",
    [F_MTIME] = "cpio: non-hex digit in c_mtime",
    [F_FILESIZE] = "cpio: non-hex digit in c_filesize",
    [F_DEVMAJOR] = "cpio: non-hex digit in c_devmajor",
    [F_DEVMINOR] = "cpio: non-hex digit in c_devminor",
    [F_RDEVMAJOR] = "cpio: non-hex digit in c_rdevmajor",
    [F_RDEVMINOR] = "cpio: non-hex digit in c_rdevminor",
    [F_NAMESIZE] = "cpio: non-hex digit in c_namesize",
    [F_CHECK] = "cpio: non-hex digit in c_check",
};

/* The archive and, once something is wrong, what and where. */
struct cpio_walk {
	const uint8_t *buf;
	size_t len;
	const char *err;
	size_t err_off;
};

static int fail(struct cpio_walk *w, size_t off, const char *msg)
{
	w->err = msg;
	w->err_off = off;
	return -EINVAL;
}

static size_t field_off(enum cpio_field f)
{
	return CPIO_MAGIC_LEN + (size_t)f * CPIO_FIELD_LEN;
}

static int hex8(const uint8_t *p, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < CPIO_FIELD_LEN; i++) {
		uint8_t c = p[i];
		uint32_t d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -EINVAL;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* Name the formats people are likely to feed us by mistake. */
static const char *magic_err(const uint8_t *h)
{
	if (memcmp(h, "070707", CPIO_MAGIC_LEN) == 0)
		return "cpio: odc (070707) archive; only newc (070701/070702) is supported";
	if (h[0] == 0x1f && h[1] == 0x8b)
		return "cpio: gzip-compressed archive; decompress it first";
	return "cpio: bad magic, not a newc (070701/070702) archive";
}

/* Reads the header of the member at off from h (avail bytes there: the
 * archive itself, or an index record); *crc tells whether c_check is a
 * checksum. */
static int read_header(struct cpio_walk *w, size_t off, const uint8_t *h, size_t avail,
                       uint32_t f[F_COUNT], bool *crc)
{
	if (avail < CPIO_MAGIC_LEN)
		return fail(w, off, "cpio: header truncated");
	if (memcmp(h, "070701", CPIO_MAGIC_LEN) == 0)
		*crc = false;
	else if (memcmp(h, "070702", CPIO_MAGIC_LEN) == 0)
		*crc = true;
	else
		return fail(w, off, magic_err(h));
	if (avail < CPIO_HDR_LEN)
		return fail(w, off, "cpio: header truncated");
	for (int i = 0; i < F_COUNT; i++) {
		if (hex8(h + field_off(i), &f[i]))
			return fail(w, off + field_off(i), field_err[i]);
	}
	return 0;
}

/* The 070702 checksum: the sum of the data bytes, modulo 2^32. Only
 * regular files carry one: GNU cpio writes 0 for a symlink's target. */
static uint32_t checksum(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;

	while (n--)
		sum += *p++;
	return sum;
}

static int check_name(struct cpio_walk *w, size_t off, const char *name, size_t namesize,
                      size_t avail)
{
	if (namesize == 0)
		return fail(w, off + field_off(F_NAMESIZE), "cpio: c_namesize is 0");
	if (namesize > w->len - (off + CPIO_HDR_LEN) || namesize > avail - CPIO_HDR_LEN)
		return fail(w, off + field_off(F_NAMESIZE),
		            "cpio: name extends past end of archive");
	if (name[namesize - 1] != '\0')
		return fail(w, off + CPIO_HDR_LEN, "cpio: name not NUL-terminated at c_namesize");
	if (memchr(name, '\0', namesize - 1))
		return fail(w, off + CPIO_HDR_LEN, "cpio: name contains a NUL byte");
	return 0;
}

/*
 * Parses and checks the member at off, whose header and name are read from
 * h (avail bytes; off + avail <= len when h is in the archive), and a
 * symbolic link's target too when h is an index record (in_index). Sets
 * *next to the offset after its padding and *trailer if it is the
 * end-of-archive marker.
 */
static int parse_entry(struct cpio_walk *w, size_t off, const uint8_t *h, size_t avail,
                       bool in_index, struct cpio_entry *e, size_t *next, bool *trailer)
{
	uint32_t f[F_COUNT];
	size_t name_off = off + CPIO_HDR_LEN, data_off, end;
	const char *name;
	bool crc;
	int r;

	r = read_header(w, off, h, avail, f, &crc);
	if (r)
		return r;
	name = (const char *)h + CPIO_HDR_LEN;
	r = check_name(w, off, name, f[F_NAMESIZE], avail);
	if (r)
		return r;
	/* name_off + namesize <= len, so these sums cannot wrap. */
	data_off = ALIGN_UP(name_off + f[F_NAMESIZE], 4);
	if (data_off > w->len)
		return fail(w, name_off, "cpio: padding after name extends past end of archive");
	if (f[F_FILESIZE] > w->len - data_off)
		return fail(w, off + field_off(F_FILESIZE),
		            "cpio: file data extends past end of archive");
	end = ALIGN_UP(data_off + f[F_FILESIZE], 4);
	if (end > w->len)
		return fail(w, data_off,
		            "cpio: padding after file data extends past end of archive");
	if (crc && (f[F_MODE] & CPIO_S_IFMT) == CPIO_S_IFREG &&
	    checksum(w->buf + data_off, f[F_FILESIZE]) != f[F_CHECK])
		return fail(w, off + field_off(F_CHECK), "cpio: checksum mismatch (070702)");

	*trailer = f[F_NAMESIZE] == sizeof(CPIO_TRAILER) &&
	           memcmp(name, CPIO_TRAILER, sizeof(CPIO_TRAILER)) == 0;
	*next = end;
	e->hdr_off = off;
	e->name = name;
	e->namelen = f[F_NAMESIZE] - 1;
	if (e->namelen >= 2 && name[0] == '.' && name[1] == '/') {
		e->name += 2;
		e->namelen -= 2;
	}
	if (e->namelen == 0)
		return fail(w, name_off, "cpio: empty name");
	e->mode = f[F_MODE];
	e->uid = f[F_UID];
	e->gid = f[F_GID];
	e->nlink = f[F_NLINK];
	e->mtime = f[F_MTIME];
	e->ino = f[F_INO];
	e->devmajor = f[F_DEVMAJOR];
	e->devminor = f[F_DEVMINOR];
	e->rdevmajor = f[F_RDEVMAJOR];
	e->rdevminor = f[F_RDEVMINOR];
	e->data = w->buf + data_off;
	e->size = f[F_FILESIZE];
	if (in_index && (f[F_MODE] & CPIO_S_IFMT) == CPIO_S_IFLNK) {
		if (f[F_FILESIZE] > avail - CPIO_HDR_LEN - f[F_NAMESIZE])
			return fail(w, data_off, "cpio index: link target truncated");
		e->data = h + CPIO_HDR_LEN + f[F_NAMESIZE];
	}
	return 0;
}

/* True if the 8 bytes at p are zero (p need not be aligned). */
static bool zero64(const uint8_t *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, sizeof(v));
	return !v;
}

/*
 * After a trailer: skips zero padding and returns 0 at the end of the buffer,
 * 1 if another archive starts at *off, or an error. The padding runs to the
 * archive's block size (up to 4 KiB in kiln's concatenated archives, ~85 KB
 * in all of test.cpio): it is skipped 8 bytes at a time.
 */
static int after_trailer(struct cpio_walk *w, size_t *off)
{
	size_t i = *off;

	while (i < w->len && i % 8 && w->buf[i] == 0)
		i++;
	while (w->len - i >= 8 && zero64(w->buf + i))
		i += 8;
	while (i < w->len && w->buf[i] == 0)
		i++;
	*off = i;
	if (i == w->len)
		return 0;
	if (i % 4)
		return fail(w, i,
		            "cpio: data after TRAILER!!! is neither zero padding nor an archive");
	return 1;
}

static int walk(struct cpio_walk *w, cpio_cb cb, void *ctx)
{
	size_t off = 0;
	int r;

	for (;;) {
		struct cpio_entry e;
		bool trailer;

		if (off == w->len)
			return fail(w, off, "cpio: archive ends without TRAILER!!! (truncated?)");
		r = parse_entry(w, off, w->buf + off, w->len - off, false, &e, &off, &trailer);
		if (r)
			return r;
		if (trailer) {
			r = after_trailer(w, &off);
			if (r <= 0)
				return r;
			continue;
		}
		if (cb) {
			r = cb(ctx, &e);
			if (r)
				return r;
		}
	}
}

int cpio_parse(const void *buf, size_t len, cpio_cb cb, void *ctx, const char **err,
               size_t *err_off)
{
	struct cpio_walk w = {.buf = buf, .len = len};
	int r;

	if (!buf)
		r = fail(&w, 0, "cpio: no archive");
	else
		r = walk(&w, NULL, NULL);
	if (r == 0 && cb)
		r = walk(&w, cb, ctx);
	if (err)
		*err = w.err;
	if (err_off)
		*err_off = w.err_off;
	return r;
}

/* Index records: the header's offset (u64), its header and name, padded. */
static int walk_index(struct cpio_walk *w, const uint8_t *index, size_t index_len, cpio_cb cb,
                      void *ctx)
{
	size_t i = 0;
	int r;

	while (i < index_len) {
		size_t avail = index_len - i - CPIO_INDEX_OFF_LEN, next;
		const uint8_t *end;
		struct cpio_entry e;
		uint64_t off;
		bool trailer;

		if (index_len - i < CPIO_INDEX_OFF_LEN + CPIO_HDR_LEN)
			return fail(w, 0, "cpio index: record truncated");
		memcpy(&off, index + i, sizeof(off));
		if (off > w->len || w->len - off < CPIO_HDR_LEN)
			return fail(w, 0, "cpio index: member outside the archive");
		r = parse_entry(w, (size_t)off, index + i + CPIO_INDEX_OFF_LEN, avail, true, &e,
		                &next, &trailer);
		if (r)
			return r;
		if (trailer)
			return fail(w, (size_t)off, "cpio index: lists a trailer");
		/* The name (and a link's target) ends inside the index
		 * (parse_entry checked); so must the record's padding. */
		end = (const uint8_t *)e.name + e.namelen + 1;
		if ((e.mode & CPIO_S_IFMT) == CPIO_S_IFLNK)
			end = (const uint8_t *)e.data + e.size;
		i = ALIGN_UP((size_t)(end - index), CPIO_INDEX_ALIGN);
		if (i > index_len)
			return fail(w, 0, "cpio index: record truncated");
		if (cb && (r = cb(ctx, &e)))
			return r;
	}
	return 0;
}

int cpio_parse_index(const void *buf, size_t len, const void *index, size_t index_len, cpio_cb cb,
                     void *ctx, const char **err, size_t *err_off)
{
	struct cpio_walk w = {.buf = buf, .len = len};
	int r;

	if (!buf || !index)
		r = fail(&w, 0, "cpio: no archive");
	else
		r = walk_index(&w, index, index_len, NULL, NULL);
	if (r == 0 && cb)
		r = walk_index(&w, index, index_len, cb, ctx);
	if (err)
		*err = w.err;
	if (err_off)
		*err_off = w.err_off;
	return r;
}

bool cpio_name_ok(const char *name, size_t len)
{
	size_t i = 0;

	if (len == 0 || len > CPIO_NAME_MAX || memchr(name, '\0', len))
		return false;
	while (i < len) {
		const char *c = name + i;
		const char *slash = memchr(c, '/', len - i);
		size_t clen = slash ? (size_t)(slash - c) : len - i;

		if (clen == 0)
			return false;
		if (clen == 2 && c[0] == '.' && c[1] == '.')
			return false;
		/* Past the slash; a trailing one ends the loop with i == len. */
		i += clen + 1;
	}
	return true;
}
