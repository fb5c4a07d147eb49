/* SPDX-License-Identifier: MIT */
/* kiln-agent: a tar stream unpacked into a directory as it arrives
 * (untar.c), for the file streams' UNTAR operation (files.c). */
#ifndef AGENT_UNTAR_H
#define AGENT_UNTAR_H

#include <stddef.h>
#include <stdint.h>

struct untar;

/* Unpacks into the directory dirfd (kept open by the untar, closed by
 * untar_free). NULL when out of memory. */
struct untar *untar_new(int dirfd);
/* The next bytes of the stream. 0, or -errno with why filled in (the
 * stream is then refused: no more calls but untar_free). */
int untar_feed(struct untar *u, const uint8_t *p, size_t n, char *why, size_t why_len);
/* The stream ended: 0 if it ended between entries, else -EPROTO. */
int untar_finish(struct untar *u, char *why, size_t why_len);
/* The guest's device nodes (null, zero, full, random, urandom, tty)
 * linked into dirfd's dev/, made if missing. 0 or -errno. */
int untar_link_dev(struct untar *u);
/* A procfs mounted on dir/proc (dir: the untar's directory by path). */
int untar_mount_proc(struct untar *u, const char *dir);
void untar_free(struct untar *u);

#endif
