/* SPDX-License-Identifier: MIT */
/* Identity of boot files for snapshots, cached (vmm/imageid.c). */
#ifndef KILN_VMM_IMAGEID_H
#define KILN_VMM_IMAGEID_H

#include <stddef.h>
#include <sys/stat.h>

#include "kiln/snapshot.h"

/* The file st describes, whose content is buf (NULL: only a cache hit will
 * do, else -ENODATA). */
int image_id_of(const struct stat *st, const void *buf, size_t len, struct snap_image_id *id);
/* The same for a path; fills *st. */
int image_id_of_path(const char *path, struct stat *st, struct snap_image_id *id);

#endif
