/* SPDX-License-Identifier: MIT */
/*
 * Kernel image loader: an ELF64 x86-64 executable whose PT_LOAD segments are
 * copied to their physical addresses, plus the "KILN" note that describes
 * entry points and interrupt handlers (include/kiln/boot.h).
 *
 * The image is a file the user pointed us at, so every offset and size is
 * checked before use; nothing here trusts the file.
 */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "vm.h"

#define PAGE_SIZE 4096ULL

static bool in_file(size_t len, uint64_t off, uint64_t size)
{
	return off <= len && size <= len - off;
}

static bool va_ok(uint64_t va, uint64_t size)
{
	return va >= KILN_VA_SV_START && va < KILN_VA_LIBOS_END && size <= KILN_VA_LIBOS_END - va &&
	       ((va < KILN_VA_SV_END) == (va + size <= KILN_VA_SV_END));
}

static int check_ehdr(const Elf64_Ehdr *eh, size_t len, const char **err)
{
	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_machine != EM_X86_64) {
		*err = "not an ELF64 x86-64 file";
		return -EINVAL;
	}
	if (eh->e_type != ET_EXEC) {
		*err = "not an executable (ET_EXEC) ELF file";
		return -EINVAL;
	}
	if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phnum > 64 ||
	    !in_file(len, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))) {
		*err = "program header table is missing or lies outside the file";
		return -EINVAL;
	}
	return 0;
}

/* Guest memory is fresh (all zero) when the kernel is loaded, so a
 * segment's bss needs no clearing. A memfd is written with pwrite: the pages
 * are allocated without a page fault each and not cleared first, 2-3x faster
 * than a memcpy through the mapping. */
static int copy_in(const struct guest_mem *mem, uint8_t *dst, const uint8_t *src, size_t n)
{
	off_t off = (off_t)(dst - mem->host);

	if (mem->fd < 0 || mem->private) {
		memcpy(dst, src, n);
		return 0;
	}
	while (n) {
		ssize_t w = pwrite(mem->fd, src, n, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		src += w;
		off += w;
		n -= (size_t)w;
	}
	return 0;
}

static int load_segment(struct guest_mem *mem, const uint8_t *buf, size_t len, const Elf64_Phdr *ph,
                        struct kernel_info *ki, const char **err)
{
	struct kernel_seg *s;
	uint8_t *dst;

	if (ph->p_filesz > ph->p_memsz || !in_file(len, ph->p_offset, ph->p_filesz)) {
		*err = "a PT_LOAD segment lies outside the file";
		return -EINVAL;
	}
	if (!va_ok(ph->p_vaddr, ph->p_memsz) || (ph->p_vaddr & (PAGE_SIZE - 1)) ||
	    (ph->p_paddr & (PAGE_SIZE - 1))) {
		*err = "a PT_LOAD segment is not page-aligned inside the kernel address range";
		return -EINVAL;
	}
	if (ph->p_paddr < KILN_GPA_KERNEL_MIN || ph->p_memsz > KILN_GPA_HOLE_START ||
	    ph->p_paddr > KILN_GPA_HOLE_START - ph->p_memsz) {
		*err = "a PT_LOAD segment's physical address is below 2 MiB or above 3 GiB";
		return -EINVAL;
	}
	for (int i = 0; i < ki->nr_seg; i++) {
		const struct kernel_seg *o = &ki->seg[i];
		if (ph->p_paddr < o->paddr + o->memsz && o->paddr < ph->p_paddr + ph->p_memsz) {
			*err = "PT_LOAD segments overlap";
			return -EINVAL;
		}
	}
	if (ki->nr_seg == KERNEL_MAX_SEGS) {
		*err = "too many PT_LOAD segments";
		return -EINVAL;
	}
	dst = gpa_ptr(mem, ph->p_paddr, ph->p_memsz);
	if (!dst) {
		*err = "the kernel does not fit in guest memory (try a larger --mem)";
		return -ENOSPC;
	}
	if (copy_in(mem, dst, buf + ph->p_offset, ph->p_filesz)) {
		*err = "cannot write the kernel into guest memory (out of host memory?)";
		return -ENOMEM;
	}

	s = &ki->seg[ki->nr_seg++];
	s->vaddr = ph->p_vaddr;
	s->paddr = ph->p_paddr;
	s->memsz = ph->p_memsz;
	s->flags = ph->p_flags;
	if (!ki->pa_start || ph->p_paddr < ki->pa_start)
		ki->pa_start = ph->p_paddr;
	if (ph->p_paddr + ph->p_memsz > ki->pa_end)
		ki->pa_end = (ph->p_paddr + ph->p_memsz + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	return 0;
}

/* Find the KILN boot note in a PT_NOTE segment. */
static int read_note(const uint8_t *buf, size_t len, const Elf64_Phdr *ph,
                     struct kiln_boot_image *img)
{
	uint64_t off = ph->p_offset, end;

	if (!in_file(len, ph->p_offset, ph->p_filesz))
		return -EINVAL;
	end = ph->p_offset + ph->p_filesz;
	while (end - off >= sizeof(Elf64_Nhdr)) {
		const Elf64_Nhdr *n = (const void *)(buf + off);
		uint64_t name = off + sizeof(*n);
		uint64_t desc = name + ((n->n_namesz + 3ULL) & ~3ULL);
		uint64_t next = desc + ((n->n_descsz + 3ULL) & ~3ULL);

		if (next > end)
			return -EINVAL;
		if (n->n_type == KILN_NOTE_BOOT && n->n_namesz == sizeof(KILN_NOTE_NAME) &&
		    !memcmp(buf + name, KILN_NOTE_NAME, sizeof(KILN_NOTE_NAME))) {
			if (n->n_descsz != sizeof(*img))
				return -EINVAL;
			memcpy(img, buf + desc, sizeof(*img));
			return 1;
		}
		off = next;
	}
	return 0;
}

/* An address must lie inside a loaded segment, optionally an executable one. */
static bool mapped(const struct kernel_info *ki, uint64_t va, bool exec)
{
	for (int i = 0; i < ki->nr_seg; i++) {
		const struct kernel_seg *s = &ki->seg[i];
		if (va >= s->vaddr && va - s->vaddr < s->memsz && (!exec || (s->flags & PF_X)))
			return true;
	}
	return false;
}

static int check_image(const struct kernel_info *ki, const char **err)
{
	const struct kiln_boot_image *img = &ki->image;

	if (img->magic != KILN_BOOT_IMAGE_MAGIC || img->version < KILN_BOOT_VERSION_MIN ||
	    img->version > KILN_BOOT_VERSION) {
		*err = "boot note has the wrong magic or version (kernel and VMM do not match)";
		return -EINVAL;
	}
	if (!mapped(ki, img->entry, true) || !mapped(ki, img->syscall_entry, true) ||
	    !mapped(ki, img->syscall_entry_cpl3, true) || !mapped(ki, img->boot_stack - 8, false) ||
	    !mapped(ki, img->rsp0 - 8, false)) {
		*err = "boot note points outside the image";
		return -EINVAL;
	}
	if (img->syscall_entry >= KILN_VA_SV_END || img->syscall_entry_cpl3 < KILN_VA_LIBOS_START ||
	    img->syscall_entry_cpl3 >= KILN_VA_LIBOS_END) {
		*err = "boot note: a syscall entry lies on the wrong kind of page (supervisor for "
		       "CPL0, library OS for CPL3)";
		return -EINVAL;
	}
	for (int i = 0; i < 7; i++) {
		if (img->ist[i] && !mapped(ki, img->ist[i] - 8, false)) {
			*err = "boot note: an IST stack lies outside the image";
			return -EINVAL;
		}
	}
	for (int v = 0; v < KILN_NR_VECTORS; v++) {
		if (img->vector[v] && !mapped(ki, img->vector[v], true)) {
			*err = "boot note: an interrupt handler lies outside the image";
			return -EINVAL;
		}
		if ((img->vector_flags[v] & KILN_VF_IST_MASK) &&
		    !img->ist[(img->vector_flags[v] & KILN_VF_IST_MASK) - 1]) {
			*err = "boot note: a gate uses an IST slot with no stack";
			return -EINVAL;
		}
	}
	return 0;
}

int kernel_load(struct guest_mem *mem, const void *buf, size_t len, struct kernel_info *ki,
                const char **err)
{
	const uint8_t *b = buf;
	const Elf64_Ehdr *eh = buf;
	const Elf64_Phdr *ph;
	int found = 0, rc;

	memset(ki, 0, sizeof(*ki));
	rc = check_ehdr(eh, len, err);
	if (rc)
		return rc;
	ph = (const Elf64_Phdr *)(b + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && ph[i].p_memsz) {
			rc = load_segment(mem, b, len, &ph[i], ki, err);
			if (rc)
				return rc;
		} else if (ph[i].p_type == PT_NOTE && !found) {
			found = read_note(b, len, &ph[i], &ki->image);
			if (found < 0) {
				*err = "malformed PT_NOTE segment";
				return -EINVAL;
			}
		}
	}
	if (!ki->nr_seg) {
		*err = "no loadable segments";
		return -EINVAL;
	}
	if (!found) {
		*err = "no KILN boot note: not a kiln-kernel image";
		return -EINVAL;
	}
	return check_image(ki, err);
}
