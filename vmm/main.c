/* SPDX-License-Identifier: MIT */
/*
 * kiln-vmm: boots kiln-kernel in a KVM virtual machine.
 *
 *   kiln-vmm --kernel FILE [--initrd FILE] [--mem 256M] [--mem-backing memfd|thp]
 *            [--cpus 1] [--cmdline STR] [--vsock CID,UDS_PATH] [--image FILE]
 *            [--disk FILE[,ro]] [--api-sock PATH] [--stats] [-- ARGV...]
 *   kiln-vmm --restore SNAPSHOT [--restore-mode eager|lazy|template]
 *            [--parent SNAPSHOT] [--template-dir DIR | --mem-fd N] [--paused]
 *            --kernel FILE [--initrd FILE] [devices as above] [--api-sock PATH]
 *
 * The exit status is the guest init's exit status; a guest crash prints a
 * one-line diagnosis and exits with 125; bad usage exits with 2 and a VMM
 * failure with 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include <kiln/trace.h>

#include "api.h"
#include "fdt.h"
#include "host_cpuid.h"
#include "imageid.h"
#include "options.h"
#include "snap_vm.h"
#include "vcpu.h"
#include "virtio/virtio.h"
#include "vm.h"
#include "x86.h"

#define MIB             (1ULL << 20)
#define MAX_KERNEL_FILE (64 * MIB)
/* RAM the guest needs beyond its images: page tables, heap, a process. */
#define MIN_FREE_MEM (8 * MIB)
/* RAM registered with KVM before the guest runs, when there is more (see
 * struct vm_late_ram): the kernel, the initramfs index and what a boot and
 * a sandbox's usual programs use (python3 importing numpy, pandas and
 * matplotlib fits, the agent with its commands too), plus 1/256 of RAM for
 * the guest's page bitmaps (3/32768 of it). */
#define LATE_RAM_FROM (64 * MIB)
/* KVM's shadow MMU maps pages in groups of 8 (PTE_PREFETCH_NUM). */
#define PREFETCH_GROUP (8 * 4096ULL)

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kiln-vmm: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static int open_image(const char *what, const char *path, uint64_t max, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("%s '%s': %s", what, path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		die("%s '%s': not a regular file", what, path);
	if ((uint64_t)st.st_size > max)
		die("%s '%s': %lld bytes is larger than the %llu MiB limit", what, path,
		    (long long)st.st_size, (unsigned long long)(max / MIB));
	*len = (size_t)st.st_size;
	return fd;
}

/* The kernel ELF into guest memory. Its identity for snapshots comes from
 * the cache when that knows it (vmm/imageid.c), else it is hashed when a
 * snapshot first needs it. */
static void load_kernel(struct vm *vm)
{
	const struct vm_config *cfg = &vm->cfg;
	struct snap_image_id id;
	const char *err = NULL;
	size_t len;
	int fd = open_image("kernel image", cfg->kernel_path, MAX_KERNEL_FILE, &len);
	static const uint8_t empty[1];
	const void *buf = empty;
	int rc;

	if (fstat(fd, &vm->snap.kernel_st) == 0 &&
	    jail_known_file(&cfg->jail, JAIL_KERNEL, &vm->snap.kernel_st, &id)) {
		memcpy(vm->snap.kernel_id, &id, sizeof(id));
		vm->snap.have_kernel_id = true;
	} else if (fstat(fd, &vm->snap.kernel_st) == 0 &&
	           image_id_of(&vm->snap.kernel_st, NULL, 0, &id) == 0) {
		memcpy(vm->snap.kernel_id, &id, sizeof(id));
		vm->snap.have_kernel_id = true;
	}
	/* Mapped, not read: only the headers and loadable segments are
	 * touched, not the debug sections (most of a kiln-kernel file). */
	if (len) {
		buf = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (buf == MAP_FAILED)
			die("kernel image '%s': cannot map it: %s", cfg->kernel_path,
			    strerror(errno));
	}
	close(fd);
	rc = kernel_load(&vm->mem, buf, len, &vm->kernel, &err);
	if (len)
		munmap((void *)buf, len);
	if (rc)
		die("kernel image '%s': %s", cfg->kernel_path, err);
	vm->boot_version = vm->kernel.image.version;
}

/* The initramfs is mapped, not copied: see KILN_GPA_INITRD. */
static void map_initrd(struct vm *vm)
{
	const struct vm_config *cfg = &vm->cfg;
	size_t len;
	int fd = open_image("initramfs", cfg->initrd_path, KILN_INITRD_MAX, &len);

	if (len < 6)
		die("initramfs '%s': not a cpio archive in newc format "
		    "(build one with: cpio -o -H newc)",
		    cfg->initrd_path);
	if (fstat(fd, &vm->snap.initrd_st) < 0)
		die("initramfs '%s': %s", cfg->initrd_path, strerror(errno));
	vm->mem.initrd_map_size = (len + 4095) & ~4095ULL;
	vm->mem.initrd = mmap(NULL, vm->mem.initrd_map_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (vm->mem.initrd == MAP_FAILED) {
		vm->mem.initrd = NULL;
		die("initramfs '%s': cannot map it: %s", cfg->initrd_path, strerror(errno));
	}
	if (memcmp(vm->mem.initrd, "07070", 5))
		die("initramfs '%s': not a cpio archive in newc format "
		    "(build one with: cpio -o -H newc)",
		    cfg->initrd_path);
	vm->initrd_pa = KILN_GPA_INITRD;
	vm->initrd_size = len;
}

/* The kernel, and room after it for the device tree and the guest's own
 * memory. */
static void load_boot_kernel(struct vm *vm)
{
	uint64_t next;

	load_kernel(vm);
	next = vm->kernel.pa_end;
	vm->fdt_pa = next;
	if (!gpa_ptr(&vm->mem, next, KILN_FDT_MAX_SIZE + MIN_FREE_MEM))
		die("--mem %lluM is too small for this kernel; use at least %lluM",
		    (unsigned long long)(vm->mem.size / MIB),
		    (unsigned long long)((next + KILN_FDT_MAX_SIZE + MIN_FREE_MEM) / MIB / 2 + 1) *
		        2);
}

static void map_image(struct vm *vm)
{
	const char *why;
	int err;

	if (!vm->cfg.image_path)
		return;
	err = pmem_map(&vm->mem, vm->cfg.image_path, &why);
	if (err)
		die("image '%s': %s", vm->cfg.image_path, why ? why : strerror(-err));
}

/* Each vsock connection is a host socket: allow as many as the hard limit
 * lets us. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void on_stop(struct ev_loop *loop, ev_async *w, int revents)
{
	ev_break(loop, EVBREAK_ALL);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct vm *vm = w->data;

	vm_stop(vm, VM_STOP_ERROR, 128 + w->signum, "stopped by signal %d", w->signum);
}

/* KILN_VMM_TEST_SECCOMP=MS: a call no filter allows, MS ms after the
 * start (tests of the jail; see jail_test_denied()). */
static void on_test_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	jail_test_denied(w->data);
}

static void build_fdt(struct vm *vm)
{
	struct fdt_params p = {.pml4_pa = x86_pml4_pa()};
	struct timespec ts;
	int khz = vcpu_tsc_khz(&vm->vcpus[0]);
	void *dst = gpa_ptr(&vm->mem, vm->fdt_pa, KILN_FDT_MAX_SIZE);
	int err;

	if (khz < 0)
		die("KVM_GET_TSC_KHZ: %s", strerror(-khz));
	p.tsc_khz = (uint32_t)khz;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (vcpu_read_tsc(&vm->vcpus[0], &p.boot_tsc))
		die("cannot read the guest TSC");
	p.boot_realtime_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	err = fdt_build(vm, &p, dst, KILN_FDT_MAX_SIZE);
	if (err == -E2BIG)
		die("the command line and init arguments are too long");
	if (err)
		die("building the device tree failed: %s", strerror(-err));
}

/* The kB value of field (e.g. "Rss") for the mapping that starts at addr
 * (the initramfs), from /proc/self/smaps; -1 if not found. */
static long mapping_kb(const void *addr, const char *field)
{
	char line[512];
	size_t n = strlen(field);
	bool in = false;
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f || !addr)
		goto out;
	while (fgets(line, sizeof(line), f)) {
		char *dash = strchr(line, '-'), *space = strchr(line, ' ');
		unsigned long start;

		/* A mapping's first line: "start-end perms ..." */
		if (dash && space && dash < space && sscanf(line, "%lx-", &start) == 1)
			in = start == (unsigned long)(uintptr_t)addr;
		else if (in && !strncmp(line, field, n) && line[n] == ':' &&
		         sscanf(line + n + 1, "%ld kB", &kb) == 1)
			break;
	}
out:
	if (f)
		fclose(f);
	return kb;
}

static double ms_since(const struct vm *vm, uint64_t t)
{
	return (double)(t - vm->t.start) / 1e6;
}

static void print_stats(const struct vm *vm)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	double ms = 1e6;
	long initrd_kb = mapping_kb(vm->mem.initrd, "Rss");
	long image_kb = mapping_kb(vm->mem.pmem, "Rss");

	fprintf(stderr,
	        "kiln-vmm: time: vm created %.2f ms, first guest instruction %.2f ms, "
	        "first console output %.2f ms, stopped %.2f ms (from main)\n",
	        (double)(vm->t.vm_created - vm->t.start) / ms,
	        (double)(vm->t.first_run - vm->t.start) / ms,
	        vm->t.first_output ? (double)(vm->t.first_output - vm->t.start) / ms : 0.0,
	        (double)(vm->t.stopped - vm->t.start) / ms);
	if (!vm->cfg.restore_path)
		fprintf(
		    stderr,
		    "kiln-vmm: boot: memory %.2f, kernel loaded %.2f, boot area %.2f, vm created "
		    "%.2f, devices %.2f, vcpus %.2f, device tree %.2f, vcpu threads %.2f ms "
		    "(from main)\n",
		    ms_since(vm, vm->t.mem_ready), ms_since(vm, vm->t.kernel_loaded),
		    ms_since(vm, vm->t.boot_area), ms_since(vm, vm->t.vm_created),
		    ms_since(vm, vm->t.devices), ms_since(vm, vm->t.vcpus),
		    ms_since(vm, vm->t.fdt_built), ms_since(vm, vm->t.vcpus_started));
	if (vm->late.early_end && vm->late.asked_ns)
		fprintf(stderr,
		        "kiln-vmm: late RAM (from %llu MiB): asked for at %.2f ms (from main), "
		        "registered in %.2f ms\n",
		        (unsigned long long)(vm->late.early_end / MIB),
		        ms_since(vm, vm->late.asked_ns),
		        (double)(vm->late.done_ns - vm->late.asked_ns) / 1e6);
	else if (vm->late.early_end)
		fprintf(stderr, "kiln-vmm: late RAM (from %llu MiB): not asked for\n",
		        (unsigned long long)(vm->late.early_end / MIB));
	if (vm->cfg.restore_path) {
		static const char *const modes[] = {"eager", "lazy", "template"};

		struct uffd_stats us;

		uffd_stats(vm, &us);
		fprintf(stderr,
		        "kiln-vmm: restore (%s): checked %.2f ms, memory %.2f ms, state restored "
		        "%.2f ms (from main)\n",
		        modes[vm->cfg.restore_mode], (double)vm->snap.restore_checked_ns / ms,
		        (double)vm->snap.restore_mem_ns / ms, (double)vm->snap.restore_ns / ms);
		if (us.chunks)
			fprintf(stderr,
			        "kiln-vmm: restore: memory loaded while the guest ran: %llu chunks "
			        "with data of %llu, "
			        "%llu faults, all in at %.2f ms%s\n",
			        (unsigned long long)us.filled, (unsigned long long)us.chunks,
			        (unsigned long long)us.faults, (double)us.resident_ns / ms,
			        us.resident_ns ? "" : " (not yet)");
	}
	jail_describe(stderr, &vm->cfg.jail);
	if (!f)
		return;
	/* RssAnon is the VMM's own memory, RssShmem the guest RAM touched,
	 * RssFile shared file pages: binaries, libraries and the initramfs
	 * (one page-cache copy for every VM booted from it). */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM", 5) || !strncmp(line, "RssAnon", 7) ||
		    !strncmp(line, "RssFile", 7) || !strncmp(line, "RssShmem", 8))
			fprintf(stderr, "kiln-vmm: %s", line);
	fclose(f);
	if (initrd_kb >= 0)
		fprintf(stderr, "kiln-vmm: RssInitramfs:\t%8ld kB\n", initrd_kb);
	if (image_kb >= 0)
		fprintf(stderr, "kiln-vmm: RssImage:\t%8ld kB\n", image_kb);
	/* Guest RAM in anonymous memory is part of RssAnon: say how much. */
	if (vm->mem.anon)
		fprintf(stderr,
		        "kiln-vmm: RssGuestRAM:\t%8ld kB\nkiln-vmm: GuestHugePages:\t%8ld kB\n",
		        mapping_kb(vm->mem.host, "Rss"), mapping_kb(vm->mem.host, "AnonHugePages"));
}

/* --mem-backing thp still works where the host has transparent huge pages
 * off, only without them: say so, once. */
static void check_host_thp(const struct vm_config *cfg)
{
	static const char path[] = "/sys/kernel/mm/transparent_hugepage/enabled";
	char line[128] = "";
	FILE *f;

	if (cfg->mem_backing != MEM_BACKING_THP || !(f = fopen(path, "r")))
		return;
	if (fgets(line, sizeof(line), f) && strstr(line, "[never]"))
		fprintf(stderr,
		        "kiln-vmm: --mem-backing thp: the host has transparent huge pages off "
		        "(%s: never); guest RAM gets 4 KiB pages\n",
		        path);
	fclose(f);
}

/* RAM the guest allocates first: from the end of the boot area up. */
#define EARLY_RAM (512 << 10)

/*
 * Under shadow paging each page the guest touches first costs it a fault
 * (15-25 us). KVM fills the shadow entries of up to 8 neighbouring pages
 * on a fault, but only for pages the VMM has mapped. So the kernel (its
 * pages exist already) and the RAM the guest allocates first are mapped
 * here (MADV_POPULATE_*, best effort): a boot of hello-musl takes 56
 * shadow faults instead of 93, and its RAM grows by ~256 KB (pages the
 * guest would mostly take anyway).
 *
 * The kernel's pages in a memfd are mapped by read faults: those map up to
 * 16 pages that exist already at once (fault-around), writable all the
 * same (shmem needs no write notification), ~0.2 instead of ~0.25 ms. In
 * anonymous memory a read fault would map the zero page: write faults.
 */
static void prefault_kernel(struct vm *vm)
{
	const struct kernel_info *k = &vm->kernel;

	madvise(gpa_ptr(&vm->mem, k->pa_start, 0), k->pa_end - k->pa_start,
	        vm->mem.fd >= 0 && !vm->mem.private ? MADV_POPULATE_READ : MADV_POPULATE_WRITE);
}

static void prefault_early_ram(struct vm *vm)
{
	if (vm->boot_area_end + EARLY_RAM <= vm->kernel.pa_start)
		madvise(gpa_ptr(&vm->mem, vm->boot_area_end, 0), EARLY_RAM, MADV_POPULATE_WRITE);
}

/*
 * Two jobs of a boot need neither the kernel loaded nor each other, so a
 * helper thread does them while the main thread loads the kernel: creating
 * the KVM VM and its memory slots (~0.7 ms; the memory need only be mapped)
 * and, once the boot area says where it is, filling the early RAM (~0.4 ms
 * on PVM hosts). On a busy host the helper may not get a CPU for
 * milliseconds: whichever of the two threads comes to a job first does it,
 * except that the main thread leaves the early RAM to a helper that has
 * started (it may still be creating the VM, which the main thread waits
 * for). The early RAM is best effort: the helper may go on filling it
 * while devices and vCPUs are set up and even once the guest runs (it
 * touches the same pages at worst).
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool area_built; /* vm->boot_area_end is known */
	bool created;    /* the VM exists, or create_err says why not */
	atomic_bool create_claimed, early_claimed;
	int create_err;
	pthread_t helper;
	bool have_helper; /* joined before the jail's drop */
} jobs = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void create_vm(struct vm *vm)
{
	int err = vm_create(vm);

	if (!err)
		x86_pick_xcr0(vm);
	vm->t.vm_created = vm_now_ns();
	pthread_mutex_lock(&jobs.lock);
	jobs.create_err = err;
	jobs.created = true;
	pthread_cond_broadcast(&jobs.cond);
	pthread_mutex_unlock(&jobs.lock);
}

/* Until *done (a jobs flag) is set by the other thread. */
static void wait_for(const bool *done)
{
	pthread_mutex_lock(&jobs.lock);
	while (!*done)
		pthread_cond_wait(&jobs.cond, &jobs.lock);
	pthread_mutex_unlock(&jobs.lock);
}

static void *boot_helper(void *arg)
{
	struct vm *vm = arg;

	if (!atomic_exchange(&jobs.create_claimed, true))
		create_vm(vm);
	wait_for(&jobs.area_built);
	if (!atomic_exchange(&jobs.early_claimed, true))
		prefault_early_ram(vm);
	return NULL;
}

/* Where the late RAM starts, 0 if there is none. */
static uint64_t late_ram_start(const struct guest_mem *mem)
{
	uint64_t end = LATE_RAM_FROM + ((mem->size / 256 + 2 * MIB - 1) & ~(2 * MIB - 1));

	return end < mem->low_size ? end : mem->size > mem->low_size ? mem->low_size : 0;
}

/* Guest memory and images for a boot, and the KVM VM: the kernel loaded,
 * the boot area built (the device tree comes once the devices exist). */
static int prepare_boot(struct vm *vm)
{
	int err = mem_init_backed(&vm->mem, vm->cfg.mem_size, vm->cfg.mem_backing);
	uint64_t index_pa, ram_end;
	pthread_t helper;

	if (err)
		die("cannot allocate %llu MiB of guest memory: %s",
		    (unsigned long long)(vm->cfg.mem_size / MIB), strerror(-err));
	vm->late.early_end = late_ram_start(&vm->mem);
	ram_end = vm->late.early_end ? vm->late.early_end : vm->mem.low_size;
	vm->t.mem_ready = vm_now_ns();
	if (vm->cfg.initrd_path)
		map_initrd(vm);
	map_image(vm);
	if (pthread_create(&helper, NULL, boot_helper, vm) == 0) {
		if (vm->cfg.jail.active) {
			jobs.helper = helper;
			jobs.have_helper = true;
		} else {
			pthread_detach(helper);
		}
	}
	load_boot_kernel(vm);
	vm->t.kernel_loaded = vm_now_ns();
	err = x86_build_boot_area(vm);
	vm->t.boot_area = vm_now_ns();
	if (err || vm->boot_area_end > vm->kernel.pa_start)
		die("kernel image '%s': its lowest segment leaves no room for the boot page tables",
		    vm->cfg.kernel_path);
	pthread_mutex_lock(&jobs.lock);
	jobs.area_built = true;
	pthread_cond_broadcast(&jobs.cond);
	pthread_mutex_unlock(&jobs.lock);
	prefault_kernel(vm);
	/* The initramfs index: after the device tree, leaving the guest
	 * MIN_FREE_MEM, at the start of a PREFETCH_GROUP. On a fault KVM's
	 * shadow MMU maps the rest of the group too, but only from its first
	 * unmapped page on and as far as the host has those pages: right after
	 * the device tree's unused tail the index cost a fault per page. */
	index_pa = (vm->fdt_pa + KILN_FDT_MAX_SIZE + PREFETCH_GROUP - 1) & ~(PREFETCH_GROUP - 1);
	initrd_index_build(vm, index_pa,
	                   ram_end > index_pa + MIN_FREE_MEM ? ram_end - MIN_FREE_MEM - index_pa
	                                                     : 0);
	/* A helper that has started fills the early RAM once the VM exists. */
	if (!atomic_exchange(&jobs.create_claimed, true)) {
		create_vm(vm);
		if (!atomic_exchange(&jobs.early_claimed, true))
			prefault_early_ram(vm);
	}
	wait_for(&jobs.created);
	/* A kernel too large for the early RAM: all RAM before the guest runs. */
	if (!jobs.create_err && vm->late.early_end &&
	    vm->fdt_pa + KILN_FDT_MAX_SIZE + MIN_FREE_MEM > vm->late.early_end) {
		err = vm_late_ram_online(vm);
		vm->late.early_end = 0;
		return err;
	}
	return jobs.create_err;
}

/* The same from a snapshot: refused here, before any real work, if it
 * cannot fit (vmm/restore.c). */
static void prepare_restore(struct vm *vm)
{
	char why[400];

	if (vm_restore_open(vm, why, sizeof(why)))
		die("%s", why);
	/* A restored VM has its kernel in the saved memory already. */
	if (vm->cfg.initrd_path)
		map_initrd(vm);
	map_image(vm);
	if (vm_restore_check(vm, false, why, sizeof(why)) ||
	    vm_restore_memory(vm, why, sizeof(why)))
		die("cannot restore: %s", why);
}

/*
 * Destroying a KVM VM waits for SRCU grace periods and workqueue flushes
 * (10-13 ms on these hosts), which whoever waits for kiln-vmm's exit would
 * wait for too. Nothing of the VM is needed once the guest has stopped and
 * the devices are closed: a child keeps the VM's descriptors until this
 * process has gone (its end of a pipe closes), then exits, and the kernel
 * destroys the VM then. True if the child holds them (the caller exits at
 * once); false to tear down here.
 */
static bool destroy_after_exit(void)
{
	int p[2];
	pid_t pid;
	char c;

	if (fflush(NULL) || pipe(p) < 0)
		return false;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return false;
	}
	if (pid == 0) {
		/* Not holding our stdout or stderr: readers see their end now. */
		close(0);
		close(1);
		close(2);
		close(p[1]);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	return true;
}

int main(int argc, char **argv)
{
	static struct vm vm;
	ev_async stop_async;
	ev_signal sig_int, sig_term, sig_hup;
	ev_timer test_timer;
	char why[400];
	int err;

	vm.t.start = vm_now_ns();
	options_parse(argc, argv, &vm.cfg);
	/* Before the jail's root hides the path (the jail keeps it open). */
	vm.cfg.trace_fd = kiln_trace_open("kiln-vmm");
	/* And the host's CPUID table (x86_pick_xcr0 asks KVM without it). */
	if (vm.cfg.host_cpuid_path &&
	    !(vm.supported_cpuid = host_cpuid_read(vm.cfg.host_cpuid_path, why, sizeof(why))))
		fprintf(stderr,
		        "kiln-vmm: --host-cpuid '%s': %s; asking KVM for the table instead\n",
		        vm.cfg.host_cpuid_path, why);
	jail_enter(&vm.cfg);
	check_host_thp(&vm.cfg);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();
	pthread_mutex_init(&vm.stop_lock, NULL);
	vm.fd = vm.kvm_fd = -1;
	vm.pause.irq_fd = -1;

	if (vm.cfg.restore_path) {
		prepare_restore(&vm);
		err = vm_create(&vm);
		vm.t.vm_created = vm_now_ns();
	} else {
		err = prepare_boot(&vm);
	}
	if (err == -ENOENT || err == -EACCES)
		die("/dev/kvm: %s (is KVM available and are you allowed to use it?)",
		    strerror(-err));
	if (err)
		die("creating the KVM virtual machine failed: %s", strerror(-err));

	vm.loop = ev_default_loop(EVFLAG_AUTO);
	ev_async_init(&stop_async, on_stop);
	ev_async_start(vm.loop, &stop_async);
	vm.stop_async = &stop_async;
	ev_signal_init(&sig_int, on_signal, SIGINT);
	ev_signal_init(&sig_term, on_signal, SIGTERM);
	ev_signal_init(&sig_hup, on_signal, SIGHUP);
	sig_int.data = sig_term.data = sig_hup.data = &vm;
	ev_signal_start(vm.loop, &sig_int);
	ev_signal_start(vm.loop, &sig_term);
	ev_signal_start(vm.loop, &sig_hup);

	/* Devices in this order, always: a snapshot restores slot by slot. */
	if ((err = console_create(&vm, vm.cfg.console_in, vm.cfg.console_out)) ||
	    (err = rng_create(&vm)))
		die("creating devices failed: %s", strerror(-err));
	if (vm.cfg.vsock_path && (err = vsock_create(&vm, vm.cfg.vsock_cid, vm.cfg.vsock_path)))
		die("creating the vsock device on '%s' failed: %s", vm.cfg.vsock_path,
		    err == -EEXIST ? "the path exists and is not a socket" : strerror(-err));
	if (vm.cfg.image_path && (err = pmem_create(&vm)))
		die("creating the pmem device failed: %s", strerror(-err));
	if (vm.cfg.disk_path) {
		const char *why;

		err = blk_create(&vm, vm.cfg.disk_path, vm.cfg.disk_ro, &why);
		if (err)
			die("disk '%s': %s", vm.cfg.disk_path, why ? why : strerror(-err));
	}
	err = vm_pause_init(&vm);
	if (err)
		die("setting up device interrupts failed: %s", strerror(-err));
	vm.t.devices = vm_now_ns();

	vm.nr_vcpus = vm.cfg.nr_cpus;
	vm.vcpus = calloc((size_t)vm.nr_vcpus, sizeof(*vm.vcpus));
	if (!vm.vcpus)
		die("out of memory");
	for (int i = 0; i < vm.nr_vcpus; i++) {
		err = vcpu_create(&vm, &vm.vcpus[i], i);
		if (err)
			die("creating vCPU %d failed: %s", i, strerror(-err));
	}
	vm.t.vcpus = vm_now_ns();
	if (vm.cfg.restore_path) {
		if (vm_restore_check(&vm, true, why, sizeof(why)) ||
		    vm_restore_state(&vm, why, sizeof(why)))
			die("cannot restore: %s", why);
	} else {
		build_fdt(&vm);
		vm.t.fdt_built = vm_now_ns();
		for (int i = 0; i < vm.nr_vcpus; i++) {
			err = x86_setup_vcpu(&vm.vcpus[i], vm.fdt_pa);
			if (err)
				die("setting up vCPU %d failed: %s", i, strerror(-err));
		}
	}
	if (vm.cfg.api_path && (err = api_create(&vm, vm.cfg.api_path)))
		die("--api-sock '%s': %s", vm.cfg.api_path,
		    err == -EEXIST ? "the path exists and is not a socket" : strerror(-err));
	/* Every thread started so far is done or has its filter: drop to the
	 * jail's ids before the guest runs. */
	if (jobs.have_helper)
		pthread_join(jobs.helper, NULL);
	jail_drop(&vm);
	for (int i = 0; i < vm.nr_vcpus; i++) {
		err = vcpu_start(&vm.vcpus[i]);
		if (err)
			die("starting vCPU %d failed: %s", i, strerror(-err));
	}
	vm.t.vcpus_started = vm_now_ns();
	if ((err = uffd_load(&vm)))
		fprintf(stderr,
		        "kiln-vmm: restore: starting the threads that load memory: %s; memory "
		        "comes in as the guest touches it\n",
		        strerror(-err));
	jail_thread(&vm, JAIL_T_MAIN);
	if (getenv("KILN_VMM_TEST_SECCOMP")) {
		ev_timer_init(&test_timer, on_test_timer,
		              atof(getenv("KILN_VMM_TEST_SECCOMP")) / 1e3, 0);
		test_timer.data = &vm;
		ev_timer_start(vm.loop, &test_timer);
	}

	ev_run(vm.loop, 0);

	vm_pause_release(&vm);
	for (int i = 0; i < vm.nr_vcpus; i++)
		vcpu_kick_and_join(&vm.vcpus[i]);
	virtio_mmio_drain_all(&vm);
	if (vm.cfg.stats)
		print_stats(&vm);
	if (atomic_load(&vm.stop) != VM_STOP_EXIT && vm.stop_msg[0]) {
		char where[96] = "";
		if (atomic_load(&vm.stop) == VM_STOP_ERROR)
			vcpu_describe(&vm.vcpus[0], where, sizeof(where));
		fprintf(stderr, "kiln-vmm: %s%s\n", vm.stop_msg, where);
	}
	api_destroy(&vm);
	virtio_mmio_destroy_all(&vm);
	for (int i = 0; i < vm.nr_vcpus; i++)
		vcpu_destroy(&vm.vcpus[i]);
	vm_restore_close(&vm);
	/* In the jail the pid namespace ends with this process anyway. */
	if (!vm.cfg.jail.active && destroy_after_exit())
		_exit(vm.exit_status);
	vm_destroy(&vm);
	mem_destroy(&vm.mem);
	pmem_unmap(&vm.mem);
	return vm.exit_status;
}
