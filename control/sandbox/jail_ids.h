/* SPDX-License-Identifier: MIT */
/*
 * The uids (and gids) kilnd gives its VMMs' jails: --jail-uid-base + 1 to
 * + JAIL_SLOTS - 1, one per running VMM, handed out round-robin so that an
 * id a VMM just gave back (its processes may still be going away) is the
 * last to be given again. An id is free once kilnd has reaped its VMM;
 * after a restart kilnd reads the ids of the VMMs it adopts from their pid
 * files (vmm.pid: "PID START ID").
 */
#ifndef KILND_JAIL_IDS_H
#define KILND_JAIL_IDS_H

#include <stdint.h>

#define JAIL_SLOTS            65536
#define JAIL_UID_BASE_DEFAULT 900000u

struct jail_ids {
	uint8_t used[JAIL_SLOTS / 8];
	unsigned next;
};

struct kilnd;

/* A free id (uid = gid), or 0 when kilnd runs VMMs without a jail of
 * their own (--no-jail, or not root) or all are taken. */
unsigned jail_id_take(struct kilnd *kd);
/* Give id back (0: nothing). */
void jail_id_put(struct kilnd *kd, unsigned id);
/* id is a running VMM's (adopted after a restart). */
void jail_id_mark(struct kilnd *kd, unsigned id);

#endif
