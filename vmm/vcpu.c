/* SPDX-License-Identifier: MIT */
/* vCPU threads: KVM_RUN and the exits kiln-vmm handles (kiln's ports, MMIO,
 * and every way a guest can die). */
#include <errno.h>
#include <stdarg.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vcpu.h"
#include "virtio/virtio.h"

#define SIG_KICK SIGUSR1
/* KILN_PORT_POPULATE: at most one guest huge page's worth at a time. */
#define POPULATE_PAGE 4096ULL
#define POPULATE_MAX  (2ULL << 20)

static const char *vector_name(uint64_t v)
{
	static const char *const names[] = {
	    "#DE divide error",
	    "#DB debug",
	    "NMI",
	    "#BP breakpoint",
	    "#OF overflow",
	    "#BR bound",
	    "#UD invalid opcode",
	    "#NM no FPU",
	    "#DF double fault",
	    "coproc",
	    "#TS invalid TSS",
	    "#NP segment not present",
	    "#SS stack fault",
	    "#GP general protection",
	    "#PF page fault",
	    "reserved",
	    "#MF x87 error",
	    "#AC alignment check",
	    "#MC machine check",
	    "#XM SIMD error",
	};
	return v < sizeof(names) / sizeof(names[0]) ? names[v] : "exception";
}

/* Rate-limited complaint about guest behaviour: at most 10 lines per run. */
static void guest_warn(struct vcpu *c, const char *fmt, ...)
{
	static _Atomic int budget = 10;
	va_list ap;

	if (atomic_fetch_sub(&budget, 1) <= 0)
		return;
	fprintf(stderr, "kiln-vmm: vcpu %d: ", c->id);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int cpl_of(struct vcpu *c, uint64_t *rip)
{
	struct kvm_regs r;
	struct kvm_sregs s;

	*rip = 0;
	if (ioctl(c->fd, KVM_GET_REGS, &r) < 0 || ioctl(c->fd, KVM_GET_SREGS, &s) < 0)
		return -1;
	*rip = r.rip;
	return s.cs.selector & 3;
}

static void crash(struct vcpu *c, const char *what)
{
	uint64_t rip;
	int cpl = cpl_of(c, &rip);

	vm_stop(c->vm, VM_STOP_CRASH, KILN_EXIT_GUEST_CRASH,
	        "guest crashed: %s at RIP %#llx, CPL%d", what, (unsigned long long)rip, cpl);
}

static void port_log(struct vcpu *c, const struct kvm_regs *r)
{
	uint64_t len = r->rsi > 4096 ? 4096 : r->rsi;
	const char *msg = gpa_ptr(&c->vm->mem, r->rdi, len);

	if (!msg) {
		guest_warn(c, "log message at bad address %#llx", (unsigned long long)r->rdi);
		return;
	}
	fprintf(stderr, "%.*s", (int)len, msg);
	fflush(stderr);
}

static void port_fatal(struct vcpu *c, const struct kvm_regs *r)
{
	vm_stop(c->vm, VM_STOP_CRASH, KILN_EXIT_GUEST_CRASH,
	        "guest kernel fault: %s (vector %llu, error %#llx) at RIP %#llx, CPL%llu, "
	        "RSP %#llx, CR2 %#llx",
	        vector_name(r->rdi), (unsigned long long)r->rdi, (unsigned long long)r->rsi,
	        (unsigned long long)r->r8, (unsigned long long)(r->r9 & 3),
	        (unsigned long long)r->r11, (unsigned long long)r->r12);
}

/* The guest is about to use a range of fresh RAM: make the host memory
 * behind it present now, so that its first touches do not each cost a host
 * fault (the host maps present neighbours along). Only for memfd RAM:
 * anonymous RAM comes in huge pages, and lazily restored RAM is the uffd
 * thread's to fill. A hint: a range that is not page-aligned RAM is
 * ignored. */
static void port_populate(struct vcpu *c, const struct kvm_regs *r)
{
	struct guest_mem *mem = &c->vm->mem;
	void *host;

	if (mem->anon || atomic_load(&mem->lazy) || !r->rsi || r->rsi > POPULATE_MAX ||
	    (r->rdi | r->rsi) % POPULATE_PAGE)
		return;
	host = gpa_ptr(mem, r->rdi, r->rsi);
	if (host)
		madvise(host, r->rsi, MADV_POPULATE_WRITE);
}

/* KILN_PORT_COPY: a batch of copies into RAM (kiln/boot.h). Ops it does
 * not do keep done 0: the guest copies those itself. Lazily restored RAM
 * is the uffd thread's to fill first: then none. */
static void port_copy(struct vcpu *c, const struct kvm_regs *r)
{
	struct guest_mem *mem = &c->vm->mem;
	uint64_t n = r->rsi, bytes = n * sizeof(struct kiln_copy_op);
	struct kiln_copy_op *ops = NULL;

	if (n && n <= KILN_COPY_BATCH_MAX && r->rdi / 4096 == (r->rdi + bytes - 1) / 4096)
		ops = gpa_ptr(mem, r->rdi, bytes);
	if (!ops) {
		guest_warn(c, "copy batch of %llu ops at %#llx ignored", (unsigned long long)n,
		           (unsigned long long)r->rdi);
		return;
	}
	if (atomic_load(&mem->lazy))
		return;
	for (uint64_t i = 0; i < n; i++) {
		/* The guest may change its memory under us: read each op once. */
		uint64_t dst = __atomic_load_n(&ops[i].dst, __ATOMIC_RELAXED);
		uint64_t src = __atomic_load_n(&ops[i].src, __ATOMIC_RELAXED);
		uint32_t len = __atomic_load_n(&ops[i].len, __ATOMIC_RELAXED);
		const void *from = len && len <= 4096 ? gpa_ptr_ro(mem, src, len) : NULL;
		void *to = from ? gpa_ptr(mem, dst, len) : NULL;

		if (!to)
			continue;
		/* memmove: the guest may make the two overlap (in RAM). */
		memmove(to, from, len);
		__atomic_store_n(&ops[i].done, 1, __ATOMIC_RELAXED);
	}
}

/* KILN_PORT_MMIO: a batch of device-register accesses in one exit. */
static void port_mmio(struct vcpu *c, const struct kvm_regs *r)
{
	struct vm *vm = c->vm;
	uint64_t n = r->rcx, bytes = n * sizeof(struct kiln_mmio_op);
	struct kiln_mmio_op *ops = gpa_ptr(&vm->mem, r->rsi, bytes);

	if (n > KILN_MMIO_BATCH_MAX || !ops) {
		guest_warn(c, "MMIO batch of %llu accesses at %#llx ignored", (unsigned long long)n,
		           (unsigned long long)r->rsi);
		return;
	}
	for (uint64_t i = 0; i < n; i++) {
		/* The guest may change its memory under us: read each op once. */
		uint32_t off = __atomic_load_n(&ops[i].off, __ATOMIC_RELAXED);
		uint32_t value = __atomic_load_n(&ops[i].value, __ATOMIC_RELAXED);
		bool write = off & KILN_MMIO_WRITE;
		uint64_t gpa = r->rdi + (off & 0xfff);

		if (virtio_mmio_access(vm, gpa, (uint8_t *)&value, 4, write) == -ENOENT) {
			value = 0xffffffff;
			guest_warn(c, "ignored batched MMIO %s at %#llx", write ? "write" : "read",
			           (unsigned long long)gpa);
		}
		if (!write)
			__atomic_store_n(&ops[i].value, value, __ATOMIC_RELAXED);
	}
}

/* KILN_PORT_RAM: no arguments to check; returns once all RAM is usable. */
static void port_ram(struct vcpu *c)
{
	int err = vm_late_ram_online(c->vm);

	if (err)
		vm_stop(c->vm, VM_STOP_ERROR, 1,
		        "registering guest RAM above %llu MiB with KVM failed: %s",
		        (unsigned long long)(c->vm->late.early_end >> 20), strerror(-err));
}

static void handle_io(struct vcpu *c)
{
	struct kvm_run *run = c->run;
	struct kvm_regs r;
	uint16_t port = run->io.port;

	if (port < KILN_PORT_BASE || port >= KILN_PORT_BASE + KILN_PORT_COUNT ||
	    run->io.direction != KVM_EXIT_IO_OUT) {
		/* Unknown port: reads see all-ones, as on real hardware. */
		if (run->io.direction == KVM_EXIT_IO_IN)
			memset((uint8_t *)run + run->io.data_offset, 0xff,
			       (size_t)run->io.size * run->io.count);
		guest_warn(c, "ignored I/O to port %#x", port);
		return;
	}
	if (port == KILN_PORT_QUIESCE) {
		vcpu_quiesce_exit(c);
		return;
	}
	if (port == KILN_PORT_RAM) {
		port_ram(c);
		return;
	}
	if (ioctl(c->fd, KVM_GET_REGS, &r) < 0) {
		vm_stop(c->vm, VM_STOP_ERROR, 1, "KVM_GET_REGS: %s", strerror(errno));
		return;
	}
	switch (port) {
	case KILN_PORT_EXIT:
		vm_stop(c->vm, VM_STOP_EXIT, (int)(r.rdi & 0xff), NULL);
		break;
	case KILN_PORT_LOG:
		port_log(c, &r);
		break;
	case KILN_PORT_FATAL:
		port_fatal(c, &r);
		break;
	case KILN_PORT_POPULATE:
		port_populate(c, &r);
		break;
	case KILN_PORT_MMIO:
		port_mmio(c, &r);
		break;
	case KILN_PORT_COPY:
		port_copy(c, &r);
		break;
	}
}

static void handle_mmio(struct vcpu *c)
{
	struct kvm_run *run = c->run;
	uint32_t len = run->mmio.len;

	if (len > sizeof(run->mmio.data))
		len = sizeof(run->mmio.data);
	if (virtio_mmio_access(c->vm, run->mmio.phys_addr, run->mmio.data, len,
	                       run->mmio.is_write) == -ENOENT) {
		if (!run->mmio.is_write)
			memset(run->mmio.data, 0xff, len);
		guest_warn(c, "ignored MMIO %s at %#llx", run->mmio.is_write ? "write" : "read",
		           (unsigned long long)run->mmio.phys_addr);
	}
}

static void handle_internal(struct vcpu *c)
{
	struct kvm_run *run = c->run;
	char what[160];
	int n = snprintf(what, sizeof(what), "KVM internal error %u (%s)", run->internal.suberror,
	                 run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION
	                     ? "instruction could not be emulated"
	                     : "unexpected state");

	for (unsigned i = 0; i < run->internal.ndata && i < 4 && n < (int)sizeof(what) - 20; i++)
		n += snprintf(what + n, sizeof(what) - n, " %#llx",
		              (unsigned long long)run->internal.data[i]);
	crash(c, what);
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *c = arg;
	struct vm *vm = c->vm;
	sigset_t set;

	jail_thread(vm, JAIL_T_VCPU);
	sigemptyset(&set);
	sigaddset(&set, SIG_KICK);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	vcpu_start_parked(c);
	if (c->id == 0)
		vm->t.first_run = vm_now_ns();
	while (atomic_load(&vm->stop) == VM_RUNNING) {
		if (ioctl(c->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				c->run->immediate_exit = 0;
				continue;
			}
			vm_stop(vm, VM_STOP_ERROR, 1, "KVM_RUN: %s", strerror(errno));
			break;
		}
		switch (c->run->exit_reason) {
		case KVM_EXIT_IO:
			handle_io(c);
			break;
		case KVM_EXIT_MMIO:
			handle_mmio(c);
			break;
		case KVM_EXIT_SHUTDOWN:
			crash(c, "triple fault (shutdown)");
			break;
		case KVM_EXIT_INTERNAL_ERROR:
			handle_internal(c);
			break;
		case KVM_EXIT_FAIL_ENTRY:
			crash(c, "VM entry failed");
			break;
		case KVM_EXIT_HLT:
			crash(c, "halted with interrupts off");
			break;
		default: {
			char what[64];
			snprintf(what, sizeof(what), "unexpected exit reason %u",
			         c->run->exit_reason);
			crash(c, what);
		}
		}
	}
	return NULL;
}

static void kick_handler(int sig)
{
	(void)sig;
}

int vcpu_create(struct vm *vm, struct vcpu *c, int id)
{
	int mmap_size;

	c->vm = vm;
	c->id = id;
	c->fd = ioctl(vm->fd, KVM_CREATE_VCPU, id);
	if (c->fd < 0)
		return -errno;
	mmap_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (mmap_size < (int)sizeof(struct kvm_run))
		return -EINVAL;
	c->run_size = (size_t)mmap_size;
	c->run = mmap(NULL, c->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	if (c->run == MAP_FAILED) {
		c->run = NULL;
		return -errno;
	}
	return 0;
}

int vcpu_start(struct vcpu *c)
{
	struct sigaction sa;
	sigset_t set;
	int err;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler;
	sigaction(SIG_KICK, &sa, NULL);
	/* The thread unblocks SIG_KICK itself; everyone else keeps it blocked. */
	sigemptyset(&set);
	sigaddset(&set, SIG_KICK);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	err = pthread_create(&c->thread, NULL, vcpu_thread, c);
	return err ? -err : 0;
}

void vcpu_kick_and_join(struct vcpu *c)
{
	if (c->run)
		c->run->immediate_exit = 1;
	pthread_kill(c->thread, SIG_KICK);
	pthread_join(c->thread, NULL);
}

void vcpu_destroy(struct vcpu *c)
{
	if (c->run)
		munmap(c->run, c->run_size);
	if (c->fd >= 0)
		close(c->fd);
	c->run = NULL;
	c->fd = -1;
}

int vcpu_tsc_khz(struct vcpu *c)
{
	int khz = ioctl(c->fd, KVM_GET_TSC_KHZ, 0);
	return khz > 0 ? khz : -errno;
}

int vcpu_read_msr(struct vcpu *c, uint32_t index, uint64_t *val)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e;
	} m;

	memset(&m, 0, sizeof(m));
	m.hdr.nmsrs = 1;
	m.e.index = index;
	if (ioctl(c->fd, KVM_GET_MSRS, &m) != 1)
		return -EIO;
	*val = m.e.data;
	return 0;
}

int vcpu_read_tsc(struct vcpu *c, uint64_t *tsc)
{
	return vcpu_read_msr(c, 0x10 /* IA32_TSC */, tsc);
}

void vcpu_describe(struct vcpu *c, char *buf, size_t len)
{
	uint64_t rip;
	int cpl = cpl_of(c, &rip);

	if (cpl >= 0)
		snprintf(buf, len, " (guest at RIP %#llx, CPL%d)", (unsigned long long)rip, cpl);
}
