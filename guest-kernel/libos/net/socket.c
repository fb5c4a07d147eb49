/* SPDX-License-Identifier: MIT */
/*
 * Sockets, the address-family-independent part (socket.h): the open file
 * every socket is (read, write, poll, ioctl, close) and the syscalls that
 * make and wire sockets: socket, socketpair, bind, listen, accept, accept4,
 * connect, shutdown, getsockname, getpeername. Data moves in socket_msg.c,
 * options in socket_opt.c; the address families do the rest through their
 * ops tables.
 */
#include <asm/signal.h>
#include <linux/fcntl.h>
#include <linux/stat.h>

#include "ktime.h"
#include "mm.h"
#include "pidns.h"
#include "proc.h"
#include "socket.h"
#include "syscall.h"
#include "vfs.h"

static const struct sock_family *const families[] = {
    &unix_family,
    &inet_family,
    &inet6_family,
    &vsock_family,
};

/* ---------------------------------------------------------------- iterators */

void sock_iter_init(struct sock_iter *it, const struct iovec *iov, unsigned long nr, bool user)
{
	it->iov = iov;
	it->nr_segs = nr;
	it->user = user;
	it->seg = 0;
	it->off = 0;
	it->left = 0;
	it->scm = NULL;
	for (unsigned long i = 0; i < nr; i++)
		it->left += iov[i].iov_len;
}

static int iter_copy(struct sock_iter *it, void *kbuf, size_t n, bool to_iter)
{
	char *k = kbuf;

	while (n) {
		const struct iovec *v = &it->iov[it->seg];
		size_t chunk = MIN(n, v->iov_len - it->off);
		char *p = (char *)v->iov_base + it->off;
		int err = 0;

		if (!chunk) {
			it->seg++;
			it->off = 0;
			continue;
		}
		if (it->user)
			err = to_iter ? copy_to_user(p, k, chunk) : copy_from_user(k, p, chunk);
		else if (to_iter)
			memcpy(p, k, chunk);
		else
			memcpy(k, p, chunk);
		if (err)
			return err;
		k += chunk;
		n -= chunk;
		it->left -= chunk;
		it->off += chunk;
	}
	return 0;
}

int sock_iter_from(struct sock_iter *it, void *dst, size_t n)
{
	return iter_copy(it, dst, n, false);
}

int sock_iter_to(struct sock_iter *it, const void *src, size_t n)
{
	return iter_copy(it, (void *)src, n, true);
}

uint64_t sock_deadline(uint64_t timeo_ns)
{
	return timeo_ns ? time_monotonic_ns() + timeo_ns : 0;
}

/* ---------------------------------------------------------------- the file */

static void send_sigpipe(void)
{
	struct siginfo_k info;

	memset(&info, 0, sizeof(info));
	info.signo = SIGPIPE;
	info.kill.pid = pid_to_user(cur_proc(), cur_proc()->pid);
	signal_send_thread(cur_thread(), SIGPIPE, &info);
}

long sock_send(struct file *f, struct sock_iter *it, const void *addr, int addrlen, int flags)
{
	struct socket *s = f->priv;
	long r;

	if (!s->ops->sendmsg)
		return -EOPNOTSUPP;
	if (f->flags & O_NONBLOCK)
		flags |= MSG_DONTWAIT;
	file_get(f);
	r = s->ops->sendmsg(s, it, addr, addrlen, flags);
	if (r == -EPIPE && !(flags & MSG_NOSIGNAL))
		send_sigpipe();
	file_put(f);
	return r;
}

long sock_recv(struct file *f, struct sock_iter *it, void *addr, int *addrlen, int flags,
               int *msg_flags)
{
	struct socket *s = f->priv;
	long r;

	if (!s->ops->recvmsg)
		return -EOPNOTSUPP;
	if (f->flags & O_NONBLOCK)
		flags |= MSG_DONTWAIT;
	*addrlen = 0;
	*msg_flags = 0;
	file_get(f);
	r = s->ops->recvmsg(s, it, addr, addrlen, flags, msg_flags);
	file_put(f);
	return r;
}

static long sock_read(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct iovec v = {b->base, n};
	struct sock_iter it;
	char addr[SOCK_ADDR_MAX];
	int alen, mflags;

	sock_iter_init(&it, &v, 1, b->user);
	return sock_recv(f, &it, addr, &alen, 0, &mflags);
}

static long sock_write(struct file *f, const struct iobuf *b, size_t n, uint64_t *pos)
{
	struct iovec v = {b->base, n};
	struct sock_iter it;

	sock_iter_init(&it, &v, 1, b->user);
	return sock_send(f, &it, NULL, 0, 0);
}

static long sock_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct socket *s = f->priv;
	long r;

	if (!s->ops->ioctl)
		return -ENOTTY;
	file_get(f);
	r = s->ops->ioctl(s, cmd, arg);
	file_put(f);
	return r;
}

static unsigned int sock_poll(struct file *f)
{
	struct socket *s = f->priv;

	return s->ops->poll ? s->ops->poll(s) : 0;
}

static void sock_poll_wait(struct file *f, struct poll_table *pt)
{
	struct socket *s = f->priv;

	if (s->ops->poll_wait)
		s->ops->poll_wait(s, pt);
}

static void sock_release(struct file *f)
{
	struct socket *s = f->priv;

	if (s->ops && s->ops->release)
		s->ops->release(s);
	kfree(s);
}

const struct file_ops sock_file_ops = {
    .read = sock_read,
    .write = sock_write,
    .ioctl = sock_ioctl,
    .poll = sock_poll,
    .poll_wait = sock_poll_wait,
    .release = sock_release,
    .stream = true,
};

/* ---------------------------------------------------------------- creation */

void socket_init(const struct bootinfo *bi)
{
	for (size_t i = 0; i < ARRAY_SIZE(families); i++)
		if (families[i]->init)
			families[i]->init(bi);
}

static const struct sock_family *family_of(int domain)
{
	for (size_t i = 0; i < ARRAY_SIZE(families); i++)
		if (families[i]->family == domain)
			return families[i];
	return NULL;
}

static struct socket *sock_new(int family, int type, int protocol)
{
	struct socket *s = kzalloc(sizeof(*s));

	if (!s)
		return NULL;
	s->family = family;
	s->type = type;
	s->protocol = protocol;
	s->rcvbuf = s->sndbuf = SOCK_BUF_DEFAULT;
	s->rcvlowat = 1;
	return s;
}

/* Undo a socket that never got its file. */
static void sock_discard(struct socket *s)
{
	if (s->ops && s->ops->release)
		s->ops->release(s);
	kfree(s);
}

/* A file for s; on failure s is discarded. */
static int sock_file(struct socket *s, unsigned int oflags, struct file **out)
{
	struct inode *ip = vfs_inode_anon(S_IFSOCK | 0777);
	struct file *f = ip ? file_alloc(ip, &sock_file_ops, O_RDWR | oflags, s) : NULL;

	if (!f) {
		if (ip)
			inode_put(ip);
		sock_discard(s);
		return -ENOMEM;
	}
	s->file = f;
	*out = f;
	return 0;
}

static int sock_install(struct file *f, bool cloexec)
{
	int fd = fd_alloc(cur_proc()->files, f, 0, cloexec);

	if (fd < 0)
		file_put(f);
	return fd;
}

SYSCALL_DEFINE(socket)
{
	int domain = (int)a0, type = (int)a1 & SOCK_TYPE_MASK, protocol = (int)a2;
	int flags = (int)a1 & ~SOCK_TYPE_MASK;
	const struct sock_family *fam;
	struct socket *s;
	struct file *f;
	int err;

	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return -EINVAL;
	if (domain < 0 || domain >= AF_MAX)
		return -EAFNOSUPPORT;
	fam = family_of(domain);
	if (!fam)
		return -EAFNOSUPPORT;
	s = sock_new(domain, type, protocol);
	if (!s)
		return -ENOMEM;
	err = fam->create(s, protocol);
	if (err) {
		kfree(s);
		return err;
	}
	err = sock_file(s, (flags & SOCK_NONBLOCK) ? O_NONBLOCK : 0, &f);
	if (err)
		return err;
	return sock_install(f, flags & SOCK_CLOEXEC);
}

SYSCALL_DEFINE(socketpair)
{
	int domain = (int)a0, type = (int)a1 & SOCK_TYPE_MASK, protocol = (int)a2;
	int flags = (int)a1 & ~SOCK_TYPE_MASK, fds[2];
	unsigned int oflags = (flags & SOCK_NONBLOCK) ? O_NONBLOCK : 0;
	const struct sock_family *fam;
	struct socket *sa, *sb;
	struct file *fa, *fb;
	int err;

	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return -EINVAL;
	fam = domain >= 0 && domain < AF_MAX ? family_of(domain) : NULL;
	if (!fam)
		return -EAFNOSUPPORT;
	if (!fam->pair)
		return -EOPNOTSUPP;
	sa = sock_new(domain, type, protocol);
	sb = sock_new(domain, type, protocol);
	if (!sa || !sb) {
		kfree(sa);
		kfree(sb);
		return -ENOMEM;
	}
	err = fam->pair(sa, sb, protocol);
	if (err) {
		kfree(sa);
		kfree(sb);
		return err;
	}
	err = sock_file(sa, oflags, &fa);
	if (err) {
		sock_discard(sb);
		return err;
	}
	err = sock_file(sb, oflags, &fb);
	if (err) {
		file_put(fa);
		return err;
	}
	fds[0] = sock_install(fa, flags & SOCK_CLOEXEC);
	if (fds[0] < 0) {
		file_put(fb);
		return fds[0];
	}
	fds[1] = sock_install(fb, flags & SOCK_CLOEXEC);
	if (fds[1] < 0) {
		fd_close(cur_proc()->files, fds[0]);
		return fds[1];
	}
	if (copy_to_user((int *)a3, fds, sizeof(fds))) {
		fd_close(cur_proc()->files, fds[0]);
		fd_close(cur_proc()->files, fds[1]);
		return -EFAULT;
	}
	return 0;
}

/* ---------------------------------------------------------------- helpers */

/* The socket at fd with a reference on its file (put it with file_put), or
 * NULL and *err. */
struct socket *sock_lookup(long fd, struct file **fp, long *err)
{
	struct file *f = fd_get(cur_proc()->files, (int)fd);

	if (!f || (f->flags & O_PATH)) {
		*err = -EBADF;
		return NULL;
	}
	if (f->ops != &sock_file_ops) {
		*err = -ENOTSOCK;
		return NULL;
	}
	file_get(f);
	*fp = f;
	return f->priv;
}

int sock_addr_in(void *kaddr, const void *uaddr, long len)
{
	if (len < 0 || len > SOCK_ADDR_MAX)
		return -EINVAL;
	if (len && copy_from_user(kaddr, uaddr, (size_t)len))
		return -EFAULT;
	return 0;
}

/* Linux's move_addr_to_user: as much of the address as fits, and its full
 * length in *ulen. */
int sock_addr_out(const void *kaddr, int klen, void *uaddr, int *ulen)
{
	int len;

	if (copy_from_user(&len, ulen, sizeof(len)))
		return -EFAULT;
	if (len < 0)
		return -EINVAL;
	if (len > klen)
		len = klen;
	if (len && copy_to_user(uaddr, kaddr, (size_t)len))
		return -EFAULT;
	return copy_to_user(ulen, &klen, sizeof(klen));
}

/* ---------------------------------------------------------------- bind ... shutdown */

SYSCALL_DEFINE(bind)
{
	char addr[SOCK_ADDR_MAX];
	struct socket *s;
	struct file *f;
	long err;

	if (!(s = sock_lookup(a0, &f, &err)))
		return err;
	err = sock_addr_in(addr, (const void *)a1, a2);
	if (!err)
		err = s->ops->bind ? s->ops->bind(s, addr, (int)a2) : -EOPNOTSUPP;
	file_put(f);
	return err;
}

SYSCALL_DEFINE(connect)
{
	char addr[SOCK_ADDR_MAX];
	struct socket *s;
	struct file *f;
	long err;

	if (!(s = sock_lookup(a0, &f, &err)))
		return err;
	err = sock_addr_in(addr, (const void *)a1, a2);
	if (!err)
		err = s->ops->connect ? s->ops->connect(s, addr, (int)a2, f->flags & O_NONBLOCK)
		                      : -EOPNOTSUPP;
	file_put(f);
	return err;
}

SYSCALL_DEFINE(listen)
{
	int backlog = (int)a1;
	struct socket *s;
	struct file *f;
	long err;

	if (!(s = sock_lookup(a0, &f, &err)))
		return err;
	/* net.core.somaxconn is 4096; a negative backlog means the most. */
	if (backlog < 0 || backlog > 4096)
		backlog = 4096;
	err = s->ops->listen ? s->ops->listen(s, backlog) : -EOPNOTSUPP;
	if (!err)
		s->listening = true;
	file_put(f);
	return err;
}

static long do_accept(long fd, void *uaddr, int *ulen, long flags)
{
	char addr[SOCK_ADDR_MAX];
	struct socket *s, *ns;
	struct file *f, *nf;
	long err;
	int len;

	if (flags & ~(long)(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return -EINVAL;
	if (!(s = sock_lookup(fd, &f, &err)))
		return err;
	if (!s->ops->accept) {
		file_put(f);
		return -EOPNOTSUPP;
	}
	ns = sock_new(s->family, s->type, s->protocol);
	if (!ns) {
		file_put(f);
		return -ENOMEM;
	}
	err = s->ops->accept(s, ns, f->flags & O_NONBLOCK);
	file_put(f);
	if (err) {
		kfree(ns);
		return err;
	}
	err = sock_file(ns, (flags & SOCK_NONBLOCK) ? O_NONBLOCK : 0, &nf);
	if (err)
		return err;
	/* As Linux: an address that cannot be stored drops the connection. */
	if (uaddr && ulen) {
		len = ns->ops->getname ? ns->ops->getname(ns, addr, true) : -ENOTCONN;
		err = len < 0 ? -ECONNABORTED : sock_addr_out(addr, len, uaddr, ulen);
		if (err) {
			file_put(nf);
			return err;
		}
	}
	return sock_install(nf, flags & SOCK_CLOEXEC);
}

SYSCALL_DEFINE(accept)
{
	return do_accept(a0, (void *)a1, (int *)a2, 0);
}

SYSCALL_DEFINE(accept4)
{
	return do_accept(a0, (void *)a1, (int *)a2, a3);
}

SYSCALL_DEFINE(shutdown)
{
	struct socket *s;
	struct file *f;
	long err;

	if (!(s = sock_lookup(a0, &f, &err)))
		return err;
	if (a1 < SHUT_RD || a1 > SHUT_RDWR)
		err = -EINVAL;
	else
		err = s->ops->shutdown ? s->ops->shutdown(s, (int)a1) : -EOPNOTSUPP;
	file_put(f);
	return err;
}

static long do_getname(long fd, void *uaddr, int *ulen, bool peer)
{
	char addr[SOCK_ADDR_MAX];
	struct socket *s;
	struct file *f;
	long err;
	int len;

	if (!(s = sock_lookup(fd, &f, &err)))
		return err;
	len = s->ops->getname ? s->ops->getname(s, addr, peer) : -EOPNOTSUPP;
	err = len < 0 ? len : sock_addr_out(addr, len, uaddr, ulen);
	file_put(f);
	return err;
}

SYSCALL_DEFINE(getsockname)
{
	return do_getname(a0, (void *)a1, (int *)a2, false);
}

SYSCALL_DEFINE(getpeername)
{
	return do_getname(a0, (void *)a1, (int *)a2, true);
}
