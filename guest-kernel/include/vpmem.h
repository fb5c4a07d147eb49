/* SPDX-License-Identifier: MIT */
/* virtio-pmem: the image the VMM was given (kiln-vmm --image). */
#ifndef KILN_VPMEM_H
#define KILN_VPMEM_H

#include "klib.h"

struct bootinfo;

/* The image's bytes, read-only in the direct map: *img, *len. -ENODEV when
 * there is no image; -EINVAL/-EIO with *why set when the VMM's description
 * of it is unusable. */
int vpmem_image(const struct bootinfo *bi, const void **img, uint64_t *len, const char **why);

#endif
