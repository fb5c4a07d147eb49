/* SPDX-License-Identifier: MIT */
/* Templates: a sandbox booted from an image, warmed up by a command (say
 * `python3 -c 'import numpy, pandas'`), and snapshotted; new sandboxes of
 * the template are copy-on-write clones of that snapshot
 * (kiln-vmm --restore-mode template), up in milliseconds with the warm-up
 * done. Each lives in DATA_DIR/templates/NAME: template.snap and the
 * decompressed memory the first clone makes (kiln-template-<id>.mem),
 * which every clone maps. Records are in the store. Templates and images
 * share one namespace: Sandbox.create(NAME) finds either. */
#ifndef KILND_TEMPLATE_H
#define KILND_TEMPLATE_H

#include "kilnd.h"
#include "sandbox.h"
#include "store.h"

struct template
{
	struct template *next;
	struct tmpl_record rec;
	char *dir, *snap_path;
};

/* Load the templates from the store (dropping those whose snapshot is
 * gone). 0, or -errno. */
int tmpl_load_all(struct kilnd *kd);
void tmpl_free_all(struct kilnd *kd);
struct template *tmpl_find(struct kilnd *kd, const char *name);
/* Fill the files, memory, vCPUs and snapshot of a clone of t into p. */
void tmpl_clone_params(struct kilnd *kd, const struct template *t, struct sb_params *p);
/* "a, b" or "none", for messages (malloc'd). */
char *tmpl_names(struct kilnd *kd);

#endif
