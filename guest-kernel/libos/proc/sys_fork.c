/* SPDX-License-Identifier: MIT */
/* fork, vfork, clone and clone3: new processes and threads. */
#include <asm/signal.h>
#include <linux/resource.h>
#include <linux/sched.h>

#include "pidns.h"
#include "printk.h"
#include "proc.h"
#include "signal_k.h"
#include "syscall.h"
#include "trapframe.h"
#include "uaccess.h"
#include "vfs.h"
#include "vm.h"

#define CLONE_SUPPORTED                                                               \
	(CSIGNAL | CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | \
	 CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID |    \
	 CLONE_CHILD_CLEARTID | CLONE_VFORK | CLONE_PARENT | CLONE_DETACHED)

struct clone_req {
	uint64_t flags, stack, parent_tid, child_tid, tls;
};

/* NULL: out of memory or pids, or a namespace whose pid 1 has ended
 * (ENOMEM all, as on Linux). */
static struct proc *new_process(struct proc *parent, uint64_t flags)
{
	struct proc *p, *up = (flags & CLONE_PARENT) ? parent->parent : parent;

	if (!pidns_open(parent->pidns_child) || !(p = proc_alloc(parent->pidns_child)))
		return NULL;
	p->parent = up ? up : parent;
	p->ppid = p->parent->pid;
	p->sibling = p->parent->children;
	p->parent->children = p;
	p->pgid = parent->pgid;
	p->sid = parent->sid;
	memcpy(p->comm, parent->comm, sizeof(p->comm));
	memcpy(p->cap_dropped, parent->cap_dropped, sizeof(p->cap_dropped));
	p->cap_inh = parent->cap_inh;
	p->cred = parent->cred;
	p->nodump = parent->nodump;
	p->no_new_privs = parent->no_new_privs;
	p->nice = parent->nice;
	memcpy(p->rlim, parent->rlim, sizeof(p->rlim));
	p->exe = parent->exe ? kstrndup(parent->exe, 4096) : NULL;
	if (flags & CLONE_VM)
		p->as = aspace_get(parent->as);
	else
		p->as = aspace_copy(parent->as);
	p->files = (flags & CLONE_FILES) ? (files_get(parent->files), parent->files)
	                                 : files_dup(parent->files);
	p->fs = (flags & CLONE_FS) ? (fs_ctx_get(parent->fs), parent->fs) : fs_ctx_dup(parent->fs);
	if (flags & CLONE_SIGHAND) {
		p->sighand = parent->sighand;
		p->sighand->refs++;
	} else if ((p->sighand = kmalloc(sizeof(*p->sighand)))) {
		*p->sighand = *parent->sighand;
		p->sighand->refs = 1;
	}
	if (!p->as || !p->files || !p->fs || !p->sighand) {
		/* Undo through the normal exit path of a process that never ran. */
		p->zombie = true;
		if (p->as)
			aspace_release(p->as);
		if (p->files)
			files_put(p->files);
		if (p->fs)
			fs_ctx_put(p->fs);
		if (p->sighand && --p->sighand->refs == 0)
			kfree(p->sighand);
		proc_free(p);
		return NULL;
	}
	return p;
}

static long do_clone(const struct clone_req *r)
{
	struct thread *self = cur_thread(), *t;
	struct proc *parent = self->proc, *p;
	struct trapframe *tf;
	uint64_t flags = r->flags;
	int tid, utid;

	if (flags & ~(uint64_t)CLONE_SUPPORTED)
		return -EINVAL;
	/* A fork bomb ends here, not in the kernel's reserve. */
	if (!pmem_user_ok(64))
		return -EAGAIN;
	/* RLIMIT_NPROC counts the user's threads, as Linux's does; root's
	 * are not held to it. */
	if (parent->cred.u.real != 0 &&
	    (uint64_t)proc_user_tasks(parent->cred.u.real) >= parent->rlim[RLIMIT_NPROC].cur)
		return -EAGAIN;
	if (((flags & CLONE_THREAD) && !(flags & CLONE_SIGHAND)) ||
	    ((flags & CLONE_SIGHAND) && !(flags & CLONE_VM)))
		return -EINVAL;
	if (flags & CLONE_THREAD) {
		p = parent;
		tid = proc_alloc_pid(p->pidns);
		if (tid < 0)
			return tid;
	} else {
		p = new_process(parent, flags);
		if (!p)
			return -ENOMEM;
		tid = p->pid;
	}
	t = thread_alloc(p);
	if (!t) {
		if (!(flags & CLONE_THREAD)) {
			p->zombie = true;
			proc_free(p);
		}
		return -ENOMEM;
	}
	t->tid = tid;
	t->sigmask = self->sigmask;
	t->gs_base_user = self->gs_base_user;
	asm volatile("rdfsbase %0" : "=r"(t->fs_base));
	if (flags & CLONE_SETTLS)
		t->fs_base = r->tls;
	if (!(flags & CLONE_VM) || (flags & CLONE_VFORK))
		memcpy(t->altstack, self->altstack, sizeof(t->altstack));
	sched_fpu_save_current();
	memcpy(t->fpu, self->fpu, sched_xsave_size());

	/* The child resumes the program where the parent called, with 0. */
	tf = (struct trapframe *)(t->kstack_top - TF_SIZE);
	*tf = *self->syscall_tf;
	tf->rax = 0;
	tf->vector = 0;
	if (r->stack)
		tf->rsp = r->stack;

	/* each side gets the number it knows the child by */
	utid = pid_to_user(parent, tid);
	if (flags & CLONE_PARENT_SETTID)
		copy_to_user((void *)r->parent_tid, &utid, 4);
	if (flags & CLONE_CHILD_SETTID) {
		uint64_t pa = vm_translate_write(p->as, r->child_tid);
		int ctid = pid_to_user(p, tid);
		if (pa != ~0ULL && (r->child_tid & 3) == 0)
			memcpy(phys_to_virt(pa), &ctid, 4);
	}
	if (flags & CLONE_CHILD_CLEARTID)
		t->clear_child_tid = r->child_tid;

	if (flags & CLONE_VFORK)
		p->vfork_parent = self;
	sched_start_thread(t);
	if (flags & CLONE_VFORK) {
		/* The parent sleeps until the child has left its memory (execve or
		 * exit), as vfork promises. */
		while (p->vfork_parent == self) {
			self->state = T_BLOCKED;
			schedule();
		}
		/* The child ran on our stack and may have overwritten the return
		 * address the short syscall return would `ret` to. */
		self->tf_dirty = true;
	}
	return utid;
}

/* The child's first instructions in the library OS (entry.S ret_from_fork). */
void fork_child_start(struct trapframe *tf)
{
	exit_to_user(tf);
}

SYSCALL_DEFINE(fork)
{
	struct clone_req r = {.flags = SIGCHLD};
	return do_clone(&r);
}

SYSCALL_DEFINE(vfork)
{
	struct clone_req r = {.flags = CLONE_VFORK | CLONE_VM | SIGCHLD};
	return do_clone(&r);
}

/* x86-64 argument order: flags, stack, parent_tid, child_tid, tls. */
SYSCALL_DEFINE(clone)
{
	struct clone_req r = {
	    .flags = (uint64_t)a0,
	    .stack = (uint64_t)a1,
	    .parent_tid = (uint64_t)a2,
	    .child_tid = (uint64_t)a3,
	    .tls = (uint64_t)a4,
	};
	return do_clone(&r);
}

SYSCALL_DEFINE(clone3)
{
	struct clone_args ca;
	struct clone_req r;

	if ((size_t)a1 < CLONE_ARGS_SIZE_VER0 || (size_t)a1 > sizeof(ca))
		return -EINVAL;
	memset(&ca, 0, sizeof(ca));
	if (copy_from_user(&ca, (void *)a0, (size_t)a1))
		return -EFAULT;
	if (ca.set_tid || ca.set_tid_size || ca.cgroup || (ca.flags & CSIGNAL) ||
	    ca.exit_signal > 64)
		return -EINVAL;
	r.flags = ca.flags | ca.exit_signal;
	r.stack = ca.stack ? ca.stack + ca.stack_size : 0;
	r.parent_tid = ca.parent_tid;
	r.child_tid = ca.child_tid;
	r.tls = ca.tls;
	return do_clone(&r);
}
