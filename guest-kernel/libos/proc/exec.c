/* SPDX-License-Identifier: MIT */
/*
 * Loading a program: its ELF segments into a fresh address space, mapped
 * eagerly, and the Linux initial stack (argc, argv, envp, auxv). Pages of
 * read-only segments that an image holds are mapped in place.
 */
#include <linux/stat.h>

#include "elf.h"
#include "exec.h"
#include "ktime.h"
#include "printk.h"
#include "rng.h"
#include "vfs.h"
#include "vm.h"

#define STACK_TOP     USER_TOP
#define STACK_MAX     (8UL << 20)
#define PIE_BASE      0x555555554000UL
#define MAX_ARG_BYTES (256UL << 10)
#define MAX_IMAGE     (1UL << 30)
#define SCRIPT_DEPTH  5 /* "#!" scripts in a chain, as Linux */

/* auxv keys (linux/auxvec.h, asm/auxvec.h) */
#define AT_NULL     0
#define AT_PHDR     3
#define AT_PHENT    4
#define AT_PHNUM    5
#define AT_PAGESZ   6
#define AT_BASE     7
#define AT_FLAGS    8
#define AT_ENTRY    9
#define AT_UID      11
#define AT_EUID     12
#define AT_GID      13
#define AT_EGID     14
#define AT_PLATFORM 15
#define AT_HWCAP    16
#define AT_CLKTCK   17
#define AT_SECURE   23
#define AT_RANDOM   25
#define AT_HWCAP2   26
#define AT_EXECFN   31
#define AUX_MAX     20

static uint32_t hwcap;

void exec_init(void)
{
	uint32_t a = 1, b, c, d;

	/* One cpuid at boot (it traps at CPL3); programs get it via AT_HWCAP. */
	asm volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d));
	hwcap = d;
}

/* Copy bytes into another address space through the direct map. */
static int as_write(struct aspace *as, uint64_t va, const void *src, size_t n)
{
	const char *s = src;

	while (n) {
		uint64_t pa = vm_translate(as, va);
		size_t chunk = MIN(n, PAGE_SIZE - (va & (PAGE_SIZE - 1)));
		if (pa == ~0ULL)
			return -EFAULT;
		memcpy(phys_to_virt(pa), s, chunk);
		va += chunk;
		s += chunk;
		n -= chunk;
	}
	return 0;
}

/* File bytes straight into mapped pages, a page at a time (borrowed pages
 * hold them already), by the VMM where they are image bytes (hc). */
static int as_read_file(struct aspace *as, uint64_t va, struct inode *ip, uint64_t off, size_t n,
                        struct host_copy *hc)
{
	while (n) {
		uint64_t pa = vm_translate_own(as, va);
		size_t chunk = MIN(n, PAGE_SIZE - (va & (PAGE_SIZE - 1)));
		if (pa == ~0ULL || (pa && vfs_inode_read_batch(ip, phys_to_virt(pa), chunk, off,
		                                               hc) != (long)chunk))
			return -EIO;
		va += chunk;
		off += chunk;
		n -= chunk;
	}
	return 0;
}

struct seg_pages {
	const struct elf_info *ei;
	unsigned i;
	uint64_t bias, start;
	struct inode *ip;
};

/* Page i of segment m->i's mapping (from m->start) in place, when it is a
 * read-only segment's file bytes alone (not its last bytes before .bss,
 * not a page another segment shares): as Linux, the page's bytes outside
 * the segment are the file's too, its last page's included. Code comes
 * with the syscall sites other processes rewrote. */
static uint64_t seg_page(void *ctx, uint64_t i)
{
	const struct seg_pages *m = ctx;
	const struct elf_segment *s = &m->ei->seg[m->i];
	uint64_t va = m->start + i * PAGE_SIZE, v0 = s->vaddr + m->bias, pa;

	if ((s->prot & PROT_WRITE) || (s->vaddr - s->offset) % PAGE_SIZE ||
	    (va + PAGE_SIZE > v0 + s->filesz && s->memsz != s->filesz))
		return 0;
	for (unsigned j = 0; j < m->ei->nseg; j++) {
		const struct elf_segment *o = &m->ei->seg[j];

		if (j != m->i && ALIGN_DOWN(o->vaddr + m->bias, PAGE_SIZE) < va + PAGE_SIZE &&
		    o->vaddr + m->bias + o->memsz > va)
			return 0;
	}
	pa = vfs_inode_page(m->ip, (s->offset + va - v0) / PAGE_SIZE);
	return pa && (s->prot & PROT_EXEC) ? vm_text_page(pa) : pa;
}

/* The segments mapped with their final protections at once (the file's
 * bytes are written through the direct map). Segments may share a
 * boundary page: it is mapped once, and gets both segments' rights, as
 * does the whole later segment. */
static int load_segments(struct aspace *as, const struct elf_info *ei, uint64_t bias,
                         struct inode *ip)
{
	uint64_t mapped_end = 0;
	struct host_copy hc;
	int err = 0;

	host_copy_begin(&hc);
	for (unsigned i = 0; i < ei->nseg && !err; i++) {
		const struct elf_segment *s = &ei->seg[i];
		uint64_t lo = ALIGN_DOWN(s->vaddr + bias, PAGE_SIZE), start = MAX(lo, mapped_end);
		uint64_t end = ALIGN_UP(s->vaddr + bias + s->memsz, PAGE_SIZE);
		uint32_t prot = s->prot;

		if (i > 0 &&
		    ALIGN_UP(ei->seg[i - 1].vaddr + bias + ei->seg[i - 1].memsz, PAGE_SIZE) > lo)
			prot |= ei->seg[i - 1].prot;
		if (start < end) {
			struct seg_pages m = {ei, i, bias, start, ip};

			err = vm_map_pages(as, start, end - start, prot, 0, seg_page, &m);
			if (err)
				break;
			mapped_end = end;
		}
		if (lo < start) /* pages an earlier segment mapped */
			vm_protect(as, lo, MIN(start, end) - lo, prot);
		err = as_read_file(as, s->vaddr + bias, ip, s->offset, s->filesz, &hc);
	}
	host_copy_end(&hc);
	return err;
}

struct stack_builder {
	struct aspace *as;
	uint64_t sp;
};

static int push_bytes(struct stack_builder *sb, const void *p, size_t n, uint64_t *at)
{
	sb->sp -= n;
	*at = sb->sp;
	return as_write(sb->as, sb->sp, p, n);
}

static int build_stack(struct aspace *as, const struct exec_args *ea, const struct elf_info *ei,
                       uint64_t bias, uint64_t interp_base, const struct exec_image *img,
                       uint64_t *sp_out)
{
	struct stack_builder sb = {.as = as, .sp = STACK_TOP};
	size_t nwords = 1 + (size_t)ea->argc + 1 + (size_t)ea->envc + 1 + 2 * AUX_MAX;
	uint64_t *w = kmalloc(nwords * 8), execfn, platform, random, at;
	uint8_t rnd[16];
	size_t n = 0, argv0;
	int err = 0;

	if (!w)
		return -ENOMEM;
	/* Strings first (highest), then the word array below them. */
	err |= push_bytes(&sb, ea->path, strlen(ea->path) + 1, &execfn);
	argv0 = 1;
	for (int i = ea->envc - 1; i >= 0; i--) {
		err |= push_bytes(&sb, ea->envp[i], strlen(ea->envp[i]) + 1, &at);
		w[argv0 + (size_t)ea->argc + 1 + (size_t)i] = at;
	}
	for (int i = ea->argc - 1; i >= 0; i--) {
		err |= push_bytes(&sb, ea->argv[i], strlen(ea->argv[i]) + 1, &at);
		w[argv0 + (size_t)i] = at;
	}
	/* The strings lie argv[0] .. argv[argc-1], envp[0] .. envp[envc-1], path. */
	as->env_end = execfn;
	as->env_start = ea->envc ? w[argv0 + (size_t)ea->argc + 1] : execfn;
	as->arg_end = as->env_start;
	as->arg_start = ea->argc ? w[argv0] : as->arg_end;
	err |= push_bytes(&sb, "x86_64", 7, &platform);
	rng_read(rnd, sizeof(rnd));
	sb.sp &= ~15UL;
	err |= push_bytes(&sb, rnd, sizeof(rnd), &random);
	if (err) {
		kfree(w);
		return -EFAULT;
	}
	w[0] = (uint64_t)ea->argc;
	n = 1 + (size_t)ea->argc;
	w[n++] = 0;
	n += (size_t)ea->envc;
	w[n++] = 0;

#define AUX(k, val) (w[n++] = (k), w[n++] = (val))
	AUX(AT_PHDR, ei->phdr_vaddr + bias);
	AUX(AT_PHENT, ei->phentsize);
	AUX(AT_PHNUM, ei->phnum);
	AUX(AT_PAGESZ, PAGE_SIZE);
	AUX(AT_BASE, interp_base);
	AUX(AT_FLAGS, 0);
	AUX(AT_ENTRY, ei->entry + bias);
	AUX(AT_UID, img->cred.u.real);
	AUX(AT_EUID, img->cred.u.eff);
	AUX(AT_GID, img->cred.g.real);
	AUX(AT_EGID, img->cred.g.eff);
	AUX(AT_SECURE, img->secure);
	AUX(AT_RANDOM, random);
	AUX(AT_HWCAP, hwcap);
	AUX(AT_HWCAP2, 2); /* HWCAP2_FSGSBASE: rd/wrfsbase work at CPL3 */
	AUX(AT_CLKTCK, 100);
	AUX(AT_PLATFORM, platform);
	AUX(AT_EXECFN, execfn);
	AUX(AT_NULL, 0);
#undef AUX

	/* argc must end up 16-byte aligned. */
	sb.sp = (sb.sp - n * 8) & ~15UL;
	err = as_write(as, sb.sp, w, n * 8);
	kfree(w);
	*sp_out = sb.sp;
	return err;
}

/* On success *stack is what the new stack maps at once: the strings and
 * words build_stack puts there, and STACK_GROW for the program. */
static int check_args(const struct exec_args *ea, size_t *stack)
{
	size_t bytes = strlen(ea->path) + 1;

	if (ea->argc < 0 || ea->argc > EXEC_MAX_ARGS || ea->envc < 0 || ea->envc > EXEC_MAX_ARGS)
		return -E2BIG;
	for (int i = 0; i < ea->argc; i++)
		bytes += strlen(ea->argv[i]) + 1;
	for (int i = 0; i < ea->envc; i++)
		bytes += strlen(ea->envp[i]) + 1;
	if (bytes > MAX_ARG_BYTES)
		return -E2BIG;
	bytes += 64 + ((size_t)ea->argc + (size_t)ea->envc + 3 + 2 * AUX_MAX) * 8;
	*stack = ALIGN_UP(bytes, PAGE_SIZE) + STACK_GROW;
	return 0;
}

/* An executable file opened for loading, with its parsed headers. */
struct elf_file {
	struct inode *ip;
	struct elf_info ei;
	uint8_t *hdr;     /* our copy of the first page, when not mapped directly */
	const void *head; /* the file's first bytes, for a "#!" script */
	size_t head_len;
};

static void elf_close(struct elf_file *f)
{
	kfree(f->hdr);
	if (f->ip)
		inode_put(f->ip);
	f->hdr = NULL;
	f->ip = NULL;
}

static int elf_open(const char *path, struct elf_file *f, const char **why)
{
	const void *image;
	size_t len;
	int err;

	memset(f, 0, sizeof(*f));
	err = vfs_lookup(path, true, &f->ip);
	if (err)
		return err;
	if (!S_ISREG(vfs_inode_mode(f->ip)))
		return S_ISDIR(vfs_inode_mode(f->ip)) ? -EISDIR : -EACCES;
	err = vfs_permission(f->ip, VFS_MAY_EXEC); /* root: any x bit will do */
	if (err)
		return err;
	/* Use the file in place when it is contiguous (initramfs files are);
	 * else its first page holds the headers of any sane executable. */
	image = vfs_inode_direct(f->ip, &len);
	if (!image) {
		long got;
		f->hdr = kmalloc(PAGE_SIZE);
		if (!f->hdr)
			return -ENOMEM;
		got = vfs_inode_read(f->ip, f->hdr, PAGE_SIZE, 0);
		if (got < 0)
			return (int)got;
		image = f->hdr;
		len = (size_t)got;
	}
	if (exec_is_script(image, len)) {
		f->head = image;
		f->head_len = len;
		return 0;
	}
	err = f->hdr ? elf_parse_headers(image, len, vfs_inode_size(f->ip), &f->ei, why)
	             : elf_parse(image, len, &f->ei, why);
	if (err)
		return -ENOEXEC;
	if (f->ei.hi - f->ei.lo > MAX_IMAGE) {
		*why = "program image too large";
		return -ENOMEM;
	}
	return 0;
}

/* The program interpreter (ld.so) named by PT_INTERP: an ET_DYN without an
 * interpreter of its own, loaded wherever there is room. */
static int load_interp(struct aspace *as, const struct elf_file *prog, uint64_t *base,
                       uint64_t *entry, const char **why)
{
	char path[4096];
	struct elf_file f;
	uint64_t span, at;
	int err;

	if (prog->ei.interp_len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, prog->ei.interp, prog->ei.interp_len);
	path[prog->ei.interp_len] = 0;
	err = elf_open(path, &f, why);
	if (!err && (f.ei.type != ELF_ET_DYN || f.ei.interp)) {
		*why = "the program interpreter is not a shared object";
		err = -ELIBBAD;
	}
	if (err) {
		if (err == -ENOENT)
			*why = "its program interpreter (PT_INTERP) is missing";
		elf_close(&f);
		return err == -ENOENT ? -ENOEXEC : err;
	}
	span = ALIGN_UP(f.ei.hi, PAGE_SIZE) - ALIGN_DOWN(f.ei.lo, PAGE_SIZE);
	at = vm_find_free(as, span + HUGE_SIZE);
	if (!at) {
		elf_close(&f);
		return -ENOMEM;
	}
	*base = ALIGN_UP(at, HUGE_SIZE) - ALIGN_DOWN(f.ei.lo, PAGE_SIZE);
	err = load_segments(as, &f.ei, *base, f.ip);
	*entry = f.ei.entry + *base;
	elf_close(&f);
	return err;
}

/* Open the program, following "#!" lines to the interpreter that runs it;
 * *ea becomes that interpreter's arguments. */
static int open_program(struct exec_args *ea, struct elf_file *f, void **owned, const char **why)
{
	for (int depth = 0;; depth++) {
		int err = elf_open(ea->path, f, why);

		if (err || !f->head)
			return err;
		if (depth == SCRIPT_DEPTH) {
			*why = "too many levels of #! interpreters";
			return -ELOOP;
		}
		err = exec_script_args(f->head, f->head_len, ea, &owned[2 * depth], why);
		elf_close(f);
		if (err)
			return err;
	}
}

int exec_load(const struct exec_args *args, const struct cred *cred, bool no_new_privs,
              struct exec_image *out, const char **why)
{
	struct exec_args a = *args, *ea = &a;
	struct elf_file f;
	struct aspace *as = NULL;
	uint64_t bias, interp_base = 0, entry;
	size_t stack = 0;
	void *owned[2 * SCRIPT_DEPTH] = {0};
	int err;

	*why = NULL;
	aspace_reap();
	err = open_program(ea, &f, owned, why);
	if (!err)
		err = check_args(ea, &stack);
	if (err)
		goto out;
	/* The set-id bits of the program itself: a script's are ignored, its
	 * interpreter's count, as on Linux. */
	{
		uint32_t uid, gid;

		vfs_inode_owner(f.ip, &uid, &gid);
		out->secure =
		    exec_creds(cred, no_new_privs, vfs_inode_mode(f.ip), uid, gid, &out->cred);
		/* A program the caller may not read is not dumpable either
		 * (Linux's would_dump): its memory is not the caller's to see. */
		out->unreadable = vfs_permission(f.ip, VFS_MAY_READ) != 0;
	}
	bias = f.ei.type == ELF_ET_DYN ? PIE_BASE - ALIGN_DOWN(f.ei.lo, PAGE_SIZE) : 0;
	entry = f.ei.entry + bias;
	as = aspace_create();
	if (!as) {
		err = -ENOMEM;
		goto out;
	}
	aspace_keep_seek(as);
	err = load_segments(as, &f.ei, bias, f.ip);
	if (!err && f.ei.interp)
		err = load_interp(as, &f, &interp_base, &entry, why);
	if (!err)
		err = vm_map_anon(as, STACK_TOP - stack, stack, PROT_READ | PROT_WRITE, VMA_STACK);
	if (!err)
		err = build_stack(as, ea, &f.ei, bias, interp_base, out, &out->sp);
	if (err)
		goto out;
	as->brk_start = as->brk = ALIGN_UP(f.ei.hi + bias, PAGE_SIZE);
	aspace_keep_tables(as);
	out->as = as;
	out->entry = entry;
	as = NULL;
out:
	if (as)
		aspace_release(as);
	elf_close(&f);
	for (int i = 0; i < 2 * SCRIPT_DEPTH; i++)
		kfree(owned[i]);
	return err;
}
