/* SPDX-License-Identifier: MIT */
/*
 * Raw copies to and from program memory. A fault inside [uaccess_start,
 * uaccess_end) is resumed by trap.c at uaccess_fixup with the stack as it
 * was, so each routine here is a leaf that keeps nothing on the stack and
 * `ret` from the fixup returns -EFAULT to its caller.
 */
#include <asm-generic/errno.h>

	.section .text
	.globl	uaccess_start, uaccess_end, uaccess_fixup
	.globl	uaccess_copy, uaccess_clear, uaccess_strncpy
uaccess_start:

/* long uaccess_copy(void *dst, const void *src, size_t n): 0 or -EFAULT */
uaccess_copy:
	movq	%rdx, %rcx
	rep movsb
	xorl	%eax, %eax
	ret

/* long uaccess_clear(void *dst, size_t n) */
uaccess_clear:
	movq	%rsi, %rcx
	xorl	%eax, %eax
	rep stosb
	ret

/* long uaccess_strncpy(char *dst, const char *src, size_t max): length
 * without the NUL, or max if there was no NUL in the first max bytes. */
uaccess_strncpy:
	xorl	%eax, %eax
1:	cmpq	%rdx, %rax
	je	2f
	movb	(%rsi,%rax), %cl
	movb	%cl, (%rdi,%rax)
	testb	%cl, %cl
	jz	2f
	incq	%rax
	jmp	1b
2:	ret

uaccess_end:
uaccess_fixup:
	movq	$-EFAULT, %rax
	ret
