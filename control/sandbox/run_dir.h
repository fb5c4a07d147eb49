/* SPDX-License-Identifier: MIT */
/*
 * A sandbox's run files: what lives only as long as its VMM (the sockets
 * vsock.sock, vsock.sock_PORT and api.sock, console.log, vmm.pid). They are
 * made and removed with every clone, and on a data directory on disk each
 * costs an inode: on an ext4 without a journal the allocator reads every
 * inode deleted in the last minute it passes over (ext4 recently_deleted),
 * which made them most of kilnd's CPU in a burst of clones (issue 21). So
 * they go to a tmpfs run root (--run-dir, or kilnd-HASH in /run or
 * /dev/shm when those are tmpfs and the data directory is not), one
 * directory per sandbox, linked from its sandbox directory as SB_RUN_DIR:
 * the VMM and whoever looks are given SB_RUN_DIR/... paths, so they stay
 * the same wherever the files are. A tmpfs outlives kilnd (a restarted
 * kilnd finds its VMMs' files there), not the host, whose VMMs do not
 * either; what must outlast the host (the snapshot, procs.json, vmm-out)
 * stays in the sandbox's directory.
 */
#ifndef KILND_RUN_DIR_H
#define KILND_RUN_DIR_H

#include <stdbool.h>
#include <stddef.h>

#define SB_RUN_DIR "run"

struct kilnd;
struct sandbox;

/* Pick kd->run_root: dir (--run-dir, made if missing) or the default.
 * NULL when the run files stay in the sandbox directories (its SB_RUN_DIR
 * a directory of its own). 0, or -errno with why filled in (dir unusable). */
int run_root_init(struct kilnd *kd, const char *dir, char *why, size_t n);
/* The sandbox's paths, in its run directory; legacy: its directory itself
 * (the layout of a kilnd before run directories, for a VMM it started).
 * 0 or -ENOMEM. */
int sb_run_paths(struct sandbox *sb, bool legacy);
/* Make its run directory and the link to it (sb->dir exists). 0 or -errno. */
int sb_run_make(struct sandbox *sb);
/* Remove what a sandbox of this id left in the run root. */
void run_remove(struct kilnd *kd, const char *id);
/* Run directories no sandbox has (a kilnd stopped in the middle). */
void run_remove_orphans(struct kilnd *kd);

#endif
