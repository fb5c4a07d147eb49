/* SPDX-License-Identifier: MIT */
/*
 * Sandbox directories kept for reuse. Every clone had a directory and a
 * vmm-out in it made on the data directory's file system and removed after
 * it: two inodes taken and freed per clone. On an ext4 without a journal
 * the allocator then reads every inode freed in the last half minute it
 * passes over (ext4 recently_deleted), so the cost of each mkdir grows with
 * the clone rate: a quarter of kilnd's CPU in a burst here (issue 21). A
 * deleted sandbox's directory that holds nothing but its run link and an
 * empty vmm-out (or none) is renamed into DATA_DIR/spare instead, and the next
 * sandbox's directory is renamed out of there: no inode is allocated. The
 * pool is emptied at every start of kilnd (its names are only in memory).
 */
#ifndef KILND_DIR_POOL_H
#define KILND_DIR_POOL_H

#include <stdbool.h>

struct kilnd;

#define DIR_POOL_MAX 256

/* Make DATA_DIR/spare empty (kd->dir_pool NULL on an error: no reuse). */
void dir_pool_init(struct kilnd *kd);
void dir_pool_free(struct kilnd *kd);
/* Keep sandboxes/ID (its VMM gone) for reuse: true if it went into the
 * pool, false if the caller removes it (something else in it, pool full). */
bool dir_pool_put(struct kilnd *kd, const char *id);
/* Make path (a new sandbox's directory, not there yet) from the pool,
 * mode 0700, with an empty vmm-out of mode 0700 or none: true, or false
 * if the pool has none (the caller makes it). A pooled directory that
 * holds anything else now is removed instead. */
bool dir_pool_take(struct kilnd *kd, const char *path);

#endif
