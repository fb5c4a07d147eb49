/* SPDX-License-Identifier: MIT */
/* The syscall table, built at boot from every SYSCALL_DEFINE, the count of
 * calls we could not serve and, with kiln.stats=1, of every call and trap
 * and the time they took (printed at exit); with kiln.strace=1 a console
 * line per call, as it returns (for finding what a program trips on). */
#include "errno_k.h"
#include "kcpu.h"
#include "ktime.h"
#include "pidns.h"
#include "printk.h"
#include "proc.h"
#include "sched.h"
#include "signal_k.h"
#include "trapframe.h"
#include "syscall.h"
#include "syscall_names.h"

#define NR_SYSCALLS 512

static syscall_fn table[NR_SYSCALLS];
static uint32_t enosys[NR_SYSCALLS];
static uint32_t enosys_out_of_range;
static long last_out_of_range;
/* kiln.stats=1: calls and TSC ticks per syscall (blocked time included),
 * traps and ticks per kind. */
extern bool kiln_stats;
static uint32_t calls[NR_SYSCALLS];
static uint64_t ticks[NR_SYSCALLS];
static uint32_t trap_calls[STATS_TRAP_KINDS];
static uint64_t trap_ticks[STATS_TRAP_KINDS];
static const char *name_of(long nr);

/* A call that returned ret; with kiln.strace=2 each call as it starts, too
 * (ret 1: a call that blocks shows). */
unsigned int kiln_strace;

static void trace(unsigned long nr, const struct trapframe *tf, long ret, bool start)
{
	struct thread *t = cur_thread();

	if (start)
		kprintf("kiln: strace: %d/%d %s(%#lx, %#lx, %#lx, %#lx, %#lx) ...\n", t->proc->pid,
		        t->tid, name_of((long)nr), (unsigned long)tf->rdi, (unsigned long)tf->rsi,
		        (unsigned long)tf->rdx, (unsigned long)tf->r10, (unsigned long)tf->r8);
	else
		kprintf("kiln: strace: %d/%d %s(%#lx, %#lx, %#lx, %#lx, %#lx) = %ld\n",
		        t->proc->pid, t->tid, name_of((long)nr), (unsigned long)tf->rdi,
		        (unsigned long)tf->rsi, (unsigned long)tf->rdx, (unsigned long)tf->r10,
		        (unsigned long)tf->r8, ret);
}

extern const struct syscall_entry __syscalls_start[], __syscalls_end[];

void syscall_init(void)
{
	for (const struct syscall_entry *e = __syscalls_start; e < __syscalls_end; e++) {
		if (e->nr < 0 || e->nr >= NR_SYSCALLS || table[e->nr])
			kpanic("syscall table: bad or duplicate entry %ld (%s)", e->nr, e->name);
		table[e->nr] = e->fn;
	}
}

static long call_counted(syscall_fn fn, unsigned long nr, struct trapframe *tf)
{
	uint64_t t0 = rdtsc();
	long ret;

	if (kiln_strace > 1)
		trace(nr, tf, 0, true);
	ret = fn((long)tf->rdi, (long)tf->rsi, (long)tf->rdx, (long)tf->r10, (long)tf->r8,
	         (long)tf->r9);

	calls[nr]++;
	ticks[nr] += rdtsc() - t0;
	if (kiln_strace)
		trace(nr, tf, ret, false);
	return ret;
}

long syscall_dispatch(struct trapframe *tf)
{
	unsigned long nr = tf->rax;

	if (likely(nr < NR_SYSCALLS && table[nr])) {
		if (unlikely(kiln_stats | kiln_strace))
			return call_counted(table[nr], nr, tf);
		return table[nr]((long)tf->rdi, (long)tf->rsi, (long)tf->rdx, (long)tf->r10,
		                 (long)tf->r8, (long)tf->r9);
	}
	if (kiln_strace)
		trace(nr, tf, -ENOSYS, false);
	syscall_count_enosys((long)nr);
	return -ENOSYS;
}

void stats_trap(enum stats_trap kind, uint64_t since)
{
	trap_calls[kind]++;
	trap_ticks[kind] += rdtsc() - since;
}

static bool is_restart(uint64_t ret)
{
	return ret >= (uint64_t)-ERESTART_RESTARTBLOCK && ret <= (uint64_t)-ERESTARTSYS;
}

bool exit_to_user(struct trapframe *tf)
{
	struct thread *t = cur_thread();
	uint64_t until;
	bool dirty;

	for (;;) {
		/* An interrupt that came while the library OS ran only set its
		 * bit: serve it now (a timer's signal, a wakeup), or a program
		 * that never blocks might not see it until it next sleeps. */
		if (kcpu0.irq_pending)
			irq_poll();
		if (t->proc->exiting)
			thread_exit(0);
		if (pidns_frozen(t)) {
			pidns_freeze_wait(t);
			continue;
		}
		/* (a signal first: its handler runs, the next return waits) */
		if (!signal_pending(t) && (until = pidns_throttled(t))) {
			wait_block(NULL, until);
			continue;
		}
		if (sched_need_resched()) {
			sched_yield_current();
			continue;
		}
		/* An interrupt that came after the poll above (the deadline
		 * armed there, or by pidns_throttled, may have fired already):
		 * round again here. (trap_resume would catch it too, and
		 * any later one, but by a longer way.) */
		if (__atomic_load_n(&kcpu0.irq_pending, __ATOMIC_SEQ_CST))
			continue;
		if (signal_pending(t))
			signal_deliver(tf);
		break;
	}
	if (t->restore_sigmask) { /* sigsuspend/ppoll and no handler ran */
		t->sigmask = t->saved_sigmask;
		t->restore_sigmask = false;
	}
	if (tf->vector == TF_SYSCALL && is_restart(tf->rax)) {
		syscall_restart(tf);
		t->tf_dirty = true;
	}
	dirty = t->tf_dirty;
	t->tf_dirty = false;
	return dirty;
}

/* From zpoline_entry, which then resumes the program by trap_resume. The
 * exit work is skipped when there is none (the pending interrupts looked at
 * last: sched_need_resched may arm the timer; one that comes later is
 * trap_resume's). */
void syscall_entry(struct trapframe *tf)
{
	struct thread *t = cur_thread();
	struct proc *p = t->proc;
	bool resched;

	tf->error = tf->rax; /* the number, for restarts */
	t->syscall_tf = tf;
	tf->rax = (uint64_t)syscall_dispatch(tf);
	/* (the pending bits last: sched_need_resched may arm the timer) */
	resched = sched_need_resched();
	if (likely(!(t->pending | p->shared_pending | t->tf_dirty | p->exiting | resched |
	             is_restart(tf->rax) | __atomic_load_n(&kcpu0.irq_pending, __ATOMIC_SEQ_CST))))
		return;
	exit_to_user(tf);
}

void syscall_count_enosys(long nr)
{
	if ((unsigned long)nr < NR_SYSCALLS) {
		enosys[nr]++;
	} else {
		enosys_out_of_range++;
		last_out_of_range = nr;
	}
}

static const char *name_of(long nr)
{
	for (unsigned i = 0; i < ARRAY_SIZE(syscall_names); i++)
		if (syscall_names[i].nr == nr)
			return syscall_names[i].name;
	return "?";
}

static const char *const trap_names[STATS_TRAP_KINDS] = {
    [STATS_TRAP_FIRST_SYSCALL] = "first run of a syscall site (+ call)",
    [STATS_TRAP_BAD_SYSCALL] = "syscall number out of range",
    [STATS_TRAP_FAULT_FILL] = "page fault: lazy memory",
    [STATS_TRAP_FAULT_COPY] = "page fault: write to a borrowed page",
    [STATS_TRAP_FAULT_STACK] = "page fault: stack",
    [STATS_TRAP_FAULT_KERNEL] = "page fault: in a user copy",
    [STATS_TRAP_SIGNAL] = "a program's fault (signal)",
    [STATS_TRAP_IRQ] = "interrupt in program code",
};

/* Calls and traps, the costliest first (microseconds in total). */
static void print_counts(void)
{
	static bool shown[NR_SYSCALLS];
	uint64_t khz = time_tsc_to_ns(1000000) ? 1000000000000ULL / time_tsc_to_ns(1000000) : 1;
	uint64_t total = 0, n = 0;

	for (int k = 0; k < STATS_TRAP_KINDS; k++)
		if (trap_calls[k])
			kprintf("kiln: traps: %-38s %8u %10lu us\n", trap_names[k], trap_calls[k],
			        (unsigned long)(trap_ticks[k] * 1000 / khz));
	for (long nr = 0; nr < NR_SYSCALLS; nr++) {
		total += ticks[nr];
		n += calls[nr];
	}
	kprintf("kiln: syscalls: %lu calls, %lu us (name calls us)\n", (unsigned long)n,
	        (unsigned long)(total * 1000 / khz));
	for (;;) {
		long best = -1;

		for (long nr = 0; nr < NR_SYSCALLS; nr++)
			if (calls[nr] && !shown[nr] && (best < 0 || ticks[nr] > ticks[best]))
				best = nr;
		if (best < 0)
			break;
		shown[best] = true;
		kprintf("kiln:   %-20s %8u %10lu\n", name_of(best), calls[best],
		        (unsigned long)(ticks[best] * 1000 / khz));
	}
}

void syscall_print_stats(void)
{
	bool any = false;

	print_counts();

	for (long nr = 0; nr < NR_SYSCALLS; nr++) {
		if (!enosys[nr])
			continue;
		if (!any)
			kprintf("kiln: unimplemented syscalls (number name calls):\n");
		any = true;
		kprintf("kiln:   %ld %s %u\n", nr, name_of(nr), enosys[nr]);
	}
	if (enosys_out_of_range) {
		if (!any)
			kprintf("kiln: unimplemented syscalls (number name calls):\n");
		any = true;
		kprintf("kiln:   out of range (last %ld) %u\n", last_out_of_range,
		        enosys_out_of_range);
	}
	if (!any)
		kprintf("kiln: unimplemented syscalls: none\n");
}
