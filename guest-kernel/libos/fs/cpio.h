/* SPDX-License-Identifier: MIT */
/*
 * Parser for cpio "newc" archives, the format of the initramfs: magic 070701
 * (c_check ignored) and 070702, whose checksum of a regular file's data is
 * verified (GNU cpio writes 0 for other types, so those are not checked).
 *
 * The archive is untrusted: every field is checked before the callback sees
 * anything. Pure function over the caller's buffer, no allocation.
 */
#ifndef KILN_LIBOS_CPIO_H
#define KILN_LIBOS_CPIO_H

#include "klib.h"

/* Longest name cpio_name_ok() accepts: PATH_MAX less the NUL. */
#define CPIO_NAME_MAX 4095

/*
 * One archive member. name and data point into the archive buffer. name has
 * a leading "./" removed, is never empty and is NUL-terminated at
 * name[namelen]. Path policy (".." and the like) is the caller's, see
 * cpio_name_ok(). For hard links (nlink > 1) newc stores the data only with
 * the last member of the group; the others have size 0.
 */
struct cpio_entry {
	const char *name;
	size_t namelen;
	uint32_t mode; /* file type and permission bits, as in st_mode */
	uint32_t uid, gid, nlink, mtime, ino;
	uint32_t devmajor, devminor, rdevmajor, rdevminor;
	const void *data; /* file contents, or a symlink's target */
	size_t size;
	size_t hdr_off; /* where the member's header is in the archive */
};

/* Called once per member in archive order; a nonzero return stops the
 * parse and is returned by cpio_parse(). */
typedef int (*cpio_cb)(void *ctx, const struct cpio_entry *e);

/*
 * Walk the archive in buf[0, len). The whole buffer is validated before the
 * first callback, so a corrupt archive has no partial effect; cb may be NULL
 * to validate only. Like Linux, accepts zero padding after "TRAILER!!!" and
 * further archives concatenated after it (at a 4-byte aligned offset).
 *
 * Returns 0 when every archive ended with its trailer and only zero bytes
 * follow, the callback's nonzero value, or -EINVAL with *err set to a
 * constant message and *err_off to the byte offset it concerns. err and
 * err_off may be NULL; *err is set to NULL when there is no parse error.
 */
int cpio_parse(const void *buf, size_t len, cpio_cb cb, void *ctx, const char **err,
               size_t *err_off);

/*
 * An index of an archive (built by the VMM, include/kiln/boot.h) lists its
 * members without their data, so that walking them touches the index and
 * not every page of the archive holding a header. Each record: the u64
 * offset in the archive of a member's header (trailers are not listed),
 * then a copy of that header and name, then for a symbolic link a copy of
 * its target (its data), padded to CPIO_INDEX_ALIGN.
 */
#define CPIO_INDEX_OFF_LEN 8
#define CPIO_INDEX_ALIGN   8

/*
 * cpio_parse() for an archive whose index is index[0, index_len): the same
 * checks of every listed member (data in the archive, sizes, names, 070702
 * checksums), the same callbacks, with name and a link's data pointing into
 * the index. The
 * archive's own structure (trailers, padding) is not checked again: whoever
 * built the index did.
 */
int cpio_parse_index(const void *buf, size_t len, const void *index, size_t index_len, cpio_cb cb,
                     void *ctx, const char **err, size_t *err_off);

/*
 * Whether name[0, len) is an acceptable relative path: 1..CPIO_NAME_MAX
 * bytes, no NUL, no ".." component and no empty component (so no leading
 * "/" and no "//"), except that one trailing "/" is allowed.
 */
bool cpio_name_ok(const char *name, size_t len);

#endif
