/* SPDX-License-Identifier: MIT */
/* kiln-vmm's command line: --help, and the options into struct vm_config.
 * Bad usage is reported with a hint and exits with status 2. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

#define MIB         (1ULL << 20)
#define DEFAULT_MEM (256 * MIB)
#define MAX_MEM     (1ULL << 40)

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: kiln-vmm --kernel FILE [--initrd FILE] [options] [-- PROGRAM [ARGS...]]\n"
	        "\n"
	        "Boot kiln-kernel in a KVM virtual machine; PROGRAM (a path inside the\n"
	        "initramfs) runs as the guest's init. kiln-vmm exits with its status.\n"
	        "\n"
	        "  --kernel FILE    kiln-kernel ELF image\n"
	        "  --initrd FILE    initramfs (cpio newc archive)\n"
	        "  --mem SIZE       guest memory, e.g. 256M or 1G (default 256M)\n"
	        "  --mem-backing memfd|thp\n"
	        "                   host memory behind guest RAM. memfd (default): taken\n"
	        "                   4 KiB at a time, an idle VM costs least. thp: anonymous\n"
	        "                   memory in 2 MiB host pages where the host has them\n"
	        "                   (transparent huge pages): a first touch of memory costs\n"
	        "                   about 20x less, an idle VM a few MiB more. Booting and\n"
	        "                   --restore-mode eager only\n"
	        "  --cpus N         number of vCPUs (default 1)\n"
	        "  --cmdline STR    kernel options, e.g. 'kiln.stats=1'\n"
	        "  --vsock CID,UDS_PATH\n"
	        "                   virtio-vsock with guest CID (3 to 4294967294); host clients\n"
	        "                   connect to UDS_PATH, guest connections to port P go to\n"
	        "                   UDS_PATH_P (Firecracker's protocol)\n"
	        "  --image FILE     read-only image (e.g. erofs, at most 64G) as virtio-pmem,\n"
	        "                   mapped from the host's page cache and shared by every VM\n"
	        "  --disk FILE[,ro] raw disk file or block device as virtio-blk, read-write\n"
	        "                   (locked against other writers) or read-only with ,ro\n"
	        "  --api-sock PATH  serve the VM's JSON API on this unix socket (pause,\n"
	        "                   resume, snapshot, state, stop, metrics; see vmm/API.md)\n"
	        "  --stats          print guest syscall statistics, VMM memory use and when\n"
	        "                   each boot step ended (with --cmdline kiln.stats=1 the\n"
	        "                   guest adds its own) at exit\n"
	        "  --no-dirty-log   snapshots read all of RAM instead of what KVM's dirty log\n"
	        "                   and the devices say was written since the last one\n"
	        "  --no-jail        run without the jail (for debugging; see README.md): as\n"
	        "                   root kiln-vmm otherwise runs in namespaces of its own\n"
	        "                   (pid, mount with a root of only its files, network,\n"
	        "                   ipc, uts), a cgroup with its limits, as uid and gid\n"
	        "                   N from the guest's first instruction on, with a\n"
	        "                   seccomp filter per thread\n"
	        "  --jail-id N      the jail's uid and gid (default %u + pid %% 65536;\n"
	        "                   kilnd gives each VMM its own)\n"
	        "  --jail-cgroup DIR\n"
	        "                   cgroup v2 directory for the VMM's leaf (default: found)\n"
	        "  --jail-cgroup-joined\n"
	        "                   the cgroup kiln-vmm was started in is its leaf (v2, or\n"
	        "                   each v1 hierarchy's): its caller made it, gets its\n"
	        "                   limits set there, and removes it\n"
	        "  --jail-mem-max SIZE\n"
	        "                   the cgroup's memory limit (default guest RAM + 1/8 +\n"
	        "                   128M)\n"
	        "  --jail-rw DIR    one more directory the VMM may write (snapshots); those\n"
	        "                   of --vsock and --api-sock are writable already\n"
	        "  --jail-seccomp kill|log\n"
	        "                   what a call outside a thread's filter does: kill the\n"
	        "                   VMM (default) or pass and be logged by the kernel\n"
	        "  --host-cpuid FILE\n"
	        "                   the host's KVM_GET_SUPPORTED_CPUID table as kilnd wrote it\n"
	        "                   (include/kiln/host_cpuid.h), read instead of asking KVM;\n"
	        "                   a file that is not whole and well-formed is reported and\n"
	        "                   KVM asked after all\n"
	        "  -h, --help       this text\n"
	        "\n"
	        "Starting from a snapshot instead of booting (the VM goes on where it was;\n"
	        "--kernel, --initrd, --image and --disk name the same files as when it was\n"
	        "taken, devices as then, --mem may be left out):\n"
	        "  --restore FILE   the snapshot\n"
	        "  --restore-mode eager|lazy|template\n"
	        "                   eager: all memory at once on every CPU, the guest running\n"
	        "                   meanwhile (default); lazy: each chunk mostly on first\n"
	        "                   touch (both userfaultfd; eager without it: all memory\n"
	        "                   before the guest runs); template: a private\n"
	        "                   copy-on-write mapping of memory shared by every clone of\n"
	        "                   the snapshot\n"
	        "  --parent FILE    the full snapshot a diff snapshot was taken against\n"
	        "  --template-dir DIR\n"
	        "                   where template memory files live (default /dev/shm;\n"
	        "                   only --restore-mode template uses it)\n"
	        "  --mem-fd N       template memory handed over as open fd N instead\n"
	        "  --paused         wait for a \"resume\" request before running\n"
	        "\n"
	        "Exit status: the guest's; 125 if the guest crashed; 1 on a VMM error;\n"
	        "2 on bad usage.\n",
	        JAIL_ID_BASE);
}

static int die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kiln-vmm: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'kiln-vmm --help'.\n");
	exit(2);
}
static uint64_t parse_size(const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || v == 0)
		die_usage("%s '%s': not a size (examples: 256M, 1G)", opt, s);
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	case 0:
		v <<= 20;
		break; /* a bare number is MiB */
	default:
		break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end)
		die_usage("%s '%s': not a size (examples: 256M, 1G)", opt, s);
	if (v > MAX_MEM)
		die_usage("%s '%s': more than the 1T kiln supports", opt, s);
	if (v % (2 * MIB))
		die_usage("%s '%s': must be a multiple of 2M", opt, s);
	return v;
}

void options_parse(int argc, char **argv, struct vm_config *cfg)
{
	static const struct option opts[] = {
	    {"kernel", required_argument, 0, 'k'},
	    {"initrd", required_argument, 0, 'i'},
	    {"mem", required_argument, 0, 'm'},
	    {"cpus", required_argument, 0, 'c'},
	    {"cmdline", required_argument, 0, 'C'},
	    {"stats", no_argument, 0, 's'},
	    {"vsock", required_argument, 0, 'V'},
	    {"image", required_argument, 0, 'I'},
	    {"disk", required_argument, 0, 'D'},
	    {"api-sock", required_argument, 0, 'A'},
	    {"restore", required_argument, 0, 'R'},
	    {"restore-mode", required_argument, 0, 'M'},
	    {"parent", required_argument, 0, 'P'},
	    {"template-dir", required_argument, 0, 'T'},
	    {"mem-fd", required_argument, 0, 'F'},
	    {"paused", no_argument, 0, 'p'},
	    {"mem-backing", required_argument, 0, 'B'},
	    {"no-dirty-log", no_argument, 0, 'N'},
	    {"no-jail", no_argument, 0, 'J'},
	    {"jail-id", required_argument, 0, 1000},
	    {"jail-cgroup", required_argument, 0, 1001},
	    {"jail-mem-max", required_argument, 0, 1002},
	    {"jail-rw", required_argument, 0, 1003},
	    {"jail-seccomp", required_argument, 0, 1004},
	    {"jail-cgroup-joined", no_argument, 0, 1005},
	    {"host-cpuid", required_argument, 0, 1006},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	char *end;
	long n;
	int c;

	cfg->mem_size = DEFAULT_MEM;
	cfg->nr_cpus = 1;
	cfg->mem_fd = -1;
	if (getenv("KILN_VMM_SECCOMP") && !strcmp(getenv("KILN_VMM_SECCOMP"), "log"))
		cfg->jail.seccomp = JAIL_SECCOMP_LOG;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			cfg->kernel_path = optarg;
			break;
		case 'i':
			cfg->initrd_path = optarg;
			break;
		case 'm':
			cfg->mem_size = parse_size("--mem", optarg);
			cfg->mem_size_given = true;
			break;
		case 'C':
			cfg->cmdline = optarg;
			break;
		case 's':
			cfg->stats = true;
			break;
		case 'N':
			cfg->no_dirty_log = true;
			break;
		case 'c':
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n < 1 || n > 64)
				die_usage("--cpus '%s': expected a number from 1 to 64", optarg);
			cfg->nr_cpus = (int)n;
			break;
		case 'V':
			errno = 0;
			cfg->vsock_cid = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end != ',' || !end[1] ||
			    cfg->vsock_cid < 3 || cfg->vsock_cid > 0xfffffffeULL)
				die_usage(
				    "--vsock '%s': expected CID,UDS_PATH with a CID from 3 to "
				    "4294967294",
				    optarg);
			cfg->vsock_path = end + 1;
			break;
		case 'I':
			if (cfg->image_path)
				die_usage("--image given twice; kiln supports one image");
			cfg->image_path = optarg;
			break;
		case 'D':
			if (cfg->disk_path)
				die_usage("--disk given twice; kiln supports one disk");
			n = (long)strlen(optarg);
			cfg->disk_ro = n > 3 && !strcmp(optarg + n - 3, ",ro");
			cfg->disk_path = cfg->disk_ro ? strndup(optarg, (size_t)n - 3) : optarg;
			if (!cfg->disk_path || !*cfg->disk_path)
				die_usage("--disk '%s': expected FILE or FILE,ro", optarg);
			break;
		case 'A':
			cfg->api_path = optarg;
			break;
		case 'R':
			cfg->restore_path = optarg;
			break;
		case 'M':
			if (!strcmp(optarg, "eager"))
				cfg->restore_mode = RESTORE_EAGER;
			else if (!strcmp(optarg, "lazy"))
				cfg->restore_mode = RESTORE_LAZY;
			else if (!strcmp(optarg, "template"))
				cfg->restore_mode = RESTORE_TEMPLATE;
			else
				die_usage("--restore-mode '%s': expected eager, lazy or template",
				          optarg);
			break;
		case 'P':
			cfg->parent_path = optarg;
			break;
		case 'T':
			cfg->template_dir = optarg;
			break;
		case 'F':
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n < 3 || n > 1000000 || fcntl((int)n, F_GETFD) < 0)
				die_usage("--mem-fd '%s': not an open file descriptor", optarg);
			cfg->mem_fd = (int)n;
			break;
		case 'p':
			cfg->start_paused = true;
			break;
		case 'B':
			if (!strcmp(optarg, "memfd"))
				cfg->mem_backing = MEM_BACKING_MEMFD;
			else if (!strcmp(optarg, "thp"))
				cfg->mem_backing = MEM_BACKING_THP;
			else
				die_usage("--mem-backing '%s': expected memfd or thp", optarg);
			break;
		case 'J':
			cfg->jail.off = true;
			break;
		case 1000:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n < 1000 || n > (long)JAIL_ID_MAX)
				die_usage("--jail-id '%s': expected a uid from 1000 to %u", optarg,
				          JAIL_ID_MAX);
			cfg->jail.id = (uint32_t)n;
			break;
		case 1001:
			cfg->jail.cgroup = optarg;
			break;
		case 1002:
			cfg->jail.mem_max = parse_size("--jail-mem-max", optarg);
			break;
		case 1003:
			cfg->jail.rw_dir = optarg;
			break;
		case 1005:
			cfg->jail.cgroup_joined = true;
			break;
		case 1004:
			if (!strcmp(optarg, "kill"))
				cfg->jail.seccomp = JAIL_SECCOMP_KILL;
			else if (!strcmp(optarg, "log"))
				cfg->jail.seccomp = JAIL_SECCOMP_LOG;
			else
				die_usage("--jail-seccomp '%s': expected kill or log", optarg);
			break;
		case 1006:
			cfg->host_cpuid_path = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			die_usage("bad option");
		}
	}
	if (!cfg->kernel_path)
		die_usage("--kernel is required");
	if (cfg->nr_cpus != 1)
		die_usage("--cpus %d: this kiln-kernel runs on one vCPU; SMP is not supported yet",
		          cfg->nr_cpus);
	cfg->init_argc = argc - optind;
	cfg->init_argv = argv + optind;
	if (cfg->restore_path && (cfg->init_argc || cfg->cmdline))
		die_usage("--restore: a restored VM goes on with its own programs and kernel "
		          "options; drop --cmdline and the arguments after --");
	if (!cfg->restore_path && (cfg->parent_path || cfg->template_dir || cfg->mem_fd >= 0 ||
	                           cfg->start_paused || cfg->restore_mode != RESTORE_EAGER))
		die_usage("--restore-mode, --parent, --template-dir, --mem-fd and --paused go "
		          "with --restore");
	if (cfg->mem_fd >= 0 && cfg->restore_mode != RESTORE_TEMPLATE)
		die_usage("--mem-fd goes with --restore-mode template");
	if (cfg->jail.cgroup && cfg->jail.cgroup_joined)
		die_usage("--jail-cgroup DIR names a parent for a leaf of kiln-vmm's own, "
		          "--jail-cgroup-joined the cgroup it runs in: give one of them");
	if (cfg->mem_backing == MEM_BACKING_THP && cfg->restore_path &&
	    cfg->restore_mode != RESTORE_EAGER)
		die_usage("--mem-backing thp goes with booting or --restore-mode eager: a lazy "
		          "restore fills memory page by page and a template clone maps the "
		          "template's memory");
	cfg->console_in = STDIN_FILENO;
	cfg->console_out = STDOUT_FILENO;
}
