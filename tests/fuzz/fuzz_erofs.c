/* SPDX-License-Identifier: MIT */
/* libFuzzer: the library OS's erofs reader, which serves every file of an
 * image (a file on the host, but one a tenant may have built). The walk
 * mounts the image and reads every directory, file and link it can reach,
 * breadth-first, bounded in inodes and bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "erofs.h"

#define MAX_INODES 256
#define S_IFMT_    0170000
#define S_IFDIR_   0040000
#define S_IFLNK_   0120000

struct walk {
	uint64_t queue[MAX_INODES];
	unsigned n;
};

static int add(void *ctx, const char *name, size_t len, uint64_t nid, unsigned type)
{
	struct walk *w = ctx;

	if (len == 0 || len > 255 || memchr(name, '/', len) || memchr(name, 0, len))
		abort(); /* erofs_readdir promises names without these */
	if (w->n < MAX_INODES)
		w->queue[w->n++] = nid;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1), buf[4096];
	struct walk w = {.n = 0};
	struct erofs fs;
	const char *why;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (erofs_mount(&fs, copy, size, &why))
		goto out;
	w.queue[w.n++] = fs.root_nid;
	for (unsigned i = 0; i < w.n; i++) {
		struct erofs_inode ip;
		const uint8_t *p;
		uint64_t len, nid;

		if (erofs_iget(&fs, w.queue[i], &ip))
			continue;
		if ((ip.mode & S_IFMT_) == S_IFDIR_) {
			erofs_readdir(&fs, &ip, add, &w);
			erofs_dir_empty(&fs, &ip);
			erofs_lookup(&fs, &ip, "etc", 3, &nid);
		} else if ((ip.mode & S_IFMT_) == S_IFLNK_) {
			char link[EROFS_LINK_MAX + 1];

			erofs_readlink(&fs, &ip, link, sizeof(link));
		} else {
			for (uint64_t off = 0; off < ip.size && off < (1u << 20);
			     off += sizeof(buf))
				if (erofs_read(&fs, &ip, buf, sizeof(buf), off) < 0)
					break;
			if (ip.size && erofs_map(&fs, &ip, ip.size - 1, &p, &len) == 0 && p &&
			    (p < copy || p + len > copy + size))
				abort();
		}
	}
out:
	free(copy);
	return 0;
}
