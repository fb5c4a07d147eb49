/* SPDX-License-Identifier: MIT */
/*
 * User and group ids (cred.h): get*id, set*id, setfs*id, getgroups and
 * setgroups, with Linux's rules: a process with CAP_SETUID (CAP_SETGID for
 * groups) may take any id; any other may only move between its own real,
 * effective and saved ids. The file-system ids follow the effective ones.
 */
#include <linux/capability.h>

#include "cred.h"
#include "proc.h"
#include "syscall.h"
#include "uaccess.h"

#define KEEP ((uint32_t)-1) /* an argument of -1 leaves the id as it is */

/* A change of an effective or file-system id makes the process not
 * dumpable (its /proc/PID becomes root's), as Linux's commit_creds does;
 * the next exec decides again (sys_exec.c). rc is the setter's answer. */
static long ids_set(struct proc *p, const struct cred_ids *old, const struct cred_ids *now, long rc)
{
	if (old->eff != now->eff || old->fs != now->fs)
		p->nodump = true;
	if (now == &p->cred.u)
		proc_caps_setuid(p, old);
	return rc;
}

/* setresuid and setresgid: the ids r, e, s (KEEP: unchanged) of one kind. */
static bool mine(const struct cred_ids *ids, uint32_t id)
{
	return id == ids->real || id == ids->eff || id == ids->saved;
}

static long set_res(struct cred_ids *ids, bool priv, uint32_t r, uint32_t e, uint32_t s)
{
	if (!priv && ((r != KEEP && !mine(ids, r)) || (e != KEEP && !mine(ids, e)) ||
	              (s != KEEP && !mine(ids, s))))
		return -EPERM;
	if (r != KEEP)
		ids->real = r;
	if (e != KEEP)
		ids->eff = e;
	if (s != KEEP)
		ids->saved = s;
	ids->fs = ids->eff; /* the fs id follows the effective one */
	return 0;
}

SYSCALL_DEFINE(setresuid)
{
	struct proc *p = cur_proc();
	struct cred_ids old = p->cred.u;

	return ids_set(p, &old, &p->cred.u,
	               set_res(&p->cred.u, proc_capable(p, CAP_SETUID), (uint32_t)a0, (uint32_t)a1,
	                       (uint32_t)a2));
}

SYSCALL_DEFINE(setresgid)
{
	struct proc *p = cur_proc();
	struct cred_ids old = p->cred.g;

	return ids_set(p, &old, &p->cred.g,
	               set_res(&p->cred.g, proc_capable(p, CAP_SETGID), (uint32_t)a0, (uint32_t)a1,
	                       (uint32_t)a2));
}

/* setreuid/setregid: the real id may become the effective one, the
 * effective id any of the three; setting the real id, or an effective id
 * other than the old real one, makes the saved id the new effective one. */
static long set_re(struct cred_ids *ids, bool priv, uint32_t r, uint32_t e)
{
	uint32_t old_real = ids->real;

	if (!priv &&
	    ((r != KEEP && r != ids->real && r != ids->eff) || (e != KEEP && !mine(ids, e))))
		return -EPERM;
	if (r != KEEP)
		ids->real = r;
	if (e != KEEP)
		ids->eff = e;
	if (r != KEEP || (e != KEEP && e != old_real))
		ids->saved = ids->eff;
	ids->fs = ids->eff;
	return 0;
}

SYSCALL_DEFINE(setreuid)
{
	struct proc *p = cur_proc();
	struct cred_ids old = p->cred.u;

	return ids_set(p, &old, &p->cred.u,
	               set_re(&p->cred.u, proc_capable(p, CAP_SETUID), (uint32_t)a0, (uint32_t)a1));
}

SYSCALL_DEFINE(setregid)
{
	struct proc *p = cur_proc();
	struct cred_ids old = p->cred.g;

	return ids_set(p, &old, &p->cred.g,
	               set_re(&p->cred.g, proc_capable(p, CAP_SETGID), (uint32_t)a0, (uint32_t)a1));
}

/* setuid/setgid: privileged, all three ids; else the effective one, to the
 * real or saved id. */
static long set_one(struct cred_ids *ids, bool priv, uint32_t id)
{
	if (id == KEEP)
		return -EINVAL;
	if (priv) {
		ids->real = ids->eff = ids->saved = ids->fs = id;
		return 0;
	}
	if (id != ids->real && id != ids->saved)
		return -EPERM;
	ids->eff = ids->fs = id;
	return 0;
}

SYSCALL_DEFINE(setuid)
{
	struct proc *p = cur_proc();
	struct cred_ids old = p->cred.u;

	return ids_set(p, &old, &p->cred.u,
	               set_one(&p->cred.u, proc_capable(p, CAP_SETUID), (uint32_t)a0));
}

SYSCALL_DEFINE(setgid)
{
	struct proc *p = cur_proc();
	struct cred_ids old = p->cred.g;

	return ids_set(p, &old, &p->cred.g,
	               set_one(&p->cred.g, proc_capable(p, CAP_SETGID), (uint32_t)a0));
}

/* setfsuid/setfsgid answer the old id, whether the change was allowed or not. */
static long set_fs(struct cred_ids *ids, bool priv, uint32_t id)
{
	uint32_t old = ids->fs;

	if (id != KEEP && (priv || mine(ids, id) || id == ids->fs))
		ids->fs = id;
	return old;
}

SYSCALL_DEFINE(setfsuid)
{
	struct proc *p = cur_proc();
	struct cred_ids old = p->cred.u;

	return ids_set(p, &old, &p->cred.u,
	               set_fs(&p->cred.u, proc_capable(p, CAP_SETUID), (uint32_t)a0));
}

SYSCALL_DEFINE(setfsgid)
{
	struct proc *p = cur_proc();
	struct cred_ids old = p->cred.g;

	return ids_set(p, &old, &p->cred.g,
	               set_fs(&p->cred.g, proc_capable(p, CAP_SETGID), (uint32_t)a0));
}

SYSCALL_DEFINE(getuid)
{
	return cur_proc()->cred.u.real;
}

SYSCALL_DEFINE(geteuid)
{
	return cur_proc()->cred.u.eff;
}

SYSCALL_DEFINE(getgid)
{
	return cur_proc()->cred.g.real;
}

SYSCALL_DEFINE(getegid)
{
	return cur_proc()->cred.g.eff;
}

static long put_res(const struct cred_ids *ids, long a0, long a1, long a2)
{
	if (copy_to_user((void *)a0, &ids->real, 4) || copy_to_user((void *)a1, &ids->eff, 4) ||
	    copy_to_user((void *)a2, &ids->saved, 4))
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE(getresuid)
{
	return put_res(&cur_proc()->cred.u, a0, a1, a2);
}

SYSCALL_DEFINE(getresgid)
{
	return put_res(&cur_proc()->cred.g, a0, a1, a2);
}

SYSCALL_DEFINE(getgroups)
{
	const struct cred *c = &cur_proc()->cred;
	int n = (int)a0;

	if (n < 0)
		return -EINVAL;
	if (n == 0)
		return c->ngroups;
	if ((uint32_t)n < c->ngroups)
		return -EINVAL;
	if (copy_to_user((void *)a1, c->groups, c->ngroups * sizeof(uint32_t)))
		return -EFAULT;
	return c->ngroups;
}

SYSCALL_DEFINE(setgroups)
{
	struct proc *p = cur_proc();
	uint32_t groups[CRED_NGROUPS];
	long n = a0;

	if (!proc_capable(p, CAP_SETGID))
		return -EPERM;
	if (n < 0 || n > CRED_NGROUPS) /* (Linux takes 65536) */
		return -EINVAL;
	if (n && copy_from_user(groups, (const void *)a1, (size_t)n * sizeof(uint32_t)))
		return -EFAULT;
	memcpy(p->cred.groups, groups, (size_t)n * sizeof(uint32_t));
	p->cred.ngroups = (uint32_t)n;
	return 0;
}
