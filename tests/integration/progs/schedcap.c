// SPDX-License-Identifier: MIT
/*
 * schedcap: the process calls Chromium makes before it forks its zygote and
 * starts its GPU and renderer processes, as Linux answers them (run as root
 * on the host, the same text must come out): capget/capset, getpriority/
 * setpriority on processes and threads, sched_setaffinity, membarrier, and
 * the st_nlink of /proc/self/task (2 + threads: how Chromium knows it is
 * single-threaded). Exits 0 if every check passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sockcheck.h"

static int capget3(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};

	return (int)syscall(SYS_capget, &h, d);
}

static int capset3(uint32_t eff, uint32_t perm)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2] = {{eff, perm, 0}, {0, 0, 0}};

	return (int)syscall(SYS_capset, &h, d);
}

/* In a child: drop capabilities, check what is left, exec to get them back. */
static int cap_child(const char *self)
{
	struct __user_cap_data_struct d[2];
	uint32_t bind = 1u << CAP_NET_BIND_SERVICE, chown = 1u << CAP_CHOWN;

	checkv("capset: keep two", capset3(bind, bind | chown), 0);
	checkv("capget: after", capget3(d), 0);
	check("capget: what is left", d[0].effective == bind && d[0].permitted == (bind | chown) &&
	                                  !d[1].effective && !d[1].permitted);
	check_err("capset: get one back", capset3(bind | (1u << CAP_SYS_ADMIN), bind | chown),
	          EPERM);
	check_err("capset: effective beyond permitted", capset3(bind | chown, bind), EPERM);
	checkv("capset: drop all", capset3(0, 0), 0);
	checkv("capget: none", capget3(d) || d[0].effective || d[0].permitted || d[1].permitted, 0);
	fflush(stdout);
	execl(self, self, "caps-after-exec", (char *)NULL);
	return 1;
}

static void caps(const char *self)
{
	struct __user_cap_header_struct h = {0x12345678, 0};
	struct __user_cap_data_struct d[2];
	pid_t pid;
	int st;

	checkv("capget: probing the version", syscall(SYS_capget, &h, NULL), 0);
	checkv("capget: the version it wants", h.version, _LINUX_CAPABILITY_VERSION_3);
	h.version = 0x12345678;
	check_err("capget: unknown version", syscall(SYS_capget, &h, d), EINVAL);
	checkv("capget: root", capget3(d), 0);
	check("capget: root has CAP_SYS_ADMIN", d[0].effective & (1u << CAP_SYS_ADMIN));
	h = (struct __user_cap_header_struct){_LINUX_CAPABILITY_VERSION_3, 999999};
	check_err("capget: no such process", syscall(SYS_capget, &h, d), ESRCH);
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(cap_child(self));
	st = wait_child(pid);
	checkv("caps: child", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	checkv("capget: the parent keeps its own", capget3(d) || !(d[0].effective & 1), 0);
}

static void *spin_thread(void *arg)
{
	volatile int *stop = arg;

	*(volatile pid_t *)(stop + 1) = (pid_t)syscall(SYS_gettid);
	while (!*stop)
		sched_yield();
	return NULL;
}

static long task_nlink(void)
{
	struct stat st;

	return stat("/proc/self/task", &st) ? -1 : (long)st.st_nlink;
}

static void priorities_and_threads(void)
{
	int ctl[2] = {0, 0};
	pthread_t th;

	errno = 0;
	checkv("getpriority: self", getpriority(PRIO_PROCESS, 0), 0);
	checkv("setpriority: self", setpriority(PRIO_PROCESS, 0, 5), 0);
	checkv("getpriority: after", getpriority(PRIO_PROCESS, 0), 5);
	checkv("getpriority: by pid", getpriority(PRIO_PROCESS, getpid()), 5);
	checkv("raw getpriority: 20 - nice", syscall(SYS_getpriority, PRIO_PROCESS, 0), 15);
	checkv("setpriority: clamped", setpriority(PRIO_PROCESS, 0, 100), 0);
	checkv("getpriority: 19", getpriority(PRIO_PROCESS, 0), 19);
	check_err("setpriority: no such process", setpriority(PRIO_PROCESS, 999999, 1), ESRCH);
	check_err("getpriority: bad which", getpriority(7, 0), EINVAL);
	checkv("setpriority: back", setpriority(PRIO_PROCESS, 0, 0), 0);
	checkv("/proc/self/task nlink: one thread", task_nlink(), 3);
	pthread_create(&th, NULL, spin_thread, ctl);
	while (!*(volatile int *)&ctl[1])
		sched_yield();
	checkv("/proc/self/task nlink: two threads", task_nlink(), 4);
	/* A thread's id names it to setpriority (Chromium's thread priorities). */
	checkv("setpriority: a thread", setpriority(PRIO_PROCESS, ctl[1], 0), 0);
	ctl[0] = 1;
	pthread_join(th, NULL);
	/* pthread_join returns when the kernel clears the thread's tid, which
	 * is before Linux takes the task out of /proc/self/task: wait for that,
	 * a second at most. */
	for (int i = 0; i < 1000 && task_nlink() != 3; i++)
		usleep(1000);
	checkv("/proc/self/task nlink: one again", task_nlink(), 3);
}

static void affinity_and_barriers(void)
{
	cpu_set_t set;
	long mb;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	checkv("sched_setaffinity: CPU 0", sched_setaffinity(0, sizeof(set), &set), 0);
	checkv("sched_getaffinity", sched_getaffinity(0, sizeof(set), &set), 0);
	check("sched_getaffinity: has CPU 0", CPU_ISSET(0, &set));
	CPU_ZERO(&set);
	CPU_SET(1023, &set);
	check_err("sched_setaffinity: no such CPU", sched_setaffinity(0, sizeof(set), &set),
	          EINVAL);
	check_err("sched_setaffinity: no such process",
	          sched_setaffinity(999999, sizeof(set), &set), ESRCH);
	mb = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	check("membarrier: query", mb > 0 && (mb & MEMBARRIER_CMD_PRIVATE_EXPEDITED));
	checkv("membarrier: global", syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0), 0);
	check_err("membarrier: private unregistered",
	          syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0), EPERM);
	checkv("membarrier: register",
	       syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0), 0);
	checkv("membarrier: private",
	       syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0), 0);
	check_err("membarrier: two commands", syscall(SYS_membarrier, 3, 0, 0), EINVAL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "caps-after-exec")) {
		struct __user_cap_data_struct d[2];

		check("capget: exec gives root its capabilities back",
		      !capget3(d) && (d[0].effective & (1u << CAP_SYS_ADMIN)));
		return failures ? 1 : 0;
	}
	caps(argv[0]);
	priorities_and_threads();
	affinity_and_barriers();
	printf("schedcap: %s\n", failures ? "FAILED" : "all ok");
	return failures ? 1 : 0;
}
