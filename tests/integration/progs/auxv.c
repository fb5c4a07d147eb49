// SPDX-License-Identifier: MIT
/*
 * Checks the initial process stack the kernel builds for a static program:
 * argc/argv/envp layout and alignment, and the auxiliary vector that libc's
 * startup code depends on. Prints argc, argv and envp, then "auxv ok", or one
 * "auxv: FAIL ..." line per broken rule and exits 1.
 *
 * The ELF facts come from the program itself: the linker-defined
 * __ehdr_start is the run-time address of our own ELF header, so the same
 * checks hold for a fixed-address and a static-pie build.
 */
#include <elf.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern const Elf64_Ehdr __ehdr_start;
extern char _start[];

/* Returns the caller's %rsp at the call instruction. The ABI wants it 16-byte
 * aligned there, and the compiler keeps it so if main was entered aligned. */
uintptr_t stack_at_call(void);
__asm__(".text\n"
        ".globl stack_at_call\n"
        ".type stack_at_call, @function\n"
        "stack_at_call:\n"
        "	lea 8(%rsp), %rax\n"
        "	ret\n"
        ".size stack_at_call, . - stack_at_call\n");

#define MAX_AUXV 128

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("auxv: FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures++;
}

struct aux {
	int seen;
	unsigned long val;
};

static const char *aux_name(unsigned long t)
{
	switch (t) {
	case AT_PHDR:
		return "AT_PHDR";
	case AT_PHENT:
		return "AT_PHENT";
	case AT_PHNUM:
		return "AT_PHNUM";
	case AT_PAGESZ:
		return "AT_PAGESZ";
	case AT_BASE:
		return "AT_BASE";
	case AT_FLAGS:
		return "AT_FLAGS";
	case AT_ENTRY:
		return "AT_ENTRY";
	case AT_UID:
		return "AT_UID";
	case AT_EUID:
		return "AT_EUID";
	case AT_GID:
		return "AT_GID";
	case AT_EGID:
		return "AT_EGID";
	case AT_PLATFORM:
		return "AT_PLATFORM";
	case AT_HWCAP:
		return "AT_HWCAP";
	case AT_HWCAP2:
		return "AT_HWCAP2";
	case AT_CLKTCK:
		return "AT_CLKTCK";
	case AT_SECURE:
		return "AT_SECURE";
	case AT_RANDOM:
		return "AT_RANDOM";
	case AT_EXECFN:
		return "AT_EXECFN";
	case AT_SYSINFO_EHDR:
		return "AT_SYSINFO_EHDR";
	case AT_MINSIGSTKSZ:
		return "AT_MINSIGSTKSZ";
	default:
		return NULL;
	}
}

/* Which PT_LOAD segment (at run time, after adding bias) holds addr? */
static const Elf64_Phdr *segment_of(const Elf64_Phdr *ph, unsigned n, uintptr_t bias,
                                    uintptr_t addr)
{
	for (unsigned i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && addr >= bias + ph[i].p_vaddr &&
		    addr - (bias + ph[i].p_vaddr) < ph[i].p_memsz)
			return &ph[i];
	return NULL;
}

static void check_stack(int argc, char **argv, char **envp)
{
	uintptr_t sp0 = (uintptr_t)(argv - 1);

	/* At _start, %rsp points at argc and is 16-byte aligned (x86-64 psABI). */
	if (sp0 % 16)
		fail("initial stack pointer %#lx is not 16-byte aligned", (unsigned long)sp0);
	if (*(long *)sp0 != argc)
		fail("argc on the stack is %ld, main got %d", *(long *)sp0, argc);
	if (argv[argc] != NULL)
		fail("argv[argc] is %p, not NULL", (void *)argv[argc]);
	if (envp != argv + argc + 1)
		fail("envp (%p) does not follow argv's NULL (%p)", (void *)envp,
		     (void *)(argv + argc + 1));
	if (stack_at_call() % 16)
		fail("stack at a call in main is %#lx, not 16-byte aligned",
		     (unsigned long)stack_at_call());
}

static void check_elf(struct aux *a)
{
	const Elf64_Ehdr *eh = &__ehdr_start;
	const Elf64_Phdr *ph, *seg;
	uintptr_t bias = 0;
	unsigned loads = 0;
	int have_bias = 0;

	if (!a[AT_PHDR].seen || !a[AT_PHNUM].seen || !a[AT_ENTRY].seen) {
		fail("missing AT_PHDR (%d), AT_PHNUM (%d) or AT_ENTRY (%d)", a[AT_PHDR].seen,
		     a[AT_PHNUM].seen, a[AT_ENTRY].seen);
		return;
	}
	if (a[AT_PHDR].val != (uintptr_t)eh + eh->e_phoff)
		fail("AT_PHDR is %#lx, the program headers are at %#lx", a[AT_PHDR].val,
		     (unsigned long)((uintptr_t)eh + eh->e_phoff));
	if (a[AT_PHNUM].val != eh->e_phnum)
		fail("AT_PHNUM is %lu, the ELF header says %u", a[AT_PHNUM].val, eh->e_phnum);
	if (a[AT_PHENT].seen && a[AT_PHENT].val != sizeof(Elf64_Phdr))
		fail("AT_PHENT is %lu, expected %zu", a[AT_PHENT].val, sizeof(Elf64_Phdr));
	if (a[AT_ENTRY].val != (uintptr_t)_start)
		fail("AT_ENTRY is %#lx, _start is at %p", a[AT_ENTRY].val, (void *)_start);

	/* Walk the headers AT_PHDR points to, as libc's startup does. */
	ph = (const Elf64_Phdr *)a[AT_PHDR].val;
	for (unsigned i = 0; i < a[AT_PHNUM].val && i < 64; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		loads++;
		if (ph[i].p_offset == 0 && !have_bias) {
			bias = (uintptr_t)eh - ph[i].p_vaddr;
			have_bias = 1;
		}
	}
	if (!loads) {
		fail("no PT_LOAD among the %lu headers at AT_PHDR %#lx", a[AT_PHNUM].val,
		     a[AT_PHDR].val);
		return;
	}
	if (!have_bias) {
		fail("no PT_LOAD maps the ELF header (%u loads, header at %p)", loads,
		     (const void *)eh);
		return;
	}
	if (eh->e_type == ET_EXEC && bias != 0)
		fail("fixed-address program loaded with bias %#lx", (unsigned long)bias);
	if (bias % 4096)
		fail("load bias %#lx is not page aligned", (unsigned long)bias);
	if (a[AT_ENTRY].val != bias + eh->e_entry)
		fail("AT_ENTRY is %#lx, e_entry plus load bias is %#lx", a[AT_ENTRY].val,
		     (unsigned long)(bias + eh->e_entry));
	seg = segment_of(ph, (unsigned)a[AT_PHNUM].val, bias, a[AT_ENTRY].val);
	if (!seg || !(seg->p_flags & PF_X))
		fail("AT_ENTRY %#lx is not in an executable PT_LOAD (in a segment: %s)",
		     a[AT_ENTRY].val, seg ? "yes" : "no");
	seg = segment_of(ph, (unsigned)a[AT_PHNUM].val, bias, (uintptr_t)&loads);
	if (seg)
		fail("the stack (%p) overlaps a PT_LOAD segment", (void *)&loads);
}

static void check_other(struct aux *a)
{
	if (!a[AT_PAGESZ].seen || a[AT_PAGESZ].val != 4096)
		fail("AT_PAGESZ is %lu (present: %d), expected 4096", a[AT_PAGESZ].val,
		     a[AT_PAGESZ].seen);
	if (!a[AT_HWCAP].seen)
		fail("AT_HWCAP missing");
	if (!a[AT_RANDOM].seen || !a[AT_RANDOM].val) {
		fail("AT_RANDOM missing or NULL (%#lx)", a[AT_RANDOM].val);
	} else {
		/* Reading the 16 bytes faults (and fails the test) if unmapped. */
		const volatile unsigned char *r = (const unsigned char *)a[AT_RANDOM].val;
		unsigned long orall = 0;

		for (int i = 0; i < 16; i++)
			orall |= r[i];
		if (!orall)
			fail("the 16 AT_RANDOM bytes at %#lx are all zero", a[AT_RANDOM].val);
	}
	if (a[AT_BASE].seen && a[AT_BASE].val != 0)
		fail("AT_BASE is %#lx for a program without an interpreter", a[AT_BASE].val);
	if (a[AT_SECURE].seen && a[AT_SECURE].val != 0)
		fail("AT_SECURE is %lu", a[AT_SECURE].val);
	if (a[AT_SYSINFO_EHDR].seen && a[AT_SYSINFO_EHDR].val &&
	    memcmp((const void *)a[AT_SYSINFO_EHDR].val, ELFMAG, SELFMAG))
		fail("AT_SYSINFO_EHDR %#lx does not point at an ELF header",
		     a[AT_SYSINFO_EHDR].val);
	if (a[AT_PLATFORM].seen && strcmp((const char *)a[AT_PLATFORM].val, "x86_64"))
		fail("AT_PLATFORM is \"%s\", not \"x86_64\"", (const char *)a[AT_PLATFORM].val);
}

int main(int argc, char **argv, char **envp)
{
	static struct aux a[AT_MINSIGSTKSZ + 1];
	Elf64_auxv_t *av;
	char **e;
	int n;

	printf("argc=%d\n", argc);
	for (int i = 0; i < argc; i++)
		printf("argv[%d]=%s\n", i, argv[i]);
	for (n = 0; envp[n]; n++)
		printf("envp[%d]=%s\n", n, envp[n]);

	check_stack(argc, argv, envp);

	/* The auxiliary vector starts right after envp's NULL. */
	for (e = envp; *e; e++)
		;
	av = (Elf64_auxv_t *)(e + 1);
	for (n = 0; n < MAX_AUXV && av[n].a_type != AT_NULL; n++) {
		unsigned long t = av[n].a_type;
		const char *name = aux_name(t);

		if (name)
			printf("auxv %-16s %#lx\n", name, (unsigned long)av[n].a_un.a_val);
		else
			printf("auxv type %-11lu %#lx\n", t, (unsigned long)av[n].a_un.a_val);
		if (t < sizeof(a) / sizeof(a[0])) {
			if (a[t].seen)
				fail("auxv type %lu appears twice", t);
			a[t].seen = 1;
			a[t].val = av[n].a_un.a_val;
		}
	}
	if (n == MAX_AUXV)
		fail("no AT_NULL within %d auxv entries", MAX_AUXV);

	check_elf(a);
	check_other(a);

	if (failures) {
		printf("auxv: %d checks failed\n", failures);
		return 1;
	}
	printf("auxv ok\n");
	return 0;
}
