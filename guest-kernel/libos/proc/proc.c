/* SPDX-License-Identifier: MIT */
/* Processes and threads: creation, the first process, exit and reaping. */
#include <asm/signal.h>

#include "console.h"
#include "exec.h"
#include "futex.h"
#include "kcpu.h"
#include "kiln/boot.h"
#include "ktime.h"
#include "pidns.h"
#include "printk.h"
#include "proc.h"
#include "sv.h"
#include "syscall.h"
#include "trapframe.h"
#include "tty.h"
#include "uaccess.h"
#include "vfs.h"
#include "vm.h"

#define KSTACK_PAGES 4

bool kiln_stats;
static struct proc *all_procs;
static int last_pid[KILN_PIDNS_MAX]; /* per namespace, local numbers */

static const char *const signames[] = {
    [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
    [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT", [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",
    [SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
    [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM", [SIGCHLD] = "SIGCHLD",
    [SIGCONT] = "SIGCONT", [SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN",
    [SIGTTOU] = "SIGTTOU", [SIGXCPU] = "SIGXCPU", [SIGSYS] = "SIGSYS",
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

struct proc *proc_first(void)
{
	return all_procs;
}

struct proc *proc_find(int pid)
{
	for (struct proc *p = all_procs; p; p = p->next_all)
		if (p->pid == pid && !p->zombie)
			return p;
	return NULL;
}

static bool pid_used(int pid)
{
	for (struct proc *p = all_procs; p; p = p->next_all)
		if (p->pid == pid || p->pgid == pid || p->sid == pid)
			return true;
	return false;
}

int proc_user_tasks(uint32_t uid)
{
	int n = 0;

	for (struct proc *p = all_procs; p; p = p->next_all)
		if (!p->zombie && p->cred.u.real == uid)
			n += p->nr_threads;
	return n;
}

int proc_alloc_pid(int ns)
{
	int *last = &last_pid[ns];

	/* a new namespace's first process is its pid 1 */
	if (ns && pidns_empty(ns))
		*last = 0;
	for (int i = 0; i < KILN_PIDNS_SPAN; i++) {
		*last = *last % (KILN_PIDNS_SPAN - 1) + 1;
		if (!pid_used(ns * KILN_PIDNS_SPAN + *last))
			return ns * KILN_PIDNS_SPAN + *last;
	}
	return -EAGAIN;
}

struct proc *proc_alloc(int ns)
{
	struct proc *p = kzalloc(sizeof(*p));
	int pid = proc_alloc_pid(ns);

	if (!p || pid < 0) {
		kfree(p);
		return NULL;
	}
	p->pid = pid;
	p->pidns = p->pidns_child = ns;
	p->start_ns = time_monotonic_ns();
	p->next_all = all_procs;
	all_procs = p;
	return p;
}

static void proc_unlink(struct proc *p)
{
	for (struct proc **pp = &all_procs; *pp; pp = &(*pp)->next_all)
		if (*pp == p) {
			*pp = p->next_all;
			break;
		}
	if (p->parent)
		for (struct proc **pp = &p->parent->children; *pp; pp = &(*pp)->sibling)
			if (*pp == p) {
				*pp = p->sibling;
				break;
			}
}

/* Free a reaped zombie. */
void proc_free(struct proc *p)
{
	proc_unlink(p);
	kfree(p->exe);
	kfree(p);
}

struct thread *thread_alloc(struct proc *p)
{
	struct thread *t = kzalloc(sizeof(*t));
	size_t fpu_pages = ALIGN_UP(sched_xsave_size(), PAGE_SIZE) / PAGE_SIZE;
	uint64_t stack = pmem_alloc_contig(KSTACK_PAGES, 1, false);
	uint64_t fpu = pmem_alloc_contig(fpu_pages, 1, true);

	if (!t || !stack || !fpu) {
		kfree(t);
		if (stack)
			pmem_free_contig(stack, KSTACK_PAGES);
		if (fpu)
			pmem_free_contig(fpu, fpu_pages);
		return NULL;
	}
	t->kstack_base = stack;
	t->kstack_top = (uint64_t)phys_to_virt(stack) + KSTACK_PAGES * PAGE_SIZE;
	t->fpu = phys_to_virt(fpu);
	/* XSAVE's legacy area: MXCSR with every exception masked, as at boot. */
	((uint32_t *)t->fpu)[6] = 0x1f80;
	((uint16_t *)t->fpu)[0] = 0x37f;
	t->proc = p;
	t->state = T_BLOCKED;
	t->next_in_proc = p->threads;
	p->threads = t;
	p->nr_threads++;
	return t;
}

void thread_free(struct thread *t)
{
	size_t fpu_pages = ALIGN_UP(sched_xsave_size(), PAGE_SIZE) / PAGE_SIZE;

	pmem_free_contig(t->kstack_base, KSTACK_PAGES);
	pmem_free_contig(virt_to_phys(t->fpu), fpu_pages);
	kfree(t);
}

static void thread_unlink(struct thread *t)
{
	struct proc *p = t->proc;

	for (struct thread **pp = &p->threads; *pp; pp = &(*pp)->next_in_proc)
		if (*pp == t) {
			*pp = t->next_in_proc;
			break;
		}
	p->nr_threads--;
}

static const char *basename(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

void proc_set_name(struct proc *p, const char *path)
{
	const char *b = basename(path);
	size_t n = MIN(strlen(b), sizeof(p->comm) - 1);

	memcpy(p->comm, b, n);
	p->comm[n] = 0;
	kfree(p->exe);
	p->exe = kstrndup(path, 4096);
}

void proc_run_init(int argc, char **argv, char **envp)
{
	static char *const fallback_argv[] = {(char *)"/init", NULL};
	struct exec_args ea = {.argc = argc, .argv = argv, .envp = envp};
	struct exec_image img;
	struct trapframe *tf;
	struct thread *t;
	struct proc *p;
	const char *why;
	int err;

	while (ea.envc < EXEC_MAX_ARGS && envp[ea.envc])
		ea.envc++;
	if (argc == 0) {
		ea.argc = 1;
		ea.argv = fallback_argv;
	}
	ea.path = ea.argv[0];

	p = proc_alloc(0);
	t = p ? thread_alloc(p) : NULL;
	if (!t)
		kpanic("out of memory creating init");
	t->tid = p->pid;
	p->pgid = p->sid = p->pid;
	proc_limits_init(p);
	proc_set_name(p, ea.path);
	p->files = files_create();
	p->fs = fs_ctx_create();
	p->sighand = kzalloc(sizeof(*p->sighand));
	if (!p->files || !p->fs || !p->sighand || files_open_console(p->files))
		kpanic("cannot set up init's files");
	p->sighand->refs = 1;
	thread_set_current(t);
	kcpu0.kstack_top = t->kstack_top;
	t->state = T_RUNNABLE;

	err = exec_load(&ea, &p->cred, false, &img, &why);
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
		guest_exit(127);
	}
	p->as = img.as;
	aspace_activate(p->as);

	tf = (struct trapframe *)(t->kstack_top - TF_SIZE);
	memset(tf, 0, sizeof(*tf));
	tf->rip = img.entry;
	tf->rsp = img.sp;
	tf->rflags = 0x202;
	asm volatile("wrfsbase %0" ::"r"(0UL) : "memory");
	boot_mark(5);
	trap_resume(tf);
}

void guest_exit(int status)
{
	if (kiln_stats) {
		boot_print_marks();
		syscall_print_stats();
		host_copy_print_stats();
	}
	console_flush();
	port_out_regs(KILN_PORT_EXIT, (uint64_t)(status & 0xff), 0);
	for (;;)
		sv_halt(0);
}

/* Children of an exiting process go to its namespace's init, as on Linux
 * (the VM's init once that one has ended). */
static void reparent_children(struct proc *p)
{
	struct proc *init = proc_find(p->pidns * KILN_PIDNS_SPAN + 1);

	if (!init || init == p)
		init = proc_find(1);

	while (p->children) {
		struct proc *c = p->children;
		p->children = c->sibling;
		c->parent = init;
		c->ppid = init ? init->pid : 0;
		if (init) {
			c->sibling = init->children;
			init->children = c;
			if (c->zombie)
				wake_all(&init->child_wait);
		}
	}
}

/* The last thread of p is leaving: release what the process holds and
 * leave a zombie for the parent. */
static void proc_become_zombie(struct proc *p)
{
	struct siginfo_k info;

	if (p->pid == 1) {
		int st = p->exit_code;
		if ((st & 0x7f) && !p->death_reported)
			kprintf("kiln: %s (pid 1) killed by %s\n", p->comm, signal_name(st & 0x7f));
		guest_exit((st & 0x7f) ? 128 + (st & 0x7f) : (st >> 8) & 0xff);
	}
	files_put(p->files);
	p->files = NULL;
	fs_ctx_put(p->fs);
	p->fs = NULL;
	if (p->vfork_parent) {
		wake_thread(p->vfork_parent);
		p->vfork_parent = NULL;
	}
	if (pidns_is_init(p))
		pidns_init_exit(p);
	reparent_children(p);
	tty_proc_exit(p); /* a session leader's exit hangs up its terminal */
	if (--p->sighand->refs == 0)
		kfree(p->sighand);
	p->sighand = NULL;
	p->zombie = true;
	if (p->parent) {
		memset(&info, 0, sizeof(info));
		info.signo = SIGCHLD;
		info.code = (p->exit_code & 0x7f) ? 2 /* CLD_KILLED */ : 1 /* CLD_EXITED */;
		info.chld.pid = pid_to_user(p->parent, p->pid);
		info.chld.status =
		    (p->exit_code & 0x7f) ? (p->exit_code & 0x7f) : (p->exit_code >> 8) & 0xff;
		signal_send_proc(p->parent, SIGCHLD, &info);
		wake_all(&p->parent->child_wait);
	}
}

void thread_exit(int code)
{
	struct thread *t = cur_thread();
	struct proc *p = t->proc;
	uint32_t zero = 0;

	if (t->clear_child_tid && p->nr_threads > 1) {
		copy_to_user((void *)t->clear_child_tid, &zero, 4);
		futex_wake(p->as, t->clear_child_tid, 1);
	}
	if (p->nr_threads == 1 && !p->exiting)
		p->exit_code = (code & 0xff) << 8;
	thread_unlink(t);
	if (!p->nr_threads) {
		struct aspace *as = p->as;
		proc_become_zombie(p);
		/* Leave the address space before freeing it. */
		p->as = NULL;
		aspace_release(as);
	}
	sched_exit_current();
}

void proc_exit(int wstatus)
{
	struct thread *self = cur_thread();
	struct proc *p = self->proc;

	if (!p->exiting) {
		p->exiting = true;
		p->exit_code = wstatus;
		for (struct thread *t = p->threads; t; t = t->next_in_proc)
			if (t != self)
				signal_send_thread(t, SIGKILL, NULL);
	}
	thread_exit(0);
}

void proc_kill_self(int sig, const char *why)
{
	struct proc *p = cur_proc();

	/* Like Linux, a process's death is reported by whoever waits for it
	 * (a shell prints "Segmentation fault"); init has no such parent, so
	 * its death goes to the console. */
	if (p->pid == 1) {
		kprintf("kiln: %s (pid %d) killed by %s%s%s\n", p->comm, p->pid, signal_name(sig),
		        why ? ": " : "", why ? why : "");
		p->death_reported = true;
	}
	proc_exit(sig & 0x7f);
}
