// SPDX-License-Identifier: MIT
/*
 * Unit tests for the guest's ELF validator. Images are built by hand from a
 * valid static ET_EXEC and broken one field at a time; real programs from the
 * host and from gcc are cross-checked against readelf. Every parse runs on an
 * exact-size heap copy so that ASan catches any read past the end.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "klib.h"
#include "../../guest-kernel/libos/proc/elf.h"

#define IMG_LEN 0x2100

/* ------------------------------------------------------------ image builder */

struct img {
	struct elf64_ehdr eh;
	struct elf64_phdr ph[24];
	uint8_t file[0x3000]; /* file contents besides the headers */
	size_t len;
	char interp[4096]; /* elf_info.interp, copied out of the freed buffer */
};

static struct elf64_phdr *add_ph(struct img *m, uint32_t type, uint32_t flags, uint64_t off,
                                 uint64_t vaddr, uint64_t filesz, uint64_t memsz, uint64_t align)
{
	struct elf64_phdr *p = &m->ph[m->eh.e_phnum++];

	ck_assert_uint_le(m->eh.e_phnum, ARRAY_SIZE(m->ph));
	*p = (struct elf64_phdr){.p_type = type,
	                         .p_flags = flags,
	                         .p_offset = off,
	                         .p_vaddr = vaddr,
	                         .p_paddr = vaddr,
	                         .p_filesz = filesz,
	                         .p_memsz = memsz,
	                         .p_align = align};
	return p;
}

/* A valid static ET_EXEC: R headers page, RX text, RW data + bss. */
static void img_exec(struct img *m)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->eh.e_ident, "\177ELF", 4);
	m->eh.e_ident[ELF_EI_CLASS] = ELF_CLASS64;
	m->eh.e_ident[ELF_EI_DATA] = ELF_DATA2LSB;
	m->eh.e_ident[ELF_EI_VERSION] = ELF_EV_CURRENT;
	m->eh.e_type = ELF_ET_EXEC;
	m->eh.e_machine = ELF_EM_X86_64;
	m->eh.e_version = ELF_EV_CURRENT;
	m->eh.e_entry = 0x401000;
	m->eh.e_phoff = sizeof(struct elf64_ehdr);
	m->eh.e_ehsize = sizeof(struct elf64_ehdr);
	m->eh.e_phentsize = sizeof(struct elf64_phdr);
	add_ph(m, ELF_PT_LOAD, ELF_PF_R, 0, 0x400000, 0x1000, 0x1000, 0x1000);
	add_ph(m, ELF_PT_LOAD, ELF_PF_R | ELF_PF_X, 0x1000, 0x401000, 0x1000, 0x1000, 0x1000);
	add_ph(m, ELF_PT_LOAD, ELF_PF_R | ELF_PF_W, 0x2000, 0x402000, 0x100, 0x2000, 0x1000);
	add_ph(m, ELF_PT_GNU_STACK, ELF_PF_R | ELF_PF_W, 0, 0, 0, 0, 16);
	m->len = IMG_LEN;
}

/* The same layout as a static-pie ET_DYN linked at 0. */
static void img_dyn(struct img *m)
{
	img_exec(m);
	m->eh.e_type = ELF_ET_DYN;
	m->eh.e_entry -= 0x400000;
	for (int i = 0; i < 3; i++)
		m->ph[i].p_vaddr -= 0x400000;
}

/* Serialises into an exact-size heap buffer; the caller frees it. */
static uint8_t *img_build(const struct img *m)
{
	uint8_t *b = malloc(m->len ? m->len : 1);
	size_t phsize = (size_t)m->eh.e_phnum * sizeof(struct elf64_phdr);

	ck_assert_ptr_nonnull(b);
	ck_assert_uint_le(m->len, sizeof(m->file));
	memcpy(b, m->file, m->len);
	phsize = MIN(phsize, sizeof(m->ph));
	if (m->eh.e_phoff < m->len)
		memcpy(b + m->eh.e_phoff, m->ph, MIN(phsize, m->len - m->eh.e_phoff));
	/* Last, so that a table placed over it (e_phoff < 64) does not hide it. */
	memcpy(b, &m->eh, MIN(m->len, sizeof(m->eh)));
	return b;
}

static int img_parse(struct img *m, struct elf_info *info, const char **err)
{
	uint8_t *b = img_build(m);
	int r = elf_parse(b, m->len, info, err);

	if (r == 0 && info->interp) {
		ck_assert_uint_lt(info->interp_len, sizeof(m->interp));
		ck_assert_ptr_eq(memchr(info->interp, 0, info->interp_len + 1),
		                 info->interp + info->interp_len);
		memcpy(m->interp, info->interp, info->interp_len + 1);
		info->interp = m->interp;
	}
	free(b);
	return r;
}

static void expect_ok(struct img *m, struct elf_info *info)
{
	const char *err = "unset";

	ck_assert_msg(img_parse(m, info, &err) == 0, "rejected: %s", err ? err : "?");
	ck_assert_ptr_null(err);
}

static void expect_fail(struct img *m, const char *want)
{
	struct elf_info info;
	const char *err = NULL;

	ck_assert_int_eq(img_parse(m, &info, &err), -EINVAL);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(err, want), "error \"%s\" lacks \"%s\"", err, want);
	ck_assert_uint_eq(info.nseg, 0); /* *out is cleared on error */
	ck_assert_ptr_null(info.interp);
}

/* What the loader relies on, for any image elf_parse() accepts. */
static void check_invariants(const struct elf_info *info, size_t len)
{
	ck_assert(info->type == ELF_ET_EXEC || info->type == ELF_ET_DYN);
	ck_assert_uint_ge(info->nseg, 1);
	ck_assert_uint_le(info->nseg, ELF_MAX_SEGMENTS);
	ck_assert_uint_lt(info->lo, info->hi);
	ck_assert_uint_le(info->hi - info->lo, ELF_MAX_SPAN);
	ck_assert_uint_eq(info->lo % ELF_PAGE_SIZE, 0);
	ck_assert_uint_eq(info->hi % ELF_PAGE_SIZE, 0);
	if (info->type == ELF_ET_EXEC)
		ck_assert_uint_le(info->hi, ELF_USER_LIMIT);
	for (unsigned i = 0; i < info->nseg; i++) {
		const struct elf_segment *s = &info->seg[i];

		ck_assert_uint_le(s->filesz, s->memsz);
		ck_assert_uint_le(s->offset, len);
		ck_assert_uint_le(s->filesz, len - s->offset);
		ck_assert_uint_ge(s->vaddr, info->lo);
		ck_assert_uint_le(s->vaddr + s->memsz, info->hi);
		if (i)
			ck_assert_uint_ge(s->vaddr,
			                  info->seg[i - 1].vaddr + info->seg[i - 1].memsz);
	}
	ck_assert(info->entry >= info->lo && info->entry < info->hi);
	if (info->interp)
		ck_assert_uint_eq(strlen(info->interp), info->interp_len);
}

/* ------------------------------------------------------------ valid images */

START_TEST(test_static_exec)
{
	struct img m;
	struct elf_info info;

	img_exec(&m);
	expect_ok(&m, &info);
	ck_assert_int_eq(info.type, ELF_ET_EXEC);
	ck_assert_uint_eq(info.entry, 0x401000);
	ck_assert_uint_eq(info.phnum, 4);
	ck_assert_uint_eq(info.phentsize, 56);
	ck_assert_uint_eq(info.phdr_vaddr, 0x400040);
	ck_assert_uint_eq(info.lo, 0x400000);
	ck_assert_uint_eq(info.hi, 0x404000);
	ck_assert_uint_eq(info.align, 0x1000);
	ck_assert_uint_eq(info.nseg, 3);
	ck_assert_uint_eq(info.seg[0].prot, ELF_PROT_READ);
	ck_assert_uint_eq(info.seg[1].prot, ELF_PROT_READ | ELF_PROT_EXEC);
	ck_assert_uint_eq(info.seg[2].prot, ELF_PROT_READ | ELF_PROT_WRITE);
	ck_assert_uint_eq(info.seg[2].offset, 0x2000);
	ck_assert_uint_eq(info.seg[2].filesz, 0x100);
	ck_assert_uint_eq(info.seg[2].memsz, 0x2000);
	ck_assert(!info.exec_stack);
	ck_assert_ptr_null(info.interp);
	ck_assert_uint_eq(info.tls_memsz, 0);
	check_invariants(&info, m.len);
}
END_TEST

START_TEST(test_static_pie)
{
	struct img m;
	struct elf_info info;

	img_dyn(&m);
	expect_ok(&m, &info);
	ck_assert_int_eq(info.type, ELF_ET_DYN);
	ck_assert_uint_eq(info.entry, 0x1000);
	ck_assert_uint_eq(info.lo, 0);
	ck_assert_uint_eq(info.hi, 0x4000);
	ck_assert_uint_eq(info.phdr_vaddr, 0x40);
	check_invariants(&info, m.len);
}
END_TEST

START_TEST(test_pt_phdr)
{
	struct img m;
	struct elf_info info;

	img_exec(&m);
	add_ph(&m, ELF_PT_PHDR, ELF_PF_R, 0x40, 0x400040, 5 * 56, 5 * 56, 8);
	expect_ok(&m, &info);
	ck_assert_uint_eq(info.phdr_vaddr, 0x400040);

	m.ph[4].p_vaddr = 0x500000;
	expect_fail(&m, "PT_PHDR not inside a PT_LOAD");
	m.ph[4].p_vaddr = 0x401fff; /* starts in text, runs past its end */
	expect_fail(&m, "PT_PHDR not inside a PT_LOAD");
	m.ph[4].p_vaddr = 0x400040;
	add_ph(&m, ELF_PT_PHDR, ELF_PF_R, 0x40, 0x400040, 6 * 56, 6 * 56, 8);
	expect_fail(&m, "more than one PT_PHDR");
}
END_TEST

START_TEST(test_phdrs_unmapped)
{
	struct img m;
	struct elf_info info;

	img_exec(&m);
	m.ph[0].p_filesz = 0x40; /* maps the ELF header only */
	expect_ok(&m, &info);
	ck_assert_uint_eq(info.phdr_vaddr, 0);
}
END_TEST

START_TEST(test_shared_page)
{
	struct img m;
	struct elf_info info;

	/* Text ends and data starts inside page 0x401000: allowed. */
	img_exec(&m);
	m.ph[1].p_filesz = m.ph[1].p_memsz = 0x800;
	m.ph[2].p_offset = 0x1800;
	m.ph[2].p_vaddr = 0x401800;
	expect_ok(&m, &info);
	ck_assert_uint_eq(info.hi, 0x404000);
	check_invariants(&info, m.len);
}
END_TEST

START_TEST(test_interp)
{
	static const char ld[] = "/lib64/ld-linux-x86-64.so.2";
	struct img m;
	struct elf_info info;

	img_dyn(&m);
	memcpy(m.file + 0x300, ld, sizeof(ld));
	add_ph(&m, ELF_PT_INTERP, ELF_PF_R, 0x300, 0x300, sizeof(ld), sizeof(ld), 1);
	expect_ok(&m, &info);
	ck_assert_ptr_nonnull(info.interp);
	ck_assert_uint_eq(info.interp_len, sizeof(ld) - 1);
	ck_assert_str_eq(info.interp, ld);

	add_ph(&m, ELF_PT_INTERP, ELF_PF_R, 0x300, 0x300, sizeof(ld), sizeof(ld), 1);
	expect_fail(&m, "more than one PT_INTERP");
	m.eh.e_phnum--;

	m.ph[4].p_filesz = sizeof(ld) - 1; /* stops just before the NUL */
	expect_fail(&m, "not NUL-terminated");
	m.ph[4].p_filesz = sizeof(ld);
	m.ph[4].p_offset = m.len - 4;
	expect_fail(&m, "PT_INTERP extends past end of file");
	m.ph[4].p_offset = UINT64_MAX;
	expect_fail(&m, "PT_INTERP extends past end of file");
	m.ph[4].p_offset = 0x1800; /* zeros */
	expect_fail(&m, "empty");
}
END_TEST

START_TEST(test_interp_length)
{
	struct img m;
	struct elf_info info;

	img_dyn(&m);
	memset(m.file + 0x200, 'a', 4095);
	add_ph(&m, ELF_PT_INTERP, ELF_PF_R, 0x200, 0x200, 4096, 4096, 1);
	expect_ok(&m, &info);
	ck_assert_uint_eq(info.interp_len, 4095);
	m.file[0x200 + 4095] = 'a';
	m.ph[4].p_filesz = 4097;
	expect_fail(&m, "longer than 4095");
}
END_TEST

START_TEST(test_gnu_stack)
{
	struct img m;
	struct elf_info info;

	img_exec(&m);
	m.ph[3].p_flags |= ELF_PF_X;
	expect_ok(&m, &info);
	ck_assert(info.exec_stack);
	m.eh.e_phnum = 3; /* no PT_GNU_STACK: not executable, as on Linux x86-64 */
	expect_ok(&m, &info);
	ck_assert(!info.exec_stack);
}
END_TEST

START_TEST(test_tls)
{
	struct img m;
	struct elf_info info;

	img_exec(&m);
	add_ph(&m, ELF_PT_TLS, ELF_PF_R, 0x2000, 0x402000, 0x10, 0x40, 8);
	expect_ok(&m, &info);
	ck_assert_uint_eq(info.tls_vaddr, 0x402000);
	ck_assert_uint_eq(info.tls_filesz, 0x10);
	ck_assert_uint_eq(info.tls_memsz, 0x40);
	ck_assert_uint_eq(info.tls_align, 8);

	m.ph[4].p_filesz = 0x41;
	expect_fail(&m, "PT_TLS p_filesz > p_memsz");
	m.ph[4].p_filesz = 0x10;
	m.ph[4].p_align = 24;
	expect_fail(&m, "PT_TLS p_align");
	m.ph[4].p_align = 8;
	m.ph[4].p_vaddr = 0x500000;
	expect_fail(&m, "PT_TLS initialisation image not inside a PT_LOAD");
	m.ph[4].p_vaddr = 0x402000;
	m.ph[4].p_offset = m.len;
	expect_fail(&m, "PT_TLS extends past end of file");
	m.ph[4].p_offset = 0x2000;
	m.ph[4].p_vaddr = UINT64_MAX - 0x10;
	expect_fail(&m, "PT_TLS p_vaddr + p_memsz overflows");
	m.ph[4].p_vaddr = 0x402000;
	add_ph(&m, ELF_PT_TLS, ELF_PF_R, 0x2000, 0x402000, 0x10, 0x40, 8);
	expect_fail(&m, "more than one PT_TLS");
}
END_TEST

START_TEST(test_big_align)
{
	struct img m;
	struct elf_info info;

	img_dyn(&m);
	m.ph[1].p_align = 0x200000;
	expect_ok(&m, &info);
	ck_assert_uint_eq(info.align, 0x200000);
}
END_TEST

START_TEST(test_max_segments)
{
	struct img m;
	struct elf_info info;

	img_exec(&m);
	m.eh.e_phnum = 0;
	for (int i = 0; i < ELF_MAX_SEGMENTS; i++)
		add_ph(&m, ELF_PT_LOAD, ELF_PF_R | ELF_PF_X, 0, 0x400000 + i * 0x1000,
		       i ? 0 : 0x1000, 0x1000, 0x1000);
	m.eh.e_entry = 0x400100;
	expect_ok(&m, &info);
	ck_assert_uint_eq(info.nseg, ELF_MAX_SEGMENTS);
	add_ph(&m, ELF_PT_LOAD, ELF_PF_R, 0, 0x400000 + ELF_MAX_SEGMENTS * 0x1000, 0, 0x1000,
	       0x1000);
	expect_fail(&m, "more than 16 PT_LOAD");
}
END_TEST

START_TEST(test_user_limit_edge)
{
	struct img m;
	struct elf_info info;

	img_exec(&m);
	for (int i = 0; i < 3; i++)
		m.ph[i].p_vaddr = ELF_USER_LIMIT - 0x3000 + i * 0x1000;
	m.ph[2].p_memsz = 0x1000;
	m.eh.e_entry = ELF_USER_LIMIT - 0x2000;
	expect_ok(&m, &info);
	ck_assert_uint_eq(info.hi, ELF_USER_LIMIT);
	m.ph[2].p_memsz = 0x1001;
	expect_fail(&m, "above the end of user space");
}
END_TEST

START_TEST(test_span_edge)
{
	struct img m;
	struct elf_info info;

	img_dyn(&m);
	m.ph[2].p_vaddr = ELF_MAX_SPAN - 0x2000;
	expect_ok(&m, &info);
	ck_assert_uint_eq(info.hi, ELF_MAX_SPAN);
	m.ph[2].p_memsz++;
	expect_fail(&m, "span more than 64 GiB");
}
END_TEST

/* ------------------------------------------------------------ malformed ELF header */

START_TEST(test_bad_ehdr)
{
	struct img m;

	img_exec(&m);
	m.eh.e_ident[1] = 'e';
	expect_fail(&m, "bad magic");
	img_exec(&m);
	m.eh.e_ident[ELF_EI_CLASS] = 1;
	expect_fail(&m, "not a 64-bit");
	img_exec(&m);
	m.eh.e_ident[ELF_EI_DATA] = 2;
	expect_fail(&m, "not little-endian");
	img_exec(&m);
	m.eh.e_ident[ELF_EI_VERSION] = 0;
	expect_fail(&m, "unknown ELF version");
	img_exec(&m);
	m.eh.e_version = 2;
	expect_fail(&m, "unknown ELF version");
	img_exec(&m);
	m.eh.e_machine = 183; /* EM_AARCH64 */
	expect_fail(&m, "not an x86-64 program");
	img_exec(&m);
	m.eh.e_machine = 3; /* EM_386 */
	expect_fail(&m, "not an x86-64 program");
	img_exec(&m);
	m.eh.e_type = ELF_ET_REL;
	expect_fail(&m, "relocatable object (ET_REL)");
	img_exec(&m);
	m.eh.e_type = ELF_ET_CORE;
	expect_fail(&m, "core dump (ET_CORE)");
	img_exec(&m);
	m.eh.e_type = 0xfe00;
	expect_fail(&m, "neither ET_EXEC nor ET_DYN");
	img_exec(&m);
	m.eh.e_phentsize = 32;
	expect_fail(&m, "e_phentsize");
}
END_TEST

START_TEST(test_bad_phdr_table)
{
	struct img m;

	img_exec(&m);
	m.eh.e_phnum = 0;
	expect_fail(&m, "no program headers");
	img_exec(&m);
	m.eh.e_phnum = ELF_PN_XNUM;
	expect_fail(&m, "PN_XNUM");
	img_exec(&m);
	m.eh.e_phnum = ELF_MAX_PHNUM + 1;
	expect_fail(&m, "more than 64 program headers");
	img_exec(&m);
	m.eh.e_phoff = 0x3000;
	expect_fail(&m, "program header table extends past end");
	img_exec(&m);
	m.eh.e_phoff = m.len - 56 * 4 + 1;
	expect_fail(&m, "program header table extends past end");
	img_exec(&m);
	m.eh.e_phoff = UINT64_MAX - 8; /* phoff + phnum * 56 wraps */
	expect_fail(&m, "program header table extends past end");
	img_exec(&m);
	m.eh.e_phoff = 0;
	expect_fail(&m, "overlap the ELF header");
}
END_TEST

START_TEST(test_short_files)
{
	struct elf_info info;
	const char *err = NULL;

	ck_assert_int_eq(elf_parse(NULL, 0, &info, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "shorter than an ELF header"));
	ck_assert_int_eq(elf_parse("\177ELF", 4, &info, NULL), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------ malformed segments */

START_TEST(test_bad_load)
{
	struct img m;

	img_exec(&m);
	m.ph[2].p_filesz = 0x200; /* 0x2000 + 0x200 > file */
	expect_fail(&m, "PT_LOAD p_offset + p_filesz extends past end of file");
	img_exec(&m);
	m.ph[2].p_offset = UINT64_MAX - 0xfff; /* congruent, and wraps with filesz */
	m.ph[2].p_vaddr = 0x402000 - 0x1000;
	expect_fail(&m, "PT_LOAD p_offset + p_filesz extends past end of file");
	img_exec(&m);
	m.ph[2].p_filesz = 0x2001;
	m.ph[2].p_memsz = 0x2000;
	expect_fail(&m, "p_filesz > p_memsz");
	img_exec(&m);
	m.ph[2].p_vaddr = 0xfffffffffffff000; /* congruent with 0x2000 */
	expect_fail(&m, "p_vaddr + p_memsz overflows");
	img_dyn(&m);
	m.ph[2].p_vaddr = 0xffffffffffffe000; /* fits, but not rounded up to a page */
	m.ph[2].p_memsz = 0x1001;
	expect_fail(&m, "p_vaddr + p_memsz overflows");
	img_exec(&m);
	m.ph[1].p_vaddr = 0x401010;
	expect_fail(&m, "differ modulo the page size");
	img_exec(&m);
	m.ph[1].p_offset = 0x1008;
	expect_fail(&m, "differ modulo the page size");
	img_exec(&m);
	m.ph[1].p_align = 0x1800;
	expect_fail(&m, "p_align");
	img_exec(&m);
	m.ph[1].p_align = 1ULL << 31;
	expect_fail(&m, "p_align");
}
END_TEST

START_TEST(test_bad_layout)
{
	struct img m;
	struct elf64_phdr t;

	img_exec(&m);
	m.ph[0].p_memsz = 0x1001; /* one byte into the text */
	expect_fail(&m, "PT_LOAD segments overlap");
	img_exec(&m);
	m.ph[1].p_memsz = 0x1800; /* data starts at 0x402000 */
	expect_fail(&m, "PT_LOAD segments overlap");
	img_exec(&m);
	t = m.ph[1];
	m.ph[1] = m.ph[2];
	m.ph[2] = t;
	expect_fail(&m, "not in ascending p_vaddr order");
	img_exec(&m);
	m.ph[2].p_vaddr = 0x7fffffffe000;
	expect_fail(&m, "above the end of user space");
	img_exec(&m);
	m.ph[0].p_vaddr = 0xf000;
	expect_fail(&m, "below 64 KiB");
	img_exec(&m);
	m.ph[2].p_vaddr = 0x1000402000; /* 64 GiB above the start */
	expect_fail(&m, "span more than 64 GiB");
	img_dyn(&m);
	m.ph[2].p_vaddr = 0x7000000000;
	expect_fail(&m, "span more than 64 GiB");
	img_exec(&m);
	for (int i = 0; i < 3; i++)
		m.ph[i].p_type = 4; /* PT_NOTE */
	expect_fail(&m, "no PT_LOAD");
}
END_TEST

START_TEST(test_bad_entry)
{
	static const uint64_t bad[] = {0,        0x400000, 0x400fff, 0x402000,
	                               0x403fff, 0x404000, 0x500000, UINT64_MAX};
	struct img m;
	struct elf_info info;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		img_exec(&m);
		m.eh.e_entry = bad[i];
		expect_fail(&m, "entry point not inside an executable PT_LOAD");
	}
	img_exec(&m);
	m.eh.e_entry = 0x401fff;
	expect_ok(&m, &info);
}
END_TEST

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	buf = malloc(n);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, n, f), (size_t)n);
	fclose(f);
	*len = n;
	return buf;
}

/* ------------------------------------------------------------ headers only */

/* elf_parse_headers() on an exact-size copy of the first n bytes. */
static int parse_prefix(const uint8_t *full, size_t n, uint64_t size, struct elf_info *info,
                        const char **err)
{
	uint8_t *b = malloc(n ? n : 1);
	int r;

	memcpy(b, full, n);
	r = elf_parse_headers(b, n, size, info, err);
	free(b);
	return r;
}

START_TEST(test_headers_only)
{
	size_t hdr = 64 + 4 * 56;
	struct img m;
	struct elf_info info;
	const char *err;
	uint8_t *full;

	img_exec(&m);
	full = img_build(&m);
	for (size_t n = 0; n < hdr; n++)
		ck_assert_int_eq(parse_prefix(full, n, m.len, &info, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "program header table lies beyond the bytes read"));
	ck_assert_int_eq(parse_prefix(full, hdr, m.len, &info, &err), 0);
	ck_assert_uint_eq(info.nseg, 3);
	ck_assert_uint_eq(info.hi, 0x404000);
	/* Segments are still checked against the file's size. */
	ck_assert_int_eq(parse_prefix(full, hdr, m.len - 1, &info, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "PT_LOAD p_offset + p_filesz extends past end of file"));
	ck_assert_int_eq(parse_prefix(full, hdr, hdr - 1, &info, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "more bytes read than the file has"));
	free(full);
}
END_TEST

START_TEST(test_headers_only_interp)
{
	static const char ld[] = "/lib/ld.so";
	struct img m;
	struct elf_info info;
	const char *err;
	uint8_t *full;

	img_dyn(&m);
	memcpy(m.file + 0x300, ld, sizeof(ld));
	add_ph(&m, ELF_PT_INTERP, ELF_PF_R, 0x300, 0x300, sizeof(ld), sizeof(ld), 1);
	full = img_build(&m);
	ck_assert_int_eq(parse_prefix(full, 0x300 + sizeof(ld) - 1, m.len, &info, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "PT_INTERP lies beyond the bytes read"));
	ck_assert_int_eq(parse_prefix(full, 0x300 + sizeof(ld), m.len, &info, &err), 0);
	ck_assert_uint_eq(info.interp_len, sizeof(ld) - 1);
	free(full);
}
END_TEST

/* The first page of a real program gives the same plan as the whole file. */
START_TEST(test_headers_only_real)
{
	static const char *const paths[] = {"/usr/bin/true", "/bin/busybox"};

	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		struct elf_info whole, head;
		const char *err = NULL;
		size_t len;
		uint8_t *buf;

		if (access(paths[i], R_OK) != 0)
			continue;
		buf = slurp(paths[i], &len);
		ck_assert_uint_gt(len, 4096);
		ck_assert_int_eq(elf_parse(buf, len, &whole, &err), 0);
		ck_assert_msg(parse_prefix(buf, 4096, len, &head, &err) == 0, "%s: %s", paths[i],
		              err);
		ck_assert_int_eq(head.interp != NULL, whole.interp != NULL);
		ck_assert_uint_eq(head.interp_len, whole.interp_len);
		ck_assert_int_eq(head.type, whole.type);
		ck_assert_uint_eq(head.entry, whole.entry);
		ck_assert_uint_eq(head.phdr_vaddr, whole.phdr_vaddr);
		ck_assert_uint_eq(head.phnum, whole.phnum);
		ck_assert_uint_eq(head.lo, whole.lo);
		ck_assert_uint_eq(head.hi, whole.hi);
		ck_assert_uint_eq(head.align, whole.align);
		ck_assert_uint_eq(head.nseg, whole.nseg);
		for (unsigned k = 0; k < head.nseg; k++) {
			ck_assert_uint_eq(head.seg[k].vaddr, whole.seg[k].vaddr);
			ck_assert_uint_eq(head.seg[k].memsz, whole.seg[k].memsz);
			ck_assert_uint_eq(head.seg[k].offset, whole.seg[k].offset);
			ck_assert_uint_eq(head.seg[k].filesz, whole.seg[k].filesz);
			ck_assert_uint_eq(head.seg[k].prot, whole.seg[k].prot);
		}
		ck_assert_uint_eq(head.exec_stack, whole.exec_stack);
		ck_assert_uint_eq(head.tls_vaddr, whole.tls_vaddr);
		ck_assert_uint_eq(head.tls_filesz, whole.tls_filesz);
		ck_assert_uint_eq(head.tls_memsz, whole.tls_memsz);
		ck_assert_uint_eq(head.tls_align, whole.tls_align);
		free(buf);
	}
}
END_TEST

/* ------------------------------------------------------------ robustness */

START_TEST(test_truncated_everywhere)
{
	struct img m;
	uint8_t *full;

	img_exec(&m);
	full = img_build(&m);
	for (size_t n = 0; n < m.len; n++) {
		uint8_t *b = malloc(n ? n : 1);
		struct elf_info info;
		const char *err = NULL;

		memcpy(b, full, n);
		ck_assert_msg(elf_parse(b, n, &info, &err) == -EINVAL, "len %zu accepted", n);
		ck_assert_ptr_nonnull(err);
		free(b);
	}
	free(full);
}
END_TEST

/* Every header byte replaced by interesting values: no crash, an error always
 * has a message, and whatever is accepted is safe to load. */
START_TEST(test_header_mutations)
{
	static const uint8_t vals[] = {0, 1, 2, 0x7f, 0x80, 0xff};
	struct img m;
	uint8_t *orig;
	size_t hdr = 64 + 4 * 56;

	img_exec(&m);
	orig = img_build(&m);
	for (size_t i = 0; i < hdr; i++) {
		for (size_t v = 0; v < sizeof(vals); v++) {
			uint8_t *b = malloc(m.len);
			struct elf_info info;
			const char *err = NULL;
			int r;

			memcpy(b, orig, m.len);
			b[i] = vals[v];
			r = elf_parse(b, m.len, &info, &err);
			ck_assert(r == 0 || r == -EINVAL);
			ck_assert_int_eq(r != 0, err != NULL);
			if (r == 0)
				check_invariants(&info, m.len);
			free(b);
		}
	}
	free(orig);
}
END_TEST

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A field value that is often near a boundary. */
static uint64_t rnd_val(uint64_t *s)
{
	static const uint64_t edges[] = {
	    0,        1,       0x1000,         0x2000,     0x400000,
	    0x401000, IMG_LEN, ELF_USER_LIMIT, UINT64_MAX, UINT64_MAX - 0xfff};

	switch (rnd(s) % 4) {
	case 0:
		return edges[rnd(s) % ARRAY_SIZE(edges)];
	case 1:
		return rnd(s);
	default:
		return 0x400000 + (rnd(s) % 0x5000);
	}
}

/* Sets one field of one program header (or e_entry) to a random value, or
 * nudges it by up to two bytes or pages. */
static void mutate(struct img *m, uint64_t *seed)
{
	static const uint32_t types[] = {ELF_PT_LOAD, ELF_PT_INTERP,    ELF_PT_TLS,
	                                 ELF_PT_PHDR, ELF_PT_GNU_STACK, 4 /* PT_NOTE */};
	unsigned i = rnd(seed) % (m->eh.e_phnum + 1);
	bool nudge = rnd(seed) % 2;
	uint64_t v = nudge ? ((rnd(seed) % 5) - 2) * (rnd(seed) % 2 ? 1 : 0x1000) : rnd_val(seed);
	struct elf64_phdr *p;

	if (i == m->eh.e_phnum) {
		struct elf64_phdr copy = m->ph[rnd(seed) % m->eh.e_phnum];

		if (m->eh.e_phnum == ARRAY_SIZE(m->ph))
			return;
		m->ph[m->eh.e_phnum++] = copy;
	}
	p = &m->ph[i];
	switch (rnd(seed) % 8) {
	case 0:
		p->p_type = types[rnd(seed) % ARRAY_SIZE(types)];
		break;
	case 1:
		p->p_flags = rnd(seed) % 8;
		break;
	case 2:
		p->p_offset = nudge ? p->p_offset + v : v;
		break;
	case 3:
		p->p_vaddr = nudge ? p->p_vaddr + v : v;
		break;
	case 4:
		p->p_filesz = nudge ? p->p_filesz + v : v;
		break;
	case 5:
		p->p_memsz = nudge ? p->p_memsz + v : v;
		break;
	case 6:
		p->p_align = nudge ? 1ULL << (rnd(seed) % 64) : v;
		break;
	default:
		m->eh.e_entry = nudge ? m->eh.e_entry + v : v;
		break;
	}
}

/* Random edits of valid images: whatever is accepted is safe to load, and
 * the generator reaches both outcomes often. */
START_TEST(test_random_phdrs)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	int accepted = 0, rejected = 0;

	for (int iter = 0; iter < 20000; iter++) {
		struct img m;
		struct elf_info info;
		const char *err = NULL;
		int r, n = 1 + rnd(&seed) % 3;

		if (iter % 2)
			img_exec(&m);
		else
			img_dyn(&m);
		strcpy((char *)m.file + 0x300, "/lib/ld.so");
		for (int k = 0; k < n; k++)
			mutate(&m, &seed);
		r = img_parse(&m, &info, &err);
		ck_assert(r == 0 || r == -EINVAL);
		ck_assert_int_eq(r != 0, err != NULL);
		if (r == 0) {
			check_invariants(&info, m.len);
			accepted++;
		} else {
			rejected++;
		}
	}
	ck_assert_int_gt(accepted, 2000);
	ck_assert_int_gt(rejected, 2000);
}
END_TEST

/* ------------------------------------------------------------ real programs */

/* Compares our reading of path with readelf's: entry, every PT_LOAD, interp. */
static void cross_check(const char *path, const struct elf_info *info)
{
	char cmd[512], line[512], interp[512] = "";
	unsigned nload = 0;
	uint64_t entry = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "LC_ALL=C readelf -lW '%s'", path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long off, va, pa, fsz, msz;

		sscanf(line, "Entry point 0x%lx", &entry);
		sscanf(line, " [Requesting program interpreter: %511[^]]]", interp);
		if (sscanf(line, " LOAD 0x%lx 0x%lx 0x%lx 0x%lx 0x%lx", &off, &va, &pa, &fsz,
		           &msz) == 5) {
			ck_assert_uint_lt(nload, info->nseg);
			ck_assert_uint_eq(info->seg[nload].offset, off);
			ck_assert_uint_eq(info->seg[nload].vaddr, va);
			ck_assert_uint_eq(info->seg[nload].filesz, fsz);
			ck_assert_uint_eq(info->seg[nload].memsz, msz);
			nload++;
		}
	}
	ck_assert_int_eq(pclose(p), 0);
	ck_assert_uint_eq(nload, info->nseg);
	ck_assert_uint_eq(entry, info->entry);
	if (info->interp)
		ck_assert_str_eq(interp, info->interp);
	else
		ck_assert_str_eq(interp, "");
}

/* Parses a real program and checks it is what we expect. */
static void check_program(const char *path, int type, bool has_interp, struct elf_info *out)
{
	struct elf_info info;
	const char *err = NULL;
	size_t len;
	uint8_t *buf = slurp(path, &len);
	struct elf64_ehdr eh;

	ck_assert_msg(elf_parse(buf, len, &info, &err) == 0, "%s: %s", path, err ? err : "?");
	memcpy(&eh, buf, sizeof(eh));
	ck_assert_int_eq(info.type, type);
	ck_assert_uint_eq(info.entry, eh.e_entry);
	ck_assert_uint_eq(info.phnum, eh.e_phnum);
	ck_assert_uint_ge(info.nseg, 2);
	ck_assert_uint_ne(info.phdr_vaddr, 0);
	ck_assert(!info.exec_stack);
	ck_assert_int_eq(info.interp != NULL, has_interp);
	check_invariants(&info, len);
	cross_check(path, &info);
	free(buf);
	info.interp = NULL; /* pointed into buf */
	*out = info;
}

START_TEST(test_host_programs)
{
	/* Debian 12: busybox-static is a static ET_EXEC, coreutils are PIE. */
	struct elf_info info;

	if (access("/bin/busybox", R_OK) == 0)
		check_program("/bin/busybox", ELF_ET_EXEC, false, &info);
	ck_assert_int_eq(access("/usr/bin/true", R_OK), 0);
	check_program("/usr/bin/true", ELF_ET_DYN, true, &info);
	ck_assert_uint_eq(info.interp_len, strlen("/lib64/ld-linux-x86-64.so.2"));
}
END_TEST

/* Where gcc builds; a checked fixture so that a failing test still
 * removes it. */
static char scratch[64];

static void scratch_setup(void)
{
	strcpy(scratch, "/tmp/kiln-test-elf-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(scratch));
}

static void scratch_teardown(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_gcc_programs)
{
	static const struct {
		const char *flags;
		int type;
		bool interp;
	} kinds[] = {
	    {"-static -no-pie", ELF_ET_EXEC, false},
	    {"-static-pie", ELF_ET_DYN, false},
	    {"-pie", ELF_ET_DYN, true},
	    {"-no-pie", ELF_ET_EXEC, true},
	};
	const char *dir = scratch;
	char cmd[1024], path[512];
	struct elf_info info;

	snprintf(cmd, sizeof(cmd),
	         "printf '__thread int t = 1;\\nint main(void) { return t - 1; }\\n' > %s/p.c",
	         dir);
	ck_assert_int_eq(system(cmd), 0);
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		snprintf(path, sizeof(path), "%s/p%zu", dir, i);
		snprintf(cmd, sizeof(cmd), "gcc %s -o %s %s/p.c", kinds[i].flags, path, dir);
		ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
		check_program(path, kinds[i].type, kinds[i].interp, &info);
		/* The program's __thread variable. */
		ck_assert_uint_ge(info.tls_memsz, 4);
		ck_assert_uint_ge(info.tls_filesz, 4);
	}

	/* An object file is refused with a message that says what it is. */
	const char *err = NULL;
	size_t len;
	uint8_t *buf;

	snprintf(cmd, sizeof(cmd), "gcc -c -o %s/p.o %s/p.c", dir, dir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/p.o", dir);
	buf = slurp(path, &len);
	ck_assert_int_eq(elf_parse(buf, len, &info, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "ET_REL"));
	free(buf);
}
END_TEST

static Suite *elf_suite(void)
{
	Suite *s = suite_create("elf");
	TCase *ok = tcase_create("valid");
	TCase *bad = tcase_create("malformed");
	TCase *fuzz = tcase_create("robustness");
	TCase *real = tcase_create("real-programs");

	tcase_add_test(ok, test_static_exec);
	tcase_add_test(ok, test_static_pie);
	tcase_add_test(ok, test_pt_phdr);
	tcase_add_test(ok, test_phdrs_unmapped);
	tcase_add_test(ok, test_shared_page);
	tcase_add_test(ok, test_interp);
	tcase_add_test(ok, test_interp_length);
	tcase_add_test(ok, test_gnu_stack);
	tcase_add_test(ok, test_tls);
	tcase_add_test(ok, test_big_align);
	tcase_add_test(ok, test_max_segments);
	tcase_add_test(ok, test_user_limit_edge);
	tcase_add_test(ok, test_span_edge);
	tcase_add_test(bad, test_bad_ehdr);
	tcase_add_test(bad, test_bad_phdr_table);
	tcase_add_test(bad, test_short_files);
	tcase_add_test(bad, test_bad_load);
	tcase_add_test(bad, test_bad_layout);
	tcase_add_test(bad, test_bad_entry);
	tcase_add_test(ok, test_headers_only);
	tcase_add_test(ok, test_headers_only_interp);
	tcase_add_test(real, test_headers_only_real);
	tcase_add_test(fuzz, test_truncated_everywhere);
	tcase_add_test(fuzz, test_header_mutations);
	tcase_add_test(fuzz, test_random_phdrs);
	tcase_set_timeout(fuzz, 60);
	tcase_add_test(real, test_host_programs);
	tcase_add_checked_fixture(real, scratch_setup, scratch_teardown);
	tcase_add_test(real, test_gcc_programs);
	tcase_set_timeout(real, 120);
	suite_add_tcase(s, ok);
	suite_add_tcase(s, bad);
	suite_add_tcase(s, fuzz);
	suite_add_tcase(s, real);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(elf_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
