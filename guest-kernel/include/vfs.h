/* SPDX-License-Identifier: MIT */
/*
 * The virtual file system of the library OS: one in-memory root file system
 * (ramfs) holding device nodes (devfs), filled from the initramfs; open
 * files; the per-process descriptor table (struct files) and working
 * directory (struct fs_ctx).
 *
 * Other kinds of open file (pipes, sockets, eventfd ...) plug in here: an
 * anonymous inode from vfs_inode_anon() gives fstat something to report, a
 * struct file_ops gives the behaviour, fd_alloc() a descriptor.
 *
 * There is no locking: the library OS serves one syscall at a time.
 * Paths given to these functions are kernel strings; the syscalls copy the
 * program's paths in first.
 */
#ifndef KILN_VFS_H
#define KILN_VFS_H

#include "klib.h"
#include "uaccess.h"

#define VFS_PATH_MAX     4096 /* bytes, with the NUL */
#define VFS_NAME_MAX     255
#define VFS_MAX_SYMLINKS 40         /* per lookup, as Linux */
#define VFS_MAX_RW       0x7ffff000 /* Linux's MAX_RW_COUNT */
#define FILES_MAX        1024       /* descriptors per process (RLIMIT_NOFILE) */

struct inode;
struct file;
struct files;
struct fs_ctx;
struct poll_table;

/* ---------------------------------------------------------------- boot */

/* The root: "/", "/dev" with its devices, "/tmp", "/proc". 0 or -ENOMEM. */
int vfs_init(void);
/* Add the members of a cpio newc archive to the root, walking its index
 * (cpio.h) when index_len is not 0. buf must stay valid and unchanged
 * forever: regular files keep pointing into it until they are first
 * written. Returns 0, or -errno with *err set to a message. */
int vfs_unpack_initramfs(const void *buf, size_t len, const void *index, size_t index_len,
                         const char **err);

/* Put the erofs image img[0, len) under the root (unionfs.c): its
 * directories appear in the tree as they are first looked into, its files
 * are read in place until written. img must stay valid and unchanged
 * forever. Call before vfs_unpack_initramfs, whose files then win. Returns
 * 0, or -errno with *err set to a message. */
int vfs_mount_image(const void *img, size_t len, const char **err);
/* changes.c: prctl KILN_PR_ROOTCHG_TRACK, _GET, _CLEAR and _CLEAR_TREE
 * (kiln/rootchg.h) */
long vfs_rootchg_track(void);
long vfs_rootchg_get(int dirfd, const char *upath);
long vfs_rootchg_clear(int dirfd, const char *upath);
long vfs_rootchg_clear_tree(int dirfd, const char *upath);

/* ---------------------------------------------------------------- inodes */

/* Resolve a path relative to the current process's working directory
 * (vfs_lookup) or to fs's (vfs_lookup_at; fs NULL: relative to "/"). On
 * success *out holds a reference for inode_put(). Errors as Linux gives
 * them: -ENOENT, -ENOTDIR, -ELOOP, -ENAMETOOLONG. */
int vfs_lookup(const char *path, bool follow, struct inode **out);
int vfs_lookup_at(struct fs_ctx *fs, const char *path, bool follow, struct inode **out);
/* Create a node that holds no data (an AF_UNIX socket's bind, a FIFO) at
 * path, relative to the current process's working directory: mode is the
 * S_IFMT type and permissions, less the umask. *out gets a reference.
 * -EEXIST if the name is taken (even by a dangling symlink), else as
 * mkdir's errors. */
int vfs_mknod(const char *path, uint32_t mode, struct inode **out);

/* May the calling process read, write or run (search, for a directory)
 * ip, by its file-system ids (perm.c)? 0 or -EACCES; mask is VFS_MAY_*. */
#define VFS_MAY_EXEC  1
#define VFS_MAY_WRITE 2
#define VFS_MAY_READ  4
int vfs_permission(const struct inode *ip, int mask);

void inode_get(struct inode *ip);
void inode_put(struct inode *ip);
uint32_t vfs_inode_mode(const struct inode *ip); /* st_mode: S_IFMT | permissions */
/* f is an open /dev/zero (whose mappings are anonymous memory). */
bool vfs_file_is_zero(const struct file *f);
uint64_t vfs_inode_size(const struct inode *ip);
/* Its owner and group (a set-user-ID program runs as them). */
void vfs_inode_owner(const struct inode *ip, uint32_t *uid, uint32_t *gid);
uint64_t vfs_inode_ino(const struct inode *ip);
/* Read a regular file's bytes into kernel memory; short at end of file.
 * Returns bytes read or -errno (-EISDIR, -EINVAL for non-regular files). */
long vfs_inode_read(struct inode *ip, void *buf, size_t n, uint64_t off);
/* The same into kernel memory, but the bytes the file has as its image has
 * them are copied by the VMM, in hc's batch (mm.h): buf holds them only
 * after host_copy_end(hc). */
struct host_copy;
long vfs_inode_read_batch(struct inode *ip, char *buf, size_t n, uint64_t off,
                          struct host_copy *hc);
/* A regular file's whole contents when they are one run of memory (a file
 * from the initramfs not written since): valid while the reference is held
 * and the file is not written. NULL otherwise. */
const void *vfs_inode_direct(struct inode *ip, size_t *len);
/* The physical page holding page idx of a regular file, if it may be mapped
 * into programs as it is (read-only, never freed): the file's bytes there
 * are not written yet and come from page-aligned image memory, with zeros
 * past the end of the file. 0 otherwise. */
uint64_t vfs_inode_page(struct inode *ip, uint64_t idx);
/* An inode in no directory, for pipes, sockets and the like: mode is the
 * S_IFMT type and permissions fstat reports. Freed by its last inode_put(). */
struct inode *vfs_inode_anon(uint32_t mode);

/* ---------------------------------------------------------------- shared memory */

/* A regular file's pages as the object of shared mappings (vm.h, obj an
 * inode): the tmpfs file's own pages, so that every mapping in every
 * process and read(), write() and pread() see the same bytes. Each mapping
 * holds a reference; while one is there, a truncate keeps the pages it cuts
 * off (zeroed), freed once the last mapping goes. Pages of an image file
 * are mapped in place into mappings without PROT_WRITE. */
struct vm_object_ops;
extern const struct vm_object_ops vfs_map_ops;
/* The same file as the object of private mappings (vm.h VMA_FILE), which
 * copy its bytes: pages past its end are not there, a truncate takes the
 * ones it cuts off out of them. */
extern const struct vm_object_ops vfs_file_map_ops;
/* May ip be mapped shared: a regular file of the tmpfs (not procfs's)? */
bool vfs_inode_shareable(const struct inode *ip);
/* A tmpfs file in no directory, of size bytes (zeroes): the memory of a
 * MAP_SHARED|MAP_ANONYMOUS mapping, of memfd_create. A reference, or NULL
 * when out of memory. */
struct inode *vfs_inode_shmem(uint64_t size, uint32_t mode, bool sealable);
/* File seals (F_GET_SEALS, F_ADD_SEALS) of a regular file: only one made
 * sealable takes any (memfd_create's MFD_ALLOW_SEALING: -EPERM else, and
 * once F_SEAL_SEAL is set); -EBUSY for F_SEAL_WRITE while it is mapped
 * shared, -EINVAL for a file of another type or an unknown seal. */
uint32_t vfs_inode_seals(const struct inode *ip);
int vfs_inode_add_seals(struct inode *ip, uint32_t seals);

/* ---------------------------------------------------------------- open files */

/* Where a read puts its bytes or a write takes them from: program memory
 * (every access checked) or kernel memory. */
struct iobuf {
	char *base;
	bool user;
};

static inline struct iobuf iob_user(void *p)
{
	return (struct iobuf){p, true};
}

static inline struct iobuf iob_kernel(void *p)
{
	return (struct iobuf){p, false};
}

/* Copy into / out of the buffer at byte offset off. 0 or -EFAULT. */
static inline int iob_to(const struct iobuf *b, size_t off, const void *src, size_t n)
{
	if (b->user)
		return copy_to_user(b->base + off, src, n);
	memcpy(b->base + off, src, n);
	return 0;
}

static inline int iob_from(void *dst, const struct iobuf *b, size_t off, size_t n)
{
	if (b->user)
		return copy_from_user(dst, b->base + off, n);
	memcpy(dst, b->base + off, n);
	return 0;
}

static inline int iob_zero(const struct iobuf *b, size_t off, size_t n)
{
	if (b->user)
		return clear_user(b->base + off, n);
	memset(b->base + off, 0, n);
	return 0;
}

struct file_ops {
	/* 0 < n <= VFS_MAX_RW. *pos is the file position, or pread's offset:
	 * advance it by what was done. Return the byte count or -errno. */
	long (*read)(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos);
	long (*write)(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos);
	/* -ENOTTY for a command it does not know; NULL: always -ENOTTY. */
	long (*ioctl)(struct file *f, unsigned int cmd, unsigned long arg);
	/* A device node is being opened (not O_PATH): set f->priv, or switch
	 * f->ops to the ops of what was really opened (/dev/ptmx makes a pty,
	 * /dev/tty is the caller's terminal). oflags are open(2)'s, O_NOCTTY
	 * included. -errno fails the open: then leave f->ops alone (release
	 * is not called). NULL: nothing to do. */
	int (*open)(struct file *f, unsigned int oflags);
	/* POLLIN/POLLOUT/POLLHUP ... as of now; NULL: readable and writable. */
	unsigned int (*poll)(struct file *f);
	/* Where poll, select and epoll sleep: call poll_add_wait(pt, wq)
	 * (kpoll.h) for every wait queue that is woken when poll's answer may
	 * change (e.g. a tty: its input and its output queue). NULL: the
	 * answer never changes by itself (regular files), nothing to wait on. */
	void (*poll_wait)(struct file *f, struct poll_table *pt);
	/* The last reference is gone (before the inode's is dropped). */
	void (*release)(struct file *f);
	bool stream; /* no file position: lseek, pread, pwrite give -ESPIPE */
	/* What /proc/<pid>/fd shows for an anonymous inode that is neither a
	 * pipe nor a socket, e.g. "anon_inode:[eventfd]". */
	const char *anon_name;
};

struct file {
	int refs;
	unsigned int flags; /* O_ACCMODE, O_APPEND, O_NONBLOCK, O_PATH ... */
	uint64_t pos;
	struct inode *ip;
	const struct file_ops *ops;
	void *priv; /* the ops' own */
};

/* A new open file with one reference; takes over the caller's reference
 * on ip. NULL when out of memory (ip's reference is then still the
 * caller's). */
struct file *file_alloc(struct inode *ip, const struct file_ops *ops, unsigned int flags,
                        void *priv);
/* Open an inode as open(2) would, less path and O_CREAT handling:
 * O_TRUNC, EISDIR, ENOTDIR (O_DIRECTORY), ENXIO for devices without a
 * driver. Takes a new reference on ip. */
int vfs_open_inode(struct inode *ip, unsigned int flags, struct file **out);
void file_get(struct file *f);
void file_put(struct file *f);
struct inode *file_inode(const struct file *f);
/* Read or write with the checks of read(2)/write(2) (EBADF for the wrong
 * access mode or O_PATH, EISDIR, EINVAL); pos as in struct file_ops. */
long file_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos);
long file_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos);
unsigned int file_poll(struct file *f);

/* ---------------------------------------------------------------- descriptors */

struct files *files_create(void);
struct files *files_dup(struct files *t); /* fork: a copy sharing the open files */
void files_get(struct files *t);          /* CLONE_FILES */
void files_put(struct files *t);
void files_close_on_exec(struct files *t);
/* fds 0, 1 and 2 on one open file of /dev/console, read/write. */
int files_open_console(struct files *t);

/* The open file at fd, or NULL; no new reference. */
struct file *fd_get(struct files *t, int fd);
/* Install f at the lowest free descriptor >= min; on success the table
 * owns the caller's reference. Returns the fd or -EMFILE/-EINVAL/-ENOMEM. */
int fd_alloc(struct files *t, struct file *f, int min, bool cloexec);
/* One past the highest descriptor the calling process may have: its
 * RLIMIT_NOFILE (at most FILES_MAX). */
int fd_limit(void);
/* Install f at fd, closing what was there (dup2). 0 or -EBADF/-ENOMEM. */
int fd_install_at(struct files *t, int fd, struct file *f, bool cloexec);
int fd_close(struct files *t, int fd);
bool fd_cloexec(struct files *t, int fd);
void fd_set_cloexec(struct files *t, int fd, bool on);

/* ---------------------------------------------------------------- cwd */

struct fs_ctx *fs_ctx_create(void); /* cwd = "/", umask 022 */
struct fs_ctx *fs_ctx_dup(struct fs_ctx *fs);
void fs_ctx_get(struct fs_ctx *fs); /* CLONE_FS */
void fs_ctx_put(struct fs_ctx *fs);

#endif
