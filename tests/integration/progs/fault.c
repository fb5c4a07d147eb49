// SPDX-License-Identifier: MIT
/*
 * fault MODE: misbehave in one way, to check that the kernel turns each
 * fault into the right signal (and the VMM into status 128 + signal), and
 * that unknown system calls fail with ENOSYS instead of killing anything.
 *
 *   null        write through a NULL pointer      SIGSEGV (139)
 *   ud2         execute ud2                        SIGILL  (132)
 *   wild        jump to 0x12345678000              SIGSEGV (139)
 *   div0        integer division by zero           SIGFPE  (136)
 *   abort       abort()                            SIGABRT (134)
 *   badsyscall  syscall 999                        "ENOSYS ok", status 0
 *   bigsyscall  syscall 0x7fffffff                 "ENOSYS ok", status 0
 *   negsyscall  syscall -1                         "ENOSYS ok", status 0
 *   deepstack   recurse through 6 MiB of stack     "deep stack ok", status 0
 *               (the stack grows on faults, below the 8 MiB limit)
 *   stackoverflow  recurse without end             SIGSEGV (139)
 *   wildsp      spin with RSP at 0x12345678000     lives on, as on Linux
 *               while another process runs         (kiln resumes a preempted
 *                                                  program without its stack)
 *   step        a signal handler sets TF, the      "5 single-step traps"
 *               SIGTRAP handler keeps it 4 times   (the trap of a program that
 *                                                  resumes with TF is its own)
 *
 * The syscall modes try both glibc's syscall() and a bare `syscall`
 * instruction, as they are different call sites for the kernel to handle,
 * each both on its first run and rewritten into a call.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static long raw_syscall0(long nr)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "0"(nr) : "rcx", "r11", "memory");
	return ret;
}

/* Each site three times: its first run, then the rewritten site (which a
 * stale TLB entry can hide from the second run, see vm_text.c). */
static int expect_enosys(long nr)
{
	long r;

	for (int run = 0; run < 3; run++) {
		errno = 0;
		r = syscall(nr);
		if (r != -1 || errno != ENOSYS) {
			printf("syscall(%#lx) via libc returned %ld, errno %d (%s); expected -1, "
			       "ENOSYS\n",
			       (unsigned long)nr, r, errno, strerror(errno));
			return 1;
		}
		r = raw_syscall0(nr);
		if (r != -ENOSYS) {
			printf("raw syscall %#lx returned %ld; expected %d (-ENOSYS)\n",
			       (unsigned long)nr, r, -ENOSYS);
			return 1;
		}
	}
	printf("ENOSYS ok\n");
	return 0;
}

/* Spin for about `cycles` TSC ticks without a usable stack pointer. */
static void spin_wild_sp(unsigned long cycles)
{
	__asm__ volatile("mov %%rsp, %%r12\n\t"
	                 "mov $0x12345678000, %%rsp\n\t"
	                 "rdtsc\n\t"
	                 "shl $32, %%rdx\n\t"
	                 "or %%rax, %%rdx\n\t"
	                 "mov %%rdx, %%r13\n"
	                 "1:\n\t"
	                 "rdtsc\n\t"
	                 "shl $32, %%rdx\n\t"
	                 "or %%rax, %%rdx\n\t"
	                 "sub %%r13, %%rdx\n\t"
	                 "cmp %0, %%rdx\n\t"
	                 "jb 1b\n\t"
	                 "mov %%r12, %%rsp"
	                 :
	                 : "r"(cycles)
	                 : "rax", "rdx", "r12", "r13", "memory", "cc");
}

/* Recursion using ~4 KiB of stack per level; touches every page of it. */
#define FLAG_TF 0x100

static volatile int traps;

/* SIGUSR1: the context it returns to runs single-stepped. */
static void set_tf(int sig, siginfo_t *si, void *ctx)
{
	((ucontext_t *)ctx)->uc_mcontext.gregs[REG_EFL] |= FLAG_TF;
}

/* SIGTRAP: one step; the fifth ends the stepping. */
static void on_step(int sig, siginfo_t *si, void *ctx)
{
	if (++traps >= 5)
		((ucontext_t *)ctx)->uc_mcontext.gregs[REG_EFL] &= ~FLAG_TF;
}

static int single_step(void)
{
	struct sigaction usr1 = {.sa_sigaction = set_tf, .sa_flags = SA_SIGINFO};
	struct sigaction trap = {.sa_sigaction = on_step, .sa_flags = SA_SIGINFO};

	if (sigaction(SIGUSR1, &usr1, NULL) || sigaction(SIGTRAP, &trap, NULL) || raise(SIGUSR1))
		return 1;
	printf("fault: %d single-step traps\n", traps);
	return traps == 5 ? 0 : 1;
}

static unsigned long recurse(unsigned long depth)
{
	volatile char frame[4000];

	frame[0] = (char)depth;
	frame[sizeof(frame) - 1] = (char)depth;
	if (!depth)
		return 1;
	return recurse(depth - 1) + frame[0] - frame[sizeof(frame) - 1] + 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	printf("fault: %s\n", mode);
	fflush(stdout);

	if (!strcmp(mode, "null")) {
		*(volatile int *)0 = 42;
	} else if (!strcmp(mode, "ud2")) {
		__asm__ volatile("ud2");
	} else if (!strcmp(mode, "wild")) {
		void (*f)(void) = (void (*)(void))0x12345678000UL;

		__asm__ volatile("" : "+r"(f)); /* keep the compiler from reasoning about f */
		f();
	} else if (!strcmp(mode, "div0")) {
		/* An explicit div: gcc turns 1 / x into a comparison. */
		unsigned long lo = 1, hi = 0, zero = 0;

		__asm__ volatile("divq %2" : "+a"(lo), "+d"(hi) : "r"(zero));
	} else if (!strcmp(mode, "abort")) {
		abort();
	} else if (!strcmp(mode, "wildsp")) {
		/* A second runnable process makes the scheduler preempt us. */
		if (fork() == 0) {
			spin_wild_sp(1000000000UL);
			_exit(0);
		}
		spin_wild_sp(500000000UL);
		printf("fault: wild stack pointer survived\n");
		return 0;
	} else if (!strcmp(mode, "step")) {
		return single_step();
	} else if (!strcmp(mode, "deepstack")) {
		/* 1536 levels of ~4 KiB: ~6 MiB */
		if (recurse(1536) != 1537) {
			printf("deep stack: wrong result\n");
			return 1;
		}
		printf("deep stack ok\n");
		return 0;
	} else if (!strcmp(mode, "stackoverflow")) {
		recurse(~0UL);
	} else if (!strcmp(mode, "badsyscall")) {
		return expect_enosys(999);
	} else if (!strcmp(mode, "bigsyscall")) {
		return expect_enosys(0x7fffffff);
	} else if (!strcmp(mode, "negsyscall")) {
		return expect_enosys(-1);
	} else {
		fprintf(stderr,
		        "usage: fault "
		        "null|ud2|wild|wildsp|step|div0|abort|deepstack|stackoverflow|badsyscall|"
		        "bigsyscall|negsyscall\n");
		return 2;
	}
	printf("fault: still alive after '%s'\n", mode);
	return 3;
}
