/* SPDX-License-Identifier: MIT */
/* Guest RAM: a memfd (so it can be snapshotted and shared) mapped once,
 * anonymous memory in huge pages (faster first touches, see mem_init_thp),
 * or a private mapping of a template's memory (vmm/template.c). */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vm.h"

#define HUGE_PAGE (2ULL << 20)

int mem_init(struct guest_mem *mem, uint64_t size)
{
	int err;

	mem->size = size;
	mem->low_size = size < KILN_GPA_HOLE_START ? size : KILN_GPA_HOLE_START;
	mem->fd = memfd_create("kiln-guest-ram", MFD_CLOEXEC);
	if (mem->fd < 0)
		return -errno;
	if (ftruncate(mem->fd, (off_t)size) < 0)
		goto fail;
	/* MAP_NORESERVE: untouched guest pages cost the host nothing. */
	mem->host =
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, mem->fd, 0);
	if (mem->host == MAP_FAILED)
		goto fail;
	mem->marks = calloc((size / 4096 + 63) / 64, 8);
	return 0;
fail:
	err = -errno;
	close(mem->fd);
	mem->fd = -1;
	mem->host = NULL;
	return err;
}

/*
 * On PVM hosts (shadow paging) the first guest touch of a page costs a host
 * fault, 5-25 us. With 2 MiB host pages and 2 MiB guest mappings there is
 * one such fault per 2 MiB. shmem (a memfd) gets no huge pages unless the
 * host's shmem_enabled allows them, which it does not by default; private
 * anonymous memory with MADV_HUGEPAGE does with THP "always" or "madvise".
 * The price: host memory is taken 2 MiB at a time wherever the guest
 * touches a page, and snapshots cannot find untouched memory from a file.
 *
 * Huge pages need the mapping 2 MiB-aligned: map 2 MiB more than needed,
 * keep the aligned part.
 */
static int mem_init_thp(struct guest_mem *mem, uint64_t size)
{
	uint8_t *p, *host;
	int err;

	mem->size = size;
	mem->low_size = size < KILN_GPA_HOLE_START ? size : KILN_GPA_HOLE_START;
	mem->fd = -1;
	mem->anon = true;
	p = mmap(NULL, size + HUGE_PAGE, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	host = (uint8_t *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (host > p)
		munmap(p, (size_t)(host - p));
	munmap(host + size, (size_t)(p + HUGE_PAGE - host));
	if (madvise(host, size, MADV_HUGEPAGE) < 0) {
		err = -errno;
		munmap(host, size);
		return err;
	}
	mem->host = host;
	return 0;
}

int mem_init_backed(struct guest_mem *mem, uint64_t size, enum mem_backing backing)
{
	return backing == MEM_BACKING_THP ? mem_init_thp(mem, size) : mem_init(mem, size);
}

int mem_init_private(struct guest_mem *mem, uint64_t size, int fd)
{
	mem->size = size;
	mem->low_size = size < KILN_GPA_HOLE_START ? size : KILN_GPA_HOLE_START;
	mem->fd = fd;
	mem->private = true;
	mem->host =
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, mem->fd, 0);
	if (mem->host == MAP_FAILED) {
		mem->host = NULL;
		mem->fd = -1;
		return -errno;
	}
	mem->marks = calloc((size / 4096 + 63) / 64, 8);
	return 0;
}

void mem_destroy(struct guest_mem *mem)
{
	if (mem->initrd)
		munmap((void *)mem->initrd, mem->initrd_map_size);
	mem->initrd = NULL;
	if (mem->host)
		munmap(mem->host, mem->size);
	if (mem->fd >= 0)
		close(mem->fd);
	mem->host = NULL;
	mem->fd = -1;
	free((void *)mem->marks);
	mem->marks = NULL;
}

/* The pages of [off, off + len) of RAM, for the next snapshot (vmm/dirty.c):
 * whoever asks for guest memory may write it. */
static void mark(const struct guest_mem *mem, uint64_t off, uint64_t len)
{
	uint64_t p = off / 4096, last = (off + len - 1) / 4096;

	while (p <= last) {
		uint64_t n = 64 - p % 64 < last - p + 1 ? 64 - p % 64 : last - p + 1;
		uint64_t bits = (n == 64 ? ~0ULL : (1ULL << n) - 1) << (p % 64);
		_Atomic uint64_t *w = &mem->marks[p / 64];

		if ((atomic_load_explicit(w, memory_order_relaxed) & bits) != bits)
			atomic_fetch_or_explicit(w, bits, memory_order_relaxed);
		p += n;
	}
}

void *gpa_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	uint64_t high_size = mem->size - mem->low_size, off;

	if (!mem->host)
		return NULL;
	if (gpa < mem->low_size) {
		if (len > mem->low_size - gpa)
			return NULL;
		off = gpa;
	} else {
		if (gpa < KILN_GPA_HIGH_RAM)
			return NULL;
		gpa -= KILN_GPA_HIGH_RAM;
		if (gpa >= high_size || len > high_size - gpa)
			return NULL;
		off = mem->low_size + gpa;
	}
	if (mem->marks && len)
		mark(mem, off, len);
	return mem->host + off;
}

bool gpa_is_ram(const struct guest_mem *mem, uint64_t gpa)
{
	return gpa_ptr(mem, gpa, 1) != NULL;
}

/* [gpa, gpa + len) inside the window of size bytes at base (and mapped). */
static const void *in_window(const uint8_t *host, uint64_t base, uint64_t size, uint64_t gpa,
                             uint64_t len)
{
	if (!host || gpa < base || gpa - base >= size || len > size - (gpa - base))
		return NULL;
	return host + (gpa - base);
}

const void *gpa_ptr_ro(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	const void *p = in_window(mem->pmem, KILN_GPA_PMEM, mem->pmem_size, gpa, len);

	if (!p)
		p = in_window(mem->initrd, KILN_GPA_INITRD, mem->initrd_map_size, gpa, len);
	return p ? p : gpa_ptr(mem, gpa, len);
}
