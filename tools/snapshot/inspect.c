/* SPDX-License-Identifier: MIT */
/* kiln-snapshot: look inside a snapshot file and verify every checksum.
 * The same command is `kiln snapshot` (tools/kiln links this file, built
 * with -DSNAP_INSPECT_NO_MAIN, and calls snap_inspect_cli()). */
#include <getopt.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../snapshot/snap.h"
#include "inspect.h"

#define U(x) ((unsigned long long)(x))

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "usage: %s inspect [--no-verify] [--threads N] FILE\n"
	        "       %s --help\n"
	        "\n"
	        "inspect   print the header, VM config, sections and chunk statistics of a\n"
	        "          kiln snapshot, and verify every checksum (header, section table,\n"
	        "          sections, and each memory chunk, which is also decompressed and\n"
	        "          checked against its content hash).\n"
	        "          Exits 1 with the reason if anything is wrong.\n"
	        "  --no-verify   skip reading the memory chunks (header and state are\n"
	        "                always verified)\n"
	        "  --threads N   threads for chunk verification (default: all CPUs)\n",
	        prog, prog);
}

static void print_image(const char *what, const struct snap_image_id *id)
{
	printf("  %-11s", what);
	if (id->alg == SNAP_HASH_NONE) {
		printf("none\n");
		return;
	}
	printf("%llu bytes, %s ", U(id->size), id->alg == SNAP_HASH_XXH64 ? "xxh64" : "sha256");
	if (id->alg == SNAP_HASH_XXH64) {
		uint64_t h;

		memcpy(&h, id->digest, 8);
		printf("%016llx\n", U(h));
		return;
	}
	for (int i = 0; i < 32; i++)
		printf("%02x", id->digest[i]);
	printf("\n");
}

static void print_config(const struct snap_vm_config *c)
{
	printf("VM config:\n");
	printf("  memory     %llu MiB (%llu MiB at GPA 0", U(c->mem_size >> 20),
	       U(c->mem_low_size >> 20));
	if (c->mem_size > c->mem_low_size)
		printf(", %llu MiB at 0x%llx", U((c->mem_size - c->mem_low_size) >> 20),
		       U(c->mem_high_gpa));
	printf(")\n");
	printf("  vcpus      %u\n", c->nr_vcpus);
	printf("  boot ABI   %u\n", c->boot_version);
	printf("  cpu        CPUID hash %016llx, XCR0 0x%llx\n", U(c->cpuid_hash), U(c->xcr0));
	print_image("kernel", &c->kernel);
	print_image("initramfs", &c->initrd);
	printf("  devices   ");
	for (uint32_t d = 0; d < c->nr_devices; d++)
		printf(" %s@%u", snap_device_name(c->devices[d].type), c->devices[d].slot);
	printf("%s\n", c->nr_devices ? "" : " none");
}

static void print_header(const struct snap *s)
{
	const struct snap_header *h = snap_header(s);
	time_t t = (time_t)(h->created_ns / 1000000000ULL);
	char when[64] = "?";
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("snapshot '%s'\n", snap_path(s));
	printf("  format     version %u, x86-64, %s\n", h->version,
	       snap_is_diff(s) ? "diff" : "full");
	printf("  id         %016llx\n", U(snap_id(s)));
	if (snap_is_diff(s))
		printf("  parent     %016llx\n", U(h->parent_id));
	printf("  created    %s\n", when);
	printf("  size       %llu bytes\n", U(h->file_size));
	if (h->generation)
		printf("  generation %llu (header slot %u)\n", U(h->generation), snap_slot(s));
}

static void print_sections(const struct snap *s)
{
	static const char *const names[SNAP_SEC_MAX] = {"?",      "vcpu",         "vm",
	                                                "device", "memory index", "memory data"};
	const struct snap_header *h = snap_header(s);

	printf("sections: %u\n", h->nsections);
	printf("  %3s %-13s %4s %7s %12s %12s %16s\n", "#", "type", "inst", "version", "offset",
	       "length", "checksum");
	for (uint32_t i = 0; i < h->nsections; i++) {
		const struct snap_section *e = snap_section(s, i);

		printf("  %3u %-13s %4u %7u %12llu %12llu %016llx\n", i, names[e->type],
		       e->instance, e->version, U(e->offset), U(e->length), U(e->checksum));
	}
}

static void print_vcpus(const struct snap *s)
{
	for (uint32_t v = 0; v < snap_config(s)->nr_vcpus; v++) {
		const struct snap_vcpu_state *st = snap_vcpu(s, v);
		struct kvm_regs regs;
		struct kvm_sregs sregs;
		struct kvm_mp_state mp;

		memcpy(&regs, st->regs, sizeof(regs));
		memcpy(&sregs, st->sregs, sizeof(sregs));
		memcpy(&mp, st->mp_state, sizeof(mp));
		printf("  vcpu %u     rip 0x%llx rsp 0x%llx cr3 0x%llx, mp_state %u, %u MSRs, "
		       "xsave %u bytes\n",
		       v, U(regs.rip), U(regs.rsp), U(sregs.cr3), mp.mp_state, st->nmsrs,
		       st->xsave_size);
	}
	printf("  vm         %s\n",
	       snap_vm(s)->flags & SNAP_VM_HAS_PIT2 ? "clock, irqchip, pit2" : "clock, irqchip");
}

static void print_memory(const struct snap *s)
{
	struct snap_mem_info mi;
	uint64_t data_bytes;

	snap_mem_info(s, &mi);
	data_bytes = mi.ndata * mi.chunk_size;
	printf("memory: %llu chunks of %llu KiB, zstd level %d\n", U(mi.nchunks),
	       U(mi.chunk_size >> 10), (int)mi.level);
	printf("  zero       %llu\n", U(mi.nzero));
	printf("  data       %llu (%llu stored raw)\n", U(mi.ndata), U(mi.nraw));
	if (snap_is_diff(s))
		printf("  from parent %llu\n", U(mi.nchunks - mi.npresent));
	printf(
	    "  compressed %llu bytes for %llu bytes of data chunks (ratio %.3f; %.3f of memory)\n",
	    U(mi.stored_bytes), U(data_bytes),
	    data_bytes ? (double)mi.stored_bytes / (double)data_bytes : 0.0,
	    (double)mi.stored_bytes / (double)mi.mem_size);
}

static int inspect(const char *prog, const char *path, bool verify, unsigned threads)
{
	struct snap_err err = {{0}};
	struct snap *s;
	struct timespec a, b;

	if (snap_open(path, &s, &err) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err.msg);
		return 1;
	}
	print_header(s);
	print_config(snap_config(s));
	print_sections(s);
	print_vcpus(s);
	print_memory(s);
	if (verify) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (snap_verify(s, threads, &err) < 0) {
			fprintf(stderr, "%s: %s\n", prog, err.msg);
			snap_close(s);
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("verify: header, sections and every chunk OK (%.1f ms)\n",
		       (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
	}
	snap_close(s);
	return 0;
}

int snap_inspect_cli(const char *prog, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"no-verify", no_argument, NULL, 'n'},
	    {"threads", required_argument, NULL, 't'},
	    {NULL, 0, NULL, 0},
	};
	unsigned threads = 0;
	bool verify = true;
	int c;

	if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
		usage(stdout, prog);
		return 0;
	}
	if (argc < 1 || strcmp(argv[0], "inspect")) {
		usage(stderr, prog);
		return 2;
	}
	/* Options of the subcommand, before or after FILE. */
	optind = 0; /* getopt may have run before (kiln's own options) */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout, prog);
			return 0;
		case 'n':
			verify = false;
			break;
		case 't':
			threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			usage(stderr, prog);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr, prog);
		return 2;
	}
	return inspect(prog, argv[optind], verify, threads);
}

#ifndef SNAP_INSPECT_NO_MAIN
int main(int argc, char **argv)
{
	return snap_inspect_cli("kiln-snapshot", argc - 1, argv + 1);
}
#endif
