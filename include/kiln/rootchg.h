/* SPDX-License-Identifier: MIT */
/*
 * kiln guest ABI: what a container changed in its root, the image's tree
 * (the erofs image below, the library OS's ramfs above: unionfs.c). The
 * agent asks it name by name while it walks the tree for the shim, which
 * replays the changes onto containerd's snapshot (shim/rwlayer.c).
 *
 * Version 1. Included by the guest kernel and by the agent (on Linux the
 * prctls are EINVAL: the agent then answers that it cannot tell).
 */
#ifndef KILN_ROOTCHG_H
#define KILN_ROOTCHG_H

#define KILN_ROOTCHG_VERSION 1

/* prctl(KILN_PR_ROOTCHG_TRACK): from now on the root's file system notes
 * what changes (the agent calls it once its own boot writes, resolv.conf
 * and the rest, are done: those are not the container's). Root of PID
 * namespace 0 only (EPERM); a second call is a no-op. Returns 0. */
#define KILN_PR_ROOTCHG_TRACK 0x4b500005

/* prctl(KILN_PR_ROOTCHG_GET, dirfd, path): the KILN_CHG_* bits of the node
 * at path (relative to dirfd, "" for dirfd itself; a final symlink is not
 * followed). Root of namespace 0 only. */
#define KILN_PR_ROOTCHG_GET 0x4b500006

/* prctl(KILN_PR_ROOTCHG_CLEAR, dirfd, path): the node at path (as for
 * _GET) has its KILN_CHG_* bits cleared: what the agent made there is the
 * container's base, not its change (a pod container's root, copied in:
 * the agent's BASE file operation clears each node of it). A node of
 * procfs (synthesized) is left as it is (device nodes are ordinary
 * nodes: cleared). Root of namespace 0 only. Returns 0.
 * A compatible addition (no new version): an older kernel says EINVAL. */
#define KILN_PR_ROOTCHG_CLEAR 0x4b500007

/* prctl(KILN_PR_ROOTCHG_CLEAR_TREE, dirfd, path): as _CLEAR, for the node
 * at path and every node beneath it, in one call (the agent's BASE: a
 * copied root is cleared at no system call per name). It stays on the
 * root's own file system (procfs nodes, and image directories not looked
 * into, are left as they are, and not entered), follows no symlink,
 * reaches nodes at most KILN_ROOTCHG_TREE_DEPTH levels below path (one
 * deeper: ELOOP) and clears at most KILN_ROOTCHG_TREE_MAX nodes (E2BIG);
 * on either error what it cleared stays cleared. Root of namespace 0 only. Returns the number
 * of nodes cleared. A compatible addition (no new version): an older
 * kernel says EINVAL, and the agent then clears name by name. */
#define KILN_PR_ROOTCHG_CLEAR_TREE 0x4b500008
#define KILN_ROOTCHG_TREE_DEPTH    128 /* as the agent's KILN_CHANGES_DEPTH */
#define KILN_ROOTCHG_TREE_MAX      (1L << 22)

#define KILN_CHG_SELF    0x1 /* its bytes, mode, owner or times changed */
#define KILN_CHG_NEW     0x2 /* given a name since: made, renamed or linked here */
#define KILN_CHG_ENTRIES 0x4 /* a directory whose names changed */
/* an image directory never looked into: nothing beneath it changed */
#define KILN_CHG_PRISTINE 0x8
/* not the root's own file system (procfs, synthesized): not the container's */
#define KILN_CHG_OTHER 0x10

#endif
