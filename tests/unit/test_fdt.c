/* SPDX-License-Identifier: MIT */
/* The device tree the VMM builds (vmm/fdt.c) read back by the guest's parser
 * (guest-kernel/libos/core/bootinfo.c): what goes in must come out. */
#include <check.h>
#include <libfdt.h>
#include <stdlib.h>
#include <string.h>

#include "../../vmm/fdt.h"
#include "../../vmm/virtio/virtio.h"
#include "bootinfo.h"

#define MIB (1ULL << 20)

static struct vm vm;
static struct virtio_dev devs[3];
static const struct virtio_dev_ops ops[3] = {
    {.name = "console", .device_id = VIRTIO_ID_CONSOLE},
    {.name = "rng", .device_id = VIRTIO_ID_RNG},
    {.name = "other", .device_id = 19},
};
static uint8_t fdt[KILN_FDT_MAX_SIZE];
static const struct fdt_params params = {
    .tsc_khz = 2600000,
    .boot_tsc = 123456789,
    .boot_realtime_ns = 1700000000123456789ULL,
    .pml4_pa = 0x6000,
};

static void setup_vm(uint64_t mem, int argc, char **argv, const char *cmdline)
{
	memset(&vm, 0, sizeof(vm));
	vm.mem.size = mem;
	vm.mem.low_size = mem < KILN_GPA_HOLE_START ? mem : KILN_GPA_HOLE_START;
	vm.boot_area_end = 0x20000;
	vm.kernel.pa_start = 0x200000;
	vm.kernel.pa_end = 0x400000;
	vm.initrd_pa = KILN_GPA_INITRD;
	vm.initrd_size = 12345;
	vm.fdt_pa = 0x400000;
	vm.nr_vcpus = 1;
	vm.cfg.cmdline = cmdline;
	vm.cfg.init_argc = argc;
	vm.cfg.init_argv = argv;
	for (int i = 0; i < 3; i++) {
		devs[i].base = KILN_GPA_MMIO_BASE + i * KILN_MMIO_SIZE;
		devs[i].vector = KILN_VEC_DEVICE0 + i;
		devs[i].ops = &ops[i];
		vm.devs[i] = &devs[i];
	}
	vm.nr_devs = 3;
}

static void build_and_parse(struct bootinfo *bi)
{
	const char *err = NULL;

	ck_assert_int_eq(fdt_build(&vm, &params, fdt, sizeof(fdt)), 0);
	ck_assert_msg(bootinfo_parse(fdt, bi, &err) == 0, "parse: %s", err ? err : "?");
}

START_TEST(round_trip_small)
{
	char *argv[] = {"/bin/busybox", "echo", "hi"};
	struct bootinfo bi;

	setup_vm(256 * MIB, 3, argv, "kiln.stats=1");
	build_and_parse(&bi);
	ck_assert_int_eq(bi.nr_ram, 1);
	ck_assert_uint_eq(bi.ram[0].base, 0);
	ck_assert_uint_eq(bi.ram[0].size, 256 * MIB);
	ck_assert_uint_eq(bi.initrd_start, KILN_GPA_INITRD);
	ck_assert_uint_eq(bi.initrd_end, KILN_GPA_INITRD + 12345);
	ck_assert_uint_eq(bi.tsc_khz, params.tsc_khz);
	ck_assert_uint_eq(bi.boot_tsc, params.boot_tsc);
	ck_assert_uint_eq(bi.boot_realtime_ns, params.boot_realtime_ns);
	ck_assert_uint_eq(bi.pml4, params.pml4_pa);
	ck_assert(bi.has_rng_seed);
	ck_assert_int_eq(bi.nr_cpus, 1);
	ck_assert_int_eq(bi.nr_virtio, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(bi.virtio[i].base, devs[i].base);
		ck_assert_uint_eq(bi.virtio[i].vector, devs[i].vector);
		ck_assert_uint_eq(bi.virtio[i].device_id, ops[i].device_id);
	}
	ck_assert_str_eq(bi.bootargs, "kiln.stats=1");
	ck_assert_int_eq(bi.argc, 3);
	ck_assert_str_eq(bi.argv, "/bin/busybox");
	/* The ranges the guest must not allocate: boot area, kernel, FDT. */
	ck_assert_int_eq(bi.nr_reserved, 3);
	ck_assert_uint_eq(bi.reserved[0].base, 0x1000);
	ck_assert_uint_eq(bi.reserved[1].base, 0x200000);
	ck_assert_uint_eq(bi.reserved[1].size, 0x200000);
	ck_assert_uint_eq(bi.reserved[2].base, 0x400000);
}
END_TEST

/* The image window (kiln-vmm --image): none, then one the guest reads. */
START_TEST(round_trip_pmem)
{
	static const uint8_t window[1];
	struct bootinfo bi;

	setup_vm(256 * MIB, 0, NULL, "");
	build_and_parse(&bi);
	ck_assert_uint_eq(bi.pmem_start, 0);
	ck_assert_uint_eq(bi.pmem_size, 0);
	vm.mem.pmem = window;
	vm.mem.pmem_size = 4 * MIB;
	vm.mem.pmem_file_size = 3 * MIB + 5;
	build_and_parse(&bi);
	ck_assert_uint_eq(bi.pmem_start, KILN_GPA_PMEM);
	ck_assert_uint_eq(bi.pmem_size, 4 * MIB);
	ck_assert_uint_eq(bi.pmem_image_size, 3 * MIB + 5);
}
END_TEST

/* The initramfs index: reserved, named, and refused outside RAM. */
START_TEST(round_trip_initrd_index)
{
	struct bootinfo bi;
	const char *err = NULL;

	setup_vm(256 * MIB, 0, NULL, "");
	build_and_parse(&bi);
	ck_assert_uint_eq(bi.initrd_index_size, 0);
	vm.initrd_index_pa = 0x410000;
	vm.initrd_index_size = 5000;
	build_and_parse(&bi);
	ck_assert_uint_eq(bi.initrd_index, 0x410000);
	ck_assert_uint_eq(bi.initrd_index_size, 5000);
	ck_assert_int_eq(bi.nr_reserved, 4);
	ck_assert_uint_eq(bi.reserved[3].base, 0x410000);
	ck_assert_uint_eq(bi.reserved[3].size, 5000);
	vm.initrd_index_pa = 256 * MIB - 4096;
	ck_assert_int_eq(fdt_build(&vm, &params, fdt, sizeof(fdt)), 0);
	ck_assert_int_eq(bootinfo_parse(fdt, &bi, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "kiln,initrd-index"));
}
END_TEST

/* RAM that comes late (kiln,early-ram-end): none, some, and what the guest
 * refuses to believe. */
START_TEST(round_trip_early_ram_end)
{
	static const uint64_t bad[] = {0, 66 * MIB + 4096, 258 * MIB, ~0ULL - (2 * MIB - 1)};
	struct bootinfo bi;
	const char *err = NULL;
	int node;

	setup_vm(256 * MIB, 0, NULL, NULL);
	build_and_parse(&bi);
	ck_assert_uint_eq(bi.early_ram_end, 0);
	vm.late.early_end = 66 * MIB;
	build_and_parse(&bi);
	ck_assert_uint_eq(bi.early_ram_end, 66 * MIB);
	ck_assert_int_eq(bi.nr_ram, 1);
	ck_assert_uint_eq(bi.ram[0].size, 256 * MIB);
	vm.late.early_end = 256 * MIB; /* all of low RAM: only the high RAM comes late */
	build_and_parse(&bi);
	ck_assert_uint_eq(bi.early_ram_end, 256 * MIB);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(fdt_open_into(fdt, fdt, sizeof(fdt)), 0);
		node = fdt_path_offset(fdt, "/chosen");
		ck_assert_int_ge(node, 0);
		ck_assert_int_eq(fdt_setprop_u64(fdt, node, "kiln,early-ram-end", bad[i]), 0);
		ck_assert_int_eq(bootinfo_parse(fdt, &bi, &err), -EINVAL);
		ck_assert_ptr_nonnull(strstr(err, "kiln,early-ram-end"));
	}
}
END_TEST

START_TEST(round_trip_above_4g)
{
	struct bootinfo bi;

	setup_vm(5ULL << 30, 0, NULL, NULL);
	build_and_parse(&bi);
	ck_assert_int_eq(bi.nr_ram, 2);
	ck_assert_uint_eq(bi.ram[0].size, KILN_GPA_HOLE_START);
	ck_assert_uint_eq(bi.ram[1].base, KILN_GPA_HIGH_RAM);
	ck_assert_uint_eq(bi.ram[1].size, (5ULL << 30) - KILN_GPA_HOLE_START);
	ck_assert_str_eq(bi.bootargs, "");
}
END_TEST

/* Every argument survives the trip, spaces, backslashes and empty ones too. */
START_TEST(argv_exact)
{
	char *argv[] = {"/bin/printf", "%s\\n", "a b", "tab\there", "", "x"};
	struct bootinfo bi;
	const char *p;

	setup_vm(64 * MIB, 6, argv, "init=/x");
	build_and_parse(&bi);
	ck_assert_str_eq(bi.bootargs, "init=/x");
	ck_assert_int_eq(bi.argc, 6);
	p = bi.argv;
	for (int i = 0; i < 6; i++) {
		ck_assert_str_eq(p, argv[i]);
		p += strlen(p) + 1;
	}
}
END_TEST

START_TEST(no_argv)
{
	struct bootinfo bi;

	setup_vm(64 * MIB, 0, NULL, "kiln.stats=1");
	build_and_parse(&bi);
	ck_assert_int_eq(bi.argc, 0);
	ck_assert_ptr_null(bi.argv);
}
END_TEST

START_TEST(split_limits)
{
	char buf[8], *words[2];

	ck_assert_int_eq(bootargs_split("a b c", buf, sizeof(buf), words, 2), -E2BIG);
	ck_assert_int_eq(bootargs_split("abcdefghij", buf, sizeof(buf), words, 2), -E2BIG);
	ck_assert_int_eq(bootargs_split("   ", buf, sizeof(buf), words, 2), 0);
	ck_assert_int_eq(bootargs_split(" ab  c ", buf, sizeof(buf), words, 2), 2);
	ck_assert_str_eq(words[0], "ab");
	ck_assert_str_eq(words[1], "c");
}
END_TEST

START_TEST(too_small_buffer)
{
	char *argv[] = {"/x"};
	static uint8_t tiny[64];

	setup_vm(64 * MIB, 1, argv, NULL);
	ck_assert_int_eq(fdt_build(&vm, &params, tiny, sizeof(tiny)), -ENOSPC);
}
END_TEST

/* A tree that does not fit the first page fdt_build tries, nor the next
 * size, is built whole all the same; a small one leaves the rest of the
 * buffer untouched (it is guest RAM not yet allocated on the host). */
START_TEST(grows_past_first_try)
{
	static char big[20000];
	char *argv[] = {"/x", big};
	struct bootinfo bi;

	memset(big, 'a', sizeof(big) - 1);
	setup_vm(64 * MIB, 2, argv, NULL);
	build_and_parse(&bi);
	ck_assert_int_gt(fdt_totalsize(fdt), 16384);
	ck_assert_int_eq(bi.argc, 2);
	ck_assert_str_eq(bi.argv + 3, big);

	memset(fdt, 0xa5, sizeof(fdt));
	setup_vm(64 * MIB, 1, argv, NULL);
	build_and_parse(&bi);
	ck_assert_int_le(fdt_totalsize(fdt), 4096);
	ck_assert_int_eq(fdt[4096], 0xa5);
	ck_assert_int_eq(fdt[sizeof(fdt) - 1], 0xa5);
}
END_TEST

START_TEST(parse_rejects_garbage)
{
	struct bootinfo bi;
	const char *err = NULL;
	uint8_t junk[4096];

	memset(junk, 0xa5, sizeof(junk));
	ck_assert_int_eq(bootinfo_parse(junk, &bi, &err), -EINVAL);
	ck_assert_ptr_nonnull(err);
}
END_TEST

/* A tree without kiln's clock data is refused, not half-used. */
START_TEST(parse_requires_clock)
{
	struct bootinfo bi;
	const char *err = NULL;
	int node;

	setup_vm(64 * MIB, 0, NULL, NULL);
	ck_assert_int_eq(fdt_build(&vm, &params, fdt, sizeof(fdt)), 0);
	ck_assert_int_eq(fdt_open_into(fdt, fdt, sizeof(fdt)), 0);
	node = fdt_path_offset(fdt, "/chosen");
	ck_assert_int_ge(node, 0);
	ck_assert_int_eq(fdt_delprop(fdt, node, "kiln,tsc-khz"), 0);
	ck_assert_int_eq(bootinfo_parse(fdt, &bi, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "clock"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("fdt");
	TCase *t = tcase_create("round trip");

	tcase_add_test(t, round_trip_small);
	tcase_add_test(t, round_trip_pmem);
	tcase_add_test(t, round_trip_above_4g);
	tcase_add_test(t, round_trip_early_ram_end);
	tcase_add_test(t, round_trip_initrd_index);
	tcase_add_test(t, argv_exact);
	tcase_add_test(t, no_argv);
	tcase_add_test(t, split_limits);
	tcase_add_test(t, too_small_buffer);
	tcase_add_test(t, grows_past_first_try);
	tcase_add_test(t, parse_rejects_garbage);
	tcase_add_test(t, parse_requires_clock);
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
