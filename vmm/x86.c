/* SPDX-License-Identifier: MIT */
/*
 * The machine state the guest kernel finds at its first instruction
 * (include/kiln/boot.h): page tables, GDT, TSS, IDT in the boot area, then
 * segment, control and general registers, MSRs, the local APIC and CPUID.
 * All of it is built here because every CPL0 instruction the guest would run
 * to do it itself is emulated on PVM hosts.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "../snapshot/snap.h"
#include "cpuid_cache.h"
#include "kiln/host_cpuid.h"
#include "vcpu.h"
#include "vm.h"
#include "x86.h"

#define PAGE        4096ULL
#define PTE_P       (1ULL << 0)
#define PTE_W       (1ULL << 1)
#define PTE_U       (1ULL << 2)
#define PTE_PWT     (1ULL << 3)
#define PTE_PCD     (1ULL << 4)
#define PTE_A       (1ULL << 5)
#define PTE_D       (1ULL << 6)
#define PTE_PS      (1ULL << 7)
#define PTE_G       (1ULL << 8)
#define PTE_NX      (1ULL << 63)
#define PTE_ADDR    0x000ffffffffff000ULL
#define TABLE_FLAGS (PTE_P | PTE_W | PTE_U | PTE_A) /* leaves decide */

/* Boot area (guest-physical), below KILN_GPA_KERNEL_MIN. */
#define GDT_PA     0x1000ULL
#define IDT_PA     0x2000ULL
#define TSS_PA     0x3000ULL /* TSS + 8 KiB I/O bitmap: three pages */
#define PML4_PA    0x6000ULL
#define PT_POOL_PA 0x7000ULL

#define TSS_IOMAP_OFF 104
#define TSS_LIMIT     (TSS_IOMAP_OFF + 8192 + 1 - 1)

struct boot_builder {
	struct vm *vm;
	uint64_t next; /* next free page-table page */
};

static uint64_t *table(struct boot_builder *b, uint64_t pa)
{
	return gpa_ptr(&b->vm->mem, pa, PAGE);
}

static int alloc_table(struct boot_builder *b, uint64_t *pa)
{
	if (b->next + PAGE > KILN_GPA_KERNEL_MIN)
		return -ENOSPC;
	*pa = b->next;
	b->next += PAGE;
	memset(table(b, *pa), 0, PAGE);
	return 0;
}

/* Walk (creating tables) down to the table at `level` (3 = PDPT .. 1 = PT)
 * that holds the entry for va. */
static int walk(struct boot_builder *b, uint64_t va, int level, uint64_t **out)
{
	uint64_t pa = PML4_PA;

	for (int l = 4; l > level; l--) {
		uint64_t *t = table(b, pa);
		uint64_t *e = &t[(va >> (12 + 9 * (l - 1))) & 511];
		if (!(*e & PTE_P)) {
			uint64_t n;
			int err = alloc_table(b, &n);
			if (err)
				return err;
			*e = n | TABLE_FLAGS;
		}
		pa = *e & PTE_ADDR;
	}
	*out = &table(b, pa)[(va >> (12 + 9 * (level - 1))) & 511];
	return 0;
}

/*
 * Leaves are made accessed, and dirty where writable: KVM's shadow paging
 * then need not write those bits into the guest's tables on the first
 * touch of each page, and it fills the shadow entries of up to 8
 * neighbouring pages on each fault, which it only does for entries
 * already accessed.
 */
static uint64_t leaf(uint64_t pa, uint64_t flags)
{
	return pa | flags | PTE_P | PTE_A | ((flags & PTE_W) ? PTE_D : 0);
}

/* Map [va, va + len) to pa onwards in 4 KiB pages: one walk per page
 * table, not per page (the initramfs alone takes thousands). */
static int map_4k(struct boot_builder *b, uint64_t va, uint64_t pa, uint64_t len, uint64_t flags)
{
	uint64_t *e = NULL;

	for (uint64_t off = 0; off < len; off += PAGE) {
		if (!e || !(((va + off) / PAGE) & 511)) {
			int err = walk(b, va + off, 1, &e);
			if (err)
				return err;
		}
		*e++ = leaf(pa + off, flags);
	}
	return 0;
}

static int map_direct(struct boot_builder *b)
{
	const struct guest_mem *m = &b->vm->mem;
	uint64_t flags = PTE_P | PTE_W | PTE_U | PTE_NX | PTE_PS | PTE_G;

	for (uint64_t off = 0; off < m->size; off += 2 << 20) {
		uint64_t pa = off < m->low_size ? off : KILN_GPA_HIGH_RAM + off - m->low_size;
		uint64_t *e;
		int err = walk(b, KILN_VA_DIRECT_MAP + pa, 2, &e);
		if (err)
			return err;
		*e = leaf(pa, flags);
	}
	return 0;
}

static int map_initrd(struct boot_builder *b)
{
	return map_4k(b, KILN_VA_DIRECT_MAP + KILN_GPA_INITRD, KILN_GPA_INITRD,
	              b->vm->mem.initrd_map_size, PTE_U | PTE_NX | PTE_G);
}

/* The image is read in place, so 2 MiB pages: the window is 2 MiB-aligned
 * and sized. */
static int map_pmem(struct boot_builder *b)
{
	uint64_t flags = PTE_P | PTE_U | PTE_NX | PTE_PS | PTE_G;

	for (uint64_t off = 0; off < b->vm->mem.pmem_size; off += 2 << 20) {
		uint64_t *e;
		int err = walk(b, KILN_VA_DIRECT_MAP + KILN_GPA_PMEM + off, 2, &e);
		if (err)
			return err;
		*e = leaf(KILN_GPA_PMEM + off, flags);
	}
	return 0;
}

static int map_mmio(struct boot_builder *b)
{
	return map_4k(b, KILN_VA_MMIO, KILN_GPA_MMIO_BASE, KILN_MMIO_MAX_DEVICES * KILN_MMIO_SIZE,
	              PTE_W | PTE_U | PTE_NX | PTE_PCD | PTE_PWT | PTE_G);
}

static int map_kernel(struct boot_builder *b)
{
	const struct kernel_info *ki = &b->vm->kernel;

	for (int i = 0; i < ki->nr_seg; i++) {
		const struct kernel_seg *s = &ki->seg[i];
		uint64_t flags = PTE_G;
		int err;

		if (s->flags & 2 /* PF_W */)
			flags |= PTE_W;
		if (!(s->flags & 1 /* PF_X */))
			flags |= PTE_NX;
		if (s->vaddr >= KILN_VA_LIBOS_START)
			flags |= PTE_U;
		err = map_4k(b, s->vaddr, s->paddr, s->memsz, flags);
		if (err)
			return err;
	}
	return 0;
}

static void build_gdt(struct vm *vm)
{
	uint64_t *gdt = gpa_ptr(&vm->mem, GDT_PA, PAGE);
	uint64_t base = KILN_VA_DIRECT_MAP + TSS_PA;

	memset(gdt, 0, PAGE);
	gdt[KILN_SEL_KCODE >> 3] = 0x00af9b000000ffffULL;
	gdt[KILN_SEL_KDATA >> 3] = 0x00cf93000000ffffULL;
	gdt[KILN_SEL_UCODE32 >> 3] = 0x00cffb000000ffffULL;
	gdt[KILN_SEL_UDATA >> 3] = 0x00cff3000000ffffULL;
	gdt[KILN_SEL_UCODE >> 3] = 0x00affb000000ffffULL;
	/* 64-bit TSS, busy (type 11) as TR is loaded with it, present. */
	gdt[KILN_SEL_TSS >> 3] = (TSS_LIMIT & 0xffff) | ((base & 0xffffff) << 16) |
	                         (0x8bULL << 40) | (((uint64_t)TSS_LIMIT >> 16) << 48) |
	                         (((base >> 24) & 0xff) << 56);
	gdt[(KILN_SEL_TSS >> 3) + 1] = base >> 32;
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void build_tss(struct vm *vm)
{
	const struct kiln_boot_image *img = &vm->kernel.image;
	uint8_t *tss = gpa_ptr(&vm->mem, TSS_PA, 3 * PAGE);
	uint8_t *iomap = tss + TSS_IOMAP_OFF;
	uint16_t iomap_base = TSS_IOMAP_OFF;

	memset(tss, 0, 3 * PAGE);
	put64(tss + 4, img->rsp0);
	for (int i = 0; i < 7; i++)
		put64(tss + 36 + 8 * i, img->ist[i]);
	memcpy(tss + 102, &iomap_base, 2);
	/* Deny all ports to CPL3 except kiln's own (the quiesce and device
	 * batch ports are the supervisor's). */
	memset(iomap, 0xff, 8192 + 1);
	for (int p = KILN_PORT_BASE; p < KILN_PORT_BASE + KILN_PORT_COUNT; p++)
		if (p != KILN_PORT_QUIESCE && p != KILN_PORT_MMIO)
			iomap[p / 8] &= (uint8_t) ~(1u << (p % 8));
}

static void build_idt(struct vm *vm)
{
	const struct kiln_boot_image *img = &vm->kernel.image;
	uint64_t *idt = gpa_ptr(&vm->mem, IDT_PA, PAGE);

	memset(idt, 0, PAGE);
	for (int v = 0; v < KILN_NR_VECTORS; v++) {
		uint64_t h = img->vector[v];
		uint8_t f = img->vector_flags[v];
		uint64_t type = (f & KILN_VF_TRAP) ? 0xf : 0xe;
		uint64_t dpl = (f & KILN_VF_DPL3) ? 3 : 0;

		if (!h)
			continue;
		idt[2 * v] = (h & 0xffff) | ((uint64_t)KILN_SEL_KCODE << 16) |
		             ((uint64_t)(f & KILN_VF_IST_MASK) << 32) | (type << 40) | (dpl << 45) |
		             (1ULL << 47) | (((h >> 16) & 0xffff) << 48);
		idt[2 * v + 1] = h >> 32;
	}
}

int x86_build_boot_area(struct vm *vm)
{
	struct boot_builder b = {.vm = vm, .next = PT_POOL_PA};
	int err;

	if (!gpa_ptr(&vm->mem, 0, KILN_GPA_KERNEL_MIN))
		return -ENOSPC;
	memset(table(&b, PML4_PA), 0, PAGE);
	err = map_direct(&b);
	if (!err)
		err = map_initrd(&b);
	if (!err)
		err = map_pmem(&b);
	if (!err)
		err = map_mmio(&b);
	if (!err)
		err = map_kernel(&b);
	if (err)
		return err;
	build_gdt(vm);
	build_tss(vm);
	build_idt(vm);
	vm->boot_area_end = b.next;
	return 0;
}

uint64_t x86_pml4_pa(void)
{
	return PML4_PA;
}

static void set_seg(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code)
{
	memset(s, 0, sizeof(*s));
	s->selector = sel;
	s->limit = 0xffffffff;
	s->type = type;
	s->present = 1;
	s->s = 1;
	s->g = 1;
	s->l = code;
	s->db = !code;
}

static int set_sregs(struct vcpu *c)
{
	struct kvm_sregs sr;

	if (ioctl(c->fd, KVM_GET_SREGS, &sr) < 0)
		return -errno;
	set_seg(&sr.cs, KILN_SEL_KCODE, 0xb, true);
	set_seg(&sr.ds, KILN_SEL_KDATA, 0x3, false);
	sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
	memset(&sr.tr, 0, sizeof(sr.tr));
	sr.tr.selector = KILN_SEL_TSS;
	sr.tr.base = KILN_VA_DIRECT_MAP + TSS_PA;
	sr.tr.limit = TSS_LIMIT;
	sr.tr.type = 0xb; /* busy 64-bit TSS */
	sr.tr.present = 1;
	sr.ldt.unusable = 1;
	sr.gdt.base = KILN_VA_DIRECT_MAP + GDT_PA;
	sr.gdt.limit = (KILN_SEL_TSS + 16) - 1;
	sr.idt.base = KILN_VA_DIRECT_MAP + IDT_PA;
	sr.idt.limit = KILN_NR_VECTORS * 16 - 1;
	sr.cr0 = 0x80050033; /* PG AM WP NE ET MP PE */
	sr.cr3 = PML4_PA;
	sr.cr4 = (1 << 5) | (1 << 7) | (1 << 9) | (1 << 10) | (1 << 16) | (1 << 18);
	sr.efer = (1 << 0) | (1 << 8) | (1 << 10) | (1 << 11); /* SCE LME LMA NXE */
	return ioctl(c->fd, KVM_SET_SREGS, &sr) < 0 ? -errno : 0;
}

#define MSR_APIC_BASE      0x1b
#define MSR_TSC_DEADLINE   0x6e0
#define MSR_STAR           0xc0000081
#define MSR_LSTAR          0xc0000082
#define MSR_CSTAR          0xc0000083
#define MSR_SFMASK         0xc0000084
#define MSR_FS_BASE        0xc0000100
#define MSR_GS_BASE        0xc0000101
#define MSR_KERNEL_GS_BASE 0xc0000102
#define MSR_PVM_SIGNATURE  0x4b564d11 /* kvm_pvm: reads "PVM" */
#define PVM_SIGNATURE      0x4d5650

/* Is this KVM kvm_pvm, where `syscall` stays at CPL3 (kiln/boot.h)? */
static bool host_is_pvm(struct vcpu *c)
{
	uint64_t sig;

	return vcpu_read_msr(c, MSR_PVM_SIGNATURE, &sig) == 0 && sig == PVM_SIGNATURE;
}

static int set_msrs(struct vcpu *c)
{
	const struct kiln_boot_image *img = &c->vm->kernel.image;
	bool pvm = host_is_pvm(c);
	const struct {
		uint32_t idx;
		uint64_t val;
	} v[] = {
	    {MSR_APIC_BASE, 0xfee00000ULL | (1 << 11) | (1 << 10) | (c->id == 0 ? 1 << 8 : 0)},
	    {MSR_STAR, ((uint64_t)(KILN_SEL_UCODE32 - 3) << 48) | ((uint64_t)KILN_SEL_KCODE << 32)},
	    {MSR_LSTAR, pvm ? img->syscall_entry_cpl3 : img->syscall_entry},
	    {MSR_CSTAR, 0},
	    {MSR_SFMASK, pvm ? 0x40500 : 0x40700}, /* TF DF AC, and IF where CPL0 is entered */
	    {MSR_FS_BASE, 0},
	    {MSR_GS_BASE, 0},
	    {MSR_KERNEL_GS_BASE, 0},
	    {MSR_TSC_DEADLINE, 0},
	};
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[sizeof(v) / sizeof(v[0])];
	} m;

	memset(&m, 0, sizeof(m));
	m.hdr.nmsrs = sizeof(v) / sizeof(v[0]);
	for (unsigned i = 0; i < m.hdr.nmsrs; i++) {
		m.e[i].index = v[i].idx;
		m.e[i].data = v[i].val;
	}
	return ioctl(c->fd, KVM_SET_MSRS, &m) == (int)m.hdr.nmsrs ? 0 : -EINVAL;
}

static void lapic_set(struct kvm_lapic_state *l, unsigned reg, uint32_t val)
{
	memcpy(&l->regs[reg], &val, 4);
}

static int set_lapic(struct vcpu *c)
{
	struct kvm_lapic_state l;

	if (ioctl(c->fd, KVM_GET_LAPIC, &l) < 0)
		return -errno;
	lapic_set(&l, 0x80, 0);                            /* TPR */
	lapic_set(&l, 0xf0, 0x100 | KILN_VEC_SPURIOUS);    /* SVR: enabled */
	lapic_set(&l, 0x320, (2u << 17) | KILN_VEC_TIMER); /* LVT timer: TSC-deadline */
	lapic_set(&l, 0x330, 1u << 16);                    /* thermal: masked */
	lapic_set(&l, 0x340, 1u << 16);                    /* perf: masked */
	lapic_set(&l, 0x350, 1u << 16);                    /* LINT0: masked */
	lapic_set(&l, 0x360, 1u << 16);                    /* LINT1: masked */
	lapic_set(&l, 0x370, 1u << 16);                    /* error: masked */
	return ioctl(c->fd, KVM_SET_LAPIC, &l) < 0 ? -errno : 0;
}

/*
 * CPUID: the host's supported table, minus what the guest's CPL0 code must
 * not be told about. On PVM hosts only a few bits of leaf 1 and leaf
 * 0x80000001 can be hidden at all (RESULTS.md §6); CX16 is one of them and
 * matters, because CPL0 cmpxchg16b cannot be emulated there. This is the
 * table for vCPU id (only leaf 1's APIC id differs between vCPUs); the
 * caller frees it.
 */
static int cpuid_table(struct vm *vm, int id, struct kvm_cpuid2 **out)
{
	int n = KILN_HOST_CPUID_MAX;
	size_t size = sizeof(**out) + n * sizeof((*out)->entries[0]);
	struct kvm_cpuid2 *cp = calloc(1, size);

	if (!cp)
		return -ENOMEM;
	cp->nent = n;
	if (vm->supported_cpuid) {
		memcpy(cp, vm->supported_cpuid, size);
	} else if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, cp) < 0) {
		int err = -errno;
		free(cp);
		return err;
	}
	for (unsigned i = 0; i < cp->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cp->entries[i];

		if (e->function == 1) {
			e->ecx &= ~(1u << 13);             /* CX16 */
			e->ecx &= ~(1u << 17);             /* PCID: kiln does not use it */
			e->ecx |= (1u << 21) | (1u << 24); /* x2APIC, TSC-deadline */
			e->ebx = (e->ebx & 0x00ffffff) | ((uint32_t)id << 24);
		} else if (e->function == 0xb || e->function == 0x1f) {
			/* The x2APIC id: KVM reports the host CPU it ran on. */
			e->edx = (uint32_t)id;
		} else if (e->function == 0x80000001) {
			e->edx &= ~(1u << 26); /* 1 GiB pages: never used */
		}
	}
	*out = cp;
	return 0;
}

int x86_set_cpuid(struct vcpu *c)
{
	struct kvm_cpuid2 *cp;
	int err = cpuid_table(c->vm, c->id, &cp);

	if (err)
		return err;
	/* Leaf 2's cache descriptors in place of "see leaf 4" (cpuid_cache.h):
	 * half the CPUID exits of every glibc process start on Intel hosts.
	 * Not in the snapshot hash (x86_cpuid_hash): cache sizes are tuning,
	 * not features, and snapshots from before still restore. */
	for (unsigned i = 0; i < cp->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cp->entries[i];
		uint32_t r[4];

		if (e->function == 2 && cpuid_cache_leaf2(cp->entries, cp->nent, r)) {
			e->eax = r[0];
			e->ebx = r[1];
			e->ecx = r[2];
			e->edx = r[3];
		}
	}
	/* And leaf 4 with levels 2 and 3 first: 2 fewer exits per process. */
	cpuid_cache_leaf4_order(cp->entries, cp->nent);
	if (ioctl(c->fd, KVM_SET_CPUID2, cp) < 0)
		err = -errno;
	free(cp);
	return err;
}

int x86_cpuid_hash(struct vm *vm, uint64_t *hash)
{
	struct kvm_cpuid2 *cp;
	int err = cpuid_table(vm, 0, &cp);

	if (err)
		return err;
	*hash = snap_xxh64(cp->entries, cp->nent * sizeof(cp->entries[0]), 0);
	free(cp);
	return 0;
}

static int set_xcr0(struct vcpu *c)
{
	struct kvm_xcrs x;

	memset(&x, 0, sizeof(x));
	x.nr_xcrs = 1;
	x.xcrs[0].xcr = 0;
	x.xcrs[0].value = c->vm->xcr0;
	return ioctl(c->fd, KVM_SET_XCRS, &x) < 0 ? -errno : 0;
}

int x86_setup_vcpu(struct vcpu *c, uint64_t fdt_pa)
{
	const struct kiln_boot_image *img = &c->vm->kernel.image;
	struct kvm_regs r;
	int err;

	err = x86_set_cpuid(c);
	if (!err)
		err = set_sregs(c);
	if (!err)
		err = set_msrs(c);
	if (!err)
		err = set_lapic(c);
	if (!err && c->vm->xcr0)
		err = set_xcr0(c);
	if (err)
		return err;
	memset(&r, 0, sizeof(r));
	r.rip = img->entry;
	r.rsp = img->boot_stack;
	r.rdi = fdt_pa;
	r.rflags = 2;
	return ioctl(c->fd, KVM_SET_REGS, &r) < 0 ? -errno : 0;
}

/* XCR0 for the guest: x87, SSE, AVX and AVX-512 state if the host has them.
 * The host's CPUID table is kept for the vCPUs' tables: the one read from
 * --host-cpuid (main.c) when there is one, else KVM's (~0.1 to 0.4 ms). */
void x86_pick_xcr0(struct vm *vm)
{
	int n = KILN_HOST_CPUID_MAX;
	struct kvm_cpuid2 *cp = vm->supported_cpuid;

	vm->xcr0 = 0;
	if (!cp) {
		cp = calloc(1, sizeof(*cp) + n * sizeof(cp->entries[0]));
		if (!cp)
			return;
		cp->nent = n;
		if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, cp) < 0) {
			free(cp);
			return;
		}
		vm->supported_cpuid = cp;
	}
	for (unsigned i = 0; i < cp->nent; i++)
		if (cp->entries[i].function == 0xd && cp->entries[i].index == 0)
			vm->xcr0 = cp->entries[i].eax & 0xe7;
}
