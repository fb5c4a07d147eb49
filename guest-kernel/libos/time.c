/* SPDX-License-Identifier: MIT */
/* Time from the TSC: rdtsc runs natively at CPL3, so reading a clock never
 * leaves the program's context. */
#include "bootinfo.h"
#include "ktime.h"
#include "printk.h"

static uint64_t base_tsc;      /* TSC at boot */
static uint64_t base_realtime; /* CLOCK_REALTIME (ns) at base_tsc */
static uint64_t mult;          /* ns per tick, 32.32 fixed point */
static uint64_t tsc_khz;

void time_init(const struct bootinfo *bi)
{
	base_tsc = bi->boot_tsc;
	base_realtime = bi->boot_realtime_ns;
	tsc_khz = bi->tsc_khz;
	mult = (1000000ULL << 32) / tsc_khz;
}

uint64_t time_tsc_to_ns(uint64_t ticks)
{
	return (uint64_t)(((unsigned __int128)ticks * mult) >> 32);
}

uint64_t time_monotonic_ns(void)
{
	return time_tsc_to_ns(rdtsc() - base_tsc);
}

extern uint64_t boot_tsc[BOOT_MARKS];

/* Microseconds from the VMM's clock reading (just before the first guest
 * instruction) to each milestone. */
void boot_print_marks(void)
{
	static const char *const what[BOOT_MARKS] = {"clock", "memory",  "console",
	                                             "rng",   "root fs", "init entered"};

	kprintf("kiln: boot (us after the VMM read the clock):");
	for (int i = 0; i < BOOT_MARKS; i++)
		kprintf(" %s %lu%s", what[i],
		        (unsigned long)(time_tsc_to_ns(boot_tsc[i] - base_tsc) / 1000),
		        i + 1 < BOOT_MARKS ? "," : "\n");
}

uint64_t time_realtime_ns(void)
{
	return base_realtime + time_monotonic_ns();
}

void time_set_realtime(uint64_t ns)
{
	base_realtime = ns - time_monotonic_ns();
}

uint64_t time_ns_to_tsc_deadline(uint64_t monotonic_ns)
{
	uint64_t ms = monotonic_ns / 1000000ULL, rest = monotonic_ns % 1000000ULL;

	/* Far enough in the future is forever (and cannot overflow). */
	if (ms > (1ULL << 40))
		return ~0ULL;
	return base_tsc + ms * tsc_khz + rest * tsc_khz / 1000000ULL;
}
