/* SPDX-License-Identifier: MIT */
/* Clocks from the TSC alone (no CPL0): calibrated by the VMM's FDT data. */
#ifndef KILN_KTIME_H
#define KILN_KTIME_H

#include "klib.h"

struct bootinfo;

void time_init(const struct bootinfo *bi);
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
/* CLOCK_MONOTONIC: since boot, not counting time the VM spent paused (the
 * rules across pauses and snapshot restores are in time.c). */
uint64_t time_monotonic_ns(void);
uint64_t time_boottime_ns(void); /* CLOCK_BOOTTIME: monotonic + time paused */
uint64_t time_realtime_ns(void); /* since the epoch */
uint64_t time_ns_to_tsc_deadline(uint64_t monotonic_ns);
void time_set_realtime(uint64_t ns);
uint64_t time_tsc_to_ns(uint64_t ticks);

/* Boot milestones, printed with kiln.stats=1. */
#define BOOT_MARKS 6
void boot_mark(int i);
void boot_print_marks(void);

#endif
