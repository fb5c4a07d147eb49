/* SPDX-License-Identifier: MIT */
/*
 * The files of /proc about the whole system (cpuinfo, meminfo, stat ...)
 * and /proc/sys, in the formats of Linux 6.1. One CPU; no swap; memory
 * from the page allocator's counters.
 */
#include "procfs.h"
#include "ktime.h"
#include "mm.h"
#include "oom.h"
#include "pidns.h"
#include "proc.h"
#include "rng.h"
#include "vm.h"

#define NS_PER_TICK 10000000UL /* USER_HZ 100 */

/* ---------------------------------------------------------------- cpuinfo */

/* Flag names by CPUID bit, as Linux's cpufeatures.h spells them (NULL:
 * not shown), in the order Linux prints its capability words. */
static const char *const leaf1_edx[32] = {
    "fpu",  "vme",  "de",   "pse", "tsc",  "msr", "pae",   "mce", "cx8",     "apic", NULL,
    "sep",  "mtrr", "pge",  "mca", "cmov", "pat", "pse36", "pn",  "clflush", NULL,   "dts",
    "acpi", "mmx",  "fxsr", "sse", "sse2", "ss",  "ht",    "tm",  "ia64",    "pbe"};
static const char *const ext1_edx[32] = {
    [11] = "syscall", [19] = "mp",     [20] = "nx", [22] = "mmxext",   [25] = "fxsr_opt",
    [26] = "pdpe1gb", [27] = "rdtscp", [29] = "lm", [30] = "3dnowext", [31] = "3dnow"};
static const char *const leaf1_ecx[32] = {
    "pni",    "pclmulqdq", "dtes64", "monitor", "ds_cpl",
    "vmx",    "smx",       "est",    "tm2",     "ssse3",
    "cid",    "sdbg",      "fma",    "cx16",    "xtpr",
    "pdcm",   NULL,        "pcid",   "dca",     "sse4_1",
    "sse4_2", "x2apic",    "movbe",  "popcnt",  "tsc_deadline_timer",
    "aes",    "xsave",     NULL,     "avx",     "f16c",
    "rdrand", "hypervisor"};
static const char *const ext1_ecx[32] = {"lahf_lm",    "cmp_legacy",  "svm",
                                         "extapic",    "cr8_legacy",  "abm",
                                         "sse4a",      "misalignsse", "3dnowprefetch",
                                         "osvw",       "ibs",         "xop",
                                         "skinit",     "wdt",         NULL,
                                         "lwp",        "fma4",        "tce",
                                         NULL,         "nodeid_msr",  NULL,
                                         "tbm",        "topoext",     "perfctr_core",
                                         "perfctr_nb", NULL,          "bpext",
                                         "ptsc",       "perfctr_llc", "mwaitx"};
static const char *const leaf7_ebx[32] = {
    "fsgsbase",   "tsc_adjust", "sgx",        "bmi1",     "hle",      "avx2",     NULL,
    "smep",       "bmi2",       "erms",       "invpcid",  "rtm",      "cqm",      NULL,
    "mpx",        "rdt_a",      "avx512f",    "avx512dq", "rdseed",   "adx",      "smap",
    "avx512ifma", NULL,         "clflushopt", "clwb",     "intel_pt", "avx512pf", "avx512er",
    "avx512cd",   "sha_ni",     "avx512bw",   "avx512vl"};
static const char *const leafd1_eax[32] = {"xsaveopt", "xsavec", "xgetbv1", "xsaves"};
static const char *const leaf71_eax[32] = {[4] = "avx_vnni", [5] = "avx512_bf16"};
static const char *const leaf7_ecx[32] = {[1] = "avx512vbmi",
                                          [2] = "umip",
                                          [3] = "pku",
                                          [4] = "ospke",
                                          [5] = "waitpkg",
                                          [6] = "avx512_vbmi2",
                                          [8] = "gfni",
                                          [9] = "vaes",
                                          [10] = "vpclmulqdq",
                                          [11] = "avx512_vnni",
                                          [12] = "avx512_bitalg",
                                          [13] = "tme",
                                          [14] = "avx512_vpopcntdq",
                                          [16] = "la57",
                                          [22] = "rdpid",
                                          [24] = "bus_lock_detect",
                                          [25] = "cldemote",
                                          [27] = "movdiri",
                                          [28] = "movdir64b",
                                          [29] = "enqcmd",
                                          [30] = "sgx_lc"};
static const char *const leaf7_edx[32] = {
    [2] = "avx512_4vnniw", [3] = "avx512_4fmaps", [4] = "fsrm",       [8] = "avx512_vp2intersect",
    [10] = "md_clear",     [14] = "serialize",    [16] = "tsxldtrk",  [18] = "pconfig",
    [19] = "arch_lbr",     [20] = "ibt",          [22] = "amx_bf16",  [23] = "avx512_fp16",
    [24] = "amx_tile",     [25] = "amx_int8",     [28] = "flush_l1d", [29] = "arch_capabilities"};

enum { W_1EDX, W_X1EDX, W_1ECX, W_X1ECX, W_7EBX, W_D1EAX, W_71EAX, W_7ECX, W_7EDX, NWORDS };

static const char *const *const flag_names[NWORDS] = {leaf1_edx,  ext1_edx,  leaf1_ecx,
                                                      ext1_ecx,   leaf7_ebx, leafd1_eax,
                                                      leaf71_eax, leaf7_ecx, leaf7_edx};

/* CPUID traps at CPL3 (tens of microseconds): asked once, kept. */
static struct {
	bool done;
	char vendor[13], model[49];
	uint32_t max, sig, ebx1, l2_kb, addr, invariant_tsc;
	uint32_t words[NWORDS];
} cpu;

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	asm volatile("cpuid"
	             : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
	             : "a"(leaf), "c"(sub));
}

static void cpu_probe(void)
{
	uint32_t r[4], max_ext;

	cpuid(0, 0, r);
	cpu.max = r[0];
	memcpy(cpu.vendor, &r[1], 4);
	memcpy(cpu.vendor + 4, &r[3], 4);
	memcpy(cpu.vendor + 8, &r[2], 4);
	cpuid(1, 0, r);
	cpu.sig = r[0];
	cpu.ebx1 = r[1];
	cpu.words[W_1ECX] = r[2] & ~(1U << 27); /* osxsave: not shown by Linux */
	cpu.words[W_1EDX] = r[3];
	if (cpu.max >= 7) {
		cpuid(7, 0, r);
		cpu.words[W_7EBX] = r[1];
		cpu.words[W_7ECX] = r[2];
		cpu.words[W_7EDX] = r[3];
		if (r[0] >= 1) {
			cpuid(7, 1, r);
			cpu.words[W_71EAX] = r[0];
		}
	}
	if (cpu.max >= 0xd) {
		cpuid(0xd, 1, r);
		cpu.words[W_D1EAX] = r[0];
	}
	cpuid(0x80000000, 0, r);
	max_ext = r[0];
	if (max_ext >= 0x80000001) {
		cpuid(0x80000001, 0, r);
		cpu.words[W_X1ECX] = r[2];
		cpu.words[W_X1EDX] = r[3];
	}
	for (uint32_t i = 0; i < 3 && max_ext >= 0x80000004; i++) {
		cpuid(0x80000002 + i, 0, r);
		memcpy(cpu.model + 16 * i, r, 16);
	}
	if (max_ext >= 0x80000006) {
		cpuid(0x80000006, 0, r);
		cpu.l2_kb = r[2] >> 16;
	}
	if (max_ext >= 0x80000007) {
		cpuid(0x80000007, 0, r);
		cpu.invariant_tsc = r[3] & (1U << 8);
	}
	if (max_ext >= 0x80000008) {
		cpuid(0x80000008, 0, r);
		cpu.addr = r[0];
	}
	cpu.done = true;
}

static uint64_t tsc_khz(void)
{
	uint64_t ns = time_tsc_to_ns(1000000000ULL);

	return ns ? 1000000000000000ULL / ns : 0;
}

static int show_cpuinfo(struct pfs_buf *b, const struct pfs_ctx *c)
{
	uint32_t fam = (cpu.sig >> 8) & 0xf, model = (cpu.sig >> 4) & 0xf;
	const char *name = cpu.model;
	uint64_t khz = tsc_khz();

	if (!cpu.done) {
		cpu_probe();
		fam = (cpu.sig >> 8) & 0xf;
		model = (cpu.sig >> 4) & 0xf;
	}
	if (fam == 0xf)
		fam += (cpu.sig >> 20) & 0xff;
	if (fam >= 6)
		model |= ((cpu.sig >> 16) & 0xf) << 4;
	while (*name == ' ')
		name++;
	pb_printf(b,
	          "processor\t: 0\nvendor_id\t: %s\ncpu family\t: %u\nmodel\t\t: %u\n"
	          "model name\t: %s\nstepping\t: %u\nmicrocode\t: 0x1\n"
	          "cpu MHz\t\t: %lu.%03lu\ncache size\t: %u KB\nphysical id\t: 0\nsiblings\t: 1\n"
	          "core id\t\t: 0\ncpu cores\t: 1\napicid\t\t: %u\ninitial apicid\t: %u\n"
	          "fpu\t\t: yes\nfpu_exception\t: yes\ncpuid level\t: %u\nwp\t\t: yes\nflags\t\t:",
	          cpu.vendor, fam, model, *name ? name : "unknown", cpu.sig & 0xf, khz / 1000,
	          khz % 1000, cpu.l2_kb, cpu.ebx1 >> 24, cpu.ebx1 >> 24, cpu.max);
	for (int w = 0; w < NWORDS; w++) {
		for (int bit = 0; bit < 32; bit++)
			if ((cpu.words[w] & (1U << bit)) && flag_names[w][bit])
				pb_printf(b, " %s", flag_names[w][bit]);
		if (w == W_X1EDX && cpu.invariant_tsc) /* Linux's own word follows */
			pb_printf(b, " constant_tsc nonstop_tsc");
	}
	pb_printf(b,
	          "\nbugs\t\t:\nbogomips\t: %lu.%02lu\nclflush size\t: %u\ncache_alignment\t: %u\n"
	          "address sizes\t: %u bits physical, %u bits virtual\npower management:\n\n",
	          khz * 2 / 1000, khz * 2 % 1000 / 10, ((cpu.ebx1 >> 8) & 0xff) * 8,
	          ((cpu.ebx1 >> 8) & 0xff) * 8, cpu.addr & 0xff, (cpu.addr >> 8) & 0xff);
	return 0;
}

/* ---------------------------------------------------------------- memory, load */

/* Pages mapped by programs, and how many of them are in 2 MiB pages: each
 * address space once (vfork shares them). */
static uint64_t anon_pages(uint64_t *huge)
{
	uint64_t n = 0;

	*huge = 0;
	for (struct proc *p = proc_first(); p; p = p->next_all) {
		bool seen = !p->as;

		for (struct proc *q = proc_first(); q != p && !seen; q = q->next_all)
			seen = q->as == p->as;
		if (!seen) {
			n += p->as->nr_pages;
			*huge += p->as->nr_huge * HUGE_PAGES;
		}
	}
	return n;
}

struct kb_line {
	const char *name;
	uint64_t kb;
};

static void put_kb_lines(struct pfs_buf *b, const struct kb_line *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pb_printf(b, "%-16s%8lu kB\n", l[i].name, l[i].kb);
}

static int show_meminfo(struct pfs_buf *b, const struct pfs_ctx *c)
{
	uint64_t kb = PAGE_SIZE / 1024, total = pmem_total_pages() * kb;
	uint64_t huge, free = pmem_free_pages() * kb, anon = anon_pages(&huge) * kb;
	uint64_t shmem = pfs_ramfs_pages() * kb; /* tmpfs pages count as "Cached" */
	const struct kb_line lines[] = {
	    {"MemTotal:", total},
	    {"MemFree:", free},
	    {"MemAvailable:", free},
	    {"Buffers:", 0},
	    {"Cached:", shmem},
	    {"SwapCached:", 0},
	    {"Active:", anon + shmem},
	    {"Inactive:", 0},
	    {"Active(anon):", anon + shmem},
	    {"Inactive(anon):", 0},
	    {"Active(file):", 0},
	    {"Inactive(file):", 0},
	    {"Unevictable:", 0},
	    {"Mlocked:", 0},
	    {"SwapTotal:", 0},
	    {"SwapFree:", 0},
	    {"Zswap:", 0},
	    {"Zswapped:", 0},
	    {"Dirty:", 0},
	    {"Writeback:", 0},
	    {"AnonPages:", anon},
	    {"Mapped:", 0},
	    {"Shmem:", shmem},
	    {"KReclaimable:", 0},
	    {"Slab:", 0},
	    {"SReclaimable:", 0},
	    {"SUnreclaim:", 0},
	    {"KernelStack:", 0},
	    {"PageTables:", 0},
	    {"NFS_Unstable:", 0},
	    {"Bounce:", 0},
	    {"WritebackTmp:", 0},
	    {"CommitLimit:", total},
	    {"Committed_AS:", anon + shmem},
	    {"VmallocTotal:", 34359738367UL},
	    {"VmallocUsed:", 0},
	    {"VmallocChunk:", 0},
	    {"Percpu:", 0},
	    {"HardwareCorrupted:", 0},
	    {"AnonHugePages:", huge * kb},
	    {"ShmemHugePages:", 0},
	    {"ShmemPmdMapped:", 0},
	    {"FileHugePages:", 0},
	    {"FilePmdMapped:", 0},
	};
	const struct kb_line direct[] = {
	    {"DirectMap4k:", 0}, {"DirectMap2M:", total}, {"DirectMap1G:", 0}};

	put_kb_lines(b, lines, ARRAY_SIZE(lines));
	pb_printf(b, "HugePages_Total:       0\nHugePages_Free:        0\n"
	             "HugePages_Rsvd:        0\nHugePages_Surp:        0\n"
	             "Hugepagesize:       2048 kB\nHugetlb:               0 kB\n");
	put_kb_lines(b, direct, ARRAY_SIZE(direct));
	return 0;
}

/* CPU time programs used, in ns (what the scheduler counts). */
static uint64_t busy_ns(void)
{
	uint64_t ns = 0;

	for (struct proc *p = proc_first(); p; p = p->next_all)
		ns += p->user_ns + p->sys_ns;
	return ns;
}

static int show_uptime(struct pfs_buf *b, const struct pfs_ctx *c)
{
	uint64_t up = time_boottime_ns() / NS_PER_TICK, busy = busy_ns() / NS_PER_TICK;
	uint64_t idle = up > busy ? up - busy : 0;

	pb_printf(b, "%lu.%02lu %lu.%02lu\n", up / 100, up % 100, idle / 100, idle % 100);
	return 0;
}

static void count_threads(int *running, int *total)
{
	*running = *total = 0;
	for (struct proc *p = proc_first(); p; p = p->next_all)
		for (struct thread *t = p->threads; t; t = t->next_in_proc) {
			*running += t->state == T_RUNNABLE;
			(*total)++;
		}
}

static int last_pid(void)
{
	/* the newest process (first) the reader sees */
	for (struct proc *p = proc_first(); p; p = p->next_all)
		if (pid_visible(cur_proc(), p))
			return pid_to_user(cur_proc(), p->pid);
	return 0;
}

static int show_loadavg(struct pfs_buf *b, const struct pfs_ctx *c)
{
	int running, total;

	count_threads(&running, &total);
	pb_printf(b, "0.00 0.00 0.00 %d/%d %d\n", running, total, last_pid());
	return 0;
}

static int show_stat(struct pfs_buf *b, const struct pfs_ctx *c)
{
	uint64_t up = time_monotonic_ns() / NS_PER_TICK, user = 0, sys = 0, idle;
	int running, total;

	for (struct proc *p = proc_first(); p; p = p->next_all) {
		user += p->user_ns / NS_PER_TICK;
		sys += p->sys_ns / NS_PER_TICK;
	}
	idle = up > user + sys ? up - user - sys : 0;
	count_threads(&running, &total);
	pb_printf(b, "cpu  %lu 0 %lu %lu 0 0 0 0 0 0\ncpu0 %lu 0 %lu %lu 0 0 0 0 0 0\n", user, sys,
	          idle, user, sys, idle);
	pb_printf(b,
	          "intr 0\nctxt 0\nbtime %lu\nprocesses %d\nprocs_running %d\nprocs_blocked 0\n"
	          "softirq 0 0 0 0 0 0 0 0 0 0 0\n",
	          (unsigned long)((time_realtime_ns() - time_monotonic_ns()) / 1000000000ULL),
	          last_pid(), running);
	return 0;
}

/* ---------------------------------------------------------------- random */

static void put_uuid(struct pfs_buf *b, uint8_t u[16])
{
	u[6] = (u[6] & 0x0f) | 0x40; /* version 4, random */
	u[8] = (u[8] & 0x3f) | 0x80;
	for (int i = 0; i < 16; i++)
		pb_printf(b, "%02x%s", u[i], i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
	pb_put(b, "\n", 1);
}

static int show_boot_id(struct pfs_buf *b, const struct pfs_ctx *c)
{
	static uint8_t id[16];
	static bool made;

	if (!made && rng_read(id, sizeof(id)) == (long)sizeof(id))
		made = true;
	put_uuid(b, id);
	return 0;
}

static int show_uuid(struct pfs_buf *b, const struct pfs_ctx *c)
{
	uint8_t u[16];

	if (rng_read(u, sizeof(u)) != (long)sizeof(u))
		return -EIO;
	put_uuid(b, u);
	return 0;
}

/* ---------------------------------------------------------------- tables */

static const struct pfs_entry random_entries[] = {
    PFS_SHOW("boot_id", 0444, show_boot_id),
    PFS_SHOW("uuid", 0444, show_uuid),
    PFS_TEXT("entropy_avail", "256\n"),
    PFS_TEXT("poolsize", "256\n"),
    PFS_END,
};

/* Matching uname(2). */
static const struct pfs_entry kernel_entries[] = {
    PFS_TEXT("ostype", "Linux\n"),
    PFS_TEXT("osrelease", "6.1.0-kiln\n"),
    PFS_TEXT("version", "#1 SMP kiln\n"),
    PFS_TEXT("hostname", "kiln\n"),
    PFS_TEXT("domainname", "(none)\n"),
    PFS_TEXT("pid_max", "4194304\n"),
    PFS_TEXT("threads-max", "4096\n"),
    PFS_TEXT("ngroups_max", "65536\n"),
    PFS_TEXT("cap_last_cap", "40\n"),
    PFS_TEXT("overflowuid", "65534\n"),
    PFS_TEXT("overflowgid", "65534\n"),
    PFS_SUBDIR("random", random_entries),
    PFS_END,
};

static const struct pfs_entry vm_entries[] = {
    PFS_TEXT("overcommit_memory", "0\n"),
    PFS_TEXT("overcommit_ratio", "50\n"),
    PFS_TEXT("max_map_count", "65530\n"),
    PFS_END,
};

static const struct pfs_entry inotify_entries[] = {
    PFS_TEXT("max_user_watches", "65536\n"),
    PFS_TEXT("max_user_instances", "128\n"),
    PFS_TEXT("max_queued_events", "16384\n"),
    PFS_END,
};

static const struct pfs_entry fs_entries[] = {
    PFS_TEXT("file-max", "9223372036854775807\n"),
    PFS_TEXT("nr_open", "1048576\n"),
    PFS_TEXT("pipe-max-size", "1048576\n"),
    PFS_SUBDIR("inotify", inotify_entries),
    PFS_END,
};

static const struct pfs_entry net_core_entries[] = {
    PFS_TEXT("somaxconn", "4096\n"),
    PFS_END,
};

static const struct pfs_entry net_entries[] = {
    PFS_SUBDIR("core", net_core_entries),
    PFS_END,
};

static const struct pfs_entry sys_entries[] = {
    PFS_SUBDIR("kernel", kernel_entries),
    PFS_SUBDIR("vm", vm_entries),
    PFS_SUBDIR("fs", fs_entries),
    PFS_SUBDIR("net", net_entries),
    PFS_END,
};

/* /proc/kiln/oom: the recent out-of-memory kills, oldest first, one per
 * line: MONOTONIC_NS PID SID COMM. Not Linux's: kiln-agent reads it. */
static int show_oom(struct pfs_buf *b, const struct pfs_ctx *c)
{
	struct oom_kill k[OOM_KEEP];
	unsigned n = oom_list(k, OOM_KEEP);

	for (unsigned i = 0; i < n; i++)
		pb_printf(b, "%lu %d %d %s\n", (unsigned long)k[i].at_ns, k[i].pid, k[i].sid,
		          k[i].comm);
	return 0;
}

/* /proc/kiln/pidns: one line per PID namespace with a process (pidns.h),
 * NS PROCS THREADS PAGES USER_NS SYS_NS: its live processes and threads,
 * the 4 KiB pages they map, the CPU time they used. Not Linux's: the
 * shim's Stats of a pod's app container (kiln-agent reads it for it). */
static int show_pidns(struct pfs_buf *b, const struct pfs_ctx *c)
{
	int mine = cur_proc() ? cur_proc()->pidns : 0;

	/* (a namespace's own processes see only its line) */
	for (int ns = mine; ns < (mine ? mine + 1 : KILN_PIDNS_MAX); ns++) {
		uint64_t user = 0, sys = 0;
		int procs = 0, threads = 0;

		for (struct proc *p = proc_first(); p; p = p->next_all)
			if (p->pidns == ns && !p->zombie) {
				procs++;
				threads += p->nr_threads;
				user += p->user_ns;
				sys += p->sys_ns;
			}
		if (procs)
			pb_printf(b, "%d %d %d %lu %lu %lu\n", ns, procs, threads,
			          (unsigned long)pidns_pages(ns), (unsigned long)user,
			          (unsigned long)sys);
	}
	return 0;
}

static const struct pfs_entry kiln_entries[] = {
    PFS_SHOW("oom", 0444, show_oom),
    PFS_SHOW("pidns", 0444, show_pidns),
    PFS_END,
};

const struct pfs_entry pfs_root_entries[] = {
    PFS_NODE("self", PFS_SELF, 0777),
    PFS_NODE("thread-self", PFS_THREAD_SELF, 0777),
    PFS_SHOW("cpuinfo", 0444, show_cpuinfo),
    PFS_SHOW("meminfo", 0444, show_meminfo),
    PFS_SHOW("uptime", 0444, show_uptime),
    PFS_SHOW("loadavg", 0444, show_loadavg),
    PFS_SHOW("stat", 0444, show_stat),
    PFS_TEXT("version", "Linux version 6.1.0-kiln (kiln@kiln) (gcc) #1 SMP kiln\n"),
    PFS_TEXT("filesystems", "nodev\trootfs\nnodev\tramfs\nnodev\ttmpfs\nnodev\tproc\n"),
    PFS_TEXT("swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"),
    PFS_SYMLINK("mounts", "self/mounts"),
    PFS_SUBDIR("sys", sys_entries),
    PFS_SUBDIR("kiln", kiln_entries),
    PFS_END,
};
