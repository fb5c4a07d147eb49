/* SPDX-License-Identifier: MIT */
/*
 * Validation and load plan for Linux x86-64 user programs: static ET_EXEC,
 * static-pie ET_DYN, and dynamically linked ones (PT_INTERP).
 *
 * The file is untrusted: elf_parse() checks every field the loader will use,
 * so the loader can map what it returns without further checks. Pure
 * function over the caller's buffer, no allocation.
 */
#ifndef KILN_LIBOS_ELF_H
#define KILN_LIBOS_ELF_H

#include "klib.h"

/* The few ELF definitions we need, prefixed so as not to clash with <elf.h>. */
struct elf64_ehdr {
	uint8_t e_ident[16];
	uint16_t e_type;
	uint16_t e_machine;
	uint32_t e_version;
	uint64_t e_entry;
	uint64_t e_phoff;
	uint64_t e_shoff;
	uint32_t e_flags;
	uint16_t e_ehsize;
	uint16_t e_phentsize;
	uint16_t e_phnum;
	uint16_t e_shentsize;
	uint16_t e_shnum;
	uint16_t e_shstrndx;
};

struct elf64_phdr {
	uint32_t p_type;
	uint32_t p_flags;
	uint64_t p_offset;
	uint64_t p_vaddr;
	uint64_t p_paddr;
	uint64_t p_filesz;
	uint64_t p_memsz;
	uint64_t p_align;
};

#define ELF_EI_CLASS     4
#define ELF_EI_DATA      5
#define ELF_EI_VERSION   6
#define ELF_CLASS64      2
#define ELF_DATA2LSB     1
#define ELF_EV_CURRENT   1
#define ELF_ET_REL       1
#define ELF_ET_EXEC      2
#define ELF_ET_DYN       3
#define ELF_ET_CORE      4
#define ELF_EM_X86_64    62
#define ELF_PN_XNUM      0xffff
#define ELF_PT_LOAD      1
#define ELF_PT_INTERP    3
#define ELF_PT_PHDR      6
#define ELF_PT_TLS       7
#define ELF_PT_GNU_STACK 0x6474e551
#define ELF_PF_X         1
#define ELF_PF_W         2
#define ELF_PF_R         4

/* Protections in elf_segment.prot; same values as PROT_* in <sys/mman.h>. */
#define ELF_PROT_READ  1
#define ELF_PROT_WRITE 2
#define ELF_PROT_EXEC  4

#define ELF_PAGE_SIZE    4096ULL
#define ELF_MAX_SEGMENTS 16 /* PT_LOADs; real programs have 2 to 5 */
#define ELF_MAX_PHNUM    64
#define ELF_INTERP_MAX   4095 /* PATH_MAX less the NUL */
/* End of user space: the lower half less the guard page Linux keeps below it. */
#define ELF_USER_LIMIT 0x00007ffffffff000ULL
/* Lowest address of an ET_EXEC segment: Linux's default vm.mmap_min_addr,
 * which also keeps page 0 free for the zpoline sled. */
#define ELF_USER_MIN 0x10000ULL
/* Largest page-rounded span of the PT_LOADs we agree to load. */
#define ELF_MAX_SPAN (64ULL << 30)
/* Largest p_align accepted; anything above is surely corrupt. */
#define ELF_MAX_ALIGN (1ULL << 30)

/* A PT_LOAD: map [vaddr, vaddr + memsz) with file bytes [offset, offset +
 * filesz) at vaddr and zeros after them. For ET_DYN add the load bias. */
struct elf_segment {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t prot; /* ELF_PROT_* */
};

struct elf_info {
	int type;       /* ELF_ET_EXEC or ELF_ET_DYN */
	uint64_t entry; /* e_entry, inside an executable segment */
	/* AT_PHDR before the bias: from PT_PHDR, else from the PT_LOAD that
	 * maps e_phoff; 0 if the program headers are not mapped. */
	uint64_t phdr_vaddr;
	uint16_t phnum, phentsize; /* AT_PHNUM, AT_PHENT */
	uint64_t lo, hi;           /* page-aligned span of the PT_LOADs */
	uint64_t align;            /* largest PT_LOAD p_align, >= ELF_PAGE_SIZE */
	unsigned nseg;
	struct elf_segment seg[ELF_MAX_SEGMENTS]; /* ascending, disjoint */
	const char *interp; /* PT_INTERP path in the buffer, NUL-terminated; or NULL */
	size_t interp_len;  /* without the NUL */
	bool exec_stack;    /* PT_GNU_STACK has PF_X (absent: not executable) */
	/* PT_TLS, all 0 if none; the image lies inside a PT_LOAD. */
	uint64_t tls_vaddr, tls_filesz, tls_memsz, tls_align;
};

/*
 * Checks the ELF file buf[0, len) and fills *out. Returns 0, or -EINVAL with
 * *err (if err is not NULL) set to a constant message saying what is wrong;
 * *out is zeroed on error. out->interp points into buf.
 */
int elf_parse(const void *buf, size_t len, struct elf_info *out, const char **err);

/*
 * The same when only the start of the file is at hand: buf[0, len) holds its
 * first len bytes (say one page), file_size is its full size. The program
 * headers and the PT_INTERP path must lie in buf; segments are checked
 * against file_size.
 */
int elf_parse_headers(const void *buf, size_t len, uint64_t file_size, struct elf_info *out,
                      const char **err);

#endif
