/* SPDX-License-Identifier: MIT */
/*
 * The ids a program runs with (exec.h exec_creds), as Linux gives them
 * (fs/exec.c, without file capabilities): a set-user-ID file makes its
 * owner the effective uid, a set-group-ID one that is group-executable its
 * group the effective gid (a set-group-ID file without the group x bit is
 * mandatory locking's mark, not a set-id program); no_new_privs ignores
 * both. Every exec then makes the saved and file-system ids the effective
 * ones. The exec is secure (AT_SECURE) when the effective ids differ from
 * the real ones after it.
 */
#include "exec.h"

#define S_ISUID 04000
#define S_ISGID 02000
#define S_IXGRP 00010

bool exec_creds(const struct cred *cur, bool no_new_privs, uint32_t mode, uint32_t uid,
                uint32_t gid, struct cred *out)
{
	*out = *cur;
	if (!no_new_privs && (mode & S_ISUID))
		out->u.eff = uid;
	if (!no_new_privs && (mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		out->g.eff = gid;
	out->u.saved = out->u.fs = out->u.eff;
	out->g.saved = out->g.fs = out->g.eff;
	return out->u.eff != out->u.real || out->g.eff != out->g.real;
}
