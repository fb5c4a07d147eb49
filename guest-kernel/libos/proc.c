/* SPDX-License-Identifier: MIT */
/* Processes: the first one (init), and the end of the guest when it exits. */
#include <asm/signal.h>

#include "console.h"
#include "exec.h"
#include "kiln/boot.h"
#include "ktime.h"
#include "printk.h"
#include "proc.h"
#include "sv.h"
#include "syscall.h"
#include "trapframe.h"
#include "vfs.h"
#include "vm.h"

#define KSTACK_PAGES 4

bool kiln_stats;

static const char *const signames[] = {
    [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
    [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT", [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",
    [SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
    [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
};

const char *signal_name(int sig)
{
	if (sig > 0 && sig < (int)ARRAY_SIZE(signames) && signames[sig])
		return signames[sig];
	return "signal";
}

void thread_set_current(struct thread *t)
{
	asm volatile("wrgsbase %0" ::"r"(t) : "memory");
}

static void set_fs_base(uint64_t v)
{
	asm volatile("wrfsbase %0" ::"r"(v) : "memory");
}

static struct thread *thread_create(struct proc *p, int tid)
{
	struct thread *t = kzalloc(sizeof(*t));
	uint64_t stack = pmem_alloc_contig(KSTACK_PAGES, 1, false);

	if (!t || !stack) {
		kfree(t);
		return NULL;
	}
	t->kstack_top = (uint64_t)phys_to_virt(stack) + KSTACK_PAGES * PAGE_SIZE;
	t->proc = p;
	t->tid = tid;
	return t;
}

static const char *basename(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

void proc_run_init(int argc, char **argv, char **envp)
{
	static const char *default_init = "/init";
	struct exec_args ea = {.argc = argc, .argv = argv, .envp = envp};
	struct exec_image img;
	struct trapframe tf;
	struct thread *t;
	struct proc *p;
	const char *why;
	int err;

	while (ea.envc < EXEC_MAX_ARGS && envp[ea.envc])
		ea.envc++;
	if (argc == 0) {
		static char *const fallback_argv[] = {(char *)"/init", NULL};
		ea.argc = 1;
		ea.argv = fallback_argv;
	}
	ea.path = ea.argv[0] ? ea.argv[0] : default_init;

	p = kzalloc(sizeof(*p));
	t = p ? thread_create(p, 1) : NULL;
	if (!t)
		kpanic("out of memory creating init");
	p->pid = p->pgid = p->sid = 1;
	p->ppid = 0;
	p->start_ns = time_monotonic_ns();
	memcpy(p->comm, basename(ea.path), MIN(strlen(basename(ea.path)), sizeof(p->comm) - 1));
	p->files = files_create();
	p->fs = fs_ctx_create();
	if (!p->files || !p->fs || files_open_console(p->files))
		kpanic("cannot set up init's files");
	thread_set_current(t);

	err = exec_load(&ea, &img, &why);
	if (err) {
		kprintf("kiln: cannot run %s: %s%s%s\n", ea.path,
		        err == -ENOENT    ? "no such file in the initramfs"
		        : err == -EACCES  ? "not an executable file"
		        : err == -EISDIR  ? "is a directory"
		        : err == -ENOEXEC ? "not a program kiln can run"
		        : err == -ENOMEM  ? "out of memory"
		        : err == -E2BIG   ? "argument list too long"
		                          : "error",
		        why ? ": " : "", why ? why : "");
		proc_exit_group(127);
	}
	p->as = img.as;
	aspace_activate(p->as);

	memset(&tf, 0, sizeof(tf));
	tf.rip = img.entry;
	tf.rsp = img.sp;
	tf.rflags = 0x202;
	set_fs_base(0);
	boot_mark(5);
	trap_resume(&tf);
}

void proc_exit_group(int status)
{
	if (kiln_stats) {
		boot_print_marks();
		syscall_print_stats();
	}
	console_flush();
	port_out_regs(KILN_PORT_EXIT, (uint64_t)(status & 0xff), 0);
	for (;;)
		sv_halt(0);
}

void proc_kill_self(int sig, const char *why)
{
	struct proc *p = cur_proc();

	kprintf("kiln: %s (pid %d) killed by %s%s%s\n", p->comm, p->pid, signal_name(sig),
	        why ? ": " : "", why ? why : "");
	proc_exit_group(128 + sig);
}
