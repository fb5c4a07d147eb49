/* SPDX-License-Identifier: MIT */
/*
 * Processes and threads of the library OS. A process owns an address space,
 * a descriptor table, a working directory and signal actions; its threads
 * share them (CLONE_VM | CLONE_FILES | CLONE_FS | CLONE_SIGHAND).
 */
#ifndef KILN_PROC_H
#define KILN_PROC_H

#include "cred.h"
#include "klib.h"
#include "sched.h"

struct aspace;
struct files;
struct fs_ctx;
struct trapframe;

/* The kernel's struct sigaction layout (rt_sigaction with sigsetsize 8). */
struct k_sigaction {
	uint64_t handler, flags, restorer, mask;
};

#define NSIG_KILN   64
#define SIGBIT(sig) (1ULL << ((sig)-1))

/* Shared by the threads of a process (CLONE_SIGHAND). */
struct sighand {
	int refs;
	struct k_sigaction action[NSIG_KILN + 1];
};

struct siginfo_k {
	int32_t signo, errno_, code, pad;
	union {
		struct {
			int32_t pid;
			uint32_t uid;
			int32_t status;
		} chld;
		struct {
			uint64_t addr;
		} fault;
		struct {
			int32_t pid;
			uint32_t uid;
		} kill;
		uint8_t bytes[112];
	};
};

#define PROC_NLIMITS 16 /* RLIM_NLIMITS */

struct proc {
	int pid, ppid, pgid, sid; /* global numbers (pidns.h) */
	int pidns;                /* PID namespace, 0: the VM's */
	int pidns_child;          /* of its children to come (KILN_PR_PIDNS) */
	struct proc *parent;
	struct proc *children; /* list through sibling */
	struct proc *sibling;
	struct proc *next_all;  /* every process, for kill(-1) and /proc */
	struct thread *threads; /* list through thread->next_in_proc */
	int nr_threads;
	struct aspace *as;   /* page tables and mappings (vm.c) */
	struct files *files; /* descriptor table (vfs) */
	struct fs_ctx *fs;   /* cwd, root, umask (vfs) */
	struct sighand *sighand;
	uint64_t shared_pending; /* process-directed signals */
	struct siginfo_k shared_info[NSIG_KILN + 1];
	char comm[16]; /* basename of the program, for messages */
	char *exe;     /* path of the program, for /proc/self/exe */
	uint64_t start_ns;
	/* Exit and wait. */
	bool exiting;  /* exit_group in progress: threads die on return */
	bool zombie;   /* all threads gone, waiting for the parent */
	int exit_code; /* wait status (W*) for the parent */
	bool stopped;  /* job control */
	int stop_sig;  /* for WUNTRACED */
	bool stop_reported, cont_reported;
	bool death_reported;         /* init's death message is out */
	struct waitq child_wait;     /* the parent waits here for children */
	struct thread *vfork_parent; /* blocked in vfork until exec/exit */
	uint64_t user_ns, sys_ns;    /* rough CPU time */
	/* Capabilities given up with capset (effective, permitted): root
	 * has them all, and an exec gives them back, as Linux does for uid 0. */
	uint64_t cap_dropped[2];
	/* The inheritable set: none at boot, as Linux's init; kept across
	 * fork, exec and set*id. */
	uint64_t cap_inh;
	struct cred cred; /* user and group ids (cred.h) */
	/* prctl PR_SET_DUMPABLE 0, or an exec that changed ids or of a file
	 * it could not read: /proc/PID is root's (procfs), as on Linux. */
	bool nodump;
	bool no_new_privs;   /* PR_SET_NO_NEW_PRIVS: set-id bits do nothing */
	int nice;            /* setpriority; the scheduler has no priorities */
	uint32_t membarrier; /* the MEMBARRIER_CMD_REGISTER_* it made */
	/* setrlimit's, inherited by fork and kept by exec (sys_proc.c);
	 * RLIMIT_NOFILE bounds new descriptors, RLIMIT_NPROC the threads of
	 * a non-root real uid (fork, clone: EAGAIN), RLIMIT_AS the mappings'
	 * total (sys_mm.c), the others are kept and reported only. */
	struct klimit {
		uint64_t cur, max;
	} rlim[PROC_NLIMITS];
};

/* %gs:0 is the kernel stack of the running thread, so kstack_top must stay
 * the first member. */
struct thread {
	uint64_t kstack_top;
	struct proc *proc;
	int tid;
	enum thread_state state;
	uint64_t ksp;         /* saved kernel stack pointer while switched out */
	uint64_t kstack_base; /* physical address of the stack pages */
	void *fpu;            /* XSAVE area for the program's vector state */
	uint64_t fs_base;
	uint64_t gs_base_user; /* ARCH_SET_GS value; %gs belongs to kiln */
	uint64_t clear_child_tid;
	uint64_t robust_list;
	/* Signals. */
	uint64_t sigmask;
	uint64_t pending; /* thread-directed */
	struct siginfo_k info[NSIG_KILN + 1];
	uint64_t saved_sigmask; /* restored after sigsuspend/ppoll returns */
	bool restore_sigmask;
	uint64_t altstack[3]; /* stack_t: ss_sp, ss_flags, ss_size */
	/* Scheduling. */
	struct thread *next_run;     /* run queue */
	struct thread *next_in_proc; /* proc->threads */
	uint64_t wake_at;            /* timer deadline (monotonic ns), 0 = none */
	struct thread *next_timer;
	bool woken;  /* the wait ended (wake, signal or timer) */
	bool frozen; /* stopped by its namespace's freeze (pidns.c) */
	bool timed_out;
	/* Syscall in progress. */
	struct trapframe *syscall_tf; /* the program's context */
	bool tf_dirty;                /* a handler changed it: restore in full */
	uint64_t restart_deadline;    /* an interrupted sleep's end (restart) */
};

static inline struct thread *cur_thread(void)
{
	struct thread *t;
	asm("rdgsbase %0" : "=r"(t));
	return t;
}

static inline struct proc *cur_proc(void)
{
	return cur_thread()->proc;
}

/* Every capability (linux/capability.h CAP_LAST_CAP is 40). */
#define PROC_CAP_ALL ((1ULL << 41) - 1)
/* The capability sets p holds (effective, permitted, inheritable): root's
 * all, other users' none (sys_cred.c), less what capset gave up. */
void proc_caps(const struct proc *p, uint64_t set[3]);
/* Whether p's effective set has cap. */
bool proc_capable(const struct proc *p, int cap);
/* After a change of p's user ids from old: an effective uid that becomes
 * 0 again gets the permitted set back as its effective one, as on Linux. */
void proc_caps_setuid(struct proc *p, const struct cred_ids *old);

/* The calling process's credentials (root's while the kernel boots). */
static inline const struct cred *cur_cred(void)
{
	struct proc *p = cur_thread()->proc;

	return p ? &p->cred : &cred_root;
}

void thread_set_current(struct thread *t);
struct thread *thread_alloc(struct proc *p);
void thread_free(struct thread *t);
/* A process with a pid of namespace ns. */
struct proc *proc_alloc(int ns);
/* init's limits (sys_proc.c); fork copies the parent's. */
void proc_limits_init(struct proc *p);
void proc_free(struct proc *p);
void proc_set_name(struct proc *p, const char *path);
struct proc *proc_find(int pid);
/* Threads of the live processes whose real uid is uid (RLIMIT_NPROC). */
int proc_user_tasks(uint32_t uid);
struct proc *proc_first(void);
/* A free pid (or tid) of namespace ns, or -EAGAIN. */
int proc_alloc_pid(int ns);

/* Create the first process and run `argv[0]` in it; never returns. */
__attribute__((noreturn)) void proc_run_init(int argc, char **argv, char **envp);
/* End the calling process with a wait status (W* encoding). */
__attribute__((noreturn)) void proc_exit(int wstatus);
/* The current thread alone ends (SYS_exit of one thread). */
__attribute__((noreturn)) void thread_exit(int code);
/* A fatal signal: print why if it is a fault, end like Linux. */
__attribute__((noreturn)) void proc_kill_self(int sig, const char *why);
/* The whole guest ends when init ends. */
__attribute__((noreturn)) void guest_exit(int status);

/* Signals (signal.c). */
void signal_send_proc(struct proc *p, int sig, const struct siginfo_k *info);
void signal_send_thread(struct thread *t, int sig, const struct siginfo_k *info);
bool signal_pending(struct thread *t); /* deliverable (unblocked) signal */
/* Deliver pending signals before returning to the program. */
void signal_deliver(struct trapframe *tf);
const char *signal_name(int sig);

/* Work to do before returning to the program: signals, rescheduling.
 * Returns true if tf must be restored in full (trap_resume). */
bool exit_to_user(struct trapframe *tf);

#endif
