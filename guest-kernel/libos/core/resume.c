/* SPDX-License-Identifier: MIT */
/*
 * Back from the quiesce point (kiln/boot.h, KILN_PORT_QUIESCE): the VM was
 * paused, or this is a new VM restored from a snapshot. The supervisor's
 * handler leaves the VMM's data in kcpu0 and sets KCPU_IRQ_RESUME_BIT. The
 * clocks and the random generator check kcpu0.resume_seq on every use, so
 * nothing sees stale state even before this runs; this only makes both
 * catch up at once rather than at their next use. Lost vsock connections
 * arrive as the device's own TRANSPORT_RESET event (vsock.c).
 */
#include "kcpu.h"
#include "ktime.h"
#include "resume.h"
#include "rng.h"
#include "sched.h"

static void resume_irq(void)
{
	(void)time_monotonic_ns();
	rng_resumed();
}

void resume_init(void)
{
	irq_register(KCPU_IRQ_RESUME_BIT, resume_irq);
}
