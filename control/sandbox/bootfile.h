/* SPDX-License-Identifier: MIT */
/* Boot files pinned by content: a snapshot resumes only on the very kernel
 * and initramfs it was taken with (kiln-vmm checks their hashes), and
 * `make` replaces build/guest/kiln-kernel under a paused sandbox or a
 * template. So every sandbox boots copies in DATA_DIR/boot, named by their
 * SHA-256, which stay as long as a sandbox or template names them. */
#ifndef KILND_BOOTFILE_H
#define KILND_BOOTFILE_H

#include <stddef.h>

#include "kilnd.h"

/* The pinned copy of path (made now if its content is new): a path owned
 * by kilnd, valid until the next bootfile_pin() of the same file. NULL
 * with msg filled in on failure. */
const char *bootfile_pin(struct kilnd *kd, const char *path, char *msg, size_t msglen);
/* Remove the copies no sandbox or template names any more. */
void bootfile_gc(struct kilnd *kd);
void bootfile_free_all(struct kilnd *kd);

#endif
