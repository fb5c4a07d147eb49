/* SPDX-License-Identifier: MIT */
/*
 * Library OS boot, at CPL3 right after the supervisor's first iretq:
 * device tree, memory, devices, root filesystem, then init.
 */
#include "bootinfo.h"
#include "console.h"
#include "exec.h"
#include "kcpu.h"
#include "ktime.h"
#include "pmem.h"
#include "printk.h"
#include "proc.h"
#include "resume.h"
#include "rng.h"
#include "sched.h"
#include "socket.h"
#include "syscall.h"
#include "vfs.h"
#include "vm.h"
#include "vpmem.h"

#define MAX_BOOT_ARGS   4096
#define KILN_IMAGE_INIT "/sbin/kiln-init" /* init of an image booted alone */

struct kcpu kcpu0 __attribute__((aligned(64)));

/* Boot milestones (TSC) for kiln.stats=1: clock, memory, console, rng,
 * root file system; the start of init is marked in proc.c. */
uint64_t boot_tsc[BOOT_MARKS];

void boot_mark(int i)
{
	boot_tsc[i] = rdtsc();
}
extern bool kiln_stats;
extern unsigned int kiln_strace;

/* libfdt is built with -fstack-protector and reads its canary at %fs:0x28;
 * until init runs, %fs points here. */
static uint64_t boot_tls[8] = {[5] = 0x6b696c6e2d746c73ULL};
static struct thread boot_thread;
extern char libos_boot_stack_top[];

static char *init_env[] = {
    "PATH=/bin:/sbin:/usr/bin:/usr/sbin",
    "HOME=/",
    "TERM=linux",
    NULL,
};

/* Kernel options from bootargs; init's argv from kiln,argv (or init=). */
static void parse_boot_args(const struct bootinfo *bi, int *argc, char ***argv)
{
	size_t len = strlen(bi->bootargs) + 1;
	char **words = kmalloc(MAX_BOOT_ARGS * sizeof(char *)), *buf = kmalloc(len);
	char **av = kmalloc(((size_t)bi->argc + 2) * sizeof(char *));
	const char *init = NULL, *p = bi->argv;
	int n;

	if (!words || !buf || !av || bi->argc > EXEC_MAX_ARGS ||
	    (n = bootargs_split(bi->bootargs, buf, len, words, MAX_BOOT_ARGS)) < 0)
		kpanic("boot arguments too long");
	for (int i = 0; i < n; i++) {
		if (!strcmp(words[i], "kiln.stats=1"))
			kiln_stats = true;
		else if (!strncmp(words[i], "kiln.strace=", 12))
			kiln_strace = words[i][12] == '2' ? 2 : words[i][12] == '1';
		else if (!strcmp(words[i], "kiln.borrow=0"))
			vm_borrow_pages = false;
		else if (!strcmp(words[i], "kiln.thp=never"))
			vm_thp = VM_THP_NEVER;
		else if (!strcmp(words[i], "kiln.thp=always"))
			vm_thp = VM_THP_ALWAYS;
		else if (!strncmp(words[i], "init=", 5))
			init = words[i] + 5;
	}
	for (int i = 0; i < bi->argc; i++) {
		av[i] = (char *)p;
		p += strlen(p) + 1;
	}
	*argc = bi->argc;
	if (!*argc && init)
		av[(*argc)++] = (char *)init;
	av[*argc] = NULL;
	*argv = av;
	kfree(words);
}

void libos_main(uint64_t fdt_pa)
{
	struct bootinfo *bi;
	const char *err = NULL;
	const void *image;
	uint64_t image_len;
	char **argv;
	int argc, rc;

	asm volatile("wrfsbase %0" ::"r"(boot_tls) : "memory");
	boot_thread.kstack_top = (uint64_t)libos_boot_stack_top;
	thread_set_current(&boot_thread);

	static struct bootinfo boot_info;
	bi = &boot_info;
	if (bootinfo_parse(phys_to_virt(fdt_pa), bi, &err))
		kpanic("device tree: %s", err);
	time_init(bi);
	boot_mark(0);
	sched_init();
	/* The constant words of an interrupt frame forwarded to us. */
	kcpu0.irq_frame[0] = KILN_VEC_TIMER;
	kcpu0.irq_frame[3] = KILN_SEL_UCODE;
	kcpu0.irq_frame[6] = KILN_SEL_UDATA;
	pmem_init(bi);
	vm_init(bi);
	boot_mark(1);
	rc = console_init(bi);
	if (rc)
		kpanic("no virtio console (error %d)", rc);
	boot_mark(2);
	rng_init(bi);
	resume_init();
	socket_init(bi);
	boot_mark(3);
	syscall_init();
	exec_init();
	if (vfs_init())
		kpanic("cannot create the root filesystem");
	rc = vpmem_image(bi, &image, &image_len, &err);
	if (!rc)
		rc = vfs_mount_image(image, image_len, &err);
	if (rc && rc != -ENODEV) {
		kprintf("kiln: image: %s (error %d)\n", err, -rc);
		guest_exit(127);
	}
	if (bi->initrd_end > bi->initrd_start &&
	    vfs_unpack_initramfs(phys_to_virt(bi->initrd_start), bi->initrd_end - bi->initrd_start,
	                         bi->initrd_index_size ? phys_to_virt(bi->initrd_index) : NULL,
	                         bi->initrd_index_size, &err))
		kpanic("initramfs: %s", err ? err : "cannot unpack");
	boot_mark(4);
	parse_boot_args(bi, &argc, &argv);
	if (!argc && !rc && bi->initrd_end == bi->initrd_start) {
		/* An image alone: its own init, or the program after --. */
		struct inode *ip;

		if (vfs_lookup_at(NULL, KILN_IMAGE_INIT, true, &ip)) {
			kprintf("kiln: the image has no " KILN_IMAGE_INIT
			        ": name the program to run "
			        "(kiln-vmm --image FILE -- PROGRAM [ARGS...])\n");
			guest_exit(127);
		}
		inode_put(ip);
		argv[argc++] = (char *)KILN_IMAGE_INIT;
		argv[argc] = NULL;
	}
	console_start_input();
	proc_run_init(argc, argv, init_env);
}
