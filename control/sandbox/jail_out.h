/* SPDX-License-Identifier: MIT */
/*
 * Where a jailed VMM writes: SB_OUT_DIR in its sandbox's directory, the
 * only directory that is its uid's (kiln-vmm --jail-rw). The sandbox's
 * directory itself stays kilnd's, so that the VMM cannot put a link where
 * kilnd writes as root (console.log, vmm.pid, the snapshot). A snapshot the
 * VMM wrote there is taken into place by kilnd once the VMM answers, if it
 * is a plain file of its own. Other snapshots than the pause's (forks,
 * templates) are written under another name there.
 */
#ifndef KILND_JAIL_OUT_H
#define KILND_JAIL_OUT_H

#include <stddef.h>

#define SB_OUT_DIR "vmm-out"

struct sandbox;

/* Make dir/SB_OUT_DIR (0700; the VMM gives it to its uid) and let that
 * uid through dir (0711). 0 or -errno. */
int sb_out_dir_make(const char *dir);
/* The path to ask the VMM to write a snapshot meant for dest at (malloc'd,
 * NULL when out of memory): in SB_OUT_DIR when its VMM is jailed. */
char *sb_vmm_snap_target(const struct sandbox *sb, const char *dest);
/* Move what the VMM wrote for dest into place (nothing to do unless
 * jailed). 0, or -errno with why filled in. */
int sb_take_snapshot(const struct sandbox *sb, const char *dest, char *why, size_t n);
/* The reverse once a resume is complete: the snapshot the VMM runs on
 * goes where it writes, as its uid's, for a later pause to append to
 * (pause_base.h). Unjailed, it stays where it is. 0, or -errno with why
 * filled in and the snapshot removed (the next pause writes a new one). */
int sb_give_snapshot(const struct sandbox *sb, char *why, size_t n);

#endif
