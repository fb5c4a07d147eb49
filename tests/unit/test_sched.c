// SPDX-License-Identifier: MIT
/*
 * The process syscalls Chromium needs, on the host: capget/capset
 * (proc/sys_cred.c), get/setpriority, sched_setaffinity and membarrier
 * (proc/sys_sched.c), built with -DKILN_HOSTED against two processes of
 * this test (A with two threads, B in another process group).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* glibc's struct timeval (check.h) stands in for <linux/time.h>'s. */
#include <sys/time.h>
#include <linux/time_types.h>
#define _LINUX_TIME_H
#include "../../guest-kernel/libos/proc/sys_cred.c"
#include "../../guest-kernel/libos/proc/sys_sched.c"
#include "pidns.h"

static struct proc A, B;
static struct thread TA, TA2, TB;

struct proc *proc_find(int pid)
{
	return pid == A.pid ? &A : pid == B.pid ? &B : NULL;
}

struct proc *proc_first(void)
{
	return &A;
}

struct ktimer;

/* (pidns.c's freeze and CPU bound, not exercised here) */
void wake_thread(struct thread *t)
{
}

uint64_t sched_ran_ns(void)
{
	return 0;
}

uint64_t time_monotonic_ns(void)
{
	return 0;
}

void ktimer_add(struct ktimer *kt, uint64_t deadline, void (*fn)(struct ktimer *kt))
{
}

void ktimer_del(struct ktimer *kt)
{
}

void schedule(void)
{
}

void signal_send_proc(struct proc *p, int sig, const struct siginfo_k *info)
{
}

/* User memory is this process's, but for addresses below 4096. */
int copy_from_user(void *dst, const void *usrc, size_t n)
{
	if ((uintptr_t)usrc < 4096)
		return -EFAULT;
	memcpy(dst, usrc, n);
	return 0;
}

int copy_to_user(void *udst, const void *src, size_t n)
{
	if ((uintptr_t)udst < 4096)
		return -EFAULT;
	memcpy(udst, src, n);
	return 0;
}

#define ARGS6(a, b, c, d, e, f, ...) \
	(long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f)
#define SYS(name, ...) sys_##name(ARGS6(__VA_ARGS__, 0, 0, 0, 0, 0, 0))

static void setup(void)
{
	A = (struct proc){.pid = 10, .pgid = 10, .threads = &TA, .next_all = &B};
	B = (struct proc){.pid = 20, .pgid = 20, .threads = &TB};
	TA = (struct thread){.proc = &A, .tid = 10, .next_in_proc = &TA2};
	TA2 = (struct thread){.proc = &A, .tid = 11};
	TB = (struct thread){.proc = &B, .tid = 20};
	asm volatile("wrgsbase %0" ::"r"(&TA));
}

static struct __user_cap_header_struct hdr(uint32_t version, int pid)
{
	return (struct __user_cap_header_struct){version, pid};
}

START_TEST(caps_drop_and_report)
{
	struct __user_cap_header_struct h = hdr(_LINUX_CAPABILITY_VERSION_3, 0);
	struct __user_cap_data_struct d[2], want[2] = {{0x3, 0x7, 0}, {0, 0x1, 0}};

	ck_assert_int_eq(SYS(capget, &h, d), 0);
	ck_assert_uint_eq(d[0].effective, 0xffffffff);
	ck_assert_uint_eq(d[1].permitted, (uint32_t)(CAP_ALL >> 32));
	ck_assert_int_eq(SYS(capset, &h, want), 0);
	ck_assert_int_eq(SYS(capget, &h, d), 0);
	ck_assert_int_eq(memcmp(d, want, sizeof(d)), 0);
	/* Permitted never grows; effective stays within it. */
	want[0].permitted = 0xf;
	ck_assert_int_eq(SYS(capset, &h, want), -EPERM);
	want[0] = (struct __user_cap_data_struct){0x7, 0x3, 0};
	ck_assert_int_eq(SYS(capset, &h, want), -EPERM);
	/* Another process keeps its own; only one's own may be set. */
	h = hdr(_LINUX_CAPABILITY_VERSION_3, 20);
	ck_assert_int_eq(SYS(capget, &h, d), 0);
	ck_assert_uint_eq(d[0].permitted, 0xffffffff);
	ck_assert_int_eq(SYS(capset, &h, want), -EPERM);
}
END_TEST

START_TEST(caps_versions_and_bad_input)
{
	struct __user_cap_header_struct h = hdr(0x1234, 0);
	struct __user_cap_data_struct d[2] = {{0, 0, 0}, {0, 0, 0}};

	ck_assert_int_eq(SYS(capget, &h, NULL), 0); /* a probe */
	ck_assert_uint_eq(h.version, _LINUX_CAPABILITY_VERSION_3);
	h.version = 0x1234;
	ck_assert_int_eq(SYS(capget, &h, d), -EINVAL);
	ck_assert_int_eq(SYS(capget, 16, d), -EFAULT);
	h = hdr(_LINUX_CAPABILITY_VERSION_3, 0);
	ck_assert_int_eq(SYS(capget, &h, 16), -EFAULT);
	ck_assert_int_eq(SYS(capset, &h, 16), -EFAULT);
	h.pid = -1;
	ck_assert_int_eq(SYS(capget, &h, d), -EINVAL);
	h.pid = 999;
	ck_assert_int_eq(SYS(capget, &h, d), -ESRCH);
	/* Version 1 carries the low 32 capabilities only: the rest go. */
	h = hdr(_LINUX_CAPABILITY_VERSION_1, 0);
	d[0] = (struct __user_cap_data_struct){0x1, 0x1, 0};
	ck_assert_int_eq(SYS(capset, &h, d), 0);
	ck_assert_uint_eq(A.cap_dropped[1], CAP_ALL & ~1ULL);
}
END_TEST

START_TEST(priorities)
{
	ck_assert_int_eq(SYS(getpriority, PRIO_PROCESS, 0), 20);
	ck_assert_int_eq(SYS(setpriority, PRIO_PROCESS, 11, 7), 0); /* by a thread's id */
	ck_assert_int_eq(A.nice, 7);
	ck_assert_int_eq(SYS(getpriority, PRIO_PROCESS, 10), 13);
	ck_assert_int_eq(SYS(setpriority, PRIO_PROCESS, 0, -99), 0);
	ck_assert_int_eq(A.nice, -20);
	ck_assert_int_eq(SYS(setpriority, PRIO_PGRP, 20, 3), 0);
	ck_assert_int_eq(B.nice, 3);
	ck_assert_int_eq(SYS(getpriority, PRIO_USER, 0), 40); /* the best of all */
	ck_assert_int_eq(SYS(setpriority, PRIO_PROCESS, 999, 1), -ESRCH);
	ck_assert_int_eq(SYS(getpriority, PRIO_PGRP, 999), -ESRCH);
	ck_assert_int_eq(SYS(getpriority, 3, 0), -EINVAL);
	ck_assert_int_eq(SYS(getpriority, PRIO_PROCESS, -1), -EINVAL);
}
END_TEST

/* A process of a PID namespace (include/kiln/pidns.h) names only its
 * namespace's processes, by local numbers; namespace 0 names all. */
START_TEST(pid_namespaces)
{
	struct __user_cap_header_struct h = hdr(_LINUX_CAPABILITY_VERSION_3, 0);
	struct __user_cap_data_struct d[2];

	B.pid = B.pgid = TB.tid = 3 * KILN_PIDNS_SPAN + 1;
	B.pidns = 3;
	ck_assert_int_eq(SYS(setpriority, PRIO_PROCESS, B.pid, 5), 0); /* from 0: global */
	ck_assert_int_eq(B.nice, 5);
	asm volatile("wrgsbase %0" ::"r"(&TB));
	ck_assert_int_eq(SYS(getpriority, PRIO_PROCESS, 1), 15); /* itself, as pid 1 */
	ck_assert_int_eq(SYS(getpriority, PRIO_PGRP, 1), 15);
	ck_assert_int_eq(SYS(getpriority, PRIO_PROCESS, 10), -ESRCH); /* A is outside */
	ck_assert_int_eq(SYS(getpriority, PRIO_PROCESS, B.pid), -ESRCH);
	ck_assert_int_eq(SYS(setpriority, PRIO_PGRP, 10, 1), -ESRCH);
	h.pid = 10;
	ck_assert_int_eq(SYS(capget, &h, d), -ESRCH);
	h.pid = 1;
	ck_assert_int_eq(SYS(capget, &h, d), 0);
	ck_assert_int_eq(pid_to_user(&B, A.pid), 0);
	ck_assert_int_eq(pid_to_user(&A, B.pid), B.pid);
	ck_assert_int_eq(pid_from_user(&B, KILN_PIDNS_SPAN), 0);
	ck_assert_int_eq(pid_from_user(&B, -1), 0);
}
END_TEST

START_TEST(affinity)
{
	uint8_t mask[128] = {1};

	ck_assert_int_eq(SYS(sched_setaffinity, 0, sizeof(mask), mask), 0);
	ck_assert_int_eq(SYS(sched_setaffinity, 20, 1, mask), 0);
	mask[0] = 2;
	ck_assert_int_eq(SYS(sched_setaffinity, 0, sizeof(mask), mask), -EINVAL);
	ck_assert_int_eq(SYS(sched_setaffinity, 999, sizeof(mask), mask), -ESRCH);
	ck_assert_int_eq(SYS(sched_setaffinity, 0, 0, mask), -EINVAL);
	ck_assert_int_eq(SYS(sched_setaffinity, 0, 8, 16), -EFAULT);
}
END_TEST

START_TEST(barriers)
{
	long q = SYS(membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	ck_assert(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED);
	ck_assert(!(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ)); /* no rseq */
	ck_assert_int_eq(SYS(membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0), 0);
	ck_assert_int_eq(SYS(membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0), -EPERM);
	ck_assert_int_eq(SYS(membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0), 0);
	ck_assert_int_eq(SYS(membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0), 0);
	ck_assert_int_eq(SYS(membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0), -EPERM);
	ck_assert_int_eq(SYS(membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0), -EINVAL);
	ck_assert_int_eq(SYS(membarrier, 3, 0, 0), -EINVAL);
	ck_assert_int_eq(SYS(membarrier, MEMBARRIER_CMD_GLOBAL, 1, 0), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched");
	TCase *t = tcase_create("all");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(t, setup, NULL);
	tcase_add_test(t, caps_drop_and_report);
	tcase_add_test(t, caps_versions_and_bad_input);
	tcase_add_test(t, priorities);
	tcase_add_test(t, pid_namespaces);
	tcase_add_test(t, affinity);
	tcase_add_test(t, barriers);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
