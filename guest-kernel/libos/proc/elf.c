// SPDX-License-Identifier: MIT
/*
 * ELF validation for the program loader. Headers are copied out of the buffer
 * before use because the buffer need not be aligned. Sums of untrusted
 * fields are checked for overflow before they are compared with anything.
 */
#include "klib.h"
#include "elf.h"

_Static_assert(sizeof(struct elf64_ehdr) == 64, "Elf64_Ehdr layout");
_Static_assert(sizeof(struct elf64_phdr) == 56, "Elf64_Phdr layout");

/* The bytes at hand (the whole file, or its start) and the file's size. */
struct elf_file {
	const uint8_t *buf;
	size_t len;
	uint64_t size;
};

/* What the program headers said beyond the PT_LOADs, kept for the checks
 * that need all PT_LOADs first. */
struct elf_scan {
	bool have_phdr, have_tls;
	uint64_t phdr_vaddr;
	uint64_t phoff, phsize; /* the program header table in the file */
};

static int fail(const char **err, const char *msg)
{
	if (err)
		*err = msg;
	return -EINVAL;
}

/* [off, off + size) lies inside [0, len). */
static bool in_file(uint64_t off, uint64_t size, uint64_t len)
{
	return off <= len && size <= len - off;
}

/* 0 and 1 mean "no alignment" in ELF. */
static bool align_ok(uint64_t a)
{
	return (a & (a - 1)) == 0 && a <= ELF_MAX_ALIGN;
}

/* [addr, addr + size) lies inside one PT_LOAD's memory image. */
static bool in_load(const struct elf_info *out, uint64_t addr, uint64_t size)
{
	for (unsigned i = 0; i < out->nseg; i++) {
		const struct elf_segment *s = &out->seg[i];

		if (addr >= s->vaddr && size <= s->memsz && addr - s->vaddr <= s->memsz - size)
			return true;
	}
	return false;
}

static int check_type(uint16_t type, const char **err)
{
	switch (type) {
	case ELF_ET_EXEC:
	case ELF_ET_DYN:
		return 0;
	case ELF_ET_REL:
		return fail(err, "elf: relocatable object (ET_REL), not an executable");
	case ELF_ET_CORE:
		return fail(err, "elf: core dump (ET_CORE), not an executable");
	default:
		return fail(err, "elf: e_type is neither ET_EXEC nor ET_DYN");
	}
}

static int check_ehdr(const struct elf64_ehdr *eh, const struct elf_file *f, const char **err)
{
	uint64_t phsize;

	if (memcmp(eh->e_ident, "\177ELF", 4) != 0)
		return fail(err, "elf: bad magic, not an ELF file");
	if (eh->e_ident[ELF_EI_CLASS] != ELF_CLASS64)
		return fail(err, "elf: not a 64-bit ELF file (ELFCLASS64)");
	if (eh->e_ident[ELF_EI_DATA] != ELF_DATA2LSB)
		return fail(err, "elf: not little-endian (ELFDATA2LSB)");
	if (eh->e_ident[ELF_EI_VERSION] != ELF_EV_CURRENT || eh->e_version != ELF_EV_CURRENT)
		return fail(err, "elf: unknown ELF version");
	if (eh->e_machine != ELF_EM_X86_64)
		return fail(err, "elf: not an x86-64 program (e_machine is not EM_X86_64)");
	if (check_type(eh->e_type, err))
		return -EINVAL;
	if (eh->e_phentsize != sizeof(struct elf64_phdr))
		return fail(err, "elf: e_phentsize is not 56");
	if (eh->e_phnum == 0)
		return fail(err, "elf: no program headers");
	if (eh->e_phnum == ELF_PN_XNUM)
		return fail(err, "elf: extended program header numbering (PN_XNUM) not supported");
	if (eh->e_phnum > ELF_MAX_PHNUM)
		return fail(err, "elf: more than 64 program headers");
	if (eh->e_phoff < sizeof(struct elf64_ehdr))
		return fail(err, "elf: program headers overlap the ELF header");
	/* phnum <= 64, so the product cannot overflow. */
	phsize = (uint64_t)eh->e_phnum * eh->e_phentsize;
	if (!in_file(eh->e_phoff, phsize, f->size))
		return fail(err, "elf: program header table extends past end of file");
	if (!in_file(eh->e_phoff, phsize, f->len))
		return fail(err, "elf: program header table lies beyond the bytes read");
	return 0;
}

static uint32_t prot_of(uint32_t p_flags)
{
	return (p_flags & ELF_PF_R ? ELF_PROT_READ : 0) |
	       (p_flags & ELF_PF_W ? ELF_PROT_WRITE : 0) | (p_flags & ELF_PF_X ? ELF_PROT_EXEC : 0);
}

static int check_load(const struct elf_info *out, const struct elf64_phdr *ph, uint64_t size,
                      const char **err)
{
	uint64_t end;

	if (ph->p_filesz > ph->p_memsz)
		return fail(err, "elf: PT_LOAD p_filesz > p_memsz");
	if (!in_file(ph->p_offset, ph->p_filesz, size))
		return fail(err, "elf: PT_LOAD p_offset + p_filesz extends past end of file");
	/* Leave room to round the end up to a page. */
	if (__builtin_add_overflow(ph->p_vaddr, ph->p_memsz, &end) ||
	    end > UINT64_MAX - (ELF_PAGE_SIZE - 1))
		return fail(err, "elf: PT_LOAD p_vaddr + p_memsz overflows");
	/* ET_DYN addresses are relative to a bias the loader picks; the span
	 * check in finish() bounds them. */
	if (out->type == ELF_ET_EXEC && ph->p_vaddr < ELF_USER_MIN)
		return fail(err, "elf: PT_LOAD below 64 KiB (vm.mmap_min_addr)");
	if (out->type == ELF_ET_EXEC && end > ELF_USER_LIMIT)
		return fail(err, "elf: PT_LOAD extends above the end of user space");
	if ((ph->p_vaddr - ph->p_offset) % ELF_PAGE_SIZE)
		return fail(err, "elf: PT_LOAD p_vaddr and p_offset differ modulo the page size");
	if (!align_ok(ph->p_align))
		return fail(err, "elf: PT_LOAD p_align is not a power of two up to 1 GiB");
	if (out->nseg > 0) {
		const struct elf_segment *prev = &out->seg[out->nseg - 1];

		if (ph->p_vaddr < prev->vaddr)
			return fail(err, "elf: PT_LOAD segments not in ascending p_vaddr order");
		if (ph->p_vaddr - prev->vaddr < prev->memsz)
			return fail(err, "elf: PT_LOAD segments overlap");
	}
	if (out->nseg == ELF_MAX_SEGMENTS)
		return fail(err, "elf: more than 16 PT_LOAD segments");
	return 0;
}

static int add_load(struct elf_info *out, const struct elf64_phdr *ph, uint64_t size,
                    const char **err)
{
	struct elf_segment *s;

	if (check_load(out, ph, size, err))
		return -EINVAL;
	s = &out->seg[out->nseg++];
	s->vaddr = ph->p_vaddr;
	s->memsz = ph->p_memsz;
	s->offset = ph->p_offset;
	s->filesz = ph->p_filesz;
	s->prot = prot_of(ph->p_flags);
	out->align = MAX(out->align, ph->p_align);
	return 0;
}

static int set_interp(struct elf_info *out, const struct elf64_phdr *ph, const struct elf_file *f,
                      const char **err)
{
	const char *path, *nul;

	if (out->interp)
		return fail(err, "elf: more than one PT_INTERP");
	if (!in_file(ph->p_offset, ph->p_filesz, f->size))
		return fail(err, "elf: PT_INTERP extends past end of file");
	if (!in_file(ph->p_offset, ph->p_filesz, f->len))
		return fail(err, "elf: PT_INTERP lies beyond the bytes read");
	path = (const char *)f->buf + ph->p_offset;
	nul = memchr(path, '\0', ph->p_filesz);
	if (!nul)
		return fail(err, "elf: PT_INTERP path not NUL-terminated");
	if (nul == path)
		return fail(err, "elf: PT_INTERP path is empty");
	if ((size_t)(nul - path) > ELF_INTERP_MAX)
		return fail(err, "elf: PT_INTERP path longer than 4095 bytes");
	out->interp = path;
	out->interp_len = nul - path;
	return 0;
}

static int set_tls(struct elf_info *out, struct elf_scan *s, const struct elf64_phdr *ph,
                   uint64_t size, const char **err)
{
	uint64_t end;

	if (s->have_tls)
		return fail(err, "elf: more than one PT_TLS");
	if (ph->p_filesz > ph->p_memsz)
		return fail(err, "elf: PT_TLS p_filesz > p_memsz");
	if (!in_file(ph->p_offset, ph->p_filesz, size))
		return fail(err, "elf: PT_TLS extends past end of file");
	if (__builtin_add_overflow(ph->p_vaddr, ph->p_memsz, &end))
		return fail(err, "elf: PT_TLS p_vaddr + p_memsz overflows");
	if (!align_ok(ph->p_align))
		return fail(err, "elf: PT_TLS p_align is not a power of two up to 1 GiB");
	s->have_tls = true;
	out->tls_vaddr = ph->p_vaddr;
	out->tls_filesz = ph->p_filesz;
	out->tls_memsz = ph->p_memsz;
	out->tls_align = ph->p_align;
	return 0;
}

static int scan_phdr(struct elf_info *out, struct elf_scan *s, const struct elf64_phdr *ph,
                     const struct elf_file *f, const char **err)
{
	switch (ph->p_type) {
	case ELF_PT_LOAD:
		return add_load(out, ph, f->size, err);
	case ELF_PT_INTERP:
		return set_interp(out, ph, f, err);
	case ELF_PT_TLS:
		return set_tls(out, s, ph, f->size, err);
	case ELF_PT_PHDR:
		if (s->have_phdr)
			return fail(err, "elf: more than one PT_PHDR");
		s->have_phdr = true;
		s->phdr_vaddr = ph->p_vaddr;
		return 0;
	case ELF_PT_GNU_STACK:
		out->exec_stack = ph->p_flags & ELF_PF_X;
		return 0;
	default:
		return 0; /* PT_DYNAMIC, PT_NOTE, PT_GNU_RELRO ...: not the loader's business */
	}
}

/* Like Linux without PT_PHDR: the PT_LOAD whose file range holds the table. */
static uint64_t phdr_from_loads(const struct elf_info *out, const struct elf_scan *s)
{
	for (unsigned i = 0; i < out->nseg; i++) {
		const struct elf_segment *g = &out->seg[i];

		if (s->phoff >= g->offset && s->phoff - g->offset <= g->filesz &&
		    s->phsize <= g->filesz - (s->phoff - g->offset))
			return g->vaddr + (s->phoff - g->offset);
	}
	return 0;
}

/* Checks that need every PT_LOAD. */
static int finish(struct elf_info *out, const struct elf_scan *s, const char **err)
{
	const struct elf_segment *last;
	uint64_t e = out->entry;
	bool entry_ok = false;

	if (out->nseg == 0)
		return fail(err, "elf: no PT_LOAD segment");
	last = &out->seg[out->nseg - 1];
	out->lo = ALIGN_DOWN(out->seg[0].vaddr, ELF_PAGE_SIZE);
	out->hi = ALIGN_UP(last->vaddr + last->memsz, ELF_PAGE_SIZE);
	if (out->hi - out->lo > ELF_MAX_SPAN)
		return fail(err, "elf: PT_LOAD segments span more than 64 GiB");
	out->align = MAX(out->align, ELF_PAGE_SIZE);
	for (unsigned i = 0; i < out->nseg; i++) {
		const struct elf_segment *g = &out->seg[i];

		if ((g->prot & ELF_PROT_EXEC) && e >= g->vaddr && e - g->vaddr < g->memsz)
			entry_ok = true;
	}
	if (!entry_ok)
		return fail(err, "elf: entry point not inside an executable PT_LOAD");
	if (s->have_phdr && !in_load(out, s->phdr_vaddr, s->phsize))
		return fail(err, "elf: PT_PHDR not inside a PT_LOAD");
	out->phdr_vaddr = s->have_phdr ? s->phdr_vaddr : phdr_from_loads(out, s);
	if (s->have_tls && !in_load(out, out->tls_vaddr, out->tls_filesz))
		return fail(err, "elf: PT_TLS initialisation image not inside a PT_LOAD");
	return 0;
}

static int parse(const struct elf_file *f, struct elf_info *out, const char **err)
{
	struct elf64_ehdr eh;
	struct elf_scan s = {0};

	if (f->len > f->size)
		return fail(err, "elf: more bytes read than the file has");
	if (!f->buf || f->len < sizeof(eh))
		return fail(err, "elf: file shorter than an ELF header");
	memcpy(&eh, f->buf, sizeof(eh));
	if (check_ehdr(&eh, f, err))
		return -EINVAL;
	out->type = eh.e_type;
	out->entry = eh.e_entry;
	out->phnum = eh.e_phnum;
	out->phentsize = eh.e_phentsize;
	s.phoff = eh.e_phoff;
	s.phsize = (uint64_t)eh.e_phnum * eh.e_phentsize;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		struct elf64_phdr ph;

		memcpy(&ph, f->buf + eh.e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		if (scan_phdr(out, &s, &ph, f, err))
			return -EINVAL;
	}
	return finish(out, &s, err);
}

int elf_parse_headers(const void *buf, size_t len, uint64_t file_size, struct elf_info *out,
                      const char **err)
{
	struct elf_file f = {.buf = buf, .len = len, .size = file_size};
	int r;

	memset(out, 0, sizeof(*out));
	if (err)
		*err = NULL;
	r = parse(&f, out, err);
	if (r)
		memset(out, 0, sizeof(*out));
	return r;
}

int elf_parse(const void *buf, size_t len, struct elf_info *out, const char **err)
{
	return elf_parse_headers(buf, len, len, out, err);
}
