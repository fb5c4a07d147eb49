// SPDX-License-Identifier: MIT
/*
 * fileio DIR: file system calls on a directory DIR that must not exist yet
 * (the guest runs it on tmpfs as /tmp/work, the host in a fresh temporary
 * directory). Every line printed depends only on what the calls return, never
 * on DIR, inode numbers, times or the file system, so the host and guest runs
 * must print the same text. Exits 0 if every call behaved as Linux's do.
 *
 * Calls whose libc wrapper picks a different system call on glibc and musl
 * (fstat, fstatat, getdents) are made with syscall() so the one named is the
 * one the kernel sees.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failures;
static char base[4096]; /* getcwd() of DIR, to print cwd relative to it */

static const char *ename(int e)
{
	static char buf[16];

	switch (e) {
	case 0:
		return "0";
	case ENOENT:
		return "ENOENT";
	case EEXIST:
		return "EEXIST";
	case ENOTDIR:
		return "ENOTDIR";
	case EISDIR:
		return "EISDIR";
	case EINVAL:
		return "EINVAL";
	case EBADF:
		return "EBADF";
	case ENOTEMPTY:
		return "ENOTEMPTY";
	case ESPIPE:
		return "ESPIPE";
	case EFAULT:
		return "EFAULT";
	case ENOSYS:
		return "ENOSYS";
	case EACCES:
		return "EACCES";
	case EPERM:
		return "EPERM";
	case ELOOP:
		return "ELOOP";
	case ENAMETOOLONG:
		return "ENAMETOOLONG";
	default:
		snprintf(buf, sizeof(buf), "errno %d", e);
		return buf;
	}
}

/* A call that must succeed: prints "what = rc", or FAIL and the errno. */
static long ok(const char *what, long rc)
{
	if (rc < 0) {
		printf("%s: FAIL %s\n", what, ename(errno));
		failures++;
	} else {
		printf("%s = %ld\n", what, rc);
	}
	return rc;
}

/* A call that must fail with errno want. */
static void err(const char *what, long rc, int want)
{
	if (rc == -1 && errno == want) {
		printf("%s: %s\n", what, ename(want));
		return;
	}
	printf("%s: FAIL got %ld (%s), expected %s\n", what, rc, rc < 0 ? ename(errno) : "no error",
	       ename(want));
	failures++;
}

/* Like ok(), but the value (a descriptor number) depends on what the
 * process inherited, so only success is printed. */
static int okfd(const char *what, long fd)
{
	if (fd < 0) {
		printf("%s: FAIL %s\n", what, ename(errno));
		failures++;
	} else {
		printf("%s: ok\n", what);
	}
	return (int)fd;
}

static void check(const char *what, int cond)
{
	printf("%s: %s\n", what, cond ? "yes" : "FAIL no");
	failures += !cond;
}

static long sys_fstat(int fd, struct stat *st)
{
	return syscall(SYS_fstat, fd, st);
}

static long sys_newfstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return syscall(SYS_newfstatat, dirfd, path, st, flags);
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static const char *ftype(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFCHR:
		return "chardev";
	case S_IFIFO:
		return "fifo";
	default:
		return "other";
	}
}

/* The stat fields that are the same everywhere. */
static void print_stat(const char *what, const struct stat *st)
{
	printf("%s: %s mode %04o", what, ftype(st->st_mode), (unsigned)(st->st_mode & 07777));
	if (!S_ISDIR(st->st_mode))
		printf(" size %lld nlink %lu", (long long)st->st_size, (unsigned long)st->st_nlink);
	printf("\n");
}

static void stat_at(const char *what, int dirfd, const char *path, int flags)
{
	struct stat st;

	if (sys_newfstatat(dirfd, path, &st, flags) < 0) {
		printf("%s: FAIL %s\n", what, ename(errno));
		failures++;
		return;
	}
	print_stat(what, &st);
}

static void stat_fd(const char *what, int fd)
{
	struct stat st;

	if (sys_fstat(fd, &st) < 0) {
		printf("%s: FAIL %s\n", what, ename(errno));
		failures++;
		return;
	}
	print_stat(what, &st);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Lists a directory with getdents64 through a small buffer, so a directory of
 * a handful of entries takes several calls, and prints the names sorted
 * (the order getdents returns them in is the file system's business).
 */
static void list_dir(const char *what, int dirfd)
{
	char buf[96], *names[64];
	int n = 0;
	long len;

	if (lseek(dirfd, 0, SEEK_SET) != 0) {
		printf("%s: FAIL rewind: %s\n", what, ename(errno));
		failures++;
		return;
	}
	while ((len = syscall(SYS_getdents64, dirfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < len;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			const char *t = d->d_type == DT_DIR   ? "/"
			                : d->d_type == DT_LNK ? "@"
			                : d->d_type == DT_REG ? ""
			                                      : "?";

			if (d->d_reclen == 0 || off + d->d_reclen > len || n == 64) {
				printf("%s: FAIL bad record at %ld\n", what, off);
				failures++;
				return;
			}
			names[n] = malloc(strlen(d->d_name) + 2);
			sprintf(names[n++], "%s%s", d->d_name, t);
			off += d->d_reclen;
		}
	}
	if (len < 0) {
		printf("%s: FAIL %s\n", what, ename(errno));
		failures++;
	}
	qsort(names, (size_t)n, sizeof(names[0]), cmp_str);
	printf("%s:", what);
	for (int i = 0; i < n; i++) {
		printf(" %s", names[i]);
		free(names[i]);
	}
	printf("\n");
}

static void print_cwd(const char *what)
{
	char cwd[4096];
	size_t n = strlen(base);

	if (!getcwd(cwd, sizeof(cwd))) {
		printf("%s: FAIL %s\n", what, ename(errno));
		failures++;
	} else if (strncmp(cwd, base, n) || (cwd[n] && cwd[n] != '/')) {
		printf("%s: FAIL %s is outside the work directory\n", what, cwd);
		failures++;
	} else {
		printf("%s: DIR%s\n", what, cwd + n);
	}
}

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ULL;
	return h;
}

/* Reads fd from the start in odd-sized pieces; prints length and checksum. */
static void checksum(const char *what, int fd)
{
	char buf[1000];
	uint64_t h = 0xcbf29ce484222325ULL;
	long total = 0, n;

	if (lseek(fd, 0, SEEK_SET) != 0) {
		printf("%s: FAIL rewind: %s\n", what, ename(errno));
		failures++;
		return;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		h = fnv1a(buf, (size_t)n, h);
		total += n;
	}
	if (n < 0) {
		printf("%s: FAIL %s\n", what, ename(errno));
		failures++;
		return;
	}
	printf("%s: %ld bytes, fnv1a %016llx\n", what, total, (unsigned long long)h);
}

static void hexdump(const char *what, const unsigned char *p, long n)
{
	printf("%s:", what);
	for (long i = 0; i < n; i++)
		printf(" %02x", p[i]);
	printf("\n");
}

static void test_rw(int dir)
{
	static char block[65536];
	unsigned char buf[64];
	int fd;

	fd = okfd("openat sub/a.txt O_CREAT|O_EXCL|O_RDWR",
	          openat(dir, "a.txt", O_CREAT | O_EXCL | O_RDWR, 0640));
	if (fd < 0)
		return;
	ok("write greeting", write(fd, "hello, world\n", 13));
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (char)('a' + i % 26 + (i / 4096) % 3);
	ok("write 3 pages", write(fd, block, 3 * 4096));
	stat_fd("fstat a.txt", fd);
	ok("lseek SEEK_CUR", lseek(fd, 0, SEEK_CUR));
	ok("lseek SEEK_END", lseek(fd, 0, SEEK_END));
	ok("lseek 7 SEEK_SET", lseek(fd, 7, SEEK_SET));
	memset(buf, 0, sizeof(buf));
	if (ok("read 5", read(fd, buf, 5)) == 5)
		printf("read: %s\n", buf);
	ok("lseek SEEK_CUR after read", lseek(fd, 0, SEEK_CUR));
	if (ok("pread64 16 at 4090", pread(fd, buf, 16, 4090)) == 16)
		hexdump("pread64 data", buf, 16);
	ok("lseek SEEK_CUR after pread64", lseek(fd, 0, SEEK_CUR));
	ok("pread64 at end of file", pread(fd, buf, 16, 13 + 3 * 4096));
	ok("pread64 past end of file", pread(fd, buf, 16, 1 << 20));
	err("pread64 at offset -1", pread(fd, buf, 16, -1), EINVAL);
	err("lseek to -1", lseek(fd, -1, SEEK_SET), EINVAL);
	err("lseek whence 42", lseek(fd, 0, 42), EINVAL);

	/* Writing past the end leaves a hole that reads as zeros. */
	ok("lseek 100 past SEEK_END", lseek(fd, 100, SEEK_END));
	ok("write after the hole", write(fd, "tail", 4));
	stat_fd("fstat after hole", fd);
	if (ok("pread64 in the hole", pread(fd, buf, 8, 13 + 3 * 4096 + 10)) == 8)
		hexdump("hole data", buf, 8);
	checksum("a.txt contents", fd);

	/* A larger file, written in 64 KiB pieces and read back in 1000-byte ones. */
	ok("close a.txt", close(fd));
	err("read closed fd", read(fd, buf, 1), EBADF);
	fd = okfd("openat sub/big O_CREAT|O_WRONLY", openat(dir, "big", O_CREAT | O_WRONLY, 0600));
	for (int i = 0; i < 16; i++) {
		block[0] = (char)i;
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) {
			printf("write big: FAIL %s\n", ename(errno));
			failures++;
			break;
		}
	}
	ok("close big", close(fd));
	fd = okfd("openat sub/big O_RDONLY", openat(dir, "big", O_RDONLY));
	stat_fd("fstat big", fd);
	checksum("big contents", fd);
	err("write to O_RDONLY fd", write(fd, "x", 1), EBADF);
	ok("close big", close(fd));
}

static void test_open_errors(int dir)
{
	int fd;
	char buf[16] = {0};

	err("openat a.txt O_CREAT|O_EXCL again",
	    openat(dir, "a.txt", O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	err("openat missing", openat(dir, "missing", O_RDONLY), ENOENT);
	err("openat missing/x", openat(dir, "missing/x", O_RDONLY | O_CREAT, 0644), ENOENT);
	err("openat a.txt/x", openat(AT_FDCWD, "sub/a.txt/x", O_RDONLY), ENOTDIR);
	err("openat a.txt O_DIRECTORY", openat(dir, "a.txt", O_RDONLY | O_DIRECTORY), ENOTDIR);
	err("openat sub O_WRONLY", openat(AT_FDCWD, "sub", O_WRONLY), EISDIR);
	err("openat bad dirfd", openat(12345, "a.txt", O_RDONLY), EBADF);
	err("read a directory", read(dir, buf, sizeof(buf)), EISDIR);

	/* O_APPEND writes at the end whatever the offset says. */
	fd = okfd("openat b.txt O_APPEND",
	          openat(dir, "b.txt", O_CREAT | O_WRONLY | O_APPEND, 0600));
	ok("write one", write(fd, "one\n", 4));
	ok("lseek 0", lseek(fd, 0, SEEK_SET));
	ok("write two", write(fd, "two\n", 4));
	ok("close b.txt", close(fd));
	fd = okfd("openat b.txt O_RDONLY", openat(dir, "b.txt", O_RDONLY));
	if (ok("read b.txt", read(fd, buf, sizeof(buf) - 1)) == 8)
		printf("b.txt: %s", buf);
	ok("close b.txt", close(fd));
	fd = okfd("openat b.txt O_TRUNC", openat(dir, "b.txt", O_WRONLY | O_TRUNC));
	stat_fd("fstat truncated b.txt", fd);
	ok("close b.txt", close(fd));
}

static void test_stat_links(int dir)
{
	char buf[64];
	long n;

	ok("symlinkat link -> a.txt", symlinkat("a.txt", dir, "link"));
	n = ok("readlink sub/link", readlink("sub/link", buf, sizeof(buf)));
	if (n >= 0)
		printf("readlink: %.*s\n", (int)n, buf);
	ok("readlink with a 3-byte buffer", readlink("sub/link", buf, 3));
	err("readlink a regular file", readlink("sub/a.txt", buf, sizeof(buf)), EINVAL);
	err("readlink missing", readlink("sub/missing", buf, sizeof(buf)), ENOENT);
	stat_at("newfstatat sub/link nofollow", AT_FDCWD, "sub/link", AT_SYMLINK_NOFOLLOW);
	stat_at("newfstatat sub/link", AT_FDCWD, "sub/link", 0);
	stat_at("newfstatat dirfd a.txt", dir, "a.txt", 0);
	stat_at("newfstatat sub", AT_FDCWD, "sub", 0);
	stat_at("newfstatat dirfd \"\" AT_EMPTY_PATH", dir, "", AT_EMPTY_PATH);
	stat_at("newfstatat sub/./../sub/a.txt", AT_FDCWD, "sub/./../sub/a.txt", 0);
	{
		struct stat st;

		err("newfstatat missing", sys_newfstatat(dir, "missing", &st, 0), ENOENT);
		err("newfstatat \"\" without AT_EMPTY_PATH", sys_newfstatat(dir, "", &st, 0),
		    ENOENT);
		err("fstat bad fd", sys_fstat(12345, &st), EBADF);
	}
}

static void test_dirs(int dir)
{
	int fd;
	char buf[64];

	ok("mkdirat c", mkdirat(dir, "c", 0755));
	ok("mkdirat c/d", mkdirat(dir, "c/d", 0700));
	err("mkdirat c again", mkdirat(dir, "c", 0755), EEXIST);
	err("mkdirat x/y", mkdirat(dir, "x/y", 0755), ENOENT);
	fd = okfd("openat c/d/e.txt", openat(dir, "c/d/e.txt", O_CREAT | O_WRONLY, 0644));
	ok("close e.txt", close(fd));
	list_dir("getdents64 sub", dir);
	fd = okfd("openat c/d O_DIRECTORY", openat(dir, "c/d", O_RDONLY | O_DIRECTORY));
	list_dir("getdents64 sub/c/d", fd);
	ok("close c/d", close(fd));
	fd = okfd("openat a.txt", openat(dir, "a.txt", O_RDONLY));
	err("getdents64 on a file", syscall(SYS_getdents64, fd, buf, sizeof(buf)), ENOTDIR);
	ok("close a.txt", close(fd));

	err("unlinkat non-empty c AT_REMOVEDIR", unlinkat(dir, "c", AT_REMOVEDIR), ENOTEMPTY);
	err("unlinkat directory c", unlinkat(dir, "c", 0), EISDIR);
	err("unlinkat file AT_REMOVEDIR", unlinkat(dir, "a.txt", AT_REMOVEDIR), ENOTDIR);
	err("unlinkat missing", unlinkat(dir, "missing", 0), ENOENT);

	/* An unlinked file stays readable through an open descriptor. */
	fd = okfd("openat a.txt", openat(dir, "a.txt", O_RDONLY));
	ok("unlinkat a.txt", unlinkat(dir, "a.txt", 0));
	err("openat unlinked a.txt", openat(dir, "a.txt", O_RDONLY), ENOENT);
	stat_fd("fstat unlinked a.txt", fd);
	memset(buf, 0, sizeof(buf));
	if (ok("read unlinked a.txt", read(fd, buf, 5)) == 5)
		printf("read: %s\n", buf);
	ok("close a.txt", close(fd));
	stat_at("newfstatat dangling link nofollow", dir, "link", AT_SYMLINK_NOFOLLOW);
	{
		struct stat st;

		err("newfstatat dangling link", sys_newfstatat(dir, "link", &st, 0), ENOENT);
	}
	list_dir("getdents64 sub after unlink", dir);
}

static void test_cwd(int dir)
{
	int fd;

	ok("chdir sub/c/d", chdir("sub/c/d"));
	print_cwd("getcwd");
	ok("chdir ..", chdir(".."));
	print_cwd("getcwd");
	ok("chdir ../../sub/./c/d/../..", chdir("../../sub/./c/d/../.."));
	print_cwd("getcwd");
	/* A relative openat through a dirfd does not care where cwd is. */
	ok("chdir /", chdir("/"));
	fd = okfd("openat dirfd b.txt", openat(dir, "b.txt", O_RDONLY));
	ok("close b.txt", close(fd));
	ok("chdir back", chdir(base));
	print_cwd("getcwd");
	err("chdir missing", chdir("missing"), ENOENT);
	err("chdir to a file", chdir("sub/b.txt"), ENOTDIR);
	print_cwd("getcwd after failed chdir");
}

static void cleanup(int dir, const char *path)
{
	ok("unlinkat c/d/e.txt", unlinkat(dir, "c/d/e.txt", 0));
	ok("unlinkat c/d", unlinkat(dir, "c/d", AT_REMOVEDIR));
	ok("unlinkat c", unlinkat(dir, "c", AT_REMOVEDIR));
	ok("unlinkat b.txt", unlinkat(dir, "b.txt", 0));
	ok("unlinkat big", unlinkat(dir, "big", 0));
	ok("unlinkat link", unlinkat(dir, "link", 0));
	list_dir("getdents64 empty sub", dir);
	ok("close sub", close(dir));
	ok("unlinkat sub", unlinkat(AT_FDCWD, "sub", AT_REMOVEDIR));
	ok("chdir /", chdir("/"));
	ok("unlinkat DIR", unlinkat(AT_FDCWD, path, AT_REMOVEDIR));
	err("chdir DIR after removal", chdir(path), ENOENT);
}

int main(int argc, char **argv)
{
	const char *path = argc == 2 ? argv[1] : NULL;
	const char *last;
	int dir;

	if (!path || path[0] != '/') {
		fprintf(stderr, "usage: fileio /ABSOLUTE/DIR (DIR must not exist)\n");
		return 2;
	}
	umask(022);
	if (mkdirat(AT_FDCWD, path, 0755) < 0) {
		printf("mkdirat DIR: FAIL %s\n", ename(errno));
		return 1;
	}
	printf("mkdirat DIR = 0\n");
	ok("chdir DIR", chdir(path));
	if (!getcwd(base, sizeof(base))) {
		printf("getcwd: FAIL %s\n", ename(errno));
		return 1;
	}
	last = strrchr(path, '/') + 1;
	check("getcwd ends with DIR's last component",
	      strlen(base) >= strlen(last) && !strcmp(base + strlen(base) - strlen(last), last));
	stat_at("newfstatat .", AT_FDCWD, ".", 0);

	ok("mkdirat sub", mkdirat(AT_FDCWD, "sub", 0750));
	err("mkdirat sub again", mkdirat(AT_FDCWD, "sub", 0750), EEXIST);
	dir = okfd("openat sub O_DIRECTORY", openat(AT_FDCWD, "sub", O_RDONLY | O_DIRECTORY));
	if (dir < 0)
		return 1;
	err("lseek bad fd", lseek(12345, 0, SEEK_SET), EBADF);

	test_rw(dir);
	test_open_errors(dir);
	test_stat_links(dir);
	test_dirs(dir);
	test_cwd(dir);
	cleanup(dir, path);

	if (failures) {
		printf("fileio: %d checks failed\n", failures);
		return 1;
	}
	printf("fileio ok\n");
	return 0;
}
