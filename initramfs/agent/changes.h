/* SPDX-License-Identifier: MIT */
/* kiln-agent: the CHANGES file operation's walk (changes.c). */
#ifndef AGENT_CHANGES_H
#define AGENT_CHANGES_H

#include "proto.h"

struct changes;
/* Start at root (its own CHANGE and NAMES, if any, go to out); excl (a
 * NULL-ended vector of absolute paths, taken over) is left out. 0 or
 * -errno with why. */
int changes_start(struct changes **w, struct kbuf *out, const char *root, char **excl, char *why,
                  size_t n);
/* The next step's frames to out: 0 more to come, 1 done, -errno (why). */
int changes_step(struct changes *w, struct kbuf *out);
const char *changes_why(const struct changes *w);
void changes_free(struct changes *w);
/* BASE: the change bits of every node of the tree at root, on its file
 * system, cleared. 0 or -errno with why. */
int changes_base(const char *root, char *why, size_t n);

#endif
