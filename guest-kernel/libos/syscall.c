/* SPDX-License-Identifier: MIT */
/* The syscall table, built at boot from every SYSCALL_DEFINE, and the count
 * of calls we could not serve (printed at exit with kiln.stats=1). */
#include "errno_k.h"
#include "kcpu.h"
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

extern const struct syscall_entry __syscalls_start[], __syscalls_end[];

void syscall_init(void)
{
	for (const struct syscall_entry *e = __syscalls_start; e < __syscalls_end; e++) {
		if (e->nr < 0 || e->nr >= NR_SYSCALLS || table[e->nr])
			kpanic("syscall table: bad or duplicate entry %ld (%s)", e->nr, e->name);
		table[e->nr] = e->fn;
	}
}

long syscall_dispatch(struct trapframe *tf)
{
	unsigned long nr = tf->rax;

	if (likely(nr < NR_SYSCALLS && table[nr]))
		return table[nr]((long)tf->rdi, (long)tf->rsi, (long)tf->rdx, (long)tf->r10,
		                 (long)tf->r8, (long)tf->r9);
	syscall_count_enosys((long)nr);
	return -ENOSYS;
}

static bool is_restart(uint64_t ret)
{
	return ret >= (uint64_t)-ERESTART_RESTARTBLOCK && ret <= (uint64_t)-ERESTARTSYS;
}

bool exit_to_user(struct trapframe *tf)
{
	struct thread *t = cur_thread();
	bool dirty;

	for (;;) {
		/* An interrupt that came while the library OS ran only set its
		 * bit: serve it now (a timer's signal, a wakeup), or a program
		 * that never blocks might not see it until it next sleeps. */
		if (kcpu0.irq_pending)
			irq_poll();
		if (t->proc->exiting)
			thread_exit(0);
		if (sched_need_resched()) {
			sched_yield_current();
			continue;
		}
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

/* From zpoline_entry: nonzero when the trapframe must be restored in full
 * (a signal handler, execve, a restarted call...). */
long syscall_entry(struct trapframe *tf)
{
	struct thread *t = cur_thread();
	struct proc *p = t->proc;

	tf->error = tf->rax; /* the number, for restarts */
	t->syscall_tf = tf;
	tf->rax = (uint64_t)syscall_dispatch(tf);
	if (likely(!(t->pending | p->shared_pending | t->tf_dirty | p->exiting | kcpu0.irq_pending |
	             sched_need_resched() | is_restart(tf->rax))))
		return 0;
	return exit_to_user(tf);
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

void syscall_print_stats(void)
{
	bool any = false;

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
