// SPDX-License-Identifier: MIT
/*
 * Unit tests for the guest's VFS (vfs.c, namei.c, ramfs.c, devfs.c,
 * file.c) through its syscalls. The sys_*.c files are included here so
 * that their static handlers can be called directly; the library OS's
 * services (kmalloc, pmem, uaccess, console, clock, rng) are small host
 * stubs below. cur_proc() reads %gs, so the test points %gs at a fake
 * thread (wrgsbase works for user space on Linux 5.9+ with FSGSBASE).
 *
 * Every test works in its own directory, so that the tests also pass
 * in one process (CK_FORK=no).
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <asm/termbits.h>
#include <asm/termios.h>

#include "../../guest-kernel/libos/fs/sys_fd.c"
#include "../../guest-kernel/libos/fs/sys_file.c"
#include "../../guest-kernel/libos/fs/sys_fs.c"
#include "../../guest-kernel/libos/fs/sys_memfd.c"
#include "../../guest-kernel/libos/fs/inotify.c"
#include "../../guest-kernel/libos/fs/sys_open.c"
#include "../../guest-kernel/libos/fs/sys_stat.c"
#include "console.h"
#include "kpoll.h"
#include "printk.h"
#include "rng.h"
#include "tty.h"
#include "vm.h"

/* ------------------------------------------------------------ host stubs */

static long live_pages;
static void *page_list[1 << 14]; /* keeps pages reachable for LeakSanitizer */
static char bad_page[4096] __attribute__((aligned(4096))); /* "unmapped" user memory */
static char console_out[65536];
static size_t console_out_len;
static char klog[4096];

void *kmalloc(size_t n)
{
	return malloc(n ? n : 1);
}

void *kzalloc(size_t n)
{
	return calloc(1, n ? n : 1);
}

void kfree(void *p)
{
	free(p);
}

char *kstrndup(const char *s, size_t n)
{
	return strndup(s, n);
}

/* A "physical" address whose phys_to_virt() is the host pointer. */
uint64_t pmem_alloc(bool zero)
{
	void *p = aligned_alloc(PAGE_SIZE, PAGE_SIZE);

	if (!p)
		return 0;
	memset(p, 0, PAGE_SIZE);
	for (size_t i = 0; i < ARRAY_SIZE(page_list); i++) {
		if (!page_list[i]) {
			page_list[i] = p;
			live_pages++;
			return (uint64_t)p - KILN_VA_DIRECT_MAP;
		}
	}
	free(p);
	return 0;
}

/* Every page is new to the host here: host_copy.c batches all copies. */
bool pmem_claim_fresh(uint64_t pa)
{
	return true;
}

/* What a truncate took out of mappings (vm.c's, not linked here). */
static void *cut_obj;
static uint64_t cut_idx;

void vm_object_cut(void *obj, uint64_t idx)
{
	cut_obj = obj;
	cut_idx = idx;
}

/* The guest keeps a reserve for itself; the host has plenty. */
uint64_t pmem_alloc_user(bool zero)
{
	return pmem_alloc(zero);
}

void pmem_free(uint64_t pa)
{
	void *p = phys_to_virt(pa);

	for (size_t i = 0; i < ARRAY_SIZE(page_list); i++)
		if (page_list[i] == p)
			page_list[i] = NULL;
	live_pages--;
	free(p);
}

size_t pmem_free_pages(void)
{
	return 1000;
}

size_t pmem_total_pages(void)
{
	return 4096;
}

static bool bad(const void *p, size_t n)
{
	const char *c = p;

	return n && c < bad_page + sizeof(bad_page) && c + n > bad_page;
}

int copy_from_user(void *dst, const void *usrc, size_t n)
{
	if (!user_range_ok((uint64_t)usrc, n) || bad(usrc, n))
		return -EFAULT;
	memcpy(dst, usrc, n);
	return 0;
}

int copy_to_user(void *udst, const void *src, size_t n)
{
	if (!user_range_ok((uint64_t)udst, n) || bad(udst, n))
		return -EFAULT;
	memcpy(udst, src, n);
	return 0;
}

int clear_user(void *udst, size_t n)
{
	if (!user_range_ok((uint64_t)udst, n) || bad(udst, n))
		return -EFAULT;
	memset(udst, 0, n);
	return 0;
}

long strncpy_from_user(char *dst, const char *usrc, size_t max)
{
	for (size_t i = 0; i < max; i++) {
		if (bad(usrc + i, 1) || !user_range_ok((uint64_t)usrc + i, 1))
			return -EFAULT;
		dst[i] = usrc[i];
		if (!dst[i])
			return i;
	}
	return -ENAMETOOLONG;
}

uint64_t time_realtime_ns(void)
{
	static uint64_t t = 1700000000ULL * 1000000000ULL;

	return t += 1000; /* every call a later time */
}

long console_write(const void *buf, size_t n)
{
	n = MIN(n, sizeof(console_out) - console_out_len);
	memcpy(console_out + console_out_len, buf, n);
	console_out_len += n;
	return n;
}

/* The console's tty (tty.c, as without a terminal on the host: raw), on a
 * driver that keeps what programs write in console_out. */
static struct tty *con;

static void con_start(struct tty *tty)
{
	console_out_len +=
	    tty_out_get(tty, console_out + console_out_len, sizeof(console_out) - console_out_len);
}

static const struct tty_driver con_driver = {.start = con_start};

struct tty *console_tty(void)
{
	return con;
}

/* Processes and waiting, for tty.c: one process (P), and nothing waits. */
static struct proc P;

struct proc *proc_find(int pid)
{
	return pid == P.pid ? &P : NULL;
}

struct proc *proc_first(void)
{
	return &P;
}

void signal_send_proc(struct proc *p, int sig, const struct siginfo_k *info)
{
}

void wake_all(struct waitq *wq)
{
}

long wait_block(struct waitq *wq, uint64_t deadline_ns)
{
	return -EINTR;
}

void poll_add_wait(struct poll_table *pt, struct waitq *wq)
{
}

uint64_t time_monotonic_ns(void)
{
	return 0;
}

void console_flush(void)
{
}

long rng_read(void *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((uint8_t *)buf)[i] = (uint8_t)(i * 7 + 1);
	return n;
}

void kprintf(const char *fmt, ...)
{
	va_list ap;
	size_t len = strlen(klog);

	va_start(ap, fmt);
	vsnprintf(klog + len, sizeof(klog) - len, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ harness */

static struct thread T;
static bool booted;

static void setup(void)
{
	/* the boot runs with no process (cur_cred: root's) */
	asm volatile("wrgsbase %0" ::"r"(&T));
	if (!booted) {
		ck_assert_int_eq(vfs_init(), 0);
		con = tty_create(&con_driver, NULL, false);
		ck_assert_ptr_nonnull(con);
		con->ws = (struct winsize){.ws_row = 24, .ws_col = 80};
		booted = true;
	}
	/* init, its session's leader, with the console as its terminal */
	P.pid = P.sid = P.pgid = 1;
	/* init's descriptor limit (sys_proc.c is not linked here) */
	P.rlim[RLIMIT_NOFILE] = (struct klimit){FILES_MAX, FILES_MAX};
	tty_set_ctty(con, 1, 1);
	T.proc = &P;
	asm volatile("wrgsbase %0" ::"r"(&T));
	P.files = files_create();
	P.fs = fs_ctx_create();
	ck_assert_ptr_nonnull(P.files);
	ck_assert_ptr_nonnull(P.fs);
	ck_assert_int_eq(files_open_console(P.files), 0);
}

static void teardown(void)
{
	files_put(P.files);
	fs_ctx_put(P.fs);
}

#define ARGS6(a, b, c, d, e, f, ...) \
	(long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f)
#define SYS(name, ...) sys_##name(ARGS6(__VA_ARGS__, 0, 0, 0, 0, 0, 0))

static long xopen(const char *p, int flags, int mode)
{
	return SYS(openat, AT_FDCWD, p, flags, mode);
}

/* A fresh directory for one test, made the working directory. */
static void enter(const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/%s", name);
	ck_assert_int_eq(SYS(mkdir, path, 0755), 0);
	ck_assert_int_eq(SYS(chdir, path), 0);
}

static void put_file(const char *path, const char *text)
{
	long fd = xopen(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(SYS(write, fd, text, strlen(text)), (long)strlen(text));
	ck_assert_int_eq(SYS(close, fd), 0);
}

/* The file's contents as a string ("" if empty), or NULL if it won't open. */
static char *get_file(const char *path)
{
	static char buf[8192];
	long fd = xopen(path, O_RDONLY, 0), n;

	if (fd < 0)
		return NULL;
	n = SYS(read, fd, buf, sizeof(buf) - 1);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	SYS(close, fd);
	return buf;
}

static struct stat st_of(const char *path, bool follow)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	ck_assert_int_eq(SYS(newfstatat, AT_FDCWD, path, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW), 0);
	return st;
}

static long stat_err(const char *path)
{
	struct stat st;

	return SYS(newfstatat, AT_FDCWD, path, &st, 0);
}

/* ------------------------------------------------------------ path walk */

START_TEST(walk_basic)
{
	struct stat root = st_of("/", true), st;
	long fd;

	enter("walk_basic");
	ck_assert_int_eq(SYS(mkdir, "a", 0755), 0);
	ck_assert_int_eq(SYS(mkdir, "a/b", 0755), 0);
	put_file("a/f", "x");
	st = st_of("a/b", true);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st_of("a//b/", true).st_ino, st.st_ino);
	ck_assert_uint_eq(st_of("./a/./b/.", true).st_ino, st.st_ino);
	ck_assert_uint_eq(st_of("a/b/../b", true).st_ino, st.st_ino);
	ck_assert_uint_eq(st_of("/walk_basic/a/b", true).st_ino, st.st_ino);
	ck_assert_uint_eq(st_of("//", true).st_ino, root.st_ino);
	ck_assert_uint_eq(st_of("/../../..", true).st_ino, root.st_ino);
	ck_assert_uint_eq(st_of("/..//walk_basic/../", true).st_ino, root.st_ino);
	ck_assert_int_eq(stat_err("a/f/"), -ENOTDIR);
	ck_assert_int_eq(stat_err("a/f/x"), -ENOTDIR);
	ck_assert_int_eq(stat_err("a/f/."), -ENOTDIR);
	ck_assert_int_eq(stat_err("a/missing/x"), -ENOENT);
	ck_assert_int_eq(stat_err("a/missing/"), -ENOENT);
	ck_assert_int_eq(stat_err(""), -ENOENT);
	ck_assert_int_eq(stat_err((const char *)bad_page), -EFAULT);

	/* AT_EMPTY_PATH and dirfd-relative paths */
	fd = xopen("a/f", O_RDONLY, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(SYS(newfstatat, fd, "", &st, AT_EMPTY_PATH), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(SYS(newfstatat, fd, "", &st, 0), -ENOENT);
	ck_assert_int_eq(SYS(newfstatat, fd, "x", &st, 0), -ENOTDIR);
	ck_assert_int_eq(SYS(newfstatat, 99, "x", &st, 0), -EBADF);
	ck_assert_int_eq(SYS(newfstatat, 99, "/", &st, 0), 0); /* dirfd unused */
	SYS(close, fd);
	fd = xopen("a", O_RDONLY | O_DIRECTORY, 0);
	ck_assert_int_eq(SYS(newfstatat, fd, "b", &st, 0), 0);
	ck_assert(S_ISDIR(st.st_mode));
	SYS(close, fd);
}
END_TEST

START_TEST(walk_symlinks)
{
	char buf[64], name[16], prev[16];
	struct stat st;

	enter("walk_symlinks");
	ck_assert_int_eq(SYS(mkdir, "d", 0755), 0);
	put_file("d/f", "data");
	ck_assert_int_eq(SYS(symlink, "d", "rel"), 0);
	ck_assert_int_eq(SYS(symlink, "/walk_symlinks/d/f", "abs"), 0);
	ck_assert_int_eq(SYS(symlink, "../../walk_symlinks/rel/f", "d/up"), 0);
	ck_assert_int_eq(SYS(symlink, "nowhere", "dangling"), 0);
	ck_assert_int_eq(SYS(symlink, "loop2", "loop1"), 0);
	ck_assert_int_eq(SYS(symlink, "loop1", "loop2"), 0);
	ck_assert_str_eq(get_file("rel/f"), "data");
	ck_assert_str_eq(get_file("abs"), "data");
	ck_assert_str_eq(get_file("d/up"), "data");
	ck_assert(S_ISLNK(st_of("rel", false).st_mode));
	ck_assert(S_ISDIR(st_of("rel", true).st_mode));
	ck_assert(S_ISDIR(st_of("rel/", false).st_mode)); /* a slash follows */
	ck_assert_int_eq(stat_err("abs/"), -ENOTDIR);
	ck_assert_int_eq(stat_err("dangling"), -ENOENT);
	ck_assert(S_ISLNK(st_of("dangling", false).st_mode));
	ck_assert_int_eq(stat_err("loop1"), -ELOOP);
	ck_assert_int_eq(stat_err("loop1/x"), -ELOOP);
	ck_assert_int_eq(SYS(readlink, "abs", buf, sizeof(buf)), 18);
	ck_assert_int_eq(memcmp(buf, "/walk_symlinks/d/f", 18), 0);
	ck_assert_int_eq(SYS(readlink, "abs", buf, 4), 4);
	ck_assert_int_eq(SYS(readlink, "d", buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(SYS(readlink, "abs", buf, 0), -EINVAL);
	ck_assert_int_eq(st_of("abs", false).st_size, 18);

	/* 40 links in a chain resolve, 41 do not */
	strcpy(prev, "d/f");
	for (int i = 1; i <= 41; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		ck_assert_int_eq(SYS(symlink, prev, name), 0);
		strcpy(prev, name);
	}
	ck_assert_int_eq(stat_err("c40"), 0);
	ck_assert_int_eq(stat_err("c41"), -ELOOP);
	ck_assert_int_eq(SYS(newfstatat, AT_FDCWD, "c41", &st, AT_SYMLINK_NOFOLLOW), 0);
}
END_TEST

START_TEST(walk_limits)
{
	char *p = malloc(VFS_PATH_MAX + 8);
	char name[300];

	enter("walk_limits");
	memset(name, 'n', 255);
	name[255] = '\0';
	ck_assert_int_eq(stat_err(name), -ENOENT);
	put_file(name, "x");
	ck_assert_int_eq(stat_err(name), 0);
	strcpy(name + 255, "n");
	ck_assert_int_eq(stat_err(name), -ENAMETOOLONG);
	ck_assert_int_eq(xopen(name, O_CREAT | O_WRONLY, 0644), -ENAMETOOLONG);

	/* 4095 bytes plus the NUL is the longest path */
	put_file("f", "x");
	memset(p, 0, VFS_PATH_MAX + 8);
	for (int i = 0; i < VFS_PATH_MAX - 1 - 1; i += 2)
		memcpy(p + i, "./", 2);
	p[VFS_PATH_MAX - 2] = 'f';
	ck_assert_uint_eq(strlen(p), VFS_PATH_MAX - 1);
	ck_assert_int_eq(stat_err(p), 0);
	memmove(p + 1, p, VFS_PATH_MAX);
	p[0] = '/';
	ck_assert_int_eq(stat_err(p), -ENAMETOOLONG);

	/* a symlink whose target does not fit with the rest of the path */
	memset(p, 'x', VFS_PATH_MAX - 10);
	p[VFS_PATH_MAX - 10] = '\0';
	for (int i = 200; i < VFS_PATH_MAX - 10; i += 200)
		p[i] = '/';
	ck_assert_int_eq(SYS(symlink, p, "long"), 0);
	ck_assert_int_eq(stat_err("long/a/b/c/d/e/f/g"), -ENAMETOOLONG);
	ck_assert_int_eq(stat_err("long"), -ENOENT);
	free(p);
}
END_TEST

/* ------------------------------------------------------------ open */

START_TEST(open_flags)
{
	struct stat st;
	char buf[16];
	long fd, fd2;

	enter("open_flags");
	ck_assert_int_eq(xopen("f", O_RDONLY, 0), -ENOENT);
	fd = xopen("f", O_CREAT | O_EXCL | O_RDWR, 0666);
	ck_assert_int_ge(fd, 3);
	ck_assert_int_eq(SYS(fcntl, fd, F_GETFL), O_RDWR | O_LARGEFILE);
	ck_assert_int_eq(SYS(fstat, fd, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0644); /* umask 022 */
	SYS(close, fd);
	ck_assert_int_eq(xopen("f", O_CREAT | O_EXCL | O_RDWR, 0666), -EEXIST);
	ck_assert_int_eq(xopen("f/", O_CREAT | O_RDWR, 0666), -EISDIR);
	ck_assert_int_eq(xopen("new/", O_CREAT | O_RDWR, 0666), -EISDIR);
	ck_assert_int_eq(xopen("f", O_RDONLY | O_DIRECTORY, 0), -ENOTDIR);
	ck_assert_int_eq(xopen("f", O_CREAT | O_DIRECTORY | O_RDONLY, 0), -EINVAL);
	ck_assert_int_eq(SYS(mkdir, "d", 0755), 0);
	ck_assert_int_eq(xopen("d", O_WRONLY, 0), -EISDIR);
	ck_assert_int_eq(xopen("d", O_RDONLY | O_CREAT, 0644), -EISDIR);
	ck_assert_int_eq(xopen(".", O_RDONLY | O_CREAT, 0644), -EISDIR);
	ck_assert_int_eq(xopen(".", O_RDONLY | O_CREAT | O_EXCL, 0644), -EEXIST);
	fd = xopen("d", O_RDONLY, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(SYS(read, fd, buf, sizeof(buf)), -EISDIR);
	ck_assert_int_eq(SYS(write, fd, buf, 1), -EBADF);
	SYS(close, fd);

	/* O_CREAT through a dangling symlink makes its target */
	ck_assert_int_eq(SYS(symlink, "target", "link"), 0);
	ck_assert_int_eq(xopen("link", O_CREAT | O_EXCL | O_WRONLY, 0644), -EEXIST);
	ck_assert_int_eq(xopen("link", O_CREAT | O_NOFOLLOW | O_WRONLY, 0644), -ELOOP);
	fd = xopen("link", O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	SYS(close, fd);
	ck_assert(S_ISREG(st_of("target", false).st_mode));
	ck_assert_int_eq(xopen("link", O_RDONLY | O_NOFOLLOW, 0), -ELOOP);

	/* O_PATH: a handle with no I/O */
	fd = xopen("link", O_PATH | O_NOFOLLOW, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(SYS(fstat, fd, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(SYS(read, fd, buf, 1), -EBADF);
	ck_assert_int_eq(SYS(fcntl, fd, F_GETFL), O_PATH | O_LARGEFILE);
	SYS(close, fd);

	/* O_TRUNC and O_APPEND */
	put_file("g", "hello world");
	fd = xopen("g", O_WRONLY | O_APPEND, 0);
	ck_assert_int_eq(SYS(lseek, fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(SYS(write, fd, "!", 1), 1);
	ck_assert_int_eq(SYS(lseek, fd, 0, SEEK_CUR), 12);
	SYS(close, fd);
	ck_assert_str_eq(get_file("g"), "hello world!");
	ck_assert_int_eq(SYS(read, 1000, buf, 1), -EBADF);
	fd = xopen("g", O_RDONLY | O_TRUNC, 0);
	ck_assert_int_eq(SYS(write, fd, "x", 1), -EBADF);
	SYS(close, fd);
	ck_assert_str_eq(get_file("g"), "");

	/* O_TMPFILE, then given a name */
	ck_assert_int_eq(xopen("d", O_TMPFILE | O_RDONLY, 0600), -EINVAL);
	fd = xopen("d", O_TMPFILE | O_RDWR, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(SYS(write, fd, "tmp", 3), 3);
	ck_assert_int_eq(SYS(fstat, fd, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 0);
	ck_assert_int_eq(SYS(linkat, fd, "", AT_FDCWD, "d/named", AT_EMPTY_PATH), 0);
	SYS(close, fd);
	ck_assert_str_eq(get_file("d/named"), "tmp");

	/* creat and dirfd-relative openat */
	fd = SYS(creat, "c", 0600);
	ck_assert_int_ge(fd, 0);
	fd2 = xopen("d", O_RDONLY, 0);
	ck_assert_int_ge(SYS(openat, fd2, "named", O_RDONLY), 0);
	ck_assert_int_eq(SYS(openat, fd, "named", O_RDONLY), -ENOTDIR);
}
END_TEST

/* ------------------------------------------------------------ file data */

START_TEST(file_data)
{
	static char big[1 << 20];
	char buf[64];
	struct stat st;
	long fd, base;

	enter("file_data");
	fd = xopen("f", O_CREAT | O_RDWR, 0644);
	base = live_pages;
	ck_assert_int_eq(SYS(pwrite64, fd, "tail", 4, 10000), 4);
	ck_assert_int_eq(live_pages - base, 2); /* one data page, one index page */
	ck_assert_int_eq(SYS(pread64, fd, buf, sizeof(buf), 9998), 6);
	ck_assert_int_eq(memcmp(buf, "\0\0tail", 6), 0);
	ck_assert_int_eq(SYS(pread64, fd, buf, 8, 100), 8); /* a hole */
	ck_assert_int_eq(memcmp(buf, "\0\0\0\0\0\0\0\0", 8), 0);
	ck_assert_int_eq(SYS(pread64, fd, buf, 8, 10004), 0);
	ck_assert_int_eq(SYS(pread64, fd, buf, 8, 1 << 30), 0);
	ck_assert_int_eq(SYS(pread64, fd, buf, 8, -1), -EINVAL);
	ck_assert_int_eq(SYS(lseek, fd, 0, SEEK_CUR), 0); /* pread keeps the position */
	ck_assert_int_eq(SYS(fstat, fd, &st), 0);
	ck_assert_int_eq(st.st_size, 10004);
	ck_assert_int_eq(st.st_blocks, 8);
	ck_assert_int_eq(st.st_blksize, 4096);

	/* shrinking zeroes what was cut, so growing again shows zeros */
	ck_assert_int_eq(SYS(ftruncate, fd, 10001), 0);
	ck_assert_int_eq(SYS(ftruncate, fd, 10004), 0);
	ck_assert_int_eq(SYS(pread64, fd, buf, 8, 10000), 4);
	ck_assert_int_eq(memcmp(buf, "t\0\0\0", 4), 0);
	ck_assert_int_eq(SYS(ftruncate, fd, 0), 0);
	ck_assert_int_eq(live_pages, base);
	ck_assert_int_eq(SYS(ftruncate, fd, -1), -EINVAL);

	/* a write of N bytes takes N bytes of pages, plus the index */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 13);
	ck_assert_int_eq(SYS(write, fd, big, sizeof(big)), (long)sizeof(big));
	ck_assert_int_eq(live_pages - base, 256 + 1);
	memset(big, 0, sizeof(big));
	ck_assert_int_eq(SYS(pread64, fd, big, sizeof(big), 0), (long)sizeof(big));
	for (size_t i = 0; i < sizeof(big); i += 4093)
		ck_assert_int_eq(big[i], (char)(i * 13));
	ck_assert_int_eq(SYS(lseek, fd, 0, SEEK_END), (long)sizeof(big));
	ck_assert_int_eq(SYS(lseek, fd, 5, SEEK_DATA), 5);
	ck_assert_int_eq(SYS(lseek, fd, 5, SEEK_HOLE), (long)sizeof(big));
	ck_assert_int_eq(SYS(lseek, fd, sizeof(big), SEEK_DATA), -ENXIO);
	ck_assert_int_eq(SYS(lseek, fd, -1, SEEK_SET), -EINVAL);
	ck_assert_int_eq(SYS(lseek, fd, 0, 42), -EINVAL);

	/* far-away sparse writes stay cheap */
	ck_assert_int_eq(SYS(pwrite64, fd, "x", 1, 1LL << 40), 1);
	ck_assert_int_le(live_pages - base, 256 + 1 + 7); /* 3 to grow, 3 on the path */
	ck_assert_int_eq(SYS(pwrite64, fd, "x", 1, RAMFS_MAX_SIZE), -EFBIG);
	ck_assert_int_eq(SYS(ftruncate, fd, RAMFS_MAX_SIZE + 1), -EFBIG);

	/* an unlinked file lives until its last close */
	ck_assert_int_eq(SYS(unlink, "f"), 0);
	ck_assert_int_eq(SYS(pread64, fd, buf, 1, 1LL << 40), 1);
	ck_assert_int_ne(live_pages, base);
	ck_assert_int_eq(SYS(close, fd), 0);
	ck_assert_int_eq(live_pages, base);

	/* truncate(2) by name */
	put_file("g", "0123456789");
	ck_assert_int_eq(SYS(truncate, "g", 3), 0);
	ck_assert_str_eq(get_file("g"), "012");
	ck_assert_int_eq(SYS(truncate, ".", 3), -EISDIR);
	ck_assert_int_eq(SYS(truncate, "/dev/null", 0), -EINVAL);
}
END_TEST

START_TEST(file_vectors)
{
	char a[4], b[8], out[32];
	struct iovec iov[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
	struct iovec wiov[3] = {{"abc", 3}, {"", 0}, {"defgh", 5}};
	long long off = 2;
	long fd, fd2;

	enter("file_vectors");
	fd = xopen("f", O_CREAT | O_RDWR, 0644);
	ck_assert_int_eq(SYS(writev, fd, wiov, 3), 8);
	ck_assert_int_eq(SYS(lseek, fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(SYS(readv, fd, iov, 2), 8);
	ck_assert_int_eq(memcmp(a, "abcd", 4), 0);
	ck_assert_int_eq(memcmp(b, "efgh", 4), 0);
	ck_assert_int_eq(SYS(preadv, fd, iov, 2, 1), 7);
	ck_assert_int_eq(memcmp(a, "bcde", 4), 0);
	ck_assert_int_eq(SYS(readv, fd, iov, -1), -EINVAL);
	ck_assert_int_eq(SYS(readv, fd, iov, 1025), -EINVAL);
	ck_assert_int_eq(SYS(readv, fd, bad_page, 1), -EFAULT);

	/* sendfile: with an offset pointer the file position stays */
	fd2 = xopen("g", O_CREAT | O_RDWR, 0644);
	ck_assert_int_eq(SYS(sendfile, fd2, fd, &off, 100), 6);
	ck_assert_int_eq(off, 8);
	ck_assert_int_eq(SYS(lseek, fd, 0, SEEK_CUR), 8);
	ck_assert_int_eq(SYS(lseek, fd, 1, SEEK_SET), 1);
	ck_assert_int_eq(SYS(sendfile, fd2, fd, NULL, 2), 2);
	ck_assert_int_eq(SYS(lseek, fd, 0, SEEK_CUR), 3);
	ck_assert_int_eq(SYS(pread64, fd2, out, sizeof(out), 0), 8);
	ck_assert_int_eq(memcmp(out, "cdefghbc", 8), 0);
	console_out_len = 0;
	ck_assert_int_eq(SYS(sendfile, 1, fd2, &off, 100), 0); /* off 8 == EOF */
	off = 0;
	ck_assert_int_eq(SYS(sendfile, 1, fd2, &off, 3), 3);
	ck_assert_int_eq(console_out_len, 3);
	ck_assert_int_eq(memcmp(console_out, "cde", 3), 0);
}
END_TEST

START_TEST(file_efault)
{
	long fd;
	struct stat st;

	enter("file_efault");
	put_file("f", "0123456789");
	fd = xopen("f", O_RDWR, 0);
	ck_assert_int_eq(SYS(read, fd, bad_page, 4), -EFAULT);
	ck_assert_int_eq(SYS(read, fd, 0xffff800000000000UL, 4), -EFAULT);
	ck_assert_int_eq(SYS(lseek, fd, 0, SEEK_END), 10);
	ck_assert_int_eq(SYS(write, fd, bad_page, 100), -EFAULT);
	ck_assert_int_eq(SYS(fstat, fd, &st), 0);
	ck_assert_int_eq(st.st_size, 10);
	ck_assert_int_eq(SYS(ftruncate, fd, 20), 0);
	ck_assert_str_eq(get_file("f"), "0123456789"); /* the failed write left zeros */
	ck_assert_int_eq(SYS(fstat, fd, bad_page), -EFAULT);
	ck_assert_int_eq(SYS(getcwd, bad_page, 100), -EFAULT);
}
END_TEST

/* ------------------------------------------------------------ directories */

START_TEST(dirs)
{
	struct stat st, st2;
	long fd;

	enter("dirs");
	ck_assert_uint_eq(st_of(".", true).st_nlink, 2);
	ck_assert_int_eq(SYS(mkdir, "a", 0755), 0);
	ck_assert_int_eq(SYS(mkdir, "a", 0755), -EEXIST);
	ck_assert_int_eq(SYS(mkdir, "a/", 0755), -EEXIST);
	ck_assert_int_eq(SYS(mkdir, "b/", 0755), 0);
	ck_assert_int_eq(SYS(mkdir, "x/y", 0755), -ENOENT);
	ck_assert_int_eq(SYS(mkdirat, AT_FDCWD, ".", 0755), -EEXIST);
	put_file("a/f", "1");
	st = st_of(".", true);
	ck_assert_uint_eq(st.st_nlink, 4);
	ck_assert_int_eq(st.st_size, 4 * 20);
	ck_assert_uint_eq(st_of("a", true).st_mode, S_IFDIR | 0755);
	ck_assert_int_eq(SYS(rmdir, "a"), -ENOTEMPTY);
	ck_assert_int_eq(SYS(rmdir, "a/f"), -ENOTDIR);
	ck_assert_int_eq(SYS(rmdir, "a/."), -EINVAL);
	ck_assert_int_eq(SYS(rmdir, "a/.."), -ENOTEMPTY);
	ck_assert_int_eq(SYS(rmdir, "/"), -EBUSY);
	ck_assert_int_eq(SYS(unlink, "a"), -EISDIR);
	ck_assert_int_eq(SYS(unlink, "a/f/"), -ENOTDIR);
	ck_assert_int_eq(SYS(unlink, "a/nothing"), -ENOENT);
	ck_assert_int_eq(SYS(unlinkat, AT_FDCWD, "a", 0x100), -EINVAL);
	st = st_of("a", true);
	ck_assert_int_eq(SYS(unlink, "a/f"), 0);
	st2 = st_of("a", true);
	ck_assert(st2.st_mtime > st.st_mtime ||
	          (st2.st_mtime == st.st_mtime && st2.st_mtime_nsec > st.st_mtime_nsec));
	ck_assert_int_eq(SYS(unlinkat, AT_FDCWD, "a", AT_REMOVEDIR), 0);
	ck_assert_uint_eq(st_of(".", true).st_nlink, 3);
	ck_assert_int_eq(SYS(rmdir, "b/"), 0);

	/* a removed directory still open: empty, takes no new names */
	ck_assert_int_eq(SYS(mkdir, "gone", 0755), 0);
	fd = xopen("gone", O_RDONLY, 0);
	ck_assert_int_eq(SYS(rmdir, "gone"), 0);
	ck_assert_int_eq(SYS(fstat, fd, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 0);
	ck_assert_int_eq(SYS(openat, fd, "new", O_CREAT | O_RDWR, 0644), -ENOENT);
	ck_assert_int_eq(SYS(mkdirat, fd, "new", 0755), -ENOENT);
	SYS(close, fd);
}
END_TEST

struct seen {
	int count[64];
	int other;
};

/* Read entries with a buffer of size; count "e<N>" names. Returns bytes. */
static long list_some(long fd, size_t size, struct seen *s, long long *last_off)
{
	static char buf[4096];
	long n = SYS(getdents64, fd, buf, size);

	for (long off = 0; off < n;) {
		struct dirent_hdr *h = (struct dirent_hdr *)(buf + off);
		const char *name = buf + off + sizeof(*h);

		if (name[0] == 'e')
			s->count[atoi(name + 1)]++;
		else
			s->other++;
		*last_off = h->d_off;
		off += h->d_reclen;
	}
	return n;
}

START_TEST(getdents)
{
	struct seen s = {0};
	char name[16], buf[64];
	long long off = 0, saved;
	long fd, n;

	enter("getdents");
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		put_file(name, "");
	}
	fd = xopen(".", O_RDONLY | O_DIRECTORY, 0);
	ck_assert_int_eq(SYS(getdents64, fd, buf, 8), -EINVAL);
	/* two entries fit in 48 bytes: ".", ".." then e0 ... */
	ck_assert_int_gt(list_some(fd, 48, &s, &off), 0);
	ck_assert_int_eq(s.other, 2);
	ck_assert_int_gt(list_some(fd, 48, &s, &off), 0);
	saved = off;
	/* change the directory between calls: remove seen and unseen names,
	 * add new ones: nothing twice, no loop */
	ck_assert_int_eq(SYS(unlink, "e0"), 0);
	ck_assert_int_eq(SYS(unlink, "e10"), 0);
	for (int i = 20; i < 25; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		put_file(name, "");
	}
	while ((n = list_some(fd, 100, &s, &off)) > 0)
		;
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(s.other, 2);
	for (int i = 0; i < 25; i++)
		ck_assert_int_eq(s.count[i], i == 10 ? 0 : 1);
	/* seekdir to a d_off resumes there */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(SYS(lseek, fd, saved, SEEK_SET), saved);
	while (list_some(fd, 200, &s, &off) > 0)
		;
	ck_assert_int_eq(s.count[1], 0);
	ck_assert_int_eq(s.count[2], 1);
	ck_assert_int_eq(s.count[24], 1);
	SYS(close, fd);
	fd = xopen("e1", O_RDONLY, 0);
	ck_assert_int_eq(SYS(getdents64, fd, buf, sizeof(buf)), -ENOTDIR);
}
END_TEST

START_TEST(renames)
{
	struct stat a, st;

	enter("rename");
	put_file("f", "F");
	put_file("g", "G");
	a = st_of("f", true);
	ck_assert_int_eq(SYS(rename, "f", "g"), 0);
	ck_assert_int_eq(stat_err("f"), -ENOENT);
	ck_assert_uint_eq(st_of("g", true).st_ino, a.st_ino);
	ck_assert_str_eq(get_file("g"), "F");
	ck_assert_int_eq(SYS(rename, "g", "g"), 0);
	ck_assert_int_eq(SYS(rename, "nothing", "x"), -ENOENT);

	ck_assert_int_eq(SYS(mkdir, "d", 0755), 0);
	ck_assert_int_eq(SYS(mkdir, "e", 0755), 0);
	ck_assert_int_eq(SYS(mkdir, "d/sub", 0755), 0);
	put_file("e/f", "");
	ck_assert_int_eq(SYS(rename, "g", "d"), -EISDIR);
	ck_assert_int_eq(SYS(rename, "d", "g"), -ENOTDIR);
	ck_assert_int_eq(SYS(rename, "d", "e"), -ENOTEMPTY);
	ck_assert_int_eq(SYS(rename, "d", "d/sub/x"), -EINVAL);
	ck_assert_int_eq(SYS(rename, "d", "d/x"), -EINVAL);
	ck_assert_int_eq(SYS(rename, "g/", "h"), -ENOTDIR);
	ck_assert_int_eq(SYS(rename, "d/.", "h"), -EBUSY);
	ck_assert_int_eq(SYS(unlink, "e/f"), 0);
	ck_assert_int_eq(SYS(rename, "d/", "e/"), 0); /* over an empty directory */
	ck_assert_uint_eq(st_of("e/sub/..", true).st_ino, st_of("e", true).st_ino);
	ck_assert_uint_eq(st_of(".", true).st_nlink, 3);

	/* moving a directory moves its ".." */
	ck_assert_int_eq(SYS(mkdir, "p", 0755), 0);
	ck_assert_int_eq(SYS(rename, "e/sub", "p/sub"), 0);
	ck_assert_uint_eq(st_of("p/sub/..", true).st_ino, st_of("p", true).st_ino);
	ck_assert_uint_eq(st_of("p", true).st_nlink, 3);
	ck_assert_uint_eq(st_of("e", true).st_nlink, 2);

	/* renameat2 flags */
	put_file("x", "X");
	put_file("y", "Y");
	ck_assert_int_eq(SYS(renameat2, AT_FDCWD, "x", AT_FDCWD, "y", RENAME_NOREPLACE), -EEXIST);
	ck_assert_int_eq(SYS(renameat2, AT_FDCWD, "x", AT_FDCWD, "y", RENAME_EXCHANGE), 0);
	ck_assert_str_eq(get_file("x"), "Y");
	ck_assert_str_eq(get_file("y"), "X");
	ck_assert_int_eq(SYS(renameat2, AT_FDCWD, "x", AT_FDCWD, "z", RENAME_EXCHANGE), -ENOENT);
	ck_assert_int_eq(SYS(renameat2, AT_FDCWD, "x", AT_FDCWD, "p", RENAME_EXCHANGE), 0);
	ck_assert(S_ISDIR(st_of("x", true).st_mode));
	ck_assert_str_eq(get_file("p"), "Y");
	ck_assert_uint_eq(st_of("x/sub/..", true).st_ino, st_of("x", true).st_ino);
	ck_assert_int_eq(SYS(renameat2, AT_FDCWD, "x", AT_FDCWD, "x/sub", RENAME_EXCHANGE),
	                 -EINVAL);
	ck_assert_int_eq(SYS(renameat2, AT_FDCWD, "p", AT_FDCWD, "y", 8), -EINVAL);
	ck_assert_int_eq(SYS(fstat, 0, &st), 0);
}
END_TEST

START_TEST(links)
{
	struct stat st;

	enter("links");
	put_file("f", "data");
	ck_assert_int_eq(SYS(link, "f", "g"), 0);
	st = st_of("g", true);
	ck_assert_uint_eq(st.st_nlink, 2);
	ck_assert_uint_eq(st.st_ino, st_of("f", true).st_ino);
	ck_assert_int_eq(SYS(link, "f", "g"), -EEXIST);
	ck_assert_int_eq(SYS(link, ".", "h"), -EPERM);
	ck_assert_int_eq(SYS(link, "nothing", "h"), -ENOENT);
	ck_assert_int_eq(SYS(link, "f", "none/h"), -ENOENT);
	ck_assert_int_eq(SYS(unlink, "f"), 0);
	ck_assert_uint_eq(st_of("g", true).st_nlink, 1);
	ck_assert_str_eq(get_file("g"), "data");

	/* link(2) does not follow a symlink; AT_SYMLINK_FOLLOW does */
	ck_assert_int_eq(SYS(symlink, "g", "s"), 0);
	ck_assert_int_eq(SYS(link, "s", "s2"), 0);
	ck_assert(S_ISLNK(st_of("s2", false).st_mode));
	ck_assert_int_eq(SYS(linkat, AT_FDCWD, "s", AT_FDCWD, "g2", AT_SYMLINK_FOLLOW), 0);
	ck_assert_uint_eq(st_of("g2", false).st_ino, st_of("g", false).st_ino);
	ck_assert_int_eq(SYS(symlink, "", "empty"), -ENOENT);
	ck_assert_int_eq(SYS(symlink, "x", "g"), -EEXIST);
}
END_TEST

/* KILN_CHG_* of a name (changes.c, include/kiln/rootchg.h) */
static uint32_t chg_of(const char *path)
{
	struct inode *ip;
	uint32_t bits;

	ck_assert_int_eq(vfs_lookup(path, false, &ip), 0);
	bits = ip->chg;
	inode_put(ip);
	return bits;
}

START_TEST(change_marks)
{
	struct ts t[2] = {{5, 0}, {6, 0}};

	enter("chg");
	put_file("pre", "before tracking");
	put_file("ro", "read only");
	ck_assert_int_eq(SYS(mkdir, "d", 0755), 0);
	ck_assert_uint_eq(chg_of("pre"), 0);
	ck_assert_uint_eq(chg_of("."), 0);
	vfs_chg_on = true;
	put_file("new", "N");
	ck_assert_uint_eq(chg_of("new"), KILN_CHG_NEW | KILN_CHG_SELF);
	ck_assert_uint_eq(chg_of("."), KILN_CHG_ENTRIES | KILN_CHG_SELF);
	ck_assert_str_eq(get_file("ro"), "read only");
	ck_assert_uint_eq(chg_of("ro"), 0); /* reading is no change */
	ck_assert_int_eq(SYS(chmod, "pre", 0600), 0);
	ck_assert_uint_eq(chg_of("pre"), KILN_CHG_SELF);
	ck_assert_int_eq(SYS(utimensat, AT_FDCWD, "d", t, 0), 0);
	ck_assert_uint_eq(chg_of("d"), KILN_CHG_SELF);
	ck_assert_int_eq(SYS(rename, "ro", "d/ro"), 0);
	ck_assert_uint_eq(chg_of("d/ro") & KILN_CHG_NEW, KILN_CHG_NEW);
	ck_assert_uint_eq(chg_of("d") & KILN_CHG_ENTRIES, KILN_CHG_ENTRIES);
	vfs_chg_on = false;
}
END_TEST

static void mark_of(const char *path)
{
	struct inode *ip;

	ck_assert_int_eq(vfs_lookup(path, false, &ip), 0);
	ip->chg = KILN_CHG_SELF;
	inode_put(ip);
}

/* an image directory not filled (unionfs.c is not linked here: none is) */
bool unionfs_pristine(const struct inode *ip)
{
	(void)ip;
	return false;
}

/* KILN_PR_ROOTCHG_CLEAR_TREE: a subtree in one call, nothing beside it,
 * no symlink followed, a synthesized node left as it is, its depth
 * bounded */
START_TEST(change_clear_tree)
{
	char deep[2 * (KILN_ROOTCHG_TREE_DEPTH + 3)] = "";
	struct inode_synth fake = {.ops = NULL};
	struct inode *ip;
	long fd;

	enter("ctree");
	vfs_chg_on = true;
	ck_assert_int_eq(SYS(mkdir, "t", 0755), 0);
	ck_assert_int_eq(SYS(mkdir, "t/a", 0755), 0);
	ck_assert_int_eq(SYS(mkdir, "t/a/b", 0755), 0);
	ck_assert_int_eq(SYS(mkdir, "t/e", 0755), 0);
	put_file("t/a/b/f", "F");
	put_file("t/g", "G");
	put_file("beside", "B");
	ck_assert_int_eq(SYS(link, "t/g", "t/a/g2"), 0);
	ck_assert_int_eq(SYS(symlink, "/ctree/beside", "t/s"), 0);
	ck_assert_int_eq(SYS(symlink, "/dev", "t/a/dev"), 0);
	ck_assert_uint_ne(chg_of("t/a/b/f"), 0);
	mark_of("/dev/null"); /* (made before tracking) */
	/* t, a, b, e, f, g, g2 (g's second name), s, dev */
	ck_assert_int_eq(vfs_rootchg_clear_tree(AT_FDCWD, "t"), 9);
	ck_assert_uint_eq(chg_of("t") | chg_of("t/a") | chg_of("t/a/b") | chg_of("t/e"), 0);
	ck_assert_uint_eq(chg_of("t/a/b/f") | chg_of("t/g") | chg_of("t/a/g2"), 0);
	ck_assert_uint_eq(chg_of("t/s") | chg_of("t/a/dev"), 0);
	ck_assert_uint_ne(chg_of("beside"), 0); /* the symlinks' targets are not cleared */
	ck_assert_uint_ne(chg_of("."), 0);
	ck_assert_uint_ne(chg_of("/dev/null"), 0);
	/* later changes count again */
	put_file("t/a/b/f", "F2");
	ck_assert_uint_eq(chg_of("t/a/b/f"), KILN_CHG_SELF);
	/* a file, relative to a directory fd; a synthesized node is left */
	fd = xopen("t/a", O_RDONLY | O_DIRECTORY, 0);
	ck_assert_int_eq(vfs_rootchg_clear_tree(fd, "b/f"), 1);
	ck_assert_uint_eq(chg_of("t/a/b/f"), 0);
	SYS(close, fd);
	/* a synthesized node (procfs's, not linked here: one made so) is left */
	ck_assert_int_eq(vfs_lookup("t/e", false, &ip), 0);
	ip->synth = &fake;
	ip->chg = KILN_CHG_SELF;
	put_file("t/g", "G2");
	ck_assert_int_eq(vfs_rootchg_clear_tree(AT_FDCWD, "t/e"), 0);
	ck_assert_int_eq(vfs_rootchg_clear_tree(AT_FDCWD, "t"), 8);
	ck_assert_uint_eq(ip->chg, KILN_CHG_SELF);
	ck_assert_uint_eq(chg_of("t/g"), 0);
	ip->synth = NULL;
	inode_put(ip);
	ck_assert_int_eq(vfs_rootchg_clear_tree(AT_FDCWD, "none"), -ENOENT);
	/* nodes as deep as its bound (levels below "d") cleared, one deeper: ELOOP */
	for (int i = 0; i < KILN_ROOTCHG_TREE_DEPTH; i++) {
		strcat(deep, i ? "/d" : "d");
		ck_assert_int_eq(SYS(mkdir, deep, 0755), 0);
	}
	strcat(deep, "/f");
	put_file(deep, "deep");
	ck_assert_int_eq(vfs_rootchg_clear_tree(AT_FDCWD, "d"), KILN_ROOTCHG_TREE_DEPTH + 1);
	ck_assert_uint_eq(chg_of(deep), 0);
	strcpy(deep + strlen(deep) - 1, "d");
	ck_assert_int_eq(SYS(mkdir, deep, 0755), 0);
	strcat(deep, "/f");
	put_file(deep, "deeper");
	ck_assert_int_eq(vfs_rootchg_clear_tree(AT_FDCWD, "d"), -ELOOP);
	vfs_chg_on = false;
}
END_TEST

START_TEST(cwd)
{
	char buf[128];
	long fd;

	enter("cwd");
	ck_assert_int_eq(SYS(mkdir, "a", 0755), 0);
	ck_assert_int_eq(SYS(mkdir, "a/b", 0755), 0);
	ck_assert_int_eq(SYS(chdir, "a/b"), 0);
	ck_assert_int_eq(SYS(getcwd, buf, sizeof(buf)), 9);
	ck_assert_str_eq(buf, "/cwd/a/b");
	ck_assert_int_eq(SYS(getcwd, buf, 8), -ERANGE);
	put_file("../f", "up");
	ck_assert_str_eq(get_file("/cwd/a/f"), "up");
	fd = xopen("/", O_RDONLY, 0);
	ck_assert_int_eq(SYS(fchdir, fd), 0);
	ck_assert_int_eq(SYS(getcwd, buf, sizeof(buf)), 2);
	ck_assert_str_eq(buf, "/");
	SYS(close, fd);
	fd = xopen("/cwd/a/f", O_RDONLY, 0);
	ck_assert_int_eq(SYS(fchdir, fd), -ENOTDIR);
	ck_assert_int_eq(SYS(chdir, "/cwd/a/f"), -ENOTDIR);
	ck_assert_int_eq(SYS(chdir, "/cwd/a/b"), 0);
	ck_assert_int_eq(SYS(rmdir, "/cwd/a/b"), 0);
	ck_assert_int_eq(SYS(getcwd, buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(xopen("x", O_CREAT | O_RDWR, 0644), -ENOENT);
	ck_assert_uint_eq(st_of("..", true).st_ino, st_of("/cwd/a", true).st_ino);
	ck_assert_int_eq(SYS(umask, 077), 022);
	ck_assert_int_eq(SYS(umask, 022), 077);
}
END_TEST

/* ------------------------------------------------------------ descriptors */

START_TEST(fds)
{
	char c;
	long fd, fd2, n;

	enter("fds");
	put_file("f", "abcdef");
	fd = xopen("f", O_RDONLY | O_CLOEXEC, 0);
	ck_assert_int_eq(fd, 3);
	ck_assert_int_eq(SYS(fcntl, fd, F_GETFD), FD_CLOEXEC);
	fd2 = SYS(dup, fd);
	ck_assert_int_eq(fd2, 4);
	ck_assert_int_eq(SYS(fcntl, fd2, F_GETFD), 0);
	ck_assert_int_eq(SYS(read, fd, &c, 1), 1);
	ck_assert_int_eq(SYS(read, fd2, &c, 1), 1); /* shared offset */
	ck_assert_int_eq(c, 'b');
	ck_assert_int_eq(SYS(close, 0), 0);
	ck_assert_int_eq(SYS(dup, fd), 0); /* lowest free */
	ck_assert_int_eq(SYS(dup2, fd, fd), fd);
	ck_assert_int_eq(SYS(dup2, 99, 5), -EBADF);
	ck_assert_int_eq(SYS(dup3, fd, fd, 0), -EINVAL);
	ck_assert_int_eq(SYS(dup3, fd, 9, 1), -EINVAL);
	ck_assert_int_eq(SYS(dup3, fd, 9, O_CLOEXEC), 9);
	ck_assert_int_eq(SYS(fcntl, 9, F_GETFD), FD_CLOEXEC);
	ck_assert_int_eq(SYS(dup2, fd, FILES_MAX), -EBADF);
	ck_assert_int_eq(SYS(fcntl, fd, F_DUPFD, 100), 100);
	ck_assert_int_eq(SYS(fcntl, fd, F_DUPFD_CLOEXEC, 100), 101);
	ck_assert_int_eq(SYS(fcntl, fd, F_DUPFD, FILES_MAX), -EINVAL);
	ck_assert_int_eq(SYS(fcntl, fd, F_SETFD, 0), 0);
	ck_assert_int_eq(SYS(fcntl, fd, F_GETFD), 0);
	ck_assert_int_eq(SYS(fcntl, fd, F_SETFL, O_NONBLOCK | O_APPEND | O_RDWR), 0);
	ck_assert_int_eq(SYS(fcntl, fd, F_GETFL), O_RDONLY | O_NONBLOCK | O_APPEND | O_LARGEFILE);
	ck_assert_int_eq(SYS(fcntl, fd, 9999), -EINVAL);
	struct flock fl = {.l_type = F_WRLCK};
	ck_assert_int_eq(SYS(fcntl, fd, F_SETLK, &fl), 0);
	ck_assert_int_eq(SYS(fcntl, fd, F_GETLK, &fl), 0);
	ck_assert_int_eq(fl.l_type, F_UNLCK);
	ck_assert_int_eq(SYS(flock, fd, LOCK_EX | LOCK_NB), 0);

	/* exec closes close-on-exec descriptors */
	files_close_on_exec(P.files);
	ck_assert_int_eq(SYS(fcntl, 9, F_GETFD), -EBADF);
	ck_assert_int_eq(SYS(fcntl, 101, F_GETFD), -EBADF);
	ck_assert_int_eq(SYS(fcntl, 100, F_GETFD), 0);

	/* the table is full at FILES_MAX */
	while ((n = SYS(dup, fd)) >= 0)
		;
	ck_assert_int_eq(n, -EMFILE);
	ck_assert_int_eq(SYS(close_range, 10, ~0U, 0), 0);
	ck_assert_int_eq(SYS(dup, fd), 10);
	ck_assert_int_eq(SYS(close_range, 5, 9, CLOSE_RANGE_CLOEXEC), 0);
	ck_assert_int_eq(SYS(fcntl, 9, F_GETFD), FD_CLOEXEC);
	ck_assert_int_eq(SYS(close_range, 9, 5, 0), -EINVAL);
	ck_assert_int_eq(SYS(close, 1000), -EBADF);
	ck_assert_int_eq(SYS(close, -1), -EBADF);
}
END_TEST

/* ------------------------------------------------------------ devices */

START_TEST(devices)
{
	char buf[64];
	struct termios tio;
	struct winsize ws;
	int v;
	long fd;

	fd = xopen("/dev/null", O_RDWR, 0);
	ck_assert_int_eq(SYS(read, fd, buf, sizeof(buf)), 0);
	ck_assert_int_eq(SYS(write, fd, buf, sizeof(buf)), sizeof(buf));
	ck_assert_int_eq(SYS(ioctl, fd, TCGETS, &tio), -ENOTTY);
	ck_assert_int_eq(SYS(lseek, fd, 10, SEEK_SET), 0);
	SYS(close, fd);
	fd = xopen("/dev/zero", O_RDONLY, 0);
	memset(buf, 1, sizeof(buf));
	ck_assert_int_eq(SYS(read, fd, buf, sizeof(buf)), sizeof(buf));
	ck_assert_int_eq(buf[0] | buf[63], 0);
	SYS(close, fd);
	fd = xopen("/dev/full", O_WRONLY, 0);
	ck_assert_int_eq(SYS(write, fd, buf, 1), -ENOSPC);
	SYS(close, fd);
	fd = xopen("/dev/urandom", O_RDONLY, 0);
	ck_assert_int_eq(SYS(read, fd, buf, sizeof(buf)), sizeof(buf));
	ck_assert_int_eq(buf[1], 8);
	SYS(close, fd);
	ck_assert_uint_eq(st_of("/dev/null", true).st_rdev, 0x103);
	ck_assert_uint_eq(st_of("/dev/console", true).st_mode, S_IFCHR | 0600);
	ck_assert(S_ISDIR(st_of("/dev/shm", true).st_mode));
	ck_assert(S_ISLNK(st_of("/dev/stdin", false).st_mode));

	/* the console behind fds 0-2 */
	console_out_len = 0;
	ck_assert_int_eq(SYS(write, 2, "hi\n", 3), 3);
	ck_assert_int_eq(console_out_len, 3);
	ck_assert_uint_eq(tty_receive(con, "typed", 5), 5);
	ck_assert_int_eq(SYS(ioctl, 0, FIONREAD, &v), 0);
	ck_assert_int_eq(v, 5);
	ck_assert_int_eq(SYS(read, 0, buf, sizeof(buf)), 5);
	ck_assert_int_eq(SYS(ioctl, 0, FIONBIO, &(int){1}), 0);
	ck_assert_int_eq(SYS(read, 0, buf, sizeof(buf)), -EAGAIN);
	tty_input_ended(con);
	ck_assert_int_eq(SYS(read, 0, buf, sizeof(buf)), 0); /* end of input */
	ck_assert_int_eq(SYS(lseek, 0, 0, SEEK_CUR), -ESPIPE);
	ck_assert_int_eq(SYS(pread64, 0, buf, 1, 0), -ESPIPE);
	ck_assert_int_eq(SYS(ioctl, 1, TCGETS, &tio), 0);
	ck_assert_uint_eq(tio.c_lflag & (ICANON | ECHO | ISIG), 0); /* no host terminal: raw */
	ck_assert_uint_eq(tio.c_cc[VINTR], 3);
	tio.c_lflag |= ICANON | ECHO;
	ck_assert_int_eq(SYS(ioctl, 1, TCSETSW, &tio), 0);
	memset(&tio, 0, sizeof(tio));
	fd = xopen("/dev/tty", O_RDWR, 0);
	ck_assert_int_eq(SYS(ioctl, fd, TCGETS, &tio), 0);
	ck_assert_uint_eq(tio.c_lflag & (ICANON | ECHO), ICANON | ECHO);
	tio.c_lflag &= ~(ICANON | ECHO);
	ck_assert_int_eq(SYS(ioctl, fd, TCSETS, &tio), 0);
	ck_assert_int_eq(SYS(ioctl, fd, TIOCGWINSZ, &ws), 0);
	ck_assert_int_eq(ws.ws_row, 24);
	ck_assert_int_eq(ws.ws_col, 80);
	ck_assert_int_eq(SYS(ioctl, fd, TIOCGPGRP, &v), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(SYS(ioctl, fd, 0x5401 + 0x1000, &v), -ENOTTY);
	ck_assert_int_eq(SYS(ioctl, fd, TCGETS, bad_page), -EFAULT);
	SYS(close, fd);

	/* generic ioctls on a regular file */
	enter("devices");
	put_file("f", "12345");
	fd = xopen("f", O_RDONLY, 0);
	ck_assert_int_eq(SYS(read, fd, buf, 2), 2);
	ck_assert_int_eq(SYS(ioctl, fd, FIONREAD, &v), 0);
	ck_assert_int_eq(v, 3);
	ck_assert_int_eq(SYS(ioctl, fd, TCGETS, &tio), -ENOTTY);
	ck_assert_int_eq(SYS(ioctl, fd, FIOCLEX), 0);
	ck_assert_int_eq(SYS(fcntl, fd, F_GETFD), FD_CLOEXEC);
}
END_TEST

/* ------------------------------------------------------------ attributes */

START_TEST(attrs)
{
	struct {
		long long sec, nsec;
	} ts[2] = {{100, 5}, {200, UTIME_OMIT}};
	struct statx sx;
	struct statfs sf;
	struct stat st;
	long fd;

	enter("attrs");
	put_file("f", "abc");
	ck_assert_int_eq(SYS(chmod, "f", 04755), 0);
	ck_assert_uint_eq(st_of("f", true).st_mode, S_IFREG | 04755);
	ck_assert_int_eq(SYS(access, "f", X_OK), 0);
	ck_assert_int_eq(SYS(access, "f", 8), -EINVAL);
	ck_assert_int_eq(SYS(chown, "f", 10, -1), 0);
	st = st_of("f", true);
	ck_assert_uint_eq(st.st_uid, 10);
	ck_assert_uint_eq(st.st_gid, 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0755); /* set-user-ID dropped */
	ck_assert_int_eq(SYS(chmod, "f", 0644), 0);
	ck_assert_int_eq(SYS(access, "f", X_OK), -EACCES);
	ck_assert_int_eq(SYS(access, "f", R_OK | W_OK), 0);
	ck_assert_int_eq(SYS(access, "nothing", F_OK), -ENOENT);

	ck_assert_int_eq(SYS(utimensat, AT_FDCWD, "f", ts, 0), 0);
	st = st_of("f", true);
	ck_assert_int_eq(st.st_atime, 100);
	ck_assert_int_eq(st.st_atime_nsec, 5);
	ck_assert_int_ne(st.st_mtime, 200);
	ts[0].nsec = 1000000000;
	ck_assert_int_eq(SYS(utimensat, AT_FDCWD, "f", ts, 0), -EINVAL);
	ts[0].nsec = 0;
	ts[0].sec = -1; /* before the epoch */
	ck_assert_int_eq(SYS(utimensat, AT_FDCWD, "f", ts, 0), 0);
	ck_assert_int_eq(st_of("f", true).st_atime, -1);
	fd = xopen("f", O_RDONLY, 0);
	ck_assert_int_eq(SYS(utimensat, fd, NULL, NULL, 0), 0); /* futimens */
	ck_assert_int_gt(st_of("f", true).st_atime, 1000000000);

	ck_assert_int_eq(SYS(statx, AT_FDCWD, "f", 0, STATX_BASIC_STATS, &sx), 0);
	ck_assert_uint_eq(sx.stx_mask & STATX_BASIC_STATS, STATX_BASIC_STATS);
	ck_assert_uint_eq(sx.stx_size, 3);
	ck_assert_uint_eq(sx.stx_mode, S_IFREG | 0644);
	ck_assert_uint_eq(sx.stx_ino, st_of("f", true).st_ino);
	ck_assert_int_eq(SYS(statx, fd, "", AT_EMPTY_PATH, 0, &sx), 0);
	ck_assert_int_eq(SYS(statx, fd, NULL, AT_EMPTY_PATH, 0, &sx), 0);
	ck_assert_int_eq(SYS(statx, AT_FDCWD, "f", 0x6000, 0, &sx), -EINVAL);
	ck_assert_int_eq(SYS(statx, AT_FDCWD, "/dev/zero", 0, 0, &sx), 0);
	ck_assert_uint_eq(sx.stx_rdev_major, 1);
	ck_assert_uint_eq(sx.stx_rdev_minor, 5);

	ck_assert_int_eq(SYS(statfs, "/", &sf), 0);
	ck_assert_int_eq(sf.f_type, TMPFS_MAGIC);
	ck_assert_int_eq(SYS(fstatfs, fd, &sf), 0);
	ck_assert_int_eq(SYS(getxattr, "f", "user.x", NULL, 0), -EOPNOTSUPP);
	ck_assert_int_eq(SYS(fchmod, fd, 0600), 0);
	ck_assert_int_eq(SYS(fchown, fd, 1, 2), 0);
	ck_assert_int_eq(SYS(fstat, fd, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0600);
	ck_assert_uint_eq(st.st_gid, 2);
	ck_assert_int_eq(SYS(fsync, fd), 0);
	ck_assert_int_eq(SYS(fsync, 555), -EBADF);
	ck_assert_int_eq(SYS(fallocate, fd, 0, 0, 10), -EBADF);
	SYS(close, fd);
	fd = xopen("f", O_RDWR, 0);
	ck_assert_int_eq(SYS(fallocate, fd, 0, 0, 10), 0);
	ck_assert_int_eq(st_of("f", true).st_size, 10);
	ck_assert_int_eq(SYS(fallocate, fd, FALLOC_FL_KEEP_SIZE, 0, 100), 0);
	ck_assert_int_eq(st_of("f", true).st_size, 10);
}
END_TEST

/* ------------------------------------------------------------ initramfs */

struct ar {
	char *b;
	size_t len, cap;
};

static void ar_put(struct ar *a, const void *p, size_t n)
{
	ck_assert_uint_le(a->len + n, a->cap);
	memcpy(a->b + a->len, p, n);
	a->len += n;
	while (a->len % 4)
		a->b[a->len++] = 0;
}

static void ar_add(struct ar *a, const char *name, uint32_t mode, uint32_t ino, uint32_t nlink,
                   uint32_t rmaj, uint32_t rmin, const char *data)
{
	char hdr[160];
	size_t size = data ? strlen(data) : 0;

	snprintf(hdr, sizeof(hdr), "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X",
	         ino, mode, 5, 6, nlink, 1000, size, 0, 0, rmaj, rmin, strlen(name) + 1, 0);
	memcpy(a->b + a->len, hdr, 110);
	a->len += 110;
	ar_put(a, name, strlen(name) + 1);
	if (size)
		ar_put(a, data, size);
}

/* An archive in read-only memory that stays mapped, as the initramfs does. */
static const void *ar_seal(struct ar *a, size_t *len)
{
	ar_add(a, "TRAILER!!!", 0, 0, 1, 0, 0, NULL);
	ck_assert_int_eq(mprotect(a->b, a->cap, PROT_READ), 0);
	*len = a->len;
	return a->b;
}

static void ar_init(struct ar *a)
{
	a->cap = 1 << 16;
	a->b = mmap(NULL, a->cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(a->b, MAP_FAILED);
	a->len = 0;
}

START_TEST(initramfs)
{
	struct ar a;
	const char *err = "unset";
	const void *buf, *direct;
	struct inode *ip;
	struct stat st;
	size_t len, dlen;
	long fd;

	ar_init(&a);
	ar_add(&a, ".", S_IFDIR | 0755, 1, 2, 0, 0, NULL);
	ar_add(&a, "ird", S_IFDIR | 0700, 2, 2, 0, 0, NULL);
	ar_add(&a, "ird/bin/prog", S_IFREG | 0755, 3, 1, 0, 0, "\177ELF program bytes");
	ar_add(&a, "ird/sh", S_IFLNK | 0777, 4, 1, 0, 0, "bin/prog");
	ar_add(&a, "ird/con", S_IFCHR | 0600, 5, 1, 5, 1, NULL);
	ar_add(&a, "ird/nul", S_IFCHR | 0666, 6, 1, 1, 3, NULL);
	ar_add(&a, "ird/odd", S_IFCHR | 0666, 7, 1, 42, 0, NULL);
	ar_add(&a, "ird/fifo", S_IFIFO | 0666, 8, 1, 0, 0, NULL);
	ar_add(&a, "ird/h1", S_IFREG | 0644, 9, 2, 0, 0, NULL); /* hard links: data last */
	ar_add(&a, "ird/h2", S_IFREG | 0644, 9, 2, 0, 0, "shared");
	ar_add(&a, "ird/over", S_IFREG | 0644, 10, 1, 0, 0, "first");
	ar_add(&a, "ird/over", S_IFREG | 0600, 11, 1, 0, 0, "second");
	ar_add(&a, "ird/dir/", S_IFDIR | 0755, 12, 2, 0, 0, NULL);
	ar_add(&a, "ird/sh/x", S_IFREG | 0644, 13, 1, 0, 0, "under a file");
	buf = ar_seal(&a, &len);
	klog[0] = '\0';
	ck_assert_int_eq(vfs_unpack_initramfs(buf, len, NULL, 0, &err), 0);
	ck_assert_ptr_null(err);
	ck_assert_ptr_nonnull(strstr(klog, "ird/sh/x"));

	st = st_of("/ird", true);
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 0700);
	ck_assert_uint_eq(st.st_uid, 5);
	ck_assert_int_eq(st.st_mtime, 1000);
	ck_assert(S_ISDIR(st_of("/ird/bin", true).st_mode)); /* made on the way */
	ck_assert_str_eq(get_file("/ird/sh"), "\177ELF program bytes");
	ck_assert_str_eq(get_file("/ird/h1"), "shared");
	ck_assert_uint_eq(st_of("/ird/h1", true).st_ino, st_of("/ird/h2", true).st_ino);
	ck_assert_uint_eq(st_of("/ird/h1", true).st_nlink, 2);
	ck_assert_str_eq(get_file("/ird/over"), "second");
	ck_assert_uint_eq(st_of("/ird/over", true).st_mode, S_IFREG | 0600);
	ck_assert(S_ISDIR(st_of("/ird/dir", true).st_mode));
	ck_assert_int_eq(stat_err("/ird/fifo"), -ENOENT);
	ck_assert_int_eq(xopen("/ird/odd", O_RDONLY, 0), -ENXIO);
	fd = xopen("/ird/nul", O_RDWR, 0);
	ck_assert_int_eq(SYS(write, fd, "x", 1), 1);
	SYS(close, fd);
	console_out_len = 0;
	fd = xopen("/ird/con", O_RDWR, 0);
	ck_assert_int_eq(SYS(write, fd, "x", 1), 1);
	ck_assert_int_eq(console_out_len, 1);
	SYS(close, fd);

	/* exec's view: direct bytes until the file is written */
	ck_assert_int_eq(vfs_lookup_at(P.fs, "/ird/sh", true, &ip), 0);
	ck_assert(S_ISREG(vfs_inode_mode(ip)));
	ck_assert_uint_eq(vfs_inode_size(ip), 18);
	direct = vfs_inode_direct(ip, &dlen);
	ck_assert_ptr_nonnull(direct);
	ck_assert_uint_eq(dlen, 18);
	ck_assert(direct > buf && (const char *)direct < (const char *)buf + len);
	fd = xopen("/ird/bin/prog", O_WRONLY, 0);
	ck_assert_int_eq(SYS(pwrite64, fd, "E", 1, 1), 1);
	SYS(close, fd);
	ck_assert_ptr_null(vfs_inode_direct(ip, &dlen));
	ck_assert_str_eq(get_file("/ird/sh"), "\177ELF program bytes");
	{
		char hdr[8] = {0};

		ck_assert_int_eq(vfs_inode_read(ip, hdr, 4, 0), 4);
		ck_assert_int_eq(memcmp(hdr, "\177ELF", 4), 0);
		ck_assert_int_eq(vfs_inode_read(ip, hdr, 4, 16), 2);
	}
	inode_put(ip);
	ck_assert_int_eq(vfs_lookup_at(P.fs, "/ird", true, &ip), 0);
	ck_assert_int_eq(vfs_inode_read(ip, &st, 1, 0), -EISDIR);
	inode_put(ip);
	ck_assert_int_eq(vfs_lookup_at(NULL, "/ird/nothing", true, &ip), -ENOENT);
	fd = xopen("/ird/h1", O_WRONLY | O_TRUNC, 0);
	SYS(close, fd);
	ck_assert_str_eq(get_file("/ird/h2"), "");
}
END_TEST

/* vfs_inode_read_batch: the image's bytes by the batch (in unit tests
 * copied at host_copy_end), pages written since at once, zeros past the
 * image's bytes, nothing past the end of the file. */
START_TEST(initramfs_read_batch)
{
	static char data[6001], want[8192], got[8192];
	struct host_copy hc;
	struct inode *ip;
	struct ar a;
	const char *err = NULL;
	const void *buf;
	size_t len;
	long fd;

	for (size_t i = 0; i < sizeof(data) - 1; i++)
		data[i] = (char)('a' + i % 23);
	ar_init(&a);
	ar_add(&a, "big", S_IFREG | 0644, 1, 1, 0, 0, data);
	buf = ar_seal(&a, &len);
	ck_assert_int_eq(vfs_unpack_initramfs(buf, len, NULL, 0, &err), 0);
	fd = xopen("/big", O_WRONLY, 0);
	ck_assert_int_eq(SYS(pwrite64, fd, "W", 1, 5000), 1); /* page 1 is the tree's now */
	ck_assert_int_eq(SYS(ftruncate, fd, 7000), 0);        /* zeros from 6000 on */
	SYS(close, fd);
	ck_assert_int_eq(vfs_lookup_at(P.fs, "/big", true, &ip), 0);
	ck_assert_int_eq(vfs_inode_read(ip, want, sizeof(want), 0), 7000);
	ck_assert_int_eq(want[5000], 'W');
	ck_assert_int_eq(want[6500], 0);

	memset(got, 0x55, sizeof(got));
	host_copy_begin(&hc);
	ck_assert_uint_ne(hc.page, 0);
	ck_assert_int_eq(vfs_inode_read_batch(ip, got + 10, sizeof(got) - 10, 10, &hc), 6990);
	ck_assert_int_eq(got[10], 0x55);  /* the image's bytes come with the batch */
	ck_assert_int_eq(got[5000], 'W'); /* the tree's at once */
	host_copy_end(&hc);
	ck_assert_uint_eq(hc.page, 0);
	ck_assert_int_eq(memcmp(got + 10, want + 10, 6990), 0);
	ck_assert_int_eq(got[7000], 0x55); /* nothing past the end */
	ck_assert_int_eq(vfs_inode_read_batch(ip, got, 10, 7000, &hc), 0);
	inode_put(ip);
}
END_TEST

START_TEST(initramfs_bad_name)
{
	struct ar a;
	const char *err = NULL;
	const void *buf;
	size_t len;

	ar_init(&a);
	ar_add(&a, "bad1", S_IFDIR | 0755, 1, 2, 0, 0, NULL);
	ar_add(&a, "bad1/../../evil", S_IFREG | 0644, 2, 1, 0, 0, "x");
	buf = ar_seal(&a, &len);
	ck_assert_int_eq(vfs_unpack_initramfs(buf, len, NULL, 0, &err), -EINVAL);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(stat_err("/bad1"), -ENOENT); /* nothing was added */
	ck_assert_int_eq(vfs_unpack_initramfs("070701", 6, NULL, 0, &err), -EINVAL);
	ck_assert_ptr_nonnull(err);
}
END_TEST

/* The pages shared mappings map (shmem.c): the file's own, kept while
 * mapped; seals. */
START_TEST(shared_pages)
{
	static char pg[PAGE_SIZE];
	struct inode *ip;
	uint64_t pa, pa1;
	long fd, base;
	bool borrowed = false;
	char buf[8];

	enter("shared_pages");
	fd = xopen("f", O_CREAT | O_RDWR, 0644);
	ck_assert_int_eq(SYS(pwrite64, fd, "abc", 3, PAGE_SIZE), 3);
	ck_assert_int_eq(vfs_lookup("f", true, &ip), 0);
	ck_assert(vfs_inode_shareable(ip));
	base = live_pages;
	ck_assert_int_eq(vfs_map_ops.page(ip, 1, PROT_READ, false, &pa, &borrowed), 0);
	ck_assert(!borrowed);
	ck_assert_int_eq(memcmp(phys_to_virt(pa), "abc", 3), 0); /* the file's page */
	ck_assert_int_eq(vfs_map_ops.page(ip, 0, PROT_READ, false, &pa, &borrowed), 0);
	ck_assert_uint_eq(pa, 0); /* a hole, not made */
	ck_assert_int_eq(vfs_map_ops.page(ip, 0, PROT_READ | PROT_WRITE, true, &pa, &borrowed), 0);
	ck_assert_int_eq(live_pages - base, 1);
	memcpy(phys_to_virt(pa), "mapped", 6); /* a program's write */
	ck_assert_int_eq(SYS(pread64, fd, buf, 6, 0), 6);
	ck_assert_int_eq(memcmp(buf, "mapped", 6), 0);
	ck_assert_int_eq(vfs_map_ops.page(ip, 2, PROT_READ, true, &pa, &borrowed),
	                 -ERANGE); /* past the end: SIGBUS */

	/* Truncated while mapped: the pages stay, zeroed, until unmapped. */
	vfs_map_ops.get(ip);
	ck_assert_int_eq(vfs_map_ops.page(ip, 1, PROT_READ, false, &pa1, &borrowed), 0);
	memcpy(phys_to_virt(pa + 9), "ZY", 2);
	cut_obj = NULL;
	ck_assert_int_eq(SYS(ftruncate, fd, 10), 0);
	ck_assert_ptr_eq(cut_obj, ip); /* out of the mappings from page 1 on */
	ck_assert_uint_eq(cut_idx, 1);
	ck_assert_int_eq(live_pages - base, 1);
	/* What a private mapping's page copies: read()'s bytes, to the end. */
	ck_assert_int_eq(vfs_file_map_ops.copy(ip, 0, pg), 0);
	ck_assert(!memcmp(pg, "mapped", 6) && pg[9] == 'Z' && pg[10] == 0);
	ck_assert_int_eq(vfs_file_map_ops.copy(ip, 1, pg), -ERANGE);
	ck_assert_int_eq(*(char *)phys_to_virt(pa1), 0);
	ck_assert_int_eq(*(char *)phys_to_virt(pa + 9), 'Z');
	ck_assert_int_eq(*(char *)phys_to_virt(pa + 10), 0);
	/* Unlinked and mapped: the inode lives on. */
	ck_assert_int_eq(SYS(unlink, "f"), 0);
	ck_assert_int_eq(SYS(close, fd), 0);
	inode_put(ip);
	ck_assert_int_eq(memcmp(phys_to_virt(pa), "mapped", 6), 0);
	vfs_map_ops.put(ip); /* the last: everything goes */
	ck_assert_int_eq(live_pages, base - 2);
}
END_TEST

START_TEST(memfd_seals)
{
	long fd = SYS(memfd_create, "m", MFD_ALLOW_SEALING), plain;
	struct inode *ip;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(SYS(fcntl, fd, F_GET_SEALS), 0);
	ck_assert_int_eq(SYS(ftruncate, fd, 3 * PAGE_SIZE), 0);
	ip = file_inode(fd_get(P.files, (int)fd));
	vfs_map_ops.get(ip);
	ck_assert_int_eq(SYS(fcntl, fd, F_ADD_SEALS, F_SEAL_WRITE), -EBUSY);
	vfs_map_ops.put(ip);
	ck_assert_int_eq(SYS(fcntl, fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_WRITE), 0);
	ck_assert_int_eq(SYS(pwrite64, fd, "x", 1, 0), -EPERM);
	ck_assert_int_eq(SYS(ftruncate, fd, 4 * PAGE_SIZE), -EPERM);
	ck_assert_int_eq(SYS(ftruncate, fd, PAGE_SIZE), 0); /* shrinking is not sealed */
	ck_assert_int_eq(SYS(fcntl, fd, F_ADD_SEALS, 0x100), -EINVAL);
	ck_assert_int_eq(SYS(fcntl, fd, F_ADD_SEALS, F_SEAL_SEAL), 0);
	ck_assert_int_eq(SYS(fcntl, fd, F_ADD_SEALS, F_SEAL_SHRINK), -EPERM);
	ck_assert_int_eq(SYS(fcntl, fd, F_GET_SEALS), F_SEAL_SEAL | F_SEAL_GROW | F_SEAL_WRITE);
	plain = SYS(memfd_create, "p", MFD_CLOEXEC);
	ck_assert(fd_cloexec(P.files, (int)plain));
	ck_assert_int_eq(SYS(fcntl, plain, F_GET_SEALS), F_SEAL_SEAL);
	ck_assert_int_eq(SYS(fcntl, plain, F_ADD_SEALS, F_SEAL_GROW), -EPERM);
	ck_assert_int_eq(SYS(memfd_create, "p", MFD_HUGETLB), -EINVAL);
	ck_assert_int_eq(SYS(memfd_create, (long)bad_page, 0), -EFAULT);
	ck_assert_int_eq(SYS(close, fd), 0);
	ck_assert_int_eq(SYS(close, plain), 0);
}
END_TEST

/* Read the events waiting on inotify descriptor fd: how many came, the
 * first max of them and the last in ev. */
static int read_events(long fd, struct inotify_event **ev, int max)
{
	static char buf[1 << 16] __attribute__((aligned(8)));
	long got = SYS(read, fd, buf, sizeof(buf));
	int n = 0;

	for (char *p = buf; got > 0 && p < buf + got; n++) {
		ev[n < max ? n : max - 1] = (struct inotify_event *)p;
		p += sizeof(struct inotify_event) + ((struct inotify_event *)p)->len;
	}
	return n;
}

START_TEST(inotify_events)
{
	struct inotify_event *ev[8];
	long fd, wd, fwd, f;
	char c;

	enter("inotify_events");
	fd = SYS(inotify_init1, IN_NONBLOCK);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(SYS(read, fd, &c, 1), -EAGAIN);
	wd = SYS(inotify_add_watch, fd, ".", IN_CREATE | IN_DELETE);
	f = xopen("file", O_CREAT | O_WRONLY, 0644);
	fwd = SYS(inotify_add_watch, fd, "file", IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF);
	ck_assert_int_eq(SYS(write, f, "ab", 2), 2);
	ck_assert_int_eq(SYS(write, f, "cd", 2), 2); /* coalesced */
	ck_assert_int_eq(SYS(close, f), 0);
	ck_assert_int_eq(read_events(fd, ev, 8), 3);
	ck_assert(ev[0]->wd == wd && ev[0]->mask == IN_CREATE && !strcmp(ev[0]->name, "file"));
	ck_assert_uint_eq(ev[0]->len, 16); /* the name, padded */
	ck_assert(ev[1]->wd == fwd && ev[1]->mask == IN_MODIFY && !ev[1]->len);
	ck_assert(ev[2]->wd == fwd && ev[2]->mask == IN_CLOSE_WRITE);
	ck_assert_int_eq(SYS(unlink, "file"), 0);
	ck_assert_int_eq(read_events(fd, ev, 8), 3);
	ck_assert(ev[0]->wd == fwd && ev[0]->mask == IN_DELETE_SELF);
	ck_assert(ev[1]->wd == fwd && ev[1]->mask == IN_IGNORED);
	ck_assert(ev[2]->wd == wd && ev[2]->mask == IN_DELETE && !strcmp(ev[2]->name, "file"));
	ck_assert_int_eq(SYS(inotify_rm_watch, fd, fwd), -EINVAL);
	/* A full queue ends with one IN_Q_OVERFLOW; the rest is lost. */
	for (int i = 0; i < MAX_EVENTS / 2 + 8; i++) {
		ck_assert_int_eq(SYS(mkdir, "d", 0755), 0);
		ck_assert_int_eq(SYS(rmdir, "d"), 0);
	}
	ck_assert_uint_eq(((struct inotify *)fd_get(P.files, (int)fd)->priv)->nevents,
	                  MAX_EVENTS + 1);
	for (int left = MAX_EVENTS + 1, n; left > 0; left -= n) {
		n = read_events(fd, ev, 8);
		ck_assert_int_gt(n, 0);
		if (left == n)
			ck_assert(ev[MIN(n, 8) - 1]->mask == IN_Q_OVERFLOW &&
			          ev[MIN(n, 8) - 1]->wd == -1);
	}
	ck_assert_int_eq(SYS(inotify_add_watch, fd, "nope", IN_MODIFY), -ENOENT);
	ck_assert_int_eq(SYS(inotify_add_watch, fd, (long)bad_page, IN_MODIFY), -EFAULT);
	ck_assert_int_eq(SYS(inotify_add_watch, fd, ".", 0x00100000), -EINVAL); /* no event */
	ck_assert_int_eq(SYS(inotify_add_watch, fd, ".", IN_MASK_ADD | IN_MASK_CREATE | IN_MODIFY),
	                 -EINVAL);
	ck_assert_int_eq(SYS(inotify_add_watch, 0, ".", IN_MODIFY), -EINVAL); /* the console */
	ck_assert_int_eq(SYS(read, fd, bad_page, 4096), -EAGAIN);
	/* Closing the descriptor drops its watches and their inodes. */
	ck_assert_int_eq(SYS(close, fd), 0);
	ck_assert_ptr_null(all_watches);
}
END_TEST

static Suite *ramfs_suite(void)
{
	Suite *s = suite_create("vfs");
	TCase *tc = tcase_create("all");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, walk_basic);
	tcase_add_test(tc, change_marks);
	tcase_add_test(tc, change_clear_tree);
	tcase_add_test(tc, walk_symlinks);
	tcase_add_test(tc, walk_limits);
	tcase_add_test(tc, open_flags);
	tcase_add_test(tc, file_data);
	tcase_add_test(tc, file_vectors);
	tcase_add_test(tc, file_efault);
	tcase_add_test(tc, dirs);
	tcase_add_test(tc, getdents);
	tcase_add_test(tc, renames);
	tcase_add_test(tc, links);
	tcase_add_test(tc, cwd);
	tcase_add_test(tc, fds);
	tcase_add_test(tc, devices);
	tcase_add_test(tc, attrs);
	tcase_add_test(tc, initramfs);
	tcase_add_test(tc, initramfs_read_batch);
	tcase_add_test(tc, initramfs_bad_name);
	tcase_add_test(tc, shared_pages);
	tcase_add_test(tc, memfd_seals);
	tcase_add_test(tc, inotify_events);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ramfs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
