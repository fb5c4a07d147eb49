/* SPDX-License-Identifier: MIT */
/* The ring of recent out-of-memory kills (oom.h). A kill is rare and the
 * record small: a slot is claimed atomically and written in place; a
 * reader racing a writer may see one slot half written, which only
 * misnames one kill in a listing. */
#include "oom.h"
#include "ktime.h"
#include "proc.h"

static struct oom_kill ring[OOM_KEEP];
static unsigned nkills; /* ever; slot = n % OOM_KEEP */

void oom_note(const struct proc *p)
{
	unsigned n = __atomic_fetch_add(&nkills, 1, __ATOMIC_RELAXED);
	struct oom_kill *k = &ring[n % OOM_KEEP];

	k->at_ns = time_monotonic_ns();
	k->pid = p->pid;
	k->sid = p->sid;
	memcpy(k->comm, p->comm, sizeof(k->comm));
	k->comm[sizeof(k->comm) - 1] = 0;
}

unsigned oom_list(struct oom_kill *out, unsigned max)
{
	unsigned n = __atomic_load_n(&nkills, __ATOMIC_ACQUIRE);
	unsigned have = n < OOM_KEEP ? n : OOM_KEEP, i;

	if (have > max)
		have = max;
	for (i = 0; i < have; i++)
		out[i] = ring[(n - have + i) % OOM_KEEP];
	return have;
}
