/* SPDX-License-Identifier: MIT */
/* Clocks, sleeping, randomness and system information. */
#include <linux/sysinfo.h>
#include <linux/time.h>

#include "kcpu.h"
#include "ktime.h"
#include "mm.h"
#include "proc.h"
#include "rng.h"
#include "syscall.h"
#include "uaccess.h"
#include "virtio.h"
#include "vm.h"

#define NSEC 1000000000ULL

struct kts {
	int64_t sec, nsec;
};

static long clock_now(long clk, uint64_t *ns)
{
	switch (clk) {
	case CLOCK_REALTIME:
	case CLOCK_REALTIME_COARSE:
	case CLOCK_TAI:
		*ns = time_realtime_ns();
		return 0;
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_MONOTONIC_COARSE:
	case CLOCK_BOOTTIME:
		*ns = time_monotonic_ns();
		return 0;
	case CLOCK_PROCESS_CPUTIME_ID:
	case CLOCK_THREAD_CPUTIME_ID:
		/* One vCPU, and nothing else runs while a program computes. */
		*ns = time_monotonic_ns() - cur_proc()->start_ns;
		return 0;
	default:
		return -EINVAL;
	}
}

static long put_ts(long uts, uint64_t ns)
{
	struct kts ts = {(int64_t)(ns / NSEC), (int64_t)(ns % NSEC)};
	return copy_to_user((void *)uts, &ts, sizeof(ts));
}

SYSCALL_DEFINE(clock_gettime)
{
	uint64_t ns;
	long err = clock_now(a0, &ns);

	return err ? err : put_ts(a1, ns);
}

SYSCALL_DEFINE(clock_getres)
{
	uint64_t ns;
	long err = clock_now(a0, &ns);

	if (err || !a1)
		return err;
	return put_ts(a1, 1);
}

SYSCALL_DEFINE(gettimeofday)
{
	uint64_t ns = time_realtime_ns();
	int64_t tv[2] = {(int64_t)(ns / NSEC), (int64_t)(ns % NSEC / 1000)};

	if (a0 && copy_to_user((void *)a0, tv, sizeof(tv)))
		return -EFAULT;
	if (a1 && clear_user((void *)a1, 8))
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE(time)
{
	int64_t t = (int64_t)(time_realtime_ns() / NSEC);

	if (a0 && copy_to_user((void *)a0, &t, 8))
		return -EFAULT;
	return t;
}

/* Sleep on the TSC-deadline timer until the monotonic clock reaches end. */
static void sleep_until(uint64_t end)
{
	while (time_monotonic_ns() < end) {
		__atomic_store_n(&kcpu0.irq_pending, 0, __ATOMIC_SEQ_CST);
		if (time_monotonic_ns() >= end)
			break;
		idle_wait_once(time_ns_to_tsc_deadline(end));
	}
}

static long get_ts(long uts, uint64_t *ns)
{
	struct kts ts;

	if (copy_from_user(&ts, (void *)uts, sizeof(ts)))
		return -EFAULT;
	if (ts.sec < 0 || ts.nsec < 0 || ts.nsec >= (int64_t)NSEC)
		return -EINVAL;
	*ns = (uint64_t)ts.sec > ~0ULL / NSEC / 2 ? ~0ULL / 2 : (uint64_t)ts.sec * NSEC;
	*ns += (uint64_t)ts.nsec;
	return 0;
}

SYSCALL_DEFINE(nanosleep)
{
	uint64_t d;
	long err = get_ts(a0, &d);

	if (err)
		return err;
	sleep_until(time_monotonic_ns() + d);
	return 0;
}

SYSCALL_DEFINE(clock_nanosleep)
{
	uint64_t t, now;
	long err = get_ts(a2, &t);

	if (err)
		return err;
	err = clock_now(a0, &now);
	if (err)
		return err;
	if (a1 & TIMER_ABSTIME)
		t = t > now ? t - now : 0;
	sleep_until(time_monotonic_ns() + t);
	return 0;
}

SYSCALL_DEFINE(getrandom)
{
	size_t n = MIN((size_t)a1, 33554431UL);

	if (a2 & ~7L)
		return -EINVAL;
	return rng_read((void *)a0, n);
}

SYSCALL_DEFINE(sysinfo)
{
	struct sysinfo si;

	memset(&si, 0, sizeof(si));
	si.uptime = (long)(time_monotonic_ns() / NSEC);
	si.totalram = pmem_total_pages() * PAGE_SIZE;
	si.freeram = pmem_free_pages() * PAGE_SIZE;
	si.procs = 1;
	si.mem_unit = 1;
	return copy_to_user((void *)a0, &si, sizeof(si));
}

SYSCALL_DEFINE(times)
{
	uint64_t ticks = time_monotonic_ns() / (NSEC / 100);
	uint64_t t[4] = {ticks, 0, 0, 0};

	if (a0 && copy_to_user((void *)a0, t, sizeof(t)))
		return -EFAULT;
	return (long)ticks;
}

SYSCALL_DEFINE(getrusage)
{
	long ru[18];
	uint64_t cpu = time_monotonic_ns() - cur_proc()->start_ns;

	if (a0 != 0 && a0 != -1 && a0 != 1)
		return -EINVAL;
	memset(ru, 0, sizeof(ru));
	ru[0] = (long)(cpu / NSEC);
	ru[1] = (long)(cpu % NSEC / 1000);
	ru[4] = cur_proc()->as ? (long)(cur_proc()->as->nr_pages * 4) : 0; /* maxrss, KiB */
	return copy_to_user((void *)a1, ru, sizeof(ru));
}
