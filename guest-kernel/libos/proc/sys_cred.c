/* SPDX-License-Identifier: MIT */
/* capget and capset. Root has every capability, other users none (as
 * Linux without file capabilities: a process whose effective uid is not 0
 * has no effective set, one whose file-system uid is not 0 none of the
 * file-system ones, and no permitted set once none of its uids is 0; the
 * inheritable set is empty unless capset fills it). One may give some up
 * (Chromium drops them all before it forks its zygote, then checks that
 * none are left), and that is what capget reports until the next exec. The permission checks (fs/perm.c) and
 * set*id (sys_uid.c) look at the uids, CAP_SETUID and CAP_SETGID; the VM
 * is the boundary (README, "How the guest kernel works"). */
#include <linux/capability.h>

#include "pidns.h"
#include "proc.h"
#include "syscall.h"
#include "uaccess.h"

#define CAP_ALL PROC_CAP_ALL
_Static_assert(PROC_CAP_ALL == (1ULL << (CAP_LAST_CAP + 1)) - 1, "a capability is missing");

/* What a file-system uid other than 0 takes from the effective set
 * (Linux's CAP_FS_MASK). */
#define CAP_FS                                                                        \
	(1ULL << CAP_CHOWN | 1ULL << CAP_DAC_OVERRIDE | 1ULL << CAP_DAC_READ_SEARCH | \
	 1ULL << CAP_FOWNER | 1ULL << CAP_FSETID | 1ULL << CAP_LINUX_IMMUTABLE |      \
	 1ULL << CAP_MKNOD | 1ULL << CAP_MAC_OVERRIDE)

void proc_caps(const struct proc *p, uint64_t set[3])
{
	const struct cred_ids *u = &p->cred.u;

	set[0] = CAP_ALL & ~p->cap_dropped[0];
	set[1] = CAP_ALL & ~p->cap_dropped[1];
	set[2] = p->cap_inh;
	if (u->fs)
		set[0] &= ~CAP_FS;
	if (u->eff)
		set[0] = 0;
	if (u->real && u->eff && u->saved)
		set[1] = 0;
}

bool proc_capable(const struct proc *p, int cap)
{
	uint64_t set[3];

	proc_caps(p, set);
	return set[0] & (1ULL << cap);
}

void proc_caps_setuid(struct proc *p, const struct cred_ids *old)
{
	if (old->eff && !p->cred.u.eff)
		p->cap_dropped[0] = p->cap_dropped[1];
}

/* How many 32-bit data structs the header's version takes: 0 if unknown
 * (then the header gets the version we prefer). */
static int cap_words(struct __user_cap_header_struct *uh, struct __user_cap_header_struct *h)
{
	if (copy_from_user(h, uh, sizeof(*h)))
		return -EFAULT;
	switch (h->version) {
	case _LINUX_CAPABILITY_VERSION_1:
		return 1;
	case _LINUX_CAPABILITY_VERSION_2:
	case _LINUX_CAPABILITY_VERSION_3:
		return 2;
	}
	h->version = _LINUX_CAPABILITY_VERSION_3;
	return copy_to_user(uh, h, sizeof(*h)) ? -EFAULT : 0;
}

SYSCALL_DEFINE(capget)
{
	struct __user_cap_data_struct d[2];
	struct __user_cap_header_struct h;
	int n = cap_words((void *)a0, &h);
	struct proc *p;
	uint64_t set[3];

	if (n <= 0) /* (probing the version with no data pointer is fine) */
		return n ? n : a1 ? -EINVAL : 0;
	if (!a1) /* Linux looks at nothing more */
		return 0;
	if (h.pid < 0)
		return -EINVAL;
	p = h.pid ? proc_find_user(cur_proc(), h.pid) : cur_proc();
	if (!p)
		return -ESRCH;
	proc_caps(p, set);
	for (int w = 0; w < 2; w++)
		d[w] = (struct __user_cap_data_struct){(uint32_t)(set[0] >> (32 * w)),
		                                       (uint32_t)(set[1] >> (32 * w)),
		                                       (uint32_t)(set[2] >> (32 * w))};
	return copy_to_user((void *)a1, d, (size_t)n * sizeof(d[0]));
}

SYSCALL_DEFINE(capset)
{
	struct __user_cap_data_struct d[2] = {0};
	struct __user_cap_header_struct h;
	int n = cap_words((void *)a0, &h);
	struct proc *p = cur_proc();
	uint64_t set[3], have[3];

	if (n <= 0)
		return n ? n : -EINVAL;
	if (h.pid && pid_from_user(p, h.pid) != p->pid)
		return -EPERM; /* Linux: only one's own */
	if (copy_from_user(d, (void *)a1, (size_t)n * sizeof(d[0])))
		return -EFAULT;
	proc_caps(p, have);
	set[0] = ((uint64_t)d[1].effective << 32 | d[0].effective) & CAP_ALL;
	set[1] = ((uint64_t)d[1].permitted << 32 | d[0].permitted) & CAP_ALL;
	set[2] = ((uint64_t)d[1].inheritable << 32 | d[0].inheritable) & CAP_ALL;
	/* Permitted only shrinks, effective stays within it; inheritable
	 * within the old permitted and inheritable sets unless CAP_SETPCAP
	 * is effective (the bounding set is whole). */
	if ((set[1] & ~have[1]) || (set[0] & ~set[1]) ||
	    (!(have[0] & (1ULL << CAP_SETPCAP)) && (set[2] & ~(have[1] | have[2]))))
		return -EPERM;
	p->cap_dropped[0] = CAP_ALL & ~set[0];
	p->cap_dropped[1] = CAP_ALL & ~set[1];
	p->cap_inh = set[2];
	return 0;
}
