/* SPDX-License-Identifier: MIT */
/*
 * Seccomp filters, one per kind of thread (libseccomp), each loaded by the
 * thread itself: any call not on its list kills the whole process
 * (SCMP_ACT_KILL_PROCESS; --jail-seccomp log lets it through and logs it).
 * The lists are what the test suites made each kind call, under strace
 * (tools/jail/seccomp_profile.sh) and under SCMP_ACT_LOG, plus the few calls
 * of paths the tests do not take that are named where they are listed.
 *
 * Everywhere: no executable memory (mmap and mprotect without PROT_EXEC);
 * clone only for threads and only where threads are started (clone3, whose
 * flags a filter cannot read, gets ENOSYS and glibc falls back to clone);
 * sockets only AF_UNIX (main). setresuid,
 * setresgid and setgroups are on every list: glibc runs them on each
 * thread when the process drops to the jail's ids, and a thread may have
 * loaded its filter before that; afterwards they can change nothing.
 * Threads a filtered thread starts inherit its filter too, so the main
 * thread's list holds what the snapshot workers it starts call.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../vm.h"
#include "jail.h"

/* What every thread of kiln-vmm calls: glibc's malloc, stdio (stderr),
 * futexes, signal masks and returns, raise(), thread exit and the setxid
 * broadcast. mmap and mprotect are added with conditions in build(). */
#define COMMON                                                                                  \
	"futex", "write", "madvise", "munmap", "brk", "rt_sigprocmask", "rt_sigreturn",         \
	    "restart_syscall", "exit", "exit_group", "getpid", "gettid", "tgkill", "setresuid", \
	    "setresgid", "setgroups"

static const char *const main_calls[] = {
    COMMON,
    /* libev; the API socket and vsock's host side (AF_UNIX sockets only,
     * see build()); a guest's connections to UDS_PATH_PORT */
    "epoll_wait", "epoll_ctl", "read", "readv", "writev", "recvfrom", "sendto", "sendmsg",
    "accept4", "connect", "shutdown", "fcntl", "poll", "close",
    /* a terminal console: SIGWINCH's watcher, started once the guest
     * asks for the window size (libev's signal pipe comes with it) */
    "rt_sigaction", "pipe2",
    /* KVM state for pause and snapshots; vCPU kicks are tgkill */
    "ioctl",
    /* snapshots: files in the jail's writable directory, /proc/self; the
     * compression threads it starts; mkdir for the image-id cache (which
     * is out of reach in the jail: it fails) */
    "openat", "newfstatat", "lseek", "pread64", "pwrite64", "fsync", "fdatasync", "rename",
    "unlink", "mkdir", "getrandom", "mremap", "rseq", "set_robust_list"};

static const char *const vcpu_calls[] = {
    COMMON,
    /* KVM_RUN, the exits' KVM calls and late RAM slots; the guest's RAM
     * populate requests are madvise; the rng device's bytes */
    "ioctl", "getrandom"};

static const char *const blk_calls[] = {COMMON, "preadv", "pwritev", "fdatasync"};

static const char *const uffd_calls[] = {COMMON, "poll", "read", "ioctl", "close"};

/* Restore's memory loaders and the chunk checker, and the threads they
 * start. */
static const char *const loader_calls[] = {COMMON,  "poll",           "read",   "pread64",
                                           "ioctl", "close",          "openat", "setpriority",
                                           "rseq",  "set_robust_list"};

static const char *const outer_calls[] = {"wait4",        "rt_sigtimedwait", "kill",
                                          "tgkill",       "getpid",          "gettid",
                                          "write",        "exit_group",      "exit",
                                          "rmdir",        "openat",          "read",
                                          "close",        "rt_sigprocmask",  "rt_sigaction",
                                          "rt_sigreturn", "restart_syscall", "clock_nanosleep"};

static const struct {
	const char *name;
	const char *const *calls;
	int n;
} lists[JAIL_T_MAX] = {
#define L(k, nm, a) [k] = {nm, a, (int)(sizeof(a) / sizeof(a[0]))}
    L(JAIL_T_MAIN, "kiln-vmm", main_calls),      L(JAIL_T_VCPU, "kiln-vcpu", vcpu_calls),
    L(JAIL_T_BLK, "kiln-blk", blk_calls),        L(JAIL_T_UFFD, "kiln-uffd", uffd_calls),
    L(JAIL_T_LOADER, "kiln-load", loader_calls), L(JAIL_T_OUTER, "kiln-jail", outer_calls),
#undef L
};

/* System calls a kind's filter lets through: its list, mmap and mprotect
 * (conditions), clone (a condition) for main and loaders, main's socket;
 * clone3's ENOSYS not counted. */
static int filter_size(enum jail_thread kind)
{
	if (kind == JAIL_T_OUTER)
		return lists[kind].n;
	return lists[kind].n + 2 + (kind == JAIL_T_MAIN || kind == JAIL_T_LOADER) +
	       (kind == JAIL_T_MAIN);
}

void jail_describe(FILE *f, const struct jail_cfg *j)
{
	if (j->off) {
		fprintf(f, "kiln-vmm: jail: off (--no-jail)\n");
		return;
	}
	if (j->active)
		fprintf(f,
		        "kiln-vmm: jail: uid and gid %u; pid, mount, network, ipc and uts "
		        "namespaces; ",
		        j->id);
	else
		fprintf(f, "kiln-vmm: jail: not root: %s; ",
		        j->userns ? "a user namespace" : "no namespaces");
	fprintf(f, "seccomp (%s) system calls allowed per thread:",
	        j->seccomp == JAIL_SECCOMP_LOG ? "log" : "kill");
	for (int k = 0; k < JAIL_T_MAX; k++)
		fprintf(f, " %s %d", lists[k].name, filter_size(k));
	fputc('\n', f);
}

static int build(scmp_filter_ctx ctx, enum jail_thread kind)
{
	int err = 0;

	for (int i = 0; i < lists[kind].n && !err; i++) {
		int nr = seccomp_syscall_resolve_name(lists[kind].calls[i]);

		if (nr != __NR_SCMP_ERROR)
			err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
	}
	if (err || kind == JAIL_T_OUTER)
		return err;
	err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
	                       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
		                       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* The two kinds that start threads. */
	if (!err && (kind == JAIL_T_MAIN || kind == JAIL_T_LOADER))
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
		                       SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
	if (!err && (kind == JAIL_T_MAIN || kind == JAIL_T_LOADER))
		err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (!err && kind == JAIL_T_MAIN)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
		                       SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	return err;
}

void jail_thread(struct vm *vm, enum jail_thread kind)
{
	const struct jail_cfg *j = vm ? &vm->cfg.jail : NULL;
	enum jail_seccomp mode = j ? j->seccomp : JAIL_SECCOMP_KILL;
	scmp_filter_ctx ctx;
	int err;

	if ((j && j->off) || mode == JAIL_SECCOMP_OFF)
		return;
	if (kind != JAIL_T_MAIN && kind != JAIL_T_OUTER)
		pthread_setname_np(pthread_self(), lists[kind].name);
	ctx = seccomp_init(mode == JAIL_SECCOMP_LOG ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS);
	if (!ctx) {
		fprintf(stderr, "kiln-vmm: jail: seccomp_init failed\n");
		exit(1);
	}
	err = build(ctx, kind);
	err = err ?: seccomp_load(ctx);
	seccomp_release(ctx);
	if (err) {
		fprintf(stderr, "kiln-vmm: jail: loading the %s thread's seccomp filter: %s\n",
		        lists[kind].name, strerror(-err));
		exit(1);
	}
	if (vm && kind == JAIL_T_MAIN)
		vm->cfg.jail.filtered = true;
}

/* Called from the main loop when KILN_VMM_TEST_SECCOMP is set: kexec_load
 * is on no list, so this must never return. Only ever a self-kill: it is
 * refused unless this process's own filter is on. */
void jail_test_denied(struct vm *vm)
{
	if (!vm->cfg.jail.filtered || vm->cfg.jail.seccomp != JAIL_SECCOMP_KILL) {
		fprintf(stderr, "kiln-vmm: KILN_VMM_TEST_SECCOMP: refused: no seccomp filter that "
		                "kills is on\n");
		return;
	}
	fprintf(stderr, "kiln-vmm: KILN_VMM_TEST_SECCOMP: calling kexec_load, which no filter "
	                "allows\n");
	fflush(stderr);
	syscall(SYS_kexec_load, 0, 0, NULL, 0);
	fprintf(stderr, "kiln-vmm: KILN_VMM_TEST_SECCOMP: kexec_load returned: the filter is "
	                "not working\n");
	exit(1);
}
