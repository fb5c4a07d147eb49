/* SPDX-License-Identifier: MIT */
/* Clocks, sleeping, randomness and system information. */
#include <linux/sysinfo.h>
#include <linux/time.h>

#include "errno_k.h"
#include "kcpu.h"
#include "sched.h"
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
		*ns = time_monotonic_ns();
		return 0;
	case CLOCK_BOOTTIME:
		/* Counts time the VM spent paused; monotonic does not. */
		*ns = time_boottime_ns();
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

/* Sleep until the monotonic clock reaches end, or a signal. A restarted
 * sleep (no handler ran, e.g. after SIGSTOP/SIGCONT) keeps its deadline. */
static long sleep_until(uint64_t end)
{
	struct thread *t = cur_thread();
	long err;

	while ((err = wait_block(NULL, end)) == 0)
		;
	if (err == -ETIMEDOUT)
		return 0;
	t->restart_deadline = end;
	return -ERESTARTNOHAND;
}

static void put_remaining(long urem, uint64_t end)
{
	uint64_t now = time_monotonic_ns();
	if (urem)
		put_ts(urem, end > now ? end - now : 0);
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

/* The deadline of this sleep: a fresh one, or the interrupted one it
 * restarts. */
static uint64_t sleep_deadline(uint64_t rel)
{
	struct thread *t = cur_thread();
	uint64_t d = t->restart_deadline;

	t->restart_deadline = 0;
	return d ? d : time_monotonic_ns() + rel;
}

SYSCALL_DEFINE(nanosleep)
{
	uint64_t d, end;
	long err = get_ts(a0, &d);

	if (err)
		return err;
	end = sleep_deadline(d);
	err = sleep_until(end);
	if (err)
		put_remaining(a1, end);
	return err;
}

SYSCALL_DEFINE(clock_nanosleep)
{
	uint64_t t, now, end;
	long err = get_ts(a2, &t);

	if (err)
		return err;
	err = clock_now(a0, &now);
	if (err)
		return err;
	if (a1 & TIMER_ABSTIME) {
		end = time_monotonic_ns() + (t > now ? t - now : 0);
		err = sleep_until(end);
		cur_thread()->restart_deadline = 0; /* a restart recomputes it */
		return err;
	}
	end = sleep_deadline(t);
	err = sleep_until(end);
	if (err)
		put_remaining(a3, end);
	return err;
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
	si.uptime = (long)(time_boottime_ns() / NSEC);
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
