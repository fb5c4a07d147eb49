/* SPDX-License-Identifier: MIT */
/*
 * Inside procfs: what procfs.c (the tree, kept up to date on lookup, and its
 * open files), procfs_path.c (symlink targets), procfs_pid.c (the files of
 * a process) and procfs_sys.c (the files of the system, /proc/sys) share.
 *
 * Every procfs inode carries a struct pfs_node: which table entry it is and
 * whose (process, thread, descriptor). A file's text is made by the entry's
 * show() into a pfs_buf when it is opened.
 */
#ifndef KILN_LIBOS_PROCFS_H
#define KILN_LIBOS_PROCFS_H

#include "vfs_impl.h"

struct proc;
struct thread;

enum pfs_kind {
	PFS_FILE,        /* regular: show(), or the fixed text */
	PFS_LINK,        /* symlink to the fixed text */
	PFS_SELF,        /* the caller's "<pid>" */
	PFS_THREAD_SELF, /* the caller's "<pid>/task/<tid>" */
	PFS_EXE,         /* the process's program */
	PFS_CWD,         /* the process's working directory */
	PFS_FD_LINK,     /* what a descriptor has open */
	PFS_DIR,         /* fixed entries: sub */
	PFS_ROOT,        /* /proc: sub, self, and a directory per process */
	PFS_PID,         /* /proc/<pid>: sub */
	PFS_TASK,        /* /proc/<pid>/task: a directory per thread */
	PFS_TID,         /* /proc/<pid>/task/<tid>: sub */
	PFS_FD,          /* /proc/<pid>/fd: a symlink per descriptor */
	PFS_FDINFO,      /* /proc/<pid>/fdinfo: a file per descriptor */
};

/* What a file shows: ctx names whose (NULL proc for files of the system). */
struct pfs_ctx {
	struct proc *p;
	struct thread *t; /* a thread's own file (task/<tid>/...), else NULL */
	int fd;
};

/* Text being made: grows as needed; oom once memory ran out. */
struct pfs_buf {
	char *data;
	size_t len, cap;
	bool oom;
};

struct pfs_entry {
	const char *name;
	uint8_t kind;
	uint16_t perm;
	/* PFS_FILE: 0 or -errno. */
	int (*show)(struct pfs_buf *b, const struct pfs_ctx *c);
	/* A file programs may write: what one write(2) gave (at most 64
	 * bytes, NUL-terminated); 0 or -errno. */
	int (*write)(const struct pfs_ctx *c, const char *s, size_t n);
	const char *text;            /* PFS_FILE without show, PFS_LINK */
	const struct pfs_entry *sub; /* directories: ends with a NULL name */
	/* Reading it (opening a file, reading or following a link) needs the
	 * right to trace the process, as Linux's PTRACE_MODE_READ: environ,
	 * maps, the cwd, exe, root and descriptor links (pfs_may_trace). */
	bool traced;
};

#define PFS_SHOW(n, p, fn)                                               \
	{                                                                \
		.name = (n), .kind = PFS_FILE, .perm = (p), .show = (fn) \
	}
#define PFS_RW(n, fn, wfn)                                                                \
	{                                                                                 \
		.name = (n), .kind = PFS_FILE, .perm = 0644, .show = (fn), .write = (wfn) \
	}
#define PFS_TEXT(n, t)                                                   \
	{                                                                \
		.name = (n), .kind = PFS_FILE, .perm = 0444, .text = (t) \
	}
#define PFS_SUBDIR(n, s)                                               \
	{                                                              \
		.name = (n), .kind = PFS_DIR, .perm = 0555, .sub = (s) \
	}
#define PFS_NODE(n, k, p)                             \
	{                                             \
		.name = (n), .kind = (k), .perm = (p) \
	}
#define PFS_SYMLINK(n, t)                                                \
	{                                                                \
		.name = (n), .kind = PFS_LINK, .perm = 0777, .text = (t) \
	}
/* The same, for what only the process itself, its user and root see. */
#define PFS_TRACED_SHOW(n, p, fn)                                                        \
	{                                                                                \
		.name = (n), .kind = PFS_FILE, .perm = (p), .show = (fn), .traced = true \
	}
#define PFS_TRACED_NODE(n, k, p)                                      \
	{                                                             \
		.name = (n), .kind = (k), .perm = (p), .traced = true \
	}
#define PFS_TRACED_SYMLINK(n, t)                                                         \
	{                                                                                \
		.name = (n), .kind = PFS_LINK, .perm = 0777, .text = (t), .traced = true \
	}
#define PFS_END              \
	{                    \
		.name = NULL \
	}

/* An inode's synthesized data. */
struct pfs_node {
	struct inode_synth synth; /* first: inode->synth points here */
	const struct pfs_entry *ent;
	int pid, tid, fd; /* pid and tid: global numbers (pidns.h) */
	int view;         /* a pid directory: the PID namespace its name is of */
	uint64_t gen;     /* the process's start_ns: a pid can be reused */
	bool populated;   /* a process or thread directory has its sub entries */
	bool attached;    /* a root made by mount(2), not the boot /proc */
};

static inline struct pfs_node *pfs_node_of(const struct inode *ip)
{
	return container_of(ip->synth, struct pfs_node, synth);
}

/* May the caller read what only p, its user and root may (Linux's
 * ptrace_may_access(PTRACE_MODE_READ_FSCREDS) without Yama): p itself;
 * CAP_SYS_PTRACE (root's); or a caller whose file-system uid and gid are
 * all of p's real, effective and saved ones, while p is dumpable. */
bool pfs_may_trace(const struct proc *p);

void pb_put(struct pfs_buf *b, const void *s, size_t n);
void pb_printf(struct pfs_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pb_octal(struct pfs_buf *b, uint64_t v, int width);

/* procfs_path.c: paths of things in the tree, into buf[VFS_PATH_MAX]; 0
 * or -errno. name (len bytes) in dir, or dir itself if len is 0: */
int pfs_path_in(struct inode *dir, const char *name, size_t len, char *buf);
int pfs_inode_path(struct inode *ip, char *buf);
/* -EBUSY when asked again while resolving (through /proc/<pid>/exe). */
int pfs_exe_path(struct proc *p, char *buf, uint64_t *ino);
void pfs_fd_target(struct file *f, char *buf); /* never fails */
uint64_t pfs_ramfs_pages(void);                /* file pages in the whole tree */

/* procfs_sys.c, procfs_pid.c: the tables. */
extern const struct pfs_entry pfs_root_entries[];
extern const struct pfs_entry pfs_pid_entries[];
extern const struct pfs_entry pfs_tid_entries[];
int pfs_show_fdinfo(struct pfs_buf *b, const struct pfs_ctx *c);

#endif
