// SPDX-License-Identifier: MIT
/*
 * capsets: the effective, permitted and inheritable sets capget gives (and
 * /proc/self/status's Cap* lines, which must agree) for root and for uid
 * 1000 through the changes that move them on Linux: setfsuid, seteuid and
 * back, capset of fewer capabilities and of inheritable ones, setuid to
 * the user, exec as root and as the user. Sets are printed against the
 * bounding set (a container's host has fewer), one line per result, so
 * the guest's output is compared with the same program's on the host.
 */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errname.h"

#define USER 1000

static uint64_t status_cap(const char *key)
{
	char line[256];
	unsigned long long v = 0;
	FILE *f = fopen("/proc/self/status", "r");
	size_t n = strlen(key);

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			sscanf(line + n + 1, "%llx", &v);
	if (f)
		fclose(f);
	return v;
}

/* v against the bounding set: all, none, all-{missing} or {bits}. */
static void show_set(const char *name, uint64_t v, uint64_t bnd)
{
	uint64_t miss = bnd & ~v;
	uint64_t shown =
	    !(v & ~bnd) && __builtin_popcountll(miss) < __builtin_popcountll(v) ? miss : v;
	const char *sep = "";

	printf(" %s=", name);
	if (v == bnd) {
		printf("all");
		return;
	}
	if (!v) {
		printf("none");
		return;
	}
	if (shown != v)
		printf("all-");
	printf("{");
	for (int i = 0; i < 64; i++)
		if (shown & (1ULL << i)) {
			printf("%s%d", sep, i);
			sep = ",";
		}
	printf("}");
}

static int get(pid_t pid, uint64_t set[3])
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, pid};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	set[0] = (uint64_t)d[1].effective << 32 | d[0].effective;
	set[1] = (uint64_t)d[1].permitted << 32 | d[0].permitted;
	set[2] = (uint64_t)d[1].inheritable << 32 | d[0].inheritable;
	return 0;
}

static void show(const char *what)
{
	uint64_t set[3], bnd = status_cap("CapBnd");

	if (get(0, set)) {
		printf("%s: capget %s\n", what, ename(errno));
		return;
	}
	printf("%s: uid %d/%d", what, (int)getuid(), (int)geteuid());
	show_set("eff", set[0], bnd);
	show_set("prm", set[1], bnd);
	show_set("inh", set[2], bnd);
	printf(" status %s\n", status_cap("CapEff") == set[0] && status_cap("CapPrm") == set[1] &&
	                               status_cap("CapInh") == set[2]
	                           ? "agrees"
	                           : "DIFFERS");
}

static void rc(const char *what, long r)
{
	printf("%s: %s\n", what, r < 0 ? ename(errno) : "ok");
}

static long set(uint64_t eff, uint64_t prm, uint64_t inh)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2] = {
	    {(uint32_t)eff, (uint32_t)prm, (uint32_t)inh},
	    {(uint32_t)(eff >> 32), (uint32_t)(prm >> 32), (uint32_t)(inh >> 32)}};

	return syscall(SYS_capset, &h, d);
}

#define B(c) (1ULL << (c))

/* Run fn in a child and wait for it. */
static void in_child(void (*fn)(const char *), const char *self)
{
	pid_t k = fork();

	if (k == 0) {
		fn(self);
		_exit(0);
	}
	waitpid(k, NULL, 0);
}

static void fs_ids(const char *self)
{
	(void)self;
	setfsuid(USER);
	show("setfsuid user");
	setfsuid(0);
	show("setfsuid root");
}

static void eff_ids(const char *self)
{
	(void)self;
	rc("seteuid user", seteuid(USER));
	show("seteuid user");
	rc("seteuid root", seteuid(0));
	show("seteuid root");
	rc("capset fewer", set(B(CAP_SETUID) | B(CAP_NET_BIND_SERVICE),
	                       B(CAP_SETUID) | B(CAP_NET_BIND_SERVICE) | B(CAP_CHOWN), 0));
	show("capset fewer");
	rc("seteuid user again", seteuid(USER));
	show("seteuid user again");
	rc("seteuid root again", seteuid(0));
	show("seteuid root again");
}

static long set_of(pid_t pid)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, pid};
	struct __user_cap_data_struct d[2] = {{0}};

	return syscall(SYS_capset, &h, d);
}

static void inh_then_user(const char *self)
{
	uint64_t s[3], bnd = status_cap("CapBnd");

	if (get(0, s))
		return;
	rc("capset inheritable", set(s[0], s[1], B(CAP_NET_BIND_SERVICE)));
	show("capset inheritable");
	pid_t k = fork();
	if (k == 0) {
		execl(self, self, "show", "exec as root", (char *)NULL);
		_exit(1);
	}
	waitpid(k, NULL, 0);
	rc("setgroups", setgroups(0, NULL));
	rc("setgid", setgid(USER));
	rc("setuid", setuid(USER));
	show("setuid user");
	rc("user raises inheritable", set(0, 0, B(CAP_NET_BIND_SERVICE) | B(CAP_CHOWN)));
	rc("user gets permitted back", set(0, B(CAP_CHOWN), B(CAP_NET_BIND_SERVICE)));
	rc("user capset of root", set_of(getppid()));
	if (get(getppid(), s) == 0) {
		printf("user capget of root:");
		show_set("eff", s[0], bnd);
		show_set("prm", s[1], bnd);
		show_set("inh", s[2], bnd);
		printf("\n");
	}
	execl(self, self, "show", "exec as user", (char *)NULL);
}

static void probes(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, -1};
	struct __user_cap_data_struct d[2];

	rc("capget no data, bad pid", syscall(SYS_capget, &h, NULL));
	rc("capget pid -1", syscall(SYS_capget, &h, d));
	h = (struct __user_cap_header_struct){_LINUX_CAPABILITY_VERSION_3, 999999};
	rc("capget no such pid", syscall(SYS_capget, &h, d));
	h = (struct __user_cap_header_struct){_LINUX_CAPABILITY_VERSION_1, 0};
	memset(d, 0x5a, sizeof(d));
	rc("capget v1", syscall(SYS_capget, &h, d));
	printf("capget v1: second word %s\n",
	       d[1].effective == 0x5a5a5a5a ? "untouched" : "written");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 3 && !strcmp(argv[1], "show")) {
		show(argv[2]);
		return 0;
	}
	if (getuid() != 0) {
		printf("capsets: run it as root\n");
		return 1;
	}
	show("root");
	probes();
	in_child(fs_ids, argv[0]);
	in_child(eff_ids, argv[0]);
	in_child(inh_then_user, argv[0]);
	show("root at the end");
	printf("capsets done\n");
	return 0;
}
