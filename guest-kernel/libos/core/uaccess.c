/* SPDX-License-Identifier: MIT */
/* Checked access to program memory (see uaccess.h). */
#include "uaccess.h"

long uaccess_copy(void *dst, const void *src, size_t n);
long uaccess_clear(void *dst, size_t n);
long uaccess_strncpy(char *dst, const char *src, size_t max);

int copy_from_user(void *dst, const void *usrc, size_t n)
{
	if (!user_range_ok((uint64_t)usrc, n))
		return -EFAULT;
	return (int)uaccess_copy(dst, usrc, n);
}

int copy_to_user(void *udst, const void *src, size_t n)
{
	if (!user_range_ok((uint64_t)udst, n))
		return -EFAULT;
	return (int)uaccess_copy(udst, src, n);
}

int clear_user(void *udst, size_t n)
{
	if (!user_range_ok((uint64_t)udst, n))
		return -EFAULT;
	return (int)uaccess_clear(udst, n);
}

long strncpy_from_user(char *dst, const char *usrc, size_t max)
{
	long n;

	if (!max)
		return -ENAMETOOLONG;
	/* The string may end anywhere below USER_TOP: check as we go by
	 * clamping max to what is left of the lower half. */
	if ((uint64_t)usrc >= USER_TOP)
		return -EFAULT;
	n = uaccess_strncpy(dst, usrc, MIN(max, USER_TOP - (uint64_t)usrc));
	if (n < 0)
		return n;
	if ((size_t)n == max) {
		dst[max - 1] = 0;
		return -ENAMETOOLONG;
	}
	if ((uint64_t)n == USER_TOP - (uint64_t)usrc)
		return -EFAULT;
	return n;
}
