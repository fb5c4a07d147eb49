/* SPDX-License-Identifier: MIT */
/* Resuming from the snapshot quiesce point (libos/resume.c). */
#ifndef KILN_RESUME_H
#define KILN_RESUME_H

void resume_init(void);

#endif
