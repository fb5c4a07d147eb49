// SPDX-License-Identifier: MIT
/*
 * shmtest: shared memory as Linux does it. Every line printed depends only
 * on what the calls return, so the host and the guest must print the same
 * text; exits 0 if every check passed.
 *
 *   two MAP_SHARED mappings of one /dev/shm file see each other's writes,
 *   and read()/write()/pread() see the same bytes; a forked child's writes
 *   to a shared file mapping and to MAP_SHARED|MAP_ANONYMOUS memory reach
 *   the parent and the file; memfd_create, ftruncate, seals (F_ADD_SEALS,
 *   F_GET_SEALS) and a memfd passed over SCM_RIGHTS on a SOCK_SEQPACKET
 *   socketpair, mapped by the other process; unlink, truncate, mremap,
 *   mprotect, MADV_DONTNEED and msync on shared mappings; access rights;
 *   process-shared semaphores and mutexes (futexes in shared memory, at
 *   different addresses in each process); /dev/zero mapped shared (what a
 *   forked child writes, the parent sees) and private; a touch of a shared
 *   file mapping past the file's end is SIGBUS (BUS_ADRERR), not SIGSEGV;
 *   a truncate (ftruncate, truncate, O_TRUNC) of a file mapped shared or
 *   private takes the pages it cuts off away (SIGBUS, in a forked child
 *   too) until the file grows again, and a private mapping reads its
 *   file's bytes again after MADV_DONTNEED and where mremap grows it.
 *
 *   shmtest leak [N]  (guest only) maps, unlinks and unmaps shared memory
 *                     N (300) times; "no leak" if MemAvailable came back.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sockcheck.h"

#define PG 4096

static char shm_path[64];

static int shm_file(size_t size)
{
	int fd = open(shm_path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd >= 0 && ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Run fn(arg) in a child; its exit status (0: it did what it should). */
static int in_child(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(fn(arg));
	st = wait_child(pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void two_mappings(void)
{
	int fd = shm_file(2 * PG);
	char *a = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *b = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *c = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, PG);
	char buf[16] = {0};

	check("two mappings: mmap", a != MAP_FAILED && b != MAP_FAILED && c != MAP_FAILED);
	strcpy(a + 100, "written via a");
	check("two mappings: b sees a's write", !strcmp(b + 100, "written via a"));
	strcpy(b + PG, "second page");
	check("two mappings: a sees b's write", !strcmp(a + PG, "second page"));
	check("two mappings: an offset mapping sees it", !strcmp(c, "second page"));
	checkv("two mappings: pread sees it", pread(fd, buf, 13, 100), 13);
	check("two mappings: pread's bytes", !memcmp(buf, "written via a", 13));
	checkv("two mappings: pwrite", pwrite(fd, "from pwrite", 11, PG + 50), 11);
	check("two mappings: mappings see pwrite",
	      !memcmp(a + PG + 50, "from pwrite", 11) && !memcmp(c + 50, "from pwrite", 11));
	checkv("two mappings: msync", msync(a, 2 * PG, MS_SYNC), 0);
	checkv("two mappings: MADV_DONTNEED keeps the bytes", madvise(b, 2 * PG, MADV_DONTNEED), 0);
	check("two mappings: after MADV_DONTNEED", !strcmp(b + 100, "written via a"));
	munmap(a, 2 * PG);
	munmap(b, 2 * PG);
	munmap(c, PG);
	close(fd);
}

static int child_writes(void *p)
{
	strcpy(p, "from the child");
	return 0;
}

static void fork_file(void)
{
	int fd = shm_file(PG);
	char *m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char buf[16] = {0};

	checkv("fork file: child", in_child(child_writes, m), 0);
	check("fork file: parent sees the child's write", !strcmp(m, "from the child"));
	checkv("fork file: pread", pread(fd, buf, 14, 0), 14);
	check("fork file: pread sees it", !memcmp(buf, "from the child", 14));
	munmap(m, PG);
	close(fd);
}

static int child_counts(void *p)
{
	volatile long *n = p;

	for (int i = 0; i < 1000; i++)
		(*n)++;
	return 0;
}

static void fork_anon(void)
{
	/* Small (filled at once) and big (filled on first touch). */
	size_t sizes[] = {PG, 8 << 20};

	for (int k = 0; k < 2; k++) {
		char what[64];
		long *n =
		    mmap(NULL, sizes[k], PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		long *far = (long *)((char *)n + sizes[k] - PG);

		snprintf(what, sizeof(what), "fork anon %zu KiB: mmap", sizes[k] >> 10);
		check(what, n != MAP_FAILED);
		*n = 1;
		snprintf(what, sizeof(what), "fork anon %zu KiB: two children", sizes[k] >> 10);
		checkv(what, in_child(child_counts, n) + in_child(child_counts, n), 0);
		snprintf(what, sizeof(what), "fork anon %zu KiB: their counts", sizes[k] >> 10);
		checkv(what, *n, 2001);
		checkv("fork anon: last page, child", in_child(child_writes, far), 0);
		check("fork anon: last page, parent", !strcmp((char *)far, "from the child"));
		munmap(n, sizes[k]);
	}
}

/* One byte and room for one descriptor. */
union fd_ctl {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(int))];
};

static struct msghdr fd_msg(struct iovec *iov, union fd_ctl *u)
{
	return (struct msghdr){.msg_iov = iov,
	                       .msg_iovlen = 1,
	                       .msg_control = u->buf,
	                       .msg_controllen = sizeof(u->buf)};
}

static int send_fd(int sock, int fd)
{
	char data = 'm';
	struct iovec iov = {&data, 1};
	union fd_ctl u;
	struct msghdr msg = fd_msg(&iov, &u);
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char data;
	struct iovec iov = {&data, 1};
	union fd_ctl u;
	struct msghdr msg = fd_msg(&iov, &u);
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* The child receives a memfd, maps it, checks the parent's bytes and
 * writes its own. */
static int memfd_child(void *p)
{
	int sock = *(int *)p, fd = recv_fd(sock);
	char *m;

	if (fd < 0)
		return 1;
	m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || strcmp(m + 2 * PG, "parent was here"))
		return 2;
	strcpy(m + 10, "child was here");
	return write(sock, "d", 1) == 1 ? 0 : 3;
}

static void memfd_pass(void)
{
	int sv[2],
	    fd = (int)syscall(SYS_memfd_create, "kiln-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	char *m;

	check("memfd: create", fd >= 0);
	checkv("memfd: cloexec", fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	checkv("memfd: ftruncate", ftruncate(fd, 3 * PG), 0);
	m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	check("memfd: mmap", m != MAP_FAILED);
	strcpy(m + 2 * PG, "parent was here");
	checkv("memfd: seqpacket socketpair", socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		_exit(memfd_child(&sv[1]));
	}
	close(sv[1]);
	checkv("memfd: SCM_RIGHTS over seqpacket", send_fd(sv[0], fd), 0);
	int st = wait_child(pid);
	checkv("memfd: the child mapped it", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	check("memfd: parent sees the child's write", !strcmp(m + 10, "child was here"));
	close(sv[0]);

	checkv("memfd: F_GET_SEALS", fcntl(fd, F_GET_SEALS), 0);
	check_err("memfd: F_SEAL_WRITE while mapped", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EBUSY);
	checkv("memfd: F_SEAL_SHRINK|F_SEAL_GROW",
	       fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	check_err("memfd: shrink sealed", ftruncate(fd, PG), EPERM);
	check_err("memfd: grow sealed", ftruncate(fd, 4 * PG), EPERM);
	check_err("memfd: write past the end sealed", pwrite(fd, "x", 1, 3 * PG), EPERM);
	checkv("memfd: write inside", pwrite(fd, "in", 2, 0), 2);
	check("memfd: the mapping sees it", m[0] == 'i' && m[1] == 'n');
	munmap(m, 3 * PG);
	checkv("memfd: F_SEAL_WRITE unmapped", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SEAL),
	       0);
	checkv("memfd: F_GET_SEALS all", fcntl(fd, F_GET_SEALS),
	       F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	check_err("memfd: write sealed", pwrite(fd, "x", 1, 0), EPERM);
	check("memfd: writable shared mmap sealed",
	      mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED &&
	          errno == EPERM);
	m = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
	check("memfd: read-only mmap sealed", m != MAP_FAILED && m[0] == 'i');
	munmap(m, PG);
	check_err("memfd: no more seals", fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), EPERM);
	close(fd);

	fd = (int)syscall(SYS_memfd_create, "plain", 0);
	checkv("memfd: without MFD_ALLOW_SEALING", fcntl(fd, F_GET_SEALS), F_SEAL_SEAL);
	check_err("memfd: its seals", fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), EPERM);
	close(fd);
	check_err("memfd: bad flags", syscall(SYS_memfd_create, "x", 0x100), EINVAL);
}

struct shared_sync {
	sem_t go, done;
	pthread_mutex_t lock;
	long count;
};

static int sync_child(int fd)
{
	/* Mapped again, elsewhere: a futex is the memory's, not the address's. */
	struct shared_sync *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (s == MAP_FAILED || sem_wait(&s->go))
		return 1;
	for (int i = 0; i < 20000; i++) {
		pthread_mutex_lock(&s->lock);
		s->count++;
		pthread_mutex_unlock(&s->lock);
	}
	return sem_post(&s->done) ? 2 : 0;
}

static void process_shared_sync(void)
{
	int fd = (int)syscall(SYS_memfd_create, "sync", 0);
	struct shared_sync *s;
	pthread_mutexattr_t ma;
	pid_t pid;

	checkv("process-shared: ftruncate", ftruncate(fd, sizeof(*s)), 0);
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	sem_init(&s->go, 1, 0);
	sem_init(&s->done, 1, 0);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&s->lock, &ma);
	pid = fork();
	if (pid == 0)
		_exit(sync_child(fd));
	msleep(50); /* the child waits on go meanwhile */
	checkv("process-shared: sem_post", sem_post(&s->go), 0);
	for (int i = 0; i < 20000; i++) {
		pthread_mutex_lock(&s->lock);
		s->count++;
		pthread_mutex_unlock(&s->lock);
	}
	checkv("process-shared: sem_wait", sem_wait(&s->done), 0);
	int st = wait_child(pid);
	checkv("process-shared: child", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	checkv("process-shared: mutex count", s->count, 40000);
	munmap(s, sizeof(*s));
	close(fd);
}

/* A shared mapping outlives its file's name; truncation while mapped. */
static void lifetime(void)
{
	int fd = shm_file(4 * PG);
	char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), buf[8];

	memset(m, 'a', 4 * PG);
	unlink(shm_path);
	close(fd);
	check("unlinked: still mapped", m[4 * PG - 1] == 'a');
	checkv("unlinked: child", in_child(child_writes, m + PG), 0);
	check("unlinked: the child's write", !strcmp(m + PG, "from the child"));
	munmap(m, 4 * PG);

	fd = shm_file(4 * PG);
	m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	memset(m, 'b', 4 * PG);
	checkv("truncate mapped: shrink", ftruncate(fd, PG + 10), 0);
	check("truncate mapped: the part kept", m[0] == 'b' && m[PG + 9] == 'b');
	check("truncate mapped: past the end of the page zeroed", m[PG + 10] == 0);
	checkv("truncate mapped: grow", ftruncate(fd, 4 * PG), 0);
	check("truncate mapped: the rest reads zero", m[2 * PG] == 0 && m[4 * PG - 1] == 0);
	checkv("truncate mapped: pread", pread(fd, buf, 8, 3 * PG), 8);
	check("truncate mapped: pread zeroes", !memcmp(buf, "\0\0\0\0\0\0\0\0", 8));

	/* mremap keeps the mapping shared. */
	char *r = mremap(m, 4 * PG, 8 * PG, MREMAP_MAYMOVE);
	check("mremap: moved", r != MAP_FAILED);
	checkv("mremap: grow the file", ftruncate(fd, 8 * PG), 0);
	strcpy(r + 6 * PG, "after mremap");
	checkv("mremap: pread", pread(fd, buf, 5, 6 * PG), 5);
	check("mremap: the file has it", !memcmp(buf, "after", 5) && r[0] == 'b');
	munmap(r, 8 * PG);
	close(fd);

	/* Rights: a file open read-only maps shared read-only only. */
	fd = shm_file(PG);
	pwrite(fd, "ro", 2, 0);
	int ro = open(shm_path, O_RDONLY);
	check("read-only fd: writable shared mmap",
	      mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0) == MAP_FAILED &&
	          errno == EACCES);
	m = mmap(NULL, PG, PROT_READ, MAP_SHARED, ro, 0);
	check("read-only fd: read-only shared mmap", m != MAP_FAILED && !strcmp(m, "ro"));
	check_err("read-only fd: mprotect writable", mprotect(m, PG, PROT_READ | PROT_WRITE),
	          EACCES);
	pwrite(fd, "rw", 2, 0);
	check("read-only fd: the mapping sees write()", !strcmp(m, "rw"));
	munmap(m, PG);
	m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0);
	check("read-only fd: private writable mmap", m != MAP_FAILED);
	m[0] = 'p';
	checkv("read-only fd: private write stays private", pread(fd, buf, 2, 0), 2);
	check("read-only fd: the file", !memcmp(buf, "rw", 2));
	munmap(m, PG);
	close(ro);
	close(fd);
	unlink(shm_path);
}

static int child_writes_zero(void *p)
{
	strcpy(p, "child via /dev/zero");
	return 0;
}

static sigjmp_buf bus_jmp;
static volatile int bus_sig, bus_code;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	bus_sig = sig;
	bus_code = si->si_code;
	siglongjmp(bus_jmp, 1);
}

static void dev_zero_and_eof(void)
{
	struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO}, old_bus, old_segv;
	int z = open("/dev/zero", O_RDWR), fd;
	char *m;

	m = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, z, 0);
	check("/dev/zero: shared mmap", m != MAP_FAILED);
	check("/dev/zero: reads zero", m != MAP_FAILED && !m[0] && !m[2 * PG - 1]);
	if (m != MAP_FAILED) {
		in_child(child_writes_zero, m + PG);
		check("/dev/zero: shared, the parent sees the child's write",
		      !strcmp(m + PG, "child via /dev/zero"));
		munmap(m, 2 * PG);
	}
	m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, z, 0);
	check("/dev/zero: private mmap", m != MAP_FAILED);
	if (m != MAP_FAILED) {
		in_child(child_writes_zero, m);
		check("/dev/zero: private, the child's write stays the child's", !m[0]);
		munmap(m, PG);
	}
	close(z);
	z = open("/dev/zero", O_RDONLY);
	check("/dev/zero read-only: writable shared mmap is EACCES",
	      mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, z, 0) == MAP_FAILED &&
	          errno == EACCES);
	close(z);

	/* One page of file, three mapped: the third page is past its end. */
	fd = shm_file(PG);
	m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	check("past EOF: mmap larger than the file", m != MAP_FAILED);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	bus_sig = 0;
	if (m != MAP_FAILED && !sigsetjmp(bus_jmp, 1))
		m[2 * PG + 5] = 1;
	printf("past EOF: signal %s, code %d\n",
	       bus_sig == SIGBUS    ? "SIGBUS"
	       : bus_sig == SIGSEGV ? "SIGSEGV"
	                            : "none",
	       bus_code);
	check("past EOF: a write is SIGBUS", bus_sig == SIGBUS && bus_code == BUS_ADRERR);
	bus_sig = 0;
	if (m != MAP_FAILED && !sigsetjmp(bus_jmp, 1))
		bus_code = m[2 * PG];
	check("past EOF: a read is SIGBUS", bus_sig == SIGBUS);
	z = open("/dev/zero", O_RDONLY);
	errno = 0;
	long got = read(z, m + 2 * PG, 8);
	int err = errno;

	check("past EOF: read() into a mapping past EOF is EFAULT", got == -1 && err == EFAULT);
	close(z);
	checkv("past EOF: after ftruncate", ftruncate(fd, 3 * PG), 0);
	bus_sig = 0;
	if (m != MAP_FAILED && !sigsetjmp(bus_jmp, 1))
		m[2 * PG + 5] = 7;
	check("past EOF: grown, the page is there",
	      !bus_sig && m != MAP_FAILED && m[2 * PG + 5] == 7);
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	if (m != MAP_FAILED)
		munmap(m, 3 * PG);
	close(fd);
	unlink(shm_path);
}

/* The signal a touch of p raises (0: none), with p's byte in *val. */
static int touch(volatile char *p, int write, int *val)
{
	struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO}, old_bus, old_segv;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	bus_sig = 0;
	if (!sigsetjmp(bus_jmp, 1)) {
		if (write)
			*p = 'w';
		*val = *p;
	}
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return bus_sig;
}

static void report(const char *what, volatile char *p, int write, int want_sig, int want_val)
{
	int val = -1, sig = touch(p, write, &val);

	printf("%s: %s\n", what,
	       sig == SIGBUS    ? "SIGBUS"
	       : sig == SIGSEGV ? "SIGSEGV"
	       : sig            ? "another signal"
	                        : "no signal");
	check(what, sig == want_sig && (sig || val == want_val));
}

static int child_touch_cut(void *p)
{
	int val;

	return touch(p, 0, &val) == SIGBUS ? 0 : 1;
}

/* A file with n pages of byte c. */
static int filled_file(int n, char c)
{
	int fd = shm_file(0);
	char page[PG];

	memset(page, c, PG);
	for (int i = 0; fd >= 0 && i < n; i++)
		if (write(fd, page, PG) != PG)
			return -1;
	return fd;
}

/* Truncating a mapped file unmaps what it cuts off, as Linux does. */
static void truncate_mapped(void)
{
	int fd = filled_file(4, 'b');
	char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	check("cut shared: mapped", m != MAP_FAILED);
	if (m == MAP_FAILED)
		return;
	checkv("cut shared: ftruncate", ftruncate(fd, PG + 10), 0);
	report("cut shared: read in the last page, past the end", m + PG + 100, 0, 0, 0);
	report("cut shared: read of a page cut off", m + 2 * PG, 0, SIGBUS, 0);
	report("cut shared: write of a page cut off", m + 3 * PG + 7, 1, SIGBUS, 0);
	checkv("cut shared: a child sees it cut too", in_child(child_touch_cut, m + 3 * PG), 0);
	checkv("cut shared: grow", ftruncate(fd, 4 * PG), 0);
	report("cut shared: grown, read", m + 3 * PG, 0, 0, 0);
	report("cut shared: grown, write", m + 2 * PG, 1, 0, 'w');
	munmap(m, 4 * PG);

	/* O_TRUNC and truncate() by name. */
	m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	fd = open(shm_path, O_RDWR | O_TRUNC);
	check("cut O_TRUNC: open", fd >= 0);
	report("cut O_TRUNC: read of page 0", m, 0, SIGBUS, 0);
	checkv("cut O_TRUNC: pwrite one page back", pwrite(fd, "new", 3, 0), 3);
	report("cut O_TRUNC: page 0 is back", m + 1, 0, 0, 'e');
	checkv("cut truncate(): grow", truncate(shm_path, 3 * PG), 0);
	m[2 * PG] = 'x';
	checkv("cut truncate(): shrink", truncate(shm_path, PG), 0);
	report("cut truncate(): page 2", m + 2 * PG, 0, SIGBUS, 0);
	munmap(m, 4 * PG);
	close(fd);

	/* Private mappings: the pages cut off go too, copies written or not. */
	fd = filled_file(3, 'c');
	m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	char *ro = mmap(NULL, 3 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
	check("cut private: mapped", m != MAP_FAILED && ro != MAP_FAILED);
	if (m == MAP_FAILED || ro == MAP_FAILED)
		return;
	m[2 * PG] = 'p';
	check("cut private: reads the file", m[PG] == 'c' && ro[2 * PG] == 'c');
	checkv("cut private: ftruncate", ftruncate(fd, PG), 0);
	report("cut private: page 0 kept", m, 0, 0, 'c');
	report("cut private: the page written, cut off", m + 2 * PG, 0, SIGBUS, 0);
	report("cut private: a page not written, cut off", m + PG, 1, SIGBUS, 0);
	report("cut private read-only: cut off", ro + 2 * PG, 0, SIGBUS, 0);
	checkv("cut private: grow", ftruncate(fd, 3 * PG), 0);
	report("cut private: grown, reads the file's zeroes", m + 2 * PG, 0, 0, 0);
	report("cut private read-only: grown", ro + PG, 0, 0, 0);
	checkv("cut private: pwrite", pwrite(fd, "file", 4, PG), 4);
	report("cut private: grown, a page not touched reads the file", m + PG + 1, 0, 0, 'i');
	munmap(ro, 3 * PG);
	munmap(m, 3 * PG);

	/* Mapped past the end from the start; MADV_DONTNEED; mremap. */
	checkv("private past EOF: ftruncate", ftruncate(fd, PG), 0);
	m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	check("private past EOF: mapped", m != MAP_FAILED);
	if (m == MAP_FAILED)
		return;
	report("private past EOF: page 2", m + 2 * PG, 1, SIGBUS, 0);
	m[0] = 'z';
	checkv("private: MADV_DONTNEED", madvise(m, PG, MADV_DONTNEED), 0);
	report("private: after MADV_DONTNEED, the file's byte", m, 0, 0, 'c');
	munmap(m + PG, 2 * PG);
	checkv("private mremap: grow the file", ftruncate(fd, 3 * PG), 0);
	checkv("private mremap: pwrite", pwrite(fd, "end", 3, 2 * PG), 3);
	char *r = mremap(m, PG, 3 * PG, MREMAP_MAYMOVE);
	check("private mremap: moved", r != MAP_FAILED);
	if (r != MAP_FAILED) {
		report("private mremap: the page it had", r + 5, 0, 0, 'c');
		report("private mremap: a page it grew by reads the file", r + 2 * PG + 1, 0, 0,
		       'n');
		munmap(r, 3 * PG);
	}
	close(fd);
	unlink(shm_path);
}

static long mem_available(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* Memory mapped shared and dropped in every way, n times. */
static int churn(int n)
{
	for (int i = 0; i < n; i++) {
		int fd = shm_file(16 * PG);
		char *m = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		char *a =
		    mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED || a == MAP_FAILED)
			return 1;
		memset(m, 1, 16 * PG);
		memset(a, 1, 16 * PG);
		if (i % 3 == 0)
			unlink(shm_path); /* then unmapped */
		if (i % 3 == 1 && in_child(child_writes, m))
			return 1;
		if (i % 3 == 2)
			ftruncate(fd, PG); /* truncated while mapped */
		close(fd);
		munmap(m, 16 * PG);
		munmap(a, 16 * PG);
		unlink(shm_path);
	}
	return 0;
}

/* ... comes back: what the first rounds left (kept page tables and the
 * like, see vm_keep.c) does not grow with more. */
static int leak(int n)
{
	long before, after;

	if (churn(30))
		return 1;
	before = mem_available();
	if (churn(n))
		return 1;
	after = mem_available();
	if (before - after < 1024)
		printf("no leak\n");
	else
		printf("leaked %ld KiB\n", before - after);
	return 0;
}

int main(int argc, char **argv)
{
	snprintf(shm_path, sizeof(shm_path), "/dev/shm/kiln-shmtest-%d", (int)getpid());
	if (argc > 1 && !strcmp(argv[1], "leak"))
		return leak(argc > 2 ? atoi(argv[2]) : 300);
	two_mappings();
	fork_file();
	fork_anon();
	memfd_pass();
	process_shared_sync();
	lifetime();
	dev_zero_and_eof();
	truncate_mapped();
	unlink(shm_path);
	printf("shmtest: %s\n", failures ? "FAILED" : "all ok");
	return failures ? 1 : 0;
}
