/* SPDX-License-Identifier: MIT */
/*
 * futex(2): wait, wake, requeue, bitsets. A futex is named by its address
 * space and address; a shared one (no FUTEX_PRIVATE_FLAG) in a shared
 * mapping (VMA_SHARED), which other processes may map elsewhere, by the
 * physical address of its word instead (address space NULL): the pages of
 * shared memory stay where they are while mapped. Waiters are a list of
 * on-stack records.
 */
#include <linux/futex.h>

#include "errno_k.h"
#include "futex.h"
#include "ktime.h"
#include "pidns.h"
#include "proc.h"
#include "syscall.h"
#include "uaccess.h"
#include "vm.h"

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

/* What names the futex at addr (see above), in *as and *key. */
static int futex_key(uint64_t addr, bool private, struct aspace **as, uint64_t *key)
{
	struct vma *v;
	uint32_t word;
	uint64_t pa;

	*as = cur_proc()->as;
	*key = addr;
	v = private ? NULL : vm_find_vma(*as, addr);
	if (!v || !(v->flags & VMA_SHARED))
		return 0;
	/* (A read maps the page if this process has not touched it yet.) */
	if ((pa = vm_translate(*as, addr)) == ~0ULL &&
	    (copy_from_user(&word, (void *)addr, 4) || (pa = vm_translate(*as, addr)) == ~0ULL))
		return -EFAULT;
	*as = NULL;
	*key = pa;
	return 0;
}

static long futex_wait(uint64_t addr, bool private, uint32_t val, uint64_t deadline,
                       uint32_t bitset)
{
	struct thread *t = cur_thread();
	struct waiter w = {.bitset = bitset, .t = t};
	uint32_t cur;
	long err = 0;

	if (!bitset)
		return -EINVAL;
	if (copy_from_user(&cur, (void *)addr, 4))
		return -EFAULT;
	if (cur != val)
		return -EAGAIN;
	if (futex_key(addr, private, &w.as, &w.addr))
		return -EFAULT;
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
static long futex_requeue(uint64_t addr, uint64_t addr2, bool private, int n_wake, int n_move,
                          bool cmp, uint32_t val)
{
	struct aspace *as, *as2;
	uint64_t key, key2;
	uint32_t cur;
	int moved = 0, woken;

	if (cmp) {
		if (copy_from_user(&cur, (void *)addr, 4))
			return -EFAULT;
		if (cur != val)
			return -EAGAIN;
	}
	if ((addr2 & 3) || futex_key(addr, private, &as, &key) ||
	    futex_key(addr2, private, &as2, &key2))
		return (addr2 & 3) ? -EINVAL : -EFAULT;
	woken = futex_wake(as, key, n_wake);
	for (struct waiter *w = waiters; w && moved < n_move; w = w->next)
		if (w->as == as && w->addr == key) {
			w->as = as2;
			w->addr = key2;
			moved++;
		}
	return woken + moved;
}

static long futex_wake_key(uint64_t addr, bool private, int n, uint32_t bitset)
{
	struct aspace *as;
	uint64_t key;

	if (futex_key(addr, private, &as, &key))
		return -EFAULT;
	return wake_bits(as, key, n, bitset);
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
	bool realtime = a1 & FUTEX_CLOCK_REALTIME, private = a1 & FUTEX_PRIVATE_FLAG;
	uint32_t val = (uint32_t)a2;
	long err;

	if (addr & 3)
		return -EINVAL;
	switch (op) {
	case FUTEX_WAIT:
		err = timeout_to_deadline(a3, false, false, &deadline);
		return err ? err : futex_wait(addr, private, val, deadline, ~0U);
	case FUTEX_WAIT_BITSET:
		err = timeout_to_deadline(a3, true, realtime, &deadline);
		return err ? err : futex_wait(addr, private, val, deadline, (uint32_t)a5);
	case FUTEX_WAKE:
		return futex_wake_key(addr, private, (int)val, ~0U);
	case FUTEX_WAKE_BITSET:
		if (!(uint32_t)a5)
			return -EINVAL;
		return futex_wake_key(addr, private, (int)val, (uint32_t)a5);
	case FUTEX_REQUEUE:
		return futex_requeue(addr, (uint64_t)a4, private, (int)val, (int)a3, false, 0);
	case FUTEX_CMP_REQUEUE:
		return futex_requeue(addr, (uint64_t)a4, private, (int)val, (int)a3, true,
		                     (uint32_t)a5);
	default:
		return -ENOSYS;
	}
}

SYSCALL_DEFINE(get_robust_list)
{
	struct thread *t = cur_thread();
	uint64_t len = 24;

	if (a0 && pid_from_user(t->proc, (int)a0) != t->tid)
		return -EPERM;
	if (copy_to_user((void *)a1, &t->robust_list, 8) || copy_to_user((void *)a2, &len, 8))
		return -EFAULT;
	return 0;
}
