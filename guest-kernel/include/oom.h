/* SPDX-License-Identifier: MIT */
/* Out-of-memory kills, remembered (mm/oom.c) so that whoever started the
 * process can say why it died: /proc/kiln/oom lists the recent ones, and
 * kiln-agent reports a command killed so as out of memory
 * (KILN_EXIT_OOM, include/kiln/agent.h). */
#ifndef KILN_OOM_H
#define KILN_OOM_H

#include <stdint.h>

#define OOM_KEEP 32 /* the newest kills listed */

struct oom_kill {
	uint64_t at_ns; /* CLOCK_MONOTONIC */
	int pid, sid;
	char comm[16];
};

struct proc;

/* p is being killed for memory. */
void oom_note(const struct proc *p);
/* The newest kills, oldest first, at most max; their number. */
unsigned oom_list(struct oom_kill *out, unsigned max);

#endif
