/* SPDX-License-Identifier: MIT */
/* execve: replace the calling process's program. */
#include <linux/fcntl.h>

#include "oom.h"
#include "exec.h"
#include "printk.h"
#include "proc.h"
#include "signal_k.h"
#include "syscall.h"
#include "trapframe.h"
#include "uaccess.h"
#include "vfs.h"
#include "vm.h"

#define MAX_ARG_BYTES (2UL << 20)
/* The strings of most execs fit in a small buffer; bigger ones are taken
 * only when they do not. (A 2 MiB buffer per exec cost a scan of the page
 * bitmap and, freed, put 512 cold pages ahead of the warm ones.) */
static const size_t arg_bytes[] = {2048, 64UL << 10, MAX_ARG_BYTES};
#define MAX_PATH 4096

/* Program strings copied into one kernel buffer. */
struct argbuf {
	char *mem;
	size_t used, cap;
	char **vec;
	int n;
};

static long copy_strings(const char *const *uvec, struct argbuf *b)
{
	int n = 0;

	if (!uvec) { /* Linux accepts NULL as an empty list */
		b->vec = kzalloc(sizeof(char *));
		b->n = 0;
		return b->vec ? 0 : -ENOMEM;
	}
	for (;; n++) {
		uint64_t p;
		if (n >= EXEC_MAX_ARGS)
			return -E2BIG;
		if (copy_from_user(&p, &uvec[n], 8))
			return -EFAULT;
		if (!p)
			break;
	}
	b->vec = kmalloc(((size_t)n + 1) * sizeof(char *));
	if (!b->vec)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		uint64_t p;
		long len;
		if (copy_from_user(&p, &uvec[i], 8))
			return -EFAULT;
		len = strncpy_from_user(b->mem + b->used, (const char *)p, b->cap - b->used);
		if (len == -ENAMETOOLONG)
			return -E2BIG;
		if (len < 0)
			return len;
		b->vec[i] = b->mem + b->used;
		b->used += (size_t)len + 1;
	}
	b->vec[n] = NULL;
	b->n = n;
	return 0;
}

/* The new program starts with a fresh signal disposition (handlers back to
 * default, ignored stays ignored), unshared tables and clean registers. */
static long reset_process(struct proc *p, struct thread *t)
{
	struct files *f = files_dup(p->files);

	if (!f)
		return -ENOMEM;
	files_put(p->files);
	p->files = f;
	files_close_on_exec(f);
	if (p->sighand->refs > 1) {
		struct sighand *sh = kmalloc(sizeof(*sh));
		if (!sh)
			return -ENOMEM;
		*sh = *p->sighand;
		sh->refs = 1;
		p->sighand->refs--;
		p->sighand = sh;
	}
	for (int s = 1; s <= NSIG_KILN; s++)
		if (p->sighand->action[s].handler != 1 /* SIG_IGN */)
			memset(&p->sighand->action[s], 0, sizeof(p->sighand->action[s]));
	memset(t->altstack, 0, sizeof(t->altstack));
	t->gs_base_user = 0;
	t->fs_base = 0;
	asm volatile("wrfsbase %0" ::"r"(0UL) : "memory");
	memset(t->fpu, 0, sched_xsave_size());
	((uint32_t *)t->fpu)[6] = 0x1f80;
	((uint16_t *)t->fpu)[0] = 0x37f;
	sched_fpu_restore_current();
	return 0;
}

/* argv and envp into one buffer of cap bytes: -E2BIG if they do not fit. */
static long copy_args(const char *const *uargv, const char *const *uenvp, size_t cap,
                      struct argbuf *args, struct argbuf *env)
{
	long err;

	kfree(args->mem);
	kfree(args->vec);
	kfree(env->vec);
	*args = (struct argbuf){.mem = kmalloc(cap), .cap = cap};
	*env = (struct argbuf){.mem = args->mem, .cap = cap};
	if (!args->mem)
		return -ENOMEM;
	err = copy_strings(uargv, args);
	env->used = args->used;
	return err ? err : copy_strings(uenvp, env);
}

static long do_execve(const char *upath, const char *const *uargv, const char *const *uenvp)
{
	struct thread *t = cur_thread();
	struct proc *p = t->proc;
	struct argbuf args = {0}, env = {0};
	char path[MAX_PATH];
	struct exec_args ea;
	struct exec_image img;
	struct trapframe *tf = t->syscall_tf;
	struct aspace *old;
	const char *why;
	long err;

	err = strncpy_from_user(path, upath, sizeof(path));
	if (err < 0)
		goto out;
	if (p->nr_threads > 1) {
		/* Other threads would lose their memory under them. */
		err = -EAGAIN;
		goto out;
	}
	err = -E2BIG;
	for (unsigned i = 0; err == -E2BIG && i < sizeof(arg_bytes) / sizeof(arg_bytes[0]); i++)
		err = copy_args(uargv, uenvp, arg_bytes[i], &args, &env);
	if (err)
		goto out;
	ea = (struct exec_args){
	    .path = path, .argc = args.n, .argv = args.vec, .envc = env.n, .envp = env.vec};
	if (!ea.argc) { /* argv[0] = path, as Linux >= 6.x does for argc 0 */
		static char *one[2];
		one[0] = path;
		ea.argv = one;
		ea.argc = 1;
	}
	err = exec_load(&ea, &p->cred, p->no_new_privs, &img, &why);
	if (err)
		goto out;

	/* No way back from here. The parent of a vfork wakes first, so that
	 * the time slice it starts is armed with the switch (sched.c). */
	if (p->vfork_parent) {
		wake_thread(p->vfork_parent);
		p->vfork_parent = NULL;
	}
	old = p->as;
	p->as = img.as;
	aspace_activate(p->as);
	aspace_release(old);
	proc_set_name(p, path);
	memset(p->cap_dropped, 0, sizeof(p->cap_dropped));
	p->membarrier = 0;
	p->cred = img.cred; /* a set-user-ID program's owner, see exec_cred.c */
	p->nodump = img.secure || img.unreadable;
	if (reset_process(p, t)) {
		kprintf("kiln: %s: out of memory in execve\n", path);
		oom_note(p);
		proc_exit(9 /* SIGKILL */);
	}
	memset(tf, 0, sizeof(*tf));
	tf->rip = img.entry;
	tf->rsp = img.sp;
	tf->rflags = 0x202;
	t->tf_dirty = true;
	err = 0;
out:
	kfree(args.vec);
	kfree(env.vec);
	kfree(args.mem);
	return err;
}

SYSCALL_DEFINE(execve)
{
	return do_execve((const char *)a0, (const char *const *)a1, (const char *const *)a2);
}

SYSCALL_DEFINE(execveat)
{
	/* Paths relative to the working directory and AT_EMPTY_PATH-less use
	 * are what programs need; other directory fds are not supported. */
	if ((int)a0 != AT_FDCWD || (a4 & ~(long)AT_SYMLINK_NOFOLLOW))
		return -ENOSYS;
	return do_execve((const char *)a1, (const char *const *)a2, (const char *const *)a3);
}
