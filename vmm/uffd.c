/* SPDX-License-Identifier: MIT */
/*
 * Restoring guest RAM while the guest already runs: RAM (a memfd, mapped
 * shared) starts empty and registered with userfaultfd, and loader threads
 * decompress every chunk with data from the snapshot and put its non-zero
 * pages in place with UFFDIO_COPY, in order. The first touch of a page not
 * there yet, by a vCPU through KVM or by the VMM's own device code, stops
 * that thread until this file's fault thread has put the page in: it
 * decompresses the page's chunk itself (a loader may be on it too: pages
 * already there are skipped) or, for a page of an all-zero chunk or a zero
 * page of a loaded one, maps a zero page (UFFDIO_ZEROPAGE). Once every chunk
 * is in, the range is unregistered and the threads end: the holes left are
 * zero pages, which plain faults get right.
 *
 * Eager restore (the default) starts as many loaders as there are CPUs at
 * once: the guest runs from the start, and all of its memory is there a
 * decompression time later. Lazy restore starts one, after a short grace
 * period that leaves the CPU to the guest's first steps, so memory comes in
 * mostly as it is touched.
 *
 * No thread here touches guest memory itself: it would fault on its own
 * range. Nor does anything that must not wait on them: a snapshot of a VM
 * still loading takes the pages not loaded yet from the snapshot being
 * loaded (snap_save.holes_from_ref), not through the mapping. Whenever the
 * fault thread ends, early or not, the range is unregistered and the
 * userfaultfd closed, so no fault is ever left waiting on a thread that has
 * ended. Needs userfaultfd for kernel-mode faults (KVM's): root,
 * CAP_SYS_PTRACE, vm.unprivileged_userfaultfd=1 or access to
 * /dev/userfaultfd; without it an eager restore fills memory before the
 * guest starts instead (vmm/restore.c).
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
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "snap_vm.h"

#define PAGE             4096ULL
#define PREFETCH_WAIT_MS 100 /* lazy: after the start, before loading */
#define MAX_LOADERS      16
#define LOADER_NICE      10 /* a tenth of a vCPU's share of a busy CPU */

/* A thread's scratch: a chunk, and a zstd context. */
struct filler {
	void *buf;
	struct snap_chunk_ctx *ctx;
};

struct loader {
	struct uffd *u;
	pthread_t thread;
	bool running;
	struct filler f;
};

struct uffd {
	struct vm *vm;
	const struct snap *s;
	int fd, stop_fd, done_fd;
	pthread_t thread;
	bool running;
	uint8_t *base;
	uint64_t size, chunk_size, nchunks;
	_Atomic uint8_t *state;    /* per chunk: enum below */
	atomic_uint_fast64_t next; /* the next chunk a loader takes */
	atomic_uint_fast64_t left; /* chunks not C_FILLED or C_ZERO yet */
	atomic_bool quit;
	unsigned wait_ms;     /* loaders start after that */
	struct filler f;      /* the fault thread's */
	pthread_mutex_t lock; /* loaders[].running, against uffd_load() */
	struct loader loaders[MAX_LOADERS];
	unsigned nloaders;
	atomic_uint_fast64_t filled, faults, resident_ns;
};

enum {
	C_MISSING, /* not looked at yet */
	C_BUSY,    /* a loader is on it */
	C_FILLED,  /* its non-zero pages are in; the others are zero */
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
		vm_stop(u->vm, VM_STOP_ERROR, 1, "restoring memory: UFFDIO_ZEROPAGE at %llu: %s",
		        (unsigned long long)off, strerror(-r));
	return r;
}

/* Copy in the pages of src that are not all zero: a zero page is left a
 * hole (a fault on it gets a zero page), as a file restore leaves it. */
static int copy_data(struct uffd *u, uint64_t off, const uint8_t *src, uint64_t len)
{
	static const uint8_t zeros[PAGE];
	uint64_t p = 0;

	while (p < len) {
		uint64_t run;
		int r;

		for (; p < len && !memcmp(src + p, zeros, PAGE); p += PAGE)
			;
		for (run = p; run < len && memcmp(src + run, zeros, PAGE); run += PAGE)
			;
		if (run > p && (r = copy_range(u, off + p, src + p, run - p)) < 0)
			return r;
		p = run;
	}
	return 0;
}

/* Chunk idx is in (state C_FILLED or C_ZERO). */
static void chunk_done(struct uffd *u, uint64_t idx, uint8_t state)
{
	uint64_t one = 1;

	atomic_store(&u->state[idx], state);
	if (state == C_FILLED)
		atomic_fetch_add(&u->filled, 1);
	if (atomic_fetch_sub(&u->left, 1) == 1) {
		atomic_store(&u->resident_ns, vm_now_ns() - u->vm->t.start);
		if (write(u->done_fd, &one, sizeof(one)) < 0)
			perror("kiln-vmm: restore: signalling the end of loading");
	}
}

/* Bring in chunk idx, with f's scratch. A loader (fault false) takes it
 * unless someone else has; the fault thread (fault true: the page at off
 * is wanted now) loads it even if a loader is on it, and then makes sure
 * that page is there and its waiter woken. */
static int fill(struct uffd *u, struct filler *f, uint64_t idx, bool fault, uint64_t off)
{
	uint64_t start = idx * u->chunk_size, len = snap_chunk_len(u->s, idx);
	uint8_t state = atomic_load(&u->state[idx]);
	struct snap_err err;
	bool mine;
	int r;

	/* In already: a page missing there is a zero page (zero_page()
	 * wakes the waiter of one that is there). */
	if (state == C_FILLED || state == C_ZERO)
		return fault ? fill_zero(u, off) : 0;
	mine = state == C_MISSING &&
	       atomic_compare_exchange_strong(&u->state[idx], &state, (uint8_t)C_BUSY);
	if (!mine && !fault)
		return 0;
	r = snap_read_chunk(u->s, f->ctx, idx, f->buf, &err);
	if (r < 0) {
		vm_stop(u->vm, VM_STOP_ERROR, 1, "restoring memory: %s", err.msg);
		return r;
	}
	if (r == SNAP_CHUNK_DATA && (r = copy_data(u, start, f->buf, len)) < 0) {
		vm_stop(u->vm, VM_STOP_ERROR, 1, "restoring memory: UFFDIO_COPY of chunk %llu: %s",
		        (unsigned long long)idx, strerror(-r));
		return r;
	}
	if (mine)
		chunk_done(u, idx, r == SNAP_CHUNK_ZERO ? C_ZERO : C_FILLED);
	return fault ? fill_zero(u, off) : 0;
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
			if (fill(u, &u->f, off / u->chunk_size, true, off) < 0)
				return -1;
		}
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		vm_stop(u->vm, VM_STOP_ERROR, 1, "restoring memory: reading the userfaultfd: %s",
		        strerror(errno));
		return -1;
	}
	return 0;
}

static void *loader_thread(void *arg)
{
	struct loader *l = arg;
	struct uffd *u = l->u;
	struct pollfd stop = {.fd = u->stop_fd, .events = POLLIN};

	jail_thread(u->vm, JAIL_T_LOADER);
	/* The guest's vCPUs and the fault thread come first: a loader
	 * at the same priority would hold back the guest's first steps by
	 * tens of milliseconds on a host with few CPUs. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), LOADER_NICE);
	if (u->wait_ms && poll(&stop, 1, (int)u->wait_ms) != 0)
		return NULL;
	while (!atomic_load(&u->quit)) {
		uint64_t idx = atomic_fetch_add(&u->next, 1);

		if (idx >= u->nchunks || fill(u, &l->f, idx, false, 0) < 0)
			break;
	}
	return NULL;
}

/* Stop serving: faults waiting now and later are filled by the kernel, zero
 * for pages never copied in (right once every chunk with data is in; after
 * an error the VM is stopping anyway and must not hang in a fault). The
 * userfaultfd is closed too, which unregisters and wakes everything even
 * if UFFDIO_UNREGISTER failed: nothing may be left waiting on a thread
 * that has ended. A loader still at work (after an error) gets ENOENT and
 * stops the VM, which is stopping then anyway. */
static void unregister(struct uffd *u)
{
	struct uffdio_range r = {.start = (uint64_t)(uintptr_t)u->base, .len = u->size};

	ioctl(u->fd, UFFDIO_UNREGISTER, &r);
	/* No loader may use the descriptor once it is closed (its number
	 * could be another file's by then). */
	pthread_mutex_lock(&u->lock);
	atomic_store(&u->quit, true);
	for (unsigned i = 0; i < u->nloaders; i++) {
		if (u->loaders[i].running)
			pthread_join(u->loaders[i].thread, NULL);
		u->loaders[i].running = false;
	}
	pthread_mutex_unlock(&u->lock);
	close(u->fd);
	u->fd = -1;
}

static void *uffd_thread(void *arg)
{
	struct uffd *u = arg;
	struct pollfd p[3] = {{.fd = u->fd, .events = POLLIN},
	                      {.fd = u->stop_fd, .events = POLLIN},
	                      {.fd = u->done_fd, .events = POLLIN}};

	jail_thread(u->vm, JAIL_T_UFFD);
	while (atomic_load(&u->left)) {
		int r = poll(p, 3, -1);

		if (r < 0 && errno != EINTR) {
			vm_stop(u->vm, VM_STOP_ERROR, 1, "restoring memory: poll: %s",
			        strerror(errno));
			unregister(u);
			return NULL;
		}
		if (p[1].revents)
			return NULL; /* uffd_stop() closes the userfaultfd */
		if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			vm_stop(u->vm, VM_STOP_ERROR, 1,
			        "restoring memory: the userfaultfd failed");
			unregister(u);
			return NULL;
		}
		if (p[0].revents && serve_faults(u) < 0) {
			unregister(u);
			return NULL;
		}
	}
	/* Holes left are zero pages: plain faults get them right. */
	atomic_store(&u->vm->mem.lazy, false);
	unregister(u);
	return NULL;
}

static int new_filler(struct filler *f, const struct snap *s, uint64_t chunk_size)
{
	f->buf = malloc(chunk_size);
	f->ctx = snap_chunk_ctx_new(s);
	return f->buf && f->ctx ? 0 : -ENOMEM;
}

static void free_filler(struct filler *f)
{
	snap_chunk_ctx_free(f->ctx);
	free(f->buf);
}

static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

int uffd_start(struct vm *vm, const struct snap *s, bool eager, char *why, size_t len)
{
	struct snap_mem_info mi;
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_MISSING_SHMEM};
	struct uffdio_register reg = {
	    .range = {.start = (uint64_t)(uintptr_t)vm->mem.host, .len = vm->mem.size},
	    .mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	struct uffd *u = calloc(1, sizeof(*u));
	unsigned cpus = snap_default_threads();
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
	atomic_init(&u->left, mi.nchunks);
	u->wait_ms = eager ? 0 : PREFETCH_WAIT_MS;
	u->nloaders = eager ? (cpus < MAX_LOADERS ? cpus : MAX_LOADERS) : 1;
	u->stop_fd = u->done_fd = -1;
	pthread_mutex_init(&u->lock, NULL);
	u->fd = open_uffd();
	u->state = calloc(mi.nchunks, 1);
	vm->snap.uffd = u;
	if (u->fd < 0) {
		err = -errno;
		snprintf(why, len,
		         "--restore-mode lazy needs userfaultfd: %s (run as root, or set "
		         "vm.unprivileged_userfaultfd=1, or use --restore-mode eager)",
		         strerror(errno));
		return err;
	}
	err = u->state ? new_filler(&u->f, s, mi.chunk_size) : -ENOMEM;
	for (unsigned i = 0; i < u->nloaders && !err; i++) {
		u->loaders[i].u = u;
		err = new_filler(&u->loaders[i].f, s, mi.chunk_size);
	}
	if (err) {
		snprintf(why, len, "restoring memory: out of memory");
		return err;
	}
	if (ioctl(u->fd, UFFDIO_API, &api) < 0 || !(api.features & UFFD_FEATURE_MISSING_SHMEM) ||
	    ioctl(u->fd, UFFDIO_REGISTER, &reg) < 0) {
		err = errno ? -errno : -ENOTSUP;
		snprintf(why, len, "userfaultfd on guest memory (shmem): %s", strerror(-err));
		return err;
	}
	u->stop_fd = eventfd(0, EFD_CLOEXEC);
	u->done_fd = eventfd(0, EFD_CLOEXEC);
	if (u->stop_fd < 0 || u->done_fd < 0) {
		err = -errno;
		snprintf(why, len, "restoring memory: eventfd: %s", strerror(errno));
		return err;
	}
	err = start_thread(&u->thread, uffd_thread, u);
	u->running = !err;
	if (err)
		snprintf(why, len, "restoring memory: thread: %s", strerror(-err));
	return err;
}

int uffd_load(struct vm *vm)
{
	struct uffd *u = vm->snap.uffd;
	int err = 0;

	if (!u)
		return 0;
	pthread_mutex_lock(&u->lock);
	for (unsigned i = 0; i < u->nloaders && !err && !atomic_load(&u->quit); i++) {
		err = start_thread(&u->loaders[i].thread, loader_thread, &u->loaders[i]);
		u->loaders[i].running = !err;
	}
	pthread_mutex_unlock(&u->lock);
	return err;
}

void uffd_stats(const struct vm *vm, struct uffd_stats *st)
{
	struct uffd *u = vm->snap.uffd;

	memset(st, 0, sizeof(*st));
	if (!u)
		return;
	st->filled = atomic_load(&u->filled);
	st->faults = atomic_load(&u->faults);
	st->chunks = u->nchunks;
	st->resident_ns = atomic_load(&u->resident_ns);
}

uint64_t *uffd_loaded(const struct vm *vm)
{
	const struct uffd *u = vm->snap.uffd;
	uint64_t *bits;

	if (!u || !(bits = calloc((u->nchunks + 63) / 64, 8)))
		return NULL;
	for (uint64_t i = 0; i < u->nchunks; i++) {
		uint8_t st = atomic_load(&u->state[i]);

		if (st == C_FILLED || st == C_ZERO)
			bits[i / 64] |= 1ULL << (i % 64);
	}
	return bits;
}

void uffd_stop(struct vm *vm)
{
	struct uffd *u = vm->snap.uffd;
	uint64_t one = 1;

	if (!u)
		return;
	atomic_store(&u->quit, true);
	if (u->stop_fd >= 0 && write(u->stop_fd, &one, sizeof(one)) < 0)
		perror("kiln-vmm: restoring memory: stopping");
	if (u->running)
		pthread_join(u->thread, NULL);
	for (unsigned i = 0; i < u->nloaders; i++) {
		if (u->loaders[i].running)
			pthread_join(u->loaders[i].thread, NULL);
		free_filler(&u->loaders[i].f);
	}
	if (u->fd >= 0)
		close(u->fd);
	if (u->stop_fd >= 0)
		close(u->stop_fd);
	if (u->done_fd >= 0)
		close(u->done_fd);
	free_filler(&u->f);
	free((void *)u->state);
	pthread_mutex_destroy(&u->lock);
	free(u);
	vm->snap.uffd = NULL;
}
