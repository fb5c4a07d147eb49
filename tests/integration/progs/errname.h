// SPDX-License-Identifier: MIT
/* The name of an errno value the permission tests meet ("ok" for 0), so
 * that their output reads the same on any C library. */
#ifndef KILN_TEST_ERRNAME_H
#define KILN_TEST_ERRNAME_H

#include <errno.h>
#include <string.h>

static inline const char *ename(int e)
{
	switch (e) {
	case 0:
		return "ok";
	case EACCES:
		return "EACCES";
	case EPERM:
		return "EPERM";
	case ENOENT:
		return "ENOENT";
	case EINVAL:
		return "EINVAL";
	case EEXIST:
		return "EEXIST";
	case EBUSY:
		return "EBUSY";
	case ENOTDIR:
		return "ENOTDIR";
	case ENODEV:
		return "ENODEV";
	}
	return strerror(e);
}

#endif
