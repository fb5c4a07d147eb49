/* SPDX-License-Identifier: MIT */
/* Guest RAM (vmm/mem.c) in both backings: a memfd, and anonymous memory
 * the host may back with huge pages (--mem-backing thp). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../vmm/vm.h"

#define MIB  (1ULL << 20)
#define HUGE (2 * MIB)

/* The VmFlags line of the mapping that starts at addr, from smaps. */
static void vm_flags(const void *addr, char *out, size_t len)
{
	char line[512];
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	ck_assert_ptr_nonnull(f);
	*out = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start;
		char *dash = strchr(line, '-'), *space = strchr(line, ' ');

		if (dash && space && dash < space && sscanf(line, "%lx-", &start) == 1)
			in = start == (unsigned long)(uintptr_t)addr;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			snprintf(out, len, "%s", line);
			break;
		}
	}
	fclose(f);
}

/* The mapping (from /proc/self/maps) that holds addr. */
static void mapping_of(const void *addr, uintptr_t *start, uintptr_t *end)
{
	unsigned long s, e;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	ck_assert_ptr_nonnull(f);
	*start = *end = 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s <= (uintptr_t)addr &&
		    (uintptr_t)addr < e) {
			*start = s;
			*end = e;
		}
	fclose(f);
}

/* RAM below the hole and above 4 GiB, reached through gpa_ptr. */
static void check_ram(struct guest_mem *mem)
{
	uint8_t *lo = gpa_ptr(mem, 0x1000, 4096);
	uint8_t *hi = gpa_ptr(mem, KILN_GPA_HIGH_RAM + HUGE, 4096);

	ck_assert_ptr_nonnull(lo);
	ck_assert_ptr_nonnull(hi);
	ck_assert_int_eq(lo[0] | hi[4095], 0); /* fresh RAM reads zero */
	memset(lo, 0xa5, 4096);
	hi[4095] = 0x5a;
	ck_assert_ptr_eq(hi, mem->host + mem->low_size + HUGE);
	ck_assert_ptr_null(gpa_ptr(mem, KILN_GPA_HOLE_START, 1));
	ck_assert_ptr_null(gpa_ptr(mem, KILN_GPA_HIGH_RAM + (mem->size - mem->low_size), 1));
}

START_TEST(memfd_backing)
{
	struct guest_mem mem = {0};
	char flags[256];

	ck_assert_int_eq(mem_init_backed(&mem, KILN_GPA_HOLE_START + 8 * MIB, MEM_BACKING_MEMFD),
	                 0);
	ck_assert_int_ge(mem.fd, 0);
	ck_assert(!mem.anon);
	check_ram(&mem);
	vm_flags(mem.host, flags, sizeof(flags));
	ck_assert_ptr_null(strstr(flags, " hg"));
	mem_destroy(&mem);
	ck_assert_ptr_null(mem.host);
}
END_TEST

START_TEST(thp_backing)
{
	struct guest_mem mem = {0};
	char flags[256];

	ck_assert_int_eq(mem_init_backed(&mem, KILN_GPA_HOLE_START + 8 * MIB, MEM_BACKING_THP), 0);
	ck_assert_int_eq(mem.fd, -1);
	ck_assert(mem.anon);
	/* Guest 2 MiB blocks must be host 2 MiB blocks. */
	ck_assert_uint_eq((uintptr_t)mem.host % HUGE, 0);
	vm_flags(mem.host, flags, sizeof(flags));
	ck_assert_msg(strstr(flags, " hg"), "no MADV_HUGEPAGE: %s", flags);
	check_ram(&mem);
	mem_destroy(&mem);
	ck_assert_ptr_null(mem.host);
}
END_TEST

/* Only the aligned part stays mapped: nothing before or after it. */
START_TEST(thp_mapping_is_exact)
{
	struct guest_mem mem = {0};
	uintptr_t start, end;

	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(mem_init_backed(&mem, 6 * MIB, MEM_BACKING_THP), 0);
		mapping_of(mem.host, &start, &end);
		ck_assert_uint_eq(start, (uintptr_t)mem.host);
		ck_assert_uint_eq(end, (uintptr_t)mem.host + 6 * MIB);
		mem_destroy(&mem);
	}
}
END_TEST

/* Read-only ranges: RAM, the initramfs and the pmem window, each whole. */
START_TEST(ro_windows)
{
	static const uint8_t initrd[8192], pmem[4 * 4096];
	struct guest_mem mem = {0};

	ck_assert_int_eq(mem_init(&mem, 16 * MIB), 0);
	mem.initrd = initrd;
	mem.initrd_map_size = sizeof(initrd);
	mem.pmem = pmem;
	mem.pmem_size = sizeof(pmem);
	ck_assert_ptr_eq(gpa_ptr_ro(&mem, 4096, 4096), mem.host + 4096);
	ck_assert_ptr_eq(gpa_ptr_ro(&mem, KILN_GPA_INITRD + 100, 8092), initrd + 100);
	ck_assert_ptr_null(gpa_ptr_ro(&mem, KILN_GPA_INITRD + 100, 8093));
	ck_assert_ptr_eq(gpa_ptr_ro(&mem, KILN_GPA_PMEM + 3 * 4096, 4096), pmem + 3 * 4096);
	ck_assert_ptr_null(gpa_ptr_ro(&mem, KILN_GPA_PMEM + 3 * 4096, 4097));
	ck_assert_ptr_null(gpa_ptr_ro(&mem, KILN_GPA_PMEM + sizeof(pmem), 1));
	ck_assert_ptr_null(gpa_ptr_ro(&mem, KILN_GPA_PMEM - 1, 2));
	ck_assert_ptr_null(gpa_ptr_ro(&mem, ~0ULL - 10, 100));
	ck_assert_ptr_null(gpa_ptr_ro(&mem, 16 * MIB - 10, 4096));
	/* Neither window is reachable for writing. */
	ck_assert_ptr_null(gpa_ptr(&mem, KILN_GPA_INITRD, 1));
	ck_assert_ptr_null(gpa_ptr(&mem, KILN_GPA_PMEM, 1));
	mem.pmem = NULL;
	ck_assert_ptr_null(gpa_ptr_ro(&mem, KILN_GPA_PMEM, 1));
	mem.initrd = NULL;
	mem.pmem = NULL;
	mem_destroy(&mem);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mem");
	TCase *t = tcase_create("backing");
	SRunner *sr;
	int failed;

	tcase_add_test(t, memfd_backing);
	tcase_add_test(t, thp_backing);
	tcase_add_test(t, thp_mapping_is_exact);
	tcase_add_test(t, ro_windows);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
