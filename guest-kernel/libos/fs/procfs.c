/* SPDX-License-Identifier: MIT */
/*
 * /proc: ramfs directories that procfs keeps up to date as programs look
 * into them. Before a lookup in one of its directories (inode_ops.refresh)
 * the entry looked for is made to match the system: a process directory
 * appears or goes, a symlink gets its target (self, exe, cwd, fd/N); before
 * a listing, the whole directory is. Everything else (path walk, getdents,
 * stat, readlink, getcwd) is the ordinary ramfs code.
 *
 * A regular file's text is made when it is opened, so that reading a
 * changing process gives one consistent snapshot; a read at offset 0 after
 * the first takes a new one (pread(fd, .., 0) polls, as on Linux).
 */
#include "procfs.h"
#include "mm.h"
#include "pidns.h"
#include "printk.h"
#include "proc.h"

#define PFS_WRITE_MAX 64

static const struct inode_ops pfs_iops;

static const struct pfs_entry root_entry = {
    .name = "proc", .kind = PFS_ROOT, .perm = 0555, .sub = pfs_root_entries};
static const struct pfs_entry pid_entry = {
    .name = "", .kind = PFS_PID, .perm = 0555, .sub = pfs_pid_entries};
static const struct pfs_entry tid_entry = {
    .name = "", .kind = PFS_TID, .perm = 0555, .sub = pfs_tid_entries};
static const struct pfs_entry fd_link_entry = PFS_TRACED_NODE("", PFS_FD_LINK, 0700);
static const struct pfs_entry fdinfo_entry = PFS_SHOW("", 0400, pfs_show_fdinfo);

/* ---------------------------------------------------------------- text */

static bool pb_grow(struct pfs_buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 1024;
	char *n;

	if (b->oom)
		return false;
	while (cap < b->len + need)
		cap *= 2;
	if (cap == b->cap)
		return true;
	n = kmalloc(cap);
	if (!n) {
		b->oom = true;
		return false;
	}
	if (b->len)
		memcpy(n, b->data, b->len);
	kfree(b->data);
	b->data = n;
	b->cap = cap;
	return true;
}

void pb_put(struct pfs_buf *b, const void *s, size_t n)
{
	if (n && pb_grow(b, n)) {
		memcpy(b->data + b->len, s, n);
		b->len += n;
	}
}

void pb_printf(struct pfs_buf *b, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = (size_t)kvsnprintf(b->data ? b->data + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < room) {
			b->len += n;
			return;
		}
		if (!pb_grow(b, n + 1))
			return;
	}
}

/* ksnprintf has no %o. */
void pb_octal(struct pfs_buf *b, uint64_t v, int width)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + (v & 7));
		v >>= 3;
	} while (v);
	for (; width > n; width--)
		pb_put(b, "0", 1);
	while (n)
		pb_put(b, &tmp[--n], 1);
}

/* ---------------------------------------------------------------- the tree */

static struct proc *node_proc(const struct pfs_node *n)
{
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (p->pid == n->pid && p->start_ns == n->gen)
			return p;
	return NULL;
}

bool pfs_may_trace(const struct proc *p)
{
	const struct proc *me = cur_thread()->proc; /* (NULL while booting) */
	const struct cred *c, *t = &p->cred;

	if (!me || me == p)
		return true;
	c = &me->cred;
	if (proc_capable(me, 19 /* CAP_SYS_PTRACE */))
		return true;
	return !p->nodump && c->u.fs == t->u.real && c->u.fs == t->u.eff && c->u.fs == t->u.saved &&
	       c->g.fs == t->g.real && c->g.fs == t->g.eff && c->g.fs == t->g.saved;
}

/* Linux's task_dump_owner: the files of a process are its effective
 * user's and group's, root's while it is not dumpable; the system's are
 * root's (whoever's lookup made the inode). */
static void own(struct inode *ip, const struct pfs_node *n)
{
	const struct proc *p = n->pid ? node_proc(n) : NULL;

	ip->uid = p && !p->nodump ? p->cred.u.eff : 0;
	ip->gid = p && !p->nodump ? p->cred.g.eff : 0;
}

static struct thread *proc_thread(struct proc *p, int tid)
{
	for (struct thread *t = p->threads; t; t = t->next_in_proc)
		if (t->tid == tid)
			return t;
	return NULL;
}

/* A name of ours: the ramfs lookup would refresh the directory again. */
static struct dentry *find_entry(struct inode *dir, const char *name, size_t len)
{
	for (struct dentry *de = dir->dir.head; de; de = de->next)
		if (de->namelen == len && !memcmp(de->name, name, len))
			return de;
	return NULL;
}

/* A pid, tid or fd as procfs names them: decimal, no leading zeros. */
static int name_to_int(const char *s, size_t len)
{
	int v = 0;

	if (!len || len > 9 || (len > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static bool is_dir_kind(int kind)
{
	return kind >= PFS_DIR;
}

static bool is_link_kind(int kind)
{
	return kind >= PFS_LINK && kind <= PFS_FD_LINK;
}

static void set_target(struct inode *ip, const char *s)
{
	size_t len = strlen(s);
	char *t;

	if (ip->target && ip->size == len && !memcmp(ip->target, s, len))
		return;
	t = kstrndup(s, len);
	if (!t)
		return; /* the old one stays */
	kfree(ip->target);
	ip->target = t;
	ip->size = len;
}

/* A new entry in dir, of ent, for what owner names (NULL: the system). */
static struct inode *add_entry(struct inode *dir, const char *name, size_t len,
                               const struct pfs_entry *ent, const struct pfs_node *owner)
{
	uint32_t type = is_dir_kind(ent->kind)    ? S_IFDIR
	                : is_link_kind(ent->kind) ? S_IFLNK
	                                          : S_IFREG;
	struct inode *ip = inode_alloc(type | ent->perm);
	struct pfs_node *n = kzalloc(sizeof(*n));
	int err;

	if (!ip || !n) {
		kfree(n);
		if (ip)
			inode_put(ip);
		return NULL;
	}
	if (owner)
		*n = *owner;
	n->synth.ops = &pfs_iops;
	n->ent = ent;
	n->populated = false;
	ip->synth = &n->synth;
	own(ip, n);
	if (type == S_IFLNK)
		set_target(ip, ent->text ? ent->text : "/");
	err = ramfs_add(dir, name, len, ip);
	inode_put(ip); /* on success the name keeps it */
	return err ? NULL : ip;
}

static void clear_dir(struct inode *dir);

static void remove_entry(struct inode *dir, struct dentry *de)
{
	if (S_ISDIR(de->ip->mode))
		clear_dir(de->ip); /* ramfs frees only empty directories' names */
	ramfs_unlink(dir, de);
}

/* At most four levels deep: /proc/<pid>/task/<tid>/. */
static void clear_dir(struct inode *dir)
{
	while (dir->dir.head)
		remove_entry(dir, dir->dir.head);
}

/* The fixed entry of dir named name, made if missing; for a listing (name
 * NULL) all of them. A process's directory has some 20: made whole at the
 * first lookup, they cost each new process's first look at /proc/self/exe
 * (busybox's, at start-up) ~20 us. */
static void populate(struct inode *dir, struct pfs_node *n, const char *name, size_t len)
{
	bool ok = true;

	if (n->populated)
		return;
	for (const struct pfs_entry *e = n->ent->sub; e->name; e++) {
		size_t elen = strlen(e->name);

		if (name && (elen != len || memcmp(e->name, name, len)))
			continue;
		if (!find_entry(dir, e->name, elen))
			ok &= add_entry(dir, e->name, elen, e, n) != NULL;
		if (name)
			return;
	}
	if (!name)
		n->populated = ok;
}

/* The entry named by a number (pid, tid, fd), made if missing. */
static struct inode *numbered(struct inode *dir, int num, const struct pfs_entry *ent,
                              const struct pfs_node *owner)
{
	char name[16];
	int len = ksnprintf(name, sizeof(name), "%d", num);
	struct dentry *de = find_entry(dir, name, len);

	return de ? de->ip : add_entry(dir, name, len, ent, owner);
}

/* Drop the numbered entries for which keep() says no. */
static void prune(struct inode *dir, bool (*keep)(const struct pfs_node *n, void *arg), void *arg)
{
	struct dentry *de = dir->dir.head, *next;

	for (; de; de = next) {
		next = de->next;
		if (!keep(pfs_node_of(de->ip), arg))
			remove_entry(dir, de);
	}
}

/* ---------------------------------------------------------------- refresh */

/* Who looks: pid directories are named by the numbers of its namespace
 * (pidns.h), and made again when one of another namespace looks. */
static struct proc *viewer(void)
{
	struct thread *t = cur_thread();

	return t ? t->proc : NULL;
}

static int viewer_ns(void)
{
	struct proc *me = viewer();

	return me ? me->pidns : 0;
}

static bool proc_alive(const struct pfs_node *n, void *arg)
{
	return n->ent->kind != PFS_PID || (node_proc(n) && n->view == viewer_ns());
}

static void add_proc(struct inode *dir, struct proc *p)
{
	struct pfs_node owner = {.pid = p->pid, .gen = p->start_ns, .view = viewer_ns()};

	numbered(dir, pid_to_user(viewer(), p->pid), &pid_entry, &owner);
}

static void refresh_root(struct inode *dir, struct pfs_node *n, const char *name, size_t len)
{
	struct thread *self = cur_thread();
	struct dentry *de;
	char buf[40];
	int pid, last = 0;

	prune(dir, proc_alive, NULL);
	populate(dir, n, name, len);
	if (name) {
		de = find_entry(dir, name, len);
		if (de && self && self->proc) {
			struct pfs_node *ln = pfs_node_of(de->ip);

			if (ln->ent->kind == PFS_SELF)
				ksnprintf(buf, sizeof(buf), "%d",
				          pid_to_user(self->proc, self->proc->pid));
			else if (ln->ent->kind == PFS_THREAD_SELF)
				ksnprintf(buf, sizeof(buf), "%d/task/%d",
				          pid_to_user(self->proc, self->proc->pid),
				          pid_to_user(self->proc, self->tid));
			else
				return;
			set_target(de->ip, buf);
			return;
		}
		pid = pid_from_user(viewer(), name_to_int(name, len));
		for (struct proc *p = proc_first(); p && pid > 0 && !de; p = p->next_all)
			if (p->pid == pid)
				add_proc(dir, p);
		return;
	}
	/* A listing: every process the viewer sees, by pid. */
	for (;;) {
		struct proc *next = NULL;

		for (struct proc *p = proc_first(); p; p = p->next_all)
			if (p->pid > last && (!next || p->pid < next->pid) &&
			    pid_visible(viewer(), p))
				next = p;
		if (!next)
			return;
		add_proc(dir, next);
		last = next->pid;
	}
}

static void update_link(struct inode *ip, struct proc *p)
{
	struct pfs_node *n = pfs_node_of(ip);
	char *buf;
	uint64_t ino;

	if (n->ent->kind != PFS_EXE && n->ent->kind != PFS_CWD)
		return;
	buf = kmalloc(VFS_PATH_MAX);
	if (!buf)
		return;
	if (n->ent->kind == PFS_EXE) {
		if (!pfs_exe_path(p, buf, &ino))
			set_target(ip, buf);
	} else {
		if (!p->fs || pfs_path_in(p->fs->cwd, NULL, 0, buf))
			ksnprintf(buf, VFS_PATH_MAX, "/");
		set_target(ip, buf);
	}
	kfree(buf);
}

/* /proc/<pid> and /proc/<pid>/task/<tid>: fixed entries while it lives. */
static void refresh_proc(struct inode *dir, struct pfs_node *n, const char *name, size_t len)
{
	struct proc *p = node_proc(n);
	struct dentry *de;

	if (!p || (n->ent->kind == PFS_TID && !proc_thread(p, n->tid))) {
		clear_dir(dir);
		return;
	}
	populate(dir, n, name, len);
	if (name && (de = find_entry(dir, name, len)))
		update_link(de->ip, p);
}

static bool thread_alive(const struct pfs_node *n, void *p)
{
	return proc_thread(p, n->tid) != NULL;
}

static void add_thread(struct inode *dir, const struct pfs_node *n, struct thread *t)
{
	struct pfs_node owner = {.pid = n->pid, .gen = n->gen, .tid = t->tid, .view = n->view};

	numbered(dir, pid_to_user(viewer(), t->tid), &tid_entry, &owner);
}

static void refresh_task(struct inode *dir, struct pfs_node *n, const char *name, size_t len)
{
	struct proc *p = node_proc(n);
	struct thread *t;
	int last = 0;

	if (!p) {
		clear_dir(dir);
		return;
	}
	prune(dir, thread_alive, p);
	if (name) {
		t = proc_thread(p, pid_from_user(viewer(), name_to_int(name, len)));
		if (t)
			add_thread(dir, n, t);
		return;
	}
	for (;;) {
		struct thread *next = NULL;

		for (t = p->threads; t; t = t->next_in_proc)
			if (t->tid > last && (!next || t->tid < next->tid))
				next = t;
		if (!next)
			return;
		add_thread(dir, n, next);
		last = next->tid;
	}
}

static bool fd_open(const struct pfs_node *n, void *files)
{
	return fd_get(files, n->fd) != NULL;
}

/* The entry of an open descriptor; a link's target and mode are made anew. */
static void add_fd(struct inode *dir, const struct pfs_node *n, struct file *f, int fd, bool update)
{
	struct pfs_node owner = {.pid = n->pid, .gen = n->gen, .fd = fd};
	bool link = n->ent->kind == PFS_FD;
	struct inode *ip = numbered(dir, fd, link ? &fd_link_entry : &fdinfo_entry, &owner);
	unsigned int acc = f->flags & O_ACCMODE;
	char *buf;

	if (!ip || !link || !update || !(buf = kmalloc(VFS_PATH_MAX)))
		return;
	pfs_fd_target(f, buf);
	set_target(ip, buf);
	kfree(buf);
	/* lr-x------, l-wx------ or lrwx------, as Linux shows the access mode */
	ip->mode = S_IFLNK | 0100 | (acc != O_WRONLY ? 0400 : 0) | (acc != O_RDONLY ? 0200 : 0);
}

/* /proc/<pid>/fd and fdinfo: an entry per open descriptor. */
static void refresh_fds(struct inode *dir, struct pfs_node *n, const char *name, size_t len)
{
	struct proc *p = node_proc(n);
	struct files *files = p ? p->files : NULL;
	struct file *f;
	int fd;

	if (!files) {
		clear_dir(dir);
		return;
	}
	prune(dir, fd_open, files);
	if (name) {
		fd = name_to_int(name, len);
		f = fd >= 0 ? fd_get(files, fd) : NULL;
		if (f)
			add_fd(dir, n, f, fd, true);
		return;
	}
	for (fd = 0; fd < FILES_MAX; fd++)
		if ((f = fd_get(files, fd)))
			add_fd(dir, n, f, fd, false);
}

static void pfs_refresh(struct inode *dir, const char *name, size_t len)
{
	struct pfs_node *n = pfs_node_of(dir);
	struct dentry *de;

	switch (n->ent->kind) {
	case PFS_ROOT:
		refresh_root(dir, n, name, len);
		break;
	case PFS_DIR:
		populate(dir, n, name, len);
		break;
	case PFS_PID:
	case PFS_TID:
		refresh_proc(dir, n, name, len);
		break;
	case PFS_TASK:
		refresh_task(dir, n, name, len);
		break;
	case PFS_FD:
	case PFS_FDINFO:
		refresh_fds(dir, n, name, len);
		break;
	}
	/* Owners as they are now (ids change), before the walk checks them. */
	own(dir, n);
	if (name && (de = find_entry(dir, name, len)))
		own(de->ip, pfs_node_of(de->ip));
}

/* ---------------------------------------------------------------- open files */

struct pfs_open {
	struct pfs_buf text;
	bool was_read; /* a read at offset 0 takes a new snapshot */
};

/* The process (and thread) a file is about; -ESRCH once gone. */
static int node_ctx(const struct pfs_node *n, struct pfs_ctx *c)
{
	*c = (struct pfs_ctx){.fd = n->fd};
	if (!n->pid)
		return 0;
	c->p = node_proc(n);
	if (c->p && n->tid)
		c->t = proc_thread(c->p, n->tid);
	return c->p && (c->t || !n->tid) ? 0 : -ESRCH;
}

static int snapshot(struct inode *ip, struct pfs_buf *b)
{
	const struct pfs_node *n = pfs_node_of(ip);
	struct pfs_ctx c;
	int err = node_ctx(n, &c);

	b->len = 0;
	b->oom = false;
	if (!err && n->ent->show)
		err = n->ent->show(b, &c);
	else if (!err && n->ent->text)
		pb_put(b, n->ent->text, strlen(n->ent->text));
	return !err && b->oom ? -ENOMEM : err;
}

static long pfs_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct pfs_open *o = f->priv;
	int err;

	if (*pos == 0 && o->was_read) {
		err = snapshot(f->ip, &o->text);
		if (err)
			return err;
	}
	o->was_read = true;
	if (*pos >= o->text.len)
		return 0;
	n = MIN(n, o->text.len - *pos);
	if (iob_to(b, 0, o->text.data + *pos, n))
		return -EFAULT;
	*pos += n;
	return (long)n;
}

static long pfs_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	const struct pfs_node *nd = pfs_node_of(f->ip);
	char buf[PFS_WRITE_MAX + 1];
	struct pfs_ctx c;
	int err;

	if (n > PFS_WRITE_MAX)
		return -EINVAL;
	if (iob_from(buf, b, 0, n))
		return -EFAULT;
	buf[n] = '\0';
	err = node_ctx(nd, &c);
	if (!err)
		err = nd->ent->write(&c, buf, n);
	if (err)
		return err;
	*pos += n;
	return (long)n;
}

static void pfs_release(struct file *f)
{
	struct pfs_open *o = f->priv;

	kfree(o->text.data);
	kfree(o);
}

static const struct file_ops pfs_file_ops = {
    .read = pfs_read,
    .write = pfs_write,
    .release = pfs_release,
};

/* A file or link only the process, its user and root may read. */
static int pfs_link_access(const struct inode *ip)
{
	const struct pfs_node *n = pfs_node_of(ip);
	struct pfs_ctx c;

	if (!n->ent->traced || !n->pid || node_ctx(n, &c))
		return 0; /* (gone: the read says so) */
	return pfs_may_trace(c.p) ? 0 : -EACCES;
}

/* Linux's proc_fd_permission: a process's own fd and fdinfo directories
 * are open to it even while it is not dumpable (root's then). */
static int pfs_permission(const struct inode *ip, int mask, int err)
{
	const struct pfs_node *n = pfs_node_of(ip);

	const struct proc *me = cur_thread()->proc;

	if (err && (n->ent->kind == PFS_FD || n->ent->kind == PFS_FDINFO) && me &&
	    n->pid == me->pid && node_proc(n) == me)
		return 0;
	return err;
}

static int pfs_open(struct file *f)
{
	const struct pfs_node *n = pfs_node_of(f->ip);
	unsigned int acc = f->flags & O_ACCMODE;
	struct pfs_open *o;
	int err = 0;

	if (acc != O_RDONLY && !n->ent->write)
		return -EACCES;
	if (n->ent->traced && pfs_link_access(f->ip))
		return -EACCES;
	o = kzalloc(sizeof(*o));
	if (!o)
		return -ENOMEM;
	if (acc != O_WRONLY)
		err = snapshot(f->ip, &o->text);
	if (err) {
		kfree(o->text.data);
		kfree(o);
		return err;
	}
	f->ops = &pfs_file_ops;
	f->priv = o;
	return 0;
}

static void pfs_evict(struct inode *ip)
{
	kfree(pfs_node_of(ip));
}

static const struct inode_ops pfs_iops = {
    .refresh = pfs_refresh,
    .open = pfs_open,
    .evict = pfs_evict,
    .owned = true, /* (own(): the modes Linux gives, for the owners it gives) */
    .permission = pfs_permission,
    .link_access = pfs_link_access,
};

int procfs_attach(struct inode *dir)
{
	struct pfs_node *n;

	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	/* a procfs already, or an image's directory not read yet, or one
	 * with names that the procfs would hide */
	if (dir->synth || dir->dir.count)
		return -EBUSY;
	n = kzalloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->synth.ops = &pfs_iops;
	n->ent = &root_entry;
	n->attached = true;
	dir->synth = &n->synth;
	return 0;
}

int procfs_detach(struct inode *dir)
{
	struct pfs_node *n;

	if (!dir->synth || dir->synth->ops != &pfs_iops)
		return -EINVAL;
	n = pfs_node_of(dir);
	if (n->ent != &root_entry || !n->attached)
		return -EINVAL;
	clear_dir(dir);
	dir->synth = NULL;
	kfree(n);
	return 0;
}

int procfs_init(struct inode *root)
{
	struct pfs_node *n = kzalloc(sizeof(*n));
	struct inode *ip;
	int err;

	if (!n)
		return -ENOMEM;
	err = vfs_create(root, "proc", 4, S_IFDIR | 0555, &ip);
	if (err) {
		kfree(n);
		return err;
	}
	n->synth.ops = &pfs_iops;
	n->ent = &root_entry;
	ip->synth = &n->synth;
	inode_put(ip);
	return 0;
}
