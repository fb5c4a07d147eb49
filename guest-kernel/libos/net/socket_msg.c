/* SPDX-License-Identifier: MIT */
/*
 * The socket syscalls that move data: sendto, recvfrom, sendmsg, recvmsg,
 * sendmmsg, recvmmsg (read, write and their vector forms reach the same
 * sock_send and sock_recv through the file, socket.c). Ancillary data
 * (socket_scm.c) goes to and comes from the families that take it; for
 * the others msg_control is ignored on send and comes back empty.
 */
#include <linux/time.h>

#include "errno_k.h"
#include "ktime.h"
#include "mm.h"
#include "proc.h"
#include "socket.h"
#include "syscall.h"
#include "vfs.h"

/* The program's struct msghdr and struct mmsghdr (x86-64 layout). */
struct user_msghdr {
	void *name;
	int namelen;
	struct iovec *iov;
	size_t iovlen;
	void *control;
	size_t controllen;
	unsigned int flags;
};

struct user_mmsghdr {
	struct user_msghdr hdr;
	unsigned int len;
};

SYSCALL_DEFINE(sendto)
{
	struct iovec v = {(void *)a1, MIN((size_t)a2, (size_t)VFS_MAX_RW)};
	char addr[SOCK_ADDR_MAX];
	int alen = a4 ? (int)a5 : 0;
	struct sock_iter it;
	struct socket *s;
	struct file *f;
	long err;

	if (!(s = sock_lookup(a0, &f, &err)))
		return err;
	if (!user_range_ok((uint64_t)v.iov_base, v.iov_len)) {
		err = -EFAULT;
	} else if (!(err = sock_addr_in(addr, (const void *)a4, alen))) {
		sock_iter_init(&it, &v, 1, true);
		err = sock_send(f, &it, alen ? addr : NULL, alen, (int)a3);
	}
	file_put(f);
	return err;
}

SYSCALL_DEFINE(recvfrom)
{
	struct iovec v = {(void *)a1, MIN((size_t)a2, (size_t)VFS_MAX_RW)};
	char addr[SOCK_ADDR_MAX];
	int alen, mflags;
	struct sock_iter it;
	struct socket *s;
	struct file *f;
	long r, err;

	if (!(s = sock_lookup(a0, &f, &err)))
		return err;
	if (!user_range_ok((uint64_t)v.iov_base, v.iov_len)) {
		r = -EFAULT;
	} else {
		sock_iter_init(&it, &v, 1, true);
		r = sock_recv(f, &it, addr, &alen, (int)a3, &mflags);
		if (r >= 0 && a4 && a5 && (err = sock_addr_out(addr, alen, (void *)a4, (int *)a5)))
			r = err;
	}
	file_put(f);
	return r;
}

/* The program's iovec array, checked as readv's: at most UIO_MAXIOV
 * entries, each in the lower half, the total cut at VFS_MAX_RW. */
static long iov_in(const struct iovec *uiov, size_t cnt, struct iovec **out)
{
	struct iovec *iov;
	size_t total = 0;

	if (cnt > UIO_MAXIOV)
		return -EMSGSIZE;
	iov = kmalloc((cnt ? cnt : 1) * sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	if (cnt && copy_from_user(iov, uiov, cnt * sizeof(*iov))) {
		kfree(iov);
		return -EFAULT;
	}
	for (size_t i = 0; i < cnt; i++) {
		if ((long)iov[i].iov_len < 0) {
			kfree(iov);
			return -EINVAL;
		}
		iov[i].iov_len = MIN(iov[i].iov_len, VFS_MAX_RW - total);
		if (!user_range_ok((uint64_t)iov[i].iov_base, iov[i].iov_len)) {
			kfree(iov);
			return -EFAULT;
		}
		total += iov[i].iov_len;
	}
	*out = iov;
	return 0;
}

static long send_msg(struct file *f, struct user_msghdr *um, int flags)
{
	struct socket *s = f->priv;
	struct sock_scm scm = {0};
	char addr[SOCK_ADDR_MAX];
	struct sock_iter it;
	struct iovec *iov;
	long r;

	if (um->namelen < 0 || (um->name && um->namelen > SOCK_ADDR_MAX))
		return -EINVAL;
	if (um->name && (r = sock_addr_in(addr, um->name, um->namelen)))
		return r;
	r = iov_in(um->iov, um->iovlen, &iov);
	if (r)
		return r;
	sock_iter_init(&it, iov, um->iovlen, true);
	if (s->ops->scm && um->controllen) {
		r = sock_scm_in(&scm, um->control, um->controllen);
		if (r) {
			kfree(iov);
			return r;
		}
		it.scm = &scm;
	}
	r = sock_send(f, &it, um->name && um->namelen ? addr : NULL, um->name ? um->namelen : 0,
	              flags);
	sock_scm_drop(&scm);
	kfree(iov);
	return r;
}

/* Receives into the program's msghdr um (a kernel copy at *um, the
 * original at uhdr) and writes back namelen, controllen and flags. */
static long recv_msg(struct file *f, struct user_msghdr *um, struct user_msghdr *uhdr, int flags)
{
	struct socket *s = f->priv;
	struct sock_scm scm = {0};
	char addr[SOCK_ADDR_MAX];
	struct sock_iter it;
	struct iovec *iov;
	int alen, mflags;
	size_t clen = 0;
	long r, c;

	if (um->name && um->namelen < 0)
		return -EINVAL;
	r = iov_in(um->iov, um->iovlen, &iov);
	if (r)
		return r;
	sock_iter_init(&it, iov, um->iovlen, true);
	if (s->ops->scm)
		it.scm = &scm;
	r = sock_recv(f, &it, addr, &alen, flags, &mflags);
	kfree(iov);
	if (r >= 0 && it.scm) {
		c = sock_scm_out(&scm, um->control, um->controllen, flags, &mflags);
		if (c < 0)
			r = c;
		else
			clen = (size_t)c;
	}
	sock_scm_drop(&scm);
	if (r < 0)
		return r;
	if (um->name) {
		int n = MIN(alen, um->namelen);

		if (n && copy_to_user(um->name, addr, (size_t)n))
			return -EFAULT;
	} else {
		alen = 0;
	}
	if (copy_to_user(&uhdr->namelen, &alen, sizeof(alen)) ||
	    copy_to_user(&uhdr->controllen, &clen, sizeof(clen)) ||
	    copy_to_user(&uhdr->flags, &mflags, sizeof(mflags)))
		return -EFAULT;
	return r;
}

SYSCALL_DEFINE(sendmsg)
{
	struct user_msghdr um;
	struct socket *s;
	struct file *f;
	long r;

	if (!(s = sock_lookup(a0, &f, &r)))
		return r;
	if (copy_from_user(&um, (const void *)a1, sizeof(um)))
		r = -EFAULT;
	else
		r = send_msg(f, &um, (int)a2);
	file_put(f);
	return r;
}

SYSCALL_DEFINE(recvmsg)
{
	struct user_msghdr um;
	struct socket *s;
	struct file *f;
	long r;

	if (!(s = sock_lookup(a0, &f, &r)))
		return r;
	if (copy_from_user(&um, (const void *)a1, sizeof(um)))
		r = -EFAULT;
	else
		r = recv_msg(f, &um, (struct user_msghdr *)a1, (int)a2);
	file_put(f);
	return r;
}

/* sendmmsg and recvmmsg: as many messages as go without an error; an error
 * is returned only when it hits the first. */
#define MMSG_MAX 1024 /* Linux's UIO_MAXIOV cap on vlen */

static long do_mmsg(long fd, struct user_mmsghdr *uvec, unsigned int vlen, int flags, bool send,
                    const struct timespec *uts)
{
	struct user_msghdr um;
	struct timespec ts;
	uint64_t deadline = 0;
	struct socket *s;
	struct file *f;
	unsigned int n;
	long r = 0;

	if (!(s = sock_lookup(fd, &f, &r)))
		return r;
	if (uts) {
		if (copy_from_user(&ts, uts, sizeof(ts))) {
			file_put(f);
			return -EFAULT;
		}
		if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000L) {
			file_put(f);
			return -EINVAL;
		}
		deadline = time_monotonic_ns() + (uint64_t)ts.tv_sec * 1000000000ULL +
		           (uint64_t)ts.tv_nsec;
	}
	vlen = MIN(vlen, (unsigned int)MMSG_MAX);
	for (n = 0; n < vlen; n++) {
		unsigned int len;

		if (copy_from_user(&um, &uvec[n].hdr, sizeof(um))) {
			r = -EFAULT;
			break;
		}
		r = send ? send_msg(f, &um, flags) : recv_msg(f, &um, &uvec[n].hdr, flags);
		if (r < 0)
			break;
		len = (unsigned int)r;
		if (copy_to_user(&uvec[n].len, &len, sizeof(len))) {
			r = -EFAULT;
			break;
		}
		if (!send && (flags & MSG_WAITFORONE))
			flags |= MSG_DONTWAIT;
		if (deadline && time_monotonic_ns() >= deadline) {
			n++;
			break;
		}
	}
	file_put(f);
	if (n)
		return n;
	return r == -ERESTARTSYS && uts ? -EINTR : r;
}

SYSCALL_DEFINE(sendmmsg)
{
	return do_mmsg(a0, (struct user_mmsghdr *)a1, (unsigned int)a2, (int)a3, true, NULL);
}

SYSCALL_DEFINE(recvmmsg)
{
	return do_mmsg(a0, (struct user_mmsghdr *)a1, (unsigned int)a2, (int)a3, false,
	               (const struct timespec *)a4);
}
