/* SPDX-License-Identifier: MIT */
/* The VMM's kernel loader (vmm/loader.c) against well-formed and hostile
 * kernel images. */
#include <check.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../vmm/vm.h"

#define MIB      (1ULL << 20)
#define SV_VA    0xffffffff80200000ULL
#define LIBOS_VA 0xffffffff90a00000ULL

/* A small valid image: a supervisor text segment, a libOS data segment, a
 * note and a libOS text segment (empty). */
struct image {
	Elf64_Ehdr eh;
	Elf64_Phdr ph[4];
	struct {
		Elf64_Nhdr nh;
		char name[8];
		struct kiln_boot_image bi;
	} __attribute__((packed)) note;
	uint8_t pad[4096 - sizeof(Elf64_Ehdr) - 4 * sizeof(Elf64_Phdr) - 20 -
	            sizeof(struct kiln_boot_image)];
	uint8_t sv_text[4096];
	uint8_t libos[4096];
};

static struct guest_mem mem;
static struct image img;

static void make_image(void)
{
	memset(&img, 0, sizeof(img));
	memcpy(img.eh.e_ident, ELFMAG, SELFMAG);
	img.eh.e_ident[EI_CLASS] = ELFCLASS64;
	img.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	img.eh.e_ident[EI_VERSION] = EV_CURRENT;
	img.eh.e_type = ET_EXEC;
	img.eh.e_machine = EM_X86_64;
	img.eh.e_version = EV_CURRENT;
	img.eh.e_entry = SV_VA;
	img.eh.e_phoff = sizeof(Elf64_Ehdr);
	img.eh.e_phentsize = sizeof(Elf64_Phdr);
	img.eh.e_phnum = 4;
	img.eh.e_ehsize = sizeof(Elf64_Ehdr);

	img.ph[0] = (Elf64_Phdr){.p_type = PT_LOAD,
	                         .p_flags = PF_R | PF_X,
	                         .p_offset = offsetof(struct image, sv_text),
	                         .p_vaddr = SV_VA,
	                         .p_paddr = 0x200000,
	                         .p_filesz = 4096,
	                         .p_memsz = 8192,
	                         .p_align = 4096};
	img.ph[1] = (Elf64_Phdr){.p_type = PT_LOAD,
	                         .p_flags = PF_R | PF_W,
	                         .p_offset = offsetof(struct image, libos),
	                         .p_vaddr = LIBOS_VA,
	                         .p_paddr = 0x202000,
	                         .p_filesz = 4096,
	                         .p_memsz = 4096,
	                         .p_align = 4096};
	img.ph[2] = (Elf64_Phdr){.p_type = PT_NOTE,
	                         .p_flags = PF_R,
	                         .p_offset = offsetof(struct image, note),
	                         .p_filesz = sizeof(img.note),
	                         .p_align = 4};
	img.ph[3] = (Elf64_Phdr){.p_type = PT_LOAD,
	                         .p_flags = PF_R | PF_X,
	                         .p_vaddr = LIBOS_VA + 4096,
	                         .p_paddr = 0x203000,
	                         .p_memsz = 4096,
	                         .p_align = 4096};
	img.note.nh.n_namesz = 5;
	img.note.nh.n_descsz = sizeof(struct kiln_boot_image);
	img.note.nh.n_type = KILN_NOTE_BOOT;
	memcpy(img.note.name, "KILN", 5);
	img.note.bi.magic = KILN_BOOT_IMAGE_MAGIC;
	img.note.bi.version = KILN_BOOT_VERSION;
	img.note.bi.entry = SV_VA;
	img.note.bi.syscall_entry = SV_VA + 16;
	img.note.bi.syscall_entry_cpl3 = LIBOS_VA + 4096;
	img.note.bi.boot_stack = SV_VA + 8192;
	img.note.bi.rsp0 = LIBOS_VA + 4096;
	img.note.bi.vector[14] = SV_VA + 32;
	memset(img.sv_text, 0xcc, sizeof(img.sv_text));
}

static int load(const char **err)
{
	struct kernel_info ki;
	*err = NULL;
	return kernel_load(&mem, &img, sizeof(img), &ki, err);
}

static void setup(void)
{
	ck_assert_int_eq(mem_init(&mem, 64 * MIB), 0);
	make_image();
}

static void teardown(void)
{
	mem_destroy(&mem);
}

#define EXPECT_REJECT(what)                                                             \
	do {                                                                            \
		const char *err;                                                        \
		ck_assert_int_ne(load(&err), 0);                                        \
		ck_assert_msg(err &&strstr(err, what), "expected '%s', got '%s'", what, \
		              err ? err : "(none)");                                    \
	} while (0)

START_TEST(valid_image_loads)
{
	struct kernel_info ki;
	const char *err = NULL;
	uint8_t *p;

	ck_assert_int_eq(kernel_load(&mem, &img, sizeof(img), &ki, &err), 0);
	ck_assert_int_eq(ki.nr_seg, 3);
	ck_assert_uint_eq(ki.pa_start, 0x200000);
	ck_assert_uint_eq(ki.pa_end, 0x204000);
	ck_assert_uint_eq(ki.image.entry, SV_VA);
	p = gpa_ptr(&mem, 0x200000, 8192);
	ck_assert_uint_eq(p[0], 0xcc);
	ck_assert_uint_eq(p[4096], 0); /* bss part zeroed */
}
END_TEST

START_TEST(bad_magic)
{
	img.eh.e_ident[1] = 'X';
	EXPECT_REJECT("not an ELF64 x86-64");
}
END_TEST

START_TEST(elf32)
{
	img.eh.e_ident[EI_CLASS] = ELFCLASS32;
	EXPECT_REJECT("not an ELF64 x86-64");
}
END_TEST

START_TEST(wrong_machine)
{
	img.eh.e_machine = EM_AARCH64;
	EXPECT_REJECT("not an ELF64 x86-64");
}
END_TEST

START_TEST(not_exec)
{
	img.eh.e_type = ET_DYN;
	EXPECT_REJECT("ET_EXEC");
}
END_TEST

START_TEST(phdrs_outside_file)
{
	img.eh.e_phoff = sizeof(img) - 8;
	EXPECT_REJECT("program header table");
}
END_TEST

START_TEST(phnum_overflow)
{
	img.eh.e_phoff = 0xffffffffffffff00ULL;
	img.eh.e_phnum = 60;
	EXPECT_REJECT("program header table");
}
END_TEST

START_TEST(truncated_everywhere)
{
	struct kernel_info ki;
	const char *err;

	/* Every prefix of the image fails cleanly (ASan watches the reads). */
	for (size_t len = 0; len < offsetof(struct image, libos) + 4096; len += 7)
		ck_assert_int_ne(kernel_load(&mem, &img, len, &ki, &err), 0);
}
END_TEST

START_TEST(segment_outside_file)
{
	img.ph[0].p_offset = sizeof(img) - 100;
	EXPECT_REJECT("outside the file");
}
END_TEST

START_TEST(segment_offset_overflow)
{
	img.ph[0].p_offset = ~0ULL - 10;
	EXPECT_REJECT("outside the file");
}
END_TEST

START_TEST(filesz_over_memsz)
{
	img.ph[1].p_memsz = 100;
	EXPECT_REJECT("outside the file");
}
END_TEST

START_TEST(paddr_too_low)
{
	img.ph[0].p_paddr = 0x1000;
	EXPECT_REJECT("below 2 MiB");
}
END_TEST

START_TEST(huge_memsz)
{
	img.ph[1].p_memsz = 1ULL << 62;
	EXPECT_REJECT("");
}
END_TEST

START_TEST(beyond_guest_memory)
{
	img.ph[1].p_paddr = 128 * MIB;
	EXPECT_REJECT("does not fit");
}
END_TEST

START_TEST(overlapping_segments)
{
	img.ph[1].p_paddr = 0x201000;
	EXPECT_REJECT("overlap");
}
END_TEST

START_TEST(vaddr_outside_kernel_range)
{
	img.ph[1].p_vaddr = 0x400000;
	EXPECT_REJECT("kernel address range");
}
END_TEST

START_TEST(segment_straddles_boundary)
{
	img.ph[0].p_vaddr = KILN_VA_SV_END - 4096;
	EXPECT_REJECT("kernel address range");
}
END_TEST

START_TEST(misaligned_segment)
{
	img.ph[1].p_vaddr += 8;
	EXPECT_REJECT("page-aligned");
}
END_TEST

START_TEST(missing_note)
{
	img.ph[2].p_type = PT_NULL;
	EXPECT_REJECT("no KILN boot note");
}
END_TEST

START_TEST(note_wrong_version)
{
	img.note.bi.version = KILN_BOOT_VERSION + 1;
	EXPECT_REJECT("version");
}
END_TEST

START_TEST(note_size_lies)
{
	img.note.nh.n_descsz = 0x7fffffff;
	EXPECT_REJECT("PT_NOTE");
}
END_TEST

START_TEST(entry_outside_image)
{
	img.note.bi.entry = SV_VA + (1 << 20);
	EXPECT_REJECT("outside the image");
}
END_TEST

START_TEST(entry_not_executable)
{
	img.note.bi.entry = LIBOS_VA;
	EXPECT_REJECT("outside the image");
}
END_TEST

START_TEST(syscall_entry_on_user_page)
{
	/* LSTAR where `syscall` enters CPL0: supervisor code. */
	img.note.bi.syscall_entry = LIBOS_VA + 4096;
	EXPECT_REJECT("wrong kind of page");
}
END_TEST

START_TEST(syscall_entry_cpl3_on_supervisor_page)
{
	/* LSTAR on PVM hosts runs at CPL3: library OS code. */
	img.note.bi.syscall_entry_cpl3 = SV_VA + 16;
	EXPECT_REJECT("wrong kind of page");
}
END_TEST

START_TEST(syscall_entry_cpl3_not_executable)
{
	img.note.bi.syscall_entry_cpl3 = LIBOS_VA;
	EXPECT_REJECT("outside the image");
}
END_TEST

START_TEST(handler_outside_image)
{
	img.note.bi.vector[13] = 0xffffffff80000000ULL;
	EXPECT_REJECT("interrupt handler");
}
END_TEST

START_TEST(ist_without_stack)
{
	img.note.bi.vector_flags[14] = 3;
	EXPECT_REJECT("IST");
}
END_TEST

START_TEST(too_many_segments)
{
	static uint8_t big[65536];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)big;
	Elf64_Phdr *ph = (Elf64_Phdr *)(big + sizeof(*eh));
	struct kernel_info ki;
	const char *err;

	memcpy(big, &img.eh, sizeof(img.eh));
	eh->e_phnum = KERNEL_MAX_SEGS + 1;
	for (int i = 0; i < KERNEL_MAX_SEGS + 1; i++)
		ph[i] = (Elf64_Phdr){.p_type = PT_LOAD,
		                     .p_flags = PF_R,
		                     .p_offset = 0,
		                     .p_vaddr = SV_VA + 4096ULL * i,
		                     .p_paddr = 0x200000 + 4096ULL * i,
		                     .p_filesz = 16,
		                     .p_memsz = 4096};
	ck_assert_int_ne(kernel_load(&mem, big, sizeof(big), &ki, &err), 0);
	ck_assert_ptr_nonnull(strstr(err, "too many"));
}
END_TEST

/* The real kernel image (make unit builds it first). */
START_TEST(real_kernel)
{
	FILE *f = fopen("build/guest/kiln-kernel", "rb");
	static uint8_t buf[8 << 20];
	struct kernel_info ki;
	const char *err = NULL;
	size_t n;

	ck_assert_msg(f != NULL, "build/guest/kiln-kernel is missing (make builds it first)");
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	ck_assert_msg(kernel_load(&mem, buf, n, &ki, &err) == 0, "%s", err);
	ck_assert_int_ge(ki.nr_seg, 3);
	ck_assert_uint_lt(ki.image.syscall_entry, KILN_VA_SV_END);
	ck_assert_uint_ge(ki.image.syscall_entry_cpl3, KILN_VA_LIBOS_START);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("loader");
	TCase *t = tcase_create("kernel image");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, valid_image_loads);
	tcase_add_test(t, bad_magic);
	tcase_add_test(t, elf32);
	tcase_add_test(t, wrong_machine);
	tcase_add_test(t, not_exec);
	tcase_add_test(t, phdrs_outside_file);
	tcase_add_test(t, phnum_overflow);
	tcase_add_test(t, truncated_everywhere);
	tcase_add_test(t, segment_outside_file);
	tcase_add_test(t, segment_offset_overflow);
	tcase_add_test(t, filesz_over_memsz);
	tcase_add_test(t, paddr_too_low);
	tcase_add_test(t, huge_memsz);
	tcase_add_test(t, beyond_guest_memory);
	tcase_add_test(t, overlapping_segments);
	tcase_add_test(t, vaddr_outside_kernel_range);
	tcase_add_test(t, segment_straddles_boundary);
	tcase_add_test(t, misaligned_segment);
	tcase_add_test(t, missing_note);
	tcase_add_test(t, note_wrong_version);
	tcase_add_test(t, note_size_lies);
	tcase_add_test(t, entry_outside_image);
	tcase_add_test(t, entry_not_executable);
	tcase_add_test(t, syscall_entry_on_user_page);
	tcase_add_test(t, syscall_entry_cpl3_on_supervisor_page);
	tcase_add_test(t, syscall_entry_cpl3_not_executable);
	tcase_add_test(t, handler_outside_image);
	tcase_add_test(t, ist_without_stack);
	tcase_add_test(t, too_many_segments);
	tcase_add_test(t, real_kernel);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
