/* SPDX-License-Identifier: MIT */
/* Guest RAM: a memfd (so it can be snapshotted and shared) mapped once, or
 * a private mapping of a template's memory (vmm/template.c). */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vm.h"

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
	return 0;
fail:
	err = -errno;
	close(mem->fd);
	mem->fd = -1;
	mem->host = NULL;
	return err;
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
}

void *gpa_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	uint64_t high_size = mem->size - mem->low_size;

	if (!mem->host)
		return NULL;
	if (gpa < mem->low_size) {
		if (len > mem->low_size - gpa)
			return NULL;
		return mem->host + gpa;
	}
	if (gpa < KILN_GPA_HIGH_RAM)
		return NULL;
	gpa -= KILN_GPA_HIGH_RAM;
	if (gpa >= high_size || len > high_size - gpa)
		return NULL;
	return mem->host + mem->low_size + gpa;
}

bool gpa_is_ram(const struct guest_mem *mem, uint64_t gpa)
{
	return gpa_ptr(mem, gpa, 1) != NULL;
}
