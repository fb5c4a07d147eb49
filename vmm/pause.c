/* SPDX-License-Identifier: MIT */
/*
 * Pause and resume, cooperatively: the VMM raises KILN_VEC_QUIESCE through
 * an irqfd; the guest's handler does `out` to KILN_PORT_QUIESCE, and the
 * vCPU thread that takes that exit parks itself until the VM is resumed.
 * Stopping a vCPU anywhere else (a signal and immediate_exit) can lose an
 * exception in mid-delivery on PVM hosts (shared/probes/RESULTS.md §7), so
 * this is the only place a vCPU is ever held, and its state is read only
 * there.
 *
 * On the way out of the quiesce point the vCPU gets the resume registers
 * (kiln/boot.h): the host's realtime clock with the guest TSC at the same
 * instant, KILN_RESUME_* flags and fresh entropy.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "vcpu.h"

int vm_pause_init(struct vm *vm)
{
	pthread_condattr_t ca;
	int fd;

	pthread_mutex_init(&vm->pause.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&vm->pause.cond, &ca);
	pthread_condattr_destroy(&ca);
	fd = vm_msi_irqfd(vm, KILN_VEC_QUIESCE);
	if (fd < 0)
		return fd;
	vm->pause.irq_fd = fd;
	return 0;
}

static bool all_parked(struct vm *vm)
{
	return vm->pause.nr_parked == vm->nr_vcpus;
}

bool vm_is_paused(struct vm *vm)
{
	bool paused;

	pthread_mutex_lock(&vm->pause.lock);
	paused = vm->pause.requested && all_parked(vm);
	pthread_mutex_unlock(&vm->pause.lock);
	return paused;
}

int vm_pause(struct vm *vm, int timeout_ms, char *why, size_t len)
{
	struct vm_pause *p = &vm->pause;
	uint64_t t0 = vm_now_ns(), end = t0 + (uint64_t)timeout_ms * 1000000ULL, one = 1;
	int err = 0;

	pthread_mutex_lock(&p->lock);
	if (p->requested && all_parked(vm)) {
		pthread_mutex_unlock(&p->lock);
		return 1;
	}
	p->requested = true;
	p->resume_flags = KILN_RESUME_PAUSED;
	pthread_mutex_unlock(&p->lock);
	/* An MSI to APIC 0; one vCPU is all kiln-kernel runs today. */
	if (write(p->irq_fd, &one, sizeof(one)) < 0) {
		err = -errno;
		snprintf(why, len, "raising the quiesce interrupt: %s", strerror(errno));
		pthread_mutex_lock(&p->lock);
		goto cancel;
	}
	pthread_mutex_lock(&p->lock);
	while (!all_parked(vm) && atomic_load(&vm->stop) == VM_RUNNING) {
		/* In slices: a VM that stops meanwhile does not signal us. */
		uint64_t now = vm_now_ns(),
		         until = now + 20000000ULL < end ? now + 20000000ULL : end;
		struct timespec ts = {(time_t)(until / 1000000000ULL),
		                      (long)(until % 1000000000ULL)};

		if (now >= end)
			break;
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	}
	if (all_parked(vm)) {
		p->count++;
		p->last_ns = vm_now_ns() - t0;
		p->since = vm_now_ns();
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	if (atomic_load(&vm->stop) != VM_RUNNING) {
		err = -ESHUTDOWN;
		snprintf(why, len, "the VM stopped");
	} else {
		err = -ETIMEDOUT;
		snprintf(why, len,
		         "the guest did not reach its quiesce point within %d ms (a kernel "
		         "without boot ABI %d, or one stuck with interrupts off)",
		         timeout_ms, KILN_BOOT_VERSION);
	}
cancel:
	/* A vCPU that gets there later finds nothing requested and goes on. */
	p->requested = false;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return err;
}

int vm_resume(struct vm *vm)
{
	struct vm_pause *p = &vm->pause;
	int ret = 0;

	pthread_mutex_lock(&p->lock);
	if (!p->requested)
		ret = 1;
	p->requested = false;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return ret;
}

void vm_pause_release(struct vm *vm)
{
	pthread_mutex_lock(&vm->pause.lock);
	pthread_cond_broadcast(&vm->pause.cond);
	pthread_mutex_unlock(&vm->pause.lock);
}

int vcpu_set_resume_regs(struct vcpu *c, uint32_t flags)
{
	struct kvm_regs r;
	struct timespec ts;
	uint64_t seed[4] = {0}, tsc = 0;

	if (ioctl(c->fd, KVM_GET_REGS, &r) < 0)
		return -errno;
	if (flags) {
		/* The pair a guest clock is stepped with: as close together as
		 * two calls allow. */
		clock_gettime(CLOCK_REALTIME, &ts);
		if (vcpu_read_tsc(c, &tsc))
			return -EIO;
		if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
			return -EIO;
		r.rdi = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		r.rsi = tsc;
	}
	r.rdx = flags;
	r.r8 = seed[0];
	r.r9 = seed[1];
	r.r10 = seed[2];
	r.r11 = seed[3];
	return ioctl(c->fd, KVM_SET_REGS, &r) < 0 ? -errno : 0;
}

/*
 * The `out` has not retired yet: KVM finishes a port write at the next
 * KVM_RUN. Do that now, with immediate_exit so the guest runs nothing, so
 * that the state a snapshot reads is the one after the instruction.
 */
static int complete_io(struct vcpu *c)
{
	int r;

	c->run->immediate_exit = 1;
	r = ioctl(c->fd, KVM_RUN, 0);
	c->run->immediate_exit = 0;
	if (r < 0 && errno != EINTR)
		return -errno;
	return 0;
}

/* Stay parked while the VM is paused; the resume flags, or 0 if it was
 * not (a pause given up on: the guest just goes on). */
static uint32_t park(struct vcpu *c)
{
	struct vm *vm = c->vm;
	struct vm_pause *p = &vm->pause;
	uint32_t flags = 0;

	pthread_mutex_lock(&p->lock);
	if (p->requested) {
		c->parked = true;
		p->nr_parked++;
		pthread_cond_broadcast(&p->cond);
		while (p->requested && atomic_load(&vm->stop) == VM_RUNNING)
			pthread_cond_wait(&p->cond, &p->lock);
		p->nr_parked--;
		c->parked = false;
		flags = p->resume_flags;
	}
	pthread_mutex_unlock(&p->lock);
	return flags;
}

static void go_on(struct vcpu *c, uint32_t flags)
{
	int err;

	if (atomic_load(&c->vm->stop) != VM_RUNNING)
		return;
	err = vcpu_set_resume_regs(c, flags);
	if (err)
		vm_stop(c->vm, VM_STOP_ERROR, 1, "setting the resume registers: %s",
		        strerror(-err));
}

void vcpu_quiesce_exit(struct vcpu *c)
{
	int err = complete_io(c);

	if (err) {
		vm_stop(c->vm, VM_STOP_ERROR, 1, "completing the quiesce exit: %s", strerror(-err));
		return;
	}
	go_on(c, park(c));
}

void vcpu_start_parked(struct vcpu *c)
{
	struct vm *vm = c->vm;
	bool paused;

	pthread_mutex_lock(&vm->pause.lock);
	paused = vm->pause.requested;
	pthread_mutex_unlock(&vm->pause.lock);
	if (paused)
		go_on(c, park(c));
}
