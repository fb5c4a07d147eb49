/* SPDX-License-Identifier: MIT */
/*
 * Entering the jail (see jail.h): the waiting parent outside the pid
 * namespace, the child's namespaces, root, rlimits and descriptors, the
 * unprivileged fallback, and the drop to the jail's uid and gid.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../imageid.h"
#include "../vm.h"
#include "jail.h"

#define NOFILE_MAX 65536
#define NPROC_MAX  128

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kiln-vmm: jail: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (--no-jail runs without one, for debugging)\n");
	exit(1);
}

static void set_limits(bool own_uid)
{
	struct rlimit core = {0, 0}, nofile, nproc = {NPROC_MAX, NPROC_MAX};

	setrlimit(RLIMIT_CORE, &core);
	/* Each vsock connection is a host socket: as many as allowed. */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
		if (nofile.rlim_max > NOFILE_MAX)
			nofile.rlim_max = NOFILE_MAX;
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	/* Per uid: only where the uid is the VMM's alone. */
	if (own_uid)
		setrlimit(RLIMIT_NPROC, &nproc);
}

/* Every descriptor but the standard ones and those the options name (the
 * template's memory) or main opened for the VMM (a KILN_TRACE file). */
static void close_others(const struct vm_config *cfg)
{
	int keep[2] = {cfg->mem_fd, cfg->trace_fd}, from = 3;

	if (keep[0] > keep[1]) {
		keep[0] = cfg->trace_fd;
		keep[1] = cfg->mem_fd;
	}
	for (int i = 0; i < 2; i++) {
		if (keep[i] < from)
			continue;
		if (keep[i] > from)
			syscall(SYS_close_range, from, keep[i] - 1, 0);
		from = keep[i] + 1;
	}
	syscall(SYS_close_range, from, ~0U, 0);
}

/* Outside the pid namespace: wait for the VMM, pass signals on, say why
 * it died when the jail killed it, and end the same way. */
static void __attribute__((noreturn)) outer(pid_t child, struct jail_cgroup *cg)
{
	sigset_t set;
	int status = 0, sig;
	uint64_t limit = 0;

	syscall(SYS_close_range, 3, ~0U, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	jail_thread(NULL, JAIL_T_OUTER);
	for (;;) {
		pid_t r = waitpid(child, &status, WNOHANG);

		if (r == child)
			break;
		if (r < 0 && errno != EINTR)
			_exit(1);
		sig = sigwaitinfo(&set, NULL);
		if (sig > 0 && sig != SIGCHLD)
			kill(child, sig);
	}
	if (WIFEXITED(status)) {
		jail_cgroup_remove(cg);
		_exit(WEXITSTATUS(status));
	}
	sig = WTERMSIG(status);
	if (sig == SIGSYS)
		fprintf(stderr,
		        "kiln-vmm: jail: the VMM was killed by its seccomp filter (SIGSYS): one of "
		        "its threads made a system call its filter does not allow (the kernel's "
		        "audit log names it: dmesg | grep 'type=1326'; kiln-vmm --jail-seccomp log "
		        "lets such calls through and logs them)\n");
	else if (sig == SIGKILL && jail_cgroup_oom_killed(cg, &limit))
		fprintf(stderr,
		        "kiln-vmm: jail: the VMM was killed by the kernel's OOM killer: it reached "
		        "its cgroup's memory limit (%llu MiB in %s); give the sandbox less memory "
		        "to use or a larger --jail-mem-max\n",
		        (unsigned long long)(limit >> 20), cg->dir[0]);
	jail_cgroup_remove(cg);
	/* End as the VMM did: killed by the same signal. */
	signal(sig, SIG_DFL);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* Not root: a user namespace (with new network, ipc and uts namespaces)
 * if the host allows one, and seccomp later in any case. */
static void unprivileged(struct vm_config *cfg)
{
	unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
	char map[64];

	if (unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) == 0) {
		snprintf(map, sizeof(map), "%u %u 1", uid, uid);
		if (write_str("/proc/self/uid_map", map) == 0 &&
		    write_str("/proc/self/setgroups", "deny") == 0 &&
		    (snprintf(map, sizeof(map), "%u %u 1", gid, gid),
		     write_str("/proc/self/gid_map", map) == 0))
			cfg->jail.userns = true;
	}
	fprintf(stderr,
	        "kiln-vmm: jail: not root: no uid of its own, no mount or pid namespace, no "
	        "cgroup; %s; seccomp filters on (run as root for the whole jail)\n",
	        cfg->jail.userns ? "a user namespace with no network (lo only)"
	                         : "no user namespace either (the host allows none)");
	set_limits(false);
	close_others(cfg);
}

/* The boot files' identities while the image-id cache is in reach (a
 * cache miss costs a pass over the file, once per file). */
static void know_files(struct vm_config *cfg)
{
	struct jail_known *k = cfg->jail.known;

	k[JAIL_KERNEL].ok =
	    image_id_of_path(cfg->kernel_path, &k[JAIL_KERNEL].st, &k[JAIL_KERNEL].id) == 0;
	if (cfg->initrd_path)
		k[JAIL_INITRD].ok =
		    image_id_of_path(cfg->initrd_path, &k[JAIL_INITRD].st, &k[JAIL_INITRD].id) == 0;
}

/* Joining the cgroup leaf on a thread of its own (see jail_enter). */
struct joiner {
	const struct jail_cgroup *cg;
	int err;
};

static void *join_cgroup(void *arg)
{
	struct joiner *jn = arg;

	/* "0" in cgroup.procs: the writer's whole process, the main thread
	 * with it. */
	jn->err = jail_cgroup_join(jn->cg);
	return NULL;
}

void jail_enter(struct vm_config *cfg)
{
	struct joiner jn = {.cg = NULL};
	pthread_t joining;
	bool threaded = false;
	struct jail_cfg *j = &cfg->jail;
	struct jail_cgroup cg;
	char why[1200];
	pid_t pid;

	if (j->off)
		return;
	if (geteuid() != 0) {
		unprivileged(cfg);
		return;
	}
	if (!j->id)
		j->id = JAIL_ID_BASE + (uint32_t)getpid() % 65536;
	know_files(cfg);
	if (jail_cgroup_create(cfg, j->id, &cg, why, sizeof(why)))
		fprintf(stderr,
		        "kiln-vmm: jail: warning: no cgroup, so no memory, CPU or pid limits: %s\n",
		        why);
	fflush(NULL);
	/* Pid 1 already: whoever started us made the pid namespace (kilnd
	 * does, control/sandbox/vmm_clone.c) and sees our end itself. */
	if (getpid() != 1) {
		if (unshare(CLONE_NEWPID) < 0)
			die("a new pid namespace: %s", strerror(errno));
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid > 0)
			outer(pid, &cg);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		j->pdeath = true;
	}
	/* v1: this thread alone, at once (jail_cgroup_join_thread): the
	 * process has no other thread yet. v2: the first cgroup.procs write
	 * after a quiet spell waits out an RCU grace period (7 to 22 ms on a
	 * 2-CPU host: the kernel's cgroup_threadgroup_rwsem makes its writers
	 * wait for one), sleeping and holding no lock the namespaces and root
	 * below need: a thread makes it meanwhile. Either is done before any
	 * guest memory is touched (v1 charges a page to the cgroup of its
	 * first toucher, and charges do not move with the task); the thread
	 * is waited for before close_others (its descriptor is in the table
	 * the two threads share). The thread keeps the host's namespaces and
	 * root: only the calling thread's change. */
	if (cg.version == 1)
		jn.err = jail_cgroup_join_thread(&cg);
	else if (cg.version) {
		jn.cg = &cg;
		threaded = pthread_create(&joining, NULL, join_cgroup, &jn) == 0;
		if (!threaded)
			jn.err = jail_cgroup_join(&cg);
	}
	if (unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		die("new mount, network, ipc and uts namespaces: %s", strerror(errno));
	sethostname("kiln-vmm", 8);
	if (jail_root_build(cfg, j->id, why, sizeof(why)))
		die("%s", why);
	set_limits(true);
	if (threaded)
		pthread_join(joining, NULL);
	if (jn.err)
		fprintf(stderr, "kiln-vmm: jail: warning: cannot join the cgroup %s: %s\n",
		        cg.dir[0], strerror(-jn.err));
	close_others(cfg);
	j->active = true;
}

void jail_drop(struct vm *vm)
{
	struct jail_cfg *j = &vm->cfg.jail;
	gid_t gid = (gid_t)j->id;

	if (!j->active)
		return;
	/* glibc applies these to every thread of the process. */
	if (setgroups(1, &gid) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid((uid_t)j->id, (uid_t)j->id, (uid_t)j->id) < 0)
		die("dropping to uid and gid %u: %s", j->id, strerror(errno));
	/* The uid change cleared the parent-death signal (commit_creds): a
	 * SIGKILL of the waiting parent would leave the VM running alone. */
	if (j->pdeath)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* The uid change made the process undumpable, which gives /proc/self
	 * to root: snapshots read /proc/self/pagemap. Nothing else runs as
	 * this uid, and nothing in the pid namespace could trace it. */
	prctl(PR_SET_DUMPABLE, 1);
	j->dropped = true;
}

bool jail_known_file(const struct jail_cfg *j, int which, const struct stat *st,
                     struct snap_image_id *id)
{
	const struct jail_known *k = &j->known[which];

	if (!k->ok || st->st_dev != k->st.st_dev || st->st_ino != k->st.st_ino ||
	    st->st_size != k->st.st_size || st->st_mtim.tv_sec != k->st.st_mtim.tv_sec ||
	    st->st_mtim.tv_nsec != k->st.st_mtim.tv_nsec)
		return false;
	*id = k->id;
	return true;
}
