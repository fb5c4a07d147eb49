/* SPDX-License-Identifier: MIT */
/*
 * futex(2): wait, wake, requeue, bitsets. A futex is named by its address
 * space and address (processes share memory only by CLONE_VM here), and its
 * waiters are a list of on-stack records.
 */
#include <linux/futex.h>

#include "errno_k.h"
#include "futex.h"
#include "ktime.h"
#include "proc.h"
#include "syscall.h"
#include "uaccess.h"

struct waiter {
	struct aspace *as;
	uint64_t addr;
	uint32_t bitset;
	struct thread *t;
	bool woken;
	struct waiter *next;
};

static struct waiter *waiters;

static void unlink_waiter(struct waiter *w)
{
	for (struct waiter **pp = &waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			return;
		}
}

static int wake_bits(struct aspace *as, uint64_t addr, int n, uint32_t bitset)
{
	int woken = 0;

	for (struct waiter **pp = &waiters; *pp && woken < n;) {
		struct waiter *w = *pp;
		if (w->as == as && w->addr == addr && (w->bitset & bitset)) {
			*pp = w->next;
			w->woken = true;
			wake_thread(w->t);
			woken++;
		} else {
			pp = &w->next;
		}
	}
	return woken;
}

int futex_wake(struct aspace *as, uint64_t addr, int n)
{
	return wake_bits(as, addr, n, ~0U);
}

static long futex_wait(uint64_t addr, uint32_t val, uint64_t deadline, uint32_t bitset)
{
	struct thread *t = cur_thread();
	struct waiter w = {.as = t->proc->as, .addr = addr, .bitset = bitset, .t = t};
	uint32_t cur;
	long err = 0;

	if (!bitset)
		return -EINVAL;
	if (copy_from_user(&cur, (void *)addr, 4))
		return -EFAULT;
	if (cur != val)
		return -EAGAIN;
		/* The record lives on this stack until we unlink it below (or a waker
	 * does), before returning. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
	w.next = waiters;
	waiters = &w;
#pragma GCC diagnostic pop
	while (!w.woken && !err)
		err = wait_block(NULL, deadline);
	if (!w.woken)
		unlink_waiter(&w);
	if (w.woken)
		return 0;
	return err == -EINTR ? -ERESTARTSYS : err;
}

/* Move waiters of addr beyond the first n_wake to addr2. */
static long futex_requeue(uint64_t addr, uint64_t addr2, int n_wake, int n_move, bool cmp,
                          uint32_t val)
{
	struct aspace *as = cur_proc()->as;
	uint32_t cur;
	int moved = 0, woken;

	if (cmp) {
		if (copy_from_user(&cur, (void *)addr, 4))
			return -EFAULT;
		if (cur != val)
			return -EAGAIN;
	}
	woken = futex_wake(as, addr, n_wake);
	for (struct waiter *w = waiters; w && moved < n_move; w = w->next)
		if (w->as == as && w->addr == addr) {
			w->addr = addr2;
			moved++;
		}
	return woken + moved;
}

static long timeout_to_deadline(long uts, bool absolute, bool realtime, uint64_t *deadline)
{
	int64_t ts[2];
	uint64_t ns;

	*deadline = 0;
	if (!uts)
		return 0;
	if (copy_from_user(ts, (void *)uts, sizeof(ts)))
		return -EFAULT;
	if (ts[0] < 0 || ts[1] < 0 || ts[1] >= 1000000000)
		return -EINVAL;
	ns = (uint64_t)ts[0] > (1ULL << 33) ? (1ULL << 63) : (uint64_t)ts[0] * 1000000000ULL;
	ns += (uint64_t)ts[1];
	if (!absolute)
		*deadline = time_monotonic_ns() + ns;
	else if (realtime)
		*deadline =
		    ns > time_realtime_ns() ? time_monotonic_ns() + (ns - time_realtime_ns()) : 1;
	else
		*deadline = ns ? ns : 1;
	return 0;
}

SYSCALL_DEFINE(futex)
{
	uint64_t addr = (uint64_t)a0, deadline;
	int op = (int)a1 & FUTEX_CMD_MASK;
	bool realtime = a1 & FUTEX_CLOCK_REALTIME;
	uint32_t val = (uint32_t)a2;
	long err;

	if (addr & 3)
		return -EINVAL;
	switch (op) {
	case FUTEX_WAIT:
		err = timeout_to_deadline(a3, false, false, &deadline);
		return err ? err : futex_wait(addr, val, deadline, ~0U);
	case FUTEX_WAIT_BITSET:
		err = timeout_to_deadline(a3, true, realtime, &deadline);
		return err ? err : futex_wait(addr, val, deadline, (uint32_t)a5);
	case FUTEX_WAKE:
		return futex_wake(cur_proc()->as, addr, (int)val);
	case FUTEX_WAKE_BITSET:
		if (!(uint32_t)a5)
			return -EINVAL;
		return wake_bits(cur_proc()->as, addr, (int)val, (uint32_t)a5);
	case FUTEX_REQUEUE:
		return futex_requeue(addr, (uint64_t)a4, (int)val, (int)a3, false, 0);
	case FUTEX_CMP_REQUEUE:
		return futex_requeue(addr, (uint64_t)a4, (int)val, (int)a3, true, (uint32_t)a5);
	default:
		return -ENOSYS;
	}
}

SYSCALL_DEFINE(get_robust_list)
{
	struct thread *t = cur_thread();
	uint64_t len = 24;

	if (a0 && a0 != t->tid)
		return -EPERM;
	if (copy_to_user((void *)a1, &t->robust_list, 8) || copy_to_user((void *)a2, &len, 8))
		return -EFAULT;
	return 0;
}
