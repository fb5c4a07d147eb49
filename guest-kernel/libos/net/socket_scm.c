/* SPDX-License-Identifier: MIT */
/*
 * Ancillary data (socket.h, struct sock_scm): the SOL_SOCKET control
 * messages of sendmsg and recvmsg, as Linux's __scm_send, put_cmsg and
 * scm_detach_fds treat them. Control messages of other levels are skipped
 * on send. Everything runs as root, so any SCM_CREDENTIALS are accepted.
 */
#include <asm/socket.h>
#include <linux/fcntl.h>

#include "mm.h"
#include "pidns.h"
#include "proc.h"
#include "socket.h"
#include "vfs.h"

/* Linux: a sender claims only its own pid and ids, unless it is root. */
static int creds_ok(const struct sock_ucred *c)
{
	const struct cred *me = cur_cred();
	const struct cred_ids *u = &me->u, *g = &me->g;

	if (me->u.eff == 0)
		return 0;
	if (c->pid != pid_to_user(cur_proc(), cur_proc()->pid) ||
	    (c->uid != u->real && c->uid != u->eff && c->uid != u->saved) ||
	    (c->gid != g->real && c->gid != g->eff && c->gid != g->saved))
		return -EPERM;
	return 0;
}

#define SCM_RIGHTS      1
#define SCM_CREDENTIALS 2
#define OPTMEM_MAX      20480 /* net.core.optmem_max: the largest msg_control taken */

/* struct cmsghdr and the CMSG_ macros (x86-64). */
struct cmsg {
	size_t len;
	int level, type;
};

#define CMSG_ALIGN_K(n) ALIGN_UP((size_t)(n), sizeof(size_t))
#define CMSG_HDR        CMSG_ALIGN_K(sizeof(struct cmsg))
#define CMSG_LEN_K(n)   (CMSG_HDR + (n))
#define CMSG_SPACE_K(n) (CMSG_HDR + CMSG_ALIGN_K(n))

void sock_scm_drop(struct sock_scm *scm)
{
	for (int i = 0; i < scm->nfp; i++)
		file_put(scm->fp[i]);
	kfree(scm->fp);
	scm->fp = NULL;
	scm->nfp = 0;
}

static int add_files(struct sock_scm *scm, const int *fds, int n)
{
	struct file **fp;

	if (n <= 0)
		return 0;
	if (scm->nfp + n > SCM_MAX_FD)
		return -EINVAL;
	if (!scm->fp) {
		scm->fp = kmalloc(SCM_MAX_FD * sizeof(*fp));
		if (!scm->fp)
			return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		struct file *f = fd_get(cur_proc()->files, fds[i]);

		if (!f)
			return -EBADF;
		file_get(f);
		scm->fp[scm->nfp++] = f;
	}
	return 0;
}

static int parse(struct sock_scm *scm, const char *ctl, size_t len)
{
	size_t off = 0;

	while (len - off >= sizeof(struct cmsg)) {
		struct cmsg c;
		const char *data = ctl + off + CMSG_HDR;
		int err = 0;

		memcpy(&c, ctl + off, sizeof(c));
		if (c.len < sizeof(c) || c.len > len - off)
			return -EINVAL;
		if (c.level == SOL_SOCKET) {
			switch (c.type) {
			case SCM_RIGHTS:
				err = add_files(scm, (const int *)data,
				                (int)((c.len - CMSG_HDR) / sizeof(int)));
				break;
			case SCM_CREDENTIALS:
				if (c.len != CMSG_LEN_K(sizeof(struct sock_ucred)))
					return -EINVAL;
				memcpy(&scm->creds, data, sizeof(scm->creds));
				scm->has_creds = true;
				err = creds_ok(&scm->creds);
				/* kept by global number, shown as the receiver sees it */
				scm->creds.pid = pid_from_user(cur_proc(), scm->creds.pid);
				break;
			default:
				return -EINVAL;
			}
		}
		if (err)
			return err;
		off += CMSG_ALIGN_K(c.len);
		if (off > len)
			break;
	}
	return 0;
}

int sock_scm_in(struct sock_scm *scm, const void *uctl, size_t len)
{
	char *ctl;
	int err;

	if (len > 0x7fffffff)
		return -ENOBUFS;
	if (len < sizeof(struct cmsg))
		return 0;
	if (len > OPTMEM_MAX)
		return -ENOBUFS;
	ctl = kmalloc(len);
	if (!ctl)
		return -ENOMEM;
	err = copy_from_user(ctl, uctl, len);
	if (!err)
		err = parse(scm, ctl, len);
	kfree(ctl);
	if (err)
		sock_scm_drop(scm);
	return err;
}

/* put_cmsg: one control message, cut to what fits (then MSG_CTRUNC). */
static int put_cmsg(char *uctl, size_t len, size_t *off, int type, const void *data, size_t n,
                    int *msg_flags)
{
	struct cmsg c = {CMSG_LEN_K(n), SOL_SOCKET, type};
	size_t room = len - *off, cut;

	if (room < sizeof(c)) {
		*msg_flags |= MSG_CTRUNC;
		return 0;
	}
	cut = MIN(room, c.len);
	if (cut < c.len)
		*msg_flags |= MSG_CTRUNC;
	c.len = cut;
	if (copy_to_user(uctl + *off, &c, sizeof(c)) ||
	    copy_to_user(uctl + *off + CMSG_HDR, data, cut - CMSG_HDR))
		return -EFAULT;
	*off += MIN(room, CMSG_SPACE_K(n));
	return 0;
}

/* scm_detach_fds: as many descriptors as fit; the rest are closed. */
static int put_fds(struct sock_scm *scm, char *uctl, size_t len, size_t *off, bool cloexec,
                   int *msg_flags)
{
	size_t room = len - *off;
	int max = room > CMSG_HDR ? (int)((room - CMSG_HDR) / sizeof(int)) : 0;
	int n = 0, fd, err = 0;
	struct cmsg c;

	for (; n < scm->nfp && n < max; n++) {
		fd = fd_alloc(cur_proc()->files, scm->fp[n], 0, cloexec);
		if (fd < 0)
			break;
		scm->fp[n] = NULL; /* the table's now */
		if (copy_to_user(uctl + *off + CMSG_HDR + (size_t)n * sizeof(int), &fd,
		                 sizeof(fd))) {
			err = -EFAULT;
			n++;
			break;
		}
	}
	if (n) {
		c = (struct cmsg){CMSG_LEN_K((size_t)n * sizeof(int)), SOL_SOCKET, SCM_RIGHTS};
		if (copy_to_user(uctl + *off, &c, sizeof(c)))
			err = -EFAULT;
		*off += MIN(room, CMSG_SPACE_K((size_t)n * sizeof(int)));
	}
	if (n < scm->nfp)
		*msg_flags |= MSG_CTRUNC;
	/* Compact what was not installed for sock_scm_drop. */
	for (int i = n; i < scm->nfp; i++)
		scm->fp[i - n] = scm->fp[i];
	scm->nfp -= n;
	return err;
}

long sock_scm_out(struct sock_scm *scm, void *uctl, size_t len, int flags, int *msg_flags)
{
	struct sock_ucred creds = scm->creds;
	size_t off = 0;
	int err = 0;

	if (!uctl)
		len = 0;
	creds.pid = pid_to_user(cur_proc(), creds.pid);
	if (scm->has_creds)
		err = put_cmsg(uctl, len, &off, SCM_CREDENTIALS, &creds, sizeof(creds), msg_flags);
	if (!err && scm->nfp)
		err = put_fds(scm, uctl, len, &off, flags & MSG_CMSG_CLOEXEC, msg_flags);
	sock_scm_drop(scm);
	return err ? err : (long)off;
}
