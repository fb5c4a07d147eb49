/* SPDX-License-Identifier: MIT */
/*
 * Time from the TSC: rdtsc runs natively at CPL3, so reading a clock never
 * leaves the program's context.
 *
 * Pauses and snapshots. The VM can stop at the quiesce point (kiln/boot.h,
 * KILN_PORT_QUIESCE) for any length of time and wake up in another VM on
 * another host, whose TSC may be ahead of or behind ours. The clocks then
 * follow Linux's rules for a system suspend:
 *   CLOCK_MONOTONIC does not count the pause: it goes on from the value it
 *     had when the VM stopped, so sleeps, timeouts and timers resume with
 *     what they had left (as a frozen VM would see it);
 *   CLOCK_BOOTTIME counts it (monotonic + time spent paused);
 *   CLOCK_REALTIME is stepped to the host's clock at the resume.
 * The quiesce handler leaves its TSC at the stop and the host's (realtime,
 * TSC) pair at the resume in kcpu0; every clock read checks kcpu0.resume_seq
 * first and rebases here before using the TSC, so no reading ever mixes the
 * TSC of one side of a pause with the base of the other.
 */
#include "bootinfo.h"
#include "kcpu.h"
#include "ktime.h"
#include "printk.h"

static uint64_t base_tsc;  /* TSC at base_mono */
static uint64_t base_mono; /* CLOCK_MONOTONIC (ns) at base_tsc */
static int64_t rt_offset;  /* CLOCK_REALTIME - CLOCK_MONOTONIC */
static uint64_t paused_ns; /* CLOCK_BOOTTIME - CLOCK_MONOTONIC */
static uint64_t last_mono; /* the latest value handed out */
static uint64_t seen_seq;  /* kcpu0.resume_seq already applied */
static uint64_t boot_tsc0; /* the VMM's TSC reading at boot */
static uint64_t mult;      /* ns per tick, 32.32 fixed point */
static uint64_t tsc_khz;

void time_init(const struct bootinfo *bi)
{
	base_tsc = boot_tsc0 = bi->boot_tsc;
	base_mono = 0;
	rt_offset = (int64_t)bi->boot_realtime_ns;
	tsc_khz = bi->tsc_khz;
	mult = (1000000ULL << 32) / tsc_khz;
	seen_seq = kcpu0.resume_seq;
}

uint64_t time_tsc_to_ns(uint64_t ticks)
{
	return (uint64_t)(((unsigned __int128)ticks * mult) >> 32);
}

static uint64_t mono_at(uint64_t tsc)
{
	/* A TSC behind the base (read on the far side of a pause we have not
	 * applied yet) cannot happen: callers rebase first. Never go back. */
	return base_mono + (tsc > base_tsc ? time_tsc_to_ns(tsc - base_tsc) : 0);
}

/* Rebase on the pause(s) the quiesce handler recorded since the last look. */
static void apply_resume(uint64_t seq)
{
	uint64_t qtsc, rt, rtsc, flags, mono, rt_then;

	do {
		seq = kcpu0.resume_seq;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		qtsc = kcpu0.quiesce_tsc;
		rt = kcpu0.resume_realtime;
		rtsc = kcpu0.resume_tsc;
		flags = kcpu0.resume_flags;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	} while (seq != kcpu0.resume_seq);
	if (flags & (KILN_RESUME_PAUSED | KILN_RESUME_RESTORED)) {
		/* Monotonic time at the stop. If several pauses went by unseen,
		 * the stop TSC is not in our base's terms: the last value read
		 * is the best lower bound left. */
		mono = seq - seen_seq == 1 ? mono_at(qtsc) : last_mono;
		if (mono < last_mono)
			mono = last_mono;
		rt_then = (uint64_t)((int64_t)mono + rt_offset);
		if (rt > rt_then)
			paused_ns += rt - rt_then;
		base_tsc = rtsc;
		base_mono = mono;
		rt_offset = (int64_t)rt - (int64_t)mono;
	}
	seen_seq = seq;
}

uint64_t time_monotonic_ns(void)
{
	uint64_t seq, tsc, ns;

	for (;;) {
		seq = kcpu0.resume_seq;
		if (seq != seen_seq)
			apply_resume(seq);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		tsc = rdtsc();
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (kcpu0.resume_seq == seen_seq)
			break;
	}
	ns = mono_at(tsc);
	if (ns < last_mono)
		ns = last_mono;
	last_mono = ns;
	return ns;
}

uint64_t time_boottime_ns(void)
{
	uint64_t ns = time_monotonic_ns();

	return ns + paused_ns;
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
		        (unsigned long)(time_tsc_to_ns(boot_tsc[i] - boot_tsc0) / 1000),
		        i + 1 < BOOT_MARKS ? "," : "\n");
}

uint64_t time_realtime_ns(void)
{
	uint64_t ns = time_monotonic_ns();

	return (uint64_t)((int64_t)ns + rt_offset);
}

void time_set_realtime(uint64_t ns)
{
	rt_offset = (int64_t)ns - (int64_t)time_monotonic_ns();
}

uint64_t time_ns_to_tsc_deadline(uint64_t monotonic_ns)
{
	uint64_t ms, rest;

	/* The deadline is in terms of the current TSC: rebase first. */
	if (kcpu0.resume_seq != seen_seq)
		(void)time_monotonic_ns();
	if (monotonic_ns <= base_mono)
		return base_tsc ? base_tsc : 1;
	monotonic_ns -= base_mono;
	ms = monotonic_ns / 1000000ULL;
	rest = monotonic_ns % 1000000ULL;
	/* Far enough in the future is forever (and cannot overflow). */
	if (ms > (1ULL << 40))
		return ~0ULL;
	return base_tsc + ms * tsc_khz + rest * tsc_khz / 1000000ULL;
}
