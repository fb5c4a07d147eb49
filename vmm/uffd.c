/* SPDX-License-Identifier: MIT */
/*
 * Lazy restore: guest RAM (a memfd, mapped shared) starts empty and
 * registered with userfaultfd; the first touch of a page, by a vCPU through
 * KVM or by the VMM's own device code, stops that thread until this file's
 * thread has decompressed the page's chunk from the snapshot and put it in
 * place with UFFDIO_COPY (UFFDIO_ZEROPAGE for a page of an all-zero chunk,
 * which costs nothing more). When no fault is waiting, the same thread
 * prefetches the chunks that hold data, in order, after a short grace period
 * that leaves the CPU to the guest's first steps; once all of them are in,
 * the range is unregistered and the thread ends (the remaining holes are
 * all-zero chunks, which a plain fault gets right).
 *
 * The thread never touches guest memory itself: it would fault on its own
 * range. Nor does anything that must not wait on it: a snapshot of a VM
 * still loading takes the pages not loaded yet from the snapshot being
 * loaded (snap_save.holes_from_ref), not through the mapping. Whenever the
 * thread ends, early or not, the range is unregistered and the userfaultfd
 * closed, so no fault is ever left waiting on a thread that has ended. Needs userfaultfd for kernel-mode faults (KVM's): root,
 * CAP_SYS_PTRACE, vm.unprivileged_userfaultfd=1 or access to
 * /dev/userfaultfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "snap_vm.h"

#define PAGE             4096ULL
#define PREFETCH_WAIT_MS 100 /* after the start, before prefetching */

struct uffd {
	struct vm *vm;
	const struct snap *s;
	int fd, stop_fd;
	pthread_t thread;
	bool running;
	uint8_t *base;
	uint64_t size, chunk_size, nchunks;
	uint8_t *state;               /* per chunk: enum below */
	uint64_t next_prefetch, left; /* chunks still C_MISSING */
	void *buf;
	struct snap_chunk_ctx *ctx;
	atomic_uint_fast64_t filled, faults;
};

enum {
	C_MISSING, /* not looked at yet */
	C_FILLED,  /* copied in whole */
	C_ZERO,    /* all zero: its pages are zero-filled as they are touched */
};

static int open_uffd(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0 && (errno == EPERM || errno == ENOSYS)) {
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
			close(dev);
		}
	}
	return fd;
}

/* Fill [off, off + len) from buf; pages already there are skipped. */
static int copy_range(struct uffd *u, uint64_t off, const uint8_t *src, uint64_t len)
{
	int stalls = 0;

	while (len) {
		struct uffdio_copy c = {
		    .dst = (uint64_t)(uintptr_t)(u->base + off),
		    .src = (uint64_t)(uintptr_t)src,
		    .len = len,
		};

		if (ioctl(u->fd, UFFDIO_COPY, &c) == 0)
			return 0;
		if (errno != EEXIST && errno != EAGAIN)
			return -errno;
		/* Partly there: go on after what was copied, and past the page
		 * that exists. */
		if (c.copy > 0) {
			off += (uint64_t)c.copy;
			src += c.copy;
			len -= (uint64_t)c.copy;
			stalls = 0;
		} else if (errno == EEXIST) {
			off += PAGE;
			src += PAGE;
			len -= len < PAGE ? len : PAGE;
		} else if (++stalls > 1000) {
			/* EAGAIN without progress, again and again: give up
			 * rather than spin while a faulting thread waits. */
			return -EAGAIN;
		}
	}
	return 0;
}

static void wake(struct uffd *u, uint64_t off)
{
	struct uffdio_range r = {.start = (uint64_t)(uintptr_t)(u->base + off), .len = PAGE};

	ioctl(u->fd, UFFDIO_WAKE, &r);
}

static int zero_page(struct uffd *u, uint64_t off)
{
	struct uffdio_zeropage z = {
	    .range = {.start = (uint64_t)(uintptr_t)(u->base + off), .len = PAGE},
	};

	if (ioctl(u->fd, UFFDIO_ZEROPAGE, &z) == 0)
		return 0;
	/* There already (another fault on it was served first): the ioctl
	 * woke nobody, so wake whoever waits on it. */
	if (errno == EEXIST) {
		wake(u, off);
		return 0;
	}
	return -errno;
}

static int fill_zero(struct uffd *u, uint64_t off)
{
	int r = zero_page(u, off);

	if (r < 0)
		vm_stop(u->vm, VM_STOP_ERROR, 1, "lazy restore: UFFDIO_ZEROPAGE at %llu: %s",
		        (unsigned long long)off, strerror(-r));
	return r;
}

/* Bring in chunk idx (fault: the page at off in it is wanted now). */
static int fill(struct uffd *u, uint64_t idx, bool fault, uint64_t off)
{
	uint64_t start = idx * u->chunk_size, len = snap_chunk_len(u->s, idx);
	struct snap_err err;
	int r;

	if (u->state[idx] == C_FILLED) {
		if (fault)
			wake(u, off);
		return 0;
	}
	if (u->state[idx] == C_ZERO)
		return fault ? fill_zero(u, off) : 0;
	r = snap_read_chunk(u->s, u->ctx, idx, u->buf, &err);
	if (r == SNAP_CHUNK_ZERO) {
		u->state[idx] = C_ZERO;
		u->left--;
		return fault ? fill_zero(u, off) : 0;
	}
	if (r < 0) {
		vm_stop(u->vm, VM_STOP_ERROR, 1, "lazy restore: %s", err.msg);
		return r;
	}
	r = copy_range(u, start, u->buf, len);
	if (r < 0) {
		vm_stop(u->vm, VM_STOP_ERROR, 1, "lazy restore: UFFDIO_COPY of chunk %llu: %s",
		        (unsigned long long)idx, strerror(-r));
		return r;
	}
	/* Pages that were there already (EEXIST) got no wake-up from the
	 * copy: make sure the faulting thread does. */
	if (fault)
		wake(u, off);
	u->state[idx] = C_FILLED;
	u->left--;
	atomic_fetch_add(&u->filled, 1);
	return 0;
}

static int serve_faults(struct uffd *u)
{
	struct uffd_msg msg[16];
	ssize_t n;

	while ((n = read(u->fd, msg, sizeof(msg))) > 0) {
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(msg[0]); i++) {
			uint64_t off;

			if (msg[i].event != UFFD_EVENT_PAGEFAULT)
				continue;
			off = (msg[i].arg.pagefault.address - (uint64_t)(uintptr_t)u->base) &
			      ~(PAGE - 1);
			if (off >= u->size) {
				/* Not ours (cannot happen): never leave it waiting. */
				struct uffdio_range r = {.start = msg[i].arg.pagefault.address &
				                                  ~(PAGE - 1),
				                         .len = PAGE};

				ioctl(u->fd, UFFDIO_WAKE, &r);
				continue;
			}
			atomic_fetch_add(&u->faults, 1);
			if (fill(u, off / u->chunk_size, true, off) < 0)
				return -1;
		}
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		vm_stop(u->vm, VM_STOP_ERROR, 1, "lazy restore: reading the userfaultfd: %s",
		        strerror(errno));
		return -1;
	}
	return 0;
}

/* The next chunk with data, or false when there is none left. */
static bool prefetch_one(struct uffd *u)
{
	while (u->next_prefetch < u->nchunks && u->state[u->next_prefetch] != C_MISSING)
		u->next_prefetch++;
	if (u->next_prefetch >= u->nchunks)
		return false;
	return fill(u, u->next_prefetch, false, 0) == 0;
}

/* Stop serving: faults waiting now and later are filled by the kernel, zero
 * for pages never copied in (right once every chunk with data is in; after
 * an error the VM is stopping anyway and must not hang in a fault). The
 * userfaultfd is closed too, which unregisters and wakes everything even
 * if UFFDIO_UNREGISTER failed: nothing may be left waiting on a thread
 * that has ended. */
static void unregister(struct uffd *u)
{
	struct uffdio_range r = {.start = (uint64_t)(uintptr_t)u->base, .len = u->size};

	ioctl(u->fd, UFFDIO_UNREGISTER, &r);
	close(u->fd);
	u->fd = -1;
}

static void *uffd_thread(void *arg)
{
	struct uffd *u = arg;
	uint64_t t0 = vm_now_ns();
	struct pollfd p[2] = {{.fd = u->fd, .events = POLLIN},
	                      {.fd = u->stop_fd, .events = POLLIN}};

	while (u->left) {
		uint64_t waited = (vm_now_ns() - t0) / 1000000;
		int timeout = waited < PREFETCH_WAIT_MS ? (int)(PREFETCH_WAIT_MS - waited) : 0;
		int r = poll(p, 2, timeout);

		if (r < 0 && errno != EINTR) {
			vm_stop(u->vm, VM_STOP_ERROR, 1, "lazy restore: poll: %s", strerror(errno));
			unregister(u);
			return NULL;
		}
		if (p[1].revents)
			return NULL; /* uffd_stop() closes the userfaultfd */
		if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			vm_stop(u->vm, VM_STOP_ERROR, 1, "lazy restore: the userfaultfd failed");
			unregister(u);
			return NULL;
		}
		if (p[0].revents && serve_faults(u) < 0) {
			unregister(u);
			return NULL;
		}
		if (r == 0 && timeout == 0 && !prefetch_one(u)) {
			unregister(u);
			return NULL;
		}
	}
	/* Holes left are all-zero chunks: plain faults get them right. */
	atomic_store(&u->vm->mem.lazy, false);
	unregister(u);
	return NULL;
}

int uffd_start(struct vm *vm, const struct snap *s, char *why, size_t len)
{
	struct snap_mem_info mi;
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_MISSING_SHMEM};
	struct uffdio_register reg = {
	    .range = {.start = (uint64_t)(uintptr_t)vm->mem.host, .len = vm->mem.size},
	    .mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	struct uffd *u = calloc(1, sizeof(*u));
	sigset_t all, old;
	int err;

	if (!u)
		return -ENOMEM;
	snap_mem_info(s, &mi);
	u->vm = vm;
	u->s = s;
	u->base = vm->mem.host;
	u->size = vm->mem.size;
	u->chunk_size = mi.chunk_size;
	u->nchunks = mi.nchunks;
	u->left = mi.nchunks;
	u->stop_fd = -1;
	u->fd = open_uffd();
	u->state = calloc(mi.nchunks, 1);
	u->buf = malloc(mi.chunk_size);
	u->ctx = snap_chunk_ctx_new(s);
	vm->snap.uffd = u;
	if (u->fd < 0) {
		err = -errno;
		snprintf(why, len,
		         "--restore-mode lazy needs userfaultfd: %s (run as root, or set "
		         "vm.unprivileged_userfaultfd=1, or use --restore-mode eager)",
		         strerror(errno));
		return err;
	}
	if (!u->state || !u->buf || !u->ctx) {
		snprintf(why, len, "lazy restore: out of memory");
		return -ENOMEM;
	}
	if (ioctl(u->fd, UFFDIO_API, &api) < 0 || !(api.features & UFFD_FEATURE_MISSING_SHMEM) ||
	    ioctl(u->fd, UFFDIO_REGISTER, &reg) < 0) {
		err = errno ? -errno : -ENOTSUP;
		snprintf(why, len, "userfaultfd on guest memory (shmem): %s", strerror(-err));
		return err;
	}
	u->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (u->stop_fd < 0) {
		err = -errno;
		snprintf(why, len, "lazy restore: eventfd: %s", strerror(errno));
		return err;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&u->thread, NULL, uffd_thread, u);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		snprintf(why, len, "lazy restore: thread: %s", strerror(-err));
		return err;
	}
	u->running = true;
	return 0;
}

void uffd_stats(struct vm *vm, uint64_t *filled, uint64_t *faults, uint64_t *total)
{
	struct uffd *u = vm->snap.uffd;

	*filled = u ? atomic_load(&u->filled) : 0;
	*faults = u ? atomic_load(&u->faults) : 0;
	*total = u ? u->nchunks : 0;
}

void uffd_stop(struct vm *vm)
{
	struct uffd *u = vm->snap.uffd;
	uint64_t one = 1;

	if (!u)
		return;
	if (u->running) {
		if (write(u->stop_fd, &one, sizeof(one)) < 0)
			perror("kiln-vmm: lazy restore: stopping");
		pthread_join(u->thread, NULL);
	}
	if (u->fd >= 0)
		close(u->fd);
	if (u->stop_fd >= 0)
		close(u->stop_fd);
	snap_chunk_ctx_free(u->ctx);
	free(u->buf);
	free(u->state);
	free(u);
	vm->snap.uffd = NULL;
}
