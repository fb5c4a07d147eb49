/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: the accounts a request may name (include/kiln/agent.h, the
 * user trailer of START and FILE_REQUEST), looked up in the guest's
 * /etc/passwd and /etc/group. Those files belong to the guest, so they
 * are read as untrusted input: bounded in size, every field checked, a
 * malformed line skipped.
 */
#ifndef AGENT_USERS_H
#define AGENT_USERS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define USER_NAME_MAX   32         /* as useradd's default */
#define USER_HOME_MAX   1024       /* bytes of a home directory's path */
#define USER_MAX_GROUPS 32         /* the primary group and supplementary ones */
#define USER_FILE_MAX   (1u << 20) /* /etc/passwd, /etc/group: smaller than this */

struct agent_user {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[USER_MAX_GROUPS];
	char name[USER_NAME_MAX + 1];
	char home[USER_HOME_MAX + 1];
	/* "HOME=...", "USER=...", "LOGNAME=..." for a command's environment */
	char env_home[USER_HOME_MAX + 6], env_user[USER_NAME_MAX + 6],
	    env_logname[USER_NAME_MAX + 9];
};

/* The account of a request: name (NULL or "": none named) with the
 * KILN_USER_* flags. 0 and *u filled in; -ESRCH for a name not in the
 * guest's /etc/passwd (root always exists, with home /root), -EINVAL for
 * a name that is not one, or another -errno; why says what went wrong. */
int user_resolve(const char *name, uint32_t flags, struct agent_user *u, char *why, size_t why_len);
/* Do file operations as u (effective and file-system ids, groups) and
 * back as root; the agent runs as root. 0 or -errno. */
int user_enter(const struct agent_user *u);
void user_leave(const struct agent_user *u);

#endif
