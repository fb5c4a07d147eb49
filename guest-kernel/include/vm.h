/* SPDX-License-Identifier: MIT */
/*
 * Address spaces: one per process. The upper half (library OS, direct map,
 * supervisor) is shared by all of them; the lower half holds the zpoline
 * sled at 0 and the program's mappings. Memory is mapped eagerly where it
 * will be used (a page fault costs microseconds on PVM hosts, mapping a page
 * nanoseconds); large anonymous mappings (VMA_LAZY) get their pages on first
 * touch, a window or a 2 MiB page at a time, so reservations cost nothing.
 */
#ifndef KILN_VM_H
#define KILN_VM_H

#include "klib.h"
#include "mm.h"

#define PROT_READ  0x1
#define PROT_WRITE 0x2
#define PROT_EXEC  0x4

#define VMA_ANON  0x1
#define VMA_STACK 0x2 /* grows down on faults below it */
#define VMA_HEAP  0x4
#define VMA_LAZY  0x8 /* anonymous pages appear on first touch (vm_fault) */
/* MAP_SHARED: the pages are an object's (a tmpfs file's), the same in
 * every mapping of it and in every process; fork shares them. */
#define VMA_SHARED 0x10
/* A shared mapping of a file not open for writing: mprotect may not make
 * it writable (EACCES, as Linux without VM_MAYWRITE). */
#define VMA_NOWRITE 0x20
/* A private mapping of a file (MAP_PRIVATE): its pages are private copies
 * (or image pages mapped in place), but it knows the file (ops, obj,
 * pgoff), as Linux does: a page past the file's end is not there (a touch
 * is SIGBUS), a truncate takes away the pages it cuts off, and a page not
 * there yet is read from the file on first touch. */
#define VMA_FILE 0x40

/* What a shared mapping maps: memory with pages of its own that outlive
 * any mapping of it (a tmpfs file, see vfs.h). */
struct vm_object_ops {
	/* The page to map for page idx (from 0) of obj in a mapping with
	 * protection prot. *pa gets a physical page of obj's own, made
	 * (zeroed) if it has none yet and create is set, else 0; or, for a
	 * mapping without PROT_WRITE, read-only image memory that holds the
	 * bytes (then *borrowed is set). 0, -ENOMEM, or -ERANGE if idx lies
	 * past the end of obj. */
	int (*page)(void *obj, uint64_t idx, uint32_t prot, bool create, uint64_t *pa,
	            bool *borrowed);
	/* Private mappings (VMA_FILE): copy page idx's bytes into the page at
	 * dst (zeroes past obj's end in it). 0, or -ERANGE if idx lies past
	 * the end of obj. */
	int (*copy)(void *obj, uint64_t idx, void *dst);
	void (*get)(void *obj); /* one more mapping of obj (each VMA holds one) */
	void (*put)(void *obj); /* one fewer: obj may go */
};

struct vma {
	uint64_t start, end; /* page-aligned, end exclusive */
	uint32_t prot;
	uint32_t flags;
	struct vma *next; /* sorted by address */
	/* VMA_SHARED, VMA_FILE: what it maps, and the object's page at start. */
	const struct vm_object_ops *ops;
	void *obj;
	uint64_t pgoff;
};

struct aspace {
	int refs;      /* processes using it (vfork shares) */
	uint64_t root; /* physical address of the PML4 */
	struct vma *vmas;
	uint64_t brk_start, brk;
	uint64_t mmap_top; /* new mappings go below this */
	size_t nr_pages;   /* 4 KiB pages mapped in the lower half */
	size_t nr_huge;    /* 2 MiB pages among them (512 pages each) */
	/* exec's argv and envp strings on the initial stack: /proc/<pid>/cmdline, environ */
	uint64_t arg_start, arg_end, env_start, env_end;
	/* Addresses of the syscall instructions we rewrote (open addressing):
	 * a `call *%rax` fault is a bad syscall number only at one of these. */
	uint64_t *patched;
	size_t patched_cap, patched_n;
	struct aspace *next_dead; /* released while loaded in CR3 */
	struct aspace *next_all;  /* every address space, for vm_object_cut */
	/* Being built (exec, fork): the kept tree it will be merged into,
	 * taken already (0: none yet), and whether to look for one. */
	uint64_t keep_root;
	bool keep_seek;
};

/* Map image pages into programs in place (vm_map_pages); false (boot
 * option kiln.borrow=0): copy them, to compare. */
extern bool vm_borrow_pages;
/* When lazy anonymous memory gets 2 MiB pages (boot option kiln.thp=, see
 * vm_huge.c): never, once it is being filled (the default), or always. */
enum vm_thp { VM_THP_NEVER, VM_THP_FILL, VM_THP_ALWAYS };
extern enum vm_thp vm_thp;

struct bootinfo;
void vm_init(const struct bootinfo *bi);
struct aspace *aspace_create(void);
/* fork: a private copy of every mapping (eager copy), but shared mappings
 * (VMA_SHARED) map the same pages. */
struct aspace *aspace_copy(struct aspace *src);
struct aspace *aspace_get(struct aspace *as);
/* Drop a reference; the last one frees everything (later, if it is the
 * active address space). */
void aspace_release(struct aspace *as);
void aspace_activate(struct aspace *as);
/* A new address space, before its first use: take over the page tables
 * kept from a dead process that ran the same program (vm_keep.c), whose
 * shadows the host has filled already. aspace_copy does it itself. */
void aspace_keep_tables(struct aspace *as);
/* A new address space that a program is loaded into: its own pages may
 * be those of the kept tree it will take over (vm_keep.c). */
void aspace_keep_seek(struct aspace *as);
/* Free address spaces released while active (after a switch). */
void aspace_reap(void);

/* Map [start, start+len) with fresh zeroed pages (none yet if flags has
 * VMA_LAZY). MAP_FIXED semantics: whatever was there is unmapped first.
 * Returns 0 or -ENOMEM. */
int vm_map_anon(struct aspace *as, uint64_t start, uint64_t len, uint32_t prot, uint32_t flags);
/* The same, but page i (from 0) is the physical page page(ctx, i) when that
 * is not 0: borrowed read-only memory the page allocator does not own (the
 * pmem window), mapped in place, shared by fork, never freed or written; a
 * write to a writable mapping of it copies it first (vm_fault). */
typedef uint64_t (*vm_page_fn)(void *ctx, uint64_t i);
/* What a vm_page_fn answers for a page to leave unmapped: one past the end
 * of a file, which vm_map_file would cut at once (a page made and dropped,
 * and a TLB flush for it: a supervisor call). */
#define VM_NO_PAGE (~0ULL)
int vm_map_pages(struct aspace *as, uint64_t start, uint64_t len, uint32_t prot, uint32_t flags,
                 vm_page_fn page, void *ctx);
/* Map [start, start+len) to the pages of obj from page pgoff on, shared
 * (VMA_SHARED | flags): the pages obj has are mapped at once, and with
 * fill the ones it lacks too (made zeroed, up to its end); the others on
 * first touch. MAP_FIXED semantics. The mapping holds obj (ops->get) until
 * it goes. 0, -EINVAL or -ENOMEM. */
int vm_map_shared(struct aspace *as, uint64_t start, uint64_t len, uint32_t prot, uint32_t flags,
                  const struct vm_object_ops *ops, void *obj, uint64_t pgoff, bool fill);
/* Make the mapping that starts at start (just made by vm_map_pages) a
 * private mapping of obj from its page pgoff on (VMA_FILE): it holds obj
 * (ops->get) until it goes, and its pages past obj's end (pages from
 * end_idx on) are taken away. 0, or -EINVAL if no mapping starts there. */
int vm_map_file(struct aspace *as, uint64_t start, const struct vm_object_ops *ops, void *obj,
                uint64_t pgoff, uint64_t end_idx);
/* obj (a file) was cut to end before its page idx: take its pages from idx
 * on out of every mapping of it, shared or private, in every address
 * space, so that a touch there faults (SIGBUS while the file is that
 * short; the file's bytes, zeroes, once it grows again), as Linux's
 * truncate does. */
void vm_object_cut(void *obj, uint64_t idx);
/* The physical address backing va if its page is as's own, 0 if it is
 * borrowed (its bytes are an image's already), ~0 if va is unmapped. */
uint64_t vm_translate_own(struct aspace *as, uint64_t va);
/* The page to map for image page pa in an executable mapping: the copy
 * of it whose syscall sites are rewritten, shared by all processes
 * (vm_text.c), if there is one; else pa. */
uint64_t vm_text_page(uint64_t pa);
/* Page fault error code bits (SDM 4.7) vm_fault looks at. */
/* Stack mapped ahead of a program's use, at exec and when it grows: a
 * fault costs tens of microseconds, a page mapped and not used about one. */
#define STACK_GROW (64UL << 10)

#define PF_PRESENT 0x1
#define PF_WRITE   0x2
#define PF_FETCH   0x10

/* A page fault at addr that is ours to resolve: a write to a borrowed page
 * of a writable mapping gets a private copy; a touch of a VMA_LAZY page the
 * mapping allows gets zeroed pages. 0 if resolved (retry the access),
 * -EFAULT if it is the program's fault, -ERANGE if it touched a shared
 * mapping past the end of its file (SIGBUS on Linux), -ENOMEM if memory
 * ran out. */
int vm_fault(struct aspace *as, uint64_t addr, uint32_t error);
/* Give back the pages of [start, start+len) in VMA_LAZY mappings, which
 * then read as zeroes again (MADV_DONTNEED), and in private file mappings
 * (VMA_FILE), which read the file's bytes again; zero the rest. */
void vm_discard(struct aspace *as, uint64_t start, uint64_t len);
/* Move the pages of [from, from+len) to [to, to+len) (mremap), which must be
 * mapped already; the old range keeps no pages. Returns 0 or -ENOMEM. */
int vm_move_pages(struct aspace *as, uint64_t from, uint64_t to, uint64_t len);
/* Physical address of user address va for the kernel to write through the
 * direct map: a borrowed page is made private first, a lazy one allocated.
 * ~0 if unmapped or out of memory. */
uint64_t vm_translate_write(struct aspace *as, uint64_t va);
int vm_unmap(struct aspace *as, uint64_t start, uint64_t len);
int vm_protect(struct aspace *as, uint64_t start, uint64_t len, uint32_t prot);
/* A free range of len bytes below as->mmap_top (0 if none). */
uint64_t vm_find_free(struct aspace *as, uint64_t len);
struct vma *vm_find_vma(struct aspace *as, uint64_t addr);
/* Physical address backing user address va, or ~0. */
uint64_t vm_translate(struct aspace *as, uint64_t va);
/* Grow a stack VMA downwards to cover addr (after a fault). */
int vm_grow_stack(struct aspace *as, uint64_t addr);

/* Rewrite a syscall instruction (0f 05) at user address site into
 * `call *%rax` (ff d0). Returns 0 if rewritten or already rewritten. */
int vm_patch_syscall(struct aspace *as, uint64_t site);
/* Was site rewritten by vm_patch_syscall? */
bool vm_is_patched(struct aspace *as, uint64_t site);

#endif
