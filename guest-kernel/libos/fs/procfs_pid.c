/* SPDX-License-Identifier: MIT */
/*
 * The files of /proc/<pid> and /proc/<pid>/task/<tid>, in the formats of
 * Linux 6.1 (fs/proc/array.c, task_mmu.c): real values where kiln keeps
 * them, 0 where it does not (page faults, context switches, CPU time until
 * the scheduler counts it).
 */
#include "procfs.h"
#include "ktime.h"
#include "mm.h"
#include "pidns.h"
#include "proc.h"
#include "vm.h"

#define TICKS_PER_SEC 100 /* USER_HZ: AT_CLKTCK */
#define NS_PER_TICK   (1000000000UL / TICKS_PER_SEC)
#define ARGS_MAX      (256UL << 10) /* exec's limit on argv and envp */
#define SIGPENDING    4096          /* RLIMIT_SIGPENDING */
#define SIG_IGN_K     1

/* ---------------------------------------------------------------- helpers */

/* A pid, tid, pgid or sid as the reader sees it (pidns.h). */
static int upid(int pid)
{
	return pid_to_user(cur_proc(), pid);
}

/* The thread that speaks for the process: the first one, else any. */
static struct thread *leader(struct proc *p)
{
	for (struct thread *t = p->threads; t; t = t->next_in_proc)
		if (t->tid == p->pid)
			return t;
	return p->threads;
}

static char state_of(struct proc *p, struct thread *only)
{
	if (p->zombie)
		return 'Z';
	if (p->stopped || (only && only->state == T_STOPPED))
		return 'T';
	for (struct thread *t = only ? only : p->threads; t; t = only ? NULL : t->next_in_proc)
		if (t->state == T_RUNNABLE)
			return 'R';
	return 'S';
}

static const char *state_name(char s)
{
	switch (s) {
	case 'R':
		return "R (running)";
	case 'T':
		return "T (stopped)";
	case 'Z':
		return "Z (zombie)";
	default:
		return "S (sleeping)";
	}
}

/* The ELF images exec loaded are the mappings without flags; the program's
 * lie below its heap, the interpreter's above. */
static bool is_program(const struct aspace *as, const struct vma *v)
{
	return v->flags == 0 && v->end <= as->brk_start;
}

struct mem {
	uint64_t size, data, stack, text, lib, rss;
	uint64_t start_code, end_code;
};

static void mem_of(const struct aspace *as, struct mem *m)
{
	memset(m, 0, sizeof(*m));
	if (!as)
		return;
	for (const struct vma *v = as->vmas; v; v = v->next) {
		uint64_t len = v->end - v->start;

		m->size += len;
		if (v->flags & VMA_STACK)
			m->stack += len;
		else if (v->prot & PROT_WRITE)
			m->data += len;
		if (!(v->prot & PROT_EXEC))
			continue;
		if (!is_program(as, v)) {
			m->lib += len;
			continue;
		}
		m->text += len;
		if (!m->start_code)
			m->start_code = v->start;
		m->end_code = v->end;
	}
	m->rss = as->nr_pages * PAGE_SIZE;
}

struct sigs {
	uint64_t ign, cgt;
};

static struct sigs sigs_of(const struct proc *p)
{
	struct sigs s = {0, 0};

	for (int sig = 1; p->sighand && sig <= NSIG_KILN; sig++) {
		uint64_t h = p->sighand->action[sig].handler;

		if (h == SIG_IGN_K)
			s.ign |= SIGBIT(sig);
		else if (h)
			s.cgt |= SIGBIT(sig);
	}
	return s;
}

static int nr_signals(uint64_t set)
{
	int n = 0;

	for (; set; set &= set - 1) /* no libgcc for __builtin_popcount */
		n++;
	return n;
}

static int fd_size(struct proc *p)
{
	int top = 0;

	for (int fd = 0; p->files && fd < FILES_MAX; fd++)
		if (fd_get(p->files, fd))
			top = fd + 1;
	return (int)ALIGN_UP(MAX(top, 1), 64);
}

/* Bytes of another process's memory, page by page through its tables. */
static void put_user_range(struct pfs_buf *b, struct aspace *as, uint64_t start, uint64_t end)
{
	if (!as || end <= start || end - start > ARGS_MAX)
		return;
	while (start < end) {
		uint64_t pa = vm_translate(as, start);
		size_t chunk = MIN(end - start, PAGE_SIZE - (start & (PAGE_SIZE - 1)));

		if (pa == ~0ULL)
			return;
		pb_put(b, phys_to_virt(pa), chunk);
		start += chunk;
	}
}

/* ---------------------------------------------------------------- stat, statm */

static int show_stat(struct pfs_buf *b, const struct pfs_ctx *c)
{
	struct proc *p = c->p;
	struct thread *t = c->t ? c->t : leader(p);
	struct aspace *as = p->as;
	struct mem m;
	struct sigs s = sigs_of(p);
	uint64_t pending = t ? t->pending : 0, blocked = t ? t->sigmask : 0;

	mem_of(as, &m);
	pb_printf(b, "%d (%s) %c %d %d %d 0 -1 %u ", upid(c->t ? c->t->tid : p->pid), p->comm,
	          state_of(p, c->t), upid(p->ppid), upid(p->pgid), upid(p->sid),
	          0x400000 /* PF_RANDOMIZE */);
	pb_printf(b, "0 0 0 0 %lu %lu 0 0 20 0 %d 0 %lu ", p->user_ns / NS_PER_TICK,
	          p->sys_ns / NS_PER_TICK, p->nr_threads, p->start_ns / NS_PER_TICK);
	pb_printf(b, "%lu %lu %lu %lu %lu 0 0 0 ", m.size, m.rss / PAGE_SIZE, ~0UL, m.start_code,
	          m.end_code);
	/* Linux shows the old 31-bit sigset_t here. */
	pb_printf(b, "%lu %lu %lu %lu 0 0 0 17 0 0 0 0 0 0 ", pending & 0x7fffffff,
	          blocked & 0x7fffffff, s.ign & 0x7fffffff, s.cgt & 0x7fffffff);
	pb_printf(b, "%lu %lu %lu %lu %lu %lu %lu %d\n", as ? m.end_code : 0,
	          as ? as->brk_start : 0, as ? as->brk_start : 0, as ? as->arg_start : 0,
	          as ? as->arg_end : 0, as ? as->env_start : 0, as ? as->env_end : 0,
	          p->zombie ? p->exit_code : 0);
	return 0;
}

static int show_statm(struct pfs_buf *b, const struct pfs_ctx *c)
{
	struct mem m;

	mem_of(c->p->as, &m);
	pb_printf(b, "%lu %lu 0 %lu 0 %lu 0\n", m.size / PAGE_SIZE, m.rss / PAGE_SIZE,
	          m.text / PAGE_SIZE, (m.data + m.stack) / PAGE_SIZE);
	return 0;
}

/* ---------------------------------------------------------------- status */

static void status_mem(struct pfs_buf *b, const struct aspace *as)
{
	struct mem m;

	mem_of(as, &m);
	pb_printf(b,
	          "VmPeak:\t%8lu kB\nVmSize:\t%8lu kB\nVmLck:\t%8u kB\nVmPin:\t%8u kB\n"
	          "VmHWM:\t%8lu kB\nVmRSS:\t%8lu kB\nRssAnon:\t%8lu kB\nRssFile:\t%8u kB\n"
	          "RssShmem:\t%8u kB\nVmData:\t%8lu kB\nVmStk:\t%8lu kB\nVmExe:\t%8lu kB\n"
	          "VmLib:\t%8lu kB\nVmPTE:\t%8u kB\nVmSwap:\t%8u kB\nHugetlbPages:\t%8u kB\n",
	          m.size >> 10, m.size >> 10, 0, 0, m.rss >> 10, m.rss >> 10, m.rss >> 10, 0, 0,
	          m.data >> 10, m.stack >> 10, m.text >> 10, m.lib >> 10, 0, 0, 0);
	pb_printf(b, "CoreDumping:\t0\nTHP_enabled:\t1\n");
}

/* As Linux: the number in each namespace from the reader's down to p's. */
static void status_ns(struct pfs_buf *b, const char *name, const struct proc *p, int id)
{
	pb_printf(b, "%s:\t%d", name, upid(id));
	if (!cur_proc() || (!cur_proc()->pidns && p->pidns))
		pb_printf(b, "\t%d", pid_to_user(p, id));
	pb_printf(b, "\n");
}

static int show_status(struct pfs_buf *b, const struct pfs_ctx *c)
{
	struct proc *p = c->p;
	struct thread *t = c->t ? c->t : leader(p);
	char state = state_of(p, c->t);
	int id = c->t ? c->t->tid : p->pid;
	uint64_t pending = t ? t->pending : 0;
	struct sigs s = sigs_of(p);
	const struct cred *cr = &p->cred;
	uint64_t caps[3];

	pb_printf(b, "Name:\t%s\nUmask:\t", p->comm);
	pb_octal(b, p->fs ? p->fs->umask : 022, 4);
	pb_printf(b,
	          "\nState:\t%s\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\nTracerPid:\t0\n"
	          "Uid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\nFDSize:\t%d\nGroups:\t",
	          state_name(state), upid(p->pid), upid(id), upid(p->ppid), cr->u.real, cr->u.eff,
	          cr->u.saved, cr->u.fs, cr->g.real, cr->g.eff, cr->g.saved, cr->g.fs,
	          p->zombie ? 0 : fd_size(p));
	for (uint32_t i = 0; i < cr->ngroups; i++)
		pb_printf(b, i ? " %u" : "%u", cr->groups[i]);
	/* Linux ends the list with a space, even an empty one. */
	pb_printf(b, " \n");
	status_ns(b, "NStgid", p, p->pid);
	status_ns(b, "NSpid", p, id);
	status_ns(b, "NSpgid", p, p->pgid);
	status_ns(b, "NSsid", p, p->sid);
	if (!p->zombie)
		status_mem(b, p->as);
	pb_printf(b,
	          "Threads:\t%d\nSigQ:\t%d/%d\nSigPnd:\t%016lx\nShdPnd:\t%016lx\n"
	          "SigBlk:\t%016lx\nSigIgn:\t%016lx\nSigCgt:\t%016lx\n",
	          p->nr_threads, nr_signals(pending | p->shared_pending), SIGPENDING, pending,
	          p->shared_pending, t ? t->sigmask : 0, s.ign, s.cgt);
	/* The capabilities its ids give it (sys_cred.c); no ambient ones,
	 * the bounding set whole. */
	proc_caps(p, caps);
	pb_printf(b,
	          "CapInh:\t%016lx\nCapPrm:\t%016lx\nCapEff:\t%016lx\nCapBnd:\t%016lx\n"
	          "CapAmb:\t0000000000000000\nNoNewPrivs:\t%d\nSeccomp:\t0\n",
	          (unsigned long)caps[2], (unsigned long)caps[1], (unsigned long)caps[0],
	          (unsigned long)PROC_CAP_ALL, p->no_new_privs);
	pb_printf(b, "Seccomp_filters:\t0\nSpeculation_Store_Bypass:\tthread vulnerable\n"
	             "SpeculationIndirectBranch:\tconditional enabled\n"
	             "Cpus_allowed:\t1\nCpus_allowed_list:\t0\n"
	             "Mems_allowed:\t1\nMems_allowed_list:\t0\n"
	             "voluntary_ctxt_switches:\t0\nnonvoluntary_ctxt_switches:\t0\n");
	return 0;
}

/* ---------------------------------------------------------------- memory */

static int show_maps(struct pfs_buf *b, const struct pfs_ctx *c)
{
	struct aspace *as = c->p->as;
	char *exe = as ? kmalloc(VFS_PATH_MAX) : NULL;
	uint64_t ino = 0, base = 0;

	if (!as)
		return 0;
	if (exe && pfs_exe_path(c->p, exe, &ino)) {
		kfree(exe);
		exe = NULL;
	}
	for (const struct vma *v = as->vmas; v && !base; v = v->next)
		if (is_program(as, v))
			base = v->start;
	for (const struct vma *v = as->vmas; v; v = v->next) {
		bool prog = exe && is_program(as, v);
		const char *name = (v->flags & VMA_HEAP)    ? "[heap]"
		                   : (v->flags & VMA_STACK) ? "[stack]"
		                   : prog                   ? exe
		                                            : NULL;
		size_t start = b->len;
		int col;

		/* A shared mapping of a file: its offset and inode. */
		bool shm = (v->flags & VMA_SHARED) && v->ops == &vfs_map_ops;
		uint64_t off = shm ? v->pgoff * PAGE_SIZE : prog ? v->start - base : 0;
		uint64_t vino = shm ? vfs_inode_ino(v->obj) : prog ? ino : 0;

		/* Program pages are copies of the file: offsets as laid out in it. */
		pb_printf(b, "%08lx-%08lx %c%c%c%c %08lx %02x:%02x %lu ", v->start, v->end,
		          v->prot & PROT_READ ? 'r' : '-', v->prot & PROT_WRITE ? 'w' : '-',
		          v->prot & PROT_EXEC ? 'x' : '-', v->flags & VMA_SHARED ? 's' : 'p', off,
		          vino ? VFS_MAJOR(VFS_DEV) : 0, vino ? VFS_MINOR(VFS_DEV) : 0, vino);
		if (name) { /* Linux pads to column 72, then a space */
			for (col = (int)(b->len - start); col < 72; col++)
				pb_put(b, " ", 1);
			pb_printf(b, " %s", name);
		}
		pb_put(b, "\n", 1);
	}
	kfree(exe);
	return 0;
}

static int show_cmdline(struct pfs_buf *b, const struct pfs_ctx *c)
{
	struct aspace *as = c->p->as;

	if (as)
		put_user_range(b, as, as->arg_start, as->arg_end);
	return 0;
}

static int show_environ(struct pfs_buf *b, const struct pfs_ctx *c)
{
	struct aspace *as = c->p->as;

	if (as)
		put_user_range(b, as, as->env_start, as->env_end);
	return 0;
}

/* ---------------------------------------------------------------- small files */

static int show_comm(struct pfs_buf *b, const struct pfs_ctx *c)
{
	pb_printf(b, "%s\n", c->p->comm);
	return 0;
}

/* Threads have no names of their own here: only the main thread's is kept. */
static int write_comm(const struct pfs_ctx *c, const char *s, size_t n)
{
	struct proc *p = c->p;

	if (n && s[n - 1] == '\n')
		n--;
	if (c->t && c->t->tid != p->pid)
		return 0;
	n = MIN(n, sizeof(p->comm) - 1);
	memcpy(p->comm, s, n);
	p->comm[n] = '\0';
	return 0;
}

/* oom_score_adj has no effect (there is no OOM killer) but reads back. */
static struct {
	int pid;
	uint64_t gen;
	int adj;
} oom_adj[32];

static int show_oom_adj(struct pfs_buf *b, const struct pfs_ctx *c)
{
	int adj = 0;

	for (size_t i = 0; i < ARRAY_SIZE(oom_adj); i++)
		if (oom_adj[i].pid == c->p->pid && oom_adj[i].gen == c->p->start_ns)
			adj = oom_adj[i].adj;
	pb_printf(b, "%d\n", adj);
	return 0;
}

static int write_oom_adj(const struct pfs_ctx *c, const char *s, size_t n)
{
	bool neg = n && s[0] == '-';
	size_t i = neg, free_slot = ARRAY_SIZE(oom_adj);
	int v = 0;

	for (; i < n && s[i] >= '0' && s[i] <= '9' && v <= 1000; i++)
		v = v * 10 + (s[i] - '0');
	if (i == (size_t)neg || (i < n && !(s[i] == '\n' && i + 1 == n)) || v > 1000)
		return -EINVAL;
	v = neg ? -v : v;
	for (i = 0; i < ARRAY_SIZE(oom_adj); i++) {
		if (oom_adj[i].pid == c->p->pid && oom_adj[i].gen == c->p->start_ns)
			break;
		if (free_slot == ARRAY_SIZE(oom_adj) &&
		    (!oom_adj[i].pid || !proc_find(oom_adj[i].pid)))
			free_slot = i;
	}
	if (i == ARRAY_SIZE(oom_adj))
		i = free_slot;
	if (i == ARRAY_SIZE(oom_adj))
		return v ? -ENOSPC : 0;
	oom_adj[i].pid = c->p->pid;
	oom_adj[i].gen = c->p->start_ns;
	oom_adj[i].adj = v;
	return 0;
}

int pfs_show_fdinfo(struct pfs_buf *b, const struct pfs_ctx *c)
{
	struct files *files = c->p->files;
	struct file *f = files ? fd_get(files, c->fd) : NULL;

	if (!f)
		return -ENOENT;
	pb_printf(b, "pos:\t%lu\nflags:\t0", f->pos);
	pb_octal(b, f->flags | (fd_cloexec(files, c->fd) ? O_CLOEXEC : 0), 0);
	pb_printf(b, "\nmnt_id:\t1\nino:\t%lu\n", vfs_inode_ino(file_inode(f)));
	return 0;
}

/* One file system holds everything; these are the names programs expect. */
static bool have_devpts(void)
{
	struct inode *ip;

	if (vfs_lookup_at(NULL, "/dev/pts", true, &ip))
		return false;
	inode_put(ip);
	return true;
}

static int show_mounts(struct pfs_buf *b, const struct pfs_ctx *c)
{
	pb_printf(b,
	          "rootfs / rootfs rw 0 0\nproc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n");
	if (have_devpts())
		pb_printf(b, "devpts /dev/pts devpts rw,nosuid,noexec,relatime,mode=600 0 0\n");
	pb_printf(b, "tmpfs /tmp tmpfs rw 0 0\n");
	return 0;
}

static int show_mountinfo(struct pfs_buf *b, const struct pfs_ctx *c)
{
	pb_printf(b, "1 1 0:2 / / rw - rootfs rootfs rw\n"
	             "2 1 0:3 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n");
	if (have_devpts())
		pb_printf(b, "3 1 0:4 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw\n");
	pb_printf(b, "4 1 0:5 / /tmp rw - tmpfs tmpfs rw\n");
	return 0;
}

/* ---------------------------------------------------------------- tables */

const struct pfs_entry pfs_pid_entries[] = {
    PFS_NODE("fd", PFS_FD, 0500),
    PFS_NODE("fdinfo", PFS_FDINFO, 0500),
    PFS_NODE("task", PFS_TASK, 0555),
    PFS_TRACED_NODE("exe", PFS_EXE, 0777),
    PFS_TRACED_NODE("cwd", PFS_CWD, 0777),
    PFS_TRACED_SYMLINK("root", "/"),
    PFS_SHOW("cmdline", 0444, show_cmdline),
    PFS_RW("comm", show_comm, write_comm),
    PFS_TRACED_SHOW("environ", 0400, show_environ),
    PFS_TRACED_SHOW("maps", 0444, show_maps),
    PFS_SHOW("stat", 0444, show_stat),
    PFS_SHOW("statm", 0444, show_statm),
    PFS_SHOW("status", 0444, show_status),
    PFS_SHOW("mounts", 0444, show_mounts),
    PFS_SHOW("mountinfo", 0444, show_mountinfo),
    PFS_TEXT("cgroup", "0::/\n"),
    PFS_TEXT("oom_score", "0\n"),
    PFS_RW("oom_score_adj", show_oom_adj, write_oom_adj),
    PFS_TEXT("wchan", "0"),
    PFS_END,
};

const struct pfs_entry pfs_tid_entries[] = {
    PFS_SHOW("cmdline", 0444, show_cmdline),
    PFS_RW("comm", show_comm, write_comm),
    PFS_TRACED_SHOW("maps", 0444, show_maps),
    PFS_SHOW("stat", 0444, show_stat),
    PFS_SHOW("statm", 0444, show_statm),
    PFS_SHOW("status", 0444, show_status),
    PFS_END,
};
