// SPDX-License-Identifier: MIT
/*
 * firstsys MODE: the first run of `syscall` sites, which kiln serves before it
 * rewrites them (on PVM hosts at CPL3, without the supervisor). Each site is
 * a function of its own (SITE below) that fills the 128-byte red zone below
 * RSP, sets DF and known values in every register a syscall preserves, runs
 * one `syscall`, then checks that the red zone and the registers are intact,
 * that RCX holds the return address and R11 the flags, and that DF is still
 * set. Every site is fresh when it runs, unless a mode says otherwise.
 *
 *   sites    getpid at 8 sites; kill(self) at a site with a handler, so the
 *            signal is delivered as the first-run syscall returns
 *   thread   a site's first run in a second thread, another in the first
 *   fork     fork at a site: parent and child both check it; the child
 *            exits through a fresh site
 *   vfork    vfork at a site: the child checks, then exits through a fresh
 *            site, on the parent's stack; then the parent checks
 *   signal   pause at a site, ended by SIGALRM (-EINTR); the handler's
 *            return is the program's first rt_sigreturn
 *   restart  read from a pipe at a site, interrupted by an SA_RESTART
 *            handler and restarted; a child writes once a signal came
 *   timer    setitimer at a site, then a CPU-bound loop still gets its
 *            SIGALRM (interrupts stay enabled)
 *   jit      sites in memory the program writes itself: each of 64 stubs,
 *            one straddling two pages, runs twice, then is written anew
 *            (the site is `0f 05` again) and runs twice more
 *
 * Each mode prints "MODE ok" or what went wrong, and exits 0 or 1.
 *
 *   bench N  (tools/bench/bench.sh) the cost of a site's first run, over N
 *            fresh getpid sites in memory the program wrote, and of a run
 *            after: prints "first_run_ns X" and "rewritten_ns X"
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DF          0x400UL
#define SYS_STR2(x) #x
#define SYS_STR(x)  SYS_STR2(x)
/* What R11 is compared on: the status flags, DF and IF. */
#define FLAGS_MASK 0xed5UL

struct site_out {
	uint64_t flags_before, rax, rcx, r11, after, bad, flags_after;
	uint64_t rbx, rbp, r12, r13, r14, rdi, rsi, rdx, r10, r8, r9;
};

/* void NAME(long nr, long a0, long a1, uint64_t seed, struct site_out *out,
 * long a2): the syscall's arguments are a0, a1, a2; RBX, RBP, R12-R14, R10,
 * R8 and R9 get seed, seed + 0x100, ... (the syscalls used here ignore R10
 * and on), the red zone seed, seed + 1, ...;
 * DF is set if seed is odd. out->bad gets bit i for each red-zone word
 * -8(i + 1)(%rsp) that changed. */
#define SEED_OFF(n) "lea " #n "(%rbx), "
__asm__(
    ".macro SITE name\n"
    "	.text\n"
    "	.globl \\name\n"
    "	.type \\name, @function\n"
    "\\name:\n"
    "	push %rbx; push %rbp; push %r12; push %r13; push %r14; push %r15\n"
    "	mov %r8, %r15\n"
    "	mov %rcx, %rbx\n"
    "	mov %rdi, %r11\n"
    "	mov %rsi, %rdi\n"
    "	mov %rdx, %rsi\n"
    "	mov %r9, %rdx\n"
    "	" SEED_OFF(0x100) "%rbp; " SEED_OFF(0x200) "%r12; " SEED_OFF(
        0x300) "%r13\n"
               "	" SEED_OFF(0x400) "%r14; " SEED_OFF(
                   0x600) "%r10\n"
                          "	" SEED_OFF(0x700) "%r8; " SEED_OFF(
                              0x800) "%r9\n"
                                     "	test $1, %bl; jz 2f; std; 2:\n"
                                     "	pushfq; popq %rax; mov %rax, 0(%r15)\n"
                                     "	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
                                     "	lea \\i(%rbx), %rax; mov %rax, -8*(\\i+1)(%rsp)\n"
                                     "	.endr\n"
                                     "	mov %r11, %rax\n"
                                     "	syscall\n"
                                     "\\name\\()_after:\n"
                                     "	mov %rax, 8(%r15); mov %rcx, 16(%r15); mov %r11, 24(%r15)\n"
                                     "	lea \\name\\()_after(%rip), %rax; mov %rax, 32(%r15)\n"
                                     "	xor %ecx, %ecx\n"
                                     "	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
                                     "	lea \\i(%rbx), %rax; cmp %rax, -8*(\\i+1)(%rsp); je 1f\n"
                                     "	bts $\\i, %rcx\n"
                                     "1:\n"
                                     "	.endr\n"
                                     "	mov %rcx, 40(%r15)\n"
                                     "	pushfq; popq %rax; mov %rax, 48(%r15)\n"
                                     "	cld\n"
                                     "	mov %rbx, 56(%r15); mov %rbp, 64(%r15); mov %r12, "
                                     "72(%r15)\n"
                                     "	mov %r13, 80(%r15); mov %r14, 88(%r15); mov %rdi, "
                                     "96(%r15)\n"
                                     "	mov %rsi, 104(%r15); mov %rdx, 112(%r15); mov %r10, "
                                     "120(%r15)\n"
                                     "	mov %r8, 128(%r15); mov %r9, 136(%r15)\n"
                                     "	pop %r15; pop %r14; pop %r13; pop %r12; pop %rbp; pop "
                                     "%rbx\n"
                                     "	ret\n"
                                     "	.size \\name, . - \\name\n"
                                     ".endm\n");

typedef void site_fn(long nr, long a0, long a1, uint64_t seed, struct site_out *out, long a2);

#define SITES(X) X(s0) X(s1) X(s2) X(s3) X(s4) X(s5) X(s6) X(s7) X(s8) X(s9) X(s10) X(s11)
#define DECLARE(n)                \
	__asm__("SITE site_" #n); \
	site_fn site_##n;
SITES(DECLARE)
#define ADDR(n) site_##n,
static site_fn *const sites[] = {SITES(ADDR)};
static unsigned next_site;

static site_fn *fresh_site(void)
{
	if (next_site == sizeof(sites) / sizeof(sites[0])) {
		printf("firstsys: out of fresh sites\n");
		exit(1);
	}
	return sites[next_site++];
}

/* The call returned through its site rewritten into `call *%rax` (a
 * restart): that call pushed its return address onto -8(%rsp), and RCX and
 * R11 are not `syscall`'s. */
#define REWRITTEN 1

/* Check a site's run: nonzero (and a line saying why) if anything is off. */
static int check(const char *what, const struct site_out *o, uint64_t seed, long want_rax, int how)
{
	uint64_t ignore = how == REWRITTEN ? 1 : 0;
	const uint64_t kept[] = {o->rbx, o->rbp, o->r12, o->r13, o->r14, o->r10, o->r8, o->r9};
	const uint64_t want[] = {seed,         seed + 0x100, seed + 0x200, seed + 0x300,
	                         seed + 0x400, seed + 0x600, seed + 0x700, seed + 0x800};
	int bad = 0;

	if ((long)o->rax != want_rax) {
		printf("%s: syscall returned %ld, expected %ld\n", what, (long)o->rax, want_rax);
		bad = 1;
	}
	if (o->bad & ~ignore) {
		printf("%s: red zone words changed (bit i: -8(i+1)(%%rsp)): %#lx\n", what,
		       (unsigned long)(o->bad & ~ignore));
		bad = 1;
	}
	if (how != REWRITTEN && o->rcx != o->after) {
		printf("%s: RCX %#lx, expected the return address %#lx\n", what,
		       (unsigned long)o->rcx, (unsigned long)o->after);
		bad = 1;
	}
	if (how != REWRITTEN && (o->r11 & FLAGS_MASK) != (o->flags_before & FLAGS_MASK)) {
		printf("%s: R11 %#lx, expected the flags %#lx\n", what, (unsigned long)o->r11,
		       (unsigned long)o->flags_before);
		bad = 1;
	}
	if ((o->flags_after & DF) != (seed & 1 ? DF : 0)) {
		printf("%s: DF changed (flags %#lx)\n", what, (unsigned long)o->flags_after);
		bad = 1;
	}
	for (unsigned i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		if (kept[i] != want[i]) {
			printf("%s: preserved register %u is %#lx, expected %#lx\n", what, i,
			       (unsigned long)kept[i], (unsigned long)want[i]);
			bad = 1;
		}
	}
	return bad;
}

/* Run site f once with DF set (unless how is REWRITTEN: the library OS's
 * rewritten path expects DF clear, as at any function call). */
static int run_site(const char *what, site_fn *f, long nr, long a0, long a1, long a2, long want_rax,
                    int how)
{
	struct site_out o;
	uint64_t seed = 0x5eed000000ULL + ((uint64_t)next_site << 16) + (how != REWRITTEN);

	memset(&o, 0, sizeof(o));
	f(nr, a0, a1, seed, &o, a2);
	if (o.rdi != (uint64_t)a0 || o.rsi != (uint64_t)a1 || o.rdx != (uint64_t)a2) {
		printf("%s: argument registers changed\n", what);
		return 1;
	}
	return check(what, &o, seed, want_rax, how);
}

static volatile sig_atomic_t got_signal;
static int signal_pipe = -1; /* each signal also writes a byte here */

static void on_signal(int sig)
{
	got_signal = sig;
	if (signal_pipe >= 0 && write(signal_pipe, "s", 1) != 1)
		got_signal = -1;
}

static void handle(int sig, int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = flags;
	sigaction(sig, &sa, NULL);
}

static int mode_sites(void)
{
	int bad = 0;

	for (int i = 0; i < 8; i++)
		bad |= run_site("getpid", fresh_site(), SYS_getpid, 0, 0, 0, getpid(), 0);
	handle(SIGUSR1, 0);
	bad |= run_site("kill", fresh_site(), SYS_kill, getpid(), SIGUSR1, 0, 0, 0);
	if (got_signal != SIGUSR1) {
		printf("kill: the handler did not run\n");
		bad = 1;
	}
	return bad;
}

static void *thread_main(void *site)
{
	return (void *)(long)run_site("thread", (site_fn *)site, SYS_gettid, 0, 0, 0, gettid(), 0);
}

static int mode_thread(void)
{
	site_fn *mine = fresh_site();
	pthread_t t;
	void *ret;

	if (pthread_create(&t, NULL, thread_main, (void *)fresh_site())) {
		printf("pthread_create failed\n");
		return 1;
	}
	pthread_join(t, &ret);
	return (ret != NULL) | run_site("main thread", mine, SYS_getpid, 0, 0, 0, getpid(), 0);
}

/* fork at a fresh site; the child exits through another with the result
 * of its own check. */
static int mode_fork(void)
{
	site_fn *f = fresh_site(), *exit_site = fresh_site();
	uint64_t seed = 0xf0f0000001ULL;
	struct site_out o;
	int status, bad;

	memset(&o, 0, sizeof(o));
	f(SYS_fork, 0, 0, seed, &o, 0);
	if (o.rax == 0) {
		struct site_out e;

		bad = check("fork child", &o, seed, 0, 0);
		exit_site(SYS_exit, 10 + bad, 0, seed, &e, 0);
		_exit(99); /* not reached */
	}
	if ((long)o.rax < 0) {
		printf("fork failed: %ld\n", (long)o.rax);
		return 1;
	}
	bad = check("fork parent", &o, seed, (long)o.rax, 0);
	if (waitpid((pid_t)o.rax, &status, 0) != (pid_t)o.rax || status != 10 << 8) {
		printf("fork: child status %#x, expected exit 10\n", status);
		bad = 1;
	}
	return bad;
}

/*
 * long vfork_site(uint64_t seed, uint64_t *bad): vfork at a site of its
 * own with the red zone filled (seed, seed + 1, ...). The child, which runs
 * on this very stack, checks the red zone and RCX and exits through another
 * fresh site with 10 + 1 (red zone changed) + 2 (RCX wrong), never leaving
 * this function; the parent returns the child's pid, with its own red-zone
 * bits in *bad.
 */
__asm__(
    "	.text\n"
    "	.globl vfork_site\n"
    "	.type vfork_site, @function\n"
    "vfork_site:\n"
    "	push %rbx; push %r15\n"
    "	mov %rdi, %rbx; mov %rsi, %r15\n"
    "	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
    "	lea \\i(%rbx), %rax; mov %rax, -8*(\\i+1)(%rsp)\n"
    "	.endr\n"
    "	mov $" SYS_STR(SYS_vfork) ", %eax\n"
                                  "	syscall\n"
                                  "vfork_after:\n"
                                  "	mov %rcx, %rdx\n"
                                  "	xor %ecx, %ecx\n"
                                  "	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
                                  "	lea \\i(%rbx), %rdi; cmp %rdi, -8*(\\i+1)(%rsp); je 1f\n"
                                  "	bts $\\i, %rcx\n"
                                  "1:\n"
                                  "	.endr\n"
                                  "	test %rax, %rax\n"
                                  "	jnz 2f\n"
                                  "	xor %edi, %edi\n"
                                  "	test %rcx, %rcx\n"
                                  "	setnz %dil\n"
                                  "	lea vfork_after(%rip), %rsi\n"
                                  "	cmp %rsi, %rdx\n"
                                  "	je 3f\n"
                                  "	or $2, %edi\n"
                                  "3:	add $10, %edi\n"
                                  "	mov $" SYS_STR(
                                      SYS_exit) ", %eax\n"
                                                "	syscall\n"
                                                "	ud2\n"
                                                "2:	mov %rcx, (%r15)\n"
                                                "	pop %r15; pop %rbx\n"
                                                "	ret\n"
                                                "	.size vfork_site, . - vfork_site\n");
long vfork_site(uint64_t seed, uint64_t *bad);

static int mode_vfork(void)
{
	uint64_t bad = 0;
	long pid = vfork_site(0x7f0c000000ULL, &bad);
	int status;

	if (pid < 0) {
		printf("vfork failed: %ld\n", pid);
		return 1;
	}
	if (bad) {
		printf("vfork parent: red zone words changed: %#lx\n", (unsigned long)bad);
		return 1;
	}
	if (waitpid((pid_t)pid, &status, 0) != (pid_t)pid || status != 10 << 8) {
		printf("vfork: child status %#x, expected exit 10\n", status);
		return 1;
	}
	return 0;
}

/* SIGALRM every 30 ms (a first one before the site runs is not the last). */
static const struct itimerval every_30ms = {{0, 30000}, {0, 30000}}, disarmed;

static int mode_signal(void)
{
	int bad;

	handle(SIGALRM, 0);
	setitimer(ITIMER_REAL, &every_30ms, NULL);
	bad = run_site("pause", fresh_site(), SYS_pause, 0, 0, 0, -EINTR, 0);
	setitimer(ITIMER_REAL, &disarmed, NULL);
	if (got_signal != SIGALRM) {
		printf("pause: the handler did not run\n");
		bad = 1;
	}
	return bad;
}

/* The child writes to the pipe read blocks on once a signal came. */
static int mode_restart(void)
{
	char buf[8] = {0}, c;
	int fds[2], sigs[2], status, bad;
	pid_t child;

	if (pipe(fds) || pipe(sigs)) {
		printf("pipe failed\n");
		return 1;
	}
	child = fork();
	if (child == 0)
		_exit(read(sigs[0], &c, 1) == 1 && write(fds[1], "x", 1) == 1 ? 0 : 1);
	signal_pipe = sigs[1];
	handle(SIGALRM, SA_RESTART);
	setitimer(ITIMER_REAL, &every_30ms, NULL);
	bad = run_site("read", fresh_site(), SYS_read, fds[0], (long)buf, 1, 1, REWRITTEN);
	setitimer(ITIMER_REAL, &disarmed, NULL);
	if (got_signal != SIGALRM || buf[0] != 'x') {
		printf("read: signal %d, read '%c'\n", got_signal, buf[0]);
		bad = 1;
	}
	waitpid(child, &status, 0);
	return bad;
}

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* The timer is armed by a first run, the last syscall before the loop. */
static int mode_timer(void)
{
	struct itimerval it = {.it_value = {.tv_usec = 20000}};
	uint64_t t0;
	int bad;

	handle(SIGALRM, 0);
	bad = run_site("setitimer", fresh_site(), SYS_setitimer, ITIMER_REAL, (long)&it, 0, 0, 0);
	/* About 10 s at any TSC rate of at most 10 GHz; no syscall inside. */
	t0 = rdtsc();
	while (!got_signal && rdtsc() - t0 < 100000000000ULL)
		;
	if (!got_signal) {
		printf("timer: no SIGALRM while the program computed\n");
		bad = 1;
	}
	return bad;
}

/* mov $NR, %eax; syscall; ret */
static void put_stub(uint8_t *p, int nr)
{
	p[0] = 0xb8;
	memcpy(p + 1, &nr, 4);
	p[5] = 0x0f;
	p[6] = 0x05;
	p[7] = 0xc3;
}

static int mode_jit(void)
{
	enum { N = 64 };
	uint8_t *code = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
	                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *stub[N];
	int bad = 0;

	if (code == MAP_FAILED) {
		printf("mmap failed: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < N - 1; i++)
		stub[i] = code + 16 * i;
	stub[N - 1] = code + 4096 - 6; /* `0f` at 4095, `05` on the next page */
	for (int round = 0; round < 2; round++) {
		int nr = round ? SYS_getppid : SYS_getpid;
		long want = round ? getppid() : getpid();

		for (int i = 0; i < N; i++)
			put_stub(stub[i], nr);
		for (int run = 0; run < 2; run++) {
			for (int i = 0; i < N; i++) {
				long got = ((long (*)(void))stub[i])();

				if (got != want) {
					printf("jit: stub %d (round %d, run %d) returned %ld, "
					       "expected %ld\n",
					       i, round, run, got, want);
					bad = 1;
				}
			}
		}
	}
	return bad;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int mode_bench(long n)
{
	size_t len = ((size_t)n * 16 + 4095) & ~(size_t)4095;
	uint8_t *code =
	    mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t[3];
	long pid = getpid(), bad = 0;

	if (n <= 0 || n > 1 << 20 || code == MAP_FAILED) {
		printf("bench: bad N or mmap failed\n");
		return 1;
	}
	for (long i = 0; i < n; i++)
		put_stub(code + 16 * i, SYS_getpid);
	for (int pass = 0; pass < 2; pass++) {
		t[pass] = now_ns();
		for (long i = 0; i < n; i++)
			bad += ((long (*)(void))(code + 16 * i))() != pid;
	}
	t[2] = now_ns();
	if (bad) {
		printf("bench: %ld calls returned the wrong pid\n", bad);
		return 1;
	}
	printf("first_run_ns %.0f\nrewritten_ns %.1f\nsites %ld\n", (t[1] - t[0]) / (double)n,
	       (t[2] - t[1]) / (double)n, n);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(void);
} modes[] = {
    {"sites", mode_sites}, {"thread", mode_thread}, {"fork", mode_fork},
    {"vfork", mode_vfork}, {"signal", mode_signal}, {"restart", mode_restart},
    {"timer", mode_timer}, {"jit", mode_jit},
};

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(mode, "bench") && argc > 2)
		return mode_bench(strtol(argv[2], NULL, 10));
	for (unsigned i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (!strcmp(mode, modes[i].name)) {
			if (modes[i].run())
				return 1;
			printf("%s ok\n", mode);
			return 0;
		}
	}
	printf("usage: firstsys sites|thread|fork|vfork|signal|restart|timer|jit|bench N\n");
	return 2;
}
