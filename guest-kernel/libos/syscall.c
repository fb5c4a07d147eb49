/* SPDX-License-Identifier: MIT */
/* The syscall table, built at boot from every SYSCALL_DEFINE, and the count
 * of calls we could not serve (printed at exit with kiln.stats=1). */
#include "printk.h"
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

long syscall_dispatch(struct syscall_args *a)
{
	unsigned long nr = (unsigned long)a->nr;

	if (likely(nr < NR_SYSCALLS && table[nr]))
		return table[nr](a->a0, a->a1, a->a2, a->a3, a->a4, a->a5);
	syscall_count_enosys(a->nr);
	return -ENOSYS;
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
